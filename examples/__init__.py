"""Runnable tile-program examples; each module exposes ``programs()`` and ``reference(**arrays)``."""
