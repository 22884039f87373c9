"""MXFP4 GEMM on gfx950: ``C = (A ∘ SA) @ (B ∘ SB)``, e2m1 (fp4) values with one E8M0 scale per 32 k.

The OCP Microscaling (MX) formats store a block of 32 values with one shared power-of-two scale
(E8M0: ``2**(e-127)``). gfx950's ``v_mfma_scale_f32_{16x16x128,32x32x64}_f8f6f4`` applies the scales
in the instruction: A's rows and B's columns arrive in the format CBSZ/BLGP name (4 = fp4 e2m1,
whose lanes hold 32 consecutive k in 4 VGPRs),
and the scale operands SA and SB hold one scale byte per lane — lane ``r + M*kb`` has the scale of
row (or column) ``r``, k-block ``kb`` — in the byte the builtin's ``opsel`` selects (see
docs/catalog.md for the sources). The tile program loads the scales through ``op.layout("SA")``
like any other operand:

* ``SA`` is ``M x K/32`` (the scale of ``A[i][32kb : 32kb+32]``), ``SB`` is ``K/32 x N``;
* the host side passes the scales as their values (powers of two); the reference multiplies the
  decoded e2m1 values (±0, 0.5, 1, 1.5, 2, 3, 4, 6) by the scales in float64.

Run: ``python -m examples.mxfp4_gemm``. fp4 tensors are two values per byte in memory; whether
the HIP generator emits them yet is what ``tilesim check`` reports (``paths``).
"""

import ml_dtypes
import numpy as np

import tilesim as ts

BLOCK = 32  # k per scale (OCP MX)
# (target, instruction)
CONFIGS = [("gfx950", "v_mfma_scale_f32_16x16x128_f8f6f4"), ("gfx950", "v_mfma_scale_f32_32x32x64_f8f6f4")]


@ts.kernel
def mxfp4_gemm(A: ts.Tensor["fp4", "M", "K"], SA: ts.Tensor["e8m0", "M", "KB"],
               B: ts.Tensor["fp4", "K", "N"], SB: ts.Tensor["e8m0", "KB", "N"], C: ts.Tensor["f32", "M", "N"],
               *, mma="v_mfma_scale_f32_16x16x128_f8f6f4"):
    op = ts.mma_op(mma)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], op.k):
        a = ts.load(A[tm * op.m:, k:], op.layout("A", cbsz=4))  # CBSZ 4: A is fp4 e2m1
        b = ts.load(B[k:, tn * op.n:], op.layout("B", blgp=4))
        sa = ts.load(SA[tm * op.m:, k // 32:], op.layout("SA"))  # byte 0 of each lane's scale VGPR
        sb = ts.load(SB[k // 32:, tn * op.n:], op.layout("SB"))
        acc = ts.mma(op, a, b, acc, scale_a=sa, scale_b=sb, cbsz=4, blgp=4)
    ts.store(C[tm * op.m:, tn * op.n:], acc)


def programs(M: int = 32, N: int = 32, K: int = 256) -> list[ts.Program]:
    return [mxfp4_gemm.specialize(target=t, M=M, N=N, K=K, KB=K // BLOCK, mma=m) for t, m in CONFIGS]


def scale_bytes(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """E8M0 scale bytes around 127 (= 1.0): 2**-6 .. 2**6."""
    return rng.integers(121, 134, shape).astype(np.uint8)


def inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    """Random e2m1 codes (every one is finite) and E8M0 scale bytes, decoded to values (ml_dtypes)."""
    rng = np.random.default_rng(seed)
    (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
    raw = {"A": rng.integers(0, 16, (M, K)).astype(np.uint8), "B": rng.integers(0, 16, (K, N)).astype(np.uint8),
           "SA": scale_bytes(rng, (M, K // BLOCK)), "SB": scale_bytes(rng, (K // BLOCK, N))}
    return decode(raw)


def decode(raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Codes -> values: A/B as e2m1 (one code per uint8), SA/SB as E8M0 (through ml_dtypes)."""
    fmt = {"A": ml_dtypes.float4_e2m1fn, "B": ml_dtypes.float4_e2m1fn,
           "SA": ml_dtypes.float8_e8m0fnu, "SB": ml_dtypes.float8_e8m0fnu}
    return {n: np.asarray(b, np.uint8).view(fmt[n]).astype(np.float64) for n, b in raw.items()}


def reference(A: np.ndarray, SA: np.ndarray, B: np.ndarray, SB: np.ndarray) -> dict[str, np.ndarray]:
    """float64: every 32-k block of A's rows and B's columns times its scale, then the product."""
    kb = np.arange(np.shape(A)[1]) // BLOCK
    a = np.asarray(A, np.float64) * np.asarray(SA, np.float64)[:, kb]
    b = np.asarray(B, np.float64) * np.asarray(SB, np.float64)[kb, :]
    return {"C": a @ b}


if __name__ == "__main__":
    for prog in programs():
        arrays = inputs(prog)
        got = ts.simulate(prog, **arrays)["C"]
        ref = reference(**arrays)["C"]
        mma = next(op.attr("instr") for op in prog.walk() if op.kind == "mma_scaled")
        print(f"{prog.target} {mma}: max |C - float64| / max |C| = "
              f"{np.abs(got - ref).max() / np.abs(ref).max():.2e}")
