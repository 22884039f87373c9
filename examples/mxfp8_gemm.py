"""MXFP8 GEMM on gfx950: ``C = (A ∘ SA) @ (B ∘ SB)``, OCP e4m3 values with one E8M0 scale per 32 k.

The OCP Microscaling (MX) formats store a block of 32 values with one shared power-of-two scale
(E8M0: ``2**(e-127)``). gfx950's ``v_mfma_scale_f32_{16x16x128,32x32x64}_f8f6f4`` applies the scales
in the instruction: A's rows and B's columns arrive in the format CBSZ/BLGP name (0 = fp8 e4m3),
and the scale operands SA and SB hold one scale byte per lane — lane ``r + M*kb`` has the scale of
row (or column) ``r``, k-block ``kb`` — in the byte the builtin's ``opsel`` selects (see
docs/catalog.md for the sources). The tile program loads the scales through ``op.layout("SA")``
like any other operand:

* ``SA`` is ``M x K/32`` (the scale of ``A[i][32kb : 32kb+32]``), ``SB`` is ``K/32 x N``;
* the host side passes the scales as their values (powers of two); the reference multiplies the
  decoded e4m3 values by the scales in float64.

Run: ``python -m examples.mxfp8_gemm``; ``tilesim run examples/mxfp8_gemm.py --target gfx950
--device emulator`` runs the compiled kernel in the ISA emulator.
"""

import ml_dtypes
import numpy as np

import tilesim as ts

BLOCK = 32  # k per scale (OCP MX)
# (target, instruction, scale byte of A, of B): the last one keeps its scales in bytes 3 and 1 of the
# scale VGPRs (OPSEL), as a kernel that packs four tiles' scales into one register does
CONFIGS = [("gfx950", "v_mfma_scale_f32_16x16x128_f8f6f4", 0, 0), ("gfx950", "v_mfma_scale_f32_32x32x64_f8f6f4", 0, 0),
           ("gfx950", "v_mfma_scale_f32_16x16x128_f8f6f4", 3, 1)]


@ts.kernel
def mxfp8_gemm(A: ts.Tensor["fp8_ocp", "M", "K"], SA: ts.Tensor["e8m0", "M", "KB"],
               B: ts.Tensor["fp8_ocp", "K", "N"], SB: ts.Tensor["e8m0", "KB", "N"], C: ts.Tensor["f32", "M", "N"],
               *, mma="v_mfma_scale_f32_16x16x128_f8f6f4", sel_a=0, sel_b=0):
    op = ts.mma_op(mma)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], op.k):
        a = ts.load(A[tm * op.m:, k:], op.layout("A", cbsz=0))  # CBSZ 0: A is fp8 e4m3
        b = ts.load(B[k:, tn * op.n:], op.layout("B", blgp=0))
        sa = ts.load(SA[tm * op.m:, k // 32:], op.layout("SA", opsel_a=sel_a))  # byte sel_a of the scale VGPR
        sb = ts.load(SB[k // 32:, tn * op.n:], op.layout("SB", opsel_b=sel_b))
        acc = ts.mma(op, a, b, acc, scale_a=sa, scale_b=sb, cbsz=0, blgp=0, opsel_a=sel_a, opsel_b=sel_b)
    ts.store(C[tm * op.m:, tn * op.n:], acc)


def programs(M: int = 32, N: int = 32, K: int = 256) -> list[ts.Program]:
    return [mxfp8_gemm.specialize(target=t, M=M, N=N, K=K, KB=K // BLOCK, mma=m, sel_a=a, sel_b=b)
            for t, m, a, b in CONFIGS]


def scale_bytes(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """E8M0 scale bytes around 127 (= 1.0): 2**-6 .. 2**6."""
    return rng.integers(121, 134, shape).astype(np.uint8)


def inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    """Random finite e4m3 bytes and E8M0 scale bytes, decoded to the values the kernel reads (ml_dtypes)."""
    rng = np.random.default_rng(seed)
    (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
    ok = np.setdiff1d(np.arange(256), (0x7F, 0xFF)).astype(np.uint8)  # e4m3's two NaN bytes
    raw = {"A": rng.choice(ok, (M, K)), "B": rng.choice(ok, (K, N)),
           "SA": scale_bytes(rng, (M, K // BLOCK)), "SB": scale_bytes(rng, (K // BLOCK, N))}
    return decode(raw)


def decode(raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Bytes -> values: A/B as OCP e4m3, SA/SB as E8M0 (through ml_dtypes)."""
    fmt = {"A": ml_dtypes.float8_e4m3fn, "B": ml_dtypes.float8_e4m3fn,
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
