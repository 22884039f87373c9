"""TileLang-style forward/inverse index-map pairs: imported as layouts and checked over the whole
domain. The maps here are written from the ISA formulas (RDNA4 v_wmma_f32_16x16x16_f16, wave32:
A[i][k] in lane i + 16*((k//4)%2), slot 4*(k//8) + k%4; B[k][j] likewise with j), independently
of the catalog's recipes."""

from __future__ import annotations

from tilesim.frameworks.index_maps import check_index_maps, from_index_maps
from tilesim.matrix import lookup

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
