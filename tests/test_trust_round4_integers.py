"""Round four: a program computed in integers is compared exactly.

An int8 GEMM accumulates exactly in i32 (the catalog's tolerance for an integer row is 0), but the
bound kept a floor of ``1e-6`` times the scale: with the example's full-range i32 bias (|scale| about
2e9) an element could be 2,000 off, and a GEMM that adds 1 (or 1000) to every element was
REFERENCE_OK. The expected values are int64 numpy (examples/int8_gemm.py's reference, which wraps as
the i32 accumulator does).
"""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from examples.int8_gemm import CONFIGS, inputs, reference
from tilesim.diff import check_reference, result_tolerance


@ts.kernel
def off_by(A: ts.Tensor["i8", "M", "K"], B: ts.Tensor["i8", "K", "N"], Bias: ts.Tensor["i32", "M", "N"],
           C: ts.Tensor["i32", "M", "N"], *, mma="", neg=0, off=0):
    op = ts.mma_op(mma)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.load(Bias[tm * op.m:, tn * op.n:], op.layout("C"))
    for k in ts.range(0, A.shape[1], op.k):
        acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")), acc,
                     **({"neg": neg} if neg else {}))
    ts.store(C[tm * op.m:, tn * op.n:], acc + off if off else acc)


@pytest.mark.parametrize(("target", "mma", "neg"), CONFIGS)
@pytest.mark.parametrize("off", [1, 1000])
def test_an_integer_gemm_off_by_a_little_is_a_mismatch(target, mma, neg, off):
    prog = off_by.specialize(target=target, M=64, N=64, K=64, mma=mma, neg=neg, off=off)
    arrays = inputs(prog)
    want = reference(**arrays)
    got = ts.simulate(prog, **arrays).outputs
    assert (np.asarray(got["C"], np.int64) != want["C"]).all()  # wrong in every element, by int64 numpy
    rc = check_reference(prog, got, want, arrays)
    assert not rc.ok and int(dict(rc.bad)["C"].sum()) == 64 * 64


@pytest.mark.parametrize(("target", "mma", "neg"), CONFIGS)
def test_the_right_integer_gemm_is_exact_and_passes(target, mma, neg):
    prog = off_by.specialize(target=target, M=64, N=64, K=64, mma=mma, neg=neg)
    arrays = inputs(prog)
    assert result_tolerance(prog, simulated=True) == (0.0, 0.0)
    assert check_reference(prog, ts.simulate(prog, **arrays).outputs, reference(**arrays), arrays).ok
