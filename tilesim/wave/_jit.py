"""The numba kernels of :mod:`tilesim.wave.kernels`, in their own module so that importing tilesim
does not import numba (about 0.35 s): :func:`tilesim.wave.kernels._jit` imports this on first use.
Compiled on first call and cached on disk (``cache=True``). None uses numba's thread pool
(``parallel=True``): on a shared two-core machine its hand-offs made the per-op batched dot product
40x slower than a plain loop (10 ms vs 0.24 ms for 256 waves), and its workers spin at each
parallel region's barrier; a large mma chain or step runs the one-thread kernel on Python threads
instead (:func:`tilesim.wave.kernels.mma_chain`)."""

import functools

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


# The MAC kernels below vectorise across output columns, never across k. Each output element is
# ``s = 0.0; s += a[k] * b[k] for k in order; d = s + c``: one chain per element, in k order, and
# the columns ``n`` of a row are independent chains, so with the tile shape a compile-time constant
# (the closures below; numba freezes closure cells, and its disk cache keys on them) the k loop
# unrolls and the n loop becomes SIMD lanes (vmulpd/vaddpd, 4 doubles a lane group) without changing
# any element's order of operations. (With k and n both loops of unknown length the compiler kept
# the sums in memory: 3 G MAC/s on this machine's cores against about 10 with the shape constant.)
#
# FMA: the kernels allow LLVM to contract ``s + a * b`` into one fused multiply-add (fastmath
# "contract" only: no reassociation, no reciprocal, NaN and Inf kept). That gives the same bits as
# the separate multiply and add whenever ``a * b`` is exact in float64, because then the FMA's one
# rounding of ``s + a*b`` and the add's rounding of ``s + fl(a*b)`` round the same real number.
# ``a * b`` is exact when both are float32 values (the callers' operands are 8- or 16-bit floats,
# all float32 values; :func:`tilesim.wave.kernels.mma_chain` checks): 24 + 24 significand bits fit
# in 53, and |a*b| lies in [2**-298, 2**256) or is 0, inside float64's normal range, so no overflow,
# underflow or subnormal rounding; 0, -0, Inf and NaN products are the same values either way
# (inf * 0 is NaN in both). tests/test_mac_kernel.py checks this on adversarial spreads.


def _compile(fn, M: int, N: int, K: int, contract: bool):
    """``fn`` compiled under a name of its own per variant: numba names a cache file and the
    machine-code symbols after the qualified name, and variants of one closure sharing them could
    collide (a symbol loaded from the disk cache against one compiled in this process)."""
    fn.__qualname__ = fn.__name__ = f"{fn.__name__}_{M}x{N}x{K}_{'fma' if contract else 'nofma'}"
    return numba.njit(cache=True, nogil=True, fastmath={"contract"} if contract else False)(fn)


@functools.lru_cache(maxsize=None)
def mma_chain_kernel(M: int, N: int, K: int, contract: bool):
    """The fused chain for ``M x N x K`` tiles (see :func:`tilesim.wave.kernels.mma_chain`):
    ``kernel(ta, ia, tb, ib, acc)`` runs steps ``t`` of waves ``g``: A tile ``ta[ia[t, g]]``
    (k-major, ``[k*M + m]``), B tile ``tb[ib[t, g]]`` (row-major, ``[k*N + n]``), ``acc[g]`` (float32
    ``[M, N]``, updated in place) ``= f32(sum_k a*b + acc)``, each sum from +0 in k order in float64.
    Returns True when a result was NaN. One thread (the caller runs ranges of waves on threads).
    ``contract``: FMA allowed, for operands that are all float32 values (see above)."""

    def chain(ta, ia, tb, ib, acc):  # pragma: no cover - compiled
        _ = contract  # a closure cell, so numba's disk cache keys on it (its key leaves out fastmath)
        T, G = ia.shape
        nan = 0
        for g in range(G):
            for t in range(T):
                at = ta[ia[t, g]]
                b = tb[ib[t, g]]
                for m in range(M):
                    row = acc[g, m]
                    for n in range(N):
                        s = 0.0
                        for k in range(K):
                            s += at[k * M + m] * b[k * N + n]
                        row[n] = np.float32(s + np.float64(row[n]))
            # a NaN result stays NaN through every later step (each adds the accumulator), so the
            # wave's final accumulator holds a NaN exactly when some step's result was NaN: tested
            # once per wave instead of per step (10% of the kernel's time)
            for m in range(M):
                for n in range(N):
                    x = acc[g, m, n]
                    nan += x != x
        return nan > 0

    return _compile(chain, M, N, K, contract)


@numba.njit(cache=True, nogil=True)
def _gather_decoded(bits, lut, starts, off):  # pragma: no cover - compiled
    """``lut[bits[starts[u] + off[e]]]`` as float64 ``[u, e]`` (0 where ``off[e] < 0``): the operand
    windows of a fused chain decoded in one pass (numpy took an int64 index array, a gather and a
    conversion, each as large as the windows)."""
    out = np.empty((starts.size, off.size), np.float64)
    for u in range(starts.size):
        s0 = starts[u]
        for e in range(off.size):
            o = off[e]
            out[u, e] = lut[bits[s0 + o]] if o >= 0 else 0.0
    return out


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
