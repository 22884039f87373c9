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
through one layout, wave barrier, read rows/columns back) — simple, not fast. Every element type
is emitted (casts, arithmetic, typed memory moves: tilesim/codegen/element_ops.py, with the C
codecs of tilesim/codegen/elements.py); what remains refused (an instruction without a builtin for
the wave size, a broadcast layout moved through memory) raises :class:`CodegenError` naming it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tilesim.codegen.common import CodegenError, _int, _row
from tilesim.codegen.element_ops import mem_ctype
from tilesim.codegen.compute import ComputeOps
from tilesim.codegen.idents import c_identifiers, comment_text
from tilesim.codegen.mma_forms import stack_blocks
from tilesim.codegen.memory import MemoryOps
from tilesim.ir.core import Block, Op, Program, Value
from tilesim.ir.ops import BINOPS, INT_MAX, Macro, emit_refusals, prelude_macros
from tilesim.layouts.expr import expressions
from tilesim.layouts.layout import Layout
from tilesim.matrix.dtypes import dtype
from tilesim.targets import get_target


__all__ = ["emit_hip", "CodegenError", "Emitted"]


_PRELUDE = """// ---- tilesim prelude: one source for AMD (HIP, clang) and NVIDIA (NVRTC) ----
typedef unsigned char ts_u8;
typedef unsigned short ts_u16;
typedef unsigned int ts_u32;
typedef unsigned long long ts_u64;
#if defined(__AMDGCN__) || defined(__AMDGPU__)
#define TS_AMD 1
#pragma clang fp contract(off)  /* each op rounded on its own, as the simulator does: HIP fuses a*b+c by default */
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
/* the asm keeps clang from fusing the product that x came from into the conversion (v_fma_mixlo_f16: one
   rounding where the program, and the simulator, round twice) */
static __attribute__((device)) inline ts_u32 ts_f32_to_f16(float x) { __asm__ volatile("" : "+v"(x));
                                                                       return __builtin_bit_cast(ts_u16, (_Float16)x); }
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
  if ((h & 0x7fffu) > 0x7c00u)  /* NaN: cvt gives the canonical +NaN; keep sign and payload, quieted, as the model */
    return ts_f32(((ts_u32)(h & 0x8000u) << 16) | 0x7fc00000u | ((ts_u32)(h & 0x3ffu) << 13));
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
static __device__ inline ts_u32 ts_f32_to_f16(float x) { unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x)); return h; }
static __device__ inline ts_u32 ts_lane_from(ts_u32 x, int src) { return __shfl_sync(0xffffffffu, x, src); }
#define TS_WAVE_SYNC() __syncwarp()
@CUDA_MACROS@
#endif
#if TS_AMD  // wide memory accesses (tilesim/codegen/wide.py): members .x .y .z .w, low register first
typedef ts_u32 ts_v2 __attribute__((ext_vector_type(2)));
typedef ts_u32 ts_v4 __attribute__((ext_vector_type(4)));
#else
typedef uint2 ts_v2;
typedef uint4 ts_v4;
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


class _Gen(MemoryOps, ComputeOps):
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
        self.helpers: set[str] = set()  # C helper functions the body calls (codegen/elements.py, element_ops.py)
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
        ex = expressions(stack_blocks(lay))  # multi-block: block b is rows b*M... of the tile, as the simulator
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
                raise CodegenError(f"op kind {op.kind!r} is not emitted by the code generator; emitted kinds: "
                                   f"{', '.join(sorted(k[3:] for k in dir(self) if k.startswith('op_')))}")
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
        bits = dtype(tp.dtype).reg_bits  # 4/6-bit elements: a packed byte stream (dtypes.to_memory)
        params.append(f"{'' if tp.output else 'const '}{mem_ctype(bits)}* __restrict__ {g.names[tp.name]}")
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
