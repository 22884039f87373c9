"""Pictures of layouts: SVG (no dependencies) and PNG (matplotlib, ``pip install tilesim[plot]``).

* :func:`svg` — the matrix grid, each cell coloured by the lane that holds it and labelled with
  lane, VGPR and bits; a replicated element is drawn as one stripe per copy (RDNA3 A/B shows two);
  every cell has a ``<title>`` (a hover tooltip: lane, VGPR, bits, element);
* :func:`svg_compare` — two layouts side by side with the cells that differ outlined in red;
* :func:`svg_heatmap` — a lane x VGPR grid of counts (e.g. mismatching elements in a run report);
* :func:`png` — any of the above rasterised through matplotlib.
"""

from __future__ import annotations

import colorsys
import html
import re
from collections import defaultdict

import numpy as np

from tilesim.errors import LayoutError, TilesimError
from tilesim.layouts.layout import Layout

__all__ = ["svg", "svg_compare", "svg_heatmap", "png", "lane_colour", "xml_text"]

# characters XML 1.0 allows (section 2.2): anything else (NUL, ESC, form feed, U+FFFE, a lone
# surrogate) makes the whole document ill-formed or unwritable
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: object) -> str:
    """``text`` as character data or an attribute value of SVG/HTML: ``& < > " '`` escaped, and each
    character XML forbids shown as its Python escape (``\\x1b``), so any name stays text in a
    well-formed document. Every picture and gallery page puts user-chosen text through this."""
    s = _NOT_XML.sub(lambda m: ascii(m.group())[1:-1], str(text))
    return html.escape(s, quote=True)

_CELL = 46
_PAD = 40


