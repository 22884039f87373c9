"""The fused LDS k-loop (``tilesim/wave/lds_fused.py``) gives the step-by-step simulator's results
bit for bit: every register image, output, provenance array, write count and report line (bank
cycles, race count and messages), compared with the same simulation under ``TILESIM_NO_FUSE=1``
(every LDS access computed from scratch, every op step by step) and under ``TILESIM_NO_LDS_FUSE=1``
(only this loop off). The hand-made loops break the repeating pattern the fused path relies on — a
barrier skipped in one iteration (a race in that iteration only, or in the last iteration only),
slabs whose placement or row order changes with the slab, a load that reads across two stores,
workgroups that access LDS differently, a NaN — and a counter says whether the fused path ran, so
each case is known to test the fused path or its fallback."""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
import tilesim.wave.lds_fused as lds_fused
from examples import lds_gemm as L
from examples.lds_gemm import copy_layout
from tests.test_fused import _same
from tilesim.wave.kernels import HAVE_NUMBA

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="fusion needs numba")


@ts.kernel
def staged(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"],
           *, mma="v_wmma_f32_16x16x16_f16", skip_barrier_at=-1, rotate=False, reverse=False, shift_at=-1,
           skew=False, swap_high=False, drift=False, doubled_prologue=False, stray_read=False, read_after=False):
    """examples/lds_gemm.py (2x2 waves, double-buffered) with ways to break its repeating pattern:
    ``skip_barrier_at``: no barrier after that iteration; ``rotate``: slab 1's strips are copied by
    other waves (same data, other source waves); ``reverse``: slab 1's strips in reverse row order
    (other data layout); ``shift_at``: that iteration's A fragment starts one row lower (its rows span two
    waves' strips differently); ``skew``: odd tile rows use the slabs the other way round;
    ``swap_high``: waves 2 and 3 store each other's strip position (wave row 1's fragment rows out of
    order, wave row 0's not); ``drift``: in iteration 2, wave 3 stages wave 2's rows (a source
    that moves unlike the others between iterations that use the same slab); ``doubled_prologue``:
    the prologue stores 2 * A (iteration 0's operands are not a tensor window); ``stray_read``: an
    extra load reads rows no store writes (Report.uninit in every iteration); ``read_after``: after
    the loop, one more mma reads both slabs' last contents back from LDS."""
    op = ts.mma_op(mma)
    ts.waves(4)
    BM, BN, BK = 2 * op.m, 2 * op.n, op.k
    ts.grid(A.shape[0] // BM, B.shape[1] // BN)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    w = ts.wave_id()
    wm, wn = w // 2, w % 2
    sA = ts.lds_alloc("f16", 2 * BM + 8, BK, vec=2, per_phase=4, max_phase=4)
    sB = ts.lds_alloc("f16", 2 * BK, BN, vec=2, per_phase=4, max_phase=4)
    a_rows, b_rows = BM // 4, BK // 4
    a_copy, b_copy = copy_layout(a_rows, BK, op.wave_size), copy_layout(b_rows, BN, op.wave_size)

    def stage(k, slab):
        strip = (w + slab) % 4 if rotate else w  # wave w copies strip (w + slab) % 4 of the A slab
        src = strip
        if drift and not isinstance(k, int):  # (the prologue's k is 0)
            src = w - (w == 3) * (k == 3 * BK)
        ga = ts.load(A[tm * BM + src * a_rows:, k:], a_copy)
        if doubled_prologue and isinstance(k, int):
            ga = ga + ga  # the prologue stores a computed value, not a load's window
        if reverse:
            strip = w + slab * (3 - 2 * w)  # and puts it in LDS in reverse strip order
        if swap_high:
            strip = w + (w >= 2) * (5 - 2 * w)
        ts.lds_store(sA, slab * BM + strip * a_rows, 0, ga)
        gb = ts.load(B[k + w * b_rows:, tn * BN:], b_copy)
        ts.lds_store(sB, slab * BK + w * b_rows, 0, gb)

    first = tm % 2 if skew else 0
    stage(0, first)
    ts.barrier()
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], BK):
        cur = (k // BK + first) % 2
        with ts.when(k + BK < A.shape[1]):
            stage(k + BK, 1 - cur)
        a = ts.lds_load(sA, cur * BM + wm * op.m + (k == shift_at * BK), 0, op.layout("A"))
        b = ts.lds_load(sB, cur * BK, wn * op.n, op.layout("B"))
        if stray_read:
            ts.lds_load(sA, 2 * BM - 8, 0, op.layout("A"))  # 8 rows no store writes: unwritten LDS, every iteration
        acc = ts.mma(op, a, b, acc)
        with ts.when(k < skip_barrier_at * BK):  # (no != among the binops)
            ts.barrier()
        with ts.when(k >= skip_barrier_at * BK + BK):
            ts.barrier()
    if read_after:  # (slab 1 of A with slab 0 of B: both last written by fused iterations)
        acc = ts.mma(op, ts.lds_load(sA, BM + wm * op.m, 0, op.layout("A")),
                     ts.lds_load(sB, 0, wn * op.n, op.layout("B")), acc)
    ts.store(C[tm * BM + wm * op.m:, tn * BN + wn * op.n:], acc)


def _runs(prog: ts.Program, arrays: dict[str, np.ndarray], monkeypatch: pytest.MonkeyPatch) -> tuple[object, int]:
    """The simulation with the fused path (and how many iterations it chained), checked against the
    two step-by-step references."""
    ran = []
    real = lds_fused.mma_chain

    def counting(va, base_a, *args, **kw):
        got = real(va, base_a, *args, **kw)
        ran.append(0 if got is None else base_a.shape[0])
        return got

    monkeypatch.setattr(lds_fused, "mma_chain", counting)
    on = ts.simulate(prog, verify=False, **arrays)  # (check()'s findings are not what this tests)
    monkeypatch.setattr(lds_fused, "mma_chain", real)
    for switch in ("TILESIM_NO_LDS_FUSE", "TILESIM_NO_FUSE"):
        monkeypatch.setenv(switch, "1")
        off = ts.simulate(prog, verify=False, **arrays)
        monkeypatch.delenv(switch)
        _same(on, off)
    return on, sum(ran)


def _inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    return L.inputs(prog, seed)


@pytest.mark.parametrize("target,mma", L.CONFIGS)
@pytest.mark.parametrize("smem", sorted(L.SMEM))
@pytest.mark.parametrize("drop_barrier", [False, True])
def test_lds_gemm_fuses_and_matches(target: str, mma: str, smem: str, drop_barrier: bool,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    prog = L.lds_gemm.specialize(target=target, M=64, N=32, K=96, mma=mma, drop_barrier=drop_barrier, **L.SMEM[smem])
    on, fused = _runs(prog, _inputs(prog), monkeypatch)
    assert fused == 6  # every iteration fused (0 reads the prologue's stores; the last's loads read from the tensors)
    assert (on.report.race_count > 0) == drop_barrier


@pytest.mark.parametrize("target,mma", L.CONFIGS)
@pytest.mark.parametrize("skip,fuses", [(1, True), (4, True), (-1, True)])
def test_a_barrier_skipped_in_one_iteration(target: str, mma: str, skip: int, fuses: bool,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Races in iteration ``skip + 1`` only (the tail, for skip 4 of 6 iterations): the fused path
    replays every access's race check in order, so it finds them where step by step does."""
    prog = staged.specialize(target=target, M=32, N=32, K=96, mma=mma, skip_barrier_at=skip)
    on, fused = _runs(prog, _inputs(prog), monkeypatch)
    assert (fused > 0) == fuses
    assert (on.report.race_count > 0) == (skip >= 0)
    if skip >= 0:
        assert on.report.races and all("with no barrier between" in r for r in on.report.races)


@pytest.mark.parametrize("target,mma", L.CONFIGS)
@pytest.mark.parametrize("opts,fuses", [({"rotate": True}, True), ({"reverse": True}, False),
                                        ({"shift_at": 3}, 2), ({"skew": True}, True),
                                        ({"swap_high": True}, False), ({"drift": True}, False),
                                        ({"skew": True, "skip_barrier_at": 2}, True)])
def test_patterns_that_change_with_the_slab(target: str, mma: str, opts: dict, fuses: bool,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``rotate``: other source waves per slab, same operand windows: fuses. ``reverse``: slab 1
    holds the rows in another order, so the operand windows differ between slabs: falls back.
    ``shift_at``: iteration 3 reads across two slabs' stores: it and those before it run step by
    step, the two after it are chained. ``skew``: workgroups
    access LDS differently (the map is built for every wave, not workgroup 0's): fuses.
    ``swap_high``: the waves' fragments are not one window shape: falls back. ``drift``: a source
    wave's rows move unlike its neighbour's between iterations of one slab: falls back."""
    prog = staged.specialize(target=target, M=64, N=32, K=96, mma=mma, **opts)
    _, fused = _runs(prog, _inputs(prog, 1), monkeypatch)
    assert fused == fuses if type(fuses) is int else (fused > 0) == fuses


def test_a_nan_in_a_source_tensor_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    prog = L.programs(64, 32, 96)[0]
    arrays = _inputs(prog)
    arrays["A"][5, 50] = np.nan  # read in a middle iteration
    on, fused = _runs(prog, arrays, monkeypatch)
    assert fused == 0 and np.isnan(on["C"]).any()


def test_an_inf_product_that_turns_nan_mid_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """inf * 0 in a fused step: the chain declines before anything is reported; the head already ran."""
    prog = L.programs(32, 32, 96)[1]
    arrays = _inputs(prog)
    arrays["A"][3, 40] = np.inf
    arrays["B"][40, :] = 0
    on, fused = _runs(prog, arrays, monkeypatch)
    assert fused == 0 and np.isnan(on["C"]).any()


@pytest.mark.parametrize("target,mma", L.CONFIGS)
@pytest.mark.parametrize("doubled,chained", [(False, 6), (True, 5)])
def test_iteration_0_reads_the_prologue(target: str, mma: str, doubled: bool, chained: int,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Iteration 0's operands come from the stores before the loop: chained when those store a
    load's window, else iteration 0 runs step by step (and the other five are chained)."""
    prog = staged.specialize(target=target, M=32, N=32, K=96, mma=mma, doubled_prologue=doubled)
    _, fused = _runs(prog, _inputs(prog, 2), monkeypatch)
    assert fused == chained


@pytest.mark.parametrize("target,mma", L.CONFIGS)
def test_lds_read_after_the_loop_sees_the_fused_stores(target: str, mma: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a later LDS op a loop fused to its end leaves the LDS bytes unwritten (nothing reads
    them); with one, the fused stores' bytes are there for it, as step by step."""
    prog = staged.specialize(target=target, M=32, N=32, K=96, mma=mma, read_after=True)
    on, fused = _runs(prog, _inputs(prog), monkeypatch)
    assert fused == 6


@pytest.mark.parametrize("target,mma", L.CONFIGS)
def test_reads_of_unwritten_lds_in_fused_iterations(target: str, mma: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A load no mma reads, of rows no store writes: reported (``unwritten_lds_reads``) in the fused
    iterations as step by step."""
    prog = staged.specialize(target=target, M=32, N=32, K=96, mma=mma, stray_read=True)
    on, fused = _runs(prog, _inputs(prog), monkeypatch)
    assert fused == 5 and on.report.uninit_count > 0
