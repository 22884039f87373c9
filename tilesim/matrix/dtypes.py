"""Element types of matrix instructions, with bit-exact encode/decode through ml_dtypes.

fp8 has two incompatible flavours and the target decides which one a mnemonic means:
gfx940–gfx942 use FNUZ (no infinities, one NaN at 0x80, exponent bias one higher);
gfx950, gfx12 and NVIDIA sm_89+ use OCP (E4M3 with NaN at 0x7f/0xff and no infinity,
E5M2 IEEE-like). Source: AMD CDNA3 ISA §7.1.3 "fp8 and bf8"; CDNA4 ISA §7.2; OCP 8-bit
floating point specification v1.0.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from tilesim.errors import ModifierError, choices

__all__ = ["DType", "DTYPES", "dtype", "encode", "encode_bits", "decode", "fp8_for", "to_memory", "from_memory",
           "memory_unit", "FP8_FLAVOURS", "fp8_flavour", "fp8_clash"]


@dataclass(frozen=True)
class DType:
    name: str
    bits: int
    kind: str  # "float" | "int" | "uint"
    np_name: str  # numpy / ml_dtypes scalar type name used to store values
    storage_bits: int = 0  # bits one element occupies in registers (xf32/tf32: 32)

    @property
    def np(self) -> np.dtype:
        return np.dtype(getattr(ml_dtypes, self.np_name, None) or self.np_name)

    @property
    def reg_bits(self) -> int:
        return self.storage_bits or self.bits

    @property
    def truncated_f32(self) -> bool:
        """An f32 register whose math ignores its low mantissa bits (xf32, tf32: 19 of 32 bits count)."""
        return self.kind == "float" and self.storage_bits == 32 and self.bits < 32


_ROWS = [
    DType("f64", 64, "float", "float64"),
    DType("f32", 32, "float", "float32"),
    DType("xf32", 19, "float", "float32", storage_bits=32),  # CDNA3: f32 storage, 10-bit mantissa math
    DType("tf32", 19, "float", "float32", storage_bits=32),  # NVIDIA: f32 storage, low 13 bits ignored
    DType("f16", 16, "float", "float16"),
    DType("bf16", 16, "float", "bfloat16"),
    DType("fp8_fnuz", 8, "float", "float8_e4m3fnuz"),
    DType("bf8_fnuz", 8, "float", "float8_e5m2fnuz"),
    DType("fp8_ocp", 8, "float", "float8_e4m3fn"),
    DType("bf8_ocp", 8, "float", "float8_e5m2"),
    DType("fp6", 6, "float", "float6_e2m3fn"),
    DType("bf6", 6, "float", "float6_e3m2fn"),
    DType("fp4", 4, "float", "float4_e2m1fn"),
    DType("e8m0", 8, "float", "float8_e8m0fnu"),  # block scales of v_mfma_scale_*
    DType("i32", 32, "int", "int32"),
    DType("i8", 8, "int", "int8"),
    DType("u8", 8, "uint", "uint8"),
    DType("i4", 4, "int", "int4"),
    DType("u4", 4, "uint", "uint4"),
]

DTYPES: dict[str, DType] = {d.name: d for d in _ROWS}


def dtype(name: str | DType) -> DType:
    if isinstance(name, DType):
        return name
    try:
        return DTYPES[name]
    except KeyError:
        raise ModifierError(f"unknown element type {name!r}; known types: {choices(DTYPES)}") from None


# What each fp8 flavour means (CDNA3 ISA §7.1.3 "fp8 and bf8"; OCP 8-bit FP spec v1.0), in the words check's
# and port's refusals use; a target's ``fp8`` field names one, the types are ``fp8_<flavour>``/``bf8_<flavour>``.
FP8_FLAVOURS: dict[str, str] = {
    "fnuz": "FNUZ (e4m3 bias 8 / e5m2 bias 16, no infinities, NaN only at 0x80)",
    "ocp": "OCP (e4m3 bias 7 / e5m2 bias 15, NaN at 0x7f/0xff, 0x80 = -0; e5m2 with infinities)",
}


def fp8_for(flavour: str | None, wide_exponent: bool) -> DType:
    """``fp8``/``bf8`` of a target's flavour (``"fnuz"`` or ``"ocp"``)."""
    if flavour not in FP8_FLAVOURS:
        raise ModifierError(f"target has no fp8 (flavour {flavour!r}); fp8 flavours: {choices(FP8_FLAVOURS)}")
    return DTYPES[("bf8_" if wide_exponent else "fp8_") + flavour]


def fp8_flavour(name: str) -> str | None:
    """The flavour of an fp8/bf8 type's name (``bf8_fnuz`` -> ``"fnuz"``); None for every other type."""
    flavour = name.rpartition("_")[2]
    return flavour if flavour in FP8_FLAVOURS and name in DTYPES else None


def fp8_clash(have: str, want: str) -> str:
    """What the same bytes are as e4m3 of flavour ``have`` and of ``want`` (decoded, e.g. ``0x40 is 1.0 FNUZ
    but 2.0 OCP``): why a tensor of one flavour cannot feed an instruction reading the other."""
    def num(x: float) -> str:
        return "NaN" if np.isnan(x) else "-0" if x == 0 and np.signbit(x) else f"{x:.1f}"

    out = []
    for byte in (0x40, 0x80):
        a, b = (float(decode(np.uint8(byte), fp8_for(f, False))) for f in (have, want))
        out.append(f"0x{byte:02x} is {num(a)} {have.upper()} but {num(b)} {want.upper()}")
    return "; ".join(out)


def _uint_of(bits: int) -> np.dtype:
    return np.dtype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[max(8, bits)])


