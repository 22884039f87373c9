"""How an ``lds_load_tr`` op realises a fragment with LDS transpose reads.

The fragment is read ``issues`` instructions at a time: instruction ``j`` fills slots
``j*E .. j*E+E-1`` of every lane (``E`` elements per lane, ``row.registers`` VGPRs). By the
catalog's lane map (:mod:`tilesim.matrix.lds_transpose`), slot ``(l, j*E + r)`` receives element
``e`` of the read made by lane ``s``. So each lane ``s`` must be able to address its ``E`` elements
as one contiguous read: they must be ``E`` consecutive columns of one buffer row (``transpose``:
the fragment's (row, col) is the buffer's (col, row)), starting at the column lane ``s``'s
address points to. :func:`tr_plan` derives that address table from the layout — or raises
:class:`TransposeLayoutError` naming the lane and slot that break it — and :func:`tr_addresses`
turns it into LDS byte offsets for given ``row0``/``col0``, checking that padding and the XOR
swizzle keep each read contiguous and aligned.

The verifier (``accesses.py``), the simulator (``tilesim/wave/lds_tr.py``) and the code generator
use the same plan: one derivation, no second copy of the lane map.

EXEC: a transpose read needs every lane of its group active. Tile programs run whole waves
(branches are uniform), so the IR cannot express a partial EXEC; the ISA emulator, which runs any
HIP kernel, checks it on every execution.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilesim.errors import TilesimError, VerifyError
from tilesim.layouts.layout import Layout
from tilesim.matrix.dtypes import dtype
from tilesim.matrix.lds_transpose import TransposeRead, transpose_read

__all__ = ["TrPlan", "TransposeLayoutError", "tr_plan", "tr_addresses", "op_plan"]


class TransposeLayoutError(VerifyError):
    """A fragment layout (with the buffer) that the transpose read cannot produce."""


@dataclass(frozen=True)
class TrPlan:
    row: TransposeRead
    issues: int
    src_row: np.ndarray  # int64[issues, lanes]: buffer row lane s reads in instruction j
    src_col: np.ndarray  # int64[issues, lanes]: buffer column of its first element
    slot_src: np.ndarray  # int64[lanes, slots, 2]: (source lane, source element) of each destination slot


def tr_plan(row: TransposeRead, layout: Layout, transpose: bool = False) -> TrPlan:
    """The address table of ``layout`` read through ``row`` (see the module docstring)."""
    name = row.mnemonic
    dims = dict(layout.in_dims)
    if set(dims) != {"lane", "slot"} or dict(layout.out_dims).get("block", 1) != 1 or layout.elem_bits != row.elem_bits:
        raise TransposeLayoutError(f"{name} fills (lane, slot) fragments of {row.elem_bits}-bit elements with no block "
                                   f"dim; this layout is {layout!r}")
    lanes, slots = dims["lane"], dims["slot"]
    if lanes != row.wave:
        raise TransposeLayoutError(f"{name} runs in wave{row.wave}; this layout has {lanes} lanes")
    if slots % row.elems:
        raise TransposeLayoutError(f"{name} fills {row.elems} slots per lane at a time; this layout has {slots}")
    if not layout.is_function():
        raise TransposeLayoutError(f"{name} cannot fill a broadcast layout (a slot holding several elements)")
    hw, lg = layout.pairs()
    outs = list(layout.out_names)
    R = np.full((lanes, slots), -1, np.int64)
    C = np.full((lanes, slots), -1, np.int64)
    li, si = hw[:, list(layout.in_names).index("lane")], hw[:, list(layout.in_names).index("slot")]
    R[li, si] = lg[:, outs.index("col" if transpose else "row")]
    C[li, si] = lg[:, outs.index("row" if transpose else "col")]
    if (R < 0).any():
        lane, slot = (int(x) for x in np.argwhere(R < 0)[0])
        raise TransposeLayoutError(f"{name}: lane {lane} slot {slot} holds no element; the instruction writes every slot")
    E, n = row.elems, slots // row.elems
    l_idx, r_idx = np.meshgrid(np.arange(lanes), np.arange(E), indexing="ij")
    e, s = row.source_of(l_idx, r_idx)
    src_row = np.zeros((n, lanes), np.int64)
    src_col = np.zeros((n, lanes), np.int64)
    for j in range(n):
        Rj, Cj = R[:, j * E:(j + 1) * E], C[:, j * E:(j + 1) * E]
        src_row[j, s] = Rj  # a permutation: every (s, e) once
        src_col[j, s] = Cj - e
        bad = (Rj != src_row[j, s]) | (Cj != src_col[j, s] + e)
        if bad.any():
            lane, r = (int(x) for x in np.argwhere(bad)[0])
            sl, se = int(s[lane, r]), int(e[lane, r])
            raise TransposeLayoutError(
                f"{name} cannot produce this layout: lane {lane} slot {j * E + r} holds buffer element "
                f"({int(Rj[lane, r])}, {int(Cj[lane, r])}), which the lane map takes from element {se} of lane {sl}'s "
                f"read — but lane {sl} reads row {int(src_row[j, sl])} from column {int(src_col[j, sl])}. Each lane's "
                f"{E} elements must be {E} consecutive columns of one buffer row"
                + ("" if transpose else " (transpose=True reads the buffer as (col, row))"))
    slot_src = np.stack(np.broadcast_arrays(np.tile(s, (1, n)), np.tile(e, (1, n))), -1)
    return TrPlan(row, n, src_row, src_col, slot_src)


def tr_addresses(plan: TrPlan, lds: Any, row0: np.ndarray, col0: np.ndarray) -> tuple[np.ndarray, str | None]:
    """(byte offset of every lane's read, ``int64[instances, issues, lanes]`` relative to the buffer;
    why the reads are not contiguous/aligned/inside the buffer, or None). ``lds`` is the buffer's
    ``LdsLayout``; ``row0``/``col0`` are ``int64[instances]``."""
    r = row0[:, None, None] + plan.src_row[None]
    c = col0[:, None, None] + plan.src_col[None]
    E, name = plan.row.elems, plan.row.mnemonic
    if (r < 0).any() or (r >= lds.rows).any() or (c < 0).any() or (c + E > lds.cols).any():
        return np.zeros(r.shape, np.int64), f"{name} reads outside the {lds.rows}x{lds.cols} buffer"
    addr = lds.offset(r, c)
    for k in range(1, E):
        if (lds.offset(r, c + k) != addr + k * lds.elem_bytes).any():
            i = np.argwhere(lds.offset(r, c + k) != addr + k * lds.elem_bytes)[0]
            return addr, (f"{name}: lane {int(i[2])} (instruction {int(i[1])}) reads row {int(r[tuple(i)])} columns "
                          f"{int(c[tuple(i)])}..{int(c[tuple(i)]) + E - 1}, which the buffer's swizzle/padding does not "
                          f"keep contiguous (vec={lds.vec}, per_phase={lds.per_phase}, max_phase={lds.max_phase}, "
                          f"pad={lds.pad})")
    if (addr % plan.row.align).any():
        i = np.argwhere(addr % plan.row.align)[0]
        return addr, (f"{name}: lane {int(i[2])} (instruction {int(i[1])}) reads at buffer byte {int(addr[tuple(i)])}, "
                      f"not {plan.row.align}-byte aligned")
    return addr, None


@functools.lru_cache(maxsize=64)
def _cached(instr: str, target: str, layout: Layout, transpose: bool) -> TrPlan:
    return tr_plan(transpose_read(instr, target), layout, transpose)


def op_plan(op: Any, target: str) -> TrPlan:
    """The plan of an ``lds_load_tr`` op on ``target``: a :class:`VerifyError` naming what does not
    fit — an instruction the target lacks (with the targets that have it), element types other than
    the instruction's, a lane map no source establishes, or a layout the instruction cannot produce.
    ``check`` reports it as a structure error; the simulator and the code generator raise it."""
    buf, out = op.args[0], op.out
    try:
        row = transpose_read(op.attr("instr"), target)
        bits = dtype(out.dtype).reg_bits
        if out.dtype != buf.dtype or row.elem_bits != bits or buf.lds.elem_bytes * 8 != bits:
            raise VerifyError(f"{row.mnemonic} moves {row.elem_bits}-bit elements unchanged; this reads a "
                              f"{buf.dtype} buffer into a {out.dtype} fragment")
        return _cached(row.mnemonic, target, out.layout, bool(op.attr("transpose")))
    except TilesimError as e:
        raise VerifyError(f"lds_load_tr: {e}") from None
