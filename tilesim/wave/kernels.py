"""Compiled inner loops of the simulator: numba, JIT-cached on disk (``cache=True``), each with a
numpy fallback that gives the same bits, so numba stays optional at import."""

from __future__ import annotations

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency, but the simulator runs without it
    numba = None

__all__ = ["HAVE_NUMBA", "batched_dot", "gather_windows", "mma_chain"]

HAVE_NUMBA = numba is not None


def _batched_dot_numpy(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.einsum("gmk,gkn->gmn", a, b) + c


if HAVE_NUMBA:

    @numba.njit(cache=True, nogil=True, parallel=True)
    def _batched_dot_jit(a, b, c):  # pragma: no cover - compiled
        G, M, K = a.shape
        N = b.shape[2]
        out = np.empty((G, M, N), np.float64)
        nan = np.zeros(G, np.bool_)
        for g in numba.prange(G):
            acc = np.empty(N, np.float64)
            for m in range(M):
                acc[:] = 0.0
                for k in range(K):
                    x = a[g, m, k]
                    for n in range(N):
                        acc[n] = acc[n] + x * b[g, k, n]
                for n in range(N):
                    v = acc[n] + c[g, m, n]
                    out[g, m, n] = v
                    if v != v:
                        nan[g] = True
        return out, nan.any()


    @numba.njit(cache=True, nogil=True, parallel=True)
    def _mma_chain_jit(va, base_a, off_a, vb, base_b, off_b, acc, K):  # pragma: no cover
        T, G = base_a.shape
        M, N = acc.shape[1], acc.shape[2]
        MN = M * N
        out = np.empty_like(acc)
        nan = np.zeros(G, np.bool_)
        for g in numba.prange(G):
            at = np.empty(K * M, np.float64)  # A transposed, at[k*M + m]: the k-outer product loop reads it in order
            b = np.empty(K * N, np.float64)
            c = np.empty(MN, np.float64)
            d = np.empty(MN, np.float64)
            for m in range(M):
                for n in range(N):
                    c[m * N + n] = acc[g, m, n]
            for t in range(T):
                ba, bb = base_a[t, g], base_b[t, g]
                for m in range(M):
                    for k in range(K):
                        o = off_a[m * K + k]
                        at[k * M + m] = va[ba + o] if o >= 0 else 0.0
                for i in range(K * N):
                    o = off_b[i]
                    b[i] = vb[bb + o] if o >= 0 else 0.0
                for i in range(MN):
                    d[i] = 0.0
                # every d[m, n] still sums its products from +0 in k order; k outermost only interleaves the
                # independent (m, n) sums, which keeps the adds off one another's latency
                for k in range(K):
                    for m in range(M):
                        x = at[k * M + m]
                        for n in range(N):
                            d[m * N + n] += x * b[k * N + n]
                for i in range(MN):
                    v = d[i] + c[i]
                    if v != v:
                        nan[g] = True
                    c[i] = np.float64(np.float32(v))
            for m in range(M):
                for n in range(N):
                    out[g, m, n] = c[m * N + n]
        return out, nan.any()


def mma_chain(va: np.ndarray, base_a: np.ndarray, off_a: np.ndarray, vb: np.ndarray, base_b: np.ndarray,
              off_b: np.ndarray, acc: np.ndarray, k: int) -> np.ndarray | None:
    """``T`` chained f32-accumulating mma steps per wave, operands gathered from decoded tensors.

    Step ``t`` of wave ``g`` reads A element ``e`` (row-major ``M x k`` tile) as ``va[base_a[t, g] + off_a[e]]``
    (0 where ``off_a[e] < 0``), B (``k x N``) likewise, and computes ``acc = f32(sum_k a*b + acc)``, each sum
    taken from +0 in k order in float64: the operations of :func:`batched_dot` followed by the f32 register
    encode, in the same order. Returns the final ``acc`` (float32 ``[G, M, N]``), or None without numba
    or when a result is NaN (its payload would depend on operand order; the caller then takes the
    step-by-step path)."""
    if not HAVE_NUMBA:
        return None
    out, nan = _mma_chain_jit(va, base_a, off_a, vb, base_b, off_b, acc, k)
    return None if nan else out


def gather_windows(flat: np.ndarray, base: np.ndarray, off: np.ndarray) -> np.ndarray:
    """``flat[base[:, None] + off[None, :]]`` (every index in bounds). numpy's gather beats a numba
    loop here (measured: 1.7 ms vs 3.7 ms for 4096 x 256 uint16 on 2 cores), so it stays numpy."""
    return flat[base[:, None] + off[None, :]]


def batched_dot(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``einsum("gmk,gkn->gmn", a, b) + c`` in float64, bit for bit: each dot product is summed
    from +0 in k order (the order numpy's einsum uses for these contiguous operands; checked on
    inputs whose sums round by tests/test_benchmarks.py), then ``c`` is added.

    Which NaN payload survives ``x + y`` when both are NaN depends on operand order, which the
    compiler may swap; so when any result is NaN the whole batch is redone with einsum."""
    if (HAVE_NUMBA and a.ndim == b.ndim == c.ndim == 3 and a.shape[2] == b.shape[1]
            and c.shape == (a.shape[0], a.shape[1], b.shape[2])
            and a.dtype == b.dtype == c.dtype == np.float64):
        out, nan = _batched_dot_jit(np.ascontiguousarray(a), np.ascontiguousarray(b), np.ascontiguousarray(c))
        if not nan:
            return out
    return _batched_dot_numpy(a, b, c)
