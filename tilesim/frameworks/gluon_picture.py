"""Thread-value pictures of Gluon layouts: which warp, lane and register hold each element of a tensor.

:func:`owners` lists, for every element of a tensor of ``shape``, the hardware slots that hold it —
``(block, warp, lane, register)`` for a distributed layout, ``(block, offset)`` for a shared one —
straight from the layout's bases (an element is the XOR of the bases of the set bits).
:func:`svg` draws them as a grid like the operand pictures of :mod:`tilesim.layouts.pictures`:
one cell per element (rows: all dims but the last, a rank-3 tensor as stacked ``dim0`` panels;
columns: the last dim), coloured by lane (shared: by offset), labelled ``w/L/r`` (warp, lane,
register) or the offset, copies of a broadcast element as stripes, and a hover tooltip per cell.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tilesim.errors import LayoutError
from tilesim.layouts.pictures import lane_colour, xml_text

__all__ = ["owners", "svg"]

MAX_ELEMENTS = 1 << 14  # 16,384 cells: a 128 x 128 tile; larger pictures are unreadable anyway
MAX_SLOTS = 1 << 17
_CELL = 34
_PAD = 40


def _bases(spec: Any, shape: Sequence[int], triton_version: str | None) -> tuple[list[str], list[list[list[int]]]]:
    if hasattr(spec, "shared_bases"):
        b = spec.shared_bases(shape, triton_version)
        return ["block", "offset"], [b["block"], b["offset"]]
    if not hasattr(spec, "to_linear"):
        raise LayoutError(f"cannot picture {type(spec).__name__}: not a Gluon layout spec")
    d = spec.to_linear(shape, triton_version).bases_dict()
    return ["block", "warp", "lane", "register"], [d["block"], d["warp"], d["lane"], d["register"]]


def owners(spec: Any, shape: Sequence[int], triton_version: str | None = None) -> tuple[list[str], dict]:
    """``(names, {element: [slot, ...]})``: each element (a tuple of coordinates) and the hardware slots
    holding it, each slot a tuple of indices named by ``names`` (``block, warp, lane, register`` or
    ``block, offset``)."""
    shape = tuple(int(s) for s in shape)
    if math.prod(shape) > MAX_ELEMENTS:
        raise LayoutError(f"a picture of shape {list(shape)} has {math.prod(shape)} cells; at most {MAX_ELEMENTS} "
                          "(picture one tile of the tensor)")
    names, groups = _bases(spec, shape, triton_version)
    if 1 << sum(len(g) for g in groups) > MAX_SLOTS:
        raise LayoutError(f"the layout has {1 << sum(len(g) for g in groups)} hardware slots; at most {MAX_SLOTS}")
    out: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    sizes = [1 << len(g) for g in groups]
    for flat in range(math.prod(sizes)):
        idx, rest = [], flat
        for s in reversed(sizes):  # the last name (register / offset) runs fastest
            idx.append(rest % s)
            rest //= s
        idx.reverse()
        elem = [0] * len(shape)
        for g, i in zip(groups, idx):
            for bit, v in enumerate(g):
                if i >> bit & 1:
                    elem = [a ^ b for a, b in zip(elem, v)]
        out.setdefault(tuple(elem), []).append(tuple(idx))
    return names, out


def _label(names: list[str], slot: tuple[int, ...], blocks: bool) -> tuple[str, str]:
    parts = dict(zip(names, slot))
    if "offset" in parts:
        short = f"{parts['offset']}"
    else:
        short = f"w{parts['warp']} L{parts['lane']} r{parts['register']}"
    if blocks:
        short = f"b{parts['block']} " + short
    return short, ", ".join(f"{n} {v}" for n, v in parts.items() if n != "block" or blocks)


def svg(spec: Any, shape: Sequence[int], *, triton_version: str | None = None, title: str = "") -> str:
    """The thread-value picture of ``spec`` over a tensor of ``shape`` (SVG text)."""
    shape = tuple(int(s) for s in shape)
    names, held = owners(spec, shape, triton_version)
    rank = len(shape)
    cols = shape[-1]
    rows_per_panel = math.prod(shape[1:-1]) if rank >= 3 else (shape[0] if rank == 2 else 1)
    panels = shape[0] if rank >= 3 else 1
    blocks = any(s[0] for slots in held.values() for s in slots)
    lanes = 1 + max((s[names.index("lane")] for slots in held.values() for s in slots), default=0) \
        if "lane" in names else 64
    gap = 16
    body: list[str] = []
    top = _PAD + 30
    axis = f"dim{rank - 1}"
    body.append(f'<text x="{_PAD + cols * _CELL / 2:.0f}" y="{top - 18}" font-size="11" text-anchor="middle" '
                f'font-style="italic">{axis} →</text>')
    for c in range(cols):
        body.append(f'<text x="{_PAD + c * _CELL + _CELL / 2}" y="{top - 5}" font-size="9" '
                    f'text-anchor="middle">{c}</text>')
    for p in range(panels):
        y0 = top + p * (rows_per_panel * _CELL + gap)
        if panels > 1:
            body.append(f'<text x="{_PAD - 36}" y="{y0 - 3}" font-size="10" font-style="italic">dim0={p}</text>')
        for r in range(rows_per_panel):
            coord_rows = _row_coords(shape, p, r)
            y = y0 + r * _CELL
            body.append(f'<text x="{_PAD - 5}" y="{y + _CELL / 2 + 3}" font-size="9" text-anchor="end">'
                        f'{coord_rows[-1] if coord_rows else 0}</text>')
            for c in range(cols):
                elem = (*coord_rows, c)
                x = _PAD + c * _CELL
                slots = held.get(elem, [])
                where = ", ".join(f"dim{i}={v}" for i, v in enumerate(elem))
                if not slots:
                    body.append(f'<rect x="{x}" y="{y}" width="{_CELL}" height="{_CELL}" fill="#eeeeee" stroke="#999">'
                                f"<title>{where}: held by nobody</title></rect>")
                    continue
                shown = slots[:4]
                w = _CELL / len(shown)
                for i, s in enumerate(shown):
                    key = s[names.index("lane")] if "lane" in names else s[names.index("offset")] % 64
                    body.append(f'<rect x="{x + i * w:.1f}" y="{y}" width="{w:.1f}" height="{_CELL}" '
                                f'fill="{lane_colour(key, lanes)}" stroke="#555" stroke-width="0.5"/>')
                short, _ = _label(names, shown[0], blocks)
                lines = short.split(" ")
                fs = 7 if len(shown) == 1 else 6
                for j, line in enumerate(lines[:4]):
                    body.append(f'<text x="{x + _CELL / 2:.1f}" y="{y + 10 + j * 8}" font-size="{fs}" '
                                f'text-anchor="middle">{xml_text(line)}</text>')
                tip = f"{where}: " + "; ".join(_label(names, s, blocks)[1] for s in slots)
                if len(slots) > 1:
                    tip += f" ({len(slots)} copies)"
                body.append(f'<rect x="{x}" y="{y}" width="{_CELL}" height="{_CELL}" fill-opacity="0" '
                            f'stroke="none"><title>{xml_text(tip)}</title></rect>')
    height = top + panels * (rows_per_panel * _CELL + gap) + _PAD
    width = _PAD * 2 + cols * _CELL
    name = title or f"{type(spec).__name__} over {list(shape)}"
    legend = ("cell: warp w, lane L, register r; colour: lane; stripes: copies" if "lane" in names
              else "cell: offset in shared memory; colour: offset mod 64")
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{max(width, 420):.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {max(width, 420):.0f} {height:.0f}" font-family="sans-serif">',
        f"<title>{xml_text(name)}</title>", '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{_PAD}" y="18" font-size="13" font-weight="bold">{xml_text(name)}</text>',
        f'<text x="{_PAD}" y="32" font-size="10">{xml_text(legend)}</text>', *body, "</svg>"])


def _row_coords(shape: tuple[int, ...], panel: int, row: int) -> tuple[int, ...]:
    """Coordinates of all dims but the last for ``row`` of ``panel`` (dim0 for rank >= 3)."""
    rank = len(shape)
    if rank == 1:
        return ()
    if rank == 2:
        return (row,)
    mids, rest = [], row
    for s in reversed(shape[1:-1]):
        mids.append(rest % s)
        rest //= s
    return (panel, *reversed(mids))
