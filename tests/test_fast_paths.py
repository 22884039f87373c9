"""Fast paths of the simulator give the general paths' results: the compiled LDS race detector and
bank counter (``tilesim.wave.kernels``) and the aligned LDS load/store, the mma run in wave chunks,
and the compact store provenance.

References: hand-worked races on a few bytes (the rule: two waves of a workgroup touch a byte, at
least one writing, with no barrier between), a per-element loop for the last writer of each
element, and whole simulations with the compiled kernels switched off
(``tilesim.wave.kernels.HAVE_NUMBA = False`` runs the numpy versions) or with one wave per mma chunk."""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
import tilesim.wave.kernels as kernels
import tilesim.wave.mma as mma_mod
from examples import lds_gemm as LG
from tilesim.matrix import lookup
from tilesim.wave.kernels import HAVE_NUMBA, lds_races
from tilesim.wave.provenance import Provenance, ProvenanceMap

needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="the compiled race detector needs numba")


def _state(nwg: int = 1, waves: int = 2, nbytes: int = 16):
    return (np.full((nwg, nbytes), -1, np.int64), np.full((nwg, nbytes), -1, np.int64),
            np.full((nwg, waves, nbytes), -1, np.int64),
            (np.full((nwg, nbytes), -1, np.int64), np.zeros((nwg, nbytes), np.int64)))


def _acc(*rows: tuple[int, int, int]) -> tuple[np.ndarray, int, np.ndarray, np.ndarray, np.ndarray]:
    """Accesses (workgroup, wave, byte), one per row, as lds_races takes them: one one-byte record per 'wave'."""
    a = np.array(rows, np.int64).reshape(-1, 3)
    return a[:, 2:3].copy(), 1, a[:, 0].copy(), a[:, 1].copy(), np.ones(len(a), bool)


NONE = (0, -1, -1, -1, -1, False)


@needs_numba
def test_hand_worked_races() -> None:
    lw, we, re, seen = _state()
    # epoch 0: wave 0 writes bytes 4, 5; wave 1 then reads byte 5 with no barrier between (RAW)
    assert lds_races(*_acc((0, 0, 4), (0, 0, 5)), True, 0, lw, we, re, seen, 1) == NONE
    assert lds_races(*_acc((0, 1, 6), (0, 1, 5)), False, 0, lw, we, re, seen, 2) == (1, 0, 1, 5, 0, True)
    # wave 0 then writes byte 5, which wave 1 read in this epoch (WAR: the other access is a read)
    assert lds_races(*_acc((0, 0, 5)), True, 0, lw, we, re, seen, 3) == (1, 0, 0, 5, 1, False)
    # two waves write byte 9 in one op: the later access races the earlier one's wave
    assert lds_races(*_acc((0, 1, 8), (0, 1, 9), (0, 0, 9)), True, 0, lw, we, re, seen, 4) == (1, 0, 0, 9, 1, True)
    assert lw[0, 9] == 0 and lw[0, 5] == 0 and lw[0, 8] == 1  # the last writer in access order
    # after a barrier (epoch 1) the same accesses are ordered: no race
    assert lds_races(*_acc((0, 1, 5), (0, 1, 9)), False, 1, lw, we, re, seen, 5) == NONE
    assert lds_races(*_acc((0, 1, 5)), True, 1, lw, we, re, seen, 6) == NONE  # after its own read
    # another workgroup's bytes are its own; an inactive wave touches nothing
    lw2, we2, re2, seen2 = _state(nwg=2)
    assert lds_races(*_acc((0, 0, 3), (1, 1, 3)), True, 0, lw2, we2, re2, seen2, 1) == NONE
    addr, eb, wg, wave, active = _acc((0, 0, 2), (0, 1, 2))
    active[0] = False
    assert lds_races(addr, eb, wg, wave, active, True, 0, lw2, we2, re2, seen2, 2) == NONE and lw2[0, 2] == 1
    # a two-byte element covers both bytes: wave 0 reads bytes 6 and 7, then wave 1 writes byte 7
    assert lds_races(np.array([[6]]), 2, np.zeros(1, np.int64), np.zeros(1, np.int64), np.ones(1, bool), False, 0,
                     lw2, we2, re2, seen2, 3) == NONE
    assert lds_races(*_acc((0, 1, 7)), True, 0, lw2, we2, re2, seen2, 4) == (1, 0, 1, 7, 0, False)


def _both(prog: ts.Program, arrays: dict[str, np.ndarray], monkeypatch: pytest.MonkeyPatch):
    on = ts.simulate(prog, **arrays)
    monkeypatch.setattr(kernels, "HAVE_NUMBA", False)
    off = ts.simulate(prog, **arrays)
    monkeypatch.undo()
    return on, off


