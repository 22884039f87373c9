"""What can be said about a program without a device: its check, and its simulation against the
reference. ``tilesim simulate`` reports this judgement; ``run`` builds its verdicts on the same
two lists (:func:`check_errors`, :func:`simulation_errors`), so the two commands cannot disagree
about a wrong program.

``tilesim simulate`` statuses (:data:`SIMULATE_STATUS`, the exit status of each):

======================  ====  ===========================================================
status                  exit  meaning
======================  ====  ===========================================================
``REFERENCE_OK``        0     the simulation equals the file's ``reference()`` within the
                              numerics model's tolerance, and check found no error
``NOT_JUDGED``          4     check found no error; no ``reference()`` (nor ``--expect``), or
                              one that leaves an output out, so the outputs were not compared
                              with what the program is meant to compute: tilesim cannot
                              tell, says so, and does not exit 0
``REFERENCE_MISMATCH``  1     a simulated output differs from ``reference()``
``CHECK_FAILED``        1     check found an error (or the simulator saw an LDS race or
                              disagreeing replicas): the hardware does not compute what the
                              program says, whatever the reference
======================  ====  ===========================================================

Over several programs: 1 if any status is 1, else 4 if any is 4, else 0 (:func:`combined_status`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilesim.diff.reference import ReferenceCheck, check_reference, inexact_inputs
from tilesim.ir.core import Program
from tilesim.ir.verify import check_errors
from tilesim.wave.sim import SimResult
from tilesim.wave.undefined import undefined as simulation_errors

__all__ = ["SIMULATE_STATUS", "SimJudgement", "check_errors", "judge_simulation", "simulation_errors",
           "loose_note", "unjudged_note", "vacuous_note", "combined_status", "HOW_TO_JUDGE", "NOT_JUDGED_NOTE"]

SIMULATE_STATUS: dict[str, int] = {"REFERENCE_OK": 0, "NOT_JUDGED": 4, "REFERENCE_MISMATCH": 1, "CHECK_FAILED": 1}

NOT_JUDGED_NOTE = "the simulation was not judged: no float64 reference was given"
# how to turn NOT_JUDGED into a judgement; `run` adds the device and the emulator (tilesim.diff.verdict)
HOW_TO_JUDGE = ("give the expected outputs: a reference() in the program file, or --expect FILE.npz "
                "(Python: reference={output: array})")
# the worst first: a failure (1), a device error (3), nothing judged (4), then a pass (0)
_SEVERITY = (1, 3, 4, 0)


def combined_status(codes: Iterable[int]) -> int:
    """The exit status of a command over several programs: the most severe of ``codes`` (1, 3, 4, 0)."""
    seen = set(codes)
    return next((c for c in _SEVERITY if c in seen), 0)


@dataclass
class SimJudgement:
    status: str
    reason: str
    errors: list[str] = field(default_factory=list)  # check errors, then the simulator's (simulation_errors)
    reference: ReferenceCheck | None = None

    @property
    def exit_status(self) -> int:
        return SIMULATE_STATUS[self.status]

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def __bool__(self) -> bool:  # true only when it passes (a dataclass is always true)
        return self.ok


def judge_simulation(prog: Program, res: SimResult, reference: dict[str, Any] | None,
                     arrays: dict[str, np.ndarray], errors: list[str] | None = None,
                     magnitude: dict[str, Any] | None = None) -> SimJudgement:
    """The judgement of one simulation: the reference first (a wrong number is the strongest
    evidence), then the check's and the simulator's errors, then NOT_JUDGED without a reference.
    ``errors`` are :func:`check_errors` when the caller has them already (else ``res.check_errors``,
    or a fresh check when the simulation ran with ``verify=False``); ``magnitude``: the reference on
    |inputs| (:func:`tilesim.diff.magnitude_inputs`), for a per-element bound."""
    if errors is None:
        errors = res.check_errors if res.checked else check_errors(prog, lds_state=False)  # LDS: simulation_errors
    errs = list(errors) + simulation_errors(res)
    ref = None if reference is None else check_reference(prog, res.outputs, reference, arrays, magnitude)
    if ref is not None and not ref.ok:
        return SimJudgement("REFERENCE_MISMATCH", "the simulated result differs from the float64 reference: "
                            + ref.describe(), errs, ref)
    if errs:
        return SimJudgement("CHECK_FAILED", f"check found {len(errs)} error(s): {errs[0]}", errs, ref)
    if ref is None or not ref.max_abs:  # no reference, or one that names no output: tilesim cannot tell
        why = NOT_JUDGED_NOTE if ref is None or not ref.unjudged else "the simulation was" + unjudged_note(ref)[1:]
        return SimJudgement("NOT_JUDGED", f"{why}; to judge it, {HOW_TO_JUDGE}", errs, ref)
    if ref.unjudged:  # the outputs it names are right; about the others tilesim cannot tell
        return SimJudgement("NOT_JUDGED", f"the outputs the reference can judge equal it{unjudged_note(ref)}; to "
                            f"judge them, {HOW_TO_JUDGE}", errs, ref)
    inexact = inexact_inputs(prog, arrays)
    return SimJudgement("REFERENCE_OK", "the simulation equals the float64 reference within the numerics model's "
                        "tolerance" + unjudged_note(ref) + (loose_note(inexact, ref) if inexact else ""), errs, ref)


def loose_note(inexact: list[str], ref: ReferenceCheck) -> str:
    """Inputs the kernel read rounded and the reference perhaps not: said, though the bound held without
    widening for them (a widened bound passed kernels 5% off: tilesim/diff/reference.py)."""
    return (f"; inputs {', '.join(inexact)} are not exactly representable in their tensor types (the kernel read "
            f"them rounded); the result is within the model's own rtol {ref.rtol:.2g} all the same")


def unjudged_note(ref: ReferenceCheck) -> str:
    """``"; not judged: ..."`` for the outputs a reference leaves out or cannot judge, else ``""``."""
    missing = [n for n in ref.unjudged if n not in ref.vacuous]
    why = [f"no float64 reference, or one with no finite element (NaN or inf everywhere), for output(s) "
           f"{', '.join(missing)}"] if missing else []
    why += [vacuous_note(ref)] if ref.vacuous else []
    return "; not judged: " + "; ".join(why) if why else ""


def vacuous_note(ref: ReferenceCheck) -> str:
    """Why the outputs in ``ref.vacuous`` were compared but not judged (tilesim.diff.reference.resolution)."""
    res = dict(ref.resolution)
    return (f"the numerics model's bound (rtol {ref.rtol:.2g} of |A| |B|) passes a result off by "
            f"{', '.join(f'{res[n]:.0%} in {n}' for n in ref.vacuous)} everywhere (a quarter or more: a narrow "
            f"accumulator over a long K; a device run compared with the simulator, or a wider accumulator, judges it)")
