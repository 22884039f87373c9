"""Emission of memory ops: global loads/stores (element bits through the layouts' index
expressions), LDS allocation, loads, stores and barriers."""

from __future__ import annotations

from tilesim.codegen.common import _UINT, CodegenError
from tilesim.ir.core import LdsLayout, Op, Value
from tilesim.matrix.dtypes import dtype


class MemoryOps:
    """``_Gen``'s memory ops (a mixin: state lives in :class:`tilesim.codegen.hip._Gen`)."""

    def _global(self, op: Op, v: Value, row0: object, col0: object, d: int, store: bool) -> None:
        tp = self.p.tensor(op.attr("tensor"))
        arg = self.names[tp.name]
        bits = dtype(v.dtype).reg_bits
        tbits = dtype(tp.dtype).reg_bits
        if bits != tbits:
            raise CodegenError(f"{'store' if store else 'load'} of a {v.dtype} fragment from a {tp.dtype} tensor: "
                               "convert with ts.cast in the kernel")
        if bits not in _UINT:
            raise CodegenError(f"{bits}-bit elements are not emitted yet")
        f = self.frag(v)
        lay = v.layout
        rows, cols = tp.shape
        tr = bool(op.attr("transpose"))
        self.emit(d, "{")
        ex, valid = self.slot_exprs(lay, d + 1)
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

    def _lds(self, op: Op, buf: Value, v: Value, row0: object, col0: object, d: int, store: bool) -> None:
        lay: LdsLayout = buf.lds
        bits = dtype(v.dtype).reg_bits
        if bits not in (8, 16, 32) or lay.elem_bytes * 8 != bits:
            raise CodegenError(f"LDS {'store' if store else 'load'} of {v.dtype} into a {buf.dtype} buffer "
                               "is not emitted yet")
        f = self.frag(v)
        self.emit(d, "{")
        ex, valid = self.slot_exprs(v.layout, d + 1)
        slots = dict(v.layout.in_dims)["slot"]
        per, mask = 32 // bits, (1 << bits) - 1
        self.emit(d + 1, "#pragma unroll")
        self.emit(d + 1, f"for (int s = 0; s < {slots}; ++s) {{")
        self.emit(d + 2, f"const int r = {self.sref(row0)} + ({ex['row']}), c = {self.sref(col0)} + ({ex['col']});")
        self.emit(d + 2, f"const int off = {self.lds_off[buf.id]} + (r * {lay.cols + lay.pad} + "
                         f"(c ^ (((r / {lay.per_phase}) % {lay.max_phase}) * {lay.vec}))) * {lay.elem_bytes};")
        self.emit(d + 2, f"const int v = s / {per}, lo = (s % {per}) * {bits};")
        p = f"(({_UINT[bits]}*)(ts_lds + off))"
        cond = f"if ({valid}) " if valid else ""
        if store:
            self.emit(d + 2, f"{cond}*{p} = ({_UINT[bits]})(({f}.r[v] >> lo) & {mask}u);")
        else:
            self.emit(d + 2, f"{cond}{f}.r[v] = ({f}.r[v] & ~({mask}u << lo)) | ((ts_u32)*{p} << lo);")
        self.emit(d + 1, "}")
        self.emit(d, "}")

    def op_lds_store(self, op: Op, d: int) -> None:
        self._lds(op, op.args[0], op.args[1], op.args[2], op.args[3], d, True)

    def op_lds_load(self, op: Op, d: int) -> None:
        f = self.frag(op.out)
        self.emit(d, f"{f} = ts_r{op.out.layout.registers_per_lane()}{{}};")
        self._lds(op, op.args[0], op.out, op.args[1], op.args[2], d, False)

    def op_barrier(self, op: Op, d: int) -> None:
        self.emit(d, "TS_BARRIER();")

    # ------------------------------------------------------------------ compute
