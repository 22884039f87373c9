"""A block-tiled GEMM shaped like the kernels people tune: ``C = A @ B`` (f16 in, f32 out).

A workgroup owns a ``BM x BN`` block of C (128 x 128) and walks K in slabs of ``BK`` (32). Its
``waves_m x waves_n`` waves each own a warp tile of ``tiles_m x tiles_n`` matrix-instruction tiles
— a list of accumulators, one per tile. Per slab:

* **global -> LDS, 128 bits a lane**: each wave copies a strip of rows of the A slab (BM x BK) and
  of the B slab (BK x BN) through :func:`copy_layout`, 8 consecutive f16 of a row per lane and
  pass, so the code generator emits one 128-bit load and one 128-bit LDS store per pass
  (tilesim/codegen/wide.py);
* **swizzled LDS**: 16-byte units XORed with the row (``vec=8``), which keeps the 128-bit stores
  whole and spreads the fragment reads over the banks;
* **LDS -> fragments** (``ldmatrix`` / ``ldmatrix.trans`` on NVIDIA, tilesim/codegen/ldmatrix.py):
  for each k-step of the instruction, the warp tile's A fragments
  (``tiles_m``) and B fragments (``tiles_n``) are read once and used ``tiles_n`` / ``tiles_m``
  times each — the register reuse that makes a warp tile pay;
* **double buffering**: two slabs per buffer; step ``i`` reads slab ``i % 2`` while the waves stage
  step ``i + 1`` into the other; one barrier per step (see examples/lds_gemm.py for why one is enough).
* **asynchronous copies** (``async_copy=True``): the slabs go global -> LDS with ``ts.lds_copy_async``
  (``cp.async`` on NVIDIA, no registers), so step ``i + 1``'s copy is in flight while step ``i``'s mma run.
  Per step: ``ts.async_wait(0)`` (this wave's copy of slab ``i`` landed), ``ts.barrier()`` (every wave's
  landed, and every wave is done reading slab ``i - 1``), issue slab ``i + 1`` into the other buffer and
  commit it, then compute on slab ``i``. Still one barrier per step. ``stages=3`` keeps two copies in
  flight (three slabs per buffer, ``ts.async_wait(1)``). On CDNA3/CDNA4 the copy is
  ``global_load_lds_dword`` / gfx950's ``global_load_lds_dwordx4``, which writes lane ``l``'s bytes at one
  LDS address + ``l * bytes``: the copy layout is then :func:`lds_order_layout` (each lane fetches the
  global elements that land at its LDS place, the swizzle undone on the global side). Other AMD targets
  emit the copy synchronously (same result; docs/guide.md).

Variants (``CONFIGS``): NVIDIA sm_90 ``mma.sync m16n8k16`` (4 warps, 2 x 2, warp tile 64 x 64),
CDNA3 gfx942 and CDNA4 gfx950 MFMA 16x16x16 (4 waves, 2 x 2, warp tile 64 x 64), RDNA4 gfx1201 WMMA 16x16x16
(8 waves, 2 x 4, warp tile 64 x 32). Run: ``python -m examples.block_gemm``.
"""

from __future__ import annotations

import numpy as np

import tilesim as ts
from tilesim.layouts import Layout
from tilesim.targets import lds_dma_bytes

# target -> (instruction, options)
CONFIGS = {
    # 4 warps of 64x64. Warp grids tried on the H100 at 4096³ with ldmatrix fragment loads (TFLOP/s): 2x2 of
    # 64x64: 205, 2x4 of 64x32: 209, 2x4 of 64x64 (128x256 blocks): 187, 4x2 of 64x32: 189 — within noise
    # of each other at the top; the one with fewest warps is kept
    "sm_90": ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", {"waves_m": 2, "waves_n": 2, "tiles_m": 4,
                                                                    "tiles_n": 8}),
    "gfx942": ("v_mfma_f32_16x16x16_f16", {"waves_m": 2, "waves_n": 2, "tiles_m": 4, "tiles_n": 4}),
    "gfx950": ("v_mfma_f32_16x16x16_f16", {"waves_m": 2, "waves_n": 2, "tiles_m": 4, "tiles_n": 4}),
    "gfx1201": ("v_wmma_f32_16x16x16_f16", {"waves_m": 2, "waves_n": 4, "tiles_m": 4, "tiles_n": 2}),
}
VEC = 8  # f16 per lane per copy pass: 128 bits


