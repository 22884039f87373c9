"""Fused LDS k-loops: a loop that stages tiles global -> registers -> LDS and feeds one
f32-accumulating ``mma`` from LDS (``examples/lds_gemm.py``) runs its middle iterations with the
data movement composed away and the mma steps chained in one compiled kernel
(:func:`tilesim.wave.kernels.mma_chain`, as the plain GEMM's fused loop), while every LDS access
still gets its bank count and race check, in the step-by-step order.

How, and why each step gives the step-by-step bits:

1. **Scalars once for all iterations.** The body's ``const``/``binop`` ops are elementwise over the
   waves, so they are evaluated once on ``[iterations, waves]`` arrays (the loop counter a column)
   with the same numpy functions and int64 types: every iteration's values are the ones the
   step-by-step loop computes. A branch must be taken by every wave or none in each iteration.
2. **Where every operand element comes from.** Walking the iterations (no state changes), each
   ``lds_store`` is an *event* (its access token from :class:`tilesim.wave.lds.Lds`, the step, and the
   global load whose register image it stores: ``tensor[base[wave] + off[record]]``). For each
   ``lds_load`` that feeds the mma, the latest earlier store event touching its buffer must cover
   every element it reads (computed once per pair of access tokens, at element granularity); the
   load then reads those tensor elements: the data is moved as the bits it is (the aligned, same-type,
   NaN-free bit moves of ``lds.py``), so composing the maps gives the same bits as moving them.
3. **The pattern must repeat.** The chained kernel reads operand ``e`` of wave ``g`` at step ``t`` as
   ``tensor[B[t, g] + off[e]]`` with one ``off`` for every step and wave. That form is checked, not
   assumed: per distinct (store token, load token) pattern, the composed offsets of a reference step
   fix ``off``; for every other step of the pattern, each source wave's base must move by the same
   amount as the wave's first element's source; every pattern must give the same ``off``. Replicated
   operand copies must come from the same tensor element. Anything else (a swizzle that changes with
   the slab, a partial overwrite, a load reading data from before the loop, a cast, a NaN in a
   source tensor, an out-of-bounds load) falls back: iterations up to the last one whose operands
   are not one in-loop store of a window (data from before the loop, a read across two stores) run
   step by step first (the *head*); a condition that fails elsewhere leaves the whole loop step by
   step.
4. **Then the state the step-by-step loop leaves.** Only after the chain succeeded (it returns
   None on a NaN result, before anything is reported): op counts, global transactions, every LDS
   access's bank count and race check in program order (``Lds.check_epoch``: an epoch that repeats
   one checked from its start reports its findings again, and a race in one iteration only is found
   as step by step) with the written-bytes mask and its reads of unwritten bytes, the LDS bytes
   (each store whose bytes a later fused store of the same access overwrites is skipped; the others
   move the window's bits as the step-by-step store does), the register images of loads last
   defined in a fused step, and the accumulator. The last iteration is fused too when every
   ``lds_load`` of the body feeds the mma: their images are the source tensor's bits at the stored
   windows' offsets (``_lds_image``, the bits the LDS holds); else it runs step by step.

``TILESIM_NO_FUSE=1`` (everything step by step) or ``TILESIM_NO_LDS_FUSE=1`` (this loop only) turn it off.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from tilesim.ir.core import Op, Value
from tilesim.ir.ops import BINOPS, KINDS
from tilesim.wave import kernels
from tilesim.wave.fused import LoopHost
from tilesim.wave.images import TileImage, WindowImage
from tilesim.wave.kernels import gather_windows, mma_chain
from tilesim.wave.lds import BIT_MOVE_TYPES, Lds, has_nan
from tilesim.wave.mma import fast_spec

__all__ = ["LdsLoopHost", "run_lds_loop"]


class LdsLoopHost(LoopHost, Protocol):
    """:class:`tilesim.wave.fused.LoopHost` plus the LDS and one step-by-step iteration."""

    lds: Lds
    wg_of: np.ndarray

    def loop_step(self, op: Op, it: int) -> None: ...
    def set_frag(self, v: Value, regs: Any) -> None: ...


@dataclass
class _Shape:
    """What the loop body must look like (checked once per loop)."""

    mma: Op
    spec: Any  # tilesim.wave.mma._Spec with its fast path
    init: Value
    operands: tuple[Op, Op]  # the top-level lds_loads the mma reads as A and B
    loads: dict[int, Op]  # value id -> global load op


@dataclass
class _Store:
    op: Op
    acc: Any  # lds._Access
    t: int
    src: tuple[Op, int] | None  # the global load whose image it stores, and that load's step


@dataclass
class _Walk:
    """The iterations' scalars, which ops run in which iteration, and the LDS events."""

    vals: dict[int, np.ndarray]
    live: dict[int, np.ndarray]  # id(op) -> bool[T]: the op runs in that iteration
    base: dict[int, np.ndarray] = field(default_factory=dict)  # id(load) -> int64[T, G] window bases
    inb: dict[int, np.ndarray] = field(default_factory=dict)  # id(load) -> bool[T]: every lane in bounds
    pre_base: dict[int, np.ndarray] = field(default_factory=dict)  # id(load before the loop) -> int64[1, G]
    # per iteration, in program order: (lds_store or lds_load, its access), (None, None) for a barrier
    steps: list[list[tuple[Op | None, Any]]] = field(default_factory=list)
    stores: list[_Store] = field(default_factory=list)
    # (id(operand lds_load), step) -> (its source store event, _coverage, the load's access) or None
    sources: dict[tuple[int, int], tuple[_Store, Any, Any] | None] = field(default_factory=dict)


