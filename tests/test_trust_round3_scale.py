"""The tolerance is relative to the data, with no floor in the data's units (round three).

The bound was ``atol + rtol * (scale + 1)``: the ``+ 1`` is an absolute allowance of ``rtol`` in
whatever units the data have. For a bf16 output (rtol ~ 2 eps(bf16) = 0.016) and inputs of size
0.01 (ordinary for weights), every |C| is below 0.003, so a kernel that stores zeros, or that skips
a k-step, was REFERENCE_OK / COMPILE_ONLY with a reference. The wrong kernels are shown wrong by
float64 numpy alone (their outputs differ from ``A @ B`` by 100 % and by tens of percent); the
right kernel keeps passing at every scale, including values near the output type's smallest normal.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tilesim as ts
from tilesim.diff import run

WMMA = "v_wmma_f32_16x16x16_f16"


@ts.kernel
def bf16_gemm(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["bf16", "M", "N"], *,
              bug=""):
    op = ts.mma_op(WMMA)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    kend = A.shape[1] - (op.k if bug == "skip_last_k_step" else 0)
    for k in ts.range(0, kend, op.k):
        a = ts.load(A[tm * op.m:, k:], op.layout("A"))
        b = ts.load(B[k:, tn * op.n:], op.layout("B"))
        acc = ts.mma(op, a, b, acc)
    if bug == "store_zeros":
        acc = acc * 0.0
    ts.store(C[tm * op.m:, tn * op.n:], acc)


def _case(bug: str, scale: float):
    prog = bf16_gemm.specialize(target="gfx1201", M=32, N=32, K=64, bug=bug)
    rng = np.random.default_rng(0)
    arrays = {"A": (scale * rng.standard_normal((32, 64))).astype(np.float16),
              "B": (scale * rng.standard_normal((64, 32))).astype(np.float16)}
    want = arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)
    return prog, arrays, want


@pytest.mark.parametrize("scale", [0.03, 0.01])
@pytest.mark.parametrize("bug", ["store_zeros", "skip_last_k_step"])
def test_a_wrong_kernel_on_small_data_is_not_passed(bug, scale):
    prog, arrays, want = _case(bug, scale)
    # wrong by numpy alone: what the kernel computes, in float64, is far from A @ B
    A, B = (arrays[n].astype(np.float64) for n in "AB")
    computed = 0 * want if bug == "store_zeros" else A[:, :-16] @ B[:-16, :]
    assert np.abs(computed - want).max() > 0.2 * np.abs(want).max()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = run(prog, device="none", reference={"C": want}, **arrays)
    assert not v.ok and v.status == "SIM_MISMATCH", v


@pytest.mark.parametrize("scale", [1.0, 0.03, 0.01, 1e-3])
def test_the_right_kernel_passes_at_every_scale(scale):
    prog, arrays, want = _case("", scale)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = run(prog, device="none", reference={"C": want}, **arrays)
    assert v.ok, v


def test_a_reference_that_ignores_its_inputs_keeps_the_tile_scale():
    """A reference() that returns stored results (golden files) gives the same arrays on |inputs|:
    that is no |A||B| bound, and an element that cancels to ~0 must not be judged against its own
    size (without the old `+ 1` it would fail a right kernel)."""
    from tilesim.diff.reference import check_reference

    prog, arrays, want = _case("", 1.0)
    A, B = arrays["A"].copy(), arrays["B"].copy()
    A[:, 32:] = A[:, :32]
    B[32:, 3] = -B[:32, 3]  # column 3 of A @ B is exactly 0 in real arithmetic, from terms of size ~1
    arrays = {"A": A, "B": B}
    want = A.astype(np.float64) @ B.astype(np.float64)
    assert np.abs(want[:, 3]).max() == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ts.simulate(prog, **arrays).outputs
    stored = {"C": want}
    assert check_reference(prog, got, stored, arrays, magnitude=stored).ok
    v = run(prog, device="none", reference=stored, reference_magnitude=stored, **arrays)
    assert v.ok, v
