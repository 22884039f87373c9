"""Compiled inner loops of the simulator: numba, JIT-cached on disk (``cache=True``), each with a
numpy fallback that gives the same bits, so numba stays optional (the ``fast`` extra; a base
install simulates without it, slower). The numba functions live in :mod:`tilesim.wave._jit`,
imported on first use (importing numba costs about 0.35 s, which every ``import tilesim`` used to
pay); a numba that is missing or fails to import (say, built for another numpy) means the
fallbacks. Every function here returns None (or takes its numpy path) when the kernels are off."""

from __future__ import annotations

import functools
import importlib.util
import os
from types import ModuleType

import numpy as np



def _find_numba() -> bool:
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):  # a blocked or half-installed package
        return False


HAVE_NUMBA = _find_numba()  # numba is installed (tests set this False to run the numpy fallbacks)
_PARALLEL_MACS = 1 << 26  # a fused chain this large runs on numba's thread count; smaller ones in one thread
_PARALLEL_STEP_MACS = 1 << 23  # an mma step (every wave, one k-step) this large runs on threads
# wave ranges per thread. Each range gathers every operand tile its waves read, and a GEMM's waves
# are ordered tile row fastest, so every range gathers all the A tiles: two ranges a thread did that
# twice as often, for 15-30% more wall time at 512³-1024³ on two threads (measured, interleaved)
_PARTS = 1

__all__ = ["HAVE_NUMBA", "available", "batched_dot", "gather_windows", "lds_bank_cycles", "lds_races", "mma_chain",
           "mma_step"]


@functools.lru_cache(maxsize=1)
def _import_jit() -> ModuleType | None:
    try:
        import tilesim.wave._jit as jit
    except ImportError:  # numba present but unusable: the numpy fallbacks, same bits
        return None
    return jit


# Tiered: importing numba and loading the kernels from its disk cache costs about 1 s (compiling
# them on a fresh machine 2-4 s), more than a small program's whole simulation on the numpy
# fallbacks. So the fallbacks run until the work they have done in this process reaches this many
# multiply-adds (or bytes checked); then the kernels load and run everything after. Both give the
# same bits, so this moves time only. ``TILESIM_JIT_AFTER=0`` loads them on first use (the tests).
JIT_AFTER = 1 << 24
_spent = 0


def _jit(work: int = 0) -> ModuleType | None:
    """The compiled kernels, or None: no numba, switched off through :data:`HAVE_NUMBA`, or not yet
    worth loading for ``work`` more operations (see :data:`JIT_AFTER`)."""
    global _spent
    if not HAVE_NUMBA:
        return None
    if not _import_jit.cache_info().currsize:  # not loaded yet
        _spent += work
        after = os.environ.get("TILESIM_JIT_AFTER")
        if _spent < (int(after) if after and after.isdigit() else JIT_AFTER):
            return None
    return _import_jit()


def available(work: int = 0) -> bool:
    """Whether the compiled kernels run for ``work`` more operations (may import numba)."""
    return _jit(work) is not None