def _off() -> bool:
    return bool(os.environ.get("TILESIM_NO_FUSE") or os.environ.get("TILESIM_NO_LDS_FUSE"))


# ---------------------------------------------------------------------------- static shape
def _shape(sim: LdsLoopHost, loop: Op) -> _Shape | None:
    carried = loop.attr("carried") or ()
    if len(carried) != 1 or carried[0][0].kind != "frag":
        return None
    init, nxt = carried[0]
    body = loop.attr("body").ops
    mmas = [op for op in body if op.kind == "mma"]
    if len(mmas) != 1 or mmas[0].out.id != nxt.id or mmas[0].args[2].id != init.id:
        return None
    mma = mmas[0]
    spec = fast_spec(sim, mma)
    if spec is None:
        return None
    top = {op.out.id: op for op in body if op.kind == "lds_load"}
    if mma.args[0].id not in top or mma.args[1].id not in top:
        return None
    loads: dict[int, Op] = {}
    defined = {init.id}

    def walk(ops: tuple[Op, ...], nested: bool) -> bool:
        for op in ops:
            k = op.kind
            if k == "branch":
                if not walk(op.attr("body").ops, True):
                    return False
            elif k == "load":
                c = sim.codec_of(op.out)
                if op.attr("broadcast") or c.slots is None or c._slot_plan[1] is None:
                    return False
                loads[op.out.id] = op
            elif k == "lds_store":
                buf, v = op.args[0], op.args[1]
                if v.id not in loads or not _bit_move_type(buf, sim.codec_of(v)):
                    return False
            elif k == "lds_load":
                if nested or not _bit_move_type(op.args[0], sim.codec_of(op.out)):
                    return False
            elif k == "mma":
                if nested:
                    return False
            elif k not in ("const", "binop", "barrier"):
                return False
            if op.out is not None:
                defined.add(op.out.id)
        return True

    if not walk(body, False) or set(sim.trace) & defined:
        return None
    for v, name in zip(mma.args[:2], "AB"):
        cl, hw = sim.codec_of(v), spec.hws[name]
        if cl._slot_plan[1] is None or (cl.width, cl.lanes, cl.nregs) != (hw.width, hw.lanes, hw.nregs):
            return None
    return _Shape(mma, spec, init, (top[mma.args[0].id], top[mma.args[1].id]), loads)


def _bit_move_type(buf: Value, c: Any) -> bool:
    """The register type moves to and from ``buf`` as its bits (lds.py's bit move, alignment aside)."""
    return (c.slots is not None and c.dt.name == buf.dtype and buf.dtype in BIT_MOVE_TYPES
            and c.width == 8 * buf.lds.elem_bytes)  # type: ignore[union-attr]