def copy_layout(rows: int, cols: int, wave_size: int, vec: int = VEC) -> Layout:
    """A wave's strip of a slab, ``rows x cols``: per pass, lane ``l`` holds ``vec`` consecutive
    elements of row ``l // (cols/vec)`` (slots ``p*vec ..`` for pass ``p``); the next pass is the
    next ``wave_size / (cols/vec)`` rows."""
    per_row = cols // vec
    if cols % vec or per_row > wave_size or wave_size % per_row or rows * cols % (wave_size * vec):
        raise ValueError(f"a {rows}x{cols} strip does not split into {wave_size}-lane passes of {vec} elements")
    rows_per_pass = wave_size // per_row
    return Layout.from_function({"lane": wave_size, "slot": rows * cols // wave_size}, {"row": rows, "col": cols},
                                lambda lane, slot: {"row": slot // vec * rows_per_pass + lane // per_row,
                                                    "col": lane % per_row * vec + slot % vec})


def lds_order_layout(rows: int, cols: int, wave_size: int, group: int, vec: int, per_phase: int,
                     max_phase: int) -> Layout:
    """A wave's strip of a slab, ``rows x cols``, for a copy instruction that writes lane ``l``'s
    ``group`` elements at one LDS address + ``l * group`` elements (``global_load_lds``): per pass,
    lane ``l`` owns LDS row ``l // (cols/group)``, elements ``(l % (cols/group)) * group ..`` of it, and
    fetches the global columns the buffer's swizzle (``c ^ ((r // per_phase) % max_phase) * vec``, its
    own inverse) stores there. Valid where the strip starts on a row that is a multiple of
    ``per_phase * max_phase`` (the swizzle's period), as every strip of :func:`block_gemm` does."""
    per_row = cols // group
    if cols % group or vec % group or per_row > wave_size or wave_size % per_row or rows * cols % (wave_size * group):
        raise ValueError(f"a {rows}x{cols} strip does not split into {wave_size}-lane passes of {group} elements")
    rows_per_pass = wave_size // per_row

    def at(lane, slot):
        row = slot // group * rows_per_pass + lane // per_row
        lds_col = lane % per_row * group + slot % group
        return {"row": row, "col": lds_col ^ (row // per_phase % max_phase * vec)}
    return Layout.from_function({"lane": wave_size, "slot": rows * cols // wave_size}, {"row": rows, "col": cols}, at)


@ts.kernel
def block_gemm(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"],
               *, mma="v_mfma_f32_16x16x16_f16", waves_m=2, waves_n=2, tiles_m=4, tiles_n=4, BK=32, async_copy=False,
               stages=2, lds_order=0):
    op = ts.mma_op(mma)
    nw = waves_m * waves_n
    ts.waves(nw)
    TM, TN = tiles_m * op.m, tiles_n * op.n  # warp tile
    BM, BN = waves_m * TM, waves_n * TN
    ts.grid(A.shape[0] // BM, B.shape[1] // BN)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    w = ts.wave_id()
    wm, wn = w // waves_n, w % waves_n
    # 16-byte swizzle units: A rows are BK f16 (64 bytes), so rows 2 apart share banks -> phase every 2 rows;
    # B rows are BN f16 (256 bytes), every row -> phase every row
    nst = stages if async_copy else 2  # slabs per buffer
    sA = ts.lds_alloc("f16", nst * BM, BK, vec=VEC, per_phase=2, max_phase=BK // VEC)
    sB = ts.lds_alloc("f16", nst * BK, BN, vec=VEC, per_phase=1, max_phase=min(8, BN // VEC))
    a_rows, b_rows = BM // nw, BK // nw
    if lds_order:  # copies whose lanes write consecutive LDS places, `lds_order` bytes each (global_load_lds)
        g = lds_order // 2
        a_copy = lds_order_layout(a_rows, BK, op.wave_size, g, VEC, 2, BK // VEC)
        b_copy = lds_order_layout(b_rows, BN, op.wave_size, g, VEC, 1, min(8, BN // VEC))
    else:
        a_copy, b_copy = copy_layout(a_rows, BK, op.wave_size), copy_layout(b_rows, BN, op.wave_size)

    def stage(k, slab):  # global -> registers -> LDS slab `slab`, this wave's strips
        ga = ts.load(A[tm * BM + w * a_rows:, k:], a_copy)
        gb = ts.load(B[k + w * b_rows:, tn * BN:], b_copy)
        ts.lds_store(sA, slab * BM + w * a_rows, 0, ga)
        ts.lds_store(sB, slab * BK + w * b_rows, 0, gb)

    def stage_async(k, slab):  # global -> LDS slab `slab` without registers, in flight until the wait
        ts.lds_copy_async(sA, slab * BM + w * a_rows, 0, A[tm * BM + w * a_rows:, k:], a_copy)
        ts.lds_copy_async(sB, slab * BK + w * b_rows, 0, B[k + w * b_rows:, tn * BN:], b_copy)

    if async_copy:
        for s in range(nst - 1):  # the first nst - 1 slabs in flight, one group each (empty past K)
            if s * BK < A.shape[1]:
                stage_async(s * BK, s)
            ts.async_commit()
    else:
        stage(0, 0)
        ts.barrier()
    acc = [[ts.zeros(op.layout("C"), "f32") for _ in range(tiles_n)] for _ in range(tiles_m)]
    for k in ts.range(0, A.shape[1], BK):
        cur = k // BK % nst
        if async_copy:
            ts.async_wait(nst - 2)  # this wave's copies of slab `cur` landed (all but the newest nst - 2 groups)
            ts.barrier()  # ... and every wave's; every wave is done reading the slab the previous step read
            ahead = (nst - 1) * BK
            with ts.when(k + ahead < A.shape[1]):
                stage_async(k + ahead, (k // BK + nst - 1) % nst)
            ts.async_commit()  # (an empty group near the end)
        else:
            with ts.when(k + BK < A.shape[1]):
                stage(k + BK, 1 - cur)
        for kk in range(0, BK, op.k):
            a = [ts.lds_load(sA, cur * BM + wm * TM + i * op.m, kk, op.layout("A")) for i in range(tiles_m)]
            b = [ts.lds_load(sB, cur * BK + kk, wn * TN + j * op.n, op.layout("B")) for j in range(tiles_n)]
            for i in range(tiles_m):
                for j in range(tiles_n):
                    acc[i][j] = ts.mma(op, a[i], b[j], acc[i][j])
        if not async_copy:
            ts.barrier()
    for i in range(tiles_m):
        for j in range(tiles_n):
            ts.store(C[tm * BM + wm * TM + i * op.m:, tn * BN + wn * TN + j * op.n:], acc[i][j])


def program(target: str, M: int = 128, N: int = 128, K: int = 64, async_copy: bool = False,
            stages: int = 2) -> ts.Program:
    mma, options = CONFIGS[target]
    # the widest direct global -> LDS load a lane of f16 groups can use (16 bytes on gfx950, 4 on gfx942)
    dma = max((b for b in lds_dma_bytes(target) if b in (4, 16)), default=0) if async_copy else 0
    return block_gemm.specialize(target=target, M=M, N=N, K=K, mma=mma, async_copy=async_copy, stages=stages,
                                 lds_order=dma, **options)


def programs(M: int = 128, N: int = 128, K: int = 64) -> list[ts.Program]:
    return [program(t, M, N, K) for t in CONFIGS]


def inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
    return {"A": rng.standard_normal((M, K)).astype(np.float16), "B": rng.standard_normal((K, N)).astype(np.float16)}


def reference(A: np.ndarray, B: np.ndarray) -> dict[str, np.ndarray]:
    return {"C": A.astype(np.float64) @ B.astype(np.float64)}


if __name__ == "__main__":
    for prog in programs():
        arrays = inputs(prog)
        out = ts.simulate(prog, **arrays)
        err = float(np.abs(out["C"] - reference(**arrays)["C"]).max())
        r = out.report
        print(f"{prog.target:8} max |C - float64| = {err:.2e}  bank-conflict cycles {r.lds_bank_conflict_cycles} "
              f"/ {r.lds_accesses} LDS instructions, races {r.race_count}")
