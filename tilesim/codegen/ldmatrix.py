"""When an NVIDIA fragment load from LDS can be ``ldmatrix`` (sm_75+).

The PTX ISA's ``ldmatrix.sync.aligned.m8n8{.x1,.x2,.x4}{.trans}.shared.b16`` loads 8x8 matrices of
16-bit elements, one per destination register; threads ``8i .. 8i+7`` give the addresses of rows
``0..7`` of matrix ``i`` (each row 16 contiguous, 16-byte aligned bytes). Thread ``t`` receives in
register ``i``, low half first: without ``.trans``, elements ``(t/4, 2*(t%4))`` and
``(t/4, 2*(t%4)+1)`` of matrix ``i``; with ``.trans``, elements ``(2*(t%4), t/4)`` and
``(2*(t%4)+1, t/4)`` (the matrix transposed on the way).

So a 32-lane fragment of 16-bit elements is ``ldmatrix``-able when every register ``r`` (slots
``2r, 2r+1``) holds, for every lane, exactly one of those two patterns over an 8x8 block at
``(R_r, C_r)`` of the tile — decided here from the layout itself, lane by lane, slot by slot. The
emitter adds what the memory must give: 16-byte aligned rows (row stride, column offset, swizzle unit
multiples of 8 elements).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.codegen.mma_forms import stack_blocks
from tilesim.layouts.layout import Layout

__all__ = ["LdmatrixPlan", "ldmatrix_plan"]


@dataclass(frozen=True)
class LdmatrixPlan:
    trans: bool
    blocks: tuple[tuple[int, int], ...]  # (R_r, C_r) of register r's 8x8 block in the tile


def _expected(trans: bool) -> tuple[np.ndarray, np.ndarray]:
    """[lane, half] -> (row, col) inside the 8x8 matrix, from the PTX ISA's description."""
    t = np.arange(32)[:, None]
    j = np.arange(2)[None, :]
    if trans:
        return 2 * (t % 4) + j + 0 * t, t // 4 + 0 * j
    return t // 4 + 0 * j, 2 * (t % 4) + j + 0 * t


def ldmatrix_plan(lay: Layout, bits: int) -> LdmatrixPlan | None:
    """The plan for ``lay`` (None when no ``ldmatrix`` form loads exactly its elements)."""
    if bits != 16 or not lay.is_function():
        return None
    lay = stack_blocks(lay)
    dims = dict(lay.in_dims)
    if set(dims) != {"lane", "slot"} or dims["lane"] != 32 or dims["slot"] % 2:
        return None
    lane, slot = np.meshgrid(np.arange(32), np.arange(dims["slot"]), indexing="ij")
    at = lay.apply(lane=lane, slot=slot)
    row, col = at["row"], at["col"]
    if (row < 0).any():
        return None
    for trans in (False, True):
        er, ec = _expected(trans)
        blocks = []
        for r in range(dims["slot"] // 2):
            rr, cc = row[:, 2 * r:2 * r + 2], col[:, 2 * r:2 * r + 2]
            r0, c0 = int(rr.min()), int(cc.min())
            if not ((rr - r0 == er).all() and (cc - c0 == ec).all()):
                break
            blocks.append((r0, c0))
        else:
            return LdmatrixPlan(trans, tuple(blocks))
    return None
