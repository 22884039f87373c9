"""Element-typed ops in generated C, for every element type the simulator takes: ``cast``,
``elementwise``, ``reduce``, ``convert``, and the typed moves of ``load``/``store`` (a fragment of
another type than its tensor: a cast on the way) and ``lds_store``/``lds_load`` (likewise for the
buffer's type), including 4- and 6-bit tensors packed in memory and 64-bit elements.

Each function takes the generator (``tilesim.codegen.hip._Gen``: ``frag``, ``emit``, ``sref``,
``slot_exprs``, ``scratch_tile``, ``helpers``, ``macros``) and writes C from the op table's
templates (``tilesim.ir.ops``) and the element codecs (``tilesim.codegen.elements``) only — never
text from the program. The rules are the simulator's: see ``tilesim.matrix.numerics.cast`` and
the module docstring of ``tilesim.codegen.elements``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tilesim.codegen.elements import bits_expr, cast_expr, element, helpers_for, int_range
from tilesim.ir.core import Op, Value
from tilesim.ir.ops import ELEMENTWISE, REDUCE
from tilesim.matrix.dtypes import dtype, encode_bits
from tilesim.matrix.numerics import quantize

__all__ = ["slot_get", "slot_put", "zero_bits", "mem_ctype", "emit_cast", "emit_elementwise", "emit_reduce",
           "exact_constant",
           "emit_convert", "emit_global_typed", "emit_lds", "broadcast_exprs", "SLOT_HELPERS", "MEMORY_HELPERS"]

# slot s of a fragment when its elements straddle registers (6-bit: bits [6s, 6s+6) of the tuple)
SLOT_HELPERS = (
    "static TS_DEV inline ts_u32 ts_get_bits(const ts_u32* r, int off, int w) {\n"
    "  const int v = off >> 5, lo = off & 31; ts_u64 x = r[v] >> lo;\n"
    "  if (lo + w > 32) x |= (ts_u64)r[v + 1] << (32 - lo);\n"
    "  return (ts_u32)x & ((1u << w) - 1u); }\n"
    "static TS_DEV inline void ts_or_bits(ts_u32* r, int off, int w, ts_u32 x) {\n"
    "  const int v = off >> 5, lo = off & 31; x &= (1u << w) - 1u; r[v] |= x << lo;\n"
    "  if (lo + w > 32) r[v + 1] |= x >> (32 - lo); }\n")

# 4- and 6-bit tensors in memory: a little-endian bit stream (tilesim.matrix.dtypes.to_memory), read
# by bytes; written by atomic and/or on the 32-bit words an element touches (neighbouring elements
# of one word belong to other lanes; the buffer is padded to whole words)
MEMORY_HELPERS = (
    "static TS_DEV inline ts_u32 ts_ld_bits(const ts_u8* p, long long bit, int w) {\n"
    "  const long long b = bit >> 3; const int sh = (int)(bit & 7);\n"
    "  ts_u32 x = p[b]; if (sh + w > 8) x |= (ts_u32)p[b + 1] << 8;\n"
    "  return (x >> sh) & ((1u << w) - 1u); }\n"
    "static TS_DEV inline void ts_st_bits(ts_u8* p, long long bit, int w, ts_u32 x) {\n"
    "  ts_u32* q = (ts_u32*)p + (bit >> 5); const int lo = (int)(bit & 31); const ts_u32 m = (1u << w) - 1u;\n"
    "  x &= m;\n"
    "#if TS_AMD\n"
    "  __hip_atomic_fetch_and(q, ~(m << lo), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);\n"
    "  __hip_atomic_fetch_or(q, x << lo, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);\n"
    "  if (lo + w > 32) { __hip_atomic_fetch_and(q + 1, ~(m >> (32 - lo)), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);\n"
    "                     __hip_atomic_fetch_or(q + 1, x >> (32 - lo), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT); }\n"
    "#else\n"
    "  atomicAnd(q, ~(m << lo)); atomicOr(q, x << lo);\n"
    "  if (lo + w > 32) { atomicAnd(q + 1, ~(m >> (32 - lo))); atomicOr(q + 1, x >> (32 - lo)); }\n"
    "#endif\n"
    "}\n")

_UINT = {8: "ts_u8", 16: "ts_u16", 32: "ts_u32", 64: "ts_u64"}


def mem_ctype(bits: int) -> str:
    """C element type of a tensor's buffer (bytes for packed 4/6-bit elements)."""
    return _UINT.get(bits, "ts_u8")


