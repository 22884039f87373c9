"""2:4 structured-sparse GEMM: ``C = A @ B`` with A pruned to two non-zeros in every four k.

A is stored the way sparse kernels store it — compressed once on the host (as cuSPARSELt /
hipSPARSELt do), never in the kernel: ``Av`` holds the two kept values of each group of four k
(``M x K/2``), ``Am`` one metadata byte per two groups (``M x K/8``; per group the 2-bit
positions ``idx0 | idx1 << 2``, the lower group in the low nibble). Those bytes are exactly what
the instruction's index VGPR holds, so the kernel loads both with plain loads
(``op.layout("A")``, ``op.layout("index")``) and passes the metadata as ``ts.mma(..., index=)``.

* CDNA3 (gfx942, wave64): ``v_smfmac_f32_16x16x32_f16`` and ``v_smfmac_f32_32x32x16_f16``; with
  16-bit A one index VGPR holds four index sets and ABID picks one (``index_set``).
* RDNA4 (gfx1201): ``v_swmmac_f32_16x16x32_f16`` in wave32 and wave64; OPSEL (``index_key``)
  picks the index set.

:mod:`tilesim.matrix.sparse` compresses (:func:`compress`) and expands (:func:`decompress`);
the reference is float64 numpy on the decompressed matrix. Run: ``python -m examples.sparse_gemm``.
"""

from __future__ import annotations

import numpy as np

import tilesim as ts
from tilesim.matrix.sparse import compress, decompress

CONFIGS = [  # (target, wave size or None for the target's default, instruction, index set)
    ("gfx942", None, "v_smfmac_f32_16x16x32_f16", 0),
    ("gfx942", None, "v_smfmac_f32_32x32x16_f16", 1),
    ("gfx1201", None, "v_swmmac_f32_16x16x32_f16", 0),
    ("gfx1201", None, "v_swmmac_f32_16x16x32_f16", 1),
    ("gfx1201", 64, "v_swmmac_f32_16x16x32_f16", 2),
]


@ts.kernel
def sparse_gemm(Av: ts.Tensor["f16", "M", "KC"], Am: ts.Tensor["u8", "M", "KM"], B: ts.Tensor["f16", "K", "N"],
                C: ts.Tensor["f32", "M", "N"], *, mma="v_smfmac_f32_16x16x32_f16", index_set=0):
    op = ts.mma_op(mma)
    ts.grid(C.shape[0] // op.m, C.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    # which index set of the index VGPR the instruction reads: ABID (SMFMAC), OPSEL index_key (SWMMAC)
    sel = ({"abid": index_set} if op.row.kind == "smfmac" else {"opsel": index_set}) if index_set else {}
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, B.shape[0], op.k):
        a = ts.load(Av[tm * op.m:, k // 2:], op.layout("A"))  # kept values: K/2 columns per K
        meta = ts.load(Am[tm * op.m:, k // 8:], op.layout("index", **sel))  # one byte per 8 k
        b = ts.load(B[k:, tn * op.n:], op.layout("B"))
        acc = ts.mma(op, a, b, acc, index=meta, **sel)
    ts.store(C[tm * op.m:, tn * op.n:], acc)


def programs(M: int = 64, N: int = 64, K: int = 128) -> list[ts.Program]:
    return [sparse_gemm.specialize(target=t, wave_size=w, M=M, N=N, K=K, KC=K // 2, KM=K // 8, mma=m, index_set=s)
            for t, w, m, s in CONFIGS]


def prune(rng: np.random.Generator, dense: np.ndarray) -> np.ndarray:
    """Keep two random positions of every aligned group of four along the last axis."""
    rows, k = dense.shape
    keep = np.argsort(rng.random((rows, k // 4, 4)), -1)[..., :2]
    mask = np.zeros((rows, k // 4, 4), bool)
    np.put_along_axis(mask, keep, True, -1)
    return np.where(mask.reshape(rows, k), dense, 0)


def inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    (M, _), (K, N) = prog.tensor("Av").shape, prog.tensor("B").shape
    dense = prune(rng, rng.standard_normal((M, K)).astype(np.float16))
    values, meta = compress(dense)
    return {"Av": values.astype(np.float16), "Am": meta, "B": rng.standard_normal((K, N)).astype(np.float16)}


def reference(Av: np.ndarray, Am: np.ndarray, B: np.ndarray) -> dict[str, np.ndarray]:
    return {"C": decompress(np.asarray(Av, np.float64), Am) @ B.astype(np.float64)}


if __name__ == "__main__":
    for prog in programs():
        arrays = inputs(prog)
        out = ts.simulate(prog, **arrays)
        err = float(np.abs(out["C"] - reference(**arrays)["C"]).max())
        mma = next(op for op in prog.walk() if op.kind == "mma_sparse")
        print(f"{prog.target:8} wave{prog.wave_size} {mma.attr('instr'):28} {dict(mma.attr('modifiers'))} "
              f"max |C - float64| = {err:.2e}")
