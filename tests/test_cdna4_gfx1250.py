"""gfx950 (CDNA4) and gfx1250 layouts, which AMD's calculator v1.3.2 does not cover.

Expected locations are the element-wise formulas of the CDNA4 ISA guide's layout tables
(§7.1.4-7.1.5.1, transcribed per element here, not through tilesim's chunk recipes) and, for
gfx1250 (no ISA tables available to us), AMD rocjitsu's ``wmma_input_loc`` (which agrees with
Composable Kernel / Triton WMMA v3 for the 16-bit and f32 rows; CK's 8-bit rows differ from it by
a K order shared by A and B). docs/catalog.md states the confidence of each.
"""

from __future__ import annotations

import numpy as np
import pytest

from tilesim.matrix.catalog import lookup


def _expected(shape: tuple[int, int], width: int, where) -> np.ndarray:
    """Records (block, row, col, vgpr, lane, bit_lo, bit_hi) from ``where(r, k) -> (lane, item)``."""
    recs = []
    for r in range(shape[0]):
        for k in range(shape[1]):
            lane, item = where(r, k)
            bit = item * width
            recs.append((0, r, k, bit // 32, lane, bit % 32, bit % 32 + width - 1))
    rec = np.array(recs, np.int64)
    return rec[np.lexsort(rec.T[::-1])]


def _transpose_b(rec: np.ndarray) -> np.ndarray:
    """The same formula for B[k][j] (outer index j on the column)."""
    out = rec.copy()
    out[:, [1, 2]] = rec[:, [2, 1]]
    return out[np.lexsort(out.T[::-1])]


CDNA4_AB = [
    # (mnemonic, M, K, width, lane(i,k), item(i,k)) — CDNA4 ISA tables
    ("v_mfma_f32_16x16x32_f16", 16, 32, 16, lambda i, k: i + 16 * (k // 8), lambda i, k: k % 8),
    ("v_mfma_f32_32x32x16_bf16", 32, 16, 16, lambda i, k: i + 32 * (k // 8), lambda i, k: k % 8),
    ("v_mfma_i32_16x16x64_i8", 16, 64, 8, lambda i, k: i + 16 * (k // 16), lambda i, k: k % 16),
    ("v_mfma_i32_32x32x32_i8", 32, 32, 8, lambda i, k: i + 32 * (k // 16), lambda i, k: k % 16),
]


@pytest.mark.parametrize(("name", "m", "k", "w", "lane", "item"), CDNA4_AB, ids=[c[0] for c in CDNA4_AB])
def test_cdna4_dense_a_b_match_the_isa_tables(name, m, k, w, lane, item):
    row = lookup(name, "gfx950")
    want = _expected((m, k), w, lambda i, kk: (lane(i, kk), item(i, kk)))
    assert np.array_equal(row.layout("A").location_array(), want)
    assert np.array_equal(row.layout("B").location_array(), _transpose_b(want))


# f8f6f4: CBSZ (A) / BLGP (B) choose the format. fp8/bf8 hold two 16-k chunks per lane, one from
# each half of K; fp6/bf6/fp4 hold 32 consecutive k (CDNA4 ISA §7.1.5.1 FP8/FP6/FP4 tables).
F8F6F4 = [
    (16, 128, {0: 8, 1: 8}, lambda i, k: (i + 16 * ((k // 16) % 4), 16 * (k // 64) + k % 16)),
    (32, 64, {0: 8, 1: 8}, lambda i, k: (i + 32 * ((k // 16) % 2), 16 * (k // 32) + k % 16)),
    (16, 128, {2: 6, 3: 6, 4: 4}, lambda i, k: (i + 16 * (k // 32), k % 32)),
    (32, 64, {2: 6, 3: 6, 4: 4}, lambda i, k: (i + 32 * (k // 32), k % 32)),
]


@pytest.mark.parametrize(("m", "k", "fmts", "where"), F8F6F4, ids=["16x16x128-fp8", "32x32x64-fp8",
                                                                 "16x16x128-fp6fp4", "32x32x64-fp6fp4"])
def test_cdna4_f8f6f4_formats_match_the_isa_tables(m, k, fmts, where):
    for scaled in ("", "scale_"):
        row = lookup(f"v_mfma_{scaled}f32_{m}x{m}x{k}_f8f6f4", "gfx950")
        for fmt, width in fmts.items():
            want = _expected((m, k), width, where)
            assert np.array_equal(row.layout("A", cbsz=fmt).location_array(), want), fmt
            assert np.array_equal(row.layout("B", blgp=fmt).location_array(), _transpose_b(want)), fmt


def test_cdna4_fp6_elements_straddle_registers():
    row = lookup("v_mfma_f32_16x16x128_f8f6f4", "gfx950")
    locs = {(r.row, r.col): r for r in row.layout("A", cbsz=2).locations()}
    # item 5 of lane 0 (k = 5): bits 30..35 of the 6-register tuple -> starts in v0 at bit 30
    assert (locs[(0, 5)].vgpr, locs[(0, 5)].bit_lo, locs[(0, 5)].bit_hi) == (0, 30, 35)
    assert row.layout("A", cbsz=2).registers_per_lane() == 6
    assert row.layout("A", cbsz=4).registers_per_lane() == 4 and row.layout("A", cbsz=0).registers_per_lane() == 8


def test_cdna4_accumulators_are_cdna3s():
    for name, arch3 in (("v_mfma_f32_32x32x16_f16", "v_mfma_f32_32x32x8_f16"),
                        ("v_mfma_f32_16x16x32_bf16", "v_mfma_f32_16x16x16_bf16")):
        assert lookup(name, "gfx950").layout("D") == lookup(arch3, "gfx942").layout("D")


def test_cdna4_fp8_is_ocp_and_cdna3_fp8_is_fnuz():
    assert lookup("v_mfma_f32_16x16x32_fp8_fp8", "gfx950").types[0] == "fp8_ocp"
    assert lookup("v_mfma_f32_16x16x32_fp8_fp8", "gfx942").types[0] == "fp8_fnuz"


# gfx1250 (wave32). Expected A: AMD rocjitsu's ``wmma_input_loc`` (mma_exec.h), transcribed:
# lanes_per_group = 2, elems_per_group = K/2; for K >= 32 the lane group alternates every
# block = elems_per_group/2 k (16 for 8-bit K=128). C/D as RDNA4 wave32.
GFX1250 = [
    ("v_wmma_f32_16x16x4_f32", 4, 32),
    ("v_wmma_f32_16x16x32_f16", 32, 16),
    ("v_wmma_bf16_16x16x32_bf16", 32, 16),
    ("v_wmma_i32_16x16x64_iu8", 64, 8),
    ("v_wmma_f32_16x16x64_fp8_bf8", 64, 8),
    ("v_wmma_f16_16x16x128_bf8_bf8", 128, 8),
    ("v_wmma_f32_16x16x128_fp8_fp8", 128, 8),
]


def _rocjitsu_wmma_input_loc(i: int, k: int, K: int, bits: int) -> tuple[int, int]:
    per_group = K // 2
    local, lane = k % per_group, (k // per_group) * 16 + i
    if K >= 32:
        block = 16 if (bits == 8 and K == 128) else per_group // 2
        local, lane = (k // (2 * block)) * block + k % block, ((k // block) % 2) * 16 + i
    return lane, local


@pytest.mark.parametrize(("name", "k", "w"), GFX1250, ids=[g[0] for g in GFX1250])
def test_gfx1250_follows_rocjitsus_wmma_input_loc(name, k, w):
    row = lookup(name, "gfx1250")
    want = _expected((16, k), w, lambda i, kk: _rocjitsu_wmma_input_loc(i, kk, k, w))
    assert np.array_equal(row.layout("A").location_array(), want)
    d = row.layout("D").locations()
    assert all(r.lane == r.col + 16 * (r.row // 8) for r in d)
    dbits = {"f32": 32, "i32": 32, "f16": 16, "bf16": 16}[row.types[3]]
    assert all(r.vgpr * 32 + r.bit_lo == (r.row % 8) * dbits for r in d)
    assert row.wave_sizes == (32,)
