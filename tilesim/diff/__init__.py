"""Verdicts: check, simulate, emit, compile, run where possible, compare and blame."""

from tilesim.diff.blame import blame
from tilesim.diff.judge import SIMULATE_STATUS, SimJudgement, check_errors, judge_simulation, simulation_errors
from tilesim.diff.reference import (ReferenceCheck, check_reference, inexact_inputs, magnitude_inputs, result_tolerance,
                                    rounded_inputs)
from tilesim.diff.verdict import EXIT_STATUS, PATHS, VERDICTS, Verdict, exit_status, run

__all__ = ["EXIT_STATUS", "PATHS", "SIMULATE_STATUS", "VERDICTS", "ReferenceCheck", "SimJudgement", "Verdict", "blame",
           "check_errors", "check_reference", "exit_status", "inexact_inputs", "judge_simulation", "magnitude_inputs",
           "result_tolerance", "rounded_inputs", "run", "simulation_errors"]
