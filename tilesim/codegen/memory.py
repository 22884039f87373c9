"""Emission of memory ops: global loads/stores (element bits through the layouts' index
expressions), LDS allocation, loads, stores and barriers."""

from __future__ import annotations

from tilesim.codegen.async_copy import emit_commit, emit_copy_async, emit_wait
from tilesim.codegen.common import _UINT
from tilesim.codegen.element_ops import broadcast_exprs, emit_global_typed, emit_lds, slot_get, slot_put, zero_bits
from tilesim.codegen.lds_tr import emit_lds_load_tr
from tilesim.codegen.ldmatrix import LdmatrixPlan, ldmatrix_plan
from tilesim.codegen.wide import VECTOR_TYPES, group_width
from tilesim.ir.core import LdsLayout, Op, Value
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
        wide = valid is None and (store or not op.attr("broadcast"))  # a broadcast reads one element per group
        g = group_width(lay, bits, transpose=tr, stride=cols) if wide else 1
        align = self._aligned(col0, g)
        # 32-bit pairs of 16-bit loads keep _load_pairs below: measured on the H100 (benchmarks/cuda.py),
        # the grouped form of them made examples/gemm.py 0.74 of the hand-written kernel instead of 0.98
        if align is not None and not (not store and bits == 16 and g == 2):
            self._global_wide(f, arg, ex, tr, r0, c0, rows, cols, slots, bits, g, align, store, d)
            return
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
            if store:  # an element in two registers, low word first: slot_get/slot_put say how
                self.emit(d + 3, f"{arg}[gr * {cols} + gc] = {slot_get(self, f, 64)};")
            else:
                self.emit(d + 3, slot_put(self, f, 64, f"{arg}[gr * {cols} + gc]"))
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

    def _aligned(self, col0: object, g: int) -> str | None:
        """C condition that the tile's first column is a multiple of ``g`` ("1" when known), None
        when no wide access applies (``g == 1`` or a constant column that is not a multiple)."""
        if g < 2:
            return None
        if isinstance(col0, Value):
            return f"({self.sref(col0)} % {g} == 0)"
        return "1" if int(col0) % g == 0 else None

    def _wide_move(self, f: str, ptr: str, bits: int, g: int, store: bool, d: int) -> None:
        """One ``g * bits``-bit access at ``ptr`` for slots ``g*v ..``: registers ``v*n ..``, low first."""
        n = g * bits // 32
        vt = VECTOR_TYPES[32 * n]
        regs = [f"{f}.r[{n} * v + {j}]" for j in range(n)]
        if n == 1:
            self.emit(d, f"*({vt}*)({ptr}) = {regs[0]};" if store else f"{regs[0]} = *(const {vt}*)({ptr});")
            return
        xs = [f"x.{m}" for m in "xyzw"[:n]]
        if store:
            self.emit(d, f"{vt} x; {' '.join(f'{a} = {b};' for a, b in zip(xs, regs))}")
            self.emit(d, f"*({vt}*)({ptr}) = x;")
        else:
            self.emit(d, f"const {vt} x = *(const {vt}*)({ptr});")
            self.emit(d, " ".join(f"{b} = {a};" for a, b in zip(xs, regs)))

    def _global_wide(self, f: str, arg: str, ex: dict[str, str], tr: bool, r0: str, c0: str, rows: int, cols: int,
                     slots: int, bits: int, g: int, align: str, store: bool, d: int) -> None:
        """Slots in groups of ``g`` (tilesim/codegen/wide.py): one wide access when the tile's first
        column is aligned and the whole group is in bounds, else the group's elements one by one
        exactly as the general loop moves them (0 when out of bounds on load)."""
        rr, cc = (ex["col"], ex["row"]) if tr else (ex["row"], ex["col"])
        per, mask = 32 // bits, (1 << bits) - 1
        self.emit(d + 1, "#pragma unroll")
        self.emit(d + 1, f"for (int v = 0; v < {slots // g}; ++v) {{")
        self.emit(d + 2, f"const int s = {g} * v;")
        self.emit(d + 2, f"const int gr = {r0} + ({rr}), gc = {c0} + ({cc});")
        self.emit(d + 2, f"if ({align} && gr >= 0 && gr < {rows} && gc >= 0 && gc + {g - 1} < {cols}) {{")
        self._wide_move(f, f"{arg} + gr * {cols} + gc", bits, g, store, d + 3)
        self.emit(d + 2, "} else {")
        self.emit(d + 3, "#pragma unroll")
        self.emit(d + 3, f"for (int s = {g} * v; s < {g} * v + {g}; ++s) {{")
        self.emit(d + 4, f"const int gr = {r0} + ({rr}), gc = {c0} + ({cc});")
        ok = f"gr >= 0 && gr < {rows} && gc >= 0 && gc < {cols}"
        self.emit(d + 4, f"const int v = s / {per}, lo = (s % {per}) * {bits};" if bits < 32 else "const int v = s;")
        if store:
            val = f"(({f}.r[v] >> lo) & {mask}u)" if bits < 32 else f"{f}.r[v]"
            self.emit(d + 4, f"if ({ok}) {arg}[gr * {cols} + gc] = ({_UINT[bits]}){val};")
        elif bits < 32:
            self.emit(d + 4, f"const ts_u32 x = ({ok}) ? (ts_u32){arg}[gr * {cols} + gc] : 0u;")
            self.emit(d + 4, f"{f}.r[v] = ({f}.r[v] & ~({mask}u << lo)) | (x << lo);")
        else:
            self.emit(d + 4, f"{f}.r[v] = ({ok}) ? (ts_u32){arg}[gr * {cols} + gc] : 0u;")
        self.emit(d + 3, "}")
        self.emit(d + 2, "}")
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

    def _lds(self, op: Op, buf: Value, v: Value, row0: object, col0: object, d: int, store: bool) -> bool:
        """Same-type 8/16/32-bit LDS moves with a wide or ``ldmatrix`` form (then True); anything else
        is element_ops.emit_lds's (False, nothing emitted)."""
        lay: LdsLayout = buf.lds
        bits = dtype(v.dtype).reg_bits
        if v.dtype != buf.dtype or bits not in (8, 16, 32) or lay.elem_bytes * 8 != bits:
            return False
        if not v.layout.is_function():
            return False
        plan0 = None if (store or self.amd) else ldmatrix_plan(v.layout, bits)
        g0 = group_width(v.layout, bits, stride=lay.cols + lay.pad, swizzle_vec=lay.vec if lay.max_phase > 1 else 0)
        if not (plan0 is not None and self._ldmatrix_ok(plan0, lay, col0)) and self._aligned(col0, g0) is None:
            return False
        f = self.frag(v)
        self.emit(d, "{")
        ex, valid = self.slot_exprs(v.layout, d + 1)
        slots = dict(v.layout.in_dims)["slot"]
        per, mask = 32 // bits, (1 << bits) - 1
        pos = [f"const int r = {self.sref(row0)} + ({ex['row']}), c = {self.sref(col0)} + ({ex['col']});",
               f"const int off = {self.lds_off[buf.id]} + (r * {lay.cols + lay.pad} + "
               f"(c ^ (((r / {lay.per_phase}) % {lay.max_phase}) * {lay.vec}))) * {lay.elem_bytes};"]
        g = 1 if valid else group_width(v.layout, bits, stride=lay.cols + lay.pad,
                                        swizzle_vec=lay.vec if lay.max_phase > 1 else 0)
        align = self._aligned(col0, g)
        plan = None if (store or self.amd or valid) else ldmatrix_plan(v.layout, bits)
        if plan is not None and self._ldmatrix_ok(plan, lay, col0):
            self.emit(d + 1, f"if ({self._aligned(col0, 8)}) {{")
            self._ldmatrix(f, plan, lay, buf, row0, col0, d + 2)
            self.emit(d + 1, "} else {")
            align = "ldmatrix"
            d += 1
        elif align is not None:  # wide accesses (tilesim/codegen/wide.py); allocations are 16-byte aligned
            self.emit(d + 1, f"if ({align}) {{")
            self.emit(d + 2, "#pragma unroll")
            self.emit(d + 2, f"for (int v = 0; v < {slots // g}; ++v) {{")
            self.emit(d + 3, f"const int s = {g} * v;")
            for ln in pos:
                self.emit(d + 3, ln)
            self._wide_move(f, "ts_lds + off", bits, g, store, d + 3)
            self.emit(d + 2, "}")
            self.emit(d + 1, "} else {")
            d += 1
        self.emit(d + 1, "#pragma unroll")
        self.emit(d + 1, f"for (int s = 0; s < {slots}; ++s) {{")
        for ln in pos:
            self.emit(d + 2, ln)
        self.emit(d + 2, f"const int v = s / {per}, lo = (s % {per}) * {bits};")
        p = f"(({_UINT[bits]}*)(ts_lds + off))"
        cond = f"if ({valid}) " if valid else ""
        if store:
            self.emit(d + 2, f"{cond}*{p} = ({_UINT[bits]})(({f}.r[v] >> lo) & {mask}u);")
        else:
            self.emit(d + 2, f"{cond}{f}.r[v] = ({f}.r[v] & ~({mask}u << lo)) | ((ts_u32)*{p} << lo);")
        self.emit(d + 1, "}")
        if align is not None:
            self.emit(d, "}")
            d -= 1
        self.emit(d, "}")
        return True

    def _ldmatrix_ok(self, plan: LdmatrixPlan, lay: LdsLayout, col0: object) -> bool:
        """Rows of 8 elements at 16-byte aligned addresses: row stride, every block's first column
        and the swizzle unit multiples of 8 (the column offset is checked at run time)."""
        return (lay.elem_bytes == 2 and (lay.cols + lay.pad) % 8 == 0 and all(c % 8 == 0 for _, c in plan.blocks)
                and (lay.max_phase == 1 or lay.vec % 8 == 0) and self._aligned(col0, 8) is not None)

    def _ldmatrix(self, f: str, plan: LdmatrixPlan, lay: LdsLayout, buf: Value, row0: object, col0: object,
                  d: int) -> None:
        """Registers in groups of 4/2/1 (``.x4/.x2/.x1``): thread ``t`` gives the address of row
        ``t % 8`` of the group's matrix ``t / 8`` (tilesim/codegen/ldmatrix.py)."""
        n = len(plan.blocks)
        r = 0
        while r < n:
            k = 4 if n - r >= 4 else 2 if n - r >= 2 else 1
            blocks = plan.blocks[r:r + k]

            def pick(vals: list[int]) -> str:
                expr = str(vals[-1])
                for i in range(len(vals) - 2, -1, -1):
                    expr = f"(i == {i} ? {vals[i]} : {expr})"
                return expr
            self.emit(d, "{")
            self.emit(d + 1, f"const int i = (lane / 8) % {k};")
            self.emit(d + 1, f"const int r = {self.sref(row0)} + {pick([b[0] for b in blocks])} + lane % 8, "
                             f"c = {self.sref(col0)} + {pick([b[1] for b in blocks])};")
            self.emit(d + 1, f"const int off = {self.lds_off[buf.id]} + (r * {lay.cols + lay.pad} + "
                             f"(c ^ (((r / {lay.per_phase}) % {lay.max_phase}) * {lay.vec}))) * {lay.elem_bytes};")
            self.emit(d + 1, "const unsigned a = (unsigned)__cvta_generic_to_shared(ts_lds + off);")
            regs = ", ".join(f"%{j}" for j in range(k))
            outs = ", ".join(f'"=r"({f}.r[{r + j}])' for j in range(k))
            self.emit(d + 1, f'asm volatile("ldmatrix.sync.aligned.m8n8.x{k}{".trans" if plan.trans else ""}'
                             f'.shared.b16 {{{regs}}}, [%{k}];" : {outs} : "r"(a) : "memory");')
            self.emit(d, "}")
            r += k

    def op_lds_store(self, op: Op, d: int) -> None:
        if not self._lds(op, op.args[0], op.args[1], op.args[2], op.args[3], d, True):
            emit_lds(self, op, op.args[0], op.args[1], op.args[2], op.args[3], d, True)  # any types (element_ops)

    def op_lds_load(self, op: Op, d: int) -> None:
        f = self.frag(op.out)
        self.emit(d, f"{f} = ts_r{op.out.layout.registers_per_lane()}{{}};")
        if not self._lds(op, op.args[0], op.out, op.args[1], op.args[2], d, False):
            emit_lds(self, op, op.args[0], op.out, op.args[1], op.args[2], d, False)

    def op_lds_load_tr(self, op: Op, d: int) -> None:
        emit_lds_load_tr(self, op, d)  # tilesim/codegen/lds_tr.py

    def op_barrier(self, op: Op, d: int) -> None:
        self.emit(d, "TS_BARRIER();")

    def op_lds_copy_async(self, op: Op, d: int) -> None:
        emit_copy_async(self, op, d)  # tilesim/codegen/async_copy.py

    def op_async_commit(self, op: Op, d: int) -> None:
        emit_commit(self, op, d)

    def op_async_wait(self, op: Op, d: int) -> None:
        emit_wait(self, op, d)

    # ------------------------------------------------------------------ compute
