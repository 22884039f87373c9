"""Verdicts: simulate, emit, compile, run where possible, compare and blame."""

from tilesim.diff.verdict import VERDICTS, Verdict, blame, run

__all__ = ["VERDICTS", "Verdict", "blame", "run"]