def slot_get(g: Any, f: str, bits: int) -> str:
    """Slot ``s``'s element bits in fragment ``f`` (``ts_u64`` for 64-bit elements)."""
    if bits == 64:
        return f"(((ts_u64){f}.r[2 * s + 1] << 32) | {f}.r[2 * s])"
    if bits == 32:
        return f"{f}.r[s]"
    if 32 % bits == 0:
        per = 32 // bits
        return f"(({f}.r[s / {per}] >> ({bits} * (s % {per}))) & 0x{(1 << bits) - 1:x}u)"
    g.helpers.add(SLOT_HELPERS)
    return f"ts_get_bits({f}.r, {bits} * s, {bits})"


def slot_put(g: Any, f: str, bits: int, value: str) -> str:
    """A statement storing element bits ``value`` as slot ``s`` of ``f`` (packed slots are or-ed
    in: the fragment is zeroed first)."""
    if bits == 64:
        return f"{{ const ts_u64 y = {value}; {f}.r[2 * s] = (ts_u32)y; {f}.r[2 * s + 1] = (ts_u32)(y >> 32); }}"
    if bits == 32:
        return f"{f}.r[s] = {value};"
    if 32 % bits == 0:
        per = 32 // bits
        return f"{f}.r[s / {per}] |= ({value}) << ({bits} * (s % {per}));"
    g.helpers.add(SLOT_HELPERS)
    return f"ts_or_bits({f}.r, {bits} * s, {bits}, {value});"


def zero_bits(dt: str) -> str:
    """Bits of the value 0 in ``dt`` (what a masked load reads; e8m0 has no zero: its NaN)."""
    return f"0x{int(encode_bits(np.array([0.0]), dt)[0]):x}u"


def use_helpers(g: Any, text: str) -> str:
    for h in helpers_for(text):
        g.helpers.add(h)
    return text


def convert_bits(g: Any, bits: str, src: str, dst: str) -> str:
    """``bits`` of ``src`` as ``dst`` bits: unchanged for one type, else a cast."""
    return bits if src == dst else use_helpers(g, cast_expr(bits, src, dst))


# ---------------------------------------------------------------------------- cast
def emit_cast(g: Any, op: Op, d: int) -> None:
    x = op.args[0]
    src, dst = x.dtype, op.out.dtype
    f, fx = g.frag(op.out), g.frag(x)
    slots = dict(x.layout.in_dims)["slot"]
    g.emit(d, f"{f} = ts_r{op.out.layout.registers_per_lane()}{{}};")
    y = convert_bits(g, slot_get(g, fx, dtype(src).reg_bits), src, dst)
    g.emit(d, "#pragma unroll")
    g.emit(d, f"for (int s = 0; s < {slots}; ++s) {slot_put(g, f, dtype(dst).reg_bits, y)}")


# ---------------------------------------------------------------------------- elementwise
def _literal(x: float, domain: str) -> str:
    x = float(x) if domain != "int" else x
    if domain == "int":
        return f"{int(x)}LL"
    if domain == "double":
        return repr(float(x)) if np.isfinite(x) else f"__builtin_bit_cast(double, 0x{int(np.float64(x).view(np.uint64)):016x}ull)"
    with np.errstate(over="ignore"):
        f = np.float32(x)
    return f"{x!r}f" if np.isfinite(f) else f"ts_f32(0x{int(np.array(f, np.float32).view(np.uint32)):08x}u)"


