"""Emission of asynchronous global -> LDS copies (``lds_copy_async``, ``async_commit``, ``async_wait``).

NVIDIA (targets with ``cp_async``, sm_80+): inline PTX from the PTX ISA's "cp.async" section —
``cp.async.cg.shared.global [dst], [src], 16`` for 16-byte copies (``.cg``, cached in L2 only, takes
only cp-size 16), ``cp.async.ca.shared.global`` for 4 and 8 bytes; ``cp.async.commit_group``;
``cp.async.wait_group N`` (N an immediate). The shared-memory operand is the 32-bit shared-window
address (``__cvta_generic_to_shared``), as for ``ldmatrix``. A copy whose addresses are not
``bytes``-aligned at run time (a tensor base the runner did not align) or whose elements leave the
tensor moves its elements one by one, synchronously: the same bytes, earlier, which a program
correct under the asynchronous rules cannot tell apart.

AMD CDNA3/CDNA4 (targets with ``global_load_lds``; sizes in ``tilesim.targets.LDS_DMA_BYTES``):
``__builtin_amdgcn_global_load_lds(src, lds, bytes, 0, 0)``, which clang emits as ``s_mov_b32 m0`` +
``global_load_lds_dword`` (4 bytes) or, on gfx950, ``global_load_lds_dwordx4`` (16 bytes). The
instruction has one LDS address for the whole wave: lane ``l`` writes LDS byte ``M0 + offset + l *
bytes`` (CDNA3/CDNA4 ISA guides, "global load LDS" / "Memory Buffer Load to LDS"). So a group is one
instruction only where the lanes' LDS destinations are consecutive in lane order. That is decided
on the layout at the buffer origin here (else the copy is synchronous); at run time one wave-uniform
(scalar) condition carries it to the actual origin -- buffer row a multiple of the swizzle's period,
column a multiple of a power of two above the tile's columns and swizzle values (then every LDS place
moves by the same amount), tile inside the tensor, tensor base and column aligned -- and when it
fails the copy goes element by element, in a loop kept rolled so that none of its addresses is
hoisted out of the k-loop to stay live (a per-lane check with an unrolled fallback cost gfx950's
block_gemm 191 VGPRs against 128 without copies; this form 133). Commit emits nothing (``vmcnt``
counts instructions, not groups); ``async_wait(n)`` emits ``s_waitcnt vmcnt(0)`` for every ``n`` --
all of this wave's copies landed, more than ``n > 0`` asks for, never less (the copies a group holds
can vary at run time, so a count of instructions to leave in flight cannot be fixed here).
Other AMD targets, and copies that do not fit: the copy is a global load into registers and an LDS
store, through the same code as ``ts.load`` + ``ts.lds_store`` (128-bit accesses where the layout
allows: tilesim/codegen/wide.py); commit and wait emit nothing. The data lands at the copy, before
the wait the program already has, so the result is the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tilesim.codegen.common import _UINT, _int
from tilesim.ir.async_copy import copy_groups
from tilesim.ir.core import Op, Value
from tilesim.ir.ops import ASYNC_COPY_BYTES, ASYNC_WAIT_MAX, INT_MAX
from tilesim.matrix.dtypes import dtype
from tilesim.targets import has, lds_dma_bytes

__all__ = ["emit_copy_async", "emit_commit", "emit_wait", "uses_lds_dma"]


def _cp_async_form(g: Any, op: Op) -> int:
    """Elements per ``cp.async`` instruction, or 0 when the copy is emitted synchronously: a target
    without cp.async, an element type that is not whole bytes, or groups that the layout, the row
    strides or the LDS swizzle split (then no alignment at run time can make one instruction)."""
    buf, lay, nbytes = op.args[0], op.attr("layout"), _int(op.attr("bytes"), 4, 16, "copy bytes")
    bits = dtype(buf.dtype).reg_bits
    if g.amd or not has(g.t, "cp_async") or bits not in (8, 16, 32, 64) or nbytes not in ASYNC_COPY_BYTES:
        return 0
    n = nbytes * 8 // bits
    lds, cols = buf.lds, g.p.tensor(op.attr("tensor")).shape[1]
    if n < 1 or copy_groups(lay, n) is None or (lds.cols + lds.pad) % n or cols % n \
            or (lds.max_phase > 1 and lds.vec % n):
        return 0
    return n


def _lds_dma_form(g: Any, op: Op) -> int:
    """Elements per ``global_load_lds`` instruction, or 0 (synchronous): a target without it or
    without this size, groups the layout splits or starts off a multiple of the group, or lanes
    whose LDS places at the buffer origin are not ``base + lane * bytes`` in lane order, ``bytes``-
    aligned, for every group (the instruction writes lane ``l`` at ``M0 + l * bytes``)."""
    buf, lay, nbytes = op.args[0], op.attr("layout"), _int(op.attr("bytes"), 4, 16, "copy bytes")
    bits = dtype(buf.dtype).reg_bits
    if not g.amd or nbytes not in lds_dma_bytes(g.t) or bits not in (8, 16, 32, 64):
        return 0
    n = nbytes * 8 // bits
    first = copy_groups(lay, n) if n >= 1 else None
    rows, cols = g.p.tensor(op.attr("tensor")).shape
    if first is None or (first[..., 1] % n).any() or cols % n or rows * cols >= 1 << 31:  # 32-bit lane offsets
        return 0
    off = _origin_offsets(buf.lds, first)
    lanes = np.arange(first.shape[0])[:, None]
    return n if bool((off == off[:1] + lanes * nbytes).all() and not (off[0] % nbytes).any()) else 0


def _origin_offsets(lds: Any, first: np.ndarray) -> np.ndarray:
    """LDS byte offsets ``[lanes, groups]`` of each group's first element, the copy at buffer (0, 0)."""
    return np.asarray(lds.offset(first[..., 0], first[..., 1]), np.int64)


