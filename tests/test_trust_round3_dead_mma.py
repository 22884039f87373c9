"""A matrix instruction whose result nothing reads is an error (round three).

``ts.mma(op, a, b, acc)`` without ``acc =`` (or into a name the loop does not carry) throws every
product away: the GEMM below stores the zero accumulator. `check` was OK and `run` without a
reference exited 0 (COMPILE_ONLY). The output is shown wrong by numpy (all zeros against a
non-zero A @ B); the carried neighbour stays accepted.
"""

from __future__ import annotations

import textwrap
import warnings

import numpy as np
import pytest

import tilesim as ts
from tests.test_trust_check import gemm
from tilesim.cli import main
from tilesim.diff import run


def _inputs():
    rng = np.random.default_rng(0)
    return {"A": rng.standard_normal((32, 32)).astype(np.float16), "B": rng.standard_normal((32, 32)).astype(np.float16)}


@pytest.mark.parametrize("bug", ["mma_discarded", "mma_not_carried"])
def test_a_discarded_product_fails_check_and_run(bug, tmp_path, capsys):
    prog = gemm.specialize(target="gfx1201", M=32, N=32, K=32, bug=bug)
    arrays = _inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ts.simulate(prog, verify=False, **arrays)["C"]
    want = arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)
    assert not got.any() and np.abs(want).max() > 1  # wrong by numpy: zeros for a non-zero product
    errors = ts.check(prog).errors
    assert any("never read" in str(e) for e in errors), errors
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = run(prog, device="none", **arrays)
    assert v.status == "CHECK_FAILED" and not v.ok
    f = tmp_path / "prog.py"
    f.write_text(textwrap.dedent(f"""
        from tests.test_trust_check import gemm
        def programs():
            return [gemm.specialize(target="gfx1201", M=32, N=32, K=32, bug={bug!r})]
    """))
    assert main(["check", str(f)]) == 1
    capsys.readouterr()


def test_the_carried_product_is_accepted():
    assert ts.check(gemm.specialize(target="gfx1201", M=32, N=32, K=32)).ok


def test_an_epilogue_computed_and_not_stored_fails_check():
    """`out = acc * 0.5` computed, `acc` stored: the store does not depend on the epilogue."""

    @ts.kernel
    def scaled(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"], *,
               store_scaled=False):
        op = ts.mma_op("v_wmma_f32_16x16x16_f16")
        ts.grid(1, 1)
        acc = ts.mma(op, ts.load(A[0:, 0:], op.layout("A")), ts.load(B[0:, 0:], op.layout("B")),
                     ts.zeros(op.layout("C"), "f32"))
        out = acc * 0.5
        ts.store(C[0:, 0:], out if store_scaled else acc)

    bad = ts.check(scaled.specialize(target="gfx1201", M=16, N=16, K=16)).errors
    assert any("never read" in str(e) and "elementwise" in str(e) for e in bad), bad
    assert ts.check(scaled.specialize(target="gfx1201", M=16, N=16, K=16, store_scaled=True)).ok