def _batched_dot_numpy(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.einsum("gmk,gkn->gmn", a, b) + c


def _f32_values(v: np.ndarray) -> bool:
    """Every value of ``v`` is a float32 value (NaN aside: a NaN result falls back anyway), so a
    product of two of them is exact in float64 and the MAC kernels may use FMA (tilesim/wave/_jit.py
    has the proof)."""
    if v.dtype.kind == "f" and v.dtype.itemsize <= 4:
        return True
    with np.errstate(all="ignore"):
        return bool(((v.astype(np.float32) == v) | (v != v)).all())


def _windows(vals: np.ndarray, starts: np.ndarray, off: np.ndarray, lut: np.ndarray | None) -> np.ndarray:
    """The windows ``vals[starts + off]`` as float64 rows (0 where ``off < 0``); with ``lut``,
    ``vals`` are encoded bits and each value is ``lut[bits]``."""
    if lut is not None:
        return _import_jit()._gather_decoded(vals, lut, starts.astype(np.int64, copy=False), off)
    own = off >= 0
    tiles = vals[starts[:, None] + np.where(own, off, 0)[None, :]].astype(np.float64, copy=False)
    if not own.all():
        tiles[:, ~own] = 0.0
    return tiles


def _tiles(vals: np.ndarray, base: np.ndarray, off: np.ndarray,
           lut: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct windows ``vals[base + off]`` (0 where ``off < 0``) of some steps, once each, and
    the index of each (step, wave)'s window: waves that share an operand tile (every wave of a
    GEMM row reads the same A tile) gather it once."""
    uniq, inv = np.unique(base, return_inverse=True)
    return _windows(vals, uniq, off, lut), inv.reshape(base.shape).astype(np.int64)


class _Shifted:
    """Operand windows of a chain whose step ``t`` reads, for every wave, the window of step 0
    moved by ``delta[t]`` (a k-loop advancing its offsets by the same amount for every wave, as a
    GEMM does): the distinct windows and each wave's index are found once instead of per chunk."""

    def __init__(self, base: np.ndarray):
        self.delta = base[:, 0].astype(np.int64) - int(base[0, 0])
        self.ok = bool((base == base[0][None, :] + self.delta[:, None].astype(base.dtype)).all())
        if self.ok:
            self.uniq, inv = np.unique(base[0], return_inverse=True)
            self.inv = inv.reshape(-1).astype(np.int64)

    def tiles(self, vals: np.ndarray, s: int, e: int, off: np.ndarray,
              lut: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        starts = (self.delta[s:e, None] + self.uniq[None, :].astype(np.int64)).reshape(-1)
        idx = np.arange(e - s, dtype=np.int64)[:, None] * self.uniq.size + self.inv[None, :]
        return _windows(vals, starts, off, lut), idx


def mma_chain(va: np.ndarray, base_a: np.ndarray, off_a: np.ndarray, vb: np.ndarray, base_b: np.ndarray,
              off_b: np.ndarray, acc: np.ndarray, k: int, budget: int = 1 << 17,
              inplace: bool = False, lut_a: np.ndarray | None = None,
              lut_b: np.ndarray | None = None, threads_from: int | None = None) -> np.ndarray | None:
    """``T`` chained f32-accumulating mma steps per wave, operands gathered from decoded tensors.

    Step ``t`` of wave ``g`` reads A element ``e`` (row-major ``M x k`` tile) as ``va[base_a[t, g] + off_a[e]]``
    (0 where ``off_a[e] < 0``), B (``k x N``) likewise, and computes ``acc = f32(sum_k a*b + acc)``, each sum
    taken from +0 in k order in float64: the operations of :func:`batched_dot` followed by the f32 register
    encode, in the same order. Steps run in chunks whose distinct operand tiles hold about ``budget``
    elements (memory O(tile), not O(steps)); the f32 accumulator passes between chunks exactly as its
    register would. With ``lut_a`` (``lut_b``), ``va`` (``vb``) holds encoded bits and an element's value
    is ``lut_a[va[...]]``. On threads from ``threads_from`` MACs (default :data:`_PARALLEL_MACS`). Returns the final ``acc`` (float32 ``[G, M, N]``; with ``inplace``, a C-contiguous
    float32 ``acc`` is updated and returned), or None without numba or when a result is NaN (its payload would depend on operand order; the caller then takes the step-by-step path)."""
    T = base_a.shape[0]
    M, N = acc.shape[1], acc.shape[2]
    macs = base_a.size * M * N * k
    jit = _jit(macs)
    if jit is None:
        return None
    # updated in place, chunk by chunk (``inplace``: acc itself, when it is C-contiguous float32)
    out = np.ascontiguousarray(acc, np.float32) if inplace else np.array(acc, np.float32, order="C")
    if not T:
        return out
    off_at = np.ascontiguousarray(off_a.reshape(M, k).T).reshape(-1)  # k-major A tiles for the kernel
    exact = all(_lut_f32(lut) if lut is not None else _f32_values(v) for v, lut in ((va, lut_a), (vb, lut_b)))
    kernel = jit.mma_chain_kernel(M, N, k, exact)
    G = out.shape[0]
    threads = min(jit.numba.get_num_threads(), G) if macs >= (threads_from or _PARALLEL_MACS) else 1
    if threads <= 1:
        return None if _chain_part(kernel, va, base_a, off_at, lut_a, vb, base_b, off_b, lut_b, out, budget) else out
    # Python threads on contiguous wave ranges, each through every step (the kernel releases the
    # GIL). numba's own pool took a parallel region per chunk of steps, and on a loaded machine its
    # workers spun at each region's barrier: twice the CPU time and wall time of one thread.
    # Each range gathers the operand tiles its waves read (see _PARTS).
    cuts = np.linspace(0, G, _PARTS * threads + 1).astype(int)
    parts = [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    futures = [_pool(threads).submit(_chain_part, kernel, va, base_a[:, a:b], off_at, lut_a, vb, base_b[:, a:b], off_b,
                                     lut_b, out[a:b], budget) for a, b in parts]
    nan = [f.result() for f in futures]
    return None if any(nan) else out


@functools.lru_cache(maxsize=4)
def _pool(threads: int) -> "concurrent.futures.ThreadPoolExecutor":
    import concurrent.futures

    return concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="tilesim-mac")


def _chain_part(kernel, va: np.ndarray, base_a: np.ndarray, off_at: np.ndarray, lut_a: np.ndarray | None,
                vb: np.ndarray, base_b: np.ndarray, off_b: np.ndarray, lut_b: np.ndarray | None, out: np.ndarray,
                budget: int) -> bool:
    """Every step of the waves of ``out`` (a C-contiguous range of the accumulator, updated in
    place), a chunk of steps at a time; True when a result was NaN."""
    T = base_a.shape[0]
    M, N = out.shape[1], out.shape[2]
    k = off_at.size // M
    sa, sb = _Shifted(base_a), _Shifted(base_b)
    ua = sa.uniq.size if sa.ok else np.unique(base_a[0]).size
    ub = sb.uniq.size if sb.ok else np.unique(base_b[0]).size
    per_step = ua * M * k + ub * k * N
    # operand tiles a fraction of the accumulator (memory). Each range (thread) gets the whole budget:
    # its tiles stay in its core's L2 (1 MiB of float64 at 2^17), and a chunk of steps passes over
    # the range's accumulator once, so larger chunks pass over it less often (2^17 and a quarter of
    # the accumulator instead of 2^16 split between the ranges and an eighth: 6-9% less CPU time at
    # 1024³; the GEMM's traced peak stays under 1.8x its operand bytes)
    budget = min(budget, max(1 << 12, out.size // 4))
    chunk = max(1, budget // max(1, per_step))
    for s in range(0, T, chunk):
        e = min(T, s + chunk)
        ta, ia = sa.tiles(va, s, e, off_at, lut_a) if sa.ok else _tiles(va, base_a[s:e], off_at, lut_a)
        tb, ib = sb.tiles(vb, s, e, off_b, lut_b) if sb.ok else _tiles(vb, base_b[s:e], off_b, lut_b)
        if kernel(ta, ia, tb, ib, out):
            return True
    return False


def mma_step(abits: np.ndarray, abase: np.ndarray, idx_a: np.ndarray, lut_a: np.ndarray, bbits: np.ndarray,
             bbase: np.ndarray, idx_b: np.ndarray, lut_b: np.ndarray, c: np.ndarray, k: int) -> np.ndarray | None:
    """One f32-accumulating mma step of every wave, read straight from the operands' encoded bits.

    A (row-major ``M x k``) element ``e`` of wave ``g`` is ``lut_a[abits[abase[g] + idx_a[e]]]`` (0 where
    ``idx_a[e] < 0``; ``abits`` flat: a register image's slots, or a tensor's bits), B (``k x N``)
    likewise; ``c`` is the float32 accumulator ``[G, M, N]``. Each result is ``f32(sum_k a*b + c)``
    with the sum taken from +0 in k order in float64: the operations of :func:`batched_dot` followed by
    the f32 register encode, in the same order. Returns D (float32 ``[G, M, N]``), or None without
    numba or when a result is NaN (the caller then takes the general path, whose NaN payloads follow
    numpy's operand order)."""
    # one step of a chain: each distinct operand window decoded once (waves reading a tensor window
    # share them), then the chain's MAC kernel
    return mma_chain(abits, abase[None, :], idx_a, bbits, bbase[None, :], idx_b, c, k, lut_a=lut_a, lut_b=lut_b,
                     threads_from=_PARALLEL_STEP_MACS)


_lut_checked: dict[int, tuple[np.ndarray, bool]] = {}


def _lut_f32(lut: np.ndarray) -> bool:
    """:func:`_f32_values` of a decode table, remembered per table (they are cached and read-only)."""
    hit = _lut_checked.get(id(lut))
    if hit is None or hit[0] is not lut:
        hit = _lut_checked[id(lut)] = (lut, _f32_values(lut))
    return hit[1]


def gather_windows(flat: np.ndarray, base: np.ndarray, off: np.ndarray, chunk: int = 1 << 16) -> np.ndarray:
    """``flat[base[:, None] + off[None, :]]`` (every index in bounds), a few waves at a time (the
    int64 indices of a whole GEMM's operand tiles are 4x its uint16 values). numpy's gather beats a
    numba loop here (measured: 1.7 ms vs 3.7 ms for 4096 x 256 uint16 on 2 cores), so it stays numpy."""
    step = max(1, chunk // max(1, off.size))
    if base.size <= step:
        return flat[base[:, None] + off[None, :]]
    out = np.empty((base.size, off.size), flat.dtype)
    for g0 in range(0, base.size, step):
        out[g0:g0 + step] = flat[base[g0:g0 + step, None] + off[None, :]]
    return out


def batched_dot(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``einsum("gmk,gkn->gmn", a, b) + c`` in float64, bit for bit: each dot product is summed
    from +0 in k order (the order numpy's einsum uses for these contiguous operands; checked on
    inputs whose sums round by tests/test_benchmarks.py), then ``c`` is added.

    Which NaN payload survives ``x + y`` when both are NaN depends on operand order, which the
    compiler may swap; so when any result is NaN the whole batch is redone with einsum."""
    jit = _jit(a.size * b.shape[-1])
    if (jit is not None and a.ndim == b.ndim == c.ndim == 3 and a.shape[2] == b.shape[1]
            and c.shape == (a.shape[0], a.shape[1], b.shape[2])
            and a.dtype == b.dtype == c.dtype == np.float64):
        out, nan = jit._batched_dot_jit(np.ascontiguousarray(a), np.ascontiguousarray(b), np.ascontiguousarray(c))
        if not nan:
            return out
    return _batched_dot_numpy(a, b, c)


def lds_races(addr: np.ndarray, eb: int, wg_of: np.ndarray, wave_of: np.ndarray, active: np.ndarray, write: bool,
              epoch: int, last_writer: np.ndarray, write_epoch: np.ndarray, read_epoch: np.ndarray,
              seen: tuple[np.ndarray, np.ndarray], op_id: int) -> tuple[int, int, int, int, int, bool] | None:
    """The race detector's per-byte pass (:meth:`tilesim.wave.sim._Sim._races`) compiled. Wave ``g``
    (workgroup ``wg_of[g]``, wave ``wave_of[g]``, skipped unless ``active[g]``) touches the ``eb``
    bytes from ``addr[g, r]`` for each record ``r``; in that (wave, record, byte) order each access
    races when another wave of its workgroup touched the byte since the last barrier, judged against
    the state before this op (a write after another wave's write or read, a read after another
    wave's write), or when another wave wrote the byte earlier in this op (a write). Then the state
    is updated (the last writer in access order wins). ``seen`` is scratch of ``last_writer``'s shape
    that op ``op_id`` (unique per call) marks. Returns (races, workgroup, wave and byte of the first
    racing access, the other wave of its race, whether that other access was a write), or None
    without numba (the caller then runs the numpy version)."""
    jit = _jit(addr.size * eb)
    if jit is None:
        return None
    r = jit._races_jit(np.ascontiguousarray(addr, np.int64), eb, wg_of.astype(np.int64), wave_of.astype(np.int64),
                          np.ascontiguousarray(active, np.bool_), write, epoch, last_writer, write_epoch, read_epoch,
                          seen[0], seen[1], op_id)
    return int(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), bool(r[5])


def lds_bank_cycles(addr: np.ndarray, vgpr: np.ndarray, banks: int, active: np.ndarray) -> int | None:
    """Bank-conflict cycles of one LDS access (:meth:`tilesim.wave.sim._Sim._banks`): for each active
    wave and each VGPR instruction (the records with one ``vgpr`` value), the most distinct dwords
    that fall in one of ``banks`` banks, minus one, summed. None without numba."""
    jit = _jit(addr.size)
    if jit is None:
        return None
    order = np.argsort(vgpr, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(vgpr[order]) != 0, True])
    return int(jit._bank_cycles(np.ascontiguousarray(addr, np.int64), order.astype(np.int64),
                                   starts.astype(np.int64), banks, active))
