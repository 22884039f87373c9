"""Tile IR -> HIP C++ (AMD builtins) / CUDA C++ (inline-PTX ``mma.sync``), from one generator.

The emitted source mirrors the simulator's model: a fragment is a struct of 32-bit registers
(``ts_r<N>``), loads and stores move raw element bits between global memory and register bit
fields, and element coordinates come from the layouts' index expressions
(:func:`tilesim.layouts.expr.expressions`), one unrolled statement per slot. An ``mma`` calls the
catalog row's builtin on AMD (operands reinterpreted with ``__builtin_bit_cast`` into the
builtin's vector types) and inline PTX on NVIDIA. Nothing else is chosen by name: the builtin,
its vector types and its immediates all come from the row. Output is deterministic.

AMD sources compile with any AMDGPU clang without HIP headers (``-nogpuinc``); NVIDIA sources
compile with NVRTC. ``reduce`` and ``convert`` go through a per-wave LDS scratch tile (write
through one layout, wave barrier, read rows/columns back) — simple, not fast. What the generator
does not emit (e.g. f16 arithmetic, 64-bit LDS elements) raises :class:`CodegenError` naming it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilesim.codegen.idents import c_identifiers, comment_text
from tilesim.errors import TilesimError
from tilesim.targets import get_target
from tilesim.ir.core import Block, LdsLayout, Op, Program, Value
from tilesim.ir.ops import (
    BINOPS,
    CODEC_HELPERS,
    ELEMENTWISE,
    FLOAT_CODECS,
    INT_MAX,
    REDUCE,
    Macro,
    emit_refusals,
    prelude_macros,
)
from tilesim.layouts.expr import expressions
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import lookup
from tilesim.matrix.catalog_nvidia import mma_sync_asm
from tilesim.matrix.dtypes import dtype
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.matrix.probe import c_type

__all__ = ["emit_hip", "CodegenError", "Emitted"]


class CodegenError(TilesimError):
    """The program uses something the code generator cannot emit (yet), or emits for no target."""


_UINT = {8: "ts_u8", 16: "ts_u16", 32: "ts_u32", 64: "ts_u64"}

_PRELUDE = """// ---- tilesim prelude: one source for AMD (HIP, clang) and NVIDIA (NVRTC) ----
typedef unsigned char ts_u8;
typedef unsigned short ts_u16;
typedef unsigned int ts_u32;
typedef unsigned long long ts_u64;
#if defined(__AMDGCN__) || defined(__AMDGPU__)
#define TS_AMD 1
#define TS_TID() ((int)__builtin_amdgcn_workitem_id_x())
#define TS_WG_X() ((int)__builtin_amdgcn_workgroup_id_x())
#define TS_WG_Y() ((int)__builtin_amdgcn_workgroup_id_y())
#define TS_WG_Z() ((int)__builtin_amdgcn_workgroup_id_z())
#define TS_BARRIER() do { __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup"); __builtin_amdgcn_s_barrier(); \\
                          __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup"); } while (0)
#define TS_SHARED __attribute__((shared))
#define TS_BOUNDS(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
static __attribute__((device)) inline float ts_f32(ts_u32 x) { return __builtin_bit_cast(float, x); }
static __attribute__((device)) inline ts_u32 ts_bits(float x) { return __builtin_bit_cast(ts_u32, x); }
static __attribute__((device)) inline float ts_f16_to_f32(ts_u32 x) { return (float)__builtin_bit_cast(_Float16, (ts_u16)x); }
static __attribute__((device)) inline ts_u32 ts_f32_to_f16(float x) { return __builtin_bit_cast(ts_u16, (_Float16)x); }
static __attribute__((device)) inline ts_u32 ts_lane_from(ts_u32 x, int src) { return (ts_u32)__builtin_amdgcn_ds_bpermute(src * 4, (int)x); }
#define TS_WAVE_SYNC() do { __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront"); __builtin_amdgcn_wave_barrier(); \
                            __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront"); } while (0)
