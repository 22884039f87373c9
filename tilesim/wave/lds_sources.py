"""Where the fused LDS loop's (``tilesim/wave/lds_fused.py``) operand elements come from: the
loop's walk records (:class:`Walk`), the store event each operand ``lds_load`` reads
(:func:`source`, through the element map of two accesses, :func:`coverage`), the operand's window
form over the fused steps (:func:`operand`, the module docstring's step 3 there) and the last
iteration's operand images (:func:`lds_image`). No simulator state changes here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from tilesim.ir.core import Op, Value
from tilesim.wave.fused import LoopHost
from tilesim.wave.images import WindowImage
from tilesim.wave.lds import Lds

__all__ = ["LdsLoopHost", "Operand", "Shape", "Store", "Walk", "coverage", "lds_image", "operand", "source"]


class LdsLoopHost(LoopHost, Protocol):
    """:class:`tilesim.wave.fused.LoopHost` plus the LDS and one step-by-step iteration."""

    lds: Lds
    wg_of: np.ndarray

    def loop_step(self, op: Op, it: int) -> None: ...
    def set_frag(self, v: Value, regs: Any) -> None: ...


@dataclass
class Shape:
    """What the loop body must look like (checked once per loop)."""

    mma: Op
    spec: Any  # tilesim.wave.mma._Spec with its fast path
    init: Value
    operands: tuple[Op, Op]  # the top-level lds_loads the mma reads as A and B
    loads: dict[int, Op]  # value id -> global load op


@dataclass
class Store:
    op: Op
    acc: Any  # lds_access.Access
    t: int
    src: tuple[Op, int] | None  # the global load whose image it stores, and that load's step


@dataclass
class Walk:
    """The iterations' scalars, which ops run in which iteration, and the LDS events."""

    vals: dict[int, np.ndarray]
    live: dict[int, np.ndarray]  # id(op) -> bool[T]: the op runs in that iteration
    base: dict[int, np.ndarray] = field(default_factory=dict)  # id(load) -> int64[T, G] window bases
    inb: dict[int, np.ndarray] = field(default_factory=dict)  # id(load) -> bool[T]: every lane in bounds
    pre_base: dict[int, np.ndarray] = field(default_factory=dict)  # id(load before the loop) -> int64[1, G]
    # per iteration, in program order: (lds_store or lds_load, its access), (None, None) for a barrier
    steps: list[list[tuple[Op | None, Any]]] = field(default_factory=list)
    stores: list[Store] = field(default_factory=list)
    # (id(operand lds_load), step) -> (its source store event, coverage, the load's access) or None
    sources: dict[tuple[int, int], tuple[Store, Any, Any] | None] = field(default_factory=dict)


# ---------------------------------------------------------------------------- sources
def source(sim: LdsLoopHost, events: list[Store], acc: Any, eb: int) -> tuple[Store, Any, Any] | None:
    """The store event whose elements an operand load reads — the latest earlier store to the buffer
    that touches any of them must write them all — with their :func:`coverage` and the load's
    access; None: not one in-loop store of a window."""
    for ev in reversed(events):
        cov = coverage(sim, ev.acc, acc, eb)
        if cov is None:
            continue
        return (ev, cov, acc) if ev.src is not None and cov[2] else None
    return None


