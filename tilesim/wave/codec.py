"""Vectorised register codecs: values <-> ``uint32[..., lane, vgpr]`` through a layout.

A :class:`Codec` is built once per (layout, element type) from ``Layout.location_array()`` — the
same records the catalog, the docs and the pictures use — and then packs or unpacks whole
batches (every workgroup and wave at once) with numpy gathers and ``reduceat``; there is no
per-lane Python loop. Elements that straddle two registers (f64, gfx950 fp6) are split into
parts.

Fast path: when every element is a whole, aligned 8/16/32/64-bit unit and no two records share
register bits (every f16/bf16/fp8/i8/f32/f64 operand in the catalog), the register image viewed as
``uint{w}`` has one *slot* per record, so packing and unpacking are one gather or scatter in the
element's own width — the same bits as the general shift-and-add path, which stays for 4/6-bit
elements and for layouts that put several logical elements in one register position.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilesim.layouts.layout import Layout
from tilesim.matrix.dtypes import DType, decode, dtype, encode, encode_bits

__all__ = ["Codec", "codec"]


@dataclass(frozen=True)
class Codec:
    lanes: int
    nregs: int
    rows: int
    cols: int
    dt: DType
    rec: np.ndarray  # (N, 7) block,row,col,vgpr,lane,bit_lo,bit_hi; block folded into row (block 0, row b*rows + r)
    flat_elem: np.ndarray  # (N,) row * cols + col (block folded in: blocks are stacked as rows)
    primary: np.ndarray  # (E,) record index of each logical element's first owner (-1: no owner)
    # scatter plan: parts sorted by destination register
    part_rec: np.ndarray
    part_shift: np.ndarray  # >= 0: left shift of the element bits; < 0: right shift
    part_dest: np.ndarray  # flat lane * nregs + vgpr, sorted
    seg_starts: np.ndarray
    seg_dest: np.ndarray
    # derived plans (slot maps, access offsets, transaction counts), filled on first use
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def width(self) -> int:
        return int(self.rec[0, 6] - self.rec[0, 5] + 1)

    # ------------------------------------------------------------------ slot fast path
    @functools.cached_property
    def slots(self) -> np.ndarray | None:
        """Index of each record in the ``uint{width}`` view of a lane-major register image, or
        None when the fast path does not apply (see the module docstring)."""
        w = self.width
        if w not in (8, 16, 32, 64) or (self.nregs * 32) % w or not self.rec.size:
            return None
        start = self.rec[:, 3] * 32 + self.rec[:, 5]
        if (start % w).any():
            return None
        s = self.rec[:, 4] * (self.nregs * 32 // w) + start // w
        return s if np.unique(s).size == s.size else None

    @functools.cached_property
    def _unit(self) -> np.dtype:
        return np.dtype(f"uint{self.width}")

    @functools.cached_property
    def _slot_plan(self) -> tuple[int, np.ndarray | None, np.ndarray | None]:
        """(slots per image, record of each slot when every slot holds exactly one record else
        None, logical element of each slot in that case)."""
        nslots = self.lanes * self.nregs * 32 // self.width
        assert self.slots is not None
        if self.slots.size != nslots:
            return nslots, None, None
        rec_of_slot = np.empty(nslots, np.int64)
        rec_of_slot[self.slots] = np.arange(nslots)
        return nslots, rec_of_slot, self.flat_elem[rec_of_slot]

    def slot_view(self, regs: np.ndarray) -> np.ndarray:
        """``(..., lanes, nregs)`` uint32 -> ``(..., slots)`` in the element's width (a view when
        ``regs`` is contiguous)."""
        lead = regs.shape[:-2]
        return np.ascontiguousarray(regs, np.uint32).reshape(*lead, -1).view(self._unit)

    def from_slots(self, bits: np.ndarray) -> np.ndarray:
        """``(..., slots)`` in the element's width -> ``(..., lanes, nregs)`` uint32."""
        return np.ascontiguousarray(bits).view(np.uint32).reshape(*bits.shape[:-1], self.lanes, self.nregs)

    def pack(self, bits: np.ndarray) -> np.ndarray:
        """Registers from element bits per record ``(..., N)`` in the element's width (fast path)."""
        nslots, rec_of_slot, _ = self._slot_plan
        if rec_of_slot is not None:
            return self.from_slots(np.take(bits, rec_of_slot, axis=-1))
        out = np.zeros((*bits.shape[:-1], nslots), self._unit)
        out[..., self.slots] = bits
        return self.from_slots(out)

    # ------------------------------------------------------------------ bits
    def gather_bits(self, regs: np.ndarray) -> np.ndarray:
        """Element bits of every record: regs ``(..., lanes, nregs)`` -> ``(..., N)`` uint64."""
        lead = regs.shape[:-2]
        flat = regs.reshape(*lead, self.lanes * self.nregs).astype(np.uint64)
        pad = np.concatenate([flat, np.zeros((*lead, 1), np.uint64)], -1)
        lane, vgpr, lo = self.rec[:, 4], self.rec[:, 3], self.rec[:, 5]
        idx = lane * self.nregs + vgpr
        nxt = np.where(vgpr + 1 < self.nregs, idx + 1, self.lanes * self.nregs)
        word = pad[..., idx] | (pad[..., nxt] << np.uint64(32))
        w = self.width
        if w == 64:
            return word
        return (word >> lo.astype(np.uint64)) & np.uint64((1 << w) - 1)

    def scatter_bits(self, bits: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`gather_bits` for a zeroed image: ``(..., N)`` -> ``(..., lanes, nregs)``."""
        lead = bits.shape[:-1]
        b = bits.astype(np.uint64)[..., self.part_rec]
        s = self.part_shift
        shifted = np.where(s >= 0, b << np.maximum(s, 0).astype(np.uint64), b >> np.maximum(-s, 0).astype(np.uint64))
        shifted &= np.uint64(0xFFFFFFFF)
        words = np.add.reduceat(shifted, self.seg_starts, axis=-1) if shifted.shape[-1] else shifted
        out = np.zeros((*lead, self.lanes * self.nregs), np.uint32)
        out[..., self.seg_dest] = words.astype(np.uint32)
        return out.reshape(*lead, self.lanes, self.nregs)

    # ------------------------------------------------------------------ values
    def decode(self, regs: np.ndarray) -> np.ndarray:
        """Values of every record, ``(..., N)`` float64/int64."""
        if self.slots is not None:
            return decode(np.take(self.slot_view(regs), self.slots, axis=-1), self.dt)
        return decode(self.gather_bits(regs), self.dt)

    def encode(self, values: np.ndarray) -> np.ndarray:
        """Registers holding ``values`` given per record ``(..., N)``."""
        if self.slots is not None:
            return self.pack(encode_bits(values, self.dt).astype(self._unit, copy=False))
        return self.scatter_bits(encode(values, self.dt))

    @functools.cached_property
    def _tile_plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(owned elements, slot of each element's first owner, slots of the other copies, their elements)."""
        assert self.slots is not None
        owned = self.primary >= 0
        prim_slot = np.where(owned, self.slots[np.maximum(self.primary, 0)], 0)
        is_copy = np.ones(self.rec.shape[0], bool)
        is_copy[self.primary[owned]] = False
        copies = np.flatnonzero(is_copy)
        return owned, prim_slot, self.slots[copies], self.flat_elem[copies]

    def _tile_fast(self, regs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        owned, prim_slot, copy_slot, copy_elem = self._tile_plan
        view = self.slot_view(regs)
        lead = view.shape[:-1]
        prim = np.take(view, prim_slot, axis=-1)  # take: C-ordered result, unlike [..., idx]
        vals = decode(prim, self.dt)
        if not owned.all():
            vals = np.where(owned, vals, 0)
        bad = np.zeros((int(np.prod(lead, dtype=np.int64)), self.primary.size), bool)
        if copy_slot.size:
            diff = (np.take(view, copy_slot, axis=-1) != np.take(prim, copy_elem, axis=-1)).reshape(-1, copy_slot.size)
            g, r = np.nonzero(diff)
            bad[g, copy_elem[r]] = True
        return vals.reshape(*lead, self.rows, self.cols), bad.reshape(*lead, self.rows, self.cols)

    def tile(self, regs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Logical tile ``(..., rows, cols)`` from each element's first owner, and a mask of
        elements whose copies hold different bits (replication violations)."""
        if self.slots is not None:
            return self._tile_fast(regs)
        bits = self.gather_bits(regs)
        lead = bits.shape[:-1]
        owned = self.primary >= 0
        prim_bits = np.zeros((*lead, self.primary.size), np.uint64)
        prim_bits[..., owned] = bits[..., self.primary[owned]]
        vals = decode(prim_bits, self.dt)
        vals = np.where(owned, vals, 0)
        diff = (bits != prim_bits[..., self.flat_elem]).reshape(-1, self.flat_elem.size)
        bad = np.zeros((diff.shape[0], self.primary.size), bool)
        g, r = np.nonzero(diff)
        bad[g, self.flat_elem[r]] = True
        return vals.reshape(*lead, self.rows, self.cols), bad.reshape(*lead, self.rows, self.cols)

    def from_tile(self, tile: np.ndarray) -> np.ndarray:
        """Registers holding a logical tile ``(..., rows, cols)`` (every copy written)."""
        lead = tile.shape[:-2]
        flat = tile.reshape(*lead, self.rows * self.cols)
        if self.slots is not None and self._slot_plan[1] is not None:  # encode each element once, then copy
            bits = encode_bits(flat, self.dt).astype(self._unit, copy=False)
            return self.from_slots(np.take(bits, self._slot_plan[2], axis=-1))
        return self.encode(flat[..., self.flat_elem])


@functools.lru_cache(maxsize=1024)
def codec(layout: Layout, dt_name: str, nregs: int | None = None) -> Codec:
    """The codec of a fragment layout (hardware dims lane/slot, logical (block,) row, col)."""
    dt = dtype(dt_name)
    lay = layout if layout.elem_bits == dt.reg_bits else layout.with_elem_bits(dt.reg_bits)
    rec = lay.location_array()
    dims = dict(lay.out_dims)
    blocks, rows, cols = dims.get("block", 1), dims["row"], dims["col"]
    if blocks > 1:  # a multi-block fragment is a (blocks*rows) x cols tile: block b's rows follow block b-1's
        rec = rec.copy()
        rec[:, 1] += rec[:, 0] * rows
        rec[:, 0] = 0
    lanes = dict(lay.in_dims)["lane"]
    n = nregs if nregs is not None else lay.registers_per_lane()
    flat = rec[:, 1] * cols + rec[:, 2]
    E = blocks * rows * cols
    order = np.lexsort((rec[:, 4], flat))  # by element, then lowest lane first
    primary = np.full(E, -1, np.int64)
    first = np.ones(order.size, bool)
    first[1:] = flat[order][1:] != flat[order][:-1]
    primary[flat[order][first]] = order[first]
    # scatter parts: an element of width w at absolute bit a = 32*vgpr + lo touches registers
    # a // 32 .. (a + w - 1) // 32
    w = dt.reg_bits
    start = rec[:, 3] * 32 + rec[:, 5]
    p_rec, p_shift, p_dest = [], [], []
    for part in range(-(-(w + 31) // 32) + 1):
        reg = start // 32 + part
        shift = start % 32 - 32 * part
        ok = (shift > -w) & (shift < 32) & (reg < n)
        idx = np.flatnonzero(ok)
        p_rec.append(idx)
        p_shift.append(shift[ok])
        p_dest.append(rec[ok, 4] * n + reg[ok])
    pr, ps, pd = np.concatenate(p_rec), np.concatenate(p_shift), np.concatenate(p_dest)
    o = np.argsort(pd, kind="stable")
    pr, ps, pd = pr[o], ps[o], pd[o]
    seg = np.flatnonzero(np.r_[True, pd[1:] != pd[:-1]]) if pd.size else np.zeros(0, np.int64)
    return Codec(lanes, n, blocks * rows, cols, dt, rec, flat, primary, pr, ps, pd, seg, pd[seg])
