"""fp8 GEMM across the two fp8 flavours: ``C = A @ B`` (e4m3 in, f32 accumulate).

``v_mfma_f32_16x16x32_fp8_fp8`` is one mnemonic on CDNA3 and CDNA4, but its bytes mean different
numbers: gfx942 reads them as **FNUZ** e4m3 (exponent bias 8, no infinities, NaN only at 0x80)
and gfx950 as **OCP** e4m3 (bias 7, NaN at 0x7f/0xff, 0x80 = -0), as does RDNA4's
``v_wmma_f32_16x16x16_fp8_fp8`` (CDNA3 ISA §7.1.3; CDNA4 ISA §7.2; OCP 8-bit FP spec v1.0).
Tensile once assumed FNUZ on gfx950; this example shows what that costs:

* **same bytes** (``inputs``): every byte but 0x7f/0x80/0xff is worth exactly twice as much
  under OCP (0x40 is 1.0 FNUZ, 2.0 OCP), so the OCP targets compute 4x the FNUZ product;
* **same real numbers** (``quantized_inputs``): quantising one float tensor into each format
  gives slightly different values (FNUZ has one more binade at the bottom — normal down to
  2**-7 where OCP is subnormal below 2**-6 — OCP one more at the top, up to 448 instead of 240),
  so the products differ slightly.

The tensors are declared in the target's own flavour (memory holds bytes; the instruction
decides what they mean); the host side decodes bytes or quantises floats to that flavour.
Run: ``python -m examples.fp8_gemm``.
"""

# No `from __future__ import annotations`: the kernels' tensor annotations name the fp8 flavour
# through a closure variable, evaluated when each kernel is defined.

import ml_dtypes
import numpy as np

import tilesim as ts
from tilesim.matrix import lookup

CONFIGS = [  # (target, instruction)
    ("gfx942", "v_mfma_f32_16x16x32_fp8_fp8"),  # CDNA3: FNUZ
    ("gfx950", "v_mfma_f32_16x16x32_fp8_fp8"),  # CDNA4: OCP, same mnemonic
    ("gfx1201", "v_wmma_f32_16x16x16_fp8_fp8"),  # RDNA4: OCP
]

_NP = {"fp8_fnuz": ml_dtypes.float8_e4m3fnuz, "fp8_ocp": ml_dtypes.float8_e4m3fn}
NAN_BYTES = (0x7F, 0x80, 0xFF)  # NaN in one flavour or the other (0x80 is FNUZ's NaN, OCP's -0)


def _make(fmt: str) -> ts.ir.Kernel:
    def fp8_gemm(A: ts.Tensor[fmt, "M", "K"], B: ts.Tensor[fmt, "K", "N"], C: ts.Tensor["f32", "M", "N"],
                 *, mma="v_mfma_f32_16x16x32_fp8_fp8"):
        op = ts.mma_op(mma)
        ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        acc = ts.zeros(op.layout("C"), "f32")
        for k in ts.range(0, A.shape[1], op.k):
            a = ts.load(A[tm * op.m:, k:], op.layout("A"))
            b = ts.load(B[k:, tn * op.n:], op.layout("B"))
            acc = ts.mma(op, a, b, acc)
        ts.store(C[tm * op.m:, tn * op.n:], acc)

    fp8_gemm.__name__ = f"{fp8_gemm.__name__}_{fmt.split('_')[1]}"
    return ts.kernel(fp8_gemm)


KERNELS = {fmt: _make(fmt) for fmt in _NP}


def flavour(target: str, mnemonic: str) -> str:
    """The fp8 type the instruction reads on this target (from the catalog row)."""
    return lookup(mnemonic, target).types[0]


def programs(M: int = 32, N: int = 32, K: int = 64) -> list[ts.Program]:
    return [KERNELS[flavour(t, m)].specialize(target=t, M=M, N=N, K=K, mma=m) for t, m in CONFIGS]


def raw_bytes(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    """Random fp8 bytes (the same for every target), avoiding the NaN bytes of either flavour."""
    rng = np.random.default_rng(seed)
    (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
    ok = np.setdiff1d(np.arange(256), NAN_BYTES).astype(np.uint8)
    return {"A": rng.choice(ok, (M, K)), "B": rng.choice(ok, (K, N))}


def decode_bytes(prog: ts.Program, raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What the program's instruction reads from those bytes: values in its fp8 flavour (as float32)."""
    return {n: np.asarray(b, np.uint8).view(_NP[prog.tensor(n).dtype]).astype(np.float32) for n, b in raw.items()}


def inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    """The same bytes on every target, decoded in the target's flavour."""
    return decode_bytes(prog, raw_bytes(prog, seed))


def real_values(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    """One float32 tensor pair for every target, small enough that FNUZ's extra low binade shows."""
    rng = np.random.default_rng(seed)
    (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
    return {"A": (rng.standard_normal((M, K)) * 2.0**-5).astype(np.float32),
            "B": (rng.standard_normal((K, N)) * 2.0**-5).astype(np.float32)}


def quantized_inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    """``real_values`` quantised (round to nearest even) into the program's fp8 flavour on the host."""
    return {n: v.astype(_NP[prog.tensor(n).dtype]).astype(np.float32) for n, v in real_values(prog, seed).items()}


def reference(A: np.ndarray, B: np.ndarray) -> dict[str, np.ndarray]:
    return {"C": A.astype(np.float64) @ B.astype(np.float64)}


if __name__ == "__main__":
    progs = programs()
    fnuz = ts.simulate(progs[0], **inputs(progs[0]))["C"]
    for prog in progs:
        same_bytes = ts.simulate(prog, **inputs(prog))["C"]
        q = quantized_inputs(prog)
        same_reals = ts.simulate(prog, **q)["C"]
        exact = reference(**real_values(prog))["C"]
        print(f"{prog.target:8} {prog.tensor('A').dtype:9} same bytes: C / C_gfx942 = "
              f"{np.median(same_bytes / fnuz):.3g};  same reals: max |C - unquantised float64| = "
              f"{np.abs(same_reals - exact).max():.3e}")
