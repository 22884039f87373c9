"""Emission of asynchronous global -> LDS copies (``lds_copy_async``, ``async_commit``, ``async_wait``).

NVIDIA (targets with ``cp_async``, sm_80+): inline PTX from the PTX ISA's "cp.async" section —
``cp.async.cg.shared.global [dst], [src], 16`` for 16-byte copies (``.cg``, cached in L2 only, takes
only cp-size 16), ``cp.async.ca.shared.global`` for 4 and 8 bytes; ``cp.async.commit_group``;
``cp.async.wait_group N`` (N an immediate). The shared-memory operand is the 32-bit shared-window
address (``__cvta_generic_to_shared``), as for ``ldmatrix``. A copy whose addresses are not
``bytes``-aligned at run time (a tensor base the runner did not align) or whose elements leave the
tensor moves its elements one by one, synchronously: the same bytes, earlier, which a program
correct under the asynchronous rules cannot tell apart.

AMD (no asynchronous path emitted): the copy is a global load into registers and an LDS store,
through the same code as ``ts.load`` + ``ts.lds_store`` (128-bit accesses where the layout allows:
tilesim/codegen/wide.py); commit and wait emit nothing. The data lands at the copy, before the wait
the program already has, so the result is the same.
"""

from __future__ import annotations

from typing import Any

from tilesim.codegen.common import _UINT, _int
from tilesim.ir.async_copy import copy_groups
from tilesim.ir.core import Op, Value
from tilesim.ir.ops import ASYNC_COPY_BYTES, ASYNC_WAIT_MAX, INT_MAX
from tilesim.matrix.dtypes import dtype
from tilesim.targets import has

__all__ = ["emit_copy_async", "emit_commit", "emit_wait"]


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


def emit_copy_async(g: Any, op: Op, d: int) -> None:
    buf, lay = op.args[0], op.attr("layout")
    n = _cp_async_form(g, op)
    if not n:
        _synchronous(g, op, d)
        return
    nbytes = _int(op.attr("bytes"), 4, 16, "copy bytes")
    bits = dtype(buf.dtype).reg_bits
    lds = buf.lds
    rows, cols = g.p.tensor(op.attr("tensor")).shape
    arg = g.names[op.attr("tensor")]
    r0, c0, tr0, tc0 = (g.sref(a) for a in op.args[1:5])
    slots = dict(lay.in_dims)["slot"]
    g.emit(d, f"{{  // lds_copy_async: cp.async, {nbytes} bytes a lane per instruction")
    ex, _ = g.slot_exprs(lay, d + 1)
    pos = [f"const int gr = {tr0} + ({ex['row']}), gc = {tc0} + ({ex['col']});",
           f"const int r = {r0} + ({ex['row']}), c = {c0} + ({ex['col']});",
           f"const int off = {g.lds_off[buf.id]} + (r * {lds.cols + lds.pad} + "
           f"(c ^ (((r / {lds.per_phase}) % {lds.max_phase}) * {lds.vec}))) * {lds.elem_bytes};"]
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
    g.emit(d + 4, f"*({_UINT[bits]}*)(ts_lds + off) = (gr >= 0 && gr < {rows} && gc >= 0 && gc < {cols}) ? "
                  f"{arg}[(long long)gr * {cols} + gc] : ({_UINT[bits]})0;")
    g.emit(d + 3, "}")
    g.emit(d + 2, "}")
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
    if g.amd or not has(g.t, "cp_async"):
        g.emit(d, "// async_commit: copies are synchronous on this target")
        return
    g.emit(d, 'asm volatile("cp.async.commit_group;" ::: "memory");')


def emit_wait(g: Any, op: Op, d: int) -> None:
    n = _int(op.attr("pending"), 0, ASYNC_WAIT_MAX, "async_wait pending")
    if g.amd or not has(g.t, "cp_async"):
        g.emit(d, "// async_wait: copies are synchronous on this target")
        return
    g.emit(d, f'asm volatile("cp.async.wait_group {n};" ::: "memory");')
