"""RDNA3/RDNA4 in wave64 and CDNA2 (gfx90a), instruction by instruction, on hand-written assembly.

Expectations are computed here from the ISA guides' rules in numpy / Python integers (64-bit lane
masks built bit by bit from the per-lane comparison), never from the emulator's output:

* a VOPC/VOP3 compare in wave64 writes an SGPR *pair* (bit i = lane i, inactive lanes 0), a
  wave32-sized destination raises; ``vcc`` is s[106:107];
* ``s_and_saveexec_b64`` saves the 64-bit EXEC and ANDs it; the b32 form raises in wave64;
* ``v_cndmask_b32`` and ``v_add_co_u32`` read / write the pair (``null`` drops the carry);
* ``s_cbranch_vccnz`` sees VCC's high half;
* DPP16 (``row_share``, ``row_xmask``) acts within each of the four 16-lane rows; ``v_permlanex16_b32``
  pairs rows 0-1 and 2-3; ``v_readlane_b32`` takes a lane select of 6 bits;
* ``ds_bpermute_b32`` on RDNA wave64 works within 32-lane halves (Mesa ACO: "limited to half-wave
  operation"): a crossing raises there, while CDNA's wave64 crosses freely;
* gfx90a: ``v_pk_mov_b32`` moves the dwords ``op_sel`` picks; gfx940-only instructions raise.

Not run on AMD hardware.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests._isa_harness import run
from tilesim.isa import IsaError

RNG = np.random.default_rng(64)
RDNA = ["gfx1100", "gfx1201"]
EXEC64 = 0xF0F0_3C00_FFFF_0F0F  # lanes off in both halves, the high half not all ones


def _mask(bits: np.ndarray) -> int:
    """A lane mask from per-lane booleans, built bit by bit (lane i -> bit i)."""
    return sum(1 << i for i, b in enumerate(bits) if b)


def _pair(st, i: int) -> int:
    return int(st.s[i][0]) | int(st.s[i + 1][0]) << 32


def _active() -> np.ndarray:
    return np.array([(EXEC64 >> i) & 1 for i in range(64)], bool)


@pytest.mark.parametrize("target", RDNA)
def test_a_compare_writes_an_sgpr_pair_with_inactive_lanes_zero(target: str) -> None:
    a = RNG.integers(0, 1000, 64, dtype=np.uint64)
    b = RNG.integers(0, 1000, 64, dtype=np.uint64)
    st = run(target, "\tv_cmp_gt_u32_e64 s[10:11], v0, v1\n\tv_cmp_lt_u32_e32 vcc, v0, v1", {0: a, 1: b},
             s={10: 0xDEAD, 11: 0xBEEF}, exec_mask=EXEC64, wave=64)
    act = _active()
    assert _pair(st, 10) == _mask((a > b) & act)
    assert _pair(st, 106) == _mask((a < b) & act)
    assert _pair(st, 10) >> 32 != 0  # the high half is really written (lanes 32-63 compared)


@pytest.mark.parametrize("target", RDNA)
def test_a_wave32_lane_mask_in_wave64_raises(target: str) -> None:
    with pytest.raises(IsaError, match="wave64 lane mask takes 2"):
        run(target, "\tv_cmp_gt_u32_e64 s10, v0, v1", wave=64)
    with pytest.raises(IsaError, match="saveexec needs the b64"):
        run(target, "\ts_and_saveexec_b32 s20, s10", wave=64)


@pytest.mark.parametrize("target", RDNA)
def test_saveexec_b64_saves_and_ands_the_whole_mask(target: str) -> None:
    cond = 0x8000_0001_7FFF_FFFE
    st = run(target, "\ts_and_saveexec_b64 s[20:21], s[10:11]", s={10: cond & 0xFFFFFFFF, 11: cond >> 32},
             exec_mask=EXEC64, wave=64)
    assert _pair(st, 20) == EXEC64
    assert _pair(st, 126) == EXEC64 & cond


@pytest.mark.parametrize("target", RDNA)
def test_cndmask_and_carry_use_the_pair_and_null_drops_the_carry(target: str) -> None:
    sel = 0x0123_4567_89AB_CDEF
    a = RNG.integers(0, 2**32, 64, dtype=np.uint64)
    b = RNG.integers(0, 2**32, 64, dtype=np.uint64)
    body = ("\tv_cndmask_b32_e64 v2, v0, v1, s[10:11]\n\tv_add_co_u32 v3, s[12:13], v0, v1\n"
            "\tv_add_co_u32 v4, null, v0, v1")
    st = run(target, body, {0: a, 1: b}, s={10: sel & 0xFFFFFFFF, 11: sel >> 32}, wave=64)
    pick = np.array([(sel >> i) & 1 for i in range(64)], bool)
    assert [int(x) for x in st.v[2][0]] == [int(y if p else x) for x, y, p in zip(a, b, pick)]
    total = [int(x) + int(y) for x, y in zip(a, b)]
    assert [int(x) for x in st.v[3][0]] == [t & 0xFFFFFFFF for t in total]
    assert _pair(st, 12) == _mask([t >> 32 for t in total])
    assert [int(x) for x in st.v[4][0]] == [t & 0xFFFFFFFF for t in total]


@pytest.mark.parametrize("target", RDNA)
def test_vccnz_sees_the_high_half(target: str) -> None:
    body = "\ts_cbranch_vccnz .Ltaken\n\tv_mov_b32_e32 v1, 1\n\ts_endpgm\n.Ltaken:\n\tv_mov_b32_e32 v1, 2"
    st = run(target, body, s={106: 0, 107: 0x10}, wave=64)
    assert (st.v[1][0] == 2).all()
    st = run(target, body, s={106: 0, 107: 0}, wave=64)
    assert (st.v[1][0] == 1).all()


@pytest.mark.parametrize("target", RDNA)
def test_dpp_rows_are_16_lanes_in_all_four_rows(target: str) -> None:
    x = np.arange(64, dtype=np.uint64) * 7 + 100
    st = run(target, "\tv_mov_b32_dpp v1, v0 row_share:3 row_mask:0xf bank_mask:0xf\n"
             "\tv_mov_b32_dpp v2, v0 row_xmask:5 row_mask:0xf bank_mask:0xf", {0: x}, wave=64)
    n = np.arange(64)
    np.testing.assert_array_equal(st.v[1][0], x[(n // 16) * 16 + 3])
    np.testing.assert_array_equal(st.v[2][0], x[(n // 16) * 16 + ((n % 16) ^ 5)])


@pytest.mark.parametrize("target", RDNA)
def test_permlanex16_pairs_rows_0_1_and_2_3(target: str) -> None:
    x = np.arange(64, dtype=np.uint64) + 1000
    lo, hi = 0x7654_3210, 0xFEDC_BA98  # nibble j of hi:lo is j: lane i reads lane i % 16 of the partner row
    st = run(target, f"\tv_permlanex16_b32 v1, v0, {lo:#x}, {hi:#x}", {0: x}, wave=64)
    n = np.arange(64)
    partner = (n // 16) ^ 1
    np.testing.assert_array_equal(st.v[1][0], x[partner * 16 + n % 16])
    st = run(target, "\tv_permlane16_b32 v1, v0, s4, s5", {0: x}, s={4: 0x0123_4567, 5: 0x89AB_CDEF}, wave=64)
    sel = 0x89AB_CDEF_0123_4567
    src = (n // 16) * 16 + np.array([(sel >> (4 * (i % 16))) & 15 for i in range(64)])
    np.testing.assert_array_equal(st.v[1][0], x[src])


@pytest.mark.parametrize("target", RDNA)
def test_readlane_reaches_the_upper_half(target: str) -> None:
    x = np.arange(64, dtype=np.uint64) * 3 + 5
    st = run(target, "\tv_readlane_b32 s7, v0, 45\n\tv_readfirstlane_b32 s8, v0", {0: x}, exec_mask=EXEC64 & ~0xF,
             wave=64)
    assert int(st.s[7][0]) == 45 * 3 + 5
    assert int(st.s[8][0]) == 8 * 3 + 5  # EXEC's lowest set bit after clearing bits 0-3 is lane 8


def _bperm(target: str, src_lane: np.ndarray, wave: int = 64):
    x = np.arange(64, dtype=np.uint64) * 11 + 1
    return run(target, "\tds_bpermute_b32 v2, v1, v0", {0: x, 1: src_lane.astype(np.uint64) * 4}, wave=wave), x


@pytest.mark.parametrize("target", RDNA)
def test_bpermute_within_each_half_wave_is_modelled(target: str) -> None:
    n = np.arange(64)
    src = (n & 32) | ((n * 5 + 3) % 32)  # every lane reads a lane of its own half
    st, x = _bperm(target, src)
    np.testing.assert_array_equal(st.v[2][0], x[src])


@pytest.mark.parametrize("target", RDNA)
def test_bpermute_across_half_waves_raises_on_rdna(target: str) -> None:
    n = np.arange(64)
    with pytest.raises(IsaError, match="other half-wave"):
        _bperm(target, (n + 32) % 64)
    with pytest.raises(IsaError, match="other half-wave"):
        run(target, "\tds_permute_b32 v2, v1, v0", {0: n.astype(np.uint64), 1: ((63 - n) * 4).astype(np.uint64)}, wave=64)


def test_bpermute_crosses_the_whole_wave_on_cdna() -> None:
    n = np.arange(64)
    st, x = _bperm("gfx942", (n + 32) % 64)
    np.testing.assert_array_equal(st.v[2][0], x[(n + 32) % 64])


@pytest.mark.parametrize("target", RDNA)
def test_vopd_in_wave64_raises(target: str) -> None:
    with pytest.raises(IsaError, match="wave32 feature"):
        run(target, "\tv_dual_mov_b32 v1, v0 :: v_dual_mov_b32 v2, v0", wave=64)


@pytest.mark.parametrize(("opsel", "lo", "hi"), [("", 2, 4), (" op_sel:[0,1]", 2, 5), (" op_sel:[1,0]", 3, 4),
                                                  (" op_sel:[1,1]", 3, 5)])
def test_pk_mov_b32_moves_the_dwords_op_sel_picks(opsel: str, lo: int, hi: int) -> None:
    regs = {k: RNG.integers(0, 2**32, 64, dtype=np.uint64) for k in (2, 3, 4, 5)}
    st = run("gfx90a", f"\tv_pk_mov_b32 v[0:1], v[2:3], v[4:5]{opsel}", regs, exec_mask=(1 << 64) - 1 - 0xF0)
    on = np.array([not (0xF0 >> i) & 1 for i in range(64)])
    np.testing.assert_array_equal(st.v[0][0], np.where(on, regs[lo], 0))
    np.testing.assert_array_equal(st.v[1][0], np.where(on, regs[hi], 0))


def test_pk_mov_b32_copies_an_sgpr_pair_as_clang_spells_it() -> None:
    st = run("gfx90a", "\tv_pk_mov_b32 v[0:1], s[2:3], s[2:3] op_sel:[0,1]\n\tv_pk_mov_b32 v[4:5], 0, 0",
             {4: np.full(64, 9, np.uint64), 5: np.full(64, 9, np.uint64)}, s={2: 0x1111_2222, 3: 0x3333_4444})
    assert (st.v[0][0] == 0x1111_2222).all() and (st.v[1][0] == 0x3333_4444).all()
    assert (st.v[4][0] == 0).all() and (st.v[5][0] == 0).all()
    with pytest.raises(IsaError, match="dword 1 of a packed source"):
        run("gfx90a", "\tv_pk_mov_b32 v[0:1], v[2:3], -1 op_sel:[0,1]")


def test_gfx940_only_instructions_raise_on_gfx90a() -> None:
    body = "\tv_lshl_add_u64 v[0:1], v[2:3], 2, v[4:5]"
    run("gfx942", body)  # modelled on CDNA3
    with pytest.raises(IsaError, match="gfx940\\+ instruction"):
        run("gfx90a", body)
    with pytest.raises(IsaError, match="gfx940\\+ instruction"):
        run("gfx90a", "\tv_mov_b64_e32 v[0:1], v[2:3]")
    with pytest.raises(IsaError, match="global_load_lds_dword"):  # gfx940+ direct-to-LDS load
        run("gfx90a", "\tglobal_load_lds_dword v[0:1], off", lds=256)


@pytest.mark.parametrize(("target", "wave", "spell"), [("gfx1100", 64, "ds_load_{}_d16{}"), ("gfx1201", 32, "ds_load_{}_d16{}"),
                                                       ("gfx90a", 64, "ds_read_{}_d16{}")])
def test_d16_lds_loads_write_one_half_and_keep_the_other(target: str, wave: int, spell: str) -> None:
    """RDNA3 ISA DS_LOAD_U16_D16[_HI] / U8 / I8 (gfx9: DS_READ_*): the loaded 16 bits (a byte zero- or
    sign-extended to 16) go to the low (high) half of the VGPR; the other half keeps its bits."""
    data = RNG.integers(0, 256, 4 * wave, dtype=np.uint64).astype(np.uint8)
    data[1::4] |= 0x80  # negative bytes for the i8 forms
    words = data.view("<u4").astype(np.uint64)
    old = RNG.integers(0, 2**32, wave, dtype=np.uint64)
    addr = np.arange(wave, dtype=np.uint64) * 4
    forms = [("u16", "_hi", 3), ("u16", "", 4), ("u8", "_hi", 5), ("i8", "", 6), ("i8", "_hi", 7)]
    body = f"\tds_store_b32 v0, v1\n" if spell.startswith("ds_load") else "\tds_write_b32 v0, v1\n"
    body += "\ts_waitcnt lgkmcnt(0)\n" if target.startswith("gfx9") or target == "gfx1100" else "\ts_wait_dscnt 0\n"
    # the byte forms read the address's second byte (offset:1), the one made negative above
    body += "".join(f"\t{spell.format(t, hi)} v{r}, v0{' offset:1' if t != 'u16' else ''}\n" for t, hi, r in forms)
    st = run(target, body, {0: addr, 1: words, **{r: old for *_, r in forms}}, lds=4 * wave, wave=wave)
    u16 = [int(w) & 0xFFFF for w in words]
    b1 = [(int(w) >> 8) & 0xFF for w in words]
    s16 = [(b - 256 if b >= 128 else b) & 0xFFFF for b in b1]
    o = [int(x) for x in old]
    assert [int(x) for x in st.v[3][0]] == [(v << 16) | (p & 0xFFFF) for v, p in zip(u16, o)]
    assert [int(x) for x in st.v[4][0]] == [(p & 0xFFFF0000) | v for v, p in zip(u16, o)]
    assert [int(x) for x in st.v[5][0]] == [(v << 16) | (p & 0xFFFF) for v, p in zip(b1, o)]
    assert [int(x) for x in st.v[6][0]] == [(p & 0xFFFF0000) | v for v, p in zip(s16, o)]
    assert [int(x) for x in st.v[7][0]] == [(v << 16) | (p & 0xFFFF) for v, p in zip(s16, o)]


@pytest.mark.parametrize(("target", "wave"), [("gfx1100", 64), ("gfx1201", 64), ("gfx1201", 32), ("gfx90a", 64)])
def test_mbcnt_counts_the_mask_bits_below_each_lane(target: str, wave: int) -> None:
    """ISA pseudo-code: ThreadMask = (1 << lane) - 1; lo: D = S1 + popcount(S0 & ThreadMask[31:0]),
    hi: D = S1 + popcount(S0 & ThreadMask[63:32]) — lo(-1, 0) then hi(-1, that) is each lane's index."""
    mask = 0xDEAD_BEEF_0F0F_F0F1
    body = (f"\tv_mbcnt_lo_u32_b32 v1, -1, 0\n\tv_mbcnt_hi_u32_b32 v2, -1, v1\n"
            f"\tv_mbcnt_lo_u32_b32 v3, s4, 5\n\tv_mbcnt_hi_u32_b32 v4, s5, v3\n")
    st = run(target, body, s={4: mask & 0xFFFFFFFF, 5: mask >> 32}, wave=wave)
    lanes = list(range(wave))
    assert [int(x) for x in st.v[2][0]] == lanes
    assert [int(x) for x in st.v[1][0]] == [min(n, 32) for n in lanes]
    below = [sum((mask >> j) & 1 for j in range(n)) for n in lanes]  # bit by bit, the lanes below n
    assert [int(x) for x in st.v[4][0]] == [5 + b for b in below]