def lane_colour(lane: int, lanes: int) -> str:
    """A distinct pastel colour per lane (hue around the wheel, lane groups of 16 darker/lighter)."""
    h = (lane % 16) / 16.0
    light = 0.78 if (lane // 16) % 2 == 0 else 0.62
    r, g, b = colorsys.hls_to_rgb(h, light, 0.55 + 0.25 * ((lane // 32) % 2))
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def _cells(lay: Layout) -> tuple[int, int, dict[tuple[int, int], list[tuple[int, int, int, int]]]]:
    rec = lay.location_array()
    dims = dict(lay.out_dims)
    rows, cols = dims.get("block", 1) * dims["row"], dims["col"]
    cells: dict[tuple[int, int], list[tuple[int, int, int, int]]] = defaultdict(list)
    for b, r, c, v, lane, lo, hi in rec:
        cells[(int(b) * dims["row"] + int(r), int(c))].append((int(lane), int(v), int(lo), int(hi)))
    return rows, cols, cells


def _reg(v: int, lo: int, hi: int, bits: int) -> str:
    return f"v{v}" if bits == 32 else (f"v[{v + 1}:{v}]" if bits == 64 else f"v{v}[{lo}:{hi}]")


def _grid(lay: Layout, x0: int, y0: int, highlight: set[tuple[int, int]] | None = None,
          names: tuple[str, str] = ("row", "col")) -> list[str]:
    rows, cols, cells = _cells(lay)
    lanes = dict(lay.in_dims)["lane"]
    bits = lay.elem_bits or 32
    # axis names (i/k for A, k/j for B, i/j for C/D) so a reader knows which index runs where
    out = [f'<text x="{x0 + cols * _CELL / 2:.0f}" y="{y0 - 20}" font-size="11" text-anchor="middle" '
           f'font-style="italic">{xml_text(names[1])} →</text>',
           f'<text x="{x0 - 24}" y="{y0 + rows * _CELL / 2:.0f}" font-size="11" text-anchor="middle" font-style="italic" '
           f'transform="rotate(-90 {x0 - 24} {y0 + rows * _CELL / 2:.0f})">{xml_text(names[0])} →</text>']
    for c in range(cols):
        out.append(f'<text x="{x0 + c * _CELL + _CELL / 2}" y="{y0 - 6}" font-size="10" text-anchor="middle">{c}</text>')
    for r in range(rows):
        out.append(f'<text x="{x0 - 6}" y="{y0 + r * _CELL + _CELL / 2 + 3}" font-size="10" text-anchor="end">{r}</text>')
        for c in range(cols):
            copies = cells.get((r, c), [])
            x, y = x0 + c * _CELL, y0 + r * _CELL
            if not copies:
                out.append(f'<rect x="{x}" y="{y}" width="{_CELL}" height="{_CELL}" fill="#eeeeee" stroke="#999"/>')
                continue
            w = _CELL / len(copies)
            tips = []
            regs = {_reg(v, lo, hi, bits) for _, v, lo, hi in copies}
            # labels never overlap: narrow stripes get the bare lane number, and a register shared by
            # every copy (replication: same VGPR and bits in lanes i, i+16, ...) is written once
            fs = 9 if len(copies) == 1 else 7 if len(copies) == 2 else 6
            for i, (lane, v, lo, hi) in enumerate(copies):
                reg = _reg(v, lo, hi, bits)
                tips.append(f"lane {lane}, {reg}")
                out.append(f'<rect class="copy" x="{x + i * w:.1f}" y="{y}" width="{w:.1f}" height="{_CELL}" '
                           f'fill="{lane_colour(lane, lanes)}" stroke="#555" stroke-width="0.5"/>')
                out.append(f'<text x="{x + i * w + w / 2:.1f}" y="{y + 17}" font-size="{fs}" '
                           f'text-anchor="middle">{"" if len(copies) > 2 else "L"}{lane}</text>')
                if len(regs) > 1:
                    out.append(f'<text x="{x + i * w + w / 2:.1f}" y="{y + 31}" font-size="{fs - 1}" '
                               f'text-anchor="middle">{xml_text(reg)}</text>')
            if len(regs) == 1:
                out.append(f'<text x="{x + _CELL / 2:.1f}" y="{y + 33}" font-size="{8 if len(copies) == 1 else 7}" '
                           f'text-anchor="middle">{xml_text(next(iter(regs)))}</text>')
            tip = f"{names[0]}={r}, {names[1]}={c}: " + "; ".join(tips) + (" (replicated)" if len(copies) > 1 else "")
            stroke = ' stroke="#d00" stroke-width="3"' if highlight and (r, c) in highlight else ' stroke="none"'
            out.append(f'<rect class="cell" data-row="{r}" data-col="{c}" x="{x}" y="{y}" width="{_CELL}" '
                       f'height="{_CELL}" fill-opacity="0"{stroke}><title>{xml_text(tip)}</title></rect>')
    return out


def _doc(width: float, height: float, body: list[str], title: str) -> str:
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif">')
    return "\n".join([head, f"<title>{xml_text(title)}</title>", '<rect width="100%" height="100%" fill="white"/>',
                      f'<text x="{_PAD}" y="18" font-size="14" font-weight="bold">{xml_text(title)}</text>',
                      *body, "</svg>"])


def _check(lay: Layout) -> None:
    if not isinstance(lay, Layout) or lay.elem_bits is None or set(lay.in_names) != {"lane", "slot"}:
        raise LayoutError("pictures need an operand layout (lane, slot -> block, row, col) with elem_bits")


def svg(lay: Layout, title: str = "", names: tuple[str, str] = ("row", "col")) -> str:
    """The matrix grid of one operand layout, coloured by lane, replicas as stripes, hover tooltips."""
    _check(lay)
    rows, cols, _ = _cells(lay)
    body = _grid(lay, _PAD, _PAD + 24, names=names)
    return _doc(_PAD * 2 + cols * _CELL, _PAD * 2 + 24 + rows * _CELL, body, title or "layout")


def svg_compare(a: Layout, b: Layout, title_a: str = "declared", title_b: str = "hardware",
                names: tuple[str, str] = ("row", "col")) -> str:
    """Two layouts side by side; cells whose owners differ are outlined in red on both."""
    _check(a)
    _check(b)
    ra, ca, cells_a = _cells(a)
    rb, cb, cells_b = _cells(b)
    if (ra, ca) != (rb, cb):
        raise LayoutError(f"cannot compare a {ra}x{ca} layout with a {rb}x{cb} one")
    diff = {k for k in set(cells_a) | set(cells_b) if sorted(cells_a.get(k, [])) != sorted(cells_b.get(k, []))}
    width = ca * _CELL
    body = [f'<text x="{_PAD}" y="{_PAD + 4}" font-size="12">{xml_text(title_a)}</text>',
            f'<text x="{_PAD * 2 + width}" y="{_PAD + 4}" font-size="12">{xml_text(title_b)}</text>',
            *_grid(a, _PAD, _PAD + 34, diff, names), *_grid(b, _PAD * 2 + width, _PAD + 34, diff, names),
            f'<text x="{_PAD}" y="{_PAD * 2 + 40 + ra * _CELL}" font-size="12">{len(diff)} of {ra * ca} elements '
            f'differ (outlined)</text>']
    return _doc(_PAD * 3 + 2 * width, _PAD * 2 + 54 + ra * _CELL, body, f"{title_a} vs {title_b}")


def svg_heatmap(counts: np.ndarray, title: str = "mismatches per lane and VGPR") -> str:
    """A lanes x VGPRs grid of counts (white = 0, red = most)."""
    counts = np.asarray(counts)
    if counts.ndim != 2:
        raise TilesimError(f"heatmap counts must be 2-D (lanes x VGPRs), got shape {counts.shape}")
    lanes, regs = counts.shape
    top = max(int(counts.max()), 1)
    cw, ch = 28, 14
    body = []
    for v in range(regs):
        body.append(f'<text x="{_PAD + v * cw + cw / 2}" y="{_PAD + 8}" font-size="9" text-anchor="middle">v{v}</text>')
    for lane in range(lanes):
        y = _PAD + 14 + lane * ch
        body.append(f'<text x="{_PAD - 4}" y="{y + 10}" font-size="8" text-anchor="end">{lane}</text>')
        for v in range(regs):
            n = int(counts[lane, v])
            t = n / top
            fill = f"#{255:02x}{int(255 * (1 - t)):02x}{int(255 * (1 - t)):02x}"
            body.append(f'<rect x="{_PAD + v * cw}" y="{y}" width="{cw}" height="{ch}" fill="{fill}" stroke="#ccc">'
                        f"<title>lane {lane}, v{v}: {n}</title></rect>")
    return _doc(_PAD * 2 + regs * cw, _PAD * 2 + 14 + lanes * ch, body, title)


def png(svg_text: str, path: str, dpi: int = 100) -> None:
    """Rasterise one of this module's SVGs to PNG through matplotlib (``pip install tilesim[plot]``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle
    except ImportError:
        raise TilesimError("PNG output needs matplotlib: pip install tilesim[plot] (SVG needs nothing)") from None

    w, h = (float(x) for x in re.search(r'width="([\d.]+)" height="([\d.]+)"', svg_text).groups())
    fig = plt.figure(figsize=(w / dpi, h / dpi), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, w)
    ax.set_ylim(h, 0)
    ax.axis("off")
    for m in re.finditer(r'<rect(?: class="\w+")?(?: data-row="\d+" data-col="\d+")? x="([\d.]+)" y="([\d.]+)" '
                         r'width="([\d.]+)" height="([\d.]+)" (?:fill="(#[0-9a-f]{6}|white)")?([^>]*)>', svg_text):
        x, y, rw, rh = (float(v) for v in m.groups()[:4])
        fill, rest = m.group(5), m.group(6)
        red = 'stroke="#d00"' in rest
        if fill is None and not red:
            continue
        ax.add_patch(Rectangle((x, y), rw, rh, facecolor=fill or "none", edgecolor="#d00" if red else "#555",
                               linewidth=2.5 if red else 0.4))
    for m in re.finditer(r'<text x="([\d.]+)" y="([\d.]+)" font-size="(\d+)"([^>]*)>([^<]*)</text>', svg_text):
        x, y, size, text = float(m.group(1)), float(m.group(2)), int(m.group(3)), html.unescape(m.group(5))
        anchor = re.search(r'text-anchor="(\w+)"', m.group(4))
        ha = {"middle": "center", "end": "right"}.get(anchor.group(1) if anchor else "start", "left")
        ax.text(x, y, text, fontsize=size * 0.75, ha=ha, va="baseline")
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
