"""Assertion helpers that fail with the hardware's coordinates: lane, VGPR, bits.

``assert_layout_equal(actual, expected)`` lists the first logical elements whose owners differ,
each owner as ``lane L, VGPR v, bits lo-hi`` (for ``lane``/``slot`` layouts with ``elem_bits``;
other layouts print their dims), then the pattern lines of
:func:`tilesim.ir.verify.compare_layouts` where the layouts are mma fragments.
``assert_equivalent(p1, p2)`` runs :func:`tilesim.wave.equivalent` and fails with its
differing runs and elements. Neither needs hypothesis.
"""

from __future__ import annotations

from typing import Any

from tilesim.errors import LayoutError
from tilesim.ir.core import Program
from tilesim.ir.verify import compare_layouts
from tilesim.layouts.layout import Layout
from tilesim.wave.equivalence import Equivalence, equivalent

__all__ = ["assert_equivalent", "assert_layout_equal"]

_Pos = tuple[tuple[str, int], ...]


def _owners(lay: Layout) -> dict[_Pos, set[_Pos]]:
    """logical element -> its hardware owners, both as ((dim, index), …) sorted by dim name."""
    hw, lg = lay.pairs()
    out: dict[_Pos, set[_Pos]] = {}
    for h, g in zip(hw.tolist(), lg.tolist()):
        e = tuple(sorted(zip(lay.out_names, g)))
        out.setdefault(e, set()).add(tuple(sorted(zip(lay.in_names, h))))
    return out


def _where(pos: _Pos, bits: int | None) -> str:
    d = dict(pos)
    if "lane" in d and "slot" in d and bits:
        lo = d["slot"] * bits
        vgpr, lo = divmod(lo, 32)
        head = f"lane {d['lane']}, VGPR {vgpr}, bits {lo}-{lo + bits - 1}"
        rest = [f"{k} {v}" for k, v in pos if k not in ("lane", "slot")]
        return ", ".join([*rest, head])
    return ", ".join(f"{k} {v}" for k, v in pos)


def _element(e: _Pos) -> str:
    order = {"block": 0, "row": 1, "col": 2}
    return "(" + ", ".join(f"{k} {v}" for k, v in sorted(e, key=lambda kv: (order.get(kv[0], 3), kv[0]))) + ")"


def _owner_text(owners: set[_Pos], bits: int | None) -> str:
    return "; ".join(_where(p, bits) for p in sorted(owners)) or "nowhere"


def _is_fragment(lay: Layout) -> bool:
    return set(lay.in_names) == {"lane", "slot"} and {"row", "col"} <= set(lay.out_names) <= {"block", "row", "col"}


def assert_layout_equal(actual: Layout, expected: Layout, *, operand: str = "D", max_elements: int = 8) -> None:
    """Fail unless ``actual == expected`` (same dims, same pairs, same ``elem_bits``).

    The ``AssertionError`` names the first ``max_elements`` logical elements whose owners
    differ, each side as ``lane L, VGPR v, bits lo-hi``; for fragment layouts (lane, slot ->
    row, col) it adds :func:`~tilesim.ir.verify.compare_layouts`' pattern lines, reading
    ``actual`` as the program's declaration and ``expected`` as the hardware's layout of
    ``operand`` (A, B, C or D: it only names the axes).
    """
    if not isinstance(actual, Layout) or not isinstance(expected, Layout):
        raise TypeError(f"assert_layout_equal takes two Layouts, got {type(actual).__name__} and "
                        f"{type(expected).__name__}")
    if actual == expected:
        return
    lines = ["layouts differ", f"  actual:   {actual!r}", f"  expected: {expected!r}"]
    if set(actual.in_names) != set(expected.in_names) or set(actual.out_names) != set(expected.out_names):
        lines.append(f"  dims differ: {dict(actual.in_dims)} -> {dict(actual.out_dims)} vs "
                     f"{dict(expected.in_dims)} -> {dict(expected.out_dims)}")
        raise AssertionError("\n".join(lines))
    if actual.in_dims != expected.in_dims or actual.out_dims != expected.out_dims:
        lines.append(f"  dim sizes or order differ: {actual.in_dims} -> {actual.out_dims} vs "
                     f"{expected.in_dims} -> {expected.out_dims}")
    a_own, e_own = _owners(actual), _owners(expected)
    a_bits, e_bits = actual.elem_bits, expected.elem_bits
    if a_bits != e_bits and a_bits is not None and e_bits is not None:
        lines.append(f"  elem_bits differ: {a_bits} vs {e_bits} (a slot's VGPR and bits move with the width)")
    elif a_bits is None or e_bits is None:
        a_bits = e_bits = a_bits or e_bits
    diffs = [e for e in sorted(set(a_own) | set(e_own)) if a_own.get(e, set()) != e_own.get(e, set())]
    if diffs:
        lines.append(f"  {len(diffs)} of {len(set(a_own) | set(e_own))} elements have different owners; first:")
        for e in diffs[:max_elements]:
            lines.append(f"    {_element(e)}: actual at {_owner_text(a_own.get(e, set()), a_bits)} | "
                         f"expected at {_owner_text(e_own.get(e, set()), e_bits)}")
        if len(diffs) > max_elements:
            lines.append(f"    … {len(diffs) - max_elements} more")
        if _is_fragment(actual) and _is_fragment(expected) and expected.elem_bits and operand in "ABCD":
            try:
                pattern = [x for x in compare_layouts(actual, expected, operand)[1:]]
            except (IndexError, LayoutError):  # compare_layouts needs elements the expected layout holds
                pattern = []
            if pattern:
                lines.append("  compare_layouts (program = actual, hardware = expected):")
                lines += [f"    {x}" for x in pattern]
    elif not lines[3:]:
        lines.append("  the same map, but not equal values (elem_bits or dim order)")
    raise AssertionError("\n".join(lines))


def assert_equivalent(p1: Program, p2: Program, **kwargs: Any) -> Equivalence:
    """Fail unless ``equivalent(p1, p2, **kwargs)`` finds no difference; returns the result.

    The ``AssertionError`` lists the differing runs (which probe or random input) with the
    first differing output element and both values.
    """
    res = equivalent(p1, p2, **kwargs)
    if not res.equal:
        raise AssertionError(f"{p1.name} on {p1.target} (wave{p1.wave_size}) and {p2.name} on {p2.target} "
                             f"(wave{p2.wave_size}) are not equivalent: {res}")
    return res