def _periods(lds: Any, lay: Any) -> tuple[int, int]:
    """(row period, column period) of buffer origins at which every LDS place of the copy moves by the
    same amount as the origin: rows a multiple of the swizzle's period keep each row's phase; a
    column that is a multiple of a power of two above every tile column and swizzle value is only
    added by ``c ^ swizzle`` (its bits do not meet theirs)."""
    if lds.max_phase <= 1:
        return 1, 1
    top = max(int(dict(lay.out_dims)["col"]), (lds.max_phase - 1) * lds.vec + 1)
    return lds.per_phase * lds.max_phase, 1 << (top - 1).bit_length()


def uses_lds_dma(g: Any) -> bool:
    """True when some copy of the program is emitted as ``global_load_lds`` (then waits emit
    ``s_waitcnt vmcnt``)."""
    if not hasattr(g, "lds_dma"):  # once per generator: every wait asks
        g.lds_dma = g.amd and any(o.kind == "lds_copy_async" and _lds_dma_form(g, o) for o in g.p.walk())
    return bool(g.lds_dma)


def _element_lines(g: Any, op: Op, ex: dict[str, str]) -> tuple[list[str], str]:
    """C lines placing slot ``s`` of this lane (tensor row/col, buffer row/col, LDS byte ``off``), and
    the line copying that one element (0 outside the tensor, as a load reads)."""
    buf, lds = op.args[0], op.args[0].lds
    rows, cols = g.p.tensor(op.attr("tensor")).shape
    arg, ty = g.names[op.attr("tensor")], _UINT[dtype(buf.dtype).reg_bits]
    r0, c0, tr0, tc0 = (g.sref(a) for a in op.args[1:5])
    pos = [f"const int gr = {tr0} + ({ex['row']}), gc = {tc0} + ({ex['col']});",
           f"const int r = {r0} + ({ex['row']}), c = {c0} + ({ex['col']});",
           f"const int off = {g.lds_off[buf.id]} + (r * {lds.cols + lds.pad} + "
           f"(c ^ (((r / {lds.per_phase}) % {lds.max_phase}) * {lds.vec}))) * {lds.elem_bytes};"]
    return pos, (f"*({ty}*)(ts_lds + off) = (gr >= 0 && gr < {rows} && gc >= 0 && gc < {cols}) ? "
                 f"{arg}[(long long)gr * {cols} + gc] : ({ty})0;")


