"""GEMM with a fused epilogue: C = bf16(relu(A @ B + bias)) — a bias row broadcast onto the
accumulator (``ts.load_row``), a ReLU, and a bf16 cast and store.

The bias is a 1 x N tensor; ``ts.load_row`` reads ``Bias[0, n0 + col]`` into every row of the
accumulator's layout, so the bias add is an ordinary elementwise ``acc + bias``. The same kernel
runs on RDNA4 (WMMA, wave32), CDNA3 (MFMA, wave64) and sm_90 (mma.sync). Run:
``python -m examples.gemm_bias``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import tilesim as ts

CONFIGS = [  # (target, instruction)
    ("gfx1201", "v_wmma_f32_16x16x16_f16"),
    ("gfx942", "v_mfma_f32_32x32x8f16"),
    ("sm_90", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
]


@ts.kernel
def gemm_bias(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], Bias: ts.Tensor["f32", 1, "N"],
              C: ts.Tensor["bf16", "M", "N"], *, mma="v_wmma_f32_16x16x16_f16"):
    op = ts.mma_op(mma)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], op.k):
        a = ts.load(A[tm * op.m:, k:], op.layout("A"))
        b = ts.load(B[k:, tn * op.n:], op.layout("B"))
        acc = ts.mma(op, a, b, acc)
    bias = ts.load_row(Bias[0:, tn * op.n:], op.layout("C"))
    ts.store(C[tm * op.m:, tn * op.n:], ts.cast(ts.maximum(acc + bias, 0.0), "bf16"))


def programs(M: int = 64, N: int = 64, K: int = 64) -> list[ts.Program]:
    return [gemm_bias.specialize(target=t, M=M, N=N, K=K, mma=m) for t, m in CONFIGS]


def inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
    return {"A": rng.standard_normal((M, K)).astype(np.float16), "B": rng.standard_normal((K, N)).astype(np.float16),
            "Bias": rng.standard_normal((1, N)).astype(np.float32)}


def reference(A: np.ndarray, B: np.ndarray, Bias: np.ndarray) -> dict[str, np.ndarray]:
    """float64 GEMM, bias and ReLU; the one bf16 rounding of the result (ml_dtypes) is the intent."""
    c = np.maximum(A.astype(np.float64) @ B.astype(np.float64) + Bias.astype(np.float64), 0.0)
    return {"C": c.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)}


if __name__ == "__main__":
    for prog in programs():
        arrays = inputs(prog)
        out = ts.simulate(prog, **arrays)
        err = float(np.abs(out["C"].astype(np.float64) - reference(**arrays)["C"]).max())
        print(f"{prog.target:8} max |C - float64 (bf16-rounded)| = {err:.2e}")