def exact_constant(c: Any, dt: str) -> bool:
    """Whether the number ``c`` is exactly a value of the float type ``dt``. Only then does an op of a
    ``dt`` element and ``c`` in C's float give the simulator's answer (the op in float64, rounded once
    to ``dt``): ``x * 0.3f`` multiplies by another number than 0.3, and a float result of an f16
    element is rounded twice."""
    with np.errstate(all="ignore"):
        v = np.array([float(c)], np.float64)
        return bool(np.array_equal(np.asarray(quantize(v, dt), np.float64), v, equal_nan=True))


def emit_elementwise(g: Any, op: Op, d: int) -> None:
    """Elementwise on any element type, slot by slot: decode, compute in the type's domain (float,
    double, long long), encode once. On integer elements a result numpy computes as a float (``/``,
    exp, a float constant) is computed in double and becomes the integer type as a cast does."""
    x, y = op.args
    dt = op.out.dtype
    el = element(dt)
    row = ELEMENTWISE[op.attr("op")]
    f, fx = g.frag(op.out), g.frag(x)
    bits = el.bits
    float_const = isinstance(y, (float, np.floating))
    dom = el.domain
    if dom == "int" and (not row.c_int or float_const):
        dom = "double"  # numpy's result is a float here
    if dom == "float" and y is not None and not isinstance(y, Value) and not exact_constant(y, dt):
        dom = "double"  # the simulator's float64 op and one rounding (exact_constant)
    cast_to = {"float": "float", "double": "double", "int": "long long"}[dom]

    def val(v: Value | None, fr: str) -> str:
        e = el.decode.format(slot_get(g, fr, bits))
        return e if dom == el.domain else f"(({cast_to}){e})"

    a = val(x, fx)
    if isinstance(y, Value) and y.kind == "frag":
        b = val(y, g.frag(y))
    elif isinstance(y, Value):
        b = f"(({cast_to}){g.sref(y)})"
    else:
        b = _literal(0 if y is None else y, dom)
    if dom == "int":
        lo, hi = int_range(dt)
        expr = use_helpers(g, row.c_int.format(a=a, b=b, lo=f"{lo}LL", hi=f"{hi}LL"))
    elif dom == "double":
        expr = (row.c_double or row.c).format(a=a, b=b)
        g.macros.update([m for m in ([row.macro64] if row.c_double else [row.macro]) if m])
    else:
        expr = row.c.format(a=a, b=b)
        g.macros.update([row.macro] if row.macro else [])
    if dom == "double" and row.macro64 is not None and row.c_double:
        use_helpers(g, row.macro64.amd)  # ts_exp64 on AMD
    out = use_helpers(g, bits_expr(f"({expr})", dom, dt))
    g.emit(d, f"{f} = ts_r{op.out.layout.registers_per_lane()}{{}};")
    g.emit(d, "#pragma unroll")
    g.emit(d, f"for (int s = 0; s < {dict(op.out.layout.in_dims)['slot']}; ++s) {slot_put(g, f, bits, out)}")


