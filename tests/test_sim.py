"""Simulator semantics, each checked against a plain-Python recomputation written in the test:
LDS round trips through swizzled layouts, bank-conflict cycles, cross-wave races, masked
out-of-bounds lanes, global transactions, lane shuffles, reductions, casts, layout conversion,
traces, inspection and equivalence."""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from tilesim.ir.core import LdsLayout
from tilesim.matrix import lookup

WMMA4 = lookup("v_wmma_f32_16x16x16_f16", "gfx1201")
C_LAY = WMMA4.layout("C")  # 16x16 f32, wave32: lane = j + 16*(i//8), slot = i%8
A_LAY = WMMA4.layout("A")


def _lds_kernel(pad=0, vec=1, per_phase=1, max_phase=1, barrier=True, waves=1, same_rows=False):
    @ts.kernel
    def k(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.grid(1)
        ts.waves(waves)
        w = ts.wave_id()
        buf = ts.lds_alloc("f32", 16 * waves, 16, pad=pad, vec=vec, per_phase=per_phase, max_phase=max_phase)
        x = ts.load(X[w * 16:, 0:], C_LAY)
        row = 0 if same_rows else w * 16
        ts.lds_store(buf, row, 0, x)
        if barrier:
            ts.barrier()
        other = ((w + 1) % waves) * 16 if not same_rows else 0
        y = ts.lds_load(buf, other, 0, C_LAY)
        ts.store(Y[w * 16:, 0:], y)

    return k.specialize(target="gfx1201", M=16 * waves, N=16)


def _expected_conflicts(lay: LdsLayout, banks: int = 32) -> int:
    """Sum over VGPR instructions of (max distinct dwords in one bank) - 1, by plain loops."""
    total = 0
    for vgpr in range(8):
        per_bank: dict[int, set[int]] = {}
        for r in C_LAY.locations():
            if r.vgpr == vgpr:
                dw = lay.offset(r.row, r.col) // 4
                per_bank.setdefault(dw % banks, set()).add(dw)
        total += max(len(s) for s in per_bank.values()) - 1
    return total


@pytest.mark.parametrize("cfg", [dict(), dict(pad=1), dict(pad=2), dict(vec=4, per_phase=1, max_phase=4), dict(pad=4)],
                         ids=["plain", "pad1", "pad2", "xor4x4", "pad4"])
def test_lds_round_trip_and_bank_conflicts(cfg):
    p = _lds_kernel(**cfg)
    X = np.arange(256, dtype=np.float32).reshape(16, 16)
    res = ts.simulate(p, X=X)
    assert np.array_equal(res["Y"], X)
    lay = LdsLayout(16, 16, 4, cfg.get("pad", 0), cfg.get("vec", 1), cfg.get("per_phase", 1), cfg.get("max_phase", 1))
    want = 2 * _expected_conflicts(lay)  # one store and one load, same addresses
    assert res.report.lds_bank_conflict_cycles == want
    assert res.report.lds_bytes >= lay.bytes


def test_the_c_layout_conflicts_plain_and_the_right_padding_removes_them():
    # Each VGPR instruction of the RDNA4 C layout touches rows v and v+8 (16 dwords each): with a
    # 64-byte row those land on the same 16 banks (2-way). Padding p shifts row v+8 by 8*p banks:
    # p = 2 moves it onto the other 16 banks; p = 1 or 4 do not (8 and 0 banks of shift).
    X = np.zeros((16, 16), np.float32)
    cycles = {pad: ts.simulate(_lds_kernel(pad=pad), X=X).report.lds_bank_conflict_cycles for pad in (0, 1, 2, 4)}
    assert cycles[0] == 16 and cycles[1] == 16 and cycles[4] == 16 and cycles[2] == 0


def test_missing_barrier_is_a_race_and_the_barrier_fixes_it():
    X = np.arange(2 * 256, dtype=np.float32).reshape(32, 16)
    ok = ts.simulate(_lds_kernel(waves=2), X=X)
    assert ok.report.race_count == 0
    assert np.array_equal(ok["Y"], np.concatenate([X[16:], X[:16]]))  # each wave read the other's tile
    racy = ts.simulate(_lds_kernel(waves=2, barrier=False), X=X)
    assert racy.report.race_count > 0
    assert "workgroup 0" in racy.report.races[0] and "no barrier" in racy.report.races[0]
    both = ts.simulate(_lds_kernel(waves=2, same_rows=True), X=X)  # two waves store the same rows: WAW
    assert both.report.race_count > 0


def test_out_of_bounds_lanes_are_masked_and_reported():
    @ts.kernel
    def copy(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.grid(2)
        t = ts.tile_id(0)
        ts.store(Y[t * 16:, 0:], ts.load(X[t * 16:, 0:], C_LAY))

    p = copy.specialize(target="gfx1201", M=20, N=16)  # the second tile runs 12 rows past the end
    X = np.arange(20 * 16, dtype=np.float32).reshape(20, 16)
    res = ts.simulate(p, X=X)
    assert np.array_equal(res["Y"], X)
    # loads and stores of tile 1 touch rows 20..31: 12 rows x 16 cols, each once per access
    assert res.report.oob_count == 2 * 12 * 16
    assert "masked" in res.report.oob[0] and "lane" in res.report.oob[0]


def test_global_transactions_count_distinct_64_byte_segments_per_instruction():
    @ts.kernel
    def copy(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.grid(1)
        ts.store(Y[0:, 0:], ts.load(X[0:, 0:], C_LAY))

    p = copy.specialize(target="gfx1201", M=16, N=16)
    res = ts.simulate(p, X=np.zeros((16, 16), np.float32))
    want = 0
    for vgpr in range(8):  # one instruction per VGPR: lane j -> X[i][j], i = 8*(lane//16) + vgpr
        segs = {((r.row * 16 + r.col) * 4) // 64 for r in C_LAY.locations() if r.vgpr == vgpr}
        want += len(segs)
    assert res.report.global_transactions == 2 * want  # load + store


def test_shuffle_reduce_cast_convert():
    src = [(lane + 1) % 32 for lane in range(32)]

    @ts.kernel
    def k(X: ts.Tensor["f32", "M", "N"], S: ts.Tensor["f32", "M", "N"], R: ts.Tensor["f32", "M", "N"],
          H: ts.Tensor["f16", "M", "N"], V: ts.Tensor["f32", "M", "N"]):
        ts.grid(1)
        x = ts.load(X[0:, 0:], C_LAY)
        ts.store(S[0:, 0:], ts.shuffle(x, src))
        ts.store(R[0:, 0:], ts.reduce(x, "max", axis="col"))
        ts.store(H[0:, 0:], x.to("f16"))
        ts.store(V[0:, 0:], ts.convert(ts.load(X[0:, 0:], A_LAY, "f32"), C_LAY))

    p = k.specialize(target="gfx1201", M=16, N=16)
    X = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    out = ts.simulate(p, X=X)
    # shuffle: lane l receives lane l+1's registers, which the program still reads through C_LAY
    S = np.zeros_like(X)
    for r in C_LAY.locations():
        src_rec = C_LAY.apply(lane=(r.lane + 1) % 32, slot=r.vgpr)
        S[r.row, r.col] = X[src_rec["row"], src_rec["col"]]
    assert np.array_equal(out["S"], S)
    assert np.array_equal(out["R"], np.broadcast_to(X.max(1, keepdims=True), X.shape))
    assert np.array_equal(out["H"], X.astype(np.float16))
    assert np.array_equal(out["V"], X)


def test_trace_inspect_and_equivalence():
    @ts.kernel
    def acc_sum(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.grid(1)
        acc = ts.zeros(C_LAY, "f32")
        for i in ts.range(0, X.shape[0], 16):
            acc = acc + ts.load(X[i:, 0:], C_LAY)
        ts.store(Y[0:, 0:], acc)

    p = acc_sum.specialize(target="gfx1201", M=48, N=16)
    X = np.arange(48 * 16, dtype=np.float32).reshape(48, 16)
    acc_id = [op for op in p.walk() if op.kind == "elementwise"][0].out.id
    res = ts.simulate(p, X=X, trace=(acc_id,))
    assert np.array_equal(res["Y"][:16], X[:16] + X[16:32] + X[32:])
    assert len(res.trace[acc_id]) == 3  # one image per loop iteration
    table = ts.inspect(res, f"%{acc_id}", lanes=2)
    first = X[0, 0] + X[16, 0] + X[32, 0]
    assert f"(0,0)={first:.6g}" in table
    rec = ts.inspect(res, acc_id, as_dict=True)["records"]
    assert len(rec) == 256 and all(r["value"] == (X[r["row"]] + X[16 + r["row"]] + X[32 + r["row"]])[r["col"]]
                                   for r in rec)
    assert ts.equivalent(p, acc_sum.specialize(target="gfx1201", M=48, N=16))
    with pytest.raises(ts.TilesimError, match="no fragment value"):
        ts.inspect(res, "%9999")
