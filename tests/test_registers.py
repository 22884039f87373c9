"""Register images: pack -> execute on registers -> unpack equals logical execution; wrong
layouts give the hardware's wrong answer; replicas and sparse indices behave as the ISA says.

Expected D values come from a float64/int64 numpy reference computed here on small integer
inputs (every product and sum is exact there, so one rounding cannot differ from the reference).
"""

from __future__ import annotations

import numpy as np
import pytest

from tilesim.errors import ModifierError
from tilesim.matrix.catalog import lookup, rows
from tilesim.matrix.registers import compress_sparse, execute_registers, pack, unpack

SAMPLE = {  # one row per layout family runs always; the rest with --full
    ("cdna1", "v_mfma_f32_4x4x4f16"), ("cdna2", "v_mfma_f64_4x4x4f64"), ("cdna3", "v_mfma_f32_32x32x8_f16"),
    ("cdna3", "v_smfmac_i32_16x16x64_i8"), ("cdna4", "v_mfma_f32_32x32x64_f8f6f4"), ("rdna3", "v_wmma_f16_16x16x16_f16"),
    ("rdna4", "v_wmma_i32_16x16x32_iu4"), ("rdna4", "v_swmmac_f32_16x16x32_f16"), ("gfx1250", "v_wmma_f32_16x16x4_f32"),
    ("sm80", "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"),
}
CASES = [
    pytest.param(r, w, marks=() if (r.family, r.mnemonic) in SAMPLE else pytest.mark.slow,
                 id=f"{r.family}:{r.mnemonic}:w{w}")
    for r in rows() for w in r.wave_sizes
]


def _inputs(row, rng):
    sa, sb, sc = (row.blocks, row.m, row.k), (row.blocks, row.k, row.n), (row.blocks, row.m, row.n)
    lo = 0 if row.types[0].startswith("u") else -3
    a, b, c = (rng.integers(lo, 4, s).astype(np.float64) for s in (sa, sb, sc))
    if row.sparse:  # keep 2 of every 4 k, at varying positions
        g = a.reshape(row.blocks, row.m, -1, 4)
        keep = rng.permuted(np.tile([1, 1, 0, 0], g.shape[:-1] + (1,)), axis=-1)
        a = (g * keep).reshape(sa)
    return a, b, c


@pytest.mark.parametrize(("row", "wave"), CASES)
def test_register_execution_equals_the_float64_reference(row, wave):
    rng = np.random.default_rng(7)
    a, b, c = _inputs(row, rng)
    regs = {op: pack(row, op, v, wave_size=wave) for op, v in (("A", a), ("B", b), ("C", c))}
    k = pack(row, "K", a, wave_size=wave) if row.sparse else None
    d = unpack(row, "D", execute_registers(row, regs["A"], regs["B"], regs["C"], k=k, wave_size=wave),
               wave_size=wave).values
    ref = np.einsum("bmk,bkn->bmn", a, b) + c  # small integers: exact in float64
    assert np.array_equal(d, ref)


def test_a_wrong_layout_gives_exactly_the_hardware_answer():
    """A packed for RDNA3 (16 consecutive k per lane) but run on RDNA4 (4-k chunks alternating
    lane halves) computes with the K order RDNA4 reads; the result is A_perm @ B."""
    rdna3 = lookup("v_wmma_f32_16x16x16_f16", "gfx1100")
    rdna4 = lookup("v_wmma_f32_16x16x16_f16", "gfx1201")
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (16, 16)).astype(np.float64)
    b = np.eye(16)  # D = what RDNA4 reads as A
    regs3 = pack(rdna3, "A", a, wave_size=32)[:, :4]  # RDNA3 uses 8 VGPRs for A; RDNA4 reads 4
    got = unpack(rdna4, "A", regs3, wave_size=32).values[0]
    # RDNA3 lane i (i < 16) holds A[i][0..7] in v0..v3; RDNA4 reads lane i, v0..v3 as k = 0-3, 8-11
    # and lane i+16 (RDNA3: the replica of row i) as k = 4-7, 12-15.
    want = np.concatenate([a[:, 0:4], a[:, 0:4], a[:, 4:8], a[:, 4:8]], axis=1)
    assert np.array_equal(got, want)
    d = execute_registers(rdna4, regs3, pack(rdna4, "B", b), pack(rdna4, "C", np.zeros((16, 16))))
    assert np.array_equal(unpack(rdna4, "D", d).values[0], want)


def test_disagreeing_replicas_are_reported():
    row = lookup("v_wmma_f32_16x16x16_f16", "gfx1100")
    a = np.arange(256, dtype=np.float64).reshape(16, 16) / 8
    regs = pack(row, "A", a, wave_size=32)
    assert unpack(row, "A", regs, wave_size=32).disagreements == []
    regs[16 + 5, 0] ^= 1  # lane 21 is the replica of row 5; flip a bit of its k=0 copy
    assert unpack(row, "A", regs, wave_size=32).disagreements == [(0, 5, 0)]


def test_cbsz_broadcast_reads_the_source_block():
    row = lookup("v_mfma_f32_16x16x1f32", "gfx908")  # 4 blocks
    a = np.arange(4 * 16, dtype=np.float64).reshape(4, 16, 1)
    regs = pack(row, "A", a)
    read = unpack(row, "A", regs, cbsz=1, abid=1).values  # groups {0,1} <- block 1, {2,3} <- block 3
    assert np.array_equal(read, a[[1, 1, 3, 3]])


def test_blgp_rotation_reads_other_lanes():
    row = lookup("v_mfma_f32_32x32x2f32", "gfx90a")  # B: lane = j + 32*k
    b = np.arange(2 * 32, dtype=np.float64).reshape(1, 2, 32)
    read = unpack(row, "B", pack(row, "B", b), blgp=3).values  # lane l reads lane (l+16) % 64
    lane = np.arange(64)
    src = (lane + 16) % 64
    want = np.empty_like(b)
    want[0, lane // 32, lane % 32] = b[0, src // 32, src % 32]
    assert np.array_equal(read, want)


def test_sparse_compression_round_trip_and_errors():
    a = np.array([[0, 5, 0, 7, 1, 0, 0, 0]], dtype=np.float64)
    vals, idx = compress_sparse(a)
    assert vals.tolist() == [[5, 7, 1, 0]] and idx.tolist() == [[1, 3, 0, 1]]
    with pytest.raises(ModifierError, match="not 4:2 sparse"):
        compress_sparse(np.array([[1.0, 1, 1, 0]]))


def test_pack_rejects_a_wrong_shape():
    row = lookup("v_mfma_f32_32x32x8f16", "gfx90a")
    with pytest.raises(ModifierError, match=r"\(32, 8\)"):
        pack(row, "A", np.zeros((8, 32)))
