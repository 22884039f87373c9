"""Emission of memory ops: global loads/stores (element bits through the layouts' index
expressions), LDS allocation, loads, stores and barriers."""

from __future__ import annotations

from tilesim.codegen.common import _UINT
from tilesim.codegen.element_ops import broadcast_exprs, emit_global_typed, emit_lds, zero_bits
from tilesim.codegen.lds_tr import emit_lds_load_tr
from tilesim.ir.core import Op, Value
from tilesim.matrix.dtypes import dtype


class MemoryOps:
    """``_Gen``'s memory ops (a mixin: state lives in :class:`tilesim.codegen.hip._Gen`)."""

    def _global(self, op: Op, v: Value, row0: object, col0: object, d: int, store: bool) -> None:
        tp = self.p.tensor(op.attr("tensor"))
        arg = self.names[tp.name]
        bits = dtype(v.dtype).reg_bits
        if v.dtype != tp.dtype or bits not in _UINT or zero_bits(v.dtype) != "0x0u":
            emit_global_typed(self, op, v, row0, col0, d, store)  # a cast on the way, packed 4/6-bit, e8m0
            return
        f = self.frag(v)
        lay = v.layout
        rows, cols = tp.shape
        tr = bool(op.attr("transpose"))
        self.emit(d, "{")
        ex, valid = self.slot_exprs(lay, d + 1)
        ex = broadcast_exprs(ex, None if store else op.attr("broadcast"))  # a vector load (ts.load_row/col)
        slots = dict(lay.in_dims)["slot"]
        r0, c0 = self.sref(row0), self.sref(col0)
        if not store and bits == 16 and valid is None and slots % 2 == 0:
            self._load_pairs(f, arg, ex, tr, r0, c0, rows, cols, slots, d)
            return
        self.emit(d + 1, "#pragma unroll")
        self.emit(d + 1, f"for (int s = 0; s < {slots}; ++s) {{")
        rr, cc = (ex["col"], ex["row"]) if tr else (ex["row"], ex["col"])
        self.emit(d + 2, f"const int gr = {r0} + ({rr}), gc = {c0} + ({cc});")
        ok = f"gr >= 0 && gr < {rows} && gc >= 0 && gc < {cols}" + (f" && {valid}" if valid else "")
        # register and bit position of slot s: constant after unrolling
        if bits == 64:
            self.emit(d + 2, f"if ({ok}) {{")
            if store:
                self.emit(d + 3, f"{arg}[gr * {cols} + gc] = ((ts_u64){f}.r[2 * s + 1] << 32) | {f}.r[2 * s];")
            else:
                self.emit(d + 3, f"const ts_u64 x = {arg}[gr * {cols} + gc];")
                self.emit(d + 3, f"{f}.r[2 * s] = (ts_u32)x; {f}.r[2 * s + 1] = (ts_u32)(x >> 32);")
            self.emit(d + 2, "}" if store else f"}} else {{ {f}.r[2 * s] = 0u; {f}.r[2 * s + 1] = 0u; }}")
        else:
            per = 32 // bits
            mask = (1 << bits) - 1
            self.emit(d + 2, f"const int v = s / {per}, lo = (s % {per}) * {bits};")
            if store:
                self.emit(d + 2, f"if ({ok}) {arg}[gr * {cols} + gc] = ({_UINT[bits]})(({f}.r[v] >> lo) & {mask}u);")
            else:
                self.emit(d + 2, f"const ts_u32 x = ({ok}) ? (ts_u32){arg}[gr * {cols} + gc] : 0u;")
                self.emit(d + 2, f"{f}.r[v] = ({f}.r[v] & ~({mask}u << lo)) | (x << lo);")
        self.emit(d + 1, "}")
        self.emit(d, "}")

    def _load_pairs(self, f: str, arg: str, ex: dict[str, str], tr: bool, r0: str, c0: str, rows: int, cols: int,
                    slots: int, d: int) -> None:
        """A 16-bit load, one register (slot ``2v`` in the low half, ``2v+1`` in the high half) at a
        time: when both elements are in bounds and adjacent in memory at a 4-byte-aligned index, one
        32-bit load (the same bits, low element first); otherwise the two elements one by one, 0 when
        out of bounds, as the general loop does."""
        rr, cc = (ex["col"], ex["row"]) if tr else (ex["row"], ex["col"])
        pos = f"const int gr = {r0} + ({rr}), gc = {c0} + ({cc});"
        ok = f"gr >= 0 && gr < {rows} && gc >= 0 && gc < {cols}"
        self.emit(d + 1, "#pragma unroll")
        self.emit(d + 1, f"for (int v = 0; v < {slots // 2}; ++v) {{")
        self.emit(d + 2, "bool ok[2]; int i[2];")
        self.emit(d + 2, "#pragma unroll")
        self.emit(d + 2, "for (int s = 2 * v; s < 2 * v + 2; ++s) {")
        self.emit(d + 3, pos)
        self.emit(d + 3, f"ok[s - 2 * v] = {ok}; i[s - 2 * v] = gr * {cols} + gc;")
        self.emit(d + 2, "}")
        self.emit(d + 2, "if (ok[0] && ok[1] && i[1] == i[0] + 1 && (i[0] & 1) == 0) {")
        self.emit(d + 3, f"{f}.r[v] = *(const ts_u32*)({arg} + i[0]);")
        self.emit(d + 2, "} else {")
        self.emit(d + 3, f"{f}.r[v] = 0u;")
        self.emit(d + 3, "#pragma unroll")
        self.emit(d + 3, "for (int s = 2 * v; s < 2 * v + 2; ++s) {")
        self.emit(d + 4, pos)
        self.emit(d + 4, f"if ({ok}) {f}.r[v] |= (ts_u32){arg}[gr * {cols} + gc] << ((s % 2) * 16);")
        self.emit(d + 3, "}")
        self.emit(d + 2, "}")
        self.emit(d + 1, "}")
        self.emit(d, "}")

    def op_load(self, op: Op, d: int) -> None:
        f = self.frag(op.out)
        self.emit(d, f"{f} = ts_r{op.out.layout.registers_per_lane()}{{}};")
        self._global(op, op.out, op.args[0], op.args[1], d, False)

    def op_store(self, op: Op, d: int) -> None:
        self._global(op, op.args[0], op.args[1], op.args[2], d, True)

    # ------------------------------------------------------------------ LDS
    def op_lds_alloc(self, op: Op, d: int) -> None:
        self.lds_off[op.out.id] = self.lds_top
        self.lds_top += -(-op.out.lds.bytes // 16) * 16

    def op_lds_store(self, op: Op, d: int) -> None:
        emit_lds(self, op, op.args[0], op.args[1], op.args[2], op.args[3], d, True)  # any types (element_ops)

    def op_lds_load(self, op: Op, d: int) -> None:
        f = self.frag(op.out)
        self.emit(d, f"{f} = ts_r{op.out.layout.registers_per_lane()}{{}};")
        emit_lds(self, op, op.args[0], op.out, op.args[1], op.args[2], d, False)

    def op_lds_load_tr(self, op: Op, d: int) -> None:
        emit_lds_load_tr(self, op, d)  # tilesim/codegen/lds_tr.py

    def op_barrier(self, op: Op, d: int) -> None:
        self.emit(d, "TS_BARRIER();")

    # ------------------------------------------------------------------ compute
