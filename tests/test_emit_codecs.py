"""The generated C element codecs give the simulator's bits (issue 16 item 5).

The C text ``tilesim.codegen.elements`` emits — decoders, encoders, the round-to-odd step from
double, integer saturation, and every ``cast`` pair — compiled for the host and run over every
bit pattern of each narrow type and a few million f32/f64 values around every rounding point.
Expected values: the simulator's codec (``tilesim.matrix.dtypes``, ml_dtypes underneath) for the
bits, and the bit-level decoders written from the format specifications (tests/_bitcodecs.py)
for the values, so a wrong ml_dtypes answer would show too.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests import _bitcodecs
from tests._host_c import host_functions
from tilesim.codegen.elements import bits_expr, cast_expr, element
from tilesim.matrix.dtypes import DTYPES, decode, encode_bits
from tilesim.matrix.numerics import cast

NARROW_FLOATS = ["f16", "bf16", "fp8_ocp", "bf8_ocp", "fp8_fnuz", "bf8_fnuz", "fp6", "bf6", "fp4", "e8m0"]
INTS = ["i32", "i8", "u8", "i4", "u4"]
ALL = list(DTYPES)


def _funcs() -> dict[str, str]:
    f: dict[str, str] = {}
    for n in ALL:
        el = element(n)
        w = "(ts_u64)" if el.bits == 64 else "(ts_u32)"
        if el.domain == "float":
            f[f"dec:{n}"] = f"ts_bits({el.decode.format(w + 'x')})"
            f[f"enc:{n}"] = bits_expr("ts_f32((ts_u32)x)", "float", n)
        f[f"from_f64:{n}"] = bits_expr("__builtin_bit_cast(double, x)", "double", n)
        for m in ALL:
            f[f"cast:{n}:{m}"] = cast_expr(w + "x", n, m)
    return f


@pytest.fixture(scope="module")
def host():
    return host_functions(_funcs())


def _f32_probe() -> np.ndarray:
    """Every f32 sign/exponent/top-10-mantissa pattern with low 13 bits at and around each rounding
    point of every narrower format (half, just below, just above; sticky bits)."""
    top = np.arange(2**19, dtype=np.uint64) << np.uint64(13)
    lows = np.array([0, 1, 0x0FFF, 0x1000, 0x1001, 0x1FFF], np.uint64)
    return (top[:, None] | lows[None, :]).reshape(-1).astype(np.uint32)


def _signalling(x: np.ndarray) -> np.ndarray:
    return ((x & 0x7F800000) == 0x7F800000) & ((x & 0x7FFFFF) != 0) & ((x & 0x400000) == 0)


_IEEE = {"f16": (10, 5), "bf16": (7, 8), "f32": (23, 8), "xf32": (23, 8), "tf32": (23, 8), "f64": (52, 11)}


def _snan_of(words: np.ndarray, src: str) -> np.ndarray:
    """Signalling NaN patterns of an IEEE source type. Hardware conversions quiet them and numpy
    keeps their payload; NaN payloads are not part of the model (a NaN stays a NaN of its sign)."""
    if src not in _IEEE:
        return np.zeros(words.shape, bool)
    m, e = _IEEE[src]
    w = words.astype(np.uint64)
    exp = (w >> np.uint64(m)) & np.uint64((1 << e) - 1)
    man = w & np.uint64((1 << m) - 1)
    return (exp == (1 << e) - 1) & (man != 0) & ((man >> np.uint64(m - 1)) == 0)


def _codes(n: str) -> np.ndarray:
    return np.arange(2 ** DTYPES[n].reg_bits, dtype=np.uint64)


def _same(got: np.ndarray, want: np.ndarray, what: str, inputs: np.ndarray) -> None:
    bad = np.nonzero(got.astype(np.uint64) != want.astype(np.uint64))[0]
    assert bad.size == 0, (f"{what}: {bad.size} of {got.size} differ; first inputs "
                           f"{[hex(int(inputs[i])) for i in bad[:4]]} -> got {[hex(int(got[i])) for i in bad[:4]]}, "
                           f"want {[hex(int(want[i])) for i in bad[:4]]}")


@pytest.mark.parametrize("name", NARROW_FLOATS)
def test_decoder_gives_every_pattern_s_value(host, name):
    codes = _codes(name)
    got = host(f"dec:{name}", codes).astype(np.uint32).view(np.float32)
    want = decode(codes, name)
    spec = _bitcodecs.decode(codes.astype(np.int64), name)  # written from the format specification
    both_nan = np.isnan(got) & np.isnan(want)
    assert (both_nan == np.isnan(spec)).all() and (np.isnan(got) == np.isnan(want)).all()
    np.testing.assert_array_equal(got[~both_nan].astype(np.float64), spec[~both_nan])
    assert (np.signbit(got) == np.signbit(want)).all()  # the NaN's sign too: a later cast reads it


def _encoder_check(host, name: str, stride: int) -> None:
    x = _f32_probe()[::stride]
    if name in ("f32", "xf32", "tf32"):  # x86's f32 -> f64 -> f32 round trip in the reference quiets a
        x = x[~_signalling(x)]  # signalling NaN; the generated code (and a GPU) keeps the bits
    got = host(f"enc:{name}", x)
    want = encode_bits(x.view(np.float32).astype(np.float64), name) if name not in ("xf32", "tf32") else (
        encode_bits(cast(x.view(np.float32).astype(np.float64), "f32", name), name))
    _same(got, want, f"f32 -> {name}", x)


@pytest.mark.parametrize("name", NARROW_FLOATS + ["f32", "xf32", "tf32"])
def test_encoder_rounds_f32_as_the_simulator(host, name):
    _encoder_check(host, name, 7)  # every 7th probe (7 and the 6 low patterns are coprime: all lows seen)


@pytest.mark.slow
@pytest.mark.parametrize("name", NARROW_FLOATS + ["f32", "xf32", "tf32"])
def test_encoder_rounds_every_probe_as_the_simulator(host, name):
    _encoder_check(host, name, 1)


def _f64_probe(rng: np.random.Generator) -> np.ndarray:
    """Doubles at and one double-ulp around every midpoint between neighbouring values of each narrow
    type (where rounding twice could go wrong), plus random doubles of every f32-ish magnitude."""
    mids = []
    for n in NARROW_FLOATS:
        v = np.unique(decode(_codes(n), n))
        v = v[np.isfinite(v)]
        m = (v[1:] + v[:-1]) / 2
        mids += [m, np.nextafter(m, np.inf), np.nextafter(m, -np.inf), v]
    m = np.concatenate(mids)
    rnd = rng.uniform(-1, 1, 200_000) * np.exp2(rng.integers(-160, 140, 200_000))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 2.0**-149, 2.0**-150, 3.4e38, 3.5e38, 1e300])
    return np.concatenate([m, -m, rnd, special])


@pytest.mark.parametrize("name", ALL)
def test_from_double_rounds_once_as_the_simulator(host, name):
    x = _f64_probe(np.random.default_rng(1))
    x = x[~_snan_of(x.view(np.uint64), "f64")]
    got = host(f"from_f64:{name}", x.view(np.uint64))
    want = encode_bits(cast(x, "f64", name), name)
    _same(got, want, f"f64 -> {name}", x.view(np.uint64))


@pytest.mark.parametrize("name", INTS)
def test_float_to_int_saturates_toward_zero_nan_is_zero(host, name):
    """Independent expectation: the rule itself, written out (trunc, clamp, NaN -> 0)."""
    d = DTYPES[name]
    lo, hi = (0, 2**d.bits - 1) if d.kind == "uint" else (-(2 ** (d.bits - 1)), 2 ** (d.bits - 1) - 1)
    x = np.array([0.5, -0.5, 1.99, -1.99, lo - 0.5, hi + 0.5, lo - 1e6, hi + 1e6, 2.0**40, -(2.0**40),
                  np.inf, -np.inf, np.nan, -np.nan, 127.9, -128.9, 255.5, 7.9, -8.9, 15.5, 2147483647.9, -2147483648.9])
    got = host(f"from_f64:{name}", x.view(np.uint64))
    want = np.where(np.isnan(x), 0, np.clip(np.trunc(np.nan_to_num(x, posinf=1e300, neginf=-1e300)), lo, hi))
    np.testing.assert_array_equal(got, want.astype(np.int64) & (2**d.bits - 1))


@pytest.mark.parametrize("src", [n for n in ALL if DTYPES[n].reg_bits <= 16])
def test_every_cast_from_a_narrow_type_gives_the_simulator_s_bits(host, src):
    codes = _codes(src)
    codes = codes[~_snan_of(codes, src)]
    for dst in ALL:
        got = host(f"cast:{src}:{dst}", codes)
        want = encode_bits(cast(decode(codes, src), src, dst), dst)
        _same(got, want, f"cast {src} -> {dst}", codes)


@pytest.mark.parametrize("src", ["f32", "xf32", "tf32", "f64", "i32"])
def test_every_cast_from_a_wide_type_gives_the_simulator_s_bits(host, src):
    rng = np.random.default_rng(2)
    if src == "f64":
        words = _f64_probe(rng).view(np.uint64)[::4]
    elif src == "i32":
        words = np.concatenate([rng.integers(0, 2**32, 100_000, dtype=np.uint64),
                                np.array([0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**24 + 1, 2**11 + 1], np.uint64)])
    else:
        words = _f32_probe()[::41].astype(np.uint64)
        if src != "f32":
            words = words & np.uint64(0xFFFFE000)  # what those registers hold
    words = words[~_snan_of(words, src)]
    for dst in ALL:
        got = host(f"cast:{src}:{dst}", words)
        want = encode_bits(cast(decode(words, src), src, dst), dst)
        _same(got, want, f"cast {src} -> {dst}", words)


def test_int_arithmetic_domain_wraps_like_int64():
    """The int domain decodes signed types sign-extended and unsigned ones zero-extended."""
    for n in INTS:
        el = element(n)
        assert el.domain == "int" and el.ctype == "long long"


def test_f64_exp_on_amd_is_within_one_ulp_of_numpy():
    """clang has no f64 exp for AMDGPU without the device library, so the prelude carries one
    (``ts_exp64``); exp is not bit-exact anywhere, but this one stays within 1 ulp of numpy's and
    gets every overflow, underflow and NaN right."""
    h = host_functions({"exp": "__builtin_bit_cast(ts_u64, ts_exp64(__builtin_bit_cast(double, x)))"})
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-750, 712, 300_000), rng.uniform(-1, 1, 30_000),
                        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 709.78, 709.79, -745.1, -745.2, -708.4, 1e-300])])
    with np.errstate(all="ignore"):
        got, want = h("exp", x.view(np.uint64)).view(np.float64), np.exp(x)
    fin = np.isfinite(want) & (want != 0)
    assert np.abs(got[fin].view(np.int64) - want[fin].view(np.int64)).max() <= 1
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
