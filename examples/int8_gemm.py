"""int8 GEMM with i32 accumulation: ``C = A @ B + Bias`` (exact, wrapping to 32 bits like the hardware).

* CDNA3 (gfx942, wave64): ``v_mfma_i32_32x32x16_i8`` — operands are signed i8, no modifier.
* RDNA4 (gfx1201, wave32): ``v_wmma_i32_16x16x16_iu8`` — the ``iu8`` operands are *unsigned*
  unless the NEG field says otherwise: on iu8/iu4 WMMA, NEG bit 0 makes A signed and bit 1 makes
  B signed (RDNA4 ISA §7.9; LLVM's ``__builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12(sa, a, sb,
  b, c, clamp)``). A signed GEMM must pass ``neg=3``; with the default the same bytes read as
  0..255 and every negative value is off by 256 — ``signed=False`` shows that.

Run: ``python -m examples.int8_gemm``.
"""

from __future__ import annotations

import numpy as np

import tilesim as ts

CONFIGS = [  # (target, instruction, NEG modifier for signed A and B)
    ("gfx942", "v_mfma_i32_32x32x16_i8", 0),
    ("gfx1201", "v_wmma_i32_16x16x16_iu8", 3),
]


@ts.kernel
def int8_gemm(A: ts.Tensor["i8", "M", "K"], B: ts.Tensor["i8", "K", "N"], Bias: ts.Tensor["i32", "M", "N"],
              C: ts.Tensor["i32", "M", "N"], *, mma="v_mfma_i32_32x32x16_i8", neg=0):
    op = ts.mma_op(mma)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.load(Bias[tm * op.m:, tn * op.n:], op.layout("C"))
    mods = {"neg": neg} if neg else {}
    for k in ts.range(0, A.shape[1], op.k):
        a = ts.load(A[tm * op.m:, k:], op.layout("A"))
        b = ts.load(B[k:, tn * op.n:], op.layout("B"))
        acc = ts.mma(op, a, b, acc, **mods)
    ts.store(C[tm * op.m:, tn * op.n:], acc)


def programs(M: int = 64, N: int = 64, K: int = 64, *, signed: bool = True) -> list[ts.Program]:
    return [int8_gemm.specialize(target=t, M=M, N=N, K=K, mma=m, neg=neg if signed else 0) for t, m, neg in CONFIGS]


def inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
    return {"A": rng.integers(-128, 128, (M, K)).astype(np.int8), "B": rng.integers(-128, 128, (K, N)).astype(np.int8),
            "Bias": _bias(rng, (M, N))}


def _bias(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Full-range int32 bias with a quarter of it within 2**16 of ±2**31, so ``A @ B + Bias``
    leaves the int32 range for some elements and the accumulator wraps."""
    bias = rng.integers(-(2**31), 2**31, shape)
    edge = rng.random(shape) < 0.25
    bias[edge] = (rng.choice([-1, 1], shape) * (2**31 - rng.integers(1, 2**16, shape)))[edge]
    return bias.astype(np.int32)


def reference(A: np.ndarray, B: np.ndarray, Bias: np.ndarray) -> dict[str, np.ndarray]:
    exact = A.astype(np.int64) @ B.astype(np.int64) + Bias.astype(np.int64)
    return {"C": ((exact + 2**31) % 2**32 - 2**31).astype(np.int64)}  # i32 accumulator wraps


if __name__ == "__main__":
    for signed in (True, False):
        for prog in programs(signed=signed):
            arrays = inputs(prog)
            out = ts.simulate(prog, **arrays)
            wrong = int((out["C"] != reference(**arrays)["C"]).sum())
            print(f"{prog.target:8} signed={signed!s:5} elements != int64 reference: {wrong} of {out['C'].size}")
