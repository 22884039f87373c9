"""Asynchronous global -> LDS copies (``ts.lds_copy_async``): which slots of a copy layout form one
copy instruction, and whether the addresses of every instruction are aligned.

A copy layout maps (lane, slot) to tile (row, col) like a fragment layout, but no register holds
the elements: lane ``l`` copies element (row, col) of the tile from ``tensor[trow0 + row, tcol0 + col]``
to ``buffer[row0 + row, col0 + col]``. One instruction moves ``bytes`` (4, 8 or 16: the cp-size
values of PTX ``cp.async``) = ``g`` elements: slots ``g*v .. g*v+g-1`` of a lane, which must be ``g``
consecutive columns of one row, whose first address on both sides is a multiple of ``bytes``
(PTX ISA, "cp.async": the source and destination addresses are aligned to cp-size). The layout
part is decided here from the layout alone; the addresses depend on the indices and are checked
by the memory analysis (tilesim/ir/accesses.py) for every workgroup and wave.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tilesim.ir.ops import ASYNC_COPY_BYTES
from tilesim.layouts.layout import Layout

__all__ = ["copy_groups", "widest_copy", "misaligned", "alignment_problem", "copy_problem", "InFlight"]


def copy_groups(lay: Layout, g: int) -> np.ndarray | None:
    """``int64[lanes, slots // g, 2]``: (row, col) of the first element of each group of ``g`` slots
    of each lane, when every group holds ``g`` consecutive columns of one row (in slot order); else
    None."""
    dims = dict(lay.in_dims)
    lanes, slots = dims["lane"], dims["slot"]
    if g < 1 or slots % g or not lay.is_function():
        return None
    lane, slot = np.meshgrid(np.arange(lanes), np.arange(slots), indexing="ij")
    at = lay.apply(lane=lane, slot=slot)
    row = at["row"] + at.get("block", 0) * dict(lay.out_dims)["row"]  # multi-block tiles stack blocks on rows
    col = at["col"]
    if (at["row"] < 0).any() or (col < 0).any():  # a slot holding nothing
        return None
    r, c = row.reshape(lanes, slots // g, g), col.reshape(lanes, slots // g, g)
    if not ((r == r[:, :, :1]).all() and (c == c[:, :, :1] + np.arange(g)).all()):
        return None
    return np.stack([r[:, :, 0], c[:, :, 0]], -1)


def widest_copy(lay: Layout, elem_bytes: int) -> int:
    """The largest instruction size (bytes, one of 4/8/16) whose groups the layout forms with a first
    column that is a multiple of the group (so an aligned tile origin gives aligned addresses); 0
    when none does."""
    for nbytes in sorted(ASYNC_COPY_BYTES, reverse=True):
        g = nbytes // elem_bytes
        if g < 1 or nbytes % elem_bytes:
            continue
        first = copy_groups(lay, g)
        if first is not None and not (first[..., 1] % g).any():
            return nbytes
    return 0


def misaligned(first_byte: np.ndarray, elem_byte: np.ndarray, nbytes: int, eb: int) -> tuple[int, ...] | None:
    """The index (instance, lane, group) of the first copy instruction whose ``g`` elements are not
    contiguous from a ``nbytes``-aligned address, or None. ``elem_byte[..., j]``: byte address of the
    group's element ``j``; ``first_byte`` = ``elem_byte[..., 0]``."""
    bad = first_byte % nbytes != 0
    bad |= (elem_byte != first_byte[..., None] + eb * np.arange(elem_byte.shape[-1])).any(-1)
    if not bad.any():
        return None
    return tuple(int(x) for x in np.argwhere(bad)[0])


def alignment_problem(first: np.ndarray, src_r0: np.ndarray, src_c0: np.ndarray, cols: int, lds: Any, base: int,
                      dst_r0: np.ndarray, dst_c0: np.ndarray, nbytes: int, eb: int) -> tuple[int, str] | None:
    """The first copy instruction (of instances with tensor origins ``src_*`` and buffer origins
    ``dst_*``) whose global or LDS address is not ``nbytes``-aligned or whose LDS elements are not
    contiguous: (instance, what is wrong), else None. ``first``: :func:`copy_groups`'s array."""
    g = nbytes // eb
    fr, fc = first[..., 0].reshape(-1), first[..., 1].reshape(-1)
    span = np.arange(g)
    src = ((src_r0[:, None] + fr) * cols + src_c0[:, None] + fc) * eb
    dst = lds.offset(dst_r0[:, None, None] + fr[None, :, None], dst_c0[:, None, None] + fc[None, :, None] + span) + base
    for side, first_b, elems in (("global", src, src[..., None] + eb * span), ("LDS", dst[..., 0], dst)):
        bad = misaligned(first_b, elems, nbytes, eb)
        if bad is not None:
            lane, grp = divmod(bad[1], first.shape[1])
            return bad[0], (f"the {nbytes}-byte copy of lane {lane} (slots {grp * g}..{grp * g + g - 1}) starts at "
                            f"{side} byte {int(first_b[bad[:2]])}, which is not a multiple of {nbytes}"
                            + ("" if side == "global" else " or is not contiguous (the swizzle splits it)")
                            + f": a {nbytes}-byte copy needs both addresses {nbytes}-byte aligned (PTX cp.async)")
    return None


def copy_problem(op: Any, shape: tuple[int, int], base: int, src_r0: np.ndarray, src_c0: np.ndarray,
                 dst_r0: np.ndarray, dst_c0: np.ndarray) -> tuple[int | None, str] | None:
    """Why an ``lds_copy_async`` (its instances' tensor origins ``src_*`` and buffer origins ``dst_*``,
    the buffer at LDS byte ``base``) is not one instruction per group of its layout, reads outside its
    tensor or has a misaligned instruction: (the instance, or None when every one is, and why); None
    when it is none of these."""
    buf, lay, nbytes = op.args[0], op.attr("layout"), op.attr("bytes")
    eb = buf.lds.elem_bytes
    g = nbytes // eb
    first = copy_groups(lay, g) if nbytes % eb == 0 else None
    if first is None:
        return None, (f"the copy layout does not give each lane runs of {max(g, 1)} consecutive elements of a row "
                      f"in slot order: a {nbytes}-byte copy of {buf.dtype} elements cannot be one instruction "
                      "(ts.lds_copy_async(..., bytes=) a smaller size, or another layout)")
    rows, cols = shape
    lanes, slots = dict(lay.in_dims)["lane"], dict(lay.in_dims)["slot"]
    lane, slot = np.meshgrid(np.arange(lanes), np.arange(slots), indexing="ij")
    at = lay.apply(lane=lane, slot=slot)
    rr = (at["row"] + at.get("block", 0) * dict(lay.out_dims)["row"]).reshape(-1)
    R, C = src_r0[:, None] + rr, src_c0[:, None] + at["col"].reshape(-1)
    out = (R < 0) | (R >= rows) | (C < 0) | (C >= cols)
    if out.any():
        i, j = (int(x) for x in np.argwhere(out)[0])
        return i, (f"reads {op.attr('tensor')}[{int(R[i, j])}][{int(C[i, j])}] (shape {rows}x{cols}) in lane "
                   f"{j // slots}: an asynchronous copy has no mask, every element must be inside the tensor")
    return alignment_problem(first, src_r0, src_c0, cols, buf.lds, base, dst_r0, dst_c0, nbytes, eb)


class _Pending:
    """Copies one op issued: where they write (``addr[g, record]`` bytes of ``eb``), which waves issued
    them and are still waiting, each wave's commit group (-1: not committed yet), and what the
    simulator needs to land them (``payload``)."""

    __slots__ = ("op", "addr", "eb", "issued", "seq", "payload")

    def __init__(self, op: int, addr: np.ndarray, eb: int, issued: np.ndarray, payload: object) -> None:
        self.op, self.addr, self.eb, self.payload = op, addr, eb, payload
        self.issued = issued.copy()
        self.seq = np.full(issued.shape, -1, np.int64)


class InFlight:
    """Asynchronous copies in flight, per (workgroup, LDS byte): the wave and the op whose copy may
    still write it. Both the static analysis (tilesim/ir/accesses.py) and the simulator
    (tilesim/wave/sim.py) keep one, so they agree on when data lands: a wave's copies join a group
    at its next ``async_commit``; ``async_wait(n)`` completes every group of the wave but its ``n``
    newest (PTX ``cp.async.wait_group``: uncommitted copies are not waited for)."""

    def __init__(self, wg_of: np.ndarray, wave_of: np.ndarray) -> None:
        self.wg_of, self.wave_of = wg_of, wave_of
        self.nwg, self.nbytes = int(wg_of.max(initial=0)) + 1, 0
        # per (workgroup, byte), made at the first copy (a program without copies pays nothing)
        self.owner = self.op = np.full((self.nwg, 0), -1, np.int32)
        self.pending: list[_Pending] = []
        self.ncommit = np.zeros(wg_of.size, np.int64)

    def grow(self, nbytes: int) -> None:
        self.nbytes = nbytes
        if self.owner.shape[1]:
            pad = ((0, 0), (0, nbytes - self.owner.shape[1]))
            self.owner = np.pad(self.owner, pad, constant_values=-1)
            self.op = np.pad(self.op, pad, constant_values=-1)

    def _bytes(self, addr: np.ndarray, eb: int) -> np.ndarray:
        return (addr[:, :, None] + np.arange(eb)).reshape(addr.shape[0], addr.shape[1] * eb)

    def hits(self, addr: np.ndarray, eb: int, active: np.ndarray) -> tuple[int, int, int, int, int] | None:
        """An access of ``addr`` (every wave, ``active`` ones only) against the bytes in flight: (bytes
        hit, first wave index g, its byte, the copying wave, the copy's op), or None."""
        if not self.pending:
            return None
        byte = self._bytes(addr, eb)
        own = self.owner[self.wg_of[:, None], byte]
        hit = (own >= 0) & np.broadcast_to(active, (self.wg_of.size,))[:, None]
        if not hit.any():
            return None
        g, j = (int(x) for x in np.argwhere(hit)[0])
        return int(hit.sum()), g, int(byte[g, j]), int(own[g, j]), int(self.op[self.wg_of[g], byte[g, j]])

    def issue(self, op: int, addr: np.ndarray, eb: int, active: np.ndarray, payload: object = None) -> None:
        act = np.broadcast_to(active, (self.wg_of.size,))
        if not act.any():  # a branch no wave takes
            return
        if self.owner.shape[1] != self.nbytes:
            self.owner, self.op = (np.full((self.nwg, self.nbytes), -1, np.int32) for _ in range(2))
        byte = self._bytes(addr[act], eb)
        self.owner[self.wg_of[act][:, None], byte] = self.wave_of[act][:, None]
        self.op[self.wg_of[act][:, None], byte] = op
        self.pending.append(_Pending(op, addr, eb, act, payload))

    def commit(self, active: np.ndarray) -> None:
        act = np.broadcast_to(active, (self.wg_of.size,))
        for p in self.pending:
            new = p.issued & act & (p.seq < 0)
            p.seq[new] = self.ncommit[new]
        self.ncommit[act] += 1

    def wait(self, pending: int, active: np.ndarray) -> list[tuple[_Pending, np.ndarray]]:
        """Complete the groups ``async_wait(pending)`` completes in the active waves: each copy with the
        waves whose data lands now (their bytes are no longer in flight)."""
        act = np.broadcast_to(active, (self.wg_of.size,))
        out = []
        for p in self.pending:
            land = p.issued & act & (p.seq >= 0) & (p.seq < self.ncommit - pending)
            if land.any():
                self.owner[self.wg_of[land][:, None], self._bytes(p.addr[land], p.eb)] = -1
                p.issued &= ~land
                out.append((p, land))
        self.pending = [p for p in self.pending if p.issued.any()]
        return out

    def check(self, addr: np.ndarray, eb: int, active: np.ndarray, write: bool) -> tuple[int, str] | None:
        """:meth:`hits` as (bytes hit, what is wrong, naming the workgroup and wave), or None."""
        hit = self.hits(addr, eb, active)
        if hit is None:
            return None
        wave = int(self.wave_of[hit[1]])
        return hit[0], self.message(hit, f"workgroup {int(self.wg_of[hit[1]])}, wave {wave} "
                                    + ("writes" if write else "reads"), wave)

    def message(self, hit: tuple[int, int, int, int, int], verb: str, wave: int) -> str:
        """Why an access that ``hits`` is wrong, in the program's terms."""
        _, _, byte, owner, op = hit
        fix = ("ts.async_wait(...) for its group first" if owner == wave else
               "ts.async_wait(...) for its group in that wave, then ts.barrier(), first")
        return (f"{verb} LDS byte {byte} while the asynchronous copy of op {op} by wave {owner} may still be writing "
                f"it (its data lands at the async_wait that completes its group): {fix}")
