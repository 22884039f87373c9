"""How the simulator holds tensors: in their own numpy type where numpy has it (f16, f32, f64:
half the bytes of float64 for f32, a quarter for f16), float64 or int64 values otherwise.

An f16/f32/f64 tensor's values are exactly that type's, so holding them in it loses nothing, and
its encoded bits are a view (no copy). A caller's input array already in the type is used as it
is, read-only (the simulator copies it before a store to it), unless it holds a NaN: a signalling
NaN's bits change in the conversion every other input goes through, so those arrays are converted.
:func:`put_tiles` writes whole tiles into a held tensor (a store of disjoint tiles, tilesim/wave/sim.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tilesim.matrix.dtypes import DType, dtype, encode_bits
from tilesim.matrix.numerics import quantize

__all__ = ["put_tiles", "storage_dtype", "tensor_bits", "tensor_storage"]

_CHUNK = 1 << 18  # inputs are converted this many elements at a time (no float64 copy of the whole)


def _native(d: DType) -> bool:
    return d.kind == "float" and d.np_name in ("float16", "float32", "float64") and d.bits == d.reg_bits


def storage_dtype(dt: Any) -> np.dtype:
    d = dtype(dt)
    if _native(d):
        return np.dtype(d.np)
    return np.dtype(np.float64)


def tensor_storage(a: np.ndarray, dt: Any, *, borrow: bool) -> np.ndarray:
    """The tensor's values (``quantize(a, dt)``) in :func:`storage_dtype`; ``borrow``: an input array
    already in that type may be returned as a read-only view."""
    d = dtype(dt)
    if not _native(d):
        return quantize(a, d).astype(np.float64)
    if a.dtype == d.np and not _has_nan(a):  # already its values (the borrowed view's reasoning)
        if not borrow:
            return np.array(a, order="C")  # a copy: the store writes into it
        if a.flags.c_contiguous:
            v = a.view()
            v.flags.writeable = False
            return v
    out = np.empty(a.shape, d.np)
    src, dst = a.reshape(-1), out.reshape(-1)
    for i in range(0, src.size, _CHUNK):
        with np.errstate(over="ignore", invalid="ignore"):
            dst[i:i + _CHUNK] = quantize(src[i:i + _CHUNK], d)
    return out


def _has_nan(a: np.ndarray) -> bool:
    """Whether a float array holds a NaN; float16 from its bits (numpy's isnan converts every f16
    value first: 5x slower)."""
    if a.dtype == np.float16:
        return bool(((a.view(np.uint16) & 0x7FFF) > 0x7C00).any())
    return bool(np.isnan(a).any())


def tensor_bits(t: np.ndarray, dt: Any) -> np.ndarray:
    """The tensor's values encoded as ``dt``, flat (a view when ``t`` is held in that type)."""
    d = dtype(dt)
    if _native(d) and t.dtype == d.np:
        return np.ascontiguousarray(t).reshape(-1).view(np.dtype(f"uint{d.bits}"))
    return encode_bits(t, d).reshape(-1)


def put_tiles(a: np.ndarray, ti: np.ndarray, tj: np.ndarray, h: int, w: int, src: Any) -> None:
    """``a[ti[g]*h:(ti[g]+1)*h, tj[g]*w:(tj[g]+1)*w] = src[g]`` for every ``g`` (``src``: ``[G, h, w]``, or
    one value for all), the tiles ``(ti, tj)`` distinct; ``a`` C-contiguous, its sides multiples of
    ``(h, w)``. When the tiles are all of ``a``'s, one strided copy (a GEMM's waves, tile row fastest,
    need no reordering), else numpy's fancy assignment (h-row runs of w elements)."""
    Ti, Tj = a.shape[0] // h, a.shape[1] // w
    a4 = a.reshape(Ti, h, Tj, w)
    if ti.size != Ti * Tj:
        a4[ti, :, tj, :] = src
        return
    if np.ndim(src) == 0:  # every tile, one value
        a[...] = src
        return
    g = np.arange(ti.size)
    if np.array_equal(ti, g % Ti) and np.array_equal(tj, g // Ti):
        a4[...] = src.reshape(Tj, Ti, h, w).transpose(1, 2, 0, 3)
        return
    order = np.empty(ti.size, np.int64)
    order[ti * Tj + tj] = g
    a4[...] = src[order].reshape(Ti, Tj, h, w).transpose(0, 2, 1, 3)