# ---------------------------------------------------------------------------- scalars
def _scalars(sim: LdsLoopHost, loop: Op, iters: list[int]) -> _Walk | None:
    """Every scalar of the body for every iteration at once (``[T or 1, G or 1]`` int64), and which
    ops run in which iteration; None when a branch splits the waves or a divisor is 0."""
    T = len(iters)
    w = _Walk({loop.out.id: np.asarray(iters, np.int64)[:, None]}, {})
    vals, live = w.vals, w.live

    def get(a: Any) -> np.ndarray:
        return _get(w, sim, a)

    def walk(ops: tuple[Op, ...], on: np.ndarray) -> bool:
        for op in ops:
            live[id(op)] = on
            if op.kind == "const":
                vals[op.out.id] = np.full((1, 1), int(op.attr("value")), np.int64)
            elif op.kind == "binop":
                row = BINOPS[op.attr("op")]
                a, b = get(op.args[0]), get(op.args[1])
                if row.divides and (b == 0).any():
                    return False  # (the step-by-step loop may never divide by it; let it decide)
                vals[op.out.id] = row.numpy(a, b).astype(np.int64)
            elif op.kind == "branch":
                cond = np.broadcast_to(get(op.args[0]) != 0, (T, sim.G))
                every = cond.all(1)
                if (cond.any(1) != every)[on].any():
                    return False
                if not walk(op.attr("body").ops, on & every):
                    return False
        return True

    with np.errstate(all="ignore"):
        ok = walk(loop.attr("body").ops, np.ones(T, bool))
    return w if ok else None


def _row(x: np.ndarray, t: int, G: int) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(x[t if x.shape[0] > 1 else 0], (G,)))


def _row_ids(x: np.ndarray, T: int) -> list[int]:
    """For each iteration ``t < T`` of a ``[T or 1, G or 1]`` scalar, an id of its row of values
    (equal ids: equal rows)."""
    if x.shape[0] == 1:
        return [0] * T
    seen: dict[bytes, int] = {}
    return [seen.setdefault(x[t].tobytes(), len(seen)) for t in range(T)]


# ---------------------------------------------------------------------------- the walk (no state changes)
def _walk_events(sim: LdsLoopHost, loop: Op, shape: _Shape, w: _Walk, T: int) -> bool:
    """Fill ``w``'s per-iteration LDS accesses, store events and the operand loads' sources for
    iterations ``0 .. T-1`` (``lds.access`` only fills its address cache); False when an access is
    not an aligned bit move."""
    G, lds = sim.G, sim.lds
    for ld in shape.loads.values():
        name, tr, c = ld.attr("tensor"), bool(ld.attr("transpose")), sim.codec_of(ld.out)
        rows, cols = sim.tensors[name].shape
        row0 = np.broadcast_to(_get(w, sim, ld.args[0]), (w.vals[loop.out.id].shape[0], G))
        col0 = np.broadcast_to(_get(w, sim, ld.args[1]), row0.shape)
        rlo, rhi, clo, chi = sim.offsets(name, c, tr)[1]
        w.inb[id(ld)] = ((row0 + rlo >= 0) & (row0 + rhi < rows) & (col0 + clo >= 0) & (col0 + chi < cols)).all(1)
        w.base[id(ld)] = row0 * cols + col0
    last_def: dict[int, int] = {}
    operand_ids = {id(op) for op in shape.operands}
    # per LDS op: each iteration's (row origins, column origins) as ids of the distinct rows, and
    # the access of each distinct pair (a k-loop has a few: the slab alternates)
    origin_ids: dict[int, tuple[list[int], list[int]]] = {}
    accesses: dict[tuple[int, int, int], Any] = {}

    def access_at(op: Op, buf: Value, c: Any, r: Any, q: Any, t: int) -> Any:
        ids = origin_ids.get(id(op))
        if ids is None:
            ids = origin_ids[id(op)] = (_row_ids(_get(w, sim, r), T), _row_ids(_get(w, sim, q), T))
        key = (id(op), ids[0][t], ids[1][t])
        if key not in accesses:
            acc = lds.access(buf, c, _row(_get(w, sim, r), t, G), _row(_get(w, sim, q), t, G))
            accesses[key] = acc if lds._aligned(acc, buf.lds.elem_bytes) else None
        return accesses[key]
    by_buf: dict[int, list[_Store]] = {}

    def visit(ops: tuple[Op, ...], t: int, events: list[tuple[Op | None, Any]]) -> bool:
        for op in ops:
            if not w.live[id(op)][t]:
                continue
            if op.kind == "branch":
                if not visit(op.attr("body").ops, t, events):
                    return False
            elif op.kind == "load":
                last_def[op.out.id] = t
            elif op.kind == "barrier":
                events.append((None, None))
            elif op.kind in ("lds_store", "lds_load"):
                buf = op.args[0]
                v = op.args[1] if op.kind == "lds_store" else op.out
                r, q = (op.args[2], op.args[3]) if op.kind == "lds_store" else (op.args[1], op.args[2])
                acc = access_at(op, buf, sim.codec_of(v), r, q, t)
                if acc is None:
                    return False
                events.append((op, acc))
                if op.kind == "lds_store":
                    ld, s = shape.loads[v.id], last_def.get(v.id, -1)
                    ev = _Store(op, acc, t, (ld, s) if s >= 0 and w.inb[id(ld)][s] else None)
                    w.stores.append(ev)
                    by_buf.setdefault(buf.id, []).append(ev)
                elif id(op) in operand_ids:
                    w.sources[(id(op), t)] = _source(sim, by_buf.get(buf.id, []), acc, buf.lds.elem_bytes)
        return True

    for ev in _prologue(sim, loop, w):
        w.stores.append(ev)
        by_buf.setdefault(ev.op.args[0].id, []).append(ev)
    for t in range(T):
        events: list[tuple[Op | None, Any]] = []
        if not visit(loop.attr("body").ops, t, events):
            return False
        w.steps.append(events)
    return True