@needs_numba
@pytest.mark.parametrize("smem", sorted(LG.SMEM))
@pytest.mark.parametrize("drop", [False, True])
def test_lds_gemm_reports_match_the_numpy_detector(smem: str, drop: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    target, mma = LG.CONFIGS[0]
    prog = LG.lds_gemm.specialize(target=target, M=64, N=64, K=48, mma=mma, drop_barrier=drop, **LG.SMEM[smem])
    on, off = _both(prog, LG.inputs(prog), monkeypatch)
    assert (on.report.race_count > 0) == drop
    assert (on.report.summary(), on.report.races) == (off.report.summary(), off.report.races)
    assert np.array_equal(on["C"].view(np.uint32), off["C"].view(np.uint32))


@needs_numba
def test_same_op_write_write_and_war_match(monkeypatch: pytest.MonkeyPatch) -> None:
    lay = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")

    @ts.kernel
    def k(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.grid(2)
        ts.waves(3)
        w = ts.wave_id()
        buf = ts.lds_alloc("f32", 32, 16)
        x = ts.load(X[0:, 0:], lay)
        ts.lds_store(buf, w % 2 * 16, 0, x)  # waves 0 and 2 write the same rows in one op
        y = ts.lds_load(buf, (w + 1) % 2 * 16, 0, lay)
        ts.lds_store(buf, 0, 0, y)  # after reads of those rows by other waves: WAR, and WAW in one op
        ts.store(Y[0:, 0:], y)

    prog = k.specialize(target="gfx1201", M=16, N=16)
    X = np.arange(256, dtype=np.float32).reshape(16, 16)
    on, off = _both(prog, {"X": X}, monkeypatch)
    assert on.report.race_count > 0
    assert (on.report.summary(), on.report.races) == (off.report.summary(), off.report.races)


def test_mma_in_wave_chunks_is_the_whole_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """``op_mma`` runs its waves in chunks (memory); one wave per chunk gives every bit, note and
    count of the default, on replicated operands that disagree, NaN/Inf inputs, exact mode and int8."""
    from examples import gemm as G
    from examples import gemm_planted, int8_gemm
    from tests.test_fused import _same

    monkeypatch.setenv("TILESIM_NO_FUSE", "1")  # every step through op_mma
    wmma = "v_wmma_f32_16x16x16_f16"
    cases = [(p, G.inputs(p), {}) for p in gemm_planted.programs() + G.programs(32, 32, 32)]
    cases += [(p, int8_gemm.inputs(p), {}) for p in int8_gemm.programs()]
    # RDNA4's A layout declared on RDNA3: the copies in lanes 16-31 hold other elements than lanes 0-15
    rdna4_a = lookup(wmma, "gfx1201").layout("A")
    prog = G.gemm.specialize(target="gfx1100", M=32, N=32, K=32, mma=wmma, a_layout=rdna4_a)
    cases.append((prog, G.inputs(prog), {}))
    prog = G.gemm.specialize(target="gfx1100", M=32, N=32, K=32, mma=wmma)
    arrays = G.inputs(prog)
    arrays["A"][3, 5], arrays["B"][7, 2] = np.nan, -np.inf
    cases += [(prog, arrays, {}), (prog, G.inputs(prog), {"exact": True})]
    replicated = 0
    for prog, arrays, kw in cases:
        whole = ts.simulate(prog, **arrays, **kw)
        monkeypatch.setattr(mma_mod, "MMA_CHUNK", 1)
        chunked = ts.simulate(prog, **arrays, **kw)
        monkeypatch.setattr(mma_mod, "MMA_CHUNK", 1 << 18)
        _same(whole, chunked)
        replicated += whole.report.replication_count
    assert replicated > 0


def test_compact_provenance_expands_to_the_last_writer_of_each_element() -> None:
    """Two stores of 300,000 writes each (more than one slice of the code writer), with elements
    written twice within a store and again by the second: each element's row names its last writer."""
    shape = (500, 700)
    rng = np.random.default_rng(5)
    prov = Provenance(shape)
    want = np.full((*shape, 6), -1, np.int64)
    for vid, waves, recs in ((7, 1000, 300), (9, 600, 500)):
        wg_of, wave_of = rng.integers(0, 50, waves), rng.integers(0, 4, waves)
        rec = rng.integers(0, 64, (recs, 3))
        flat = rng.integers(0, shape[0] * shape[1], waves * recs)
        prov.record(flat, wg_of, wave_of, rec, vid)
        # the last write of each element in (wave, record) order: its first occurrence in the reversed list
        elems, first_rev = np.unique(flat[::-1], return_index=True)
        i = flat.size - 1 - first_rev
        g, r = np.divmod(i, recs)
        want.reshape(-1, 6)[elems] = np.column_stack([wg_of[g], wave_of[g], rec[r], np.full(i.size, vid)])
    assert np.array_equal(prov.full(), want)
    mapping = ProvenanceMap({"C": prov})
    assert list(mapping) == ["C"] and len(mapping) == 1 and mapping.get("C") is prov.full()
