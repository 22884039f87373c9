"""GEMM through one matrix instruction per tile: C = A @ B (f16 in, f32 accumulate).

One kernel, re-specialised for every target that has the instruction: WMMA on RDNA3 (wave32,
A/B replicated in lanes 16-31) and RDNA4, MFMA 32x32x8 and 16x16x16 on CDNA3 (wave64), and
mma.sync m16n8k16 on sm_90. Run: ``python -m examples.gemm``.
"""

from __future__ import annotations

import numpy as np

import tilesim as ts

CONFIGS = [  # (target, instruction)
    ("gfx1100", "v_wmma_f32_16x16x16_f16"),
    ("gfx1201", "v_wmma_f32_16x16x16_f16"),
    ("gfx942", "v_mfma_f32_32x32x8f16"),
    ("gfx942", "v_mfma_f32_16x16x16f16"),
    ("sm_90", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
]


@ts.kernel
def gemm(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"],
         *, mma="v_wmma_f32_16x16x16_f16", a_layout=None, b_layout=None, c_layout=None):
    op = ts.mma_op(mma)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(c_layout or op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], op.k):
        a = ts.load(A[tm * op.m:, k:], a_layout or op.layout("A"))
        b = ts.load(B[k:, tn * op.n:], b_layout or op.layout("B"))
        acc = ts.mma(op, a, b, acc)
    ts.store(C[tm * op.m:, tn * op.n:], acc)


def programs(M: int = 64, N: int = 64, K: int = 64) -> list[ts.Program]:
    return [gemm.specialize(target=t, M=M, N=N, K=K, mma=m) for t, m in CONFIGS]


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
        print(f"{prog.target:8} {prog.body.ops[2].out.dtype} max |C - float64| = {err:.2e}   {out.report.summary()['ops']}")
