"""Row softmax over a tile held in matrix-accumulator registers (the attention epilogue).

Each workgroup owns ``op.m`` rows of X (f32) and walks the row in ``op.n``-wide fragments laid
out like the accumulator of a 16x16 matrix instruction — the layout a score tile has right after
``Q·Kᵀ``: RDNA4 (gfx1201, wave32: row = v + 8*(lane/16)) and CDNA3 (gfx942, wave64:
row = v + 4*(lane/16)); in both, one row of a fragment is one VGPR across 16 lanes (col =
lane % 16). The cross-lane reductions (``ts.reduce(frag, "max"/"sum", axis="col")``) leave every
holder of a row with that row's result, so the subtraction, ``exp`` and division are plain
elementwise ops:

    m = max_j x_j,   e_j = exp(x_j - m),   y_j = e_j / sum_j e_j

Run: ``python -m examples.softmax``.
"""

from __future__ import annotations

import numpy as np

import tilesim as ts

CONFIGS = [  # (target, instruction whose C layout holds the tile)
    ("gfx1201", "v_wmma_f32_16x16x16_f16"),
    ("gfx942", "v_mfma_f32_16x16x16_f16"),
]


@ts.kernel
def softmax(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"], *, mma="v_wmma_f32_16x16x16_f16"):
    op = ts.mma_op(mma)
    lay = op.layout("C")
    ts.grid(X.shape[0] // op.m)
    r0 = ts.tile_id(0) * op.m
    cols = list(range(0, X.shape[1], op.n))  # the row, one fragment per op.n columns (unrolled)
    x = [ts.load(X[r0:, c:], lay) for c in cols]
    m = ts.reduce(x[0], "max", axis="col")
    for xj in x[1:]:
        m = ts.maximum(m, ts.reduce(xj, "max", axis="col"))
    e = [ts.exp(xj - m) for xj in x]
    s = ts.reduce(e[0], "sum", axis="col")
    for ej in e[1:]:
        s = s + ts.reduce(ej, "sum", axis="col")
    for c, ej in zip(cols, e):
        ts.store(Y[r0:, c:], ej / s)


def programs(M: int = 32, N: int = 48) -> list[ts.Program]:
    return [softmax.specialize(target=t, M=M, N=N, mma=m) for t, m in CONFIGS]


def inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    M, N = prog.tensor("X").shape
    # scores with a large common offset per row: exp without the max subtraction would overflow f32
    return {"X": (4 * rng.standard_normal((M, N)) + rng.uniform(-200, 200, (M, 1))).astype(np.float32)}


def reference(X: np.ndarray) -> dict[str, np.ndarray]:
    x = X.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"Y": e / e.sum(axis=1, keepdims=True)}


if __name__ == "__main__":
    for prog in programs():
        arrays = inputs(prog)
        out = ts.simulate(prog, **arrays)
        ref = reference(**arrays)["Y"]
        err = float((np.abs(out["Y"] - ref) / ref).max())
        print(f"{prog.target:8} wave{prog.wave_size}  max relative error vs float64 = {err:.2e}")
