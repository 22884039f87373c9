"""The catalog proof obligations, as tests (every layout, every legal layout-moving modifier)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from proofs.catalog import Case, cases, coverage, forward_inverse, prove, registers, replication
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import lookup

CASES = list(cases(full=True))
FAMILIES = sorted({c.row.family for c in CASES})


@pytest.mark.parametrize("family", FAMILIES)
def test_every_layout_of_the_family_is_proved(family: str) -> None:
    failures = [msg for c in CASES if c.row.family == family for msgs in prove(c).values() for msg in msgs]
    assert not failures, "\n".join(failures[:20])


def test_the_sweep_covers_every_row_operand_and_wave() -> None:
    seen = {(c.row.family, c.row.mnemonic, c.op, c.wave) for c in CASES}
    from tilesim.matrix.catalog import rows

    want = {(r.family, r.mnemonic, op, w) for r in rows() for w in r.wave_sizes for op in r.operands}
    assert seen == want
    # the modifier sweep really varies modifiers: CBSZ/ABID on a 16-block MFMA gives 31 A layouts
    a4 = [c for c in CASES if c.row.mnemonic == "v_mfma_f32_4x4x1f32" and c.row.family == "cdna1" and c.op == "A"]
    assert len(a4) == 31


# --- the obligations can fail: each is shown a broken layout -------------------------------------
def _case(mnemonic: str, arch: str, op: str, wave: int | None = None) -> Case:
    row = lookup(mnemonic, arch)
    return Case(row, op, wave or row.wave_sizes[0], ())


def _drop_pair(lay: Layout, index: int = 0) -> Layout:
    hw, lg = lay.pairs()
    keep = [i for i in range(len(hw)) if i != index]
    return Layout.from_pairs(lay.in_dims, lay.out_dims, hw[keep], lg[keep], elem_bits=lay.elem_bits)


def test_coverage_catches_a_missing_element() -> None:
    c = _case("v_mfma_f32_32x32x8f16", "gfx90a", "A")
    assert coverage(c, _drop_pair(c.layout()))


def test_replication_catches_a_dropped_rdna3_copy_and_a_collision() -> None:
    c = _case("v_wmma_f32_16x16x16_f16", "gfx1100", "A", 32)
    assert not replication(c, c.layout())
    assert replication(c, _drop_pair(c.layout()))  # one element lost its lane-16 copy
    d = _case("v_mfma_f32_32x32x8f16", "gfx90a", "D")
    hw, lg = d.layout().pairs()
    lg2 = lg.copy()
    lg2[0] = lg[1]  # two slots now hold the same element, one element is lost
    bad = Layout.from_pairs(d.layout().in_dims, d.layout().out_dims, hw, lg2, elem_bits=32)
    assert replication(d, bad) and coverage(d, bad)


def test_registers_catches_a_wrong_count() -> None:
    c = _case("v_wmma_f32_16x16x16_f16", "gfx1201", "C", 32)
    assert not registers(c, c.layout())
    wrong = replace(c.row, registers=((32, (("A", 4), ("B", 4), ("C", 4), ("D", 8))), (64, ())))
    assert registers(Case(wrong, "C", 32, ()), c.layout())


def test_forward_inverse_is_checked_on_every_slot() -> None:
    c = _case("v_mfma_f32_16x16x16f16", "gfx908", "B")
    assert not forward_inverse(c, c.layout())


def test_the_block_scale_operands_are_proved_for_every_byte_select() -> None:
    """gfx950 SA/SB: one case per OPSEL byte, each covering (row, k-block) once; a dropped scale is caught."""
    for mnemonic in ("v_mfma_scale_f32_16x16x128_f8f6f4", "v_mfma_scale_f32_32x32x64_f8f6f4"):
        for op, sel in (("SA", "opsel_a"), ("SB", "opsel_b")):
            got = sorted(dict(c.mods)[sel] for c in CASES if c.row.mnemonic == mnemonic and c.op == op)
            assert got == [0, 1, 2, 3], (mnemonic, op, got)
    case = _case("v_mfma_scale_f32_16x16x128_f8f6f4", "gfx950", "SA")
    assert not any(prove(case).values())
    assert coverage(case, _drop_pair(case.layout(), 5))
