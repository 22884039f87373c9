"""Compiled inner loops of the simulator: numba, JIT-cached on disk (``cache=True``), each with a
numpy fallback that gives the same bits, so numba stays optional. The numba functions live in
:mod:`tilesim.wave._jit`, imported on first use (importing numba costs about 0.35 s, which every
``import tilesim`` used to pay)."""

from __future__ import annotations

import functools
import importlib.util
from types import ModuleType

import numpy as np

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
_PARALLEL_MACS = 1 << 26  # a fused chain this large runs on threads; smaller ones in one (no pool hand-offs)

__all__ = ["HAVE_NUMBA", "batched_dot", "gather_windows", "lds_bank_cycles", "lds_races", "mma_chain"]


@functools.lru_cache(maxsize=1)
def _jit() -> ModuleType:
    """The compiled kernels (imports numba on first use; only called when :data:`HAVE_NUMBA`)."""
    import tilesim.wave._jit as jit

    return jit


def _batched_dot_numpy(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.einsum("gmk,gkn->gmn", a, b) + c


def _tiles(vals: np.ndarray, base: np.ndarray, off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct windows ``vals[base + off]`` (0 where ``off < 0``) of some steps, once each, and
    the index of each (step, wave)'s window: waves that share an operand tile (every wave of a
    GEMM row reads the same A tile) gather it once."""
    uniq, inv = np.unique(base, return_inverse=True)
    own = off >= 0
    tiles = vals[uniq[:, None] + np.where(own, off, 0)[None, :]]
    if not own.all():
        tiles[:, ~own] = 0.0
    return tiles, inv.reshape(base.shape).astype(np.int64)


def mma_chain(va: np.ndarray, base_a: np.ndarray, off_a: np.ndarray, vb: np.ndarray, base_b: np.ndarray,
              off_b: np.ndarray, acc: np.ndarray, k: int, budget: int = 1 << 18) -> np.ndarray | None:
    """``T`` chained f32-accumulating mma steps per wave, operands gathered from decoded tensors.

    Step ``t`` of wave ``g`` reads A element ``e`` (row-major ``M x k`` tile) as ``va[base_a[t, g] + off_a[e]]``
    (0 where ``off_a[e] < 0``), B (``k x N``) likewise, and computes ``acc = f32(sum_k a*b + acc)``, each sum
    taken from +0 in k order in float64: the operations of :func:`batched_dot` followed by the f32 register
    encode, in the same order. Steps run in chunks whose distinct operand tiles hold about ``budget``
    elements (memory O(tile), not O(steps)); the f32 accumulator passes between chunks exactly as its
    register would. Returns the final ``acc`` (float32 ``[G, M, N]``), or None without numba or when a
    result is NaN (its payload would depend on operand order; the caller then takes the step-by-step path)."""
    if not HAVE_NUMBA:
        return None
    T = base_a.shape[0]
    M, N = acc.shape[1], acc.shape[2]
    out = np.array(acc, np.float32, order="C")  # updated in place, chunk by chunk
    off_at = np.ascontiguousarray(off_a.reshape(M, k).T).reshape(-1)  # k-major A tiles for the kernel
    per_step = np.unique(base_a[0]).size * M * k + np.unique(base_b[0]).size * k * N if T else 1
    chunk = max(1, budget // max(1, per_step))
    for s in range(0, T, chunk):
        ta, ia = _tiles(va, base_a[s:s + chunk], off_at)
        tb, ib = _tiles(vb, base_b[s:s + chunk], off_b)
        kernel = _jit()._mma_chain_parallel if ia.size * M * N * k >= _PARALLEL_MACS else _jit()._mma_chain_serial
        if kernel(ta, ia, tb, ib, out, k):
            return None
    return out


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
        out, nan = _jit()._batched_dot_jit(np.ascontiguousarray(a), np.ascontiguousarray(b), np.ascontiguousarray(c))
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
    if not HAVE_NUMBA:
        return None
    r = _jit()._races_jit(np.ascontiguousarray(addr, np.int64), eb, wg_of.astype(np.int64), wave_of.astype(np.int64),
                          np.ascontiguousarray(active, np.bool_), write, epoch, last_writer, write_epoch, read_epoch,
                          seen[0], seen[1], op_id)
    return int(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), bool(r[5])


def lds_bank_cycles(addr: np.ndarray, vgpr: np.ndarray, banks: int, active: np.ndarray) -> int | None:
    """Bank-conflict cycles of one LDS access (:meth:`tilesim.wave.sim._Sim._banks`): for each active
    wave and each VGPR instruction (the records with one ``vgpr`` value), the most distinct dwords
    that fall in one of ``banks`` banks, minus one, summed. None without numba."""
    if not HAVE_NUMBA:
        return None
    order = np.argsort(vgpr, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(vgpr[order]) != 0, True])
    return int(_jit()._bank_cycles(np.ascontiguousarray(addr, np.int64), order.astype(np.int64),
                                   starts.astype(np.int64), banks, active))
