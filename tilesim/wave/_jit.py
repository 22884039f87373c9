"""The numba kernels of :mod:`tilesim.wave.kernels`, in their own module so that importing tilesim
does not import numba (about 0.35 s): :func:`tilesim.wave.kernels._jit` imports this on first use.
Compiled on first call and cached on disk (``cache=True``). Only the large fused mma chains use
threads (``parallel=True``): on a shared two-core machine the thread pool's hand-offs made the
per-op batched dot product 40x slower than a plain loop (10 ms vs 0.24 ms for 256 waves)."""

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _batched_dot_jit(a, b, c):  # pragma: no cover - compiled
    G, M, K = a.shape
    N = b.shape[2]
    out = np.empty((G, M, N), np.float64)
    nan = np.zeros(G, np.bool_)
    for g in range(G):
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


@numba.njit(cache=True, nogil=True)
def _chain_wave(g, ta, ia, tb, ib, acc, K):  # pragma: no cover - compiled
    """Every step of wave ``g``; True when a result was NaN."""
    T = ia.shape[0]
    M, N = acc.shape[1], acc.shape[2]
    MN = M * N
    nan = False
    c = np.empty(MN, np.float64)
    d = np.empty(MN, np.float64)
    for m in range(M):
        for n in range(N):
            c[m * N + n] = acc[g, m, n]
    for t in range(T):
        at = ta[ia[t, g]]  # this step's A tile, k-major: at[k*M + m]
        b = tb[ib[t, g]]  # B tile, row-major: b[k*N + n]
        d[:] = 0.0
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
                nan = True
            c[i] = np.float64(np.float32(v))
    for m in range(M):
        for n in range(N):
            acc[g, m, n] = c[m * N + n]
    return nan


@numba.njit(cache=True, nogil=True, parallel=True)
def _mma_chain_parallel(ta, ia, tb, ib, acc, K):  # pragma: no cover - compiled
    G = ia.shape[1]
    nan = np.zeros(G, np.bool_)
    for g in numba.prange(G):
        nan[g] = _chain_wave(g, ta, ia, tb, ib, acc, K)
    return nan.any()


@numba.njit(cache=True, nogil=True)
def _mma_chain_serial(ta, ia, tb, ib, acc, K):  # pragma: no cover - compiled
    nan = False
    for g in range(ia.shape[1]):
        if _chain_wave(g, ta, ia, tb, ib, acc, K):
            nan = True
    return nan


@numba.njit(cache=True, nogil=True)
def _races_jit(addr, eb, wg_of, wave_of, active, write, epoch, last_writer, write_epoch, read_epoch, seen_op,
               seen_wave, op_id):  # pragma: no cover - compiled
    """Race check of one LDS op over its bytes in (wave, record, byte) order, active waves only:
    see :func:`tilesim.wave.kernels.lds_races`. Returns (races, workgroup, wave, byte of the first,
    the other wave of its race, whether that other access was a write)."""
    G, R = addr.shape
    W = read_epoch.shape[1]
    count = 0
    f_wg = f_wave = f_byte = f_other = -1
    f_kind = False
    for g in range(G):  # conflicts are judged against the state before this op
        if not active[g]:
            continue
        wg, w = wg_of[g], wave_of[g]
        for r in range(R):
            for e in range(eb):
                x = addr[g, r] + e
                hit = False
                other = -1
                kind = False
                lw = last_writer[wg, x]
                if lw >= 0 and lw != w and write_epoch[wg, x] == epoch:
                    hit, other, kind = True, lw, True
                elif write:
                    for o in range(W):
                        if o != w and read_epoch[wg, o, x] == epoch:
                            hit, other = True, o
                            break
                if write:  # two waves of one workgroup writing this byte in this op: the later one races
                    if seen_op[wg, x] == op_id and seen_wave[wg, x] != w and not hit:
                        hit, other, kind = True, seen_wave[wg, x], True
                    seen_op[wg, x] = op_id
                    seen_wave[wg, x] = w
                if hit:
                    if count == 0:
                        f_wg, f_wave, f_byte, f_other, f_kind = wg, w, x, other, kind
                    count += 1
    for g in range(G):  # then the state: the last writer of a byte in access order wins
        if not active[g]:
            continue
        wg, w = wg_of[g], wave_of[g]
        for r in range(R):
            for e in range(eb):
                x = addr[g, r] + e
                if write:
                    last_writer[wg, x] = w
                    write_epoch[wg, x] = epoch
                else:
                    read_epoch[wg, w, x] = epoch
    return count, f_wg, f_wave, f_byte, f_other, f_kind


