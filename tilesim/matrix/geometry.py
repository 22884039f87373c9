"""Register-layout geometry of matrix instructions: small recipes, one formula each.

Every AMD and NVIDIA matrix layout in the catalog is one of two shapes, written once here:

**Input operands (A, B; sparse K indices).** The operand's outer index ``r`` (row ``i`` of A,
column ``j`` of B) picks a lane inside a *lane group* of ``rows`` lanes. The inner index ``t``
(``k``, with blocks stacked after it: ``t = k + K*block``) is cut into chunks of ``kc``
elements; chunk ``c`` goes to lane group ``c % groups`` and fills slots
``(c // groups)*kc … + kc``. ``copies`` lists extra lane offsets that hold the same element
(RDNA3 WMMA keeps A/B in lanes 0–15 and again in 16–31). So::

    lane = r + rows * (c % groups) + copy_offset,   slot = (c // groups) * kc + t % kc

e.g. CDNA ``v_mfma_f32_32x32x8f16`` A: rows=32, groups=2, kc=4 → lane = i + 32*(k//4), slot k%4.

**Accumulators (C, D).** Column ``j`` picks the lane in a group of ``cols`` lanes; the row
``u = i + M*block`` is cut into chunks of ``rc`` rows; chunk ``q`` goes to lane group
``q % groups`` and fills slots ``(q // groups)*rc …``::

    lane = j + cols * (q % groups),   slot = (q // groups) * rc + u % rc

CDNA 32x32: rc=4, groups=2 (rows ``8*(v//4) + 4*(lane//32) + v%4``); RDNA3 wave32: rc=1,
groups=2 (rows ``2*v + lane//16``); RDNA4 wave32: rc=8, groups=2 (rows ``8*(lane//16) + v``).
``slot_stride``/``slot_offset`` place 16-bit results in one half of each register (RDNA3
``OPSEL``).

Modifiers act on top, as relations: CBSZ/ABID make every block of a group of ``2**CBSZ``
adjacent blocks read A from block ``ABID`` of its group; BLGP makes lane ``l`` read B from
``BLGP_SOURCE[blgp](l)``. Source: CDNA3 ISA §7.1.4 "Broadcasting"; AMD's matrix instruction
calculator prints the same (tests/golden/amd_calculator).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tilesim.layouts.layout import Layout

__all__ = ["InputGeometry", "AccGeometry", "FormatGeometry", "input_layout", "acc_layout", "BLGP_SOURCE"]


@dataclass(frozen=True)
class FormatGeometry:
    """An input operand whose element format a modifier picks (gfx950 f8f6f4: CBSZ for A, BLGP for B).

    One entry per legal format code: the element type, its :class:`InputGeometry` and element bits,
    and the VGPRs per lane the operand tuple takes in that format.
    """

    modifier: str  # the modifier field that picks the format ("cbsz" | "blgp")
    formats: tuple[tuple[int, str, InputGeometry, int, int], ...]  # (code, dtype, geometry, bits, vgprs)

    def _entry(self, code: int) -> tuple[int, str, InputGeometry, int, int]:
        return next(f for f in self.formats if f[0] == code)

    def dtype(self, code: int) -> str:
        return self._entry(code)[1]

    def geometry(self, code: int) -> tuple[InputGeometry, int]:
        _, _, geo, bits, _ = self._entry(code)
        return geo, bits

    def vgprs(self, code: int) -> int:
        return self._entry(code)[4]


@dataclass(frozen=True)
class InputGeometry:
    """Where an input operand's elements live. See the module docstring for the formula."""

    rows: int  # lanes in one lane group (M for A, N for B)
    groups: int  # lane groups the k chunks rotate over
    kc: int  # consecutive k units per chunk
    lanes: int  # wave size
    slots: int  # element slots per lane
    copies: tuple[int, ...] = (0,)  # lane offsets of replicated copies
    group_order: tuple[int, ...] | None = None  # lane group of the g-th chunk group (RDNA4 wave64: 0,2,1,3)
    block_minor: bool = False  # blocks vary before k (f64 4x4x4: lane = i + 4*block + 16*k)
    unit: int = 1  # k per slot (4 for structured-sparse A and its index: one slot per 4-group)
    slot_shift: int = 0  # added to every slot (sparse index set selection)

    def place(self, r: np.ndarray, k: np.ndarray, block: np.ndarray, k_total: int, blocks: int
              ) -> tuple[np.ndarray, np.ndarray]:
        ku, nku = k // self.unit, k_total // self.unit
        t = block + blocks * ku if self.block_minor else ku + nku * block
        c = t // self.kc
        g = c % self.groups
        if self.group_order is not None:
            g = np.asarray(self.group_order)[g]
        return r + self.rows * g, (c // self.groups) * self.kc + t % self.kc + self.slot_shift


@dataclass(frozen=True)
class AccGeometry:
    """Where an accumulator's elements live. See the module docstring for the formula."""

    cols: int
    groups: int
    rc: int
    lanes: int
    slots: int
    slot_stride: int = 1
    slot_offset: int = 0
    group_order: tuple[int, ...] | None = None
    block_minor: bool = False

    def place(self, j: np.ndarray, i: np.ndarray, block: np.ndarray, m: int, blocks: int
              ) -> tuple[np.ndarray, np.ndarray]:
        u = block + blocks * i if self.block_minor else i + m * block
        q = u // self.rc
        g = q % self.groups
        if self.group_order is not None:
            g = np.asarray(self.group_order)[g]
        slot = (q // self.groups) * self.rc + u % self.rc
        return j + self.cols * g, slot * self.slot_stride + self.slot_offset


# BLGP (CDNA B-matrix lane group pattern): lane l reads its B operand from BLGP_SOURCE[blgp](l).
# Source: AMD CDNA3 ISA §7.1.4 "Broadcasting and lane patterns", and the matrix calculator.
BLGP_SOURCE: dict[int, Callable[[np.ndarray], np.ndarray]] = {
    0: lambda l: l,
    1: lambda l: l % 32,  # lanes 0-31 broadcast to 32-63
    2: lambda l: l % 32 + 32,  # lanes 32-63 broadcast to 0-31
    3: lambda l: (l + 16) % 64,  # rotate down by 16 lanes
    4: lambda l: l % 16,  # lanes 0-15 broadcast to all
    5: lambda l: l % 16 + 16,
    6: lambda l: l % 16 + 32,
    7: lambda l: l % 16 + 48,
}


def input_layout(
    g: InputGeometry,
    outer: int,
    inner: int,
    blocks: int,
    elem_bits: int,
    *,
    transpose: bool,
    block_source: Callable[[np.ndarray], np.ndarray] | None = None,
    lane_source: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Layout:
    """Layout of an input operand. ``transpose`` puts the outer index on ``col`` (B: row=k, col=j).

    ``block_source(b)`` names the block whose registers feed block ``b`` (CBSZ/ABID on A);
    ``lane_source(l)`` the lane whose registers feed lane ``l`` (BLGP on B).
    """
    out_dims = {"block": blocks, "row": inner if transpose else outer, "col": outer if transpose else inner}

    def where(block: np.ndarray, row: np.ndarray, col: np.ndarray) -> list[dict[str, np.ndarray]]:
        r, k = (col, row) if transpose else (row, col)
        src = block_source(block) if block_source is not None else block
        lane, slot = g.place(r, k, src, inner, blocks)
        placed = []
        for off in g.copies:
            ln = lane + off
            if lane_source is not None:
                # The instruction reads lane ln's operand from lane_source(ln): the element
                # it uses for position ln lives in that source lane.
                ln = lane_source(ln)
            placed.append({"lane": ln, "slot": slot})
        return placed

    return Layout.from_logical({"lane": g.lanes, "slot": g.slots}, out_dims, where, elem_bits=elem_bits)


def acc_layout(g: AccGeometry, m: int, n: int, blocks: int, elem_bits: int) -> Layout:
    def where(block: np.ndarray, row: np.ndarray, col: np.ndarray) -> dict[str, np.ndarray]:
        lane, slot = g.place(col, row, block, m, blocks)
        return {"lane": lane, "slot": slot}

    return Layout.from_logical(
        {"lane": g.lanes, "slot": g.slots}, {"block": blocks, "row": m, "col": n}, where, elem_bits=elem_bits
    )