# ops that leave the LDS bytes alone: the op table's fact (tilesim/ir/ops.py OpKind.leaves_lds)
_NO_LDS_WRITE = frozenset(k for k, row in KINDS.items() if row.leaves_lds)


def _prologue(sim: LdsLoopHost, loop: Op, w: _Walk) -> list[_Store]:
    """Store events of the ops before ``loop`` in its block (which have run): an ``lds_store`` of an
    in-bounds window loaded before it in that block, as the loop's own stores; the events start
    after the last op that may write LDS otherwise (an async copy or wait, a nested loop or branch,
    a store this path cannot follow). The loads of iteration 0 then read their sources (the
    prologue of a double-buffered loop) instead of running step by step."""
    block = _block_of(sim.memo, sim.p.body, loop)
    if block is None:
        return []
    events: list[_Store] = []
    windows: dict[int, Op] = {}
    G = sim.G
    for op in block.ops[:block.ops.index(loop)]:
        if op.kind == "load":
            c = sim.codec_of(op.out)
            name, tr = op.attr("tensor"), bool(op.attr("transpose"))
            if op.attr("broadcast") or c.slots is None or c._slot_plan[1] is None:
                windows.pop(op.out.id, None)
                continue
            row0, col0 = (sim.scal[a.id] if isinstance(a, Value) else np.full(G, int(a), np.int64) for a in op.args[:2])
            if not sim.in_bounds(name, c, row0, col0, tr):
                windows.pop(op.out.id, None)
                continue
            windows[op.out.id] = op
            w.pre_base[id(op)] = (row0 * sim.tensors[name].shape[1] + col0)[None, :]
        elif op.kind == "lds_store":
            buf, v = op.args[0], op.args[1]
            ld = windows.get(v.id)
            acc = None
            if ld is not None and _bit_move_type(buf, sim.codec_of(v)):
                r, q = (sim.scal[a.id] if isinstance(a, Value) else np.full(G, int(a), np.int64) for a in op.args[2:4])
                acc = sim.lds.access(buf, sim.codec_of(v), r, q)
            if acc is None or not sim.lds._aligned(acc, buf.lds.elem_bytes):
                events = []  # a write this path cannot follow: nothing before it is a source
                continue
            events.append(_Store(op, acc, -1, (ld, 0)))
        elif op.kind not in _NO_LDS_WRITE:
            events = []
    return events


def _block_of(memo: dict, block: Any, loop: Op) -> Any:
    """The block whose ops hold ``loop`` (searched once per loop)."""
    key = ("lds-fused-block", id(loop))
    if key not in memo:
        def find(b: Any) -> Any:
            for op in b.ops:
                if op is loop:
                    return b
                for sub in (op.attr("body"),) if op.kind in ("loop", "branch") else ():
                    got = find(sub)
                    if got is not None:
                        return got
            return None
        memo[key] = find(block)
    return memo[key]


def _get(w: _Walk, sim: LdsLoopHost, a: Any) -> np.ndarray:
    if isinstance(a, Value):
        return w.vals[a.id] if a.id in w.vals else sim.scal[a.id][None, :]
    return np.full((1, 1), int(a), np.int64)


