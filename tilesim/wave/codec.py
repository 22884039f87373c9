"""Vectorised register codecs: values <-> ``uint32[..., lane, vgpr]`` through a layout.

A :class:`Codec` is built once per (layout, element type) from ``Layout.location_array()`` — the
same records the catalog, the docs and the pictures use — and then packs or unpacks whole
batches (every workgroup and wave at once) with numpy gathers and ``reduceat``; there is no
per-lane Python loop. Elements that straddle two registers (f64, gfx950 fp6) are split into
parts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from tilesim.layouts.layout import Layout
from tilesim.matrix.dtypes import DType, decode, dtype, encode

__all__ = ["Codec", "codec"]


@dataclass(frozen=True)
class Codec:
    lanes: int
    nregs: int
    rows: int
    cols: int
    dt: DType
    rec: np.ndarray  # (N, 7) block,row,col,vgpr,lane,bit_lo,bit_hi
    flat_elem: np.ndarray  # (N,) row * cols + col (block folded in: blocks are stacked as rows)
    primary: np.ndarray  # (E,) record index of each logical element's first owner (-1: no owner)
    # scatter plan: parts sorted by destination register
    part_rec: np.ndarray
    part_shift: np.ndarray  # >= 0: left shift of the element bits; < 0: right shift
    part_dest: np.ndarray  # flat lane * nregs + vgpr, sorted
    seg_starts: np.ndarray
    seg_dest: np.ndarray

    @property
    def width(self) -> int:
        return int(self.rec[0, 6] - self.rec[0, 5] + 1)

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
        return decode(self.gather_bits(regs), self.dt)

    def encode(self, values: np.ndarray) -> np.ndarray:
        """Registers holding ``values`` given per record ``(..., N)``."""
        return self.scatter_bits(encode(values, self.dt))

    def tile(self, regs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Logical tile ``(..., rows, cols)`` from each element's first owner, and a mask of
        elements whose copies hold different bits (replication violations)."""
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
        return self.encode(flat[..., self.flat_elem])


@functools.lru_cache(maxsize=1024)
def codec(layout: Layout, dt_name: str, nregs: int | None = None) -> Codec:
    """The codec of a fragment layout (hardware dims lane/slot, logical (block,) row, col)."""
    dt = dtype(dt_name)
    lay = layout if layout.elem_bits == dt.reg_bits else layout.with_elem_bits(dt.reg_bits)
    rec = lay.location_array()
    dims = dict(lay.out_dims)
    blocks, rows, cols = dims.get("block", 1), dims["row"], dims["col"]
    lanes = dict(lay.in_dims)["lane"]
    n = nregs if nregs is not None else lay.registers_per_lane()
    flat = (rec[:, 0] * rows + rec[:, 1]) * cols + rec[:, 2]
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
