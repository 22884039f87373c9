"""A program's ``sizes`` agree with its tensors, and the tolerance counts the k-terms the program
runs, not the size its ``"K"`` label claims (round three).

``Program.from_json`` took ``"sizes"`` as written: ``[["K", 1073741824], ...]`` beside tensors of
K = 32 passed `check`, and the reference bound, which read K from that label (K/k accumulator
roundings), grew to rtol ~ 8, so a GEMM storing twice the product (a 100 % error, by numpy) was
judged within tolerance. A DSL kernel that names a non-reduced dim "K" loosened it the same way.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import tilesim as ts
from examples.gemm import gemm
from tilesim.diff import run
from tilesim.diff.reference import result_tolerance
from tilesim.errors import VerifyError
from tilesim.ir.core import Program

def _doc(prog) -> dict:
    return json.loads(prog.to_json())


@pytest.mark.parametrize("sizes", [[["K", 1 << 30], ["M", 32], ["N", 32]], [["K", 16], ["M", 32], ["N", 32]],
                                   [["K", 32], ["M", 32], ["N", 32], ["Q", 7]], [["M", 32], ["N", 32]]])
def test_sizes_that_disagree_with_the_tensors_are_refused(sizes):
    doc = _doc(gemm.specialize(target="gfx1201", M=32, N=32, K=32))
    doc["sizes"] = sizes
    with pytest.raises(VerifyError, match="size"):
        Program.from_json(json.dumps(doc))


@ts.kernel
def one_step(A: ts.Tensor["f16", "M", "D"], B: ts.Tensor["f16", "D", "N"], C: ts.Tensor["f16", "M", "N"],
             W: ts.Tensor["f16", "K", "N"], *, wrong=False):
    """C = A[:, :16] @ B[:16, :], one f16-accumulating mma per tile; W is an input over a dim called
    K that no mma reduces (only its first row is read, times 0, as a bias would be)."""
    op = ts.mma_op("v_wmma_f16_16x16x16_f16")
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.mma(op, ts.load(A[tm * op.m:, 0:], op.layout("A")), ts.load(B[0:, tn * op.n:], op.layout("B")),
                 ts.load_row(W[0:, tn * op.n:], op.layout("C"), "f16") * 0.0)
    ts.store(C[tm * op.m:, tn * op.n:], acc * 1.25 if wrong else acc)


def test_the_tolerance_counts_the_k_terms_the_program_runs():
    labelled = result_tolerance(one_step.specialize(target="gfx1201", M=16, N=16, D=16, K=4096), simulated=True)[0]
    plain = result_tolerance(one_step.specialize(target="gfx1201", M=16, N=16, D=16, K=16), simulated=True)[0]
    assert labelled == plain  # one mma per output either way


@pytest.mark.parametrize("wrong", [True, False])
def test_a_wrong_kernel_with_a_large_k_label_fails(wrong):
    prog = one_step.specialize(target="gfx1201", M=16, N=16, D=16, K=4096, wrong=wrong)
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((16, 16)).astype(np.float16), rng.standard_normal((16, 16)).astype(np.float16)
    W = rng.standard_normal((4096, 16)).astype(np.float16)
    want = A.astype(np.float64) @ B.astype(np.float64)  # the wrong kernel computes 1.25x that: 25 % off, by numpy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = run(prog, device="none", reference={"C": want}, A=A, B=B, W=W)
    assert v.ok != wrong, v
