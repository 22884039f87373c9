"""Batched small GEMMs on multi-block MFMA: one instruction computes ``blocks`` independent products.

``v_mfma_f32_4x4x4f16`` (gfx90a; ``v_mfma_f32_4x4x4_16b_f16`` on gfx942) multiplies 16 pairs of
4x4x4 matrices at once, ``v_mfma_f32_16x16x4f16`` four 16x16x4 pairs, ``v_mfma_f32_32x32x4f16``
two 32x32x4 pairs (and the f32 forms ``4x4x1f32``/``16x16x1f32``/``32x32x1f32``). A batch of
small GEMMs ``C_b = A_b · B_b`` is stored stacked: ``A`` is ``(batch*M, K)`` (batch b in rows
``b*M …``), ``B`` is ``(batch*K, N)``, ``C`` is ``(batch*M, N)``; a multi-block fragment is the
``(blocks*M) x K`` tile of ``blocks`` consecutive batches, so one load per operand feeds one
instruction and one store writes its ``blocks`` results. Each workgroup takes ``blocks`` batches.

CBSZ/ABID broadcast (CDNA3 ISA §7.1.4): with ``cbsz=c`` every group of ``2**c`` adjacent blocks
reads A from block ``abid`` of its group, so ``C_b = A_src(b) · B_b`` with
``src(b) = (b // 2**c) * 2**c + abid`` — one weight tile shared by several inputs. The program
still loads every block's A (the registers hold what the load wrote; the broadcast is in what the
instruction reads), and :func:`reference` takes the same ``cbsz``/``abid``.

Run: ``python -m examples.batched_small_gemm``.
"""

# No `from __future__ import annotations`: the kernels name their tensor type through a closure variable.

import numpy as np

import tilesim as ts
from tilesim.matrix.catalog import lookup

CONFIGS = [  # (target, instruction, element type, cbsz, abid)
    ("gfx942", "v_mfma_f32_4x4x4_16b_f16", "f16", 0, 0),
    ("gfx90a", "v_mfma_f32_4x4x4f16", "f16", 0, 0),
    ("gfx90a", "v_mfma_f32_16x16x4f16", "f16", 0, 0),
    ("gfx942", "v_mfma_f32_32x32x4_2b_f16", "f16", 0, 0),
    ("gfx90a", "v_mfma_f32_4x4x1f32", "f32", 0, 0),
    ("gfx942", "v_mfma_f32_16x16x1_4b_f32", "f32", 0, 0),
]
BROADCAST = [  # one A per group of 2**cbsz blocks
    ("gfx942", "v_mfma_f32_4x4x4_16b_f16", "f16", 4, 5),
    ("gfx90a", "v_mfma_f32_16x16x4f16", "f16", 1, 1),
    ("gfx90a", "v_mfma_f32_32x32x1f32", "f32", 1, 0),
]


def _kernel(dt: str):  # noqa: ANN202 - a ts.kernel
    @ts.kernel
    def batched_small_gemm(A: ts.Tensor[dt, "BM", "K"], B: ts.Tensor[dt, "BK", "N"], C: ts.Tensor["f32", "BM", "N"],
                           *, mma="v_mfma_f32_4x4x4f16", cbsz=0, abid=0):
        op = ts.mma_op(mma)
        ts.grid(C.shape[0] // (op.blocks * op.m))  # one workgroup per `blocks` batches
        g = ts.tile_id(0)
        mods = {"cbsz": cbsz, "abid": abid} if cbsz else {}
        acc = ts.zeros(op.layout("C"), "f32")
        a = ts.load(A[g * (op.blocks * op.m):, 0:], op.layout("A"))  # every block's A, as the registers hold it
        b = ts.load(B[g * (op.blocks * op.k):, 0:], op.layout("B"))
        acc = ts.mma(op, a, b, acc, **mods)
        ts.store(C[g * (op.blocks * op.m):, 0:], acc)
    return batched_small_gemm


KERNELS = {dt: _kernel(dt) for dt in ("f16", "f32")}


def specialize(target: str, mma: str, dt: str, cbsz: int = 0, abid: int = 0, groups: int = 2) -> ts.Program:
    """``groups`` workgroups, each ``blocks`` batches of the instruction's M x K x N."""
    row = lookup(mma, target)
    batches = groups * row.blocks
    return KERNELS[dt].specialize(target=target, BM=batches * row.m, BK=batches * row.k, K=row.k, N=row.n, mma=mma,
                                  cbsz=cbsz, abid=abid)


def programs(groups: int = 2, *, broadcast: bool = False) -> list[ts.Program]:
    return [specialize(t, m, dt, cb, ab, groups) for t, m, dt, cb, ab in (BROADCAST if broadcast else CONFIGS)]


def inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    dt = np.float16 if prog.tensor("A").dtype == "f16" else np.float32
    return {n: rng.standard_normal(prog.tensor(n).shape).astype(dt) for n in ("A", "B")}


def reference(A: np.ndarray, B: np.ndarray, *, blocks: int = 1, cbsz: int = 0, abid: int = 0) -> dict[str, np.ndarray]:
    """Float64 ``C_b = A_src(b) · B_b`` over the stacked batches (``src(b) = b`` without broadcast)."""
    K, N = A.shape[1], B.shape[1]
    batches = B.shape[0] // K
    a = A.astype(np.float64).reshape(batches, -1, K)
    b = B.astype(np.float64).reshape(batches, K, N)
    idx = np.arange(batches)
    if cbsz:
        group, within = 1 << cbsz, idx % blocks  # the broadcast groups are within one instruction's blocks
        idx = idx - within + (within // group) * group + abid
    return {"C": np.einsum("bmk,bkn->bmn", a[idx], b).reshape(-1, N)}


def reference_for(prog: ts.Program, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """:func:`reference` with the program's instruction and CBSZ/ABID."""
    mma = next(op for op in prog.walk() if op.kind == "mma")
    mods = dict(mma.attr("modifiers") or ())
    return reference(arrays["A"], arrays["B"], blocks=lookup(mma.attr("instr"), prog.target).blocks,
                     cbsz=mods.get("cbsz", 0), abid=mods.get("abid", 0))


if __name__ == "__main__":
    for broadcast in (False, True):
        for prog in programs(broadcast=broadcast):
            arrays = inputs(prog)
            out = ts.simulate(prog, **arrays)
            err = float(np.abs(out["C"] - reference_for(prog, arrays)["C"]).max())
            mma = next(op for op in prog.walk() if op.kind == "mma")
            print(f"{prog.target:7} {mma.attr('instr'):28} {dict(mma.attr('modifiers'))!s:24} "
                  f"max |C - float64| = {err:.2e}")
