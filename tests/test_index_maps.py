"""TileLang-style forward/inverse index-map pairs: imported as layouts and checked over the whole
domain. The maps here are written from the ISA formulas (RDNA4 v_wmma_f32_16x16x16_f16, wave32:
A[i][k] in lane i + 16*((k//4)%2), slot 4*(k//8) + k%4; B[k][j] likewise with j), independently
of the catalog's recipes. The contiguous-k maps are checked against Triton 3.9's own k_width=8 operand layouts
(tests/golden/triton_layouts) and, numerically, against a product read through the ISA formula."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tilesim.errors import LayoutError
from tilesim.frameworks import check_layout
from tilesim.frameworks.index_maps import check_index_maps, from_index_maps
from tilesim.matrix import lookup

GOLDEN = Path(__file__).resolve().parent / "golden" / "triton_layouts"

ROW = lookup("v_wmma_f32_16x16x16_f16", "gfx1201")


def a_forward(i, k):
    return i + 16 * ((k // 4) % 2), 4 * (k // 8) + k % 4


def a_inverse(t, s):
    return t % 16, 8 * (s // 4) + 4 * (t // 16) + s % 4


def b_forward(k, j):  # B[k][j]: the same shape of map with j in the lane
    return j + 16 * ((k // 4) % 2), 4 * (k // 8) + k % 4


def test_a_correct_pair_is_accepted_and_equals_the_catalog():
    rep = check_index_maps(a_forward, a_inverse, (16, 16), 32, 8, 16, expected=ROW.layout("A"), operand="A")
    assert rep.ok, str(rep)
    assert from_index_maps(a_forward, (16, 16), 32, 8, 16) == ROW.layout("A")


def test_a_wrong_inverse_is_caught():
    def bad_inverse(t, s):  # swaps the two k halves of a lane's registers
        return t % 16, 8 * (1 - s // 4) + 4 * (t // 16) + s % 4

    rep = check_index_maps(a_forward, bad_inverse, (16, 16), 32, 8, 16)
    assert not rep.ok and "not a true inverse" in rep.problems[0]


def test_b_declared_with_the_a_map_is_caught():
    """The TileLang bug pattern: the B operand's forward map is the A map (rows as i instead of k)."""
    rep = check_index_maps(a_forward, None, (16, 16), 32, 8, 16, expected=ROW.layout("B"), operand="B")
    assert not rep.ok and "differs from the instruction's layout" in rep.problems[0]
    assert check_index_maps(b_forward, None, (16, 16), 32, 8, 16, expected=ROW.layout("B"), operand="B").ok


def test_collisions_and_out_of_range_are_reported():
    rep = check_index_maps(lambda i, k: (i, k % 4), None, (16, 16), 32, 8, 16)
    assert not rep.ok and "elements in thread" in rep.problems[0]
    rep = check_index_maps(lambda i, k: (i + 40, k), None, (16, 16), 32, 8, 16)
    assert not rep.ok and "outside 32 threads" in rep.problems[0]
    rep = check_index_maps(lambda i, k: 1 / 0, None, (16, 16), 32, 8, 16)
    assert not rep.ok and "ZeroDivisionError" in rep.problems[0]