@AMD_MACROS@
#else
#define TS_AMD 0
#define TS_TID() ((int)threadIdx.x)
#define TS_WG_X() ((int)blockIdx.x)
#define TS_WG_Y() ((int)blockIdx.y)
#define TS_WG_Z() ((int)blockIdx.z)
#define TS_BARRIER() __syncthreads()
#define TS_SHARED __shared__
#define TS_BOUNDS(n) __launch_bounds__(n)
static __device__ inline float ts_f32(ts_u32 x) { return __int_as_float((int)x); }
static __device__ inline ts_u32 ts_bits(float x) { return (ts_u32)__float_as_int(x); }
static __device__ inline float ts_f16_to_f32(ts_u32 x) { float f; unsigned short h = (unsigned short)x;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
static __device__ inline ts_u32 ts_f32_to_f16(float x) { unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x)); return h; }
static __device__ inline ts_u32 ts_lane_from(ts_u32 x, int src) { return __shfl_sync(0xffffffffu, x, src); }
#define TS_WAVE_SYNC() __syncwarp()
@CUDA_MACROS@
#endif
#define TS_DEV __attribute__((device))
static TS_DEV inline int ts_floordiv(int a, int b) { int q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static TS_DEV inline int ts_mod(int a, int b) { int r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
// ---- end prelude ----
"""


@dataclass
class Emitted:
    """HIP/CUDA source of one program, with what is needed to launch it."""

    program: Program
    source: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    tensors: tuple[str, ...]  # kernel parameter order
    lds_bytes: int
    builtins: tuple[str, ...] = field(default_factory=tuple)

    def __str__(self) -> str:
        return self.source


class _Gen:
    def __init__(self, prog: Program) -> None:
        self.p = prog
        self.t = get_target(prog.target)
        self.amd = self.t.vendor == "amd"
        self.lines: list[str] = []
        # user names: placeholders while the body is generated, then safe identifiers that avoid
        # every word the body uses (bind_user_names; tilesim/codegen/idents.py)
        self.kernel = "TS_USER_KERNEL"
        self.names = {t.name: f"TS_USER_T{i}" for i, t in enumerate(prog.tensors)}
        self.decls: dict[str, str] = {}
        self.structs: set[int] = set()
        self.vectors: set[str] = set()
        self.builtins: list[str] = []
        self.lds_off: dict[int, int] = {}
        self.lds_top = 0
        self.tables = 0
        self.helpers: set[str] = set()  # op-table helper functions the body calls (CODEC_HELPERS)
        self.macros: set[Macro] = set()  # op-table prelude macros the body calls

    def bind_user_names(self) -> None:
        """Replace the placeholders by C identifiers for the kernel and tensor names, chosen to avoid
        every identifier the generated body and declarations use, so no local can shadow a parameter
        however the generator names its locals."""
        words = set(re.findall(r"\b[A-Za-z_]\w*", "\n".join([*self.lines, *self.decls.values()]))) | {"lane", "wave"}
        kernel = c_identifiers([self.p.name], "k", taken=words)[self.p.name]
        names = c_identifiers([t.name for t in self.p.tensors], "t", taken=words | {kernel})
        subst = {self.kernel: kernel, **{self.names[n]: names[n] for n in names}}
        self.lines = [re.sub(r"\bTS_USER_(?:KERNEL|T\d+)\b", lambda m: subst[m.group(0)], ln) for ln in self.lines]
        self.kernel, self.names = kernel, names

    # ------------------------------------------------------------------ helpers
    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def sref(self, a: object) -> str:
        if isinstance(a, Value):
            return f"s{_int(a.id, 0, INT_MAX, 'value id')}"
        return str(_int(a, -INT_MAX - 1, INT_MAX, "integer constant"))

    def frag(self, v: Value) -> str:
        n = v.layout.registers_per_lane()
        self.structs.add(n)
        self.decls.setdefault(f"f{v.id}", f"ts_r{n} f{v.id};")
        return f"f{v.id}"

    def slot_exprs(self, lay: Layout, depth: int) -> tuple[dict[str, str], str | None]:
        """C expressions for row/col of slot ``s`` in this lane; tables when not linear."""
        if not lay.is_function():
            raise CodegenError("a fragment layout where one register slot holds several elements (a broadcast) "
                               "cannot be loaded or stored")
        ex = expressions(lay)
        out = {}
        valid = None
        for name in ("row", "col"):
            e = ex[name]
            if e.table is not None:
                self.tables += 1
                tname = f"ts_tab{self.tables}_{name}"
                vals = ", ".join(str(int(x)) for x in e.table)
                self.emit(depth, f"const short {tname}[{len(e.table)}] = {{{vals}}};")
                out[name] = f"{tname}[lane + {dict(lay.in_dims)['lane']} * s]"
                valid = f"({tname}[lane + {dict(lay.in_dims)['lane']} * s] >= 0)"
            else:
                out[name] = e.text.replace("slot", "s")
        return out, valid

    # ------------------------------------------------------------------ ops
    def block(self, b: Block, depth: int) -> None:
        for op in b.ops:
            fn = getattr(self, "op_" + op.kind, None)
            if fn is None:
                raise CodegenError(f"op {op.kind!r} is not emitted by the code generator yet "
                                   "(the simulator runs it; codegen support is planned)")
            fn(op, depth)

    def op_const(self, op: Op, d: int) -> None:
        self.decls[f"s{op.out.id}"] = f"int s{op.out.id};"
        self.emit(d, f"s{op.out.id} = {_int(op.attr('value'), -INT_MAX - 1, INT_MAX, 'const value')};")

    def op_tile_id(self, op: Op, d: int) -> None:
        self.decls[f"s{op.out.id}"] = f"int s{op.out.id};"
        self.emit(d, f"s{op.out.id} = TS_WG_{'XYZ'[_int(op.attr('axis'), 0, len(self.p.grid) - 1, 'tile_id axis')]}();")

    def op_wave_id(self, op: Op, d: int) -> None:
        self.decls[f"s{op.out.id}"] = f"int s{op.out.id};"
        self.emit(d, f"s{op.out.id} = wave;")

    def op_binop(self, op: Op, d: int) -> None:
        a, b = (self.sref(x) for x in op.args)
        expr = _row(BINOPS, op.attr("op"), "binop").c.format(a=a, b=b)  # the table's token, never the op's text
        self.decls[f"s{op.out.id}"] = f"int s{op.out.id};"
        self.emit(d, f"s{op.out.id} = {expr};")

    def op_zeros(self, op: Op, d: int) -> None:
        f = self.frag(op.out)
        self.emit(d, f"{f} = ts_r{op.out.layout.registers_per_lane()}{{}};")

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
    def op_mma(self, op: Op, d: int) -> None:
        row = lookup(op.attr("instr"), self.p.target)
        mods = dict(op.attr("modifiers") or ())
        a, b, c = (self.frag(x) for x in op.args)
        out = self.frag(op.out)
        nd = row.registers_for(self.p.wave_size)["D"]
        if nd != op.out.layout.registers_per_lane():
            raise CodegenError(f"{row.mnemonic} writes {nd} VGPRs of D; the declared accumulator spans "
                               f"{op.out.layout.registers_per_lane()}")
        if self.amd:
            self.emit(d, self._amd_call(row, (a, b, c), out, mods) + ";")
        else:
            self._ptx_call(row, (a, b, c), out, d)

    def _amd_call(self, row: MatrixInstruction, ops: tuple[str, str, str], out: str, mods: dict[str, int]) -> str:
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


def _slot_bits(f: str, bits: int) -> str:
    """Slot ``s``'s element bits in fragment ``f`` (elements packed low first in 32-bit registers)."""
    if bits == 32:
        return f"{f}.r[s]"
    per = 32 // bits
    return f"(({f}.r[s / {per}] >> ({bits} * (s % {per}))) & 0x{(1 << bits) - 1:x}u)"


def _slot_put(f: str, bits: int, value: str) -> str:
    """A statement storing ``value`` (element bits) as slot ``s`` of ``f`` (zeroed first when packed)."""
    if bits == 32:
        return f"{f}.r[s] = {value};"
    per = 32 // bits
    return f"{f}.r[s / {per}] |= ({value}) << ({bits} * (s % {per}));"


def _int(x: object, lo: int, hi: int, what: str) -> int:
    """An integer for the generated source, range-checked: never a bool, a float or text."""
    if not isinstance(x, (int, np.integer)) or isinstance(x, (bool, np.bool_)) or not lo <= int(x) <= hi:
        raise CodegenError(f"{what} {ascii(x)[:60]} is not an integer in {lo}..{hi}")
    return int(x)


def _row(table: Any, name: object, what: str) -> Any:
    """The op table's row for ``name``; the generator writes the row's template, never ``name``."""
    if not isinstance(name, str) or name not in table:
        raise CodegenError(f"{what} op {ascii(name)[:60]}; ops: {', '.join(table)}")
    return table[name]


def _f32_literal(x: float) -> str:
    """A C float constant for ``x``; raw f32 bits where the value is not finite in f32 (``inff`` and
    ``nanf`` are no C literals)."""
    with np.errstate(over="ignore"):
        f = np.float32(x)
    if np.isfinite(f):
        return f"{x!r}f"
    return f"ts_f32(0x{int(np.array(f, np.float32).view(np.uint32)):08x}u)"


def emit_hip(prog: Program) -> Emitted:
    """HIP (AMD) or CUDA (NVIDIA) C++ source of a program, ready for the offline compiler or NVRTC."""
    if not isinstance(prog, Program):
        raise CodegenError(f"emit_hip() takes a specialised Program, got {type(prog).__name__}")
    seen = [t.name for t in prog.tensors]
    dup = sorted({n for n in seen if seen.count(n) > 1})
    if dup:
        raise CodegenError(f"tensor names must be distinct; {dup[0]!r} names {seen.count(dup[0])} tensors")
    refused = emit_refusals(prog)  # the op table's rules: what check's paths report
    if refused:
        where, why = refused[0]
        raise CodegenError(f"{where}: {why}" + (f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""))
    g = _Gen(prog)
    g.block(prog.body, 1)
    g.bind_user_names()
    name = g.kernel
    params = []
    for tp in prog.tensors:
        bits = dtype(tp.dtype).reg_bits
        if bits not in _UINT:
            raise CodegenError(f"tensor {tp.name}: {tp.dtype} ({bits}-bit) elements are not emitted yet")
        params.append(f"{'' if tp.output else 'const '}{_UINT[bits]}* __restrict__ {g.names[tp.name]}")
    structs = [f"struct ts_r{n} {{ ts_u32 r[{n}]; }};" for n in sorted(g.structs)]
    vecs = sorted(g.vectors)
    scratch = getattr(g, "scratch", 0) * prog.waves_per_workgroup
    total = g.lds_top + scratch
    if total > g.t.lds_bytes:
        raise CodegenError(f"LDS {total} bytes (program {g.lds_top} + reduce/convert scratch {scratch}) exceeds "
                           f"{g.t.name}'s {g.t.lds_bytes}")
    lds = ([f"  TS_SHARED __attribute__((aligned(16))) ts_u8 ts_lds[{total}];"] if total else [])
    lds += [f"  enum {{ TS_SCRATCH = {g.lds_top} }};"] if scratch else []
    head = [
        f"// generated by tilesim from kernel {ascii(prog.name)}: target {comment_text(prog.target)}, "
        f"wave{prog.wave_size}, {prog.waves_per_workgroup} wave(s)/workgroup, grid {comment_text(prog.grid)}",
        f"// sizes: {comment_text(', '.join(f'{k}={v}' for k, v in prog.sizes))}",
        _PRELUDE.replace("@AMD_MACROS@\n", "".join(f"{m}\n" for m in prelude_macros("amd", g.macros)))
                .replace("@CUDA_MACROS@\n", "".join(f"{m}\n" for m in prelude_macros("nvidia", g.macros))).rstrip(),
        *sorted(g.helpers),
        *(["#if TS_AMD", *vecs, "#endif"] if vecs else []),
        *structs,
        "",
        # the real workgroup size: without it clang assumes 1024 threads and caps VGPRs (spills)
        f'extern "C" __attribute__((global)) TS_BOUNDS({prog.waves_per_workgroup * prog.wave_size}) '
        f'void {name}({", ".join(params)}) {{',
        f"  const int lane = TS_TID() % {prog.wave_size}, wave = TS_TID() / {prog.wave_size};",
        "  (void)lane; (void)wave;",
        *lds,
        *[f"  {d}" for d in sorted(g.decls.values(), key=lambda s: (s[0] != "i", int(re.findall(r'[fs](\d+)', s)[0])))],
    ]
    src = "\n".join(head + g.lines + ["}", ""])
    grid = tuple(prog.grid) + (1,) * (3 - len(prog.grid))
    return Emitted(prog, src, name, grid[:3], (prog.waves_per_workgroup * prog.wave_size, 1, 1),  # type: ignore[arg-type]
                   tuple(g.names[t.name] for t in prog.tensors), total, tuple(dict.fromkeys(g.builtins)))
