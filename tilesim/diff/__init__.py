"""Verdicts: check, simulate, emit, compile, run where possible, compare and blame."""

from tilesim.diff.blame import blame
from tilesim.diff.reference import ReferenceCheck, check_reference, result_tolerance
from tilesim.diff.verdict import EXIT_STATUS, PATHS, VERDICTS, Verdict, exit_status, run

__all__ = ["EXIT_STATUS", "PATHS", "VERDICTS", "ReferenceCheck", "Verdict", "blame", "check_reference", "exit_status",
           "result_tolerance", "run"]