def emit_copy_async(g: Any, op: Op, d: int) -> None:
    if g.amd:
        if _lds_dma_form(g, op):
            _emit_lds_dma(g, op, d)
        else:
            _synchronous(g, op, d)
        return
    buf, lay = op.args[0], op.attr("layout")
    n = _cp_async_form(g, op)
    if not n:
        _synchronous(g, op, d)
        return
    nbytes = _int(op.attr("bytes"), 4, 16, "copy bytes")
    bits = dtype(buf.dtype).reg_bits
    rows, cols = g.p.tensor(op.attr("tensor")).shape
    arg = g.names[op.attr("tensor")]
    slots = dict(lay.in_dims)["slot"]
    g.emit(d, f"{{  // lds_copy_async: cp.async, {nbytes} bytes a lane per instruction")
    ex, _ = g.slot_exprs(lay, d + 1)
    pos, store = _element_lines(g, op, ex)
    g.emit(d + 1, "#pragma unroll")
    g.emit(d + 1, f"for (int v = 0; v < {slots // n}; ++v) {{")
    g.emit(d + 2, f"const int s = {n} * v;")
    for ln in pos:
        g.emit(d + 2, ln)
    g.emit(d + 2, f"const {_UINT[bits]}* src = {arg} + (long long)gr * {cols} + gc;")
    g.emit(d + 2, f"if (gr >= 0 && gr < {rows} && gc >= 0 && gc + {n - 1} < {cols} && "
                  f"((unsigned long long)src % {nbytes}) == 0 && off % {nbytes} == 0) {{")
    g.emit(d + 3, "const unsigned a = (unsigned)__cvta_generic_to_shared(ts_lds + off);")
    form = "cg" if nbytes == 16 else "ca"  # .cg takes only 16 bytes (PTX ISA, cp.async)
    g.emit(d + 3, f'asm volatile("cp.async.{form}.shared.global [%0], [%1], {nbytes};" :: "r"(a), "l"(src) : "memory");')
    g.emit(d + 2, "} else {  // one element at a time, synchronously (0 outside the tensor, as a load reads)")
    g.emit(d + 3, "#pragma unroll")
    g.emit(d + 3, f"for (int s = {n} * v; s < {n} * v + {n}; ++s) {{")
    for ln in pos:
        g.emit(d + 4, ln)
    g.emit(d + 4, store)
    g.emit(d + 3, "}")
    g.emit(d + 2, "}")
    g.emit(d + 1, "}")
    g.emit(d, "}")


def _emit_lds_dma(g: Any, op: Op, d: int) -> None:
    """``global_load_lds`` per group: each lane's global address, one scalar LDS address per group
    (M0). Guarded by one wave-uniform condition under which every lane's LDS place is the origin's
    place + a shift common to all (:func:`_periods`) and every address is inside the tensor and
    aligned; else element by element."""
    buf, lay = op.args[0], op.attr("layout")
    nbytes = _int(op.attr("bytes"), 4, 16, "copy bytes")
    n, ty, lds = _lds_dma_form(g, op), _UINT[dtype(buf.dtype).reg_bits], buf.lds
    first = copy_groups(lay, n)
    base = _origin_offsets(lds, first)[0]  # lane 0's place of each group at the origin
    rows, cols = g.p.tensor(op.attr("tensor")).shape
    arg = g.names[op.attr("tensor")]
    r0, c0, tr0, tc0 = (g.sref(a) for a in op.args[1:5])
    out = dict(lay.out_dims)
    th, tw = int(out["row"]) * int(out.get("block", 1)), int(out["col"])  # the tile, blocks stacked on rows
    pr, pc = _periods(lds, lay)
    ok = (f"{tr0} >= 0 && {tr0} + {th} <= {rows} && {tc0} >= 0 && {tc0} + {tw} <= {cols} && {tc0} % {n} == 0 && "
          f"((unsigned long long){arg} % {nbytes}) == 0 && {r0} % {pr} == 0 && {c0} % {pc} == 0")
    # per-lane global element offsets in the tile, [lanes, groups]; a group whose lanes differ from an
    # earlier group's by one constant shares that group's per-lane pointer (fewer live VGPRs)
    rel = first[..., 0] * cols + first[..., 1]
    pattern = [tuple(int(x) for x in rel[:, v] - rel[0, v]) for v in range(first.shape[1])]
    rep = [pattern.index(p) for p in pattern]  # the first group with the same lanes' pattern
    own = sorted(set(rep))
    name = {4: "global_load_lds_dword", 16: "global_load_lds_dwordx4"}.get(nbytes, f"global_load_lds, {nbytes} bytes")
    g.emit(d, f"if ({ok}) {{  // lds_copy_async: {name}, lane l at LDS base + {nbytes} * l (M0 = base)")
    g.emit(d + 1, f"const {ty} *{', *'.join(f'ts_src{v}' for v in own)};")
    ex, _ = g.slot_exprs(lay, d + 1)
    for v in own:
        g.emit(d + 1, f"{{ const int s = {n * v}; ts_src{v} = {arg} + ((long long){tr0} * {cols} + {tc0}) + "
                      f"(unsigned)(({ex['row']}) * {cols} + ({ex['col']})); }}")
    lds_base = (f"(__attribute__((address_space(3))) ts_u8*)ts_lds + {g.lds_off[buf.id]} + "
                f"({r0} * {lds.cols + lds.pad} + {c0}) * {lds.elem_bytes}")  # an LDS pointer: no generic cast
    for v in range(first.shape[1]):
        g.emit(d + 1, f"__builtin_amdgcn_global_load_lds((void*)(ts_src{rep[v]} + {int(rel[0, v] - rel[0, rep[v]])}), "
                      f"(__attribute__((address_space(3))) void*)({lds_base} + {int(base[v])}), {nbytes}, 0, 0);")
    g.emit(d, "} else {  // not provably in lane order, inside the tensor and aligned here: element by element")
    # a loop kept rolled, its addresses computed inside it: nothing of it is hoisted out of an enclosing
    # loop to stay live in registers next to the direct copies
    g.emit(d + 1, "#pragma nounroll")
    g.emit(d + 1, f"for (int s = 0; s < {dict(lay.in_dims)['slot']}; ++s) {{")
    pos, store = _element_lines(g, op, g.slot_exprs(lay, d + 2)[0])
    for ln in (*pos, store):
        g.emit(d + 2, ln)
    g.emit(d + 1, "}")
    g.emit(d, "}")