@pytest.mark.parametrize(("target", "wave"), [("gfx1100", 64), ("gfx90a", 64), ("gfx1201", 32)])
def test_bcnt1_counts_a_ballot_and_sets_scc(target: str, wave: int) -> None:
    mask = 0x8000_0001_0000_00F0 if wave == 64 else 0x0001_00F0
    form = "s_bcnt1_i32_b64 s6, s[4:5]" if wave == 64 else "s_bcnt1_i32_b32 s6, s4"
    st = run(target, f"\t{form}\n\ts_cselect_b32 s7, 1, 2", s={4: mask & 0xFFFFFFFF, 5: mask >> 32}, wave=wave)
    assert int(st.s[6][0]) == bin(mask).count("1") and int(st.s[7][0]) == 1
    st = run(target, f"\t{form}\n\ts_cselect_b32 s7, 1, 2", s={4: 0, 5: 0}, wave=wave)
    assert int(st.s[6][0]) == 0 and int(st.s[7][0]) == 2


@pytest.mark.parametrize("target", RDNA)
def test_permlane64_swaps_the_halves_reading_inactive_lanes(target: str) -> None:
    """RDNA3.5 ISA, V_PERMLANE64_B32: lane i takes lane {~i[5], i[4:0]} (i ^ 32); the destination lane's
    EXEC bit gates the write and the alternate lane is read even when disabled; wave32: no writes."""
    x = np.arange(64, dtype=np.uint64) * 13 + 2
    old = np.full(64, 7, np.uint64)
    st = run(target, "\tv_permlane64_b32 v1, v0\n\tv_permlane64_b32 v0, v0", {0: x, 1: old}, exec_mask=EXEC64, wave=64)
    act = _active()
    n = np.arange(64)
    np.testing.assert_array_equal(st.v[1][0], np.where(act, x[n ^ 32], 7))
    assert (act & ~act[n ^ 32]).any()  # some active lanes read a disabled partner
    np.testing.assert_array_equal(st.v[0][0], np.where(act, x[n ^ 32], x))  # D == S: the source read first
    st = run(target, "\tv_permlane64_b32 v1, v0", {0: x[:32], 1: old[:32]}, wave=32)
    assert (st.v[1][0] == 7).all()
    with pytest.raises(IsaError, match="RDNA instruction"):
        run("gfx942", "\tv_permlane64_b32 v1, v0")
