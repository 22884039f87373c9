"""Text, CSV, markdown and JSON renderings of a layout, and the JSON round trip.

Two views of an operand layout (hardware dims ``lane``/``slot``, logical ``block``/``row``/``col``):

* the *matrix view* (``render_matrix``): one cell per logical element naming where it lives,
  ``L17.v3[16:31]`` = lane 17, VGPR 3, bits 16–31; replicated elements list every copy;
* the *register view* (``render_registers``): one row per lane, one column per VGPR, naming
  the element(s) each register holds, as ``inspect`` shows a register file.

Other layouts render as their pair table.
"""

from __future__ import annotations

import csv
import functools
import io
import json
from collections import defaultdict
from typing import Any

import numpy as np

from tilesim.errors import LayoutError, choices
from tilesim.files import check_keys, strict_json
from tilesim.layouts.layout import Layout

__all__ = ["FORMATS", "render", "render_matrix", "render_registers", "to_json", "from_json", "to_csv"]

FORMATS = ("table", "csv", "markdown", "json")

_LOC_HEADER = ("block", "row", "col", "vgpr", "lane", "bit_lo", "bit_hi")


def _is_operand(layout: Layout) -> bool:
    return (
        layout.elem_bits is not None
        and set(layout.in_names) == {"lane", "slot"}
        and {"row", "col"} <= set(layout.out_names) <= {"block", "row", "col"}
    )


def _where(rec: np.ndarray, elem_bits: int) -> str:
    lane, vgpr, lo, hi = int(rec[4]), int(rec[3]), int(rec[5]), int(rec[6])
    if elem_bits == 32:
        return f"L{lane}.v{vgpr}"
    if elem_bits > 32:
        return f"L{lane}.v[{vgpr + (hi // 32)}:{vgpr}]"
    return f"L{lane}.v{vgpr}[{lo}:{hi}]"


def _grid_cells(layout: Layout) -> tuple[list[str], list[list[str]]]:
    recs = layout.location_array()
    dims = dict(layout.out_dims)
    nb, nr, nc = dims.get("block", 1), dims["row"], dims["col"]
    cells: dict[tuple[int, int, int], list[str]] = defaultdict(list)
    for r in recs:
        cells[(int(r[0]), int(r[1]), int(r[2]))].append(_where(r, layout.elem_bits or 32))
    header = ["block", "row"] if nb > 1 else ["row"]
    header += [f"c{c}" for c in range(nc)]
    rows = []
    for b in range(nb):
        for r in range(nr):
            lead = [str(b), str(r)] if nb > 1 else [str(r)]
            rows.append(lead + [" | ".join(cells.get((b, r, c), ["-"])) for c in range(nc)])
    return header, rows


