"""A verdict object is true only when it passes (trust, round five).

``assert ts.run(prog)``, ``assert ts.check(prog)``, ``if check_layout(...):`` and ``assert audit(...)`` are how
people write tests; before 0.11.0 every result object was a plain dataclass, always true, so a NOT_JUDGED or
SIM_MISMATCH verdict, a check with errors, a MISMATCH layout and an audit with findings all passed an
``assert`` (only ``Equivalence`` had ``__bool__``). Now ``bool(result)`` is ``result.ok`` for each of them.

What each wrong thing is comes from outside the object under test: the kernel that scales C by 1.25 is wrong
by float64 numpy (tests/test_unjudged.py); the RDNA3 accumulator declared on RDNA4 is a mismatch by AMD's
calculator data (tests/test_check_layout.py); the discarded product fails check (round three).
"""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from tests.test_unjudged import _arrays, _numpy_c, gemm
from tilesim.diff import check_reference, judge_simulation
from tilesim.frameworks import check_layout

WRONG = dict(target="sm_90", M=32, N=32, K=32, scale=1.25)


def test_a_verdict_that_does_not_pass_is_false():
    prog = gemm.specialize(**WRONG)
    unjudged = ts.run(prog, device="none", **_arrays())
    assert unjudged.status == "NOT_JUDGED" and not unjudged.ok
    assert not unjudged  # was True: `assert ts.run(prog)` passed a kernel nothing judged
    wrong = ts.run(prog, device="none", reference={"C": _numpy_c(_arrays())}, **_arrays())
    assert wrong.status == "SIM_MISMATCH" and not wrong
    right = ts.run(gemm.specialize(**{**WRONG, "scale": 1.0}), device="none",
                   reference={"C": _numpy_c(_arrays())}, **_arrays())
    assert right.ok and right  # the neighbour still passes


def test_a_simulation_judgement_and_a_reference_check_that_fail_are_false():
    prog = gemm.specialize(**WRONG)
    res = ts.simulate(prog, **_arrays())
    ref = check_reference(prog, res.outputs, {"C": _numpy_c(_arrays())})
    assert not ref.ok and not ref
    j = judge_simulation(prog, res, {"C": _numpy_c(_arrays())}, _arrays())
    assert j.status == "REFERENCE_MISMATCH" and not j
    assert not judge_simulation(prog, res, None, _arrays())  # NOT_JUDGED
    right = gemm.specialize(**{**WRONG, "scale": 1.0})
    assert judge_simulation(right, ts.simulate(right, **_arrays()), {"C": _numpy_c(_arrays())}, _arrays())


def test_a_check_report_with_errors_is_false():
    from tests.test_trust_check import gemm as checked_gemm  # the round-three GEMM with a discarded product

    rep = ts.check(checked_gemm.specialize(target="gfx1201", M=32, N=32, K=32, bug="mma_discarded"))
    assert not rep.ok and not rep
    assert ts.check(gemm.specialize(**WRONG))  # no error (only the intent is wrong)


def test_a_layout_that_does_not_match_is_false():
    # gfx1100's WMMA accumulator (AMD calculator: rows 2i + lane//16) declared for gfx1201 (rows 8*(lane//16) + i)
    bad = check_layout("AMDWMMALayout(1, False, [1,1])", "gfx1201")
    assert not bad.ok and not bad
    assert check_layout("AMDWMMALayout(2, False, [1,1])", "gfx1201")


def test_an_audit_with_findings_or_undecided_is_false():
    from tilesim.isa.audit import AuditReport, Finding

    assert not AuditReport((), 0, 0, 0, undecided=("no matrix instruction ran",))
    f = Finding.__new__(Finding)  # only its presence matters to ok
    assert not AuditReport((f,), 1, 1, 0)
    assert AuditReport((), 1, 8, 0)
