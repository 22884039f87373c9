"""LDS-staged, double-buffered GEMM with multi-wave workgroups: ``C = A @ B`` (f16 in, f32 out).

A workgroup of ``waves_m x waves_n`` waves owns a ``(waves_m*m) x (waves_n*n)`` block of C; each
wave computes its own ``m x n`` sub-tile with one matrix instruction per k-step. Per k-step the
waves copy the block's A slab (BM x BK) and B slab (BK x BN) from global memory into LDS together
— each wave a contiguous strip of rows through a vectorised copy layout — and then every wave
reads its A rows and B columns from LDS *in the instruction's operand layouts*. A rows are shared
by the ``waves_n`` waves of a row, B columns by the ``waves_m`` waves of a column: that sharing is
what the LDS buys.

Double buffering: each LDS buffer holds two slabs stacked on rows; step ``i`` reads slab
``i % 2`` while the waves stage step ``i + 1`` into slab ``(i + 1) % 2`` (a uniform branch skips
the stage on the last step). One barrier per step is then enough: it separates step ``i``'s reads
of a slab from step ``i + 1``'s writes to it, and step ``i``'s writes from step ``i + 1``'s reads.
``drop_barrier=True`` removes it, and the simulator's race detector names the workgroup, the
waves and the LDS byte.

The shared layout (``pad``, or an XOR swizzle ``vec``/``per_phase``/``max_phase``, see
:class:`tilesim.ir.LdsLayout`) decides the bank conflicts; ``SMEM`` lists the ones compared in
the tests. Targets: RDNA4 gfx1201 (wave32 WMMA) and CDNA3 gfx942 (wave64 MFMA).
Run: ``python -m examples.lds_gemm``.
"""

from __future__ import annotations

import numpy as np

import tilesim as ts
from tilesim.layouts import Layout

CONFIGS = [  # (target, instruction)
    ("gfx1201", "v_wmma_f32_16x16x16_f16"),
    ("gfx942", "v_mfma_f32_16x16x16_f16"),
]

# Shared-memory layouts (kernel options). A slab row is 16 f16 = 8 dwords, so with 32 banks rows
# r, r+4, r+8, r+12 start on the same bank: reading an operand fragment (16 rows, a few dwords
# each) hits each bank 4 times. "swizzled" XORs the dword within the row with (row // 4) % 4,
# which sends those four rows to four different banks.
SMEM = {
    "plain": {},
    "padded": {"pad": 2},  # one dword of padding per row: row stride 9 dwords
    "swizzled": {"vec": 2, "per_phase": 4, "max_phase": 4},
}


def copy_layout(rows: int, cols: int, wave_size: int) -> Layout:
    """A wave's share of a slab: ``rows x cols`` elements, each lane ``cols*rows/wave_size``
    consecutive elements of one row (one vector load per lane), lanes in row-major order."""
    per_lane = rows * cols // wave_size
    if per_lane < 1 or rows * cols % wave_size or cols % per_lane:
        raise ValueError(f"a {rows}x{cols} strip does not split into {wave_size} equal row segments")
    lanes_per_row = cols // per_lane
    return Layout.from_function({"lane": wave_size, "slot": per_lane}, {"row": rows, "col": cols},
                                lambda lane, slot: {"row": lane // lanes_per_row,
                                                    "col": lane % lanes_per_row * per_lane + slot})


@ts.kernel
def lds_gemm(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"],
             *, mma="v_wmma_f32_16x16x16_f16", waves_m=2, waves_n=2, pad=0, vec=1, per_phase=1, max_phase=1,
             drop_barrier=False):
    op = ts.mma_op(mma)
    nw = waves_m * waves_n
    ts.waves(nw)
    BM, BN, BK = waves_m * op.m, waves_n * op.n, op.k
    ts.grid(A.shape[0] // BM, B.shape[1] // BN)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    w = ts.wave_id()
    wm, wn = w // waves_n, w % waves_n
    smem = {"pad": pad, "vec": vec, "per_phase": per_phase, "max_phase": max_phase}
    sA = ts.lds_alloc("f16", 2 * BM, BK, **smem)  # two A slabs stacked on rows
    sB = ts.lds_alloc("f16", 2 * BK, BN, **smem)  # two B slabs
    a_rows, b_rows = BM // nw, BK // nw  # each wave copies this many rows of each slab
    a_copy, b_copy = copy_layout(a_rows, BK, op.wave_size), copy_layout(b_rows, BN, op.wave_size)

    def stage(k, slab):  # global -> registers -> LDS slab `slab`, this wave's strip
        ga = ts.load(A[tm * BM + w * a_rows:, k:], a_copy)
        ts.lds_store(sA, slab * BM + w * a_rows, 0, ga)
        gb = ts.load(B[k + w * b_rows:, tn * BN:], b_copy)
        ts.lds_store(sB, slab * BK + w * b_rows, 0, gb)

    stage(0, 0)
    ts.barrier()
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], BK):
        cur = k // BK % 2
        with ts.when(k + BK < A.shape[1]):
            stage(k + BK, 1 - cur)
        a = ts.lds_load(sA, cur * BM + wm * op.m, 0, op.layout("A"))
        b = ts.lds_load(sB, cur * BK, wn * op.n, op.layout("B"))
        acc = ts.mma(op, a, b, acc)
        if not drop_barrier:
            ts.barrier()
    ts.store(C[tm * BM + wm * op.m:, tn * BN + wn * op.n:], acc)


def programs(M: int = 32, N: int = 64, K: int = 64, *, smem: str = "swizzled", **options: object) -> list[ts.Program]:
    return [lds_gemm.specialize(target=t, M=M, N=N, K=K, mma=m, **SMEM[smem], **options) for t, m in CONFIGS]


def inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
    return {"A": rng.standard_normal((M, K)).astype(np.float16), "B": rng.standard_normal((K, N)).astype(np.float16)}


def reference(A: np.ndarray, B: np.ndarray) -> dict[str, np.ndarray]:
    return {"C": A.astype(np.float64) @ B.astype(np.float64)}


if __name__ == "__main__":
    for smem in SMEM:
        for prog in programs(smem=smem):
            arrays = inputs(prog)
            out = ts.simulate(prog, **arrays)
            err = float(np.abs(out["C"] - reference(**arrays)["C"]).max())
            r = out.report
            print(f"{prog.target:8} {smem:9} max |C - float64| = {err:.2e}  bank-conflict cycles "
                  f"{r.lds_bank_conflict_cycles:4} / {r.lds_accesses} LDS instructions, races {r.race_count}")
    prog = programs(smem="plain", drop_barrier=True)[0]
    r = ts.simulate(prog, **inputs(prog)).report
    print(f"without the loop barrier: {r.race_count} racing byte accesses; first: {r.races[0]}")