def _synchronous(g: Any, op: Op, d: int) -> None:
    """The copy as ``ts.load`` into a fragment of the copy layout, then ``ts.lds_store`` of it."""
    buf, lay = op.args[0], op.attr("layout")
    if not hasattr(g, "tmp_id"):  # fragments of the generator's own: ids after every value of the program
        g.tmp_id = 1 + max((v.id for o in g.p.walk() for v in (o.out, *o.args) if isinstance(v, Value)), default=0)
    tmp = Value(_int(g.tmp_id, 0, INT_MAX, "value id"), "frag", buf.dtype, lay)
    g.tmp_id += 1
    g.emit(d, "// lds_copy_async: no asynchronous copy emitted for this target/copy: load, then LDS store")
    g.op_load(Op("load", tmp, op.args[3:5], (("tensor", op.attr("tensor")), ("transpose", False))), d)
    g.op_lds_store(Op("lds_store", None, (buf, tmp, *op.args[1:3])), d)


def emit_commit(g: Any, op: Op, d: int) -> None:
    if g.amd:
        g.emit(d, "// async_commit: nothing to emit (AMD's vmcnt counts instructions, not groups)")
        return
    if not has(g.t, "cp_async"):
        g.emit(d, "// async_commit: copies are synchronous on this target")
        return
    g.emit(d, 'asm volatile("cp.async.commit_group;" ::: "memory");')


# s_waitcnt's 16-bit immediate on gfx9 (CDNA): vmcnt bits 3:0 and 15:14, expcnt 6:4, lgkmcnt 11:8 (CDNA3
# ISA, "S_WAITCNT"); vmcnt 0 with expcnt and lgkmcnt at their maxima waits for vector memory only
_WAIT_VMCNT0 = 0x0F70


def emit_wait(g: Any, op: Op, d: int) -> None:
    n = _int(op.attr("pending"), 0, ASYNC_WAIT_MAX, "async_wait pending")
    if g.amd and uses_lds_dma(g):
        g.emit(d, f"__builtin_amdgcn_s_waitcnt({_WAIT_VMCNT0:#06x});  // async_wait({n}): s_waitcnt vmcnt(0), "
                  "every global_load_lds of this wave landed in LDS")
        return
    if g.amd or not has(g.t, "cp_async"):
        g.emit(d, "// async_wait: copies are synchronous on this target")
        return
    g.emit(d, f'asm volatile("cp.async.wait_group {n};" ::: "memory");')
