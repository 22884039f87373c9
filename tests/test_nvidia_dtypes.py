"""Typed emission on real NVIDIA silicon (skipped without CuPy and a GPU): the CUDA source tilesim
emits for casts between every pair of element types, arithmetic on every type, typed LDS, packed
4/6-bit tensors (atomicAnd/atomicOr stores), a bias vector (``ts.load_row``) and f64 ``mma.sync``,
compiled by NVRTC and run; the device's bits must equal the simulator's (issue 16 item 5).
"""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from tests.test_emit_dtypes import (
    ALL,
    _agree,
    _small,
    _source_values,
    arith_program,
    cast_program,
    lds_program,
)
from tilesim.codegen.hip import emit_hip

cp = pytest.importorskip("cupy", reason="needs CuPy and an NVIDIA GPU (run on the device machine)")


def _run(prog, arrays):
    from tilesim.hw.nvidia import run_nvidia

    try:
        cp.cuda.Device(0).compute_capability
    except Exception as e:  # no driver / no device
        pytest.skip(f"no usable NVIDIA GPU: {e}")
    dev = run_nvidia(emit_hip(prog), arrays)
    sim = ts.simulate(prog, **arrays)
    # CuPy appends -ftz=true to every NVRTC compile (cupy/cuda/compiler.py, after the caller's options),
    # so f32 subnormals flush to zero on the device where the model keeps them: those elements are
    # compared as "flushed or equal", and everything else bit for bit
    bad = []
    for k in dev:
        d, m = np.asarray(dev[k], np.float64), np.asarray(sim[k], np.float64)
        sub = (m != 0) & (np.abs(m) < 2.0**-126) | _f32_subnormal_input(arrays)
        ok = _agree(d, m) | (sub & (d == 0))
        if not ok.all():
            bad.append(k)
    assert not bad, (prog.name, bad, [(np.asarray(dev[k]).ravel()[:4], np.asarray(sim[k]).ravel()[:4]) for k in bad])


def _f32_subnormal_input(arrays) -> np.ndarray | bool:
    x = arrays.get("X")
    if x is None:
        return False
    x = np.asarray(x, np.float64)
    return (x != 0) & (np.abs(x) < 2.0**-126)


@pytest.mark.cuda
@pytest.mark.parametrize("src", ALL)
def test_every_cast_on_the_gpu(src):
    prog = cast_program(src, tuple(ALL), "sm_90")
    m, n = prog.tensor("X").shape
    _run(prog, {"X": _source_values(src, np.random.default_rng(11), m * n).reshape(m, n)})


@pytest.mark.cuda
@pytest.mark.parametrize("dt", ALL)
def test_arithmetic_on_every_type_on_the_gpu(dt):
    prog = arith_program(dt, "sm_90")
    _run(prog, {"X": _small(dt, prog.tensor("X").shape, np.random.default_rng(12))})


@pytest.mark.cuda
@pytest.mark.parametrize(("frag_t", "buf_t"), [("f64", "f64"), ("f32", "fp8_ocp"), ("i32", "i4"), ("bf16", "fp6")])
def test_typed_lds_on_the_gpu(frag_t, buf_t):
    prog = lds_program(frag_t, buf_t, "sm_90")
    m, n = prog.tensor("X").shape
    _run(prog, {"X": _source_values(frag_t, np.random.default_rng(13), m * n).reshape(m, n)})


@pytest.mark.cuda
def test_gemm_bias_on_the_gpu():
    from examples import gemm_bias

    prog = next(p for p in gemm_bias.programs() if p.target == "sm_90")
    _run(prog, gemm_bias.inputs(prog))


@pytest.mark.cuda
def test_f64_mma_sync_on_the_gpu():
    op = "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"

    @ts.kernel
    def dgemm(A: ts.Tensor["f64", "M", "K"], B: ts.Tensor["f64", "K", "N"], C: ts.Tensor["f64", "M", "N"]):
        mo = ts.mma_op(op)
        acc = ts.zeros(mo.layout("C"), "f64")
        for k in ts.range(0, A.shape[1], mo.k):
            acc = ts.mma(mo, ts.load(A[0:, k:], mo.layout("A")), ts.load(B[k:, 0:], mo.layout("B")), acc)
        ts.store(C[0:, 0:], acc)

    prog = dgemm.specialize(target="sm_90", M=8, N=8, K=16)
    rng = np.random.default_rng(14)
    a, b = rng.integers(-3, 4, (8, 16)).astype(np.float64), rng.integers(-3, 4, (16, 8)).astype(np.float64)
    np.testing.assert_array_equal(ts.simulate(prog, A=a, B=b)["C"], a @ b)
    _run(prog, {"A": a, "B": b})
