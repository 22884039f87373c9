"""Executable proof obligations for tilesim (run: ``python -m proofs``)."""
