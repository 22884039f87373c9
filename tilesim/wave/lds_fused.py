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
   move the window's bits as the step-by-step store does; none at all when the loop ran to its end
   here and no op after it touches the LDS: no op reads those bytes), the register images of loads last
   defined in a fused step, and the accumulator. The last iteration is fused too when every
   ``lds_load`` of the body feeds the mma: their images are the source tensor's bits at the stored
   windows' offsets (``lds_sources.lds_image``, the bits the LDS holds); else it runs step by step.

``TILESIM_NO_FUSE=1`` (everything step by step) or ``TILESIM_NO_LDS_FUSE=1`` (this loop only) turn it off.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tilesim.ir.core import Op, Value
from tilesim.ir.ops import BINOPS, KINDS
from tilesim.wave import kernels
from tilesim.wave.images import TileImage, WindowImage
from tilesim.wave.kernels import gather_windows, mma_chain
from tilesim.wave.lds_access import BIT_MOVE_TYPES, has_nan
from tilesim.wave.lds_sources import LdsLoopHost, Shape, Store, Walk, lds_image, operand, source
from tilesim.wave.mma import fast_spec

__all__ = ["LdsLoopHost", "run_lds_loop"]


def _off() -> bool:
    return bool(os.environ.get("TILESIM_NO_FUSE") or os.environ.get("TILESIM_NO_LDS_FUSE"))


# ---------------------------------------------------------------------------- static shape
def _shape(sim: LdsLoopHost, loop: Op) -> Shape | None:
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
    return Shape(mma, spec, init, (top[mma.args[0].id], top[mma.args[1].id]), loads)


def _bit_move_type(buf: Value, c: Any) -> bool:
    """The register type moves to and from ``buf`` as its bits (lds.py's bit move, alignment aside)."""
    return (c.slots is not None and c.dt.name == buf.dtype and buf.dtype in BIT_MOVE_TYPES
            and c.width == 8 * buf.lds.elem_bytes)  # type: ignore[union-attr]