@numba.njit(cache=True, nogil=True)
def _bank_cycles(addr, rec_of_vgpr, starts, banks, active):  # pragma: no cover - compiled
    """Sum over active waves and VGPR instructions of (most distinct dwords in one bank) - 1.
    ``rec_of_vgpr[starts[v]:starts[v + 1]]`` are the records (columns of ``addr``) of instruction ``v``."""
    G = addr.shape[0]
    V = starts.size - 1
    total = 0
    width = 1
    for v in range(V):
        width = max(width, starts[v + 1] - starts[v])
    seen = np.empty((banks, width), np.int64)  # the distinct dwords met in each bank so far
    count = np.zeros(banks, np.int64)
    for g in range(G):
        if not active[g]:
            continue
        for v in range(V):
            count[:] = 0
            most = 0
            for j in range(starts[v], starts[v + 1]):
                dw = addr[g, rec_of_vgpr[j]] // 4
                bk = dw % banks
                new = True
                for q in range(count[bk]):
                    if seen[bk, q] == dw:
                        new = False
                        break
                if new:
                    seen[bk, count[bk]] = dw
                    count[bk] += 1
                    if count[bk] > most:
                        most = count[bk]
            total += max(most, 1) - 1
    return total


@numba.njit(cache=True, nogil=True)
def _step_waves(g0, g1, abits, abase, idx_a, lut_a, bbits, bbase, idx_b, lut_b, c, K, out):  # pragma: no cover
    """Waves ``g0:g1`` of one f32-accumulating mma step (see :func:`tilesim.wave.kernels.mma_step`)
    into ``out``; True when a result was NaN."""
    G, M, N = c.shape
    MN = M * N
    at = np.empty(K * M, np.float64)
    b = np.empty(K * N, np.float64)
    d = np.empty(MN, np.float64)
    nan = False
    for g in range(g0, g1):
        a0, b0 = abase[g], bbase[g]
        for m in range(M):
            for k in range(K):
                s = idx_a[m * K + k]
                at[k * M + m] = lut_a[abits[a0 + s]] if s >= 0 else 0.0
        for k in range(K):
            for n in range(N):
                s = idx_b[k * N + n]
                b[k * N + n] = lut_b[bbits[b0 + s]] if s >= 0 else 0.0
        d[:] = 0.0
        # each d[m, n] sums its products from +0 in k order (k outermost only interleaves the sums)
        for k in range(K):
            for m in range(M):
                x = at[k * M + m]
                for n in range(N):
                    d[m * N + n] += x * b[k * N + n]
        for m in range(M):
            for n in range(N):
                v = d[m * N + n] + np.float64(c[g, m, n])
                if v != v:
                    nan = True
                out[g, m, n] = np.float32(v)
    return nan


@numba.njit(cache=True, nogil=True)
def _mma_step_f32(abits, abase, idx_a, lut_a, bbits, bbase, idx_b, lut_b, c, K):  # pragma: no cover - compiled
    """One f32-accumulating mma step per wave from the operands' encoded bits: see
    :func:`tilesim.wave.kernels.mma_step`. Returns (D as float32 [G, M, N], whether a result was NaN)."""
    out = np.empty(c.shape, np.float32)
    nan = _step_waves(0, c.shape[0], abits, abase, idx_a, lut_a, bbits, bbase, idx_b, lut_b, c, K, out)
    return out, nan


@numba.njit(cache=True, nogil=True, parallel=True)
def _mma_step_f32_parallel(abits, abase, idx_a, lut_a, bbits, bbase, idx_b, lut_b, c, K):  # pragma: no cover
    """:func:`_mma_step_f32` on numba's threads, 64 waves a task (each wave's result is its own)."""
    G = c.shape[0]
    out = np.empty(c.shape, np.float32)
    tasks = (G + 63) // 64
    nan = np.zeros(tasks, np.bool_)
    for t in numba.prange(tasks):
        nan[t] = _step_waves(t * 64, min(G, t * 64 + 64), abits, abase, idx_a, lut_a, bbits, bbase, idx_b, lut_b,
                             c, K, out)
    return out, nan.any()
