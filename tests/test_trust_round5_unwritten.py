"""A device or emulated run that leaves output elements unwritten is a mismatch (trust, round five).

The NVIDIA and AMD runners and the ISA emulator started every output buffer at zero, so compiled code
that never stores an element whose value is 0 (a relu's zeros, a zero-padded edge, a predicated store
that skips them) agreed with the simulation there: MATCH / EMULATED_MATCH, exit 0. ``check`` cannot see
it (the program stores every element; the compiled code does not). Now ``run`` starts each output the
program never reads at a value the simulation has nowhere in that output, so an element the compiled
code does not write differs from the simulation.

The faults are planted outside tilesim (a fake device that skips zero stores; the emitted HIP edited to
skip them); the right value of every element is float64 numpy's relu(A @ B).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import tilesim as ts
from tilesim.diff import run

NV = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


@ts.kernel
def relu_gemm(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"], *,
              mma=NV):
    op = ts.mma_op(mma)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], op.k):
        acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")), acc)
    ts.store(C[tm * op.m:, tn * op.n:], ts.maximum(acc, 0.0))


def _arrays(M=32, N=16, K=32):
    rng = np.random.default_rng(5)
    return {"A": rng.standard_normal((M, K)).astype(np.float16), "B": rng.standard_normal((K, N)).astype(np.float16)}


def _want(arrays):
    return {"C": np.maximum(arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64), 0.0)}


def skips_zero_stores(em, arrays):
    """A device whose kernel stores only the non-zero results: right everywhere it writes."""
    c = _want({k: arrays[k] for k in ("A", "B")})["C"].astype(np.float32)
    start = np.asarray(arrays.get("C", np.zeros(c.shape, np.float32)), np.float64)
    return {"C": np.where(c != 0, c.astype(np.float64), start)}


def stores_everything(em, arrays):
    return {"C": _want({k: arrays[k] for k in ("A", "B")})["C"].astype(np.float32).astype(np.float64)}


def test_a_device_that_skips_zero_stores_is_a_mismatch():
    prog = relu_gemm.specialize(target="sm_90", M=32, N=16, K=32)
    arrays = _arrays()
    assert (_want(arrays)["C"] == 0).mean() > 0.3  # the relu's zeros: a third of C or more
    v = run(prog, reference=_want(arrays), runner=skips_zero_stores, **arrays)
    assert v.status == "MISMATCH" and not v.ok  # was MATCH
    right = run(prog, reference=_want(arrays), runner=stores_everything, **arrays)
    assert right.status == "MATCH" and right.ok


@pytest.mark.compiler
@pytest.mark.parametrize(("target", "mma"), [("gfx1201", "v_wmma_f32_16x16x16_f16"),
                                             ("gfx942", "v_mfma_f32_16x16x16f16")])
def test_emitted_code_that_skips_a_zero_row_is_an_emulated_mismatch(monkeypatch, target, mma):
    """Row 5 of A is zero (a padded edge), so row 5 of C is 0; the planted code never stores row 5."""
    from tilesim.isa import api

    prog = relu_gemm.specialize(target=target, M=32, N=32, K=32, mma=mma)
    arrays = _arrays(32, 32, 32)
    arrays["A"][5] = 0
    assert run(prog, device="emulator", reference=_want(arrays), **arrays).status == "EMULATED_MATCH"
    real = api.emit_hip

    def planted(p):
        em = real(p)
        src, n = re.subn(r"(\bC\[gr \* 32 \+ gc\] =)", r"if (gr != 5) \1", em.source)
        assert n, "no store of C found to plant"
        return dataclasses.replace(em, source=src)

    monkeypatch.setattr(api, "emit_hip", planted)
    v = run(prog, device="emulator", reference=_want(arrays), **arrays)
    assert v.status == "EMULATED_MISMATCH" and not v.ok  # was EMULATED_MATCH
