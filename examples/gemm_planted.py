"""examples/gemm.py with planted layout bugs, on sm_90:

* ``c_rows_lane5`` — lane 5's accumulator rows declared swapped (rows g and g+8): the epilogue
  stores four of its elements to the wrong rows;
* ``a_lane_off`` — A's lane 9 declared to hold lane 10's elements (one lane off);
* ``b_vgpr_swap`` — B's first two VGPRs declared in swapped order.

`tilesim run examples/gemm_planted.py --target sm_90` on a GPU gives MISMATCH for each, with the
device agreeing with the simulator (which predicts the hardware's wrong answer) and blame naming
the lanes involved.
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


def _relabel(op: str, mutate) -> Layout:
    good = lookup(MMA, "sm_90").layout(op)
    hw, lg = good.pairs()
    hw2 = mutate(hw.copy())
    return Layout.from_pairs(good.in_dims, good.out_dims, hw2, lg, elem_bits=good.elem_bits)


def a_lane_off(lane: int = 9) -> Layout:
    """A's elements of lanes ``lane`` and ``lane + 1`` declared in each other's lane."""
    def mutate(hw):
        a, b = hw[:, 0] == lane, hw[:, 0] == lane + 1
        hw[a, 0], hw[b, 0] = lane + 1, lane
        return hw
    return _relabel("A", mutate)


def b_vgpr_swap() -> Layout:
    """B's first two 32-bit registers (slots 0-1 and 2-3 of f16) declared in swapped order."""
    def mutate(hw):
        hw[:, 1] = np.where(hw[:, 1] < 4, hw[:, 1] ^ 2, hw[:, 1])
        return hw
    return _relabel("B", mutate)


PLANTED = {"c_rows_lane5": {"c_layout": planted_c_layout()}, "a_lane_off": {"a_layout": a_lane_off()},
           "b_vgpr_swap": {"b_layout": b_vgpr_swap()}}


def programs(M: int = 32, N: int = 32, K: int = 32):
    out = []
    for name, bug in PLANTED.items():
        p = gemm.specialize(target="sm_90", M=M, N=N, K=K, mma=MMA, **bug)
        out.append(type(p)(f"gemm_{name}", *(getattr(p, f) for f in ("target", "wave_size", "waves_per_workgroup",
                                                                       "grid", "tensors", "sizes", "body"))))
    return out
