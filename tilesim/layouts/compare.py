"""Human-readable comparison of two operand layouts: the first differing element on both sides
(lane, VGPR, bits), how many differ, and the pattern (missing replicas, which index differs and
the two formulas, the lanes involved). Used by the verifier, the index-map checks and the
testing helpers."""

from __future__ import annotations

import numpy as np

from tilesim.layouts.expr import expressions
from tilesim.layouts.layout import Layout

__all__ = ["compare_layouts"]


def _where_text(loc: tuple[int, ...] | None, bits: int) -> str:
    if loc is None:
        return "nowhere"
    lane, vgpr, lo = loc
    return f"lane {lane}, VGPR {vgpr}" + (f", bits {lo}-{lo + bits - 1}" if bits < 32 else "")


def compare_layouts(declared: Layout, hardware: Layout, operand: str, *,
                    verbs: tuple[str, str] = ("is declared at", "the instruction reads it from")) -> list[str]:
    """Human-readable differences between a declared fragment layout and the hardware's; [] if equal.

    ``operand`` is A, B, C or D (index names i, k, j) or any other label (row, col)."""
    dec = declared.with_elem_bits(hardware.elem_bits)
    if dec == hardware:
        return []
    bits = hardware.elem_bits or 32
    d_rec, h_rec = dec.location_array(), hardware.location_array()
    d_set = {tuple(r[:3]): set() for r in h_rec}
    h_set: dict[tuple, set] = {}
    for r in d_rec:
        d_set.setdefault(tuple(r[:3]), set()).add((int(r[4]), int(r[3]), int(r[5])))
    for r in h_rec:
        h_set.setdefault(tuple(r[:3]), set()).add((int(r[4]), int(r[3]), int(r[5])))
    names = {"A": ("i", "k"), "B": ("k", "j"), "C": ("i", "j"), "D": ("i", "j")}.get(operand, ("row", "col"))
    diffs = [e for e in sorted(set(h_set) | set(d_set)) if d_set.get(e, set()) != h_set.get(e, set())]
    if not diffs:  # same element positions, different shape of the index space
        return [(f"the declared layout {dict(dec.in_dims)} -> {dict(dec.out_dims)} is not the instruction's "
                 f"{dict(hardware.in_dims)} -> {dict(hardware.out_dims)}")]
    out = []
    e = diffs[0]
    dl, hl = sorted(d_set.get(e, set())), sorted(h_set.get(e, set()))
    out.append(f"{operand}[{e[1]}][{e[2]}] ({names[0]}={e[1]}, {names[1]}={e[2]}) {verbs[0]} "
               f"{'; '.join(_where_text(x, bits) for x in dl) or 'nowhere'} but {verbs[1]} "
               f"{'; '.join(_where_text(x, bits) for x in hl) or 'nowhere (the instruction has no such element)'}")
    out.append(f"{len(diffs)} of {len(h_set)} elements differ")
    if all(d_set.get(x, set()) < h_set.get(x, set()) for x in diffs):
        missing = sorted({lane for x in diffs for (lane, _, _) in h_set.get(x, set()) - d_set.get(x, set())})
        out.append(f"pattern: replicas missing in lanes {_ranges(missing)} — the instruction needs every element "
                   "in each of its copies (RDNA3 keeps A/B in lanes i and i+16)")
        return out
    lanes = sorted({lane for x in diffs for (lane, _, _) in h_set.get(x, set()) | d_set.get(x, set())})
    # which logical element each hardware position holds, declared vs hardware
    if dec.is_function() and hardware.is_function() and dec.in_dims == hardware.in_dims:
        lane, slot = np.meshgrid(*(np.arange(sz) for _, sz in dec.in_dims), indexing="ij")
        dv, hv = dec.apply(lane=lane, slot=slot), hardware.apply(lane=lane, slot=slot)
        de, he = expressions(dec), expressions(hardware)
        for dim, label in (("row", names[0]), ("col", names[1])):
            if np.array_equal(dv[dim], hv[dim]):
                continue
            if de[dim].table is None and he[dim].table is None:
                out.append(f"pattern: {label} differs — hardware {label} = {he[dim].text}, program {label} = {de[dim].text}")
            else:
                where = sorted({int(x) for x in lane[dv[dim] != hv[dim]]})
                out.append(f"pattern: {label} differs — hardware {label} = {he[dim].text}, program differs on "
                           f"lanes {_ranges(where)}")
    out.append(f"lanes involved: {_ranges(lanes)}")
    return out


def _ranges(xs: list[int]) -> str:
    if not xs:
        return "none"
    out, start, prev = [], xs[0], xs[0]
    for x in xs[1:] + [None]:  # type: ignore[list-item]
        if x is not None and x == prev + 1:
            prev = x
            continue
        out.append(f"{start}-{prev}" if prev != start else f"{start}")
        if x is not None:
            start = prev = x
    return ", ".join(out)