# ---------------------------------------------------------------------------- sources
def _source(sim: LdsLoopHost, events: list[_Store], acc: Any, eb: int) -> tuple[_Store, Any, Any] | None:
    """The store event whose elements an operand load reads — the latest earlier store to the buffer
    that touches any of them must write them all — with their :func:`_coverage` and the load's
    access; None: not one in-loop store of a window."""
    for ev in reversed(events):
        cov = _coverage(sim, ev.acc, acc, eb)
        if cov is None:
            continue
        return (ev, cov, acc) if ev.src is not None and cov[2] else None
    return None


def _coverage(sim: LdsLoopHost, s: Any, l: Any, eb: int) -> tuple[np.ndarray, int, bool] | None:
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
class _Operand:
    """One mma operand over the fused steps: ``tensor[base[t, g] + off[e]]`` (``off < 0``: reads 0)."""

    tensor: str
    src: Any  # the global load's codec (the bits' type)
    base: np.ndarray
    off: np.ndarray


def _operand(sim: LdsLoopHost, shape: _Shape, w: _Walk, which: int, fused: range) -> _Operand | None:
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
        delta = srcs - srcs[0]
        if not np.array_equal(delta[:, :, pu], delta[:, :, SG[pi, j0]]):
            return None
        base[np.asarray(ts) - fused.start] = (srcs[:, :, SG[:, j0]] + SO[:, j0]).reshape(len(ts), sim.G)
    assert off_all is not None and tensor is not None
    return _Operand(tensor, src_codec, base, off_all)


# ---------------------------------------------------------------------------- the loop
def run_lds_loop(sim: LdsLoopHost, loop: Op, iters: list[int]) -> int:
    """Run the first ``n`` iterations of ``loop`` (a head step by step, then the rest fused, the
    last one too where it can) when the loop and the data allow it; returns ``n`` (0: the caller
    runs them all)."""
    if sim.exact or len(iters) < 3 or not sim.active.all() or _off():
        return 0
    key = ("lds-fused-shape", id(loop))
    if key not in sim.memo:
        sim.memo[key] = _shape(sim, loop)
    shape: _Shape | None = sim.memo[key]
    hw_c = shape.spec.hws["C"] if shape is not None else None
    if shape is None or not kernels.available(sim.G * len(iters) * hw_c.rows * hw_c.cols * shape.spec.fast[4]):
        return 0
    # the last iteration too when every lds_load of the body feeds the mma and their images are
    # windows of the source tensors (_lds_image); else it runs step by step
    body_lds_loads = {id(op) for op in loop.attr("body").ops if op.kind == "lds_load"}
    T = len(iters) - (not body_lds_loads <= {id(op) for op in shape.operands})
    w = _scalars(sim, loop, iters)
    if w is None or not _walk_events(sim, loop, shape, w, T):
        return 0
    images = {}
    if T == len(iters):
        for op in shape.operands:
            images[id(op)] = _lds_image(sim, w, op, T - 1) if w.sources.get((id(op), T - 1)) else None
        if None in images.values():
            T, images = T - 1, {}
    external = [t for t in range(T) if any(w.sources.get((id(op), t), 0) is None for op in shape.operands)]
    head = external[-1] + 1 if external else 0
    fused = range(head, T)
    if len(fused) < 2:
        return 0
    for ev in w.stores:
        if ev.t in fused and ev.src is None:
            return 0  # a store whose data this path cannot replay
    for ld in shape.loads.values():
        if (w.live[id(ld)][head:T] & ~w.inb[id(ld)][head:T]).any():
            return 0  # out of bounds: reported by the step-by-step load
    a, b = (_operand(sim, shape, w, i, fused) for i in (0, 1))
    if a is None or b is None:
        return 0
    luts = shape.spec.fast[1], shape.spec.fast[3]
    bits = [sim.bits_of(x.tensor, x.src.dt) for x in (a, b)]
    if any(_any_nan(v, lut, shape.spec.hws[n].dt.name) for v, lut, n in zip(bits, luts, "AB")):
        return 0
    for it in iters[:head]:
        sim.loop_step(loop, it)
    raw = sim.regs.raw(shape.init.id)
    if not (isinstance(raw, TileImage) and raw.tile is not None and (raw.zero or raw.codec is shape.spec.hw_d)):
        return head
    acc = np.array(raw.tile, np.float32, order="C")
    small = max(sim.tensors[a.tensor].size, sim.tensors[b.tensor].size) < 2**31 // 64
    acc = mma_chain(bits[0], a.base.astype(np.int32) if small else a.base, a.off,
                    bits[1], b.base.astype(np.int32) if small else b.base, b.off, acc, shape.spec.fast[4], inplace=True,
                    lut_a=luts[0], lut_b=luts[1])
    if acc is None:
        return head  # a NaN result: the rest step by step, nothing of the fused steps reported yet
    _leave_state(sim, loop, shape, w, fused, images)
    regs = TileImage(shape.spec.hw_d, acc)
    sim.regs[shape.init.id] = regs
    sim.regs[shape.mma.out.id] = regs
    sim.vals[shape.mma.out.id] = shape.mma.out
    return T