def _f32_round_to_odd(values: np.ndarray) -> np.ndarray:
    """float64 -> float32, rounding to odd: exact values stay, others become the float32
    neighbour (toward zero) with its last bit set.

    ml_dtypes converts float64 to its types through float32 with round-to-nearest twice, which
    is wrong near a midpoint (1 + 2**-8 + 2**-30 becomes bf16 1.0, not 1.0078125). Rounding to
    odd first makes the second, nearest-even rounding the correct single rounding for any format
    of at most 22 significant bits (Boldo & Melquiond, "Emulation of FMA and correctly rounded
    sums: proved algorithms using rounding to odd", IEEE TC 2008).
    """
    x = np.asarray(values, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        t = x.astype(np.float32)
        back = t.astype(np.float64)
    inexact = np.isfinite(x) & (back != x)
    t = np.where(inexact & (np.abs(back) > np.abs(x)), np.nextafter(t, np.float32(0)), t).astype(np.float32)
    return (t.view(np.uint32) | inexact.astype(np.uint32)).view(np.float32)


def encode(values: np.ndarray, dt: str | DType) -> np.ndarray:
    """Round ``values`` to ``dt`` and return the raw bit patterns (uint64, low ``reg_bits`` bits)."""
    return encode_bits(values, dt).astype(np.uint64)


def encode_bits(values: np.ndarray, dt: str | DType) -> np.ndarray:
    """:func:`encode` in the narrowest unsigned type that holds ``reg_bits`` (uint8 for 4/6-bit
    formats): the same bits without widening every element to 64 bits."""
    d = dtype(dt)
    arr = np.asarray(values)
    if d.kind in ("int", "uint"):
        wrapped = np.asarray(arr, dtype=np.int64) & ((1 << d.bits) - 1)
        return wrapped.astype(_uint_of(d.reg_bits))
    if d.truncated_f32:
        with np.errstate(over="ignore"):
            arr = np.asarray(arr, np.float64).astype(np.float32)
        return arr.view(np.uint32)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf/NaN is the format's answer
        if d.bits < 32 and d.np_name != "float16":  # ml_dtypes formats; numpy rounds f64 -> f16 directly
            typed = _f32_round_to_odd(arr).astype(d.np)
        else:
            typed = np.asarray(arr, dtype=np.float64).astype(d.np)
    if d.bits in (4, 6):
        return typed.view(np.uint8) & np.uint8((1 << d.bits) - 1)
    return typed.view(_uint_of(d.bits))


def decode(bits: np.ndarray, dt: str | DType) -> np.ndarray:
    """Raw bit patterns -> float64 (floats) or int64 (integers), exactly."""
    d = dtype(dt)
    raw = np.asarray(bits)
    if d.reg_bits not in (8, 16, 32, 64) or raw.dtype != _uint_of(d.reg_bits):  # narrow input: already exact
        raw = np.asarray(bits, dtype=np.uint64) & np.uint64((1 << d.reg_bits) - 1 if d.reg_bits < 64 else 2**64 - 1)
    if d.kind == "uint":
        return raw.astype(np.int64)
    if d.kind == "int":
        v = raw.astype(np.int64)
        return np.where(v >= (1 << (d.bits - 1)), v - (1 << d.bits), v)
    with np.errstate(invalid="ignore"):  # signalling-NaN patterns are valid register contents
        if d.truncated_f32:
            return raw.astype(np.uint32).view(np.float32).astype(np.float64)
        if d.bits in (4, 6):
            return raw.astype(np.uint8).view(d.np).astype(np.float64)
        return raw.astype(_uint_of(d.bits), copy=False).view(d.np).astype(np.float64)


# ---------------------------------------------------------------------------- tensors in device memory
def memory_unit(dt: str | DType) -> np.dtype:
    """The unsigned type of a device tensor's buffer: the element's own width, or bytes for 4- and
    6-bit elements (packed, :func:`to_memory`)."""
    return _uint_of(dtype(dt).reg_bits)


def to_memory(bits: np.ndarray, dt: str | DType) -> np.ndarray:
    """A tensor's element bits (row-major) as the device buffer generated code reads and writes.

    8/16/32/64-bit elements: one unsigned word each. 4- and 6-bit elements are packed as a
    little-endian bit stream — element ``i`` at bits ``[i*w, (i+1)*w)`` — so two 4-bit elements
    share a byte, the first in the low nibble (the usual int4/fp4 packing); the buffer is padded
    to whole 32-bit words, which the generated stores update atomically (two lanes may own bits of
    one word)."""
    d = dtype(dt)
    b = np.asarray(bits, np.uint64).reshape(-1)
    if d.reg_bits in (8, 16, 32, 64):
        return b.astype(_uint_of(d.reg_bits))
    w = d.reg_bits
    nbytes = -(-(b.size * w) // 32) * 4
    planes = ((b[:, None] >> np.arange(w, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8).reshape(-1)
    stream = np.zeros(nbytes * 8, np.uint8)
    stream[:planes.size] = planes
    return np.packbits(stream, bitorder="little")


def from_memory(buf: np.ndarray, dt: str | DType, shape: tuple[int, ...]) -> np.ndarray:
    """Element bits (uint64, ``shape``) of a device buffer laid out by :func:`to_memory`."""
    d = dtype(dt)
    n = int(np.prod(shape))
    raw = np.asarray(buf)
    if d.reg_bits in (8, 16, 32, 64):
        return raw.reshape(-1)[:n].astype(np.uint64).reshape(shape)
    w = d.reg_bits
    planes = np.unpackbits(raw.astype(np.uint8).reshape(-1), bitorder="little")[:n * w].reshape(n, w)
    return (planes.astype(np.uint64) << np.arange(w, dtype=np.uint64)).sum(1).astype(np.uint64).reshape(shape)
