"""Fused k-loops (``tilesim/wave/fused.py``) give the step-by-step simulator's results bit for bit.

Two independent references: the compiled chain of mma steps against a plain numpy loop (float64
einsum per step, then rounding to float32), and whole simulations with fusion on against the same
simulations with ``TILESIM_NO_FUSE=1`` (every register image, output, provenance array, write
count and report line). A counter checks that the fused path really ran where it should."""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
import tilesim.wave.fused as fused
import tilesim.wave.sim as sim_mod
from examples import gemm as G
from examples import gemm_planted
import tilesim.wave.kernels as kernels
from tilesim.wave.kernels import HAVE_NUMBA, mma_chain

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="fusion needs numba")


def _numpy_chain(va, base_a, off_a, vb, base_b, off_b, acc, k):
    c = acc.astype(np.float64)
    M, N = acc.shape[1:]
    for t in range(base_a.shape[0]):
        a = np.where(off_a >= 0, va[base_a[t][:, None] + off_a[None, :]], 0.0).reshape(-1, M, k)
        b = np.where(off_b >= 0, vb[base_b[t][:, None] + off_b[None, :]], 0.0).reshape(-1, k, N)
        c = (np.einsum("gmk,gkn->gmn", a, b) + c).astype(np.float32).astype(np.float64)
    return c.astype(np.float32)


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("m,n,k", [(16, 16, 16), (32, 32, 8), (16, 8, 16)])
def test_chain_matches_a_numpy_loop(m: int, n: int, k: int, threads: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "_PARALLEL_MACS", 0 if threads else 1 << 62)  # the threaded kernel, or the serial one
    rng = np.random.default_rng(m * n + k)
    # f16 values over a wide exponent range, so the float64 sums and the f32 roundings both round
    va = (rng.standard_normal(4096) * np.exp2(rng.integers(-12, 12, 4096))).astype(np.float16).astype(np.float64)
    vb = (rng.standard_normal(4096) * np.exp2(rng.integers(-12, 12, 4096))).astype(np.float16).astype(np.float64)
    G_, T = 7, 5
    base_a = rng.integers(0, 4096 - m * k, (T, G_))
    base_b = rng.integers(0, 4096 - k * n, (T, G_))
    off_a = rng.permutation(m * k).astype(np.int64)
    off_a[3] = -1  # an element no lane owns reads 0
    off_b = np.arange(k * n, dtype=np.int64)[::-1].copy()
    acc = rng.standard_normal((G_, m, n)).astype(np.float32)
    got = mma_chain(va, base_a, off_a, vb, base_b, off_b, acc, k)
    want = _numpy_chain(va, base_a, off_a, vb, base_b, off_b, acc, k)
    assert got is not None and got.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_chain_declines_nan() -> None:
    va = np.full(256, np.nan)
    vb = np.ones(256)
    z = np.zeros((1, 1), np.int64)
    assert mma_chain(va, z, np.arange(256), vb, z, np.arange(256), np.zeros((1, 16, 16), np.float32), 16) is None


def _sims(prog: ts.Program, arrays: dict[str, np.ndarray], monkeypatch: pytest.MonkeyPatch, **kw):
    ran = []
    real = fused.run_fused_loop

    def counting(sim, loop, iters):
        n = real(sim, loop, iters)
        ran.append(n)
        return n

    monkeypatch.setattr(sim_mod, "run_fused_loop", counting)
    on = ts.simulate(prog, **arrays, **kw)
    monkeypatch.setenv("TILESIM_NO_FUSE", "1")
    off = ts.simulate(prog, **arrays, **kw)
    monkeypatch.delenv("TILESIM_NO_FUSE")
    return on, off, sum(ran[: len(ran) // 2])


def _same(a, b) -> None:
    assert a.outputs.keys() == b.outputs.keys() and a.registers.keys() == b.registers.keys()
    for k in a.outputs:
        assert np.array_equal(a.outputs[k].view(np.uint8), b.outputs[k].view(np.uint8))
    for k in a.registers:
        assert np.array_equal(a.registers[k], b.registers[k]), k
    for d1, d2 in ((a.provenance, b.provenance), (a.write_counts, b.write_counts)):
        assert d1.keys() == d2.keys() and all(np.array_equal(d1[k], d2[k]) for k in d1)
    ra, rb = a.report, b.report
    assert (ra.summary(), ra.races, ra.oob, ra.replication) == (rb.summary(), rb.races, rb.oob, rb.replication)


@pytest.mark.parametrize("target,mma", G.CONFIGS)
def test_fused_gemm_is_the_step_by_step_gemm(target: str, mma: str, monkeypatch: pytest.MonkeyPatch) -> None:
    prog = G.gemm.specialize(target=target, M=64, N=96, K=80, mma=mma)
    on, off, fused_steps = _sims(prog, G.inputs(prog), monkeypatch)
    assert fused_steps > 0  # the fused path ran
    _same(on, off)


def test_ragged_k_fuses_the_in_bounds_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    prog = G.gemm.specialize(target="gfx1201", M=32, N=32, K=56, mma="v_wmma_f32_16x16x16_f16")  # last step OOB
    on, off, fused_steps = _sims(prog, G.inputs(prog), monkeypatch)
    assert fused_steps == 3 and on.report.oob_count > 0
    _same(on, off)


def test_nan_and_planted_layouts_fall_back_or_fuse_identically(monkeypatch: pytest.MonkeyPatch) -> None:
    prog = G.gemm.specialize(target="gfx942", M=64, N=64, K=64, mma="v_mfma_f32_32x32x8f16")
    arrays = G.inputs(prog)
    arrays["A"][40, 30] = np.nan  # read in a middle step: the whole loop falls back
    on, off, fused_steps = _sims(prog, arrays, monkeypatch)
    assert fused_steps == 0
    _same(on, off)
    for prog in gemm_planted.programs():
        (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
        rng = np.random.default_rng(1)
        arrays = {"A": rng.standard_normal((M, K)).astype(np.float16),
                  "B": rng.standard_normal((K, N)).astype(np.float16)}
        on, off, _ = _sims(prog, arrays, monkeypatch)
        _same(on, off)


def test_traced_accumulator_is_not_fused(monkeypatch: pytest.MonkeyPatch) -> None:
    prog = G.gemm.specialize(target="gfx1201", M=32, N=32, K=64, mma="v_wmma_f32_16x16x16_f16")
    acc = [op.out.id for op in prog.walk() if op.kind == "mma"]
    on, off, fused_steps = _sims(prog, G.inputs(prog), monkeypatch, trace=tuple(acc))
    assert fused_steps == 0 and len(on.trace[acc[0]]) == 4
    _same(on, off)
