"""Round four: an f64 program is held to f64 precision.

The bound's floor was ``1e-6`` of the scale for every program (meant as a few f32 roundings), so an
f64 GEMM that rounded A to f32 on the way (error about 8e-7 of the result, where f64 arithmetic is
within 1e-14) was REFERENCE_OK. A program whose every float type is f64 now has a floor of a few f64
roundings. The expected values are float64 numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from tilesim.diff import check_reference

MMA = "v_mfma_f64_16x16x4_f64"


@ts.kernel
def gemm64(A: ts.Tensor["f64", "M", "K"], B: ts.Tensor["f64", "K", "N"], C: ts.Tensor["f64", "M", "N"], *,
           via_f32=False):
    op = ts.mma_op(MMA)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f64")
    for k in ts.range(0, A.shape[1], op.k):
        a = ts.load(A[tm * op.m:, k:], op.layout("A"))
        acc = ts.mma(op, ts.cast(ts.cast(a, "f32"), "f64") if via_f32 else a, ts.load(B[k:, tn * op.n:],
                                                                                     op.layout("B")), acc)
    ts.store(C[tm * op.m:, tn * op.n:], acc)


def _arrays():
    r = np.random.default_rng(0)
    return {"A": r.standard_normal((32, 64)), "B": r.standard_normal((64, 32))}


@pytest.mark.parametrize(("via_f32", "ok"), [(True, False), (False, True)])
def test_an_f64_gemm_that_rounds_through_f32_fails(via_f32, ok):
    prog = gemm64.specialize(target="gfx942", M=32, N=32, K=64, via_f32=via_f32)
    arrays = _arrays()
    want = arrays["A"] @ arrays["B"]
    got = np.asarray(ts.simulate(prog, **arrays)["C"], np.float64)
    mag = np.abs(arrays["A"]) @ np.abs(arrays["B"])
    assert (np.max(np.abs(got - want) / mag) > 1e-9) is not ok  # f32 rounding of A, by numpy
    assert check_reference(prog, {"C": got}, {"C": want}, arrays, {"C": mag}).ok is ok