# ---------------------------------------------------------------------------- scalars
def _scalars(sim: LdsLoopHost, loop: Op, iters: list[int]) -> Walk | None:
    """Every scalar of the body for every iteration at once (``[T or 1, G or 1]`` int64), and which
    ops run in which iteration; None when a branch splits the waves or a divisor is 0."""
    T = len(iters)
    w = Walk({loop.out.id: np.asarray(iters, np.int64)[:, None]}, {})
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
    (equal ids: equal rows). A k-loop's rows repeat with a short period (the slab alternates): when
    every row equals the one ``p`` before it, row ``t`` is row ``t % p`` and only the first ``p``
    rows are told apart by their bytes."""
    if x.shape[0] == 1:
        return [0] * T
    x = x[:T]
    period = next((p for p in range(1, 5) if p < T and not (x[p:] != x[:-p]).any()), T)
    seen: dict[bytes, int] = {}
    first = [seen.setdefault(x[t].tobytes(), len(seen)) for t in range(period)]
    return [first[t % period] for t in range(T)]


# ---------------------------------------------------------------------------- the walk (no state changes)
def _walk_events(sim: LdsLoopHost, loop: Op, shape: Shape, w: Walk, T: int) -> bool:
    """Fill ``w``'s per-iteration LDS accesses, store events and the operand loads' sources for
    iterations ``0 .. T-1`` (``lds.access`` only fills its address cache); False when an access is
    not an aligned bit move."""
    G, lds = sim.G, sim.lds
    for ld in shape.loads.values():
        name, tr, c = ld.attr("tensor"), bool(ld.attr("transpose")), sim.codec_of(ld.out)
        rows, cols = sim.tensors[name].shape
        T_all = w.vals[loop.out.id].shape[0]
        row0, col0 = _get(w, sim, ld.args[0]), _get(w, sim, ld.args[1])  # [T or 1, G or 1]
        rlo, rhi, clo, chi = sim.offsets(name, c, tr)[1]
        # every lane in bounds: the waves' least and greatest origins are (no [T, G] temporaries)
        w.inb[id(ld)] = np.broadcast_to((row0.min(1) + rlo >= 0) & (row0.max(1) + rhi < rows)
                                        & (col0.min(1) + clo >= 0) & (col0.max(1) + chi < cols), (T_all,))
        w.base[id(ld)] = np.broadcast_to(row0 * cols + col0, (T_all, G))
    last_def: dict[int, int] = {}
    operand_ids = {id(op) for op in shape.operands}
    by_buf: dict[int, list[Store]] = {}
    # the body flattened in program order (a nested op's live flags include its branch's), each
    # LDS op with its iterations' origins as ids of distinct rows: the access of each distinct
    # (row, column) pair is looked up once (a k-loop has a few: the slab alternates)
    flat: list[tuple[Op, str, list[bool], Any]] = []

    def plan(ops: tuple[Op, ...]) -> None:
        for op in ops:
            if op.kind == "branch":
                plan(op.attr("body").ops)
            elif op.kind in ("load", "barrier", "lds_store", "lds_load"):
                extra = None
                if op.kind in ("lds_store", "lds_load"):
                    st = op.kind == "lds_store"
                    v = op.args[1] if st else op.out
                    r, q = (op.args[2], op.args[3]) if st else (op.args[1], op.args[2])
                    extra = (op.args[0], sim.codec_of(v), r, q, _row_ids(_get(w, sim, r), T),
                             _row_ids(_get(w, sim, q), T), {}, shape.loads.get(v.id), id(op) in operand_ids)
                flat.append((op, op.kind, w.live[id(op)][:T].tolist(), extra))

    plan(loop.attr("body").ops)
    for ev in _prologue(sim, loop, w):
        w.stores.append(ev)
        by_buf.setdefault(ev.op.args[0].id, []).append(ev)
    for t in range(T):
        events: list[tuple[Op | None, Any]] = []
        for op, kind, live, extra in flat:
            if not live[t]:
                continue
            if kind == "load":
                last_def[op.out.id] = t
            elif kind == "barrier":
                events.append((None, None))
            else:
                buf, c, r, q, rid, qid, seen, ld, is_operand = extra
                acc = seen.get((rid[t], qid[t]), seen)
                if acc is seen:  # (not looked up yet)
                    acc = lds.access(buf, c, _row(_get(w, sim, r), t, G), _row(_get(w, sim, q), t, G))
                    acc = seen[(rid[t], qid[t])] = acc if lds._aligned(acc, buf.lds.elem_bytes) else None
                if acc is None:
                    return False
                events.append((op, acc))
                if kind == "lds_store":
                    s = last_def.get(op.args[1].id, -1)
                    ev = Store(op, acc, t, (ld, s) if s >= 0 and w.inb[id(ld)][s] else None)
                    w.stores.append(ev)
                    by_buf.setdefault(buf.id, []).append(ev)
                elif is_operand:
                    w.sources[(id(op), t)] = source(sim, by_buf.get(buf.id, []), acc, buf.lds.elem_bytes)
        w.steps.append(events)
    return True


# ops that leave the LDS bytes alone: the op table's fact (tilesim/ir/ops.py OpKind.leaves_lds)
_NO_LDS_WRITE = frozenset(k for k, row in KINDS.items() if row.leaves_lds)


def _prologue(sim: LdsLoopHost, loop: Op, w: Walk) -> list[Store]:
    """Store events of the ops before ``loop`` in its block (which have run): an ``lds_store`` of an
    in-bounds window loaded before it in that block, as the loop's own stores; the events start
    after the last op that may write LDS otherwise (an async copy or wait, a nested loop or branch,
    a store this path cannot follow). The loads of iteration 0 then read their sources (the
    prologue of a double-buffered loop) instead of running step by step."""
    block = _block_of(sim.memo, sim.p.body, loop)
    if block is None:
        return []
    events: list[Store] = []
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
            events.append(Store(op, acc, -1, (ld, 0)))
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
                for sub in op.blocks():  # (a loop's or a branch's body: the op table's block kinds)
                    got = find(sub)
                    if got is not None:
                        return got
            return None
        memo[key] = find(block)
    return memo[key]


def _lds_after(sim: LdsLoopHost, loop: Op) -> bool:
    """Whether an op that may run after ``loop`` touches the LDS: True unless the loop is in the
    program's own block (nothing runs it again) and no op after it there, nested ones included,
    takes an LDS buffer."""
    key = ("lds-fused-after", id(loop))
    if key not in sim.memo:
        block = _block_of(sim.memo, sim.p.body, loop)
        later = [o for top in block.ops[block.ops.index(loop) + 1:] for o in (top, *(x for b in top.blocks()
                                                                                    for x in b.walk()))]
        after = block is not sim.p.body or any(isinstance(a, Value) and a.kind == "lds" for o in later for a in o.args)
        sim.memo[key] = after
    return sim.memo[key]


def _get(w: Walk, sim: LdsLoopHost, a: Any) -> np.ndarray:
    if isinstance(a, Value):
        return w.vals[a.id] if a.id in w.vals else sim.scal[a.id][None, :]
    return np.full((1, 1), int(a), np.int64)


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
    shape: Shape | None = sim.memo[key]
    hw_c = shape.spec.hws["C"] if shape is not None else None
    if shape is None or not kernels.available(sim.G * len(iters) * hw_c.rows * hw_c.cols * shape.spec.fast[4]):
        return 0
    # the last iteration too when every lds_load of the body feeds the mma and their images are
    # windows of the source tensors (lds_sources.lds_image); else it runs step by step
    body_lds_loads = {id(op) for op in loop.attr("body").ops if op.kind == "lds_load"}
    T = len(iters) - (not body_lds_loads <= {id(op) for op in shape.operands})
    w = _scalars(sim, loop, iters)
    if w is None or not _walk_events(sim, loop, shape, w, T):
        return 0
    images = {}
    if T == len(iters):
        for op in shape.operands:
            images[id(op)] = lds_image(sim, w, op, T - 1) if w.sources.get((id(op), T - 1)) else None
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
    a, b = (operand(sim, shape, w, i, fused) for i in (0, 1))
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


def _leave_state(sim: LdsLoopHost, loop: Op, shape: Shape, w: Walk, fused: range,
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
    # the LDS bytes: every fused store a later fused store of the same access does not overwrite;
    # none when the loop ran to its end here and no op after it touches the LDS (no op reads them)
    last = {}
    for i, ev in enumerate(w.stores):
        if ev.t in fused and (not images or _lds_after(sim, loop)):
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


def _window(sim: LdsLoopHost, ld: Op, w: Walk, t: int) -> WindowImage:
    """The register image load ``ld`` defines in iteration ``t`` (in bounds: the fast load's window)."""
    name, c, tr = ld.attr("tensor"), sim.codec_of(ld.out), bool(ld.attr("transpose"))
    off = sim.offsets(name, c, tr)[0]
    return WindowImage(c, sim.bits_of(name, c.dt), w.base[id(ld)][t], off[c._slot_plan[1]], name)
