"""Emission of compute ops: ``mma`` (AMD builtins, inline PTX), elementwise, casts, shuffles,
and ``reduce``/``convert`` through a per-wave LDS scratch tile."""

from __future__ import annotations

from tilesim.codegen.common import CodegenError, _f32_literal, _int, _row, _slot_bits, _slot_put
from tilesim.codegen.mma_forms import sparse_index_arg
from tilesim.ir.core import Op, Value
from tilesim.ir.ops import CODEC_HELPERS, ELEMENTWISE, FLOAT_CODECS, REDUCE
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import lookup
from tilesim.matrix.catalog_nvidia import mma_sync_asm
from tilesim.matrix.dtypes import dtype
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.matrix.probe import c_type


class ComputeOps:
    """``_Gen``'s compute ops (a mixin: state lives in :class:`tilesim.codegen.hip._Gen`)."""

    def op_mma(self, op: Op, d: int) -> None:
        row = lookup(op.attr("instr"), self.p.target)
        mods = dict(op.attr("modifiers") or ())
        a, b, c = (self.frag(x) for x in op.args[:3])
        out = self.frag(op.out)
        if op.kind == "mma_sparse":  # the metadata fragment is the index VGPR (tilesim/matrix/sparse.py)
            idx, mods = sparse_index_arg(row, self.p.wave_size, self.frag(op.args[3]), mods)
            self.emit(d, self._amd_call(row, (a, b, c, idx), out, mods) + ";")
            return
        nd = row.registers_for(self.p.wave_size)["D"]
        if nd != op.out.layout.registers_per_lane():
            raise CodegenError(f"{row.mnemonic} writes {nd} VGPRs of D; the declared accumulator spans "
                               f"{op.out.layout.registers_per_lane()}")
        if self.amd:
            self.emit(d, self._amd_call(row, (a, b, c), out, mods) + ";")
        else:
            self._ptx_call(row, (a, b, c), out, d)

    op_mma_sparse = op_mma

    def _amd_call(self, row: MatrixInstruction, ops: tuple[str, ...], out: str, mods: dict[str, int]) -> str:
        bi = row.builtin_for(self.p.wave_size)
        if bi is None:
            raise CodegenError(f"{row.mnemonic} has no clang builtin for wave{self.p.wave_size}")
        self.builtins.append(bi.name)
        unfed = bi.unfed(mods)  # the row says which modifier bits reach which immediate
        if unfed:
            raise CodegenError(f"modifiers {', '.join(unfed)} on {row.mnemonic} are not emitted yet "
                               f"({bi.name} carries none of those bits)")
        if len(bi.operand_types) != len(ops):
            raise CodegenError(f"{row.mnemonic}: {bi.name} takes {len(bi.operand_types)} operands "
                               f"({', '.join(bi.operand_types)}); a program passes A, B, C only (not emitted yet)")
        args = []
        for tok, x in zip(bi.operand_types, ops):
            ty, td = c_type(tok)
            if td:
                self.vectors.add(td)
            args.append(f"__builtin_bit_cast({ty}, {x})")
        rty, td = c_type(bi.ret)
        if td:
            self.vectors.add(td)
        n = row.registers_for(self.p.wave_size)["D"]
        return f"{out} = __builtin_bit_cast(ts_r{n}, {bi.call(args, mods)})"

    def _ptx_call(self, row: MatrixInstruction, ops: tuple[str, str, str], out: str, d: int) -> None:
        if row.types[0] == "f64":
            raise CodegenError("f64 mma.sync is not emitted yet")
        text, outs, ins = mma_sync_asm(row, f"{out}.r", *(f"{x}.r" for x in ops))
        self.builtins.append(row.mnemonic)
        self.emit(d, f"asm volatile({text}")
        self.emit(d, f"             : {outs}")
        self.emit(d, f"             : {ins});")

    def op_elementwise(self, op: Op, d: int) -> None:
        x, y = op.args
        if op.out.dtype not in FLOAT_CODECS:
            raise CodegenError(f"elementwise on {op.out.dtype} fragments is not emitted yet ({', '.join(FLOAT_CODECS)})")
        f, fx = self.frag(op.out), self.frag(x)
        n = op.out.layout.registers_per_lane()
        if op.out.dtype != "f32":
            self._elementwise_slots(op, f, fx, d)
            return
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

    def _elementwise_slots(self, op: Op, f: str, fx: str, d: int) -> None:
        """Elementwise on packed 16-bit floats: slot by slot, decoded to f32, computed, rounded once to
        the element type (f32 holds every f16/bf16 sum, difference, product and quotient closely
        enough that this second rounding gives the simulator's single rounding from float64)."""
        x, y = op.args
        dt, bits = op.out.dtype, dtype(op.out.dtype).reg_bits
        dec, enc = FLOAT_CODECS[dt]
        self.helpers.update([CODEC_HELPERS[dt]] if dt in CODEC_HELPERS else [])
        if isinstance(y, Value) and y.kind == "frag":
            yv = dec.format(_slot_bits(self.frag(y), bits))
        elif isinstance(y, Value):
            yv = f"(float){self.sref(y)}"
        else:
            yv = "0.0f" if y is None else _f32_literal(float(y))
        row = _row(ELEMENTWISE, op.attr("op"), "elementwise")
        self.macros.update([row.macro] if row.macro else [])
        expr = row.c.format(a=dec.format(_slot_bits(fx, bits)), b=yv)
        self.emit(d, f"{f} = ts_r{op.out.layout.registers_per_lane()}{{}};")
        self.emit(d, "#pragma unroll")
        self.emit(d, f"for (int s = 0; s < {dict(op.out.layout.in_dims)['slot']}; ++s) "
                     f"{_slot_put(f, bits, enc.format(expr))}")

    def op_cast(self, op: Op, d: int) -> None:
        x = op.args[0]
        src, dst = x.dtype, op.out.dtype
        f, fx = self.frag(op.out), self.frag(x)
        slots = dict(x.layout.in_dims)["slot"]
        self.emit(d, f"{f} = ts_r{op.out.layout.registers_per_lane()}{{}};")
        if src not in FLOAT_CODECS or dst not in FLOAT_CODECS:
            raise CodegenError(f"cast {src} -> {dst} is not emitted yet (between {', '.join(FLOAT_CODECS)})")
        sb, db = dtype(src).reg_bits, dtype(dst).reg_bits
        # slot s's bits in the source registers, decoded to a float, encoded to the destination's bits
        per = 32 // sb
        x_bits = f"{fx}.r[s]" if sb == 32 else f"({fx}.r[s / {per}] >> ({sb} * (s % {per}))) & 0x{(1 << sb) - 1:x}u"
        y = FLOAT_CODECS[dst][1].format(FLOAT_CODECS[src][0].format(x_bits))
        self.helpers.update(CODEC_HELPERS[t] for t in (src, dst) if t in CODEC_HELPERS)
        put = f"{f}.r[s] = {y};" if db == 32 else f"{f}.r[s / {32 // db}] |= {y} << ({db} * (s % {32 // db}));"
        self.emit(d, "#pragma unroll")
        self.emit(d, f"for (int s = 0; s < {slots}; ++s) {put}")

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

    def op_reduce(self, op: Op, d: int) -> None:
        x = op.args[0]
        if x.dtype not in FLOAT_CODECS:
            raise CodegenError(f"reduce on {x.dtype} fragments is not emitted yet ({', '.join(FLOAT_CODECS)})")
        f, fx = self.frag(op.out), self.frag(x)
        rows, cols, sc = self._scratch(x.layout)
        red = _row(REDUCE, op.attr("op"), "reduce")
        self.macros.update([red.macro] if red.macro else [])
        comb = red.c
        along_col = op.attr("axis") == "col"
        bits = dtype(x.dtype).reg_bits
        dec, enc = FLOAT_CODECS[x.dtype]
        self.helpers.update([CODEC_HELPERS[x.dtype]] if x.dtype in CODEC_HELPERS else [])
        if bits != 32:  # packed elements are or-ed into their registers below
            self.emit(d, f"{f} = ts_r{op.out.layout.registers_per_lane()}{{}};")
        self.emit(d, "{")
        self._to_scratch(fx, x.layout, sc, cols, d + 1, None if bits == 32 else dec.format(_slot_bits(fx, bits)))
        self.emit(d + 1, "TS_WAVE_SYNC();")
        ex, valid = self.slot_exprs(x.layout, d + 1)
        n, idx = (cols, f"r * {cols} + t") if along_col else (rows, f"t * {cols} + c")
        slots = dict(x.layout.in_dims)["slot"]
        for slot in range(slots):  # unrolled here: a loop with an inner loop keeps f.r[s] dynamic (scratch)
            self.emit(d + 1, f"{{ const int s = {slot};")
            self.emit(d + 2, f"const int r = {ex['row']}, c = {ex['col']}; (void)r; (void)c;")
            self.emit(d + 2, f"float a = {sc}[{idx.replace('t', '0')}];")
            self.emit(d + 2, f"for (int t = 1; t < {n}; ++t) {{ const float b = {sc}[{idx}]; a = {comb}; }}")
            self.emit(d + 2, f"{_slot_put(f, bits, enc.format('a'))} }}")
        self.emit(d + 1, "TS_WAVE_SYNC();")
        self.emit(d, "}")

    def op_convert(self, op: Op, d: int) -> None:
        x = op.args[0]
        bits = dtype(x.dtype).reg_bits
        if bits not in (8, 16, 32):
            raise CodegenError(f"convert of {x.dtype} fragments is not emitted yet (8-, 16- and 32-bit elements)")
        f, fx = self.frag(op.out), self.frag(x)
        if bits != 32:
            self._convert_packed(op, f, fx, bits, d)
            return
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

    def _convert_packed(self, op: Op, f: str, fx: str, bits: int, d: int) -> None:
        """convert of 8/16-bit elements: each element's bits through the scratch tile as a 32-bit word
        (bits moved, never converted), then packed into the new layout's registers."""
        x = op.args[0]
        rows, cols, sc = self._scratch(x.layout)
        words = sc.replace("(float*)", "(ts_u32*)")
        self.emit(d, f"{f} = ts_r{op.out.layout.registers_per_lane()}{{}};")
        self.emit(d, "{")
        self._to_scratch(fx, x.layout, words, cols, d + 1, _slot_bits(fx, bits))
        self.emit(d + 1, "TS_WAVE_SYNC();")
        ex, valid = self.slot_exprs(op.out.layout, d + 1)
        slots = dict(op.out.layout.in_dims)["slot"]
        self.emit(d + 1, "#pragma unroll")
        word = f"{words}[({ex['row']}) * {cols} + ({ex['col']})]"
        self.emit(d + 1, f"for (int s = 0; s < {slots}; ++s) {_slot_put(f, bits, word)}")
        self.emit(d + 1, "TS_WAVE_SYNC();")
        self.emit(d, "}")

    # ------------------------------------------------------------------ control
    def op_loop(self, op: Op, d: int) -> None:
        i = f"s{op.out.id}"
        self.decls[i] = f"int {i};"
        a, b, c = (self.sref(x) for x in op.args)
        self.emit(d, f"for ({i} = {a}; {i} < {b}; {i} += {c}) {{")
        self.block(op.attr("body"), d + 1)
        for init, nxt in op.attr("carried"):
            name = "f" if init.kind == "frag" else "s"
            self.emit(d + 1, f"{name}{init.id} = {name}{nxt.id};  // loop-carried")
        self.emit(d, "}")
        for init, nxt in op.attr("carried"):  # zero iterations: the body's value is the initial one
            name = "f" if init.kind == "frag" else "s"
            self.emit(d, f"if (!({a} < {b})) {name}{nxt.id} = {name}{init.id};")

    def op_branch(self, op: Op, d: int) -> None:
        self.emit(d, f"if ({self.sref(op.args[0])} != 0) {{")
        self.block(op.attr("body"), d + 1)
        self.emit(d, "}")


