"""Every element type in generated C: how an element's bits become a value the kernel computes
with, how a value becomes bits again, and how a ``cast`` goes from one type to another — the
simulator's rules (``tilesim.matrix.numerics.cast``/``quantize``, ``tilesim.matrix.dtypes``)
written as C, for AMD (clang, no headers) and NVIDIA (NVRTC) alike.

Three compute domains:

* ``float`` — f32 and every narrower float (xf32, tf32, f16, bf16, fp8 OCP/FNUZ, fp6, bf6, fp4,
  e8m0): each decodes to f32 exactly; a result is rounded once to the element type. The narrow
  formats' encoders are integer code written from the format rows below and checked bit for bit
  against ml_dtypes (the simulator's codec) over every pattern and every f32 exponent
  (``tests/test_emit_dtypes.py`` compiles this text for the host and runs it);
* ``double`` — f64;
* ``int`` — i32, i8, u8, i4, u4 as ``long long`` (integer arithmetic wraps as the simulator's
  int64 arithmetic does, then keeps the element's low bits).

A float reaching an integer element saturates (toward zero, NaN to 0) — ``numerics.cast``. A
double reaching a narrow float is first rounded to f32 *to odd* and then to nearest even, exactly
as ``tilesim.matrix.dtypes.encode`` does (one correct rounding for formats of at most 22 bits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tilesim.matrix.dtypes import DTYPES, dtype

__all__ = ["Element", "element", "cast_expr", "value_expr", "bits_expr", "HELPERS", "helpers_for", "int_range", "DOMAIN_CTYPE"]

DOMAIN_CTYPE = {"float": "float", "double": "double", "int": "long long"}


@dataclass(frozen=True)
class _Small:
    """A narrow float format: exponent/mantissa bits, bias, and what overflow and NaN become
    (ml_dtypes' answers, which the simulator uses; cited per row in tilesim/matrix/dtypes.py)."""

    name: str
    ebits: int
    mbits: int
    bias: int
    top: str  # "ieee": Inf/NaN at the top exponent; "e4m3fn": only S.1111.111 is NaN; "fnuz": 0x80 NaN; "finite"
    overflow: str  # "inf" | "nan" | "fnuz" (0x80) | "sat" (±max)
    nan: tuple[int, int]  # pattern of a NaN of sign + / - (fp6/fp4 have none: ml_dtypes gives -0 / +0)
    max_code: int  # largest finite magnitude pattern


_SMALL = {s.name: s for s in (
    _Small("fp8_ocp", 4, 3, 7, "e4m3fn", "nan", (0x7F, 0xFF), 0x7E),
    _Small("bf8_ocp", 5, 2, 15, "ieee", "inf", (0x7E, 0xFE), 0x7B),
    _Small("fp8_fnuz", 4, 3, 8, "fnuz", "fnuz", (0x80, 0x80), 0x7F),
    _Small("bf8_fnuz", 5, 2, 16, "fnuz", "fnuz", (0x80, 0x80), 0x7F),
    _Small("fp6", 2, 3, 1, "finite", "sat", (0x20, 0x00), 0x1F),
    _Small("bf6", 3, 2, 3, "finite", "sat", (0x20, 0x00), 0x1F),
    _Small("fp4", 2, 1, 1, "finite", "sat", (0x8, 0x0), 0x7),
)}


def _small_helpers(f: _Small) -> str:
    sb = f.ebits + f.mbits  # the sign bit's position
    emin = 1 - f.bias
    sub_scale = (127 + emin - f.mbits) << 23  # 2**(emin - mbits): the value of mantissa 1 at exponent 0
    if f.top == "e4m3fn":
        nan_test = f"(x & 0x{(1 << sb) - 1:x}u) == 0x{(1 << sb) - 1:x}u"
    elif f.top == "fnuz":
        nan_test = f"x == 0x{1 << sb:x}u"
    elif f.top == "ieee":
        nan_test = f"e == {(1 << f.ebits) - 1}"
    else:
        nan_test = "0"
    inf = f"if (e == {(1 << f.ebits) - 1} && m == 0u) return ts_f32(s | 0x7f800000u);\n  " if f.top == "ieee" else ""
    over = {"inf": f"0x{((1 << f.ebits) - 1) << f.mbits:x}u | sgn", "nan": f"0x{f.nan[0]:x}u | sgn",
            "fnuz": f"0x{1 << sb:x}u", "sat": f"0x{f.max_code:x}u | sgn"}[f.overflow]
    zero = "code == 0u ? 0u : " if f.top == "fnuz" else ""  # FNUZ has no -0
    n = f.name
    return (
        f"static TS_DEV inline float ts_dec_{n}(ts_u32 x) {{\n"
        f"  const ts_u32 s = ((x >> {sb}) & 1u) << 31, e = (x >> {f.mbits}) & {(1 << f.ebits) - 1}u, "
        f"m = x & {(1 << f.mbits) - 1}u;\n"
        f"  {inf}if ({nan_test}) return ts_f32(s | 0x7fc00000u);\n"
        f"  if (e == 0u) {{ const float v = (float)m * ts_f32(0x{sub_scale:08x}u); return s ? -v : v; }}\n"
        f"  return ts_f32(s | ((e + {127 - f.bias}u) << 23) | (m << {23 - f.mbits}));\n}}\n"
        f"static TS_DEV inline ts_u32 ts_enc_{n}(float f) {{\n"
        f"  const ts_u32 x = ts_bits(f), a = x & 0x7fffffffu, sgn = (x >> 31) << {sb};\n"
        f"  if (a > 0x7f800000u) return (x >> 31) ? 0x{f.nan[1]:x}u : 0x{f.nan[0]:x}u;\n"
        # f32 exponent (subnormals at -126 without the hidden bit); shift to the format's quantum
        f"  const int e = a < 0x00800000u ? -126 : (int)(a >> 23) - 127;\n"
        f"  const ts_u32 mant = (a & 0x7fffffu) | (a < 0x00800000u ? 0u : 0x800000u);\n"
        f"  int sh = {23 - f.mbits} + (e < {emin} ? {emin} - e : 0); if (sh > 25) sh = 25;\n"
        f"  const ts_u32 r = (mant + (1u << (sh - 1)) - 1u + ((mant >> sh) & 1u)) >> sh;  // to nearest even\n"
        f"  const ts_u32 code = e < {emin} ? r : ((ts_u32)(e - {emin - 1}) << {f.mbits}) + r - {1 << f.mbits}u;\n"
        f"  if (code > 0x{f.max_code:x}u) return {over};\n"
        f"  return {zero}(code | sgn);\n}}\n")


# e8m0 (block scales): no sign, no zero; 0xff is NaN; a positive f32 rounds half up on its mantissa
# (subnormals: at most 2**-127 give 2**-127, above it 2**-126) — ml_dtypes' float8_e8m0fnu answers
_E8M0 = (
    "static TS_DEV inline float ts_dec_e8m0(ts_u32 x) {\n"
    "  x &= 0xffu; return x == 0xffu ? ts_f32(0x7fc00000u) : (x == 0u ? ts_f32(0x00400000u) : ts_f32(x << 23)); }\n"
    "static TS_DEV inline ts_u32 ts_enc_e8m0(float f) {\n"
    "  const ts_u32 a = ts_bits(f);\n"
    "  if (a == 0u || a >= 0x7f800000u) return 0xffu;  // zero, negative, Inf, NaN\n"
    "  if (a < 0x00800000u) return a <= 0x00400000u ? 0u : 1u;\n"
    "  const ts_u32 c = (a >> 23) + ((a & 0x7fffffu) >= 0x400000u ? 1u : 0u);\n"
    "  return c >= 0xffu ? 0xffu : c; }\n")

# bf16: the high half of an f32; round to nearest even (+0x7fff plus the kept LSB); a NaN is the
# quiet NaN of its sign (ml_dtypes' answer)
_BF16 = (
    "static TS_DEV inline float ts_bf16_to_f32(ts_u32 x) { return ts_f32((x & 0xffffu) << 16); }\n"
    "static TS_DEV inline ts_u32 ts_f32_to_bf16(float f) { const ts_u32 x = ts_bits(f);\n"
    "  return ((x & 0x7fffffffu) > 0x7f800000u ? ((x >> 16) & 0x8000u) | 0x7fc0u : (x + 0x7fffu + ((x >> 16) & 1u)) >> 16) "
    "& 0xffffu; }\n")

# double -> float rounded to odd (tilesim.matrix.dtypes._f32_round_to_odd): exact values stay;
# others become the f32 neighbour toward zero with its last bit set
_ODD = (
    "static TS_DEV inline float ts_f64_to_f32_odd(double d) {\n"
    "  const float t = (float)d; const double back = (double)t; ts_u32 b = ts_bits(t);\n"
    "  if (d == d && back != d && d - d == 0.0) {  // finite and inexact\n"
    "    if (d > 0.0 ? back > d : back < d) b -= 1u;\n"
    "    b |= 1u; }\n"
    "  return ts_f32(b); }\n")

# a float to an integer element: toward zero, saturated, NaN to 0 (tilesim.matrix.numerics.cast). The
# integer types are at most 32 bits, so inside the range (int) truncates; f32 values never widen to
# f64 (f64 arithmetic is slow on RDNA and absent from the ISA emulator)
_SAT = ("static TS_DEV inline long long ts_sat(double x, long long lo, long long hi) {\n"
        "  return x != x ? 0 : (x <= (double)lo ? lo : (x >= (double)hi ? hi : (long long)x)); }\n")
_SAT_F = ("static TS_DEV inline long long ts_sat_f(float x, long long lo, long long hi) {\n"
          "  return x != x ? 0 : (x <= (float)lo ? lo : (x >= (float)hi ? hi : (long long)(int)x)); }\n")
# an integer element (|v| <= 2**31) to f32 rounded to odd, with 32-bit integer and f32 operations only
_I2F_ODD = (
    "static TS_DEV inline float ts_i2f_odd(long long v) {\n"
    "  const ts_u32 a = (ts_u32)(v < 0 ? -v : v); const float f = (float)a; const ts_u32 back = (ts_u32)f;\n"
    "  ts_u32 b = ts_bits(f);\n"
    "  if (back != a) { if (back > a) b -= 1u; b |= 1u; }\n"
    "  return ts_f32(b | (v < 0 ? 0x80000000u : 0u)); }\n")

# e**x for doubles on AMD, where clang has no f64 exp without the device library (-nogpulib): 2**k
# times a degree-13 Taylor polynomial on |r| <= ln2/2 (Cody-Waite reduction), within 2 ulps of the
# correctly rounded value (tests/test_emit_codecs.py); exp is not bit-exact on any type or vendor
_EXP64 = (
    "static TS_DEV inline double ts_exp64(double x) {\n"
    "  if (x != x) return x;\n"
    "  if (x > 709.782712893384) return __builtin_bit_cast(double, 0x7ff0000000000000ull);\n"
    "  if (x < -745.2) return 0.0;\n"
    "  const double k = __builtin_rint(x * 1.4426950408889634);\n"
    "  const double r = (x - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;\n"
    "  double p = 1.0 / 6227020800.0;\n"
    "  const double inv[13] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0,\n"
    "                          1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0};\n"
    "  for (int i = 0; i < 13; ++i) p = p * r + inv[i];\n"
    "  const int ki = (int)k, h = ki / 2;  // 2**ki as two factors: each a normal double\n"
    "  return p * __builtin_bit_cast(double, (ts_u64)(h + 1023) << 52)\n"
    "           * __builtin_bit_cast(double, (ts_u64)(ki - h + 1023) << 52); }\n")

# integer true division as numpy's float quotient becomes an integer element: toward zero,
# saturated (-2**31 / -1), x/0 the type's max or min by the sign of x, 0/0 zero
_IDIV = ("static TS_DEV inline long long ts_idiv(long long a, long long b, long long lo, long long hi) {\n"
         "  if (b == 0) return a > 0 ? hi : (a < 0 ? lo : 0);\n"
         "  const long long q = b == -1 ? -a : (long long)((int)a / (int)b);\n"
         "  return q < lo ? lo : (q > hi ? hi : q); }\n")

HELPERS: dict[str, str] = {
    "ts_exp64": _EXP64,
    **{f"ts_enc_{n}": _small_helpers(f) for n, f in _SMALL.items()},
    "ts_enc_e8m0": _E8M0,
    "ts_f32_to_bf16": _BF16,
    "ts_f64_to_f32_odd": _ODD,
    "ts_sat": _SAT,
    "ts_sat_f": _SAT_F,
    "ts_idiv": _IDIV,
    "ts_i2f_odd": _I2F_ODD,
}


@dataclass(frozen=True)
class Element:
    """An element type in C: its register bits, compute domain, and the C expressions that decode
    bits ``{}`` to a value of the domain's type and encode a domain value ``{}`` to bits (``ts_u32``,
    or ``ts_u64`` for 64-bit elements). ``helpers``: :data:`HELPERS` keys the expressions call."""

    name: str
    bits: int
    domain: str
    decode: str
    encode: str
    helpers: tuple[str, ...] = ()

    @property
    def ctype(self) -> str:
        return DOMAIN_CTYPE[self.domain]

    @property
    def signed(self) -> bool:
        return dtype(self.name).kind == "int"


def _int_element(name: str) -> Element:
    d = DTYPES[name]
    mask = f"0x{(1 << d.bits) - 1:x}ull"
    if d.kind == "int":
        dec = f"((long long)((((ts_u64)({{}}) & {mask}) ^ {1 << (d.bits - 1)}ull)) - {1 << (d.bits - 1)}LL)"
    else:
        dec = f"((long long)((ts_u64)({{}}) & {mask}))"
    return Element(name, d.reg_bits, "int", dec, f"((ts_u32)((ts_u64)({{}}) & {mask}))")


def element(name: str) -> Element:
    """The C side of element type ``name`` (every type of :data:`tilesim.matrix.dtypes.DTYPES`)."""
    d = dtype(name)
    if d.kind in ("int", "uint"):
        return _int_element(d.name)
    if d.name == "f64":
        return Element("f64", 64, "double", "__builtin_bit_cast(double, (ts_u64)({}))", "__builtin_bit_cast(ts_u64, {})")
    if d.name == "f32":
        return Element("f32", 32, "float", "ts_f32({})", "ts_bits({})")
    if d.truncated_f32:  # f32 storage; quantize keeps the top 19 bits (numerics.quantize)
        return Element(d.name, 32, "float", "ts_f32({})", "(ts_bits({}) & 0xffffe000u)")
    if d.name == "f16":
        return Element("f16", 16, "float", "ts_f16_to_f32({})", "ts_f32_to_f16({})")
    if d.name == "bf16":
        return Element("bf16", 16, "float", "ts_bf16_to_f32({})", "ts_f32_to_bf16({})", ("ts_f32_to_bf16",))
    if d.name == "e8m0":
        return Element("e8m0", 8, "float", "ts_dec_e8m0({})", "ts_enc_e8m0({})", ("ts_enc_e8m0",))
    return Element(d.name, d.reg_bits, "float", f"ts_dec_{d.name}({{}})", f"ts_enc_{d.name}({{}})",
                   (f"ts_enc_{d.name}",))


def value_expr(bits: str, name: str) -> str:
    """The value of element bits ``bits`` (a C expression) in its domain's C type."""
    return element(name).decode.format(bits)


def bits_expr(value: str, domain: str, name: str) -> str:
    """Bits of element type ``name`` holding ``value``, a C expression of ``domain``'s type — the
    simulator's :func:`tilesim.matrix.numerics.cast` from that domain (float/double values are
    rounded once; to an integer type they saturate; integers wrap)."""
    el = element(name)
    if el.domain == "int":
        if domain == "int":
            return el.encode.format(value)
        lo, hi = int_range(name)
        sat = "ts_sat_f" if domain == "float" else "ts_sat"
        return el.encode.format(f"{sat}({value}, {lo}LL, {hi}LL)")
    if el.domain == "double":
        return el.encode.format(f"(double)({value})")
    if domain == "float":
        return el.encode.format(value)
    if domain == "int":  # an element of at most 32 bits: f32 directly, else through round-to-odd f32
        if el.bits == 32:  # f32, xf32, tf32
            return el.encode.format(f"(float)(int)({value})")
        return el.encode.format(f"ts_i2f_odd({value})")
    if el.bits == 32:  # f32, xf32, tf32: from a double
        return el.encode.format(f"(float)({value})")
    return el.encode.format(f"ts_f64_to_f32_odd({value})")


def cast_expr(bits: str, src: str, dst: str) -> str:
    """Bits of ``dst`` for the ``src`` element bits ``bits``: a ``cast`` as the simulator does it."""
    return bits_expr(value_expr(bits, src), element(src).domain, dst)


def helpers_for(*exprs_or_names: str) -> list[str]:
    """The :data:`HELPERS` definitions the given C text calls (one entry may define several
    functions, e.g. a format's decoder and encoder), in a stable order, each with the helpers it
    calls itself."""
    text = "\n".join(exprs_or_names)
    out: list[str] = []
    for k in sorted(HELPERS):
        if any(re.search(rf"\b{f}\b", text) for f in _DEFINES[k]):
            out += [h for h in helpers_for(_CALLS[k]) if h not in out and h != HELPERS[k]] + [HELPERS[k]]
    return list(dict.fromkeys(out))


_DEFINES = {k: re.findall(r"inline [\w ]+?\b(ts_\w+)\(", v) for k, v in HELPERS.items()}
_CALLS = {k: re.sub(r"inline [\w ]+?\bts_\w+\(", "", v) for k, v in HELPERS.items()}


def int_range(name: str) -> tuple[int, int]:
    d = dtype(name)
    return (0, (1 << d.bits) - 1) if d.kind == "uint" else (-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1)