# ----------------------------------------------------------------------------- one answer from both checkers
# TileLang-style RDNA4 maps that keep a lane's k run contiguous (lane i + 16*(k//8), local k%8), for A[i][k] and
# B[k][j]. They differ from the ISA's order (a_forward above) by one k permutation, the same for A and B.
def a_contiguous(i, k):
    return i + 16 * (k // 8), k % 8


def b_contiguous(k, j):
    return j + 16 * (k // 8), k % 8


def _bases_at(bases, reg, lane):
    """Triton's linear layout evaluated by hand: XOR of the bases of the set bits (warp 0)."""
    x = [0, 0]
    for b, v in enumerate(bases["register"]):
        if reg >> b & 1:
            x = [x[0] ^ v[0], x[1] ^ v[1]]
    for b, v in enumerate(bases["lane"]):
        if lane >> b & 1:
            x = [x[0] ^ v[0], x[1] ^ v[1]]
    return tuple(x)


def _triton_wmma_v2_operand(index: int):
    """Triton 3.9's DotOperandLayout(index, AMDWMMALayout(2, ..., [2, 2]), k_width=8) from the golden file."""
    doc = json.loads((GOLDEN / "dot_operand.json").read_text())
    for e in doc["entries"]:
        s, p = e["spec"], e["spec"]["parent"]
        if (s["operand_index"], s["k_width"]) == (index, 8) and p["layout"] == "AMDWMMALayout" \
                and p["version"] == 2 and p["warps_per_cta"] == [2, 2] and p.get("instr_shape") == [16, 16, 16] \
                and not p["transposed"] and "tiles_per_warp" not in p:
            case = e["cases"][0]
            return {"bases": case["bases"], "shape": case["shape"]}
    raise AssertionError("golden entry missing")


def test_contiguous_k_maps_are_triton_k_width_8_and_their_product_is_right():
    """Independent grounds for match_k_permuted: Triton's own k_width=8 operand layouts are these maps, and a
    16x16x16 product through the ISA's register reading (a_forward's formula) of these registers equals A @ B."""
    for index, fwd in ((0, a_contiguous), (1, b_contiguous)):
        golden = _triton_wmma_v2_operand(index)
        for lane in range(32):
            for reg in range(8):
                d0, d1 = _bases_at(golden["bases"], reg, lane)
                assert fwd(d0, d1) == (lane, reg), (index, lane, reg)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    ra, rb = np.zeros((32, 8)), np.zeros((32, 8))
    for x in range(16):
        for y in range(16):
            ra[a_contiguous(x, y)] = a[x, y]
            rb[b_contiguous(x, y)] = b[x, y]
    # the hardware reads A[i][k] from a_forward(i, k) and B[k][j] from b_forward(k, j) (RDNA4 ISA)
    a_hw = np.array([[ra[a_forward(i, k)] for k in range(16)] for i in range(16)])
    b_hw = np.array([[rb[b_forward(k, j)] for j in range(16)] for k in range(16)])
    assert np.allclose(a_hw @ b_hw, a @ b)
    assert not np.allclose(a_hw, a)  # the registers are not in the ISA's k order


def _pi(k_hw: int) -> int:
    """Which k the contiguous maps hold where the ISA reads k_hw: the ISA's (lane half, slot) of k_hw,
    lane half h = (k//4)%2 and slot s = 4*(k//8) + k%4, read back through the contiguous map (k = 8h + s)."""
    h, s = (k_hw // 4) % 2, 4 * (k_hw // 8) + k_hw % 4
    return 8 * h + s


def test_both_checkers_give_one_answer_for_shared_k_permutation():
    want = tuple(_pi(k) for k in range(16))
    for index, op, fwd in ((0, "A", a_contiguous), (1, "B", b_contiguous)):
        maps = check_index_maps(fwd, None, (16, 16), 32, 8, 16, instr="v_wmma_f32_16x16x16_f16", arch="gfx1201",
                                operand=op)
        spec = check_layout(_triton_wmma_v2_operand(index), "gfx1201", operand=op, instr="v_wmma_f32_16x16x16_f16")
        assert spec.status == maps.status == "match_k_permuted", (str(spec), str(maps))
        assert maps.ok and spec.ok
        assert maps.k_permutation == spec.k_permutation == want
        assert "up to a permutation of k" in str(maps)
    # the same maps against a bare expected layout say the same
    rep = check_index_maps(a_contiguous, None, (16, 16), 32, 8, 16, expected=ROW.layout("A"), operand="A")
    assert rep.status == "match_k_permuted" and rep.k_permutation == want


def test_a_map_without_shared_k_order_is_a_mismatch_in_both():
    def b_isa_rows_swapped(k, j):  # not a k permutation: j and k exchanged within the lane
        return k + 16 * ((j // 4) % 2), 4 * (j // 8) + j % 4

    rep = check_index_maps(b_isa_rows_swapped, None, (16, 16), 32, 8, 16, instr="v_wmma_f32_16x16x16_f16",
                           arch="gfx1201", operand="B")
    assert rep.status == "mismatch" and not rep.ok
    assert rep.verdict is not None and rep.verdict.first_difference is not None
    assert any("pattern:" in p for p in rep.problems)


def test_a_wave64_map_on_gfx1201_says_which_wave():
    def mfma_a(i, k):  # CDNA3 v_mfma_f32_16x16x16f16 A: lane i + 16*(k//4), register k%4 (64 lanes)
        return i + 16 * (k // 4), k % 4

    rep = check_index_maps(mfma_a, None, (16, 16), 32, 8, 16, instr="v_wmma_f32_16x16x16_f16", arch="gfx1201")
    assert rep.status == "rejected" and not rep.ok
    text = str(rep)
    assert "this map is for 64 lanes" in text and "gfx1201 is wave32" in text, text
    assert "forward(0, 4) = (16, 0)" not in text and "forward(0, 8) = (32, 0)" in text
    assert "threads=64" in text  # RDNA4 WMMA also runs in wave64: say how to check it so
    # against a bare wave32 layout, the same wave-size words
    rep = check_index_maps(mfma_a, None, (16, 16), 64, 4, 16, expected=ROW.layout("A"))
    assert rep.status == "rejected" and "this map is for 64 lanes" in str(rep) and "32 lanes" in str(rep)


def test_c_maps_say_the_instruction_writes_the_result():
    def c_rdna4(i, j):  # RDNA4 ISA: D[i][j] in lane j + 16*(i//8), VGPR i%8
        return j + 16 * (i // 8), i % 8

    def c_rdna3(i, j):  # RDNA3's: lane j + 16*(i%2), VGPR i//2 — wrong on gfx1201
        return j + 16 * (i % 2), i // 2

    ok = check_index_maps(c_rdna4, None, (16, 16), 32, 8, 32, instr="v_wmma_f32_16x16x16_f16", arch="gfx1201",
                          operand="C")
    assert ok.status == "match", str(ok)
    for op in ("C", "D"):
        bad = check_index_maps(c_rdna3, None, (16, 16), 32, 8, 32, instr="v_wmma_f32_16x16x16_f16", arch="gfx1201",
                               operand=op)
        text = str(bad)
        assert bad.status == "mismatch" and " writes " in text and " reads " not in text, text


@pytest.mark.parametrize("bad,match", [
    (dict(shape=(float("nan"), 16)), "shape rows must be an integer >= 1, got nan"),
    (dict(shape=(16, 16, 16)), r"shape must be \(rows, cols\)"),
    (dict(shape="16x16"), r"shape must be \(rows, cols\)"),
    (dict(shape=("16", 16)), "got '16'"),
    (dict(threads="32"), "threads must be an integer >= 1, got '32'"),
    (dict(locals_=0), "locals must be an integer >= 1, got 0"),
    (dict(elem_bits=7), "elem_bits 7; valid: 4, 6, 8, 16, 32, 64"),
    (dict(expected="B"), "expected must be a Layout"),
    (dict(operand="Q"), "operand 'Q'; valid: A, B, C, D"),
    (dict(instr=5, arch="gfx1201"), "instr must be an instruction mnemonic"),
    (dict(instr="v_wmma_f32_16x16x16_f16"), "needs arch="),
    (dict(shape=(65536, 65536)), "4294967296 positions"),
    (dict(forward=5), "forward map must be a function"),
    (dict(inverse="x"), "inverse map must be a function"),
    (dict(arch="gfx1201"), "needs instr="),
    (dict(expected=ROW.layout("A").rename(lane="thread")), "operand layout"),
])
def test_malformed_arguments_are_typed_errors(bad, match):
    args = dict(forward=a_forward, inverse=None, shape=(16, 16), threads=32, locals_=8, elem_bits=16)
    args.update(bad)
    pos = [args.pop(n) for n in ("forward", "inverse", "shape", "threads", "locals_", "elem_bits")]
    with pytest.raises(LayoutError, match=match):
        check_index_maps(*pos, **args)


def test_a_map_returning_floats_is_rejected_not_truncated():
    rep = check_index_maps(lambda i, k: (i / 2, k), None, (16, 16), 32, 8, 16)
    assert rep.status == "rejected" and "use //, not /" in str(rep)
