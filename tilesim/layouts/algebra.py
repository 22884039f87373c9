"""Layout algebra on the stored relation: relational composition and the (mixed-radix) product.

These work on the pair arrays a :class:`~tilesim.layouts.layout.Layout` stores, so ``layout.py``
builds its ``compose``/``product`` (and ``Layout.then``, ``a * b``) on them without this module
knowing the ``Layout`` class: the dependency points one way.
"""

from __future__ import annotations

import numpy as np

__all__ = ["compose_keys", "product_pairs"]

Dims = tuple[tuple[str, int], ...]


def compose_keys(inner: tuple[np.ndarray, np.ndarray], outer: tuple[np.ndarray, np.ndarray],
                 outer_out_size: int) -> np.ndarray:
    """Sorted keys ``hw * outer_out_size + logical`` of ``outer ∘ inner`` from the two layouts'
    flat (hardware, logical) pairs (``outer``'s sorted by hardware). Relational: an intermediate
    point with several images (replication, broadcast) contributes every pair."""
    ih, ig = inner
    oh, og = outer
    lo = np.searchsorted(oh, ig)
    hi = np.searchsorted(oh, ig, side="right")
    reps = hi - lo
    src = np.repeat(ih, reps)
    starts = np.repeat(lo, reps)
    offs = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    dst = og[starts + offs]
    return np.unique(src * outer_out_size + dst).astype(np.int64)


def _merge_dims(a: Dims, b: Dims) -> tuple[Dims, list[int], list[int], list[int]]:
    """Union of named dims; shared names multiply (``a`` low, ``b`` high)."""
    names = [n for n, _ in a] + [n for n, _ in b if n not in dict(a)]
    da, db = dict(a), dict(b)
    merged = tuple((n, da.get(n, 1) * db.get(n, 1)) for n in names)
    ia = [names.index(n) for n, _ in a]
    ib = [names.index(n) for n, _ in b]
    return merged, ia, ib, [da.get(n, 1) for n in names]


def product_pairs(
    a_dims: tuple[Dims, Dims], a_pairs: tuple[np.ndarray, np.ndarray],
    b_dims: tuple[Dims, Dims], b_pairs: tuple[np.ndarray, np.ndarray],
) -> tuple[Dims, Dims, np.ndarray, np.ndarray]:
    """(in dims, out dims, hardware coords, logical coords) of ``b`` tiled over ``a``: dims with
    one name concatenate (``a`` varies fastest); coordinates are per-dim (``Layout.pairs()``)."""
    ind, ia_in, ib_in, a_in_sizes = _merge_dims(a_dims[0], b_dims[0])
    outd, ia_out, ib_out, a_out_sizes = _merge_dims(a_dims[1], b_dims[1])
    ah, ag = a_pairs
    bh, bg = b_pairs
    na, nb = ah.shape[0], bh.shape[0]

    def combine(xa: np.ndarray, ia: list[int], xb: np.ndarray, ib: list[int], sizes: list[int], nd: int) -> np.ndarray:
        out = np.zeros((na * nb, nd), np.int64)
        out[:, ia] += np.repeat(xa, nb, axis=0)
        out[:, ib] += np.tile(xb, (na, 1)) * np.asarray(sizes, np.int64)[ib]
        return out

    return (ind, outd, combine(ah, ia_in, bh, ib_in, a_in_sizes, len(ind)),
            combine(ag, ia_out, bg, ib_out, a_out_sizes, len(outd)))
