"""Emission of compute ops: ``mma`` (AMD builtins, inline PTX), elementwise, casts, shuffles,
and ``reduce``/``convert`` through a per-wave LDS scratch tile."""

from __future__ import annotations

import re

from tilesim.codegen.common import CodegenError, _f32_literal, _int, _row
from tilesim.codegen.element_ops import emit_cast, emit_convert, emit_elementwise, emit_reduce, exact_constant
from tilesim.codegen.mma_forms import sparse_index_arg
from tilesim.ir.core import Op, Value
from tilesim.ir.ops import ELEMENTWISE
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import lookup
from tilesim.matrix.catalog_nvidia import mma_sync_asm
from tilesim.matrix.dtypes import dtype
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.matrix.probe import c_type


def _vgprs_of(tok: str) -> int:
    """32-bit registers of a builtin operand type token (``v8i32`` 8, ``i32`` 1, ``v4f16`` 2)."""
    m = re.fullmatch(r"(?:v(\d+))?([a-z]+)(\d+)", tok)
    if not m:
        return 0
    return -(-int(m.group(1) or 1) * int(m.group(3)) // 32)


class ComputeOps:
    """``_Gen``'s compute ops (a mixin: state lives in :class:`tilesim.codegen.hip._Gen`)."""

    def op_mma(self, op: Op, d: int) -> None:
        row = lookup(op.attr("instr"), self.p.target)
        mods = dict(op.attr("modifiers") or ())
        ops = tuple(self.frag(x) for x in op.args[:3])  # A, B, C
        out = self.frag(op.out)
        if op.kind == "mma_sparse":  # the metadata fragment is the index VGPR (tilesim/matrix/sparse.py)
            idx, mods = sparse_index_arg(row, self.p.wave_size, self.frag(op.args[3]), mods)
            self.emit(d, self._amd_call(row, (*ops, idx), out, mods) + ";")
            return
        ops += tuple(self.frag(x) for x in op.args[3:])  # mma_scaled: SA, SB
        nd = row.registers_for(self.p.wave_size)["D"]
        if nd != op.out.layout.registers_per_lane():
            raise CodegenError(f"{row.mnemonic} writes {nd} VGPRs of D; the declared accumulator spans "
                               f"{op.out.layout.registers_per_lane()}")
        if self.amd:
            regs = tuple(x.layout.registers_per_lane() for x in op.args)
            self.emit(d, self._amd_call(row, ops, out, mods, regs) + ";")
        else:
            self._ptx_call(row, ops, out, d)

    op_mma_sparse = op_mma
    op_mma_scaled = op_mma  # the scale fragments SA, SB are the builtin's scale operands (one VGPR each)

    def _amd_call(self, row: MatrixInstruction, ops: tuple[str, ...], out: str, mods: dict[str, int],
                  regs: tuple[int, ...] = ()) -> str:
        bi = row.builtin_for(self.p.wave_size)
        if bi is None:
            raise CodegenError(f"{row.mnemonic} has no clang builtin for wave{self.p.wave_size}")
        self.builtins.append(bi.name)
        unfed = bi.unfed(mods)  # the row says which modifier bits reach which immediate
        if unfed:
            raise CodegenError(f"modifiers {', '.join(unfed)} on {row.mnemonic} are not emitted yet "
                               f"({bi.name} carries none of those bits)")
        if len(bi.operand_types) != len(ops):
            want = ", ".join(("A", "B", "C", *(("index",) if row.sparse else ()), *row.scale_operands))
            raise CodegenError(f"{row.mnemonic}: {bi.name} takes {len(bi.operand_types)} operands "
                               f"({', '.join(bi.operand_types)}: {want}); the program passes {len(ops)}")
        args = []
        for i, (tok, x) in enumerate(zip(bi.operand_types, ops)):
            ty, td = c_type(tok)
            if td:
                self.vectors.add(td)
            have, need = (regs[i] if i < len(regs) else 0), _vgprs_of(tok)
            if have and have < need:
                # gfx950 f8f6f4: fp6/fp4 A/B fill 6/4 of the builtin's 8 VGPRs; the rest are zero (the
                # compiler passes only the format's tuple, e.g. v[6:9] for fp4)
                self.structs.add(need)
                x = f"ts_r{need}{{{{{', '.join([f'{x}.r[{r}]' for r in range(have)] + ['0u'] * (need - have))}}}}}"
            args.append(f"__builtin_bit_cast({ty}, {x})")
        rty, td = c_type(bi.ret)
        if td:
            self.vectors.add(td)
        n = row.registers_for(self.p.wave_size)["D"]
        return f"{out} = __builtin_bit_cast(ts_r{n}, {bi.call(args, mods)})"

    def _ptx_call(self, row: MatrixInstruction, ops: tuple[str, str, str], out: str, d: int) -> None:
        self.builtins.append(row.mnemonic)
        if row.types[0] == "f64":  # 64-bit registers ("l"): pairs of the fragments' 32-bit words
            regs = row.registers_for(32)
            self.emit(d, "{")
            for name, x, n in (("ta", ops[0], regs["A"]), ("tb", ops[1], regs["B"]), ("tc", ops[2], regs["C"])):
                words = ", ".join(f"((ts_u64){x}.r[{2 * i + 1}] << 32) | {x}.r[{2 * i}]" for i in range(n // 2))
                self.emit(d + 1, f"const ts_u64 {name}[{n // 2}] = {{{words}}};")
            self.emit(d + 1, f"ts_u64 td[{regs['C'] // 2}];")
            text, outs, ins = mma_sync_asm(row, "td", "ta", "tb", "tc")
            self.emit(d + 1, f"asm volatile({text} : {outs} : {ins});")
            for i in range(regs["C"] // 2):
                self.emit(d + 1, f"{out}.r[{2 * i}] = (ts_u32)td[{i}]; {out}.r[{2 * i + 1}] = (ts_u32)(td[{i}] >> 32);")
            self.emit(d, "}")
            return
        text, outs, ins = mma_sync_asm(row, f"{out}.r", *(f"{x}.r" for x in ops))
        self.emit(d, f"asm volatile({text}")
        self.emit(d, f"             : {outs}")
        self.emit(d, f"             : {ins});")

    def op_elementwise(self, op: Op, d: int) -> None:
        x, y = op.args
        if op.out.dtype != "f32" or (y is not None and not isinstance(y, Value) and not exact_constant(y, "f32")):
            emit_elementwise(self, op, d)  # every other element type, and constants f32 cannot hold (in double)
            return
        f, fx = self.frag(op.out), self.frag(x)
        n = op.out.layout.registers_per_lane()
        if isinstance(y, Value) and y.kind == "frag":
            yv = f"ts_f32({self.frag(y)}.r[i])"
        elif isinstance(y, Value):
            yv = f"(float){self.sref(y)}"
        else:
            yv = "0.0f" if y is None else _f32_literal(float(y))
        a = f"ts_f32({fx}.r[i])"
        row = _row(ELEMENTWISE, op.attr("op"), "elementwise")
        self.macros.update([row.macro] if row.macro else [])
        expr = row.c.format(a=a, b=yv)
        self.emit(d, "#pragma unroll")
        self.emit(d, f"for (int i = 0; i < {n}; ++i) {f}.r[i] = ts_bits({expr});")

    def op_cast(self, op: Op, d: int) -> None:
        emit_cast(self, op, d)  # any pair of element types, the simulator's rule (numerics.cast)

    def op_shuffle(self, op: Op, d: int) -> None:
        x = op.args[0]
        src = op.attr("src_lane")
        f, fx = self.frag(op.out), self.frag(x)
        n = op.out.layout.registers_per_lane()
        self.tables += 1
        tname = f"ts_src{self.tables}"
        lanes = [_int(s, 0, self.p.wave_size - 1, "shuffle source lane") for s in src]
        self.emit(d, f"{{ const unsigned char {tname}[{len(lanes)}] = {{{', '.join(map(str, lanes))}}};")
        self.emit(d, "  #pragma unroll")
        self.emit(d, f"  for (int i = 0; i < {n}; ++i) {f}.r[i] = ts_lane_from({fx}.r[i], {tname}[lane]); }}")

    # ------------------------------------------------------------------ through a per-wave LDS scratch tile
    def _scratch(self, lay: Layout) -> tuple[int, int, str]:
        dims = dict(lay.out_dims)
        rows, cols = dims.get("block", 1) * dims["row"], dims["col"]
        self.scratch = max(getattr(self, "scratch", 0), rows * cols * 4)
        return rows, cols, f"((float*)(ts_lds + TS_SCRATCH + wave * {rows * cols * 4}))"

    def _to_scratch(self, f: str, lay: Layout, sc: str, cols: int, d: int, value: str | None = None) -> None:
        """Each slot's element to the scratch tile: ``value`` (an expression over slot s; default the
        32-bit register as a float)."""
        ex, valid = self.slot_exprs(lay, d)
        slots = dict(lay.in_dims)["slot"]
        cond = f"if ({valid}) " if valid else ""
        value = value or f"ts_f32({f}.r[s])"
        self.emit(d, "#pragma unroll")
        self.emit(d, f"for (int s = 0; s < {slots}; ++s) {cond}{sc}[({ex['row']}) * {cols} + ({ex['col']})] = {value};")

    def scratch_tile(self, lay: Layout, elem_bytes: int = 4, ctype: str = "float") -> tuple[int, int, str]:
        """(rows, cols, C pointer) of this wave's scratch tile for ``lay``'s tile, ``elem_bytes`` an element."""
        dims = dict(lay.out_dims)
        rows, cols = dims.get("block", 1) * dims["row"], dims["col"]
        self.scratch = max(getattr(self, "scratch", 0), rows * cols * elem_bytes)
        return rows, cols, f"(({ctype}*)(ts_lds + TS_SCRATCH + wave * {rows * cols * elem_bytes}))"

    def op_reduce(self, op: Op, d: int) -> None:
        emit_reduce(self, op, d)  # every element type (tilesim/codegen/element_ops.py)

    def op_convert(self, op: Op, d: int) -> None:
        x = op.args[0]
        if dtype(x.dtype).reg_bits != 32:
            emit_convert(self, op, d)  # 4/6/8/16/64-bit elements: bits through the scratch tile
            return
        f, fx = self.frag(op.out), self.frag(x)
        rows, cols, sc = self._scratch(x.layout)
        self.emit(d, "{")
        self._to_scratch(fx, x.layout, sc, cols, d + 1)
        self.emit(d + 1, "TS_WAVE_SYNC();")
        ex, valid = self.slot_exprs(op.out.layout, d + 1)
        slots = dict(op.out.layout.in_dims)["slot"]
        self.emit(d + 1, "#pragma unroll")
        self.emit(d + 1, f"for (int s = 0; s < {slots}; ++s) {f}.r[s] = ts_bits({sc}[({ex['row']}) * {cols} + ({ex['col']})]);")
        self.emit(d + 1, "TS_WAVE_SYNC();")
        self.emit(d, "}")