# ---------------------------------------------------------------------------- reduce
def emit_reduce(g: Any, op: Op, d: int) -> None:
    """Reduce through the per-wave scratch tile: each element decoded to its domain's type (float;
    double for f64; long long for integers, which wrap as numpy's int64 sums do), combined along
    the row or column in order, the result encoded once into every slot of the row/column."""
    x = op.args[0]
    el = element(x.dtype)
    f, fx = g.frag(op.out), g.frag(x)
    ctype = el.ctype
    rows, cols, sc = g.scratch_tile(x.layout, 8 if ctype != "float" else 4, ctype)
    red = REDUCE[op.attr("op")]
    # a float sum in double, rounded once at the end: the simulator's numpy sum in float64 (a float
    # accumulator rounds at every add: 640 of 1024 elements of a 16-wide row sum differed by an ulp)
    dom = "double" if el.domain == "float" and op.attr("op") == "sum" else el.domain
    acc_t = "double" if dom == "double" else ctype
    if el.domain == "int":
        comb = red.c_int
    elif dom == "double":
        comb = red.c_double or red.c
        g.macros.update([m for m in ([red.macro64] if red.c_double else [red.macro]) if m])
    else:
        comb = red.c
        g.macros.update([red.macro] if red.macro else [])
    along_col = op.attr("axis") == "col"
    bits = el.bits
    g.emit(d, f"{f} = ts_r{op.out.layout.registers_per_lane()}{{}};")
    g.emit(d, "{")
    ex, valid = g.slot_exprs(x.layout, d + 1)
    slots = dict(x.layout.in_dims)["slot"]
    cond = f"if ({valid}) " if valid else ""
    dec = use_helpers(g, el.decode.format(slot_get(g, fx, bits)))
    g.emit(d + 1, "#pragma unroll")
    g.emit(d + 1, f"for (int s = 0; s < {slots}; ++s) {cond}{sc}[({ex['row']}) * {cols} + ({ex['col']})] = {dec};")
    g.emit(d + 1, "TS_WAVE_SYNC();")
    n, idx = (cols, f"r * {cols} + t") if along_col else (rows, f"t * {cols} + c")
    enc = use_helpers(g, bits_expr("a", dom, x.dtype))
    for slot in range(slots):  # unrolled here: a loop with an inner loop keeps f.r[s] dynamic (scratch)
        g.emit(d + 1, f"{{ const int s = {slot};")
        g.emit(d + 2, f"const int r = {ex['row']}, c = {ex['col']}; (void)r; (void)c;")
        g.emit(d + 2, f"{acc_t} a = {sc}[{idx.replace('t', '0')}];")
        g.emit(d + 2, f"for (int t = 1; t < {n}; ++t) {{ const {acc_t} b = {sc}[{idx}]; a = {comb}; }}")
        g.emit(d + 2, f"{slot_put(g, f, bits, enc)} }}")
    g.emit(d + 1, "TS_WAVE_SYNC();")
    g.emit(d, "}")


# ---------------------------------------------------------------------------- convert
def emit_convert(g: Any, op: Op, d: int) -> None:
    """convert: each element's bits through the per-wave scratch tile (32-bit words; 64-bit words for
    64-bit elements), read back through the new layout — bits moved, never converted."""
    x = op.args[0]
    bits = dtype(x.dtype).reg_bits
    f, fx = g.frag(op.out), g.frag(x)
    word = "ts_u64" if bits == 64 else "ts_u32"
    rows, cols, sc = g.scratch_tile(x.layout, 8 if bits == 64 else 4, word)
    g.emit(d, f"{f} = ts_r{op.out.layout.registers_per_lane()}{{}};")
    g.emit(d, "{")
    ex, valid = g.slot_exprs(x.layout, d + 1)
    cond = f"if ({valid}) " if valid else ""
    g.emit(d + 1, "#pragma unroll")
    g.emit(d + 1, f"for (int s = 0; s < {dict(x.layout.in_dims)['slot']}; ++s) "
                  f"{cond}{sc}[({ex['row']}) * {cols} + ({ex['col']})] = {slot_get(g, fx, bits)};")
    g.emit(d + 1, "TS_WAVE_SYNC();")
    ex, valid = g.slot_exprs(op.out.layout, d + 1)
    g.emit(d + 1, "#pragma unroll")
    g.emit(d + 1, f"for (int s = 0; s < {dict(op.out.layout.in_dims)['slot']}; ++s) "
                  f"{slot_put(g, f, bits, sc + '[(' + ex['row'] + ') * ' + str(cols) + ' + (' + ex['col'] + ')]')}")
    g.emit(d + 1, "TS_WAVE_SYNC();")
    g.emit(d, "}")


# ---------------------------------------------------------------------------- typed memory moves
def broadcast_exprs(ex: dict[str, str], broadcast: str | None) -> dict[str, str]:
    """A vector load (ops.BROADCASTS): the fragment's row (``"row"``) or column index reads 0."""
    if not broadcast:
        return ex
    return {**ex, ("row" if broadcast == "row" else "col"): "0"}


