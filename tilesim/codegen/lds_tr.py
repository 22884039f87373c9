"""HIP for ``lds_load_tr``: one clang transpose-read builtin per instruction of the op's plan.

Each lane computes the LDS byte offset its read starts at — the buffer row and column the plan
(:func:`tilesim.ir.lds_tr.tr_plan`) assigns to (instruction, lane), through the buffer's padding
and swizzle — and the builtin's result vector is the fragment's next ``row.registers`` VGPRs,
bit for bit (the hardware's element order is the register order). Nothing from the program
reaches the source but validated integers: the builtin name and vector type come from the
catalog row, the index expressions from the layout machinery.
"""

from __future__ import annotations

from typing import Any

from tilesim.codegen.common import CodegenError
from tilesim.errors import VerifyError
from tilesim.ir.core import Op
from tilesim.ir.lds_tr import op_plan
from tilesim.layouts.layout import Layout

__all__ = ["emit_lds_load_tr"]


def emit_lds_load_tr(gen: Any, op: Op, d: int) -> None:
    """Write the op into ``gen`` (the HIP generator) at depth ``d``; :class:`CodegenError` when it
    cannot be emitted (``check`` reports the same as a structure error)."""
    buf, out = op.args[0], op.out
    try:
        plan = op_plan(op, gen.p.target)
    except VerifyError as e:
        raise CodegenError(str(e)) from None
    row, lay = plan.row, buf.lds
    W, n = plan.src_row.shape[1], plan.issues
    src = Layout.from_function({"lane": W, "slot": n}, {"row": lay.rows, "col": lay.cols},
                               lambda lane, slot: {"row": plan.src_row[slot, lane], "col": plan.src_col[slot, lane]})
    f = gen.frag(out)
    gen.emit(d, f"{f} = ts_r{out.layout.registers_per_lane()}{{}};")
    gen.emit(d, "{")
    ctype, count = row.vector
    gen.emit(d + 1, f"typedef {ctype} ts_tr_v __attribute__((ext_vector_type({count})));")
    ex, _ = gen.slot_exprs(src, d + 1)
    gen.emit(d + 1, "#pragma unroll")
    gen.emit(d + 1, f"for (int s = 0; s < {n}; ++s) {{  // one {row.mnemonic} per {row.registers} VGPRs")
    gen.emit(d + 2, f"const int r = {gen.sref(op.args[1])} + ({ex['row']}), c = {gen.sref(op.args[2])} + ({ex['col']});")
    gen.emit(d + 2, f"const int off = {gen.lds_off[buf.id]} + (r * {lay.cols + lay.pad} + "
                    f"(c ^ (((r / {lay.per_phase}) % {lay.max_phase}) * {lay.vec}))) * {lay.elem_bytes};")
    gen.emit(d + 2, f"const ts_tr_v x = {row.builtin}((__attribute__((address_space(3))) ts_tr_v*)(ts_lds + off));")
    gen.emit(d + 2, f"__builtin_memcpy(&{f}.r[{row.registers} * s], &x, {row.read_bits // 8});")
    gen.emit(d + 1, "}")
    gen.emit(d, "}")