def _any_nan(bits: np.ndarray, lut: np.ndarray, hw_dt: str) -> bool:
    """Whether a source tensor's bits (the global load's type) hold a NaN as the instruction reads
    them (``lut``, its decode table: the chain decodes the windows it reads through it)."""
    nan = np.isnan(lut)
    if not nan.any():
        return False
    if hw_dt in BIT_MOVE_TYPES and bits.dtype.itemsize * 8 == lut.size.bit_length() - 1:
        return has_nan(bits, hw_dt)  # (a bit test, no gather)
    return bool(nan[bits].any())


def _leave_state(sim: LdsLoopHost, loop: Op, shape: _Shape, w: _Walk, fused: range,
                 images: dict[int, WindowImage]) -> None:
    """What the fused iterations leave as the step-by-step loop would (module docstring, step 4)."""
    lds = sim.lds

    def count(ops: tuple[Op, ...]) -> None:
        for op in ops:
            n = int(w.live[id(op)][fused.start:fused.stop].sum())
            if n:
                sim.rep.ops[op.kind] += n
            if op.kind == "branch":
                count(op.attr("body").ops)

    count(loop.attr("body").ops)
    for ld in shape.loads.values():
        steps = np.flatnonzero(w.live[id(ld)][fused.start:fused.stop]) + fused.start
        if steps.size:
            sim.count_transactions(ld.attr("tensor"), sim.codec_of(ld.out), w.base[id(ld)][steps],
                                   bool(ld.attr("transpose")))
    # as op_lds_store / op_lds_load and op_barrier: the checks, the written-bytes mask and its reads
    events: list[tuple[Value, Any, bool]] = []
    for t in fused:
        for op, acc in w.steps[t]:
            if op is None:
                lds.check_epoch(events, sim.active)
                events = []
            else:
                events.append((op.args[0], acc, op.kind == "lds_store"))
    lds.check_epoch(events, sim.active, barrier=False)
    # the LDS bytes: every fused store a later fused store of the same access does not overwrite
    last = {}
    for i, ev in enumerate(w.stores):
        if ev.t in fused:
            last[(ev.op.args[0].id, ev.acc.token)] = i
    for i in sorted(last.values()):
        ev = w.stores[i]
        ld, s = ev.src  # type: ignore[misc]
        buf, c, win = ev.op.args[0], sim.codec_of(ev.op.args[1]), _window(sim, ld, w, s)
        # a bit move (walk: _bit_move_type, aligned) of the window's elements: their bits per record
        # as the image's slots hold them (WindowImage), unless one is a NaN pattern
        if not lds.move_bits(buf, gather_windows(win.bits, win.base, win.off[c.slots]), ev.acc, sim.active):
            lds.store(buf, c, win.image(), ev.acc, sim.active, ev.op.args[1].dtype)
    # loads last defined in a fused step (a load in a branch the last iteration skips)
    for ld in shape.loads.values():
        steps = np.flatnonzero(w.live[id(ld)][:fused.stop])
        if steps.size and steps[-1] >= fused.start:
            sim.set_frag(ld.out, _window(sim, ld, w, int(steps[-1])))
    for op in dict.fromkeys(shape.operands):  # the last iteration fused: its lds_loads' images
        if id(op) in images:
            sim.set_frag(op.out, images[id(op)])


def _lds_image(sim: LdsLoopHost, w: _Walk, op: Op, t: int) -> WindowImage | None:
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


def _window(sim: LdsLoopHost, ld: Op, w: _Walk, t: int) -> WindowImage:
    """The register image load ``ld`` defines in iteration ``t`` (in bounds: the fast load's window)."""
    name, c, tr = ld.attr("tensor"), sim.codec_of(ld.out), bool(ld.attr("transpose"))
    off = sim.offsets(name, c, tr)[0]
    return WindowImage(c, sim.bits_of(name, c.dt), w.base[id(ld)][t], off[c._slot_plan[1]], name)
