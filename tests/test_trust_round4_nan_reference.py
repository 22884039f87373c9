"""Round four: a reference with no finite element (NaN or inf everywhere) judges nothing.

Inputs that overflow their tensor type (1e30 into f16 becomes inf) make A @ B NaN everywhere, in the
reference as in the simulation, and NaN = NaN counted as agreement: REFERENCE_OK for any kernel that
also produces NaN, a wrong one included (with B all ones, +inf everywhere: the same). Such an output is now not judged (NOT_JUDGED, as an output the
reference leaves out), never a pass.
"""

from __future__ import annotations

import numpy as np

import examples.gemm as g
import tilesim as ts
from tilesim.diff import check_reference, judge_simulation


def test_an_all_nan_reference_is_not_a_pass(tmp_path, capsys):
    prog = g.gemm.specialize(target="gfx1201", M=32, N=32, K=32)
    A = np.full((32, 32), np.inf, np.float16)  # what 1e30 becomes in f16
    B = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float16)
    with np.errstate(invalid="ignore"):
        ref = {"C": A.astype(np.float64) @ B.astype(np.float64)}
    assert np.isnan(ref["C"]).all()  # inf * b with both signs of b: NaN, by IEEE arithmetic in numpy
    res = ts.simulate(prog, A=A, B=B)
    rc = check_reference(prog, res.outputs, ref, {"A": A, "B": B})
    assert "C" in rc.unjudged
    assert judge_simulation(prog, res, ref, {"A": A, "B": B}).status == "NOT_JUDGED"
    np.savez(tmp_path / "in.npz", A=np.full((64, 64), 1e30), B=np.ones((64, 64)))
    from tilesim.cli import main
    assert main(["simulate", "examples/gemm.py", "--target", "gfx1201", "--inputs", str(tmp_path / "in.npz")]) != 0
    assert "REFERENCE_OK" not in capsys.readouterr().out


def test_a_reference_with_some_nan_still_judges_the_rest():
    prog = g.gemm.specialize(target="gfx1201", M=32, N=32, K=32)
    A = np.random.default_rng(1).standard_normal((32, 32)).astype(np.float16)
    A[0, 0] = np.inf
    B = np.random.default_rng(0).standard_normal((32, 32)).astype(np.float16)
    with np.errstate(invalid="ignore"):
        ref = {"C": A.astype(np.float64) @ B.astype(np.float64)}
    res = ts.simulate(prog, A=A, B=B)
    wrong = dict(res.outputs)
    wrong["C"] = np.asarray(wrong["C"], np.float64) * 1.01
    assert not check_reference(prog, wrong, ref, {"A": A, "B": B}).ok
    assert check_reference(prog, res.outputs, ref, {"A": A, "B": B}).ok