def _pair_rows(layout: Layout) -> tuple[list[str], list[list[str]]]:
    hw, lg = layout.pairs()
    header = [*layout.in_names, *layout.out_names]
    return header, [[str(int(v)) for v in (*h, *g)] for h, g in zip(hw, lg)]


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    line = "  ".join(h.rjust(w) for h, w in zip(header, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def to_csv(layout: Layout) -> str:
    """Operand layouts: one ``locations()`` record per line; others: the pair table."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if _is_operand(layout):
        w.writerow(_LOC_HEADER)
        w.writerows(layout.location_array().tolist())
    else:
        header, rows = _pair_rows(layout)
        w.writerow(header)
        w.writerows(rows)
    return buf.getvalue()


def to_json(layout: Layout, **meta: Any) -> str:
    """Self-describing JSON; :func:`from_json` rebuilds an equal ``Layout``."""
    hw, lg = layout.pairs()
    doc: dict[str, Any] = {
        "format": "tilesim.layout/1",
        **meta,
        "in_dims": [[n, s] for n, s in layout.in_dims],
        "out_dims": [[n, s] for n, s in layout.out_dims],
        "elem_bits": layout.elem_bits,
        "pairs": _INT_TABLE,
    }
    tables = [np.concatenate([hw, lg], 1)]
    if _is_operand(layout):
        doc["locations"] = _INT_TABLE
        doc["location_fields"] = list(_LOC_HEADER)
        tables.append(layout.location_array())
    head, *rest = json.dumps(doc, separators=(",", ":")).split(json.dumps(_INT_TABLE))
    if len(rest) != len(tables):  # the placeholder string also appears in the metadata
        doc.update(zip(("pairs", "locations"), (t.tolist() for t in tables)))
        return json.dumps(doc, separators=(",", ":"))
    return head + "".join(_int_table_json(t) + r for t, r in zip(tables, rest))


_INT_TABLE = "\x00int-table\x00"  # placeholder: integer tables are formatted below, not by json


_LUT_SIZE = 1000  # integer tables below this go through the byte tables; others through json


@functools.lru_cache(maxsize=1)
def _chunk_luts() -> tuple[np.ndarray, ...]:
    """For every value below ``_LUT_SIZE``, its JSON text inside a row (``v,``), opening a row
    (``[v,``), closing one (``v],``) and as a whole one-column row (``[v],``): ASCII bytes in one
    ``uint64``, padded with zero bytes."""
    out = []
    for fmt in ("{},", "[{},", "{}],", "[{}],"):
        b = np.zeros((_LUT_SIZE, 8), np.uint8)
        for v in range(_LUT_SIZE):
            t = fmt.format(v).encode("ascii")
            b[v, :len(t)] = np.frombuffer(t, np.uint8)
        out.append(b.view(np.uint64).reshape(_LUT_SIZE))
    return tuple(out)


def _int_table_json(a: np.ndarray) -> str:
    """``json.dumps(a.tolist(), separators=(",", ":"))`` for a 2-D integer array, built as bytes by
    numpy (these tables are most of a layout's JSON; ``tolist`` plus the json encoder was the bulk
    of exporting the catalog): each element's text, with the punctuation around it, is one 8-byte
    chunk from a table (:func:`_chunk_luts`); the zero padding is then dropped."""
    rows, cols = a.shape
    if not rows or not cols or a.min() < 0 or a.max() >= _LUT_SIZE:
        return json.dumps(a.tolist(), separators=(",", ":"))
    mid, first, last, only = _chunk_luts()
    ch = np.empty((rows, cols), np.uint64)
    if cols == 1:
        ch[:, 0] = only[a[:, 0]]
    else:
        ch[:, 0] = first[a[:, 0]]
        ch[:, -1] = last[a[:, -1]]
        ch[:, 1:-1] = mid[a[:, 1:-1]]
    b = ch.view(np.uint8)
    return "[" + b[b != 0].tobytes().decode("ascii")[:-1] + "]"


# what to_json writes: the fields read, and the derived tables (checked against the pairs when present)
LAYOUT_KEYS = ("format", "in_dims", "out_dims", "elem_bits", "pairs"), ("locations", "location_fields")


def from_json(text: str) -> Layout:
    try:
        doc = strict_json(text, "layout JSON", LayoutError)  # a key twice is refused, not the last kept
        if not isinstance(doc, dict) or doc.get("format") != "tilesim.layout/1":
            if not isinstance(doc, dict):
                raise LayoutError(f"not a tilesim layout document (a JSON {type(doc).__name__})")
            raise LayoutError(f"not a tilesim layout document (format {doc.get('format')!r})")
        check_keys(doc, "layout JSON", *LAYOUT_KEYS, LayoutError)  # a key not read is refused, never ignored
        ind = [tuple(d) for d in doc["in_dims"]]
        outd = [tuple(d) for d in doc["out_dims"]]
        pairs = np.asarray(doc["pairs"], dtype=np.int64).reshape(-1, len(ind) + len(outd))
        lay = Layout.from_pairs(ind, outd, pairs[:, : len(ind)], pairs[:, len(ind):], elem_bits=doc["elem_bits"])
        if any(k in doc for k in LAYOUT_KEYS[1]):
            canon = json.loads(to_json(lay))
            for k in LAYOUT_KEYS[1]:
                if doc.get(k) != canon.get(k):  # derived from the pairs: a reader must not see another table
                    raise LayoutError(f"layout JSON: {k} differ from what its pairs give")
        return lay
    except LayoutError:
        raise
    except (ValueError, KeyError, TypeError, IndexError, OverflowError, RecursionError) as e:
        raise LayoutError(f"malformed layout JSON: {e!r}"[:300].replace("\n", " ")) from None


def render_matrix(layout: Layout, fmt: str = "table") -> str:
    header, rows = _grid_cells(layout) if _is_operand(layout) else _pair_rows(layout)
    return _markdown(header, rows) if fmt == "markdown" else _text_table(header, rows)


def render_registers(layout: Layout, fmt: str = "table") -> str:
    """Lane × VGPR view: which element(s) each register of each lane holds."""
    if not _is_operand(layout):
        raise LayoutError("the register view needs an operand layout (lane, slot -> block, row, col)")
    recs = layout.location_array()
    nreg = layout.registers_per_lane()
    has_block = dict(layout.out_dims).get("block", 1) > 1
    cells: dict[tuple[int, int], list[str]] = defaultdict(list)
    for r in recs:
        name = (f"b{r[0]}:" if has_block else "") + f"({r[1]},{r[2]})"
        if layout.elem_bits < 32:
            name += f"@{r[5]}"
        cells[(int(r[4]), int(r[3]))].append(name)
    lanes = dict(layout.in_dims)["lane"]
    header = ["lane"] + [f"v{v}" for v in range(nreg)]
    rows = [[str(l)] + [" ".join(cells.get((l, v), ["-"])) for v in range(nreg)] for l in range(lanes)]
    return _markdown(header, rows) if fmt == "markdown" else _text_table(header, rows)


def render(layout: Layout, fmt: str = "table", **meta: Any) -> str:
    """Render in one of :data:`FORMATS`."""
    if fmt == "csv":
        return to_csv(layout)
    if fmt == "json":
        return to_json(layout, **meta)
    if fmt in ("table", "markdown"):
        return render_matrix(layout, fmt)
    raise LayoutError(f"unknown format {fmt!r}; valid formats: {choices(FORMATS)}")
