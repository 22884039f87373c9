"""GEMM whose operands come straight from LDS transpose reads: ``C = Atᵀ @ B`` (f16 in, f32 out).

Both inputs are stored K-major — ``At`` is K x M (A column-major), ``B`` is K x N (row-major) — the
layouts in which an MFMA/WMMA operand's K run is strided in memory. Each k-step copies the K x M
and K x N slabs into LDS unchanged (contiguous rows, one vector per lane), and then
``ts.lds_load_tr`` fills the A and B operand registers with the target's transpose read —
``ds_read_b64_tr_b16`` on gfx950, ``ds_load_tr16_b128`` on gfx1250 — in exactly the instruction's
operand layouts: no register shuffle, no 16-bit gathers. ``transpose=True`` reads the A fragment's
(row, col) = (m, k) from the buffer's (k, m).

The lane map each read uses is the catalog's (``tilesim.matrix.lds_transpose``); the simulator
executes it, the code generator emits the clang builtin, and ``tilesim run --device emulator``
runs the compiled code through the ISA emulator's model of the same instruction.

gfx12 (gfx1200/gfx1201) has no LDS transpose read (only ``global_load_tr_*`` from global memory):
specialising this kernel for it is refused with the targets that have one. gfx1250's lane map
comes from Triton's gfx1250 lowering, not from silicon (docs/lds-transpose.md).
Run: ``python -m examples.lds_tr_gemm``.
"""

from __future__ import annotations

import numpy as np

import tilesim as ts
from examples.lds_gemm import copy_layout

CONFIGS = [  # (target, instruction)
    ("gfx950", "v_mfma_f32_16x16x32_f16"),
    ("gfx1250", "v_wmma_f32_16x16x32_f16"),
]


@ts.kernel
def lds_tr_gemm(At: ts.Tensor["f16", "K", "M"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"],
                *, mma="v_mfma_f32_16x16x32_f16"):
    op = ts.mma_op(mma)
    ts.grid(At.shape[1] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    sA = ts.lds_alloc("f16", op.k, op.m)  # the K x M slab of At, as stored
    sB = ts.lds_alloc("f16", op.k, op.n)  # the K x N slab of B
    a_copy, b_copy = copy_layout(op.k, op.m, op.wave_size), copy_layout(op.k, op.n, op.wave_size)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, At.shape[0], op.k):
        ts.lds_store(sA, 0, 0, ts.load(At[k:, tm * op.m:], a_copy))
        ts.lds_store(sB, 0, 0, ts.load(B[k:, tn * op.n:], b_copy))
        ts.barrier()
        a = ts.lds_load_tr(sA, 0, 0, op.layout("A"), transpose=True)
        b = ts.lds_load_tr(sB, 0, 0, op.layout("B"))
        acc = ts.mma(op, a, b, acc)
        ts.barrier()  # the next step overwrites the slabs
    ts.store(C[tm * op.m:, tn * op.n:], acc)


def programs(M: int = 32, N: int = 32, K: int = 64) -> list[ts.Program]:
    return [lds_tr_gemm.specialize(target=t, M=M, N=N, K=K, mma=m) for t, m in CONFIGS]


def inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    (K, M), (_, N) = prog.tensor("At").shape, prog.tensor("B").shape
    return {"At": rng.standard_normal((K, M)).astype(np.float16), "B": rng.standard_normal((K, N)).astype(np.float16)}


def reference(At: np.ndarray, B: np.ndarray) -> dict[str, np.ndarray]:
    return {"C": At.astype(np.float64).T @ B.astype(np.float64)}


if __name__ == "__main__":
    for prog in programs():
        arrays = inputs(prog)
        out = ts.simulate(prog, **arrays)
        err = float(np.abs(out["C"] - reference(**arrays)["C"]).max())
        reads = sorted({o.attr("instr") for o in prog.walk() if o.kind == "lds_load_tr"})
        print(f"{prog.target:8} {', '.join(reads):20} max |C - float64| = {err:.2e}")
