"""examples/gemm.py with a planted layout bug: on sm_90, lane 5's accumulator rows are declared
swapped (rows g and g+8), so the epilogue stores four of its elements to the wrong rows.

`tilesim run examples/gemm_planted.py --target sm_90` on a GPU gives MISMATCH, with the device
agreeing with the simulator (which predicts the hardware's wrong answer) and blame naming lane 5.
"""

from __future__ import annotations

import numpy as np

from examples.gemm import gemm, inputs, reference
from tilesim.layouts import Layout
from tilesim.matrix import lookup

MMA = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
__all__ = ["programs", "inputs", "reference", "planted_c_layout"]


def planted_c_layout(lane: int = 5) -> Layout:
    good = lookup(MMA, "sm_90").layout("C")
    hw, lg = good.pairs()
    lg = lg.copy()
    sel = hw[:, 0] == lane
    lg[sel, 1] = np.where(lg[sel, 1] < 8, lg[sel, 1] + 8, lg[sel, 1] - 8)
    return Layout.from_pairs(good.in_dims, good.out_dims, hw, lg, elem_bits=32)


def programs(M: int = 32, N: int = 32, K: int = 32):
    return [gemm.specialize(target="sm_90", M=M, N=N, K=K, mma=MMA, c_layout=planted_c_layout())]