def coverage(sim: LdsLoopHost, s: Any, l: Any, eb: int) -> tuple[np.ndarray, int, bool] | None:
    """For each (wave, record) of access ``l``, the ``wave' * records + record'`` of access ``s`` that
    writes the same LDS element of its workgroup (the last in store order, as the store's scatter
    leaves it; -1: none), whether every element is written, and the repeats: when both accesses are
    alike in every workgroup, the map is computed for workgroup 0 and holds in each (``repeats`` =
    workgroups, waves relative to the workgroup), else for all waves (1). None when the accesses
    share no element. Once per pair of access tokens."""
    memo = sim.memo.setdefault("lds-coverage", {})
    key = (s.token, l.token)
    if key not in memo:
        lds = sim.lds
        alike = lds._uniform(s, sim.active) and lds._uniform(l, sim.active)
        n = lds.W if alike else sim.G
        width = lds.mem.shape[1] // eb
        fs = (sim.wg_of[:n, None] * width + s.rows(n) // eb).reshape(-1)
        fl = sim.wg_of[:n, None] * width + l.rows(n) // eb
        scratch = memo.get(("scratch", n, width))
        if scratch is None:  # (workgroup 0's elements only, for alike accesses)
            scratch = memo[("scratch", n, width)] = np.full((1 if alike else lds.nwg) * width, -1, np.int64)
        scratch[fs] = np.arange(fs.size)
        cov = scratch[fl]
        scratch[fs] = -1
        memo[key] = None if (cov < 0).all() else (cov, lds.nwg if alike else 1, bool((cov >= 0).all()))
    return memo[key]


@dataclass
class Operand:
    """One mma operand over the fused steps: ``tensor[base[t, g] + off[e]]`` (``off < 0``: reads 0)."""

    tensor: str
    src: Any  # the global load's codec (the bits' type)
    base: np.ndarray
    off: np.ndarray


def operand(sim: LdsLoopHost, shape: Shape, w: Walk, which: int, fused: range) -> Operand | None:
    """Compose store event -> load -> the instruction's operand layout for every fused step, and
    check the window form (module docstring, step 3)."""
    name = "AB"[which]
    ld_op, hw = shape.operands[which], shape.spec.hws[name]
    idx = shape.spec.fast[2 * which]  # the slot each logical element's primary owner reads (-1: none)
    rec_of_slot = sim.codec_of(ld_op.out)._slot_plan[1]
    owned = np.flatnonzero(idx >= 0)
    groups: dict[Any, list[int]] = {}
    for t in fused:
        got = w.sources.get((id(ld_op), t))
        if got is None:
            return None
        groups.setdefault((got[0].acc.token, got[2].token, id(got[0].src[0])), []).append(t)
    off_all: np.ndarray | None = None
    tensor = src_codec = None
    base = np.empty((len(fused), sim.G), np.int64)
    W = sim.lds.W
    for ts in groups.values():
        ev, (cov, nrep, _), _ = w.sources[(id(ld_op), ts[0])]
        src_ld = ev.src[0]
        cs = sim.codec_of(src_ld.out)
        if tensor is None:
            tensor, src_codec = src_ld.attr("tensor"), cs
        elif (tensor, src_codec.dt.name) != (src_ld.attr("tensor"), cs.dt.name):
            return None
        R, Wu = cs.rec.shape[0], sim.G // nrep
        c = cov[:, rec_of_slot]  # per image slot: the stored (wave, record), waves relative to the repeat
        sg_slot, so_slot = c // R, sim.offsets(tensor, cs, bool(src_ld.attr("transpose")))[0][c % R]
        rec_slot, rec_prim = hw.slots, idx[hw.flat_elem]  # replicated copies must read their primary's element
        if not np.array_equal(rec_slot, rec_prim) and not (
                np.array_equal(sg_slot[:, rec_slot], sg_slot[:, rec_prim])
                and np.array_equal(so_slot[:, rec_slot], so_slot[:, rec_prim])):
            return None
        SG, SO = sg_slot[:, idx[owned]], so_slot[:, idx[owned]]  # [Wu, owned elements]
        # the (wave, source wave) pairs: a wave reads stores of its own workgroup
        uses = np.zeros((Wu, W), bool)
        uses[np.arange(Wu)[:, None], SG % W] = True
        pi, pw = np.nonzero(uses)
        pu = pi // W * W + pw
        at = [w.sources[(id(ld_op), t)][0].src[1] for t in ts]  # (a load before the loop: its one row)
        srcs = (w.base[id(src_ld)] if id(src_ld) in w.base else w.pre_base[id(src_ld)])[at].reshape(len(ts), nrep, Wu)
        # element e's offset minus element 0's at the first step: the same in every repeat and wave
        d = srcs[0][:, pu] - srcs[0][:, SG[pi, 0]]
        if not (d == d[0]).all():
            return None
        dd = np.zeros((Wu, W), np.int64)
        dd[pi, pw] = d[0]
        rel = dd[np.arange(Wu)[:, None], SG % W] + SO - SO[:, :1]
        if not (rel == rel[0]).all():
            return None
        j0 = int(np.argmin(rel[0]))
        off = np.full(idx.size, -1, np.int64)
        off[owned] = rel[0] - rel[0, j0]
        if off_all is None:
            off_all = off
        elif not np.array_equal(off_all, off):
            return None
        # at every later step, each source wave's base moves as the wave's element j0's source does
        # (checked once per distinct pair of source waves: their difference stays step 0's)
        pairs = np.unique(np.stack([pu, SG[pi, j0]], 1), axis=0)
        P, Q = pairs[pairs[:, 0] != pairs[:, 1]].T
        if not np.array_equal(srcs[:, :, P] - srcs[:, :, Q], np.broadcast_to(srcs[:1, :, P] - srcs[:1, :, Q],
                                                                               (len(ts), nrep, P.size))):
            return None
        base[np.asarray(ts) - fused.start] = (srcs[:, :, SG[:, j0]] + SO[:, j0]).reshape(len(ts), sim.G)
    assert off_all is not None and tensor is not None
    return Operand(tensor, src_codec, base, off_all)


def lds_image(sim: LdsLoopHost, w: Walk, op: Op, t: int) -> WindowImage | None:
    """The register image operand ``lds_load`` ``op`` reads in iteration ``t``: each slot's LDS
    element is the one its source store event wrote (the coverage map; every element covered),
    which holds the bits of the stored window's slot that record sits in (``lds.store``'s bit
    move), so the image is the source tensor's bits at those windows' offsets: a
    :class:`WindowImage` (gathered when read) where every wave's offsets are one shape moved by a
    base, else None."""
    ev, (cov, nrep, _), _ = w.sources[(id(op), t)]  # type: ignore[misc]
    src_ld, s = ev.src  # type: ignore[misc]
    c, cs = sim.codec_of(op.out), sim.codec_of(src_ld.out)
    name = src_ld.attr("tensor")
    stored = cov[:, c._slot_plan[1]]  # per image slot: the stored (wave relative to the repeat, record)
    wave, rec = stored // cs.rec.shape[0], stored % cs.rec.shape[0]
    off = sim.offsets(name, cs, bool(src_ld.attr("transpose")))[0][cs._slot_plan[1]][cs.slots[rec]]
    base = (w.base[id(src_ld)] if id(src_ld) in w.base else w.pre_base[id(src_ld)])[s]
    base = base.reshape(nrep, sim.G // nrep)
    bits = sim.bits_of(name, c.dt)
    # the window form: per wave, each source wave's base minus that of the wave's slot 0 the same
    # in every repeat, and then every wave's offsets relative to its slot 0 the same
    Wu = base.shape[1]
    pair = np.zeros((Wu, Wu), bool)
    pair[np.arange(Wu)[:, None], wave] = True
    pu, pw = np.nonzero(pair)
    d = base[:, pw] - base[:, wave[pu, 0]]
    if (d == d[0]).all():
        dd = np.zeros((Wu, Wu), np.int64)
        dd[pu, pw] = d[0]
        rel = dd[np.arange(Wu)[:, None], wave] + off - off[:, :1]
        if (rel == rel[0]).all():
            return WindowImage(c, bits, (base[:, wave[:, 0]] + off[:, 0]).reshape(-1), rel[0], name)
    return None
