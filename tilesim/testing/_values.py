"""``matrices(dtype, shape)``: arrays whose every value is exactly representable in a tilesim dtype.

Narrow formats (at most 16 bits: f16, bf16, fp8 FNUZ/OCP, fp6, fp4, e8m0, i8, i4 …) draw from
the table of all their values, decoded bit pattern by bit pattern with the same codec the
register images use; f32/f64 draw through hypothesis' floats of that width; xf32/tf32 are f32
with the 13 low mantissa bits clear (what ``quantize`` keeps).
"""

from __future__ import annotations

import functools
from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.extra import numpy as hnp

from tilesim.matrix.dtypes import DType, decode
from tilesim.matrix.dtypes import dtype as _dtype
from tilesim.matrix.numerics import quantize

__all__ = ["edge_values_of", "matrices"]

_LOW13 = np.uint32(0xFFFFE000)


def _xf32(x: float) -> float:
    return float((np.asarray(x, np.float32).view(np.uint32) & _LOW13).view(np.float32))


def _representable(v: float, d: DType) -> bool:
    q = float(quantize(np.asarray([v], np.float64), d)[0])
    if np.isnan(v):
        return bool(np.isnan(q))
    return q == v and np.signbit(q) == np.signbit(v)


def _by_magnitude(vals: np.ndarray) -> list[float]:
    """Ascending |x|, positive first: hypothesis shrinks towards 0, 1, -1, …"""
    return [float(v) for v in sorted(vals.tolist(), key=lambda x: (abs(x), x < 0))]


@functools.cache
def _narrow_table(name: str) -> np.ndarray:
    d = _dtype(name)
    return decode(np.arange(1 << d.reg_bits, dtype=np.uint64), d).astype(np.float64)


@functools.cache
def edge_values_of(name: str) -> tuple[float, ...]:
    """The edge values ``dtype(name)`` can hold: ±0, ±max finite, ±smallest normal, ±smallest
    subnormal, ±inf and NaN for floats (each only where the format has it: FNUZ has no -0 and no
    inf, fp6/fp4 neither inf nor NaN); min, max, 0 and ±1 for integers."""
    d = _dtype(name)
    if d.kind in ("int", "uint"):
        lo, hi = (0, (1 << d.bits) - 1) if d.kind == "uint" else (-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1)
        return tuple(float(v) for v in sorted({lo, hi, 0, 1, max(lo, -1)}))
    if d.truncated_f32:
        fi = np.finfo(np.float32)
        big, tiny, sub = _xf32(float(fi.max)), float(fi.smallest_normal), 2.0 ** -136  # 2**-149 * 2**13
    elif d.bits > 16:
        fi = np.finfo(d.np)
        big, tiny, sub = float(fi.max), float(fi.smallest_normal), float(fi.smallest_subnormal)
    else:
        table = _narrow_table(d.name)
        fin = table[np.isfinite(table)]
        pos = fin[fin > 0]
        big, sub = float(pos.max()), float(pos.min())
        tiny = float(ml_dtypes.finfo(d.np).smallest_normal)
    cands = [0.0, -0.0, big, -big, tiny, -tiny, sub, -sub, float("inf"), float("-inf"), float("nan")]
    out: list[float] = []
    for v in cands:
        if _representable(v, d) and not any(_same(v, o) for o in out):
            out.append(v)
    return tuple(out)


def _same(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or (a == b and np.signbit(a) == np.signbit(b))


def _regular(d: DType, max_abs: float | None) -> st.SearchStrategy[Any]:
    """Finite values that are not edge cases: zero (+0 only) and normal numbers, |x| <= max_abs."""
    if d.kind in ("int", "uint"):
        lo, hi = (0, (1 << d.bits) - 1) if d.kind == "uint" else (-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1)
        if max_abs is not None:
            lo, hi = max(lo, -int(max_abs)), min(hi, int(max_abs))
        return st.integers(lo, hi)
    if d.bits <= 16:
        table = _narrow_table(d.name)
        tiny = float(ml_dtypes.finfo(d.np).smallest_normal)
        keep = np.isfinite(table) & ((np.abs(table) >= tiny) | (table == 0))
        if max_abs is not None:
            keep &= np.abs(table) <= max_abs
        vals = np.unique(table[keep] + 0.0)  # + 0.0 turns -0 into +0
        return st.sampled_from(_by_magnitude(vals))
    width = 64 if d.name == "f64" else 32
    lim = None if max_abs is None else float(max_abs)
    floats = st.floats(min_value=None if lim is None else -lim, max_value=lim, allow_nan=False, allow_infinity=False,
                       allow_subnormal=False, width=width).map(lambda x: x + 0.0)
    return floats.map(_xf32) if d.truncated_f32 else floats


def matrices(dtype: str | DType, shape: int | tuple[int, ...] | st.SearchStrategy[Any], *, edge_values: bool = False,
             max_abs: float | None = None) -> st.SearchStrategy[np.ndarray]:
    """numpy arrays of ``shape`` holding values exactly representable in ``dtype`` (a tilesim dtype name).

    The array's dtype is the format's own numpy type (``ml_dtypes.float8_e4m3fnuz`` for
    ``fp8_fnuz``, ``ml_dtypes.int4`` for ``i4``, float32 for ``xf32``/``tf32``); ``.astype(np.float64)``
    is exact. By default values are finite, +0 or normal, and at most ``max_abs`` in magnitude;
    ``edge_values=True`` mixes in :func:`edge_values_of` (about half the elements drawn).
    ``shape`` is an int, a tuple or a strategy of them; large arrays follow hypothesis' habit of
    a fill value with some elements drawn.
    """
    d = _dtype(dtype)  # ModifierError names the known types
    if max_abs is not None and not (isinstance(max_abs, (int, float)) and max_abs >= 0):
        raise InvalidArgument(f"max_abs must be a non-negative number, got {max_abs!r}")
    elems = _regular(d, max_abs)
    if edge_values:
        edges = edge_values_of(d.name)
        elems = st.one_of(st.sampled_from([int(v) for v in edges] if d.kind in ("int", "uint") else edges), elems)
    base = np.int64 if d.kind in ("int", "uint") else np.float64
    target = d.np

    def cast(a: np.ndarray) -> np.ndarray:
        if d.kind in ("int", "uint") or target in (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16)):
            return a.astype(target)
        with np.errstate(invalid="ignore"):
            return a.astype(np.float32).astype(target)  # ml_dtypes converts through float32; exact here

    return hnp.arrays(base, shape, elements=elems).map(cast)
