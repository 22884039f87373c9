"""The simulator itself sees LDS reads of bytes no store wrote (trust, round two), so `run` and
`simulate` fail on them even where `check`'s analysis is over its budget (it then only warns).

The wrong program is tests/test_trust_check.py's ``lds_unwritten_rows``: rows 8..23 of an LDS buffer
whose rows 0..15 were stored, so A's rows 8..15 of each tile are whatever the LDS held (that test shows
with float64 numpy that two such devices compute different C). Its right neighbour,
``lds_written_rows``, reads the rows it stored and stays clean.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tilesim as ts
import tilesim.ir.accesses as accesses
from tests.test_trust_check import _inputs, _prog, _product
from tilesim.diff import judge_simulation, run, simulation_errors


@pytest.fixture
def over_budget(monkeypatch):
    """check's analysis over its budget: reads of unwritten LDS are then a warning, not an error."""
    monkeypatch.setattr(accesses, "BUDGET", 64)


@pytest.fixture(params=["fused", "step"])
def path(request, monkeypatch):
    if request.param == "step":
        monkeypatch.setenv("TILESIM_NO_FUSE", "1")
    return request.param


def _sim(p, arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ts.simulate(p, **arrays)


def test_unwritten_lds_read_fails_past_checks_budget(over_budget, path) -> None:
    p, arrays = _prog("lds_unwritten_rows"), _inputs()
    c = ts.check(p)
    assert c.ok and "unwritten LDS not checked" in str(c), c  # check cannot tell
    res = _sim(p, arrays)
    errs = simulation_errors(res)
    assert any("no store wrote" in e for e in errs), errs  # before: [], and simulate/run passed
    # rows 8..15 of each 16-row slab: 2 tiles x 2 k-steps x 8 rows x 16 columns of A per workgroup column
    assert res.report.uninit_count > 0 and "lds_load from" in res.report.uninit[0]
    assert res.report.summary()["unwritten_lds_reads"] == res.report.uninit_count
    j = judge_simulation(p, res, None, arrays, errors=[])
    assert j.status == "CHECK_FAILED" and not j.ok
    v = run(p, device="none", reference={"C": _product(**arrays)}, **arrays)
    assert not v.ok and v.status in ("CHECK_FAILED", "SIM_MISMATCH"), v


def test_the_written_neighbour_stays_clean(over_budget, path) -> None:
    p, arrays = _prog("lds_written_rows"), _inputs()
    res = _sim(p, arrays)
    assert res.report.uninit_count == 0 and "unwritten_lds_reads" not in res.report.summary()
    assert simulation_errors(res) == []
    assert np.allclose(res.outputs["C"], _product(**arrays), rtol=1e-5, atol=1e-5)
    v = run(p, device="none", reference={"C": _product(**arrays)}, **arrays)
    assert v.ok, v
