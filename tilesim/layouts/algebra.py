"""Layout algebra: relational composition and the (mixed-radix) product of layouts."""

from __future__ import annotations

import numpy as np

from tilesim.errors import LayoutError
from tilesim.layouts.layout import Dims, Layout

__all__ = ["compose", "product"]


def compose(outer: Layout, inner: Layout) -> Layout:
    """``outer ∘ inner``: apply ``inner`` first. Relational, so replication and broadcast compose too."""
    if inner.out_dims != outer.in_dims:
        raise LayoutError(f"cannot compose: inner gives {dict(inner.out_dims)}, outer takes {dict(outer.in_dims)}")
    ih, ig = inner._flat
    oh, og = outer._flat
    lo = np.searchsorted(oh, ig)
    hi = np.searchsorted(oh, ig, side="right")
    reps = hi - lo
    src = np.repeat(ih, reps)
    starts = np.repeat(lo, reps)
    offs = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    dst = og[starts + offs]
    keys = np.unique(src * outer.out_size + dst)
    return Layout(inner.in_dims, outer.out_dims, keys.astype(np.int64).tobytes(), outer.elem_bits)


def _merge_dims(a: Dims, b: Dims) -> tuple[Dims, list[int], list[int], list[int]]:
    """Union of named dims; shared names multiply (``a`` low, ``b`` high)."""
    names = [n for n, _ in a] + [n for n, _ in b if n not in dict(a)]
    da, db = dict(a), dict(b)
    merged = tuple((n, da.get(n, 1) * db.get(n, 1)) for n in names)
    ia = [names.index(n) for n, _ in a]
    ib = [names.index(n) for n, _ in b]
    return merged, ia, ib, [da.get(n, 1) for n in names]


def product(a: Layout, b: Layout) -> Layout:
    """Tile ``b`` over ``a``: dims with one name concatenate (``a`` varies fastest).

    For power-of-two dims this is Triton's ``LinearLayout`` product; for others it is the
    mixed-radix product ``i = i_a + size_a * i_b``. Associative: ``(a*b)*c == a*(b*c)``.
    """
    ind, ia_in, ib_in, a_in_sizes = _merge_dims(a.in_dims, b.in_dims)
    outd, ia_out, ib_out, a_out_sizes = _merge_dims(a.out_dims, b.out_dims)
    ah, ag = a.pairs()
    bh, bg = b.pairs()
    na, nb = ah.shape[0], bh.shape[0]

    def combine(xa: np.ndarray, ia: list[int], xb: np.ndarray, ib: list[int], sizes: list[int], nd: int) -> np.ndarray:
        out = np.zeros((na * nb, nd), np.int64)
        out[:, ia] += np.repeat(xa, nb, axis=0)
        out[:, ib] += np.tile(xb, (na, 1)) * np.asarray(sizes, np.int64)[ib]
        return out

    bits = a.elem_bits if a.elem_bits == b.elem_bits else None
    return Layout.from_pairs(
        ind,
        outd,
        combine(ah, ia_in, bh, ib_in, a_in_sizes, len(ind)),
        combine(ag, ia_out, bg, ib_out, a_out_sizes, len(outd)),
        elem_bits=bits,
    )
