"""`run` and `simulate` leave check's per-byte LDS passes (races, reads of unwritten LDS, reads of
copies in flight) to the simulation, which sees every access of the same program (LDS addresses
come from tile ids, wave ids and loop counters, never from data). These tests pin both halves:
the skipped passes really are skipped (that is where the seconds went: 3.4-4.5 s of check against
0.07 s of simulation for examples/lds_gemm.py at 512^3), and each wrong LDS program those passes
catch still fails `run` and `tilesim simulate` through the simulation's own findings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tilesim as ts
from examples import lds_gemm
from tests.test_trust_check import _inputs, _prog, _product
from tilesim.diff import judge_simulation, run
from tilesim.errors import CheckWarning
from tilesim.ir.verify import check


def _racy():
    return lds_gemm.lds_gemm.specialize(target="gfx1201", M=32, N=32, K=48, drop_barrier=True)


def _reference(prog, arrays):
    return {"C": arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)}


@pytest.mark.parametrize("make", [_racy, lambda: _prog("lds_unwritten_rows")], ids=["race", "unwritten"])
def test_the_skipped_passes_are_what_catches_them_statically(make):
    p = make()
    assert not check(p).ok  # tilesim check still runs every pass
    assert check(p, lds_state=False).ok  # the split: these findings are the simulation's to make


def test_a_race_still_fails_run_and_simulate():
    p = _racy()
    arrays = lds_gemm.inputs(p)
    with pytest.warns(CheckWarning, match="LDS race"):
        res = ts.simulate(p, **arrays)
    assert res.check_errors == [] and res.report.race_count > 0
    j = judge_simulation(p, res, _reference(p, arrays), arrays)
    assert not j.ok and any("racing LDS" in e for e in j.errors), j
    v = run(p, device="none", reference=_reference(p, arrays), **arrays)
    assert not v.ok and v.exit_status == 1, v
    v = run(p, device="none", **arrays)  # no reference: the race alone fails it
    assert v.status == "CHECK_FAILED" and any("racing LDS" in e for e in v.check_errors), v


def test_an_unwritten_read_still_fails_run_and_simulate():
    p, arrays = _prog("lds_unwritten_rows"), _inputs()
    with pytest.warns(CheckWarning, match="no store wrote"):
        res = ts.simulate(p, **arrays)
    assert res.report.uninit_count > 0
    assert judge_simulation(p, res, None, arrays).status == "CHECK_FAILED"
    v = run(p, device="none", reference={"C": _product(**arrays)}, **arrays)
    assert not v.ok and v.exit_status == 1, v


def test_right_neighbours_pass_without_warnings():
    for p, arrays in ((lds_gemm.lds_gemm.specialize(target="gfx1201", M=32, N=32, K=48), None),
                      (_prog("lds_written_rows"), _inputs())):
        arrays = arrays or lds_gemm.inputs(p)
        with warnings.catch_warnings():
            warnings.simplefilter("error", CheckWarning)
            res = ts.simulate(p, **arrays)
        assert res.check_errors == [] and res.report.race_count == 0 and res.report.uninit_count == 0
        v = run(p, device="none", reference=_reference(p, arrays), **arrays)  # float64 numpy A @ B
        assert v.ok and v.status in ("COMPILE_ONLY", "SIMULATED_ONLY"), v
        assert run(p, device="none", **arrays).status == "NOT_JUDGED"  # nothing judged it: exit 4, not ok