def emit_global_typed(g: Any, op: Op, v: Value, row0: object, col0: object, d: int, store: bool) -> None:
    """load/store of a fragment whose type differs from its tensor's (a cast on the way, as the
    simulator does), of 4/6-bit tensors (packed bit stream), or of types whose masked value is
    not bits 0 (e8m0): one slot at a time."""
    tp = g.p.tensor(op.attr("tensor"))
    arg = g.names[tp.name]
    fb, tb = dtype(v.dtype).reg_bits, dtype(tp.dtype).reg_bits
    f = g.frag(v)
    rows, cols = tp.shape
    g.emit(d, "{")
    ex, valid = g.slot_exprs(v.layout, d + 1)
    ex = broadcast_exprs(ex, None if store else op.attr("broadcast"))
    slots = dict(v.layout.in_dims)["slot"]
    rr, cc = (ex["col"], ex["row"]) if op.attr("transpose") else (ex["row"], ex["col"])
    g.emit(d + 1, "#pragma unroll")
    g.emit(d + 1, f"for (int s = 0; s < {slots}; ++s) {{")
    g.emit(d + 2, f"const int gr = {g.sref(row0)} + ({rr}), gc = {g.sref(col0)} + ({cc});")
    ok = f"gr >= 0 && gr < {rows} && gc >= 0 && gc < {cols}" + (f" && {valid}" if valid else "")
    idx = f"((long long)gr * {cols} + gc)"
    if tb not in _UINT:
        g.helpers.add(MEMORY_HELPERS)
    if store:
        val = convert_bits(g, slot_get(g, f, fb), v.dtype, tp.dtype)
        if tb in _UINT:
            g.emit(d + 2, f"if ({ok}) {arg}[{idx}] = ({_UINT[tb]})({val});")
        else:
            g.emit(d + 2, f"if ({ok}) ts_st_bits({arg}, {idx} * {tb}, {tb}, (ts_u32)({val}));")
    else:
        raw = f"{arg}[{idx}]" if tb in _UINT else f"ts_ld_bits({arg}, {idx} * {tb}, {tb})"
        word = "ts_u64" if tb == 64 else "ts_u32"
        put = slot_put(g, f, fb, convert_bits(g, "x", tp.dtype, v.dtype))
        g.emit(d + 2, f"if ({ok}) {{ const {word} x = ({word}){raw}; {put} }}")
        g.emit(d + 2, f"else {{ {slot_put(g, f, fb, zero_bits(v.dtype))} }}")
    g.emit(d + 1, "}")
    g.emit(d, "}")


def emit_lds(g: Any, op: Op, buf: Value, v: Value, row0: object, col0: object, d: int, store: bool) -> None:
    """lds_store/lds_load of any element type into a buffer of any type: the buffer holds its own
    type's bits (one element per ``elem_bytes``; 4/6-bit elements a byte each), a fragment of
    another type is cast on the way, as the simulator does."""
    lay = buf.lds
    fb = dtype(v.dtype).reg_bits
    unit = _UINT[lay.elem_bytes * 8]
    f = g.frag(v)
    g.emit(d, "{")
    ex, valid = g.slot_exprs(v.layout, d + 1)
    slots = dict(v.layout.in_dims)["slot"]
    g.emit(d + 1, "#pragma unroll")
    g.emit(d + 1, f"for (int s = 0; s < {slots}; ++s) {{")
    g.emit(d + 2, f"const int r = {g.sref(row0)} + ({ex['row']}), c = {g.sref(col0)} + ({ex['col']});")
    g.emit(d + 2, f"const int off = {g.lds_off[buf.id]} + (r * {lay.cols + lay.pad} + "
                  f"(c ^ (((r / {lay.per_phase}) % {lay.max_phase}) * {lay.vec}))) * {lay.elem_bytes};")
    p = f"(({unit}*)(ts_lds + off))"
    cond = f"if ({valid}) " if valid else ""
    if store:
        g.emit(d + 2, f"{cond}*{p} = ({unit})({convert_bits(g, slot_get(g, f, fb), v.dtype, buf.dtype)});")
    else:
        word = "ts_u64" if unit == "ts_u64" else "ts_u32"
        put = slot_put(g, f, fb, convert_bits(g, "x", buf.dtype, v.dtype))
        g.emit(d + 2, f"{cond}{{ const {word} x = *{p}; {put} }}")
    g.emit(d + 1, "}")
    g.emit(d, "}")
