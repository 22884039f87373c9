"""``D = A·Bᵀ + C`` the way consumer-RDNA inference engines write it.

The weights B are fp16 and stored N x K (one output channel per row, as in a linear layer's
weight matrix); the activations A arrive in fp32 and are converted to fp16 in the kernel, in
registers, right before the WMMA; the bias/residual C is an fp32 input. Targets: RDNA3
(gfx1100, A/B replicated in lanes 16-31) and RDNA4 (gfx1201), both with
``v_wmma_f32_16x16x16_f16``.

* A is loaded through the instruction's A layout *with f32 elements* (16 VGPRs a lane instead
  of 8) and ``frag.to("f16")`` keeps the layout, so the converted fragment is exactly what the
  WMMA reads — no shuffle needed;
* B uses ``ts.load(..., transpose=True)``: element (k, j) of the B operand comes from
  ``B[j][k]`` of the N x K tensor.

Run: ``python -m examples.gemm_abt``.
"""

from __future__ import annotations

import numpy as np

import tilesim as ts

CONFIGS = [  # (target, instruction)
    ("gfx1100", "v_wmma_f32_16x16x16_f16"),
    ("gfx1201", "v_wmma_f32_16x16x16_f16"),
]


@ts.kernel
def gemm_abt(A: ts.Tensor["f32", "M", "K"], B: ts.Tensor["f16", "N", "K"], C: ts.Tensor["f32", "M", "N"],
             D: ts.Tensor["f32", "M", "N"], *, mma="v_wmma_f32_16x16x16_f16"):
    op = ts.mma_op(mma)
    ts.grid(A.shape[0] // op.m, B.shape[0] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.load(C[tm * op.m:, tn * op.n:], op.layout("C"))
    for k in ts.range(0, A.shape[1], op.k):
        a32 = ts.load(A[tm * op.m:, k:], op.layout("A"))  # f32 elements, the A operand's lane/slot map
        a = a32.to("f16")  # v_cvt_f16_f32 per element: same layout, half the registers
        b = ts.load(B[tn * op.n:, k:], op.layout("B"), transpose=True)  # B operand (k, j) <- B[j][k]
        acc = ts.mma(op, a, b, acc)
    ts.store(D[tm * op.m:, tn * op.n:], acc)


def programs(M: int = 32, N: int = 32, K: int = 64) -> list[ts.Program]:
    return [gemm_abt.specialize(target=t, M=M, N=N, K=K, mma=m) for t, m in CONFIGS]


def inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    (M, K), (N, _) = prog.tensor("A").shape, prog.tensor("B").shape
    return {"A": rng.standard_normal((M, K)).astype(np.float32),
            "B": rng.standard_normal((N, K)).astype(np.float16),
            "C": rng.standard_normal((M, N)).astype(np.float32)}


def reference(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> dict[str, np.ndarray]:
    # The kernel converts the activations to f16 (round to nearest even) before the product.
    a16 = A.astype(np.float16).astype(np.float64)
    return {"D": a16 @ B.astype(np.float64).T + C.astype(np.float64)}


if __name__ == "__main__":
    for prog in programs():
        arrays = inputs(prog)
        out = ts.simulate(prog, **arrays)
        err = float(np.abs(out["D"] - reference(**arrays)["D"]).max())
        print(f"{prog.target:8} max |D - float64| = {err:.2e}   check: {'OK' if ts.check(prog).ok else 'errors'}")
