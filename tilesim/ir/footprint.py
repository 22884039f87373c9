"""What one access of a fragment touches, and the coverage the stores give: the records of a
fragment's layout (:func:`records`), a store's footprint (:class:`Store`), the analysis' findings
(:class:`Note`) and its budget, the pass that every output element is written exactly once
(:func:`coverage`) and its counterpart that every input element is read (:func:`input_coverage`). The walk that produces the footprints is :mod:`tilesim.ir.accesses`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilesim.ir.core import Program, Value
from tilesim.ir.ops import MMA_KINDS

__all__ = ["BUDGET", "Note", "Read", "Skip", "Store", "coverage", "input_coverage", "lattice", "origins", "records"]

BUDGET = 1 << 26  # elements of one analysis array (int64: 512 MiB would be 2^26); larger -> "not checked"


@dataclass(frozen=True)
class Note:
    """One finding of the analysis (the verifier turns it into a :class:`~tilesim.ir.verify.Finding`)."""

    severity: str  # error | warning
    where: str
    message: str
    simulate: bool = False  # the simulator cannot run the program (it refuses with a typed error)


class Skip(Exception):
    """The analysis cannot follow this program (too large, data-dependent): say so, do not guess."""


@dataclass
class Store:
    op: int  # index in program order
    tensor: str
    _flat: np.ndarray | None  # :attr:`flat`; None: built from the origins when first read (unmasked)
    g: np.ndarray  # int64[instances] (workgroup, wave) index of each instance
    origin: np.ndarray  # int64[instances, 2] (row0, col0)
    value: Value
    transpose: bool
    masked: bool  # some entries of flat are -1
    epoch: int = 0  # barriers passed before it (orders it against the other waves of its workgroup)
    cols: int = 0  # the tensor's columns (to build :attr:`flat`)

    @property
    def flat(self) -> np.ndarray:
        """int64[instances, records] element index, -1 where masked. An unmasked store's is built on
        first read (the coverage proof on tiles needs only the origins: :func:`_tiled`)."""
        if self._flat is None:
            rr, cc, _ = records(self.value, self.transpose)
            self._flat = ((self.origin[:, 0] * self.cols + self.origin[:, 1])[:, None]
                          + (rr * self.cols + cc)[None, :])
        return self._flat



def records(v: Value, transpose: bool, broadcast: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row offset, col offset, (lane, vgpr)) of every record of a fragment's layout; a vector
    (``broadcast``) load reads row (col) 0 for every fragment row (col) — ops.BROADCASTS."""
    assert v.layout is not None
    rec = v.layout.location_array()
    rows = dict(v.layout.out_dims)["row"]
    tile_row = rec[:, 0] * rows + rec[:, 1]  # multi-block: block b's rows follow block b-1's (as the simulator)
    col = rec[:, 2]
    if broadcast == "row":
        tile_row = np.zeros_like(tile_row)
    elif broadcast == "col":
        col = np.zeros_like(col)
    r, c = (col, tile_row) if transpose else (tile_row, col)
    return r, c, rec[:, [4, 3]]


def _unique_cols(v: Value, transpose: bool) -> tuple[np.ndarray, bool]:
    """Record columns holding distinct elements (replicas of an element counted once), and whether
    the layout replicates any element (several lanes store the same element)."""
    rr, cc, _ = records(v, transpose)
    _, first = np.unique(rr * (1 << 32) + cc, return_index=True)
    return np.sort(first), first.size != rr.size


def coverage(st: Any, prog: Program, budget: int, rerun: Callable[[tuple[int, ...]], Any]) -> None:
    """Every element of each output written exactly once: unwritten elements (named with the store,
    tile id, wave, lane and VGPR that would hold them: the walk re-run by ``rerun(grid)`` on a larger
    grid) and elements written by two waves or workgroups. ``st``: the finished walk of
    :mod:`tilesim.ir.accesses` (its stores, notes and (workgroup, wave) tables)."""
    for t in prog.tensors:
        stores = [s for s in st.stores if s.tensor == t.name]
        if not t.output and not stores:
            continue
        rows, cols = t.shape
        size = rows * cols
        if size > budget:
            st.note("warning", "program", f"coverage of {t.name} not analysed: {size} elements is over the analysis "
                    "budget")
            continue
        if _tiled(stores, t.shape):  # every element written exactly once, proved on tiles: no finding
            continue
        counts = np.zeros(size, np.int64)
        parts = []
        for s in stores:
            keep, replicated = _unique_cols(s.value, s.transpose)
            if replicated:
                st.note("warning", f"op {s.op} (store)", f"the stored fragment's layout holds some elements of {t.name} "
                        "in several lanes: each copy is written (harmless only when the copies agree)")
            f = s.flat[:, keep] if replicated else s.flat
            g = np.broadcast_to(s.g[:, None], f.shape)
            if s.masked:
                f, g = f[f >= 0], g[f >= 0]
            parts.append((f.reshape(-1), g.reshape(-1)))
            counts += np.bincount(parts[-1][0], minlength=size)
        if (counts == 0).any():
            _unwritten(st, prog, t.name, counts, stores, budget, rerun)
        if counts.max(initial=0) > 1:
            flat = np.concatenate([f for f, _ in parts])
            g = np.concatenate([g for _, g in parts])
            if not _written_twice(st, t.name, cols, counts, flat, g):
                _dead_writes(st, t.name, cols, counts, stores)


def lattice(rr: np.ndarray, cc: np.ndarray, row0: np.ndarray, col0: np.ndarray,
            shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, int, int] | None:
    """Where the windows of an access sit on a lattice of tiles: ``(tile row, tile col, h, w)`` of
    every instance when the records' offsets ``(rr, cc)`` from the instance's origin ``(row0, col0)``
    are the distinct elements of one ``h x w`` rectangle, ``h`` and ``w`` divide the tensor's sides
    ``shape``, and every instance's rectangle starts on a multiple of ``(h, w)``; else None. Bounds
    are not checked. Two instances then write the same elements exactly when their tiles are equal."""
    rows, cols = shape
    if not rr.size:
        return None
    r_lo, c_lo = int(rr.min()), int(cc.min())
    h, w = int(rr.max()) - r_lo + 1, int(cc.max()) - c_lo + 1
    if h * w != rr.size or rows % h or cols % w:
        return None
    if np.unique((rr - r_lo) * w + (cc - c_lo)).size != rr.size:  # a replica: some cell not held
        return None
    top, left = row0 + r_lo, col0 + c_lo
    if (top % h).any() or (left % w).any():
        return None
    return top // h, left // w, h, w


def _tiled(stores: list[Store], shape: tuple[int, int]) -> bool:
    """Whether the stores provably write every element of a ``shape`` tensor exactly once, decided
    per tile rather than per element: each store unmasked (so inside the tensor) with its windows on
    one :func:`lattice` of ``h x w`` tiles, and every tile started exactly once over all the stores.
    Those rectangles are then disjoint and cover the tensor, which is what :func:`coverage`'s
    per-element counts find (all ones: no finding). False says only that this proof does not apply:
    the per-element pass decides (and names what is wrong)."""
    hw = None
    per_tile = np.zeros(0, np.int64)
    for s in stores:
        if s.masked:
            return False
        rr, cc, _ = records(s.value, s.transpose)
        lat = lattice(rr, cc, s.origin[:, 0], s.origin[:, 1], shape)
        if lat is None or hw not in (None, lat[2:]):
            return False
        ti, tj, h, w = lat
        if hw is None:
            hw, per_tile = (h, w), np.zeros((shape[0] // h) * (shape[1] // w), np.int64)
        per_tile += np.bincount(ti * (shape[1] // w) + tj, minlength=per_tile.size)
    return hw is not None and bool((per_tile == 1).all())


def _unwritten(st: Any, prog: Program, name: str, counts: np.ndarray, stores: list[Store], budget: int,
               rerun: Callable[[tuple[int, ...]], Any]) -> None:
    rows, cols = prog.tensor(name).shape
    missing = np.flatnonzero(counts == 0)
    e = int(missing[0])
    r, c = divmod(e, cols)
    mr, mc = missing // cols, missing % cols
    span = f"rows {int(mr.min())}-{int(mr.max())}, cols {int(mc.min())}-{int(mc.max())}"
    head = f"{name}[{r}][{c}] is never written ({missing.size} of {counts.size} elements unwritten, within {span})"
    if not stores:
        st.note("error", "program", f"{head}: no store writes {name}")
        return
    st.note("error", f"op {stores[0].op} (store to {name})", f"{head}; {_who(prog, name, e, budget, rerun)}")


def _who(prog: Program, name: str, e: int, budget: int, rerun: Callable[[tuple[int, ...]], Any]) -> str:
    """Which tile id, wave, lane and VGPR of a store would write element ``e``: the analysis re-run
    on a larger grid (tile ids past the program's grid), the first instance that holds it."""
    ext = tuple(2 * g + 1 for g in prog.grid)
    try:
        if int(np.prod(ext)) * prog.waves_per_workgroup > budget // 16:
            raise Skip("grid")
        big = rerun(ext)
    except Skip:
        return "no store of the program's tiling reaches it"
    for s in big.stores:
        if s.tensor != name:
            continue
        hit = np.argwhere(s.flat == e)
        if hit.size:
            i, j = (int(x) for x in hit[0])
            g = int(s.g[i])
            coords = tuple(int(x) for x in np.unravel_index(g // big.W, ext, order="F"))
            _, _, lane_vgpr = records(s.value, s.transpose)
            inside = all(x < n for x, n in zip(coords, prog.grid))
            why = ("that store does not run there (a branch skips it)" if inside else
                   f"that tile id is outside the grid {prog.grid}")
            return (f"op {s.op} would write it at {name}[{int(s.origin[i, 0])}:, {int(s.origin[i, 1])}:] from tile_id "
                    f"{coords}, wave {g % big.W}, lane {int(lane_vgpr[j, 0])}, VGPR {int(lane_vgpr[j, 1])}, but {why}")
    return "no store of the program's tiling reaches it at any tile id"


def _written_twice(st: Any, name: str, cols: int, counts: np.ndarray, flat: np.ndarray, g: np.ndarray) -> bool:
    """A write race (an element written by two (workgroup, wave)s): noted, True."""
    multi = counts[flat] > 1
    pairs = np.unique(flat[multi] * st.G + g[multi])
    elem, who = pairs // st.G, pairs % st.G
    writers = np.bincount(elem, minlength=counts.size)
    race = np.flatnonzero(writers > 1)
    if race.size:
        e = int(race[0])
        ws = who[elem == e][:2]
        st.note("error", f"store to {name}", f"{name}[{e // cols}][{e % cols}] is written by "
                f"{' and by '.join(f'workgroup {int(st.wg_of[x])}, wave {int(st.wave_of[x])}' for x in ws)} "
                f"({race.size} elements written by more than one wave): a write race, the result depends on timing")
        return True
    return False


def _dead_writes(st: Any, name: str, cols: int, counts: np.ndarray, stores: list[Store]) -> None:
    """Elements one wave writes several times. An error when a write is dead: the wave overwrites
    it with other data (another fragment, another position of it, or the same store op again in a
    loop) and never loads the element back (a program that accumulates through its output loads it).
    A warning when every write of the element stores the same data (one fragment value, from one
    origin, by distinct store ops): the copies agree. The order of a load against the stores is not
    followed: a load of the element anywhere by the writing wave counts as reading it."""
    multi = counts > 1
    rows_ = []  # per write of a multi-written element: element, writer, op, and what data (value, transpose, origin)
    for s in stores:
        keep, _ = _unique_cols(s.value, s.transpose)
        f = s.flat[:, keep]
        hit = (f >= 0) & multi[np.where(f >= 0, f, 0)]
        i, _j = np.nonzero(hit)
        rows_.append(np.stack([f[hit], s.g[i], np.full(i.size, s.op), np.full(i.size, s.value.id),
                               np.full(i.size, int(s.transpose)), s.origin[i, 0], s.origin[i, 1]], 1))
    w = np.concatenate(rows_)
    w = w[np.lexsort(w.T[::-1])]
    first = np.ones(len(w), bool)
    first[1:] = w[1:, 0] != w[:-1, 0]
    start = np.flatnonzero(first)
    data = w[:, 3:]
    same_data = np.ones(len(w), bool)  # every write of the element stores what its first write does
    same_data[1:] = (data[1:] == data[:-1]).all(1) | first[1:]
    same_op = np.zeros(len(w), bool)  # one store op writing the element twice: a loop, new data each trip
    same_op[1:] = (w[1:, 2] == w[:-1, 2]) & ~first[1:]
    agree = np.logical_and.reduceat(same_data & ~same_op, start)
    elems = w[start, 0]
    writer = w[start, 1]
    loaded = np.zeros(len(elems), bool)
    keys = elems * st.G + writer
    for ld in st.out_loads:
        if ld.tensor == name:
            fl = np.broadcast_to(ld.g[:, None], ld.flat.shape)
            ok = ld.flat >= 0
            loaded |= np.isin(keys, ld.flat[ok] * st.G + fl[ok])
    dead = ~agree & ~loaded
    if dead.any():
        k = int(np.flatnonzero(dead)[0])
        e, x = int(elems[k]), int(writer[k])
        ops = sorted({int(o) for o in w[w[:, 0] == e, 2]})
        st.note("error", f"store to {name}", f"{name}[{e // cols}][{e % cols}] is written {int(counts[e])} times by "
                f"workgroup {int(st.wg_of[x])}, wave {int(st.wave_of[x])} (op{'s' if len(ops) > 1 else ''} "
                f"{', '.join(map(str, ops))}) with different data and never loaded back in between "
                f"({int(dead.sum())} elements written more than once): the earlier writes are dead, only the last "
                "one reaches memory (a store meant for another tile, or a duplicated store?)")
        return
    e = int(elems[0])
    st.note("warning", f"store to {name}", f"{name}[{e // cols}][{e % cols}] is written {int(counts[e])} times by one "
            f"wave ({int(multi.sum())} elements written more than once): the last write wins"
            + ("" if agree.all() else "; the wave loads them back in between (accumulating through the output)"))


@dataclass
class Read:
    """What one load op (or asynchronous copy) reads of a global tensor: the records' offsets from
    each distinct origin any active (workgroup, wave, trip) loads from."""

    op: int
    tensor: str
    rr: np.ndarray  # int64[records] row offset (each element once)
    cc: np.ndarray  # int64[records] col offset
    # the distinct origins: row0 and col0 broadcast together ((n, 1) and (1, m) for a product of
    # distinct rows and columns, else two (n,)); None: too many to follow (not analysed)
    origin: tuple[np.ndarray, np.ndarray] | None

    @property
    def count(self) -> int:
        assert self.origin is not None
        return int(np.prod(np.broadcast_shapes(self.origin[0].shape, self.origin[1].shape)))


def origins(r0s: np.ndarray, c0s: np.ndarray, active: np.ndarray, full: tuple[int, ...],
            budget: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The distinct (row0, col0) of an access whose origins are the (broadcastable) scalar arrays
    ``r0s``, ``c0s`` over the ``full`` (trips..., waves) shape where ``active``. When every instance
    is active and the two vary along different axes (a GEMM's A rows with the tile id, its columns
    with the K trip) the pairs are the product of the distinct values of each, kept factored as an
    (n, 1) and a (1, m) array: O(trips + waves).
    None when there would be more than ``budget`` of them (input coverage then says it is not analysed)."""
    nd = len(full)
    r, c = (np.reshape(x, (1,) * (nd - np.ndim(x)) + np.shape(x)) for x in (r0s, c0s))
    if bool(np.all(active)) and not any(a > 1 and b > 1 for a, b in zip(r.shape, c.shape)):
        ur, uc = np.unique(r), np.unique(c)
        if ur.size * uc.size > budget:
            return None
        return ur[:, None], uc[None, :]
    act = np.broadcast_to(active, full)
    if int(act.sum()) > budget:
        return None
    rf, cf = np.broadcast_to(r, full)[act].astype(np.int64), np.broadcast_to(c, full)[act].astype(np.int64)
    if not rf.size:
        return rf, cf
    # the pairs as one int64 key in (row, col) order: np.unique(axis=0) sorted 258,048 pairs of an
    # LDS GEMM's branch-guarded loads at 1024³ in 0.3-0.45 s, the 1-D key in a few ms
    r_lo, c_lo = int(rf.min()), int(cf.min())
    w = int(cf.max()) - c_lo + 1
    key = (rf - r_lo) * w + (cf - c_lo)
    span = (int(rf.max()) - r_lo + 1) * w
    if span <= max(1 << 22, 8 * key.size):  # a bitmap over the span (no sort) where it is not much larger
        seen = np.zeros(span, np.bool_)
        seen[key] = True
        key = np.flatnonzero(seen)
    else:
        key = np.unique(key)
    return key // w + r_lo, key % w + c_lo


def input_coverage(st: Any, prog: Program, budget: int) -> None:
    """Every element of each input tensor (one no op stores to) read by some load: an element no
    load reads is a finding: an error along an axis a matrix instruction reduces over (a K loop a step
    short, a loop from the wrong origin, a scale of the wrong k-block; :func:`_reduced_axes`) or when
    no load of a matrix operand runs at all, else a warning (a program may read a slice). Decided per
    tile when every read sits on one :func:`lattice` (a bitmap of tiles), else per element (which
    names the first unread element and their extent)."""
    operands = None
    # outputs left unwritten (a grid too small) leave their operands' rows unread: that error says it first
    unwritten = any(n.severity == "error" and " is never written (" in n.message for n in st.notes)
    for t in prog.tensors:
        if t.output:
            continue
        reads = [r for r in st.reads if r.tensor == t.name]
        rows, cols = t.shape
        if any(r.origin is None for r in reads):
            st.note("warning", "program", f"input coverage of {t.name} not analysed: a load of it has more origins "
                    "than the analysis budget")
            continue
        if not reads:  # a parameter no op names is the verifier's structure finding; else no load of it ran
            ops = [i for i, o in enumerate(prog.walk()) if o.kind in ("load", "lds_copy_async")
                   and o.attr("tensor") == t.name]
            operands = _reduced_axes(prog) if operands is None else operands
            if ops:  # an operand of a matrix instruction never loaded: its products are never computed
                st.note("error" if t.name in operands else "warning", f"op {ops[0]} (load from {t.name})",
                        f"{t.name}[0][0] is never read ({rows * cols} of {rows * cols} elements of {t.name} unread, "
                        f"within {t.name}[0:{rows}, 0:{cols}]): no load of {t.name} runs (a loop that runs no trip, "
                        "or a branch no workgroup takes?)")
            continue
        if _read_tiled(reads, t.shape):
            continue
        operands = _reduced_axes(prog) if operands is None else operands
        if rows * cols > budget:
            st.note("warning", "program", f"input coverage of {t.name} not analysed: {rows * cols} elements is over "
                    "the analysis budget")
            continue
        seen = np.zeros(rows * cols, bool)
        for r in reads:
            if r.count * r.rr.size > budget // 16:  # several int64 arrays of that size
                st.note("warning", "program", f"input coverage of {t.name} not analysed: op {r.op} reads "
                        f"{r.count * r.rr.size} elements, over the analysis budget")
                break
            r0, c0 = (x.reshape(-1, 1) for x in np.broadcast_arrays(*r.origin))
            R, C = r0 + r.rr, c0 + r.cc
            ok = (R >= 0) & (R < rows) & (C >= 0) & (C < cols)
            seen[(R * cols + C)[ok]] = True
        else:
            if not seen.all():
                _unread(st, t.name, t.shape, seen, reads, operands.get(t.name, set()), unwritten)


def _read_tiled(reads: list[Read], shape: tuple[int, int]) -> bool:
    """Whether the reads provably touch every element, decided on one lattice of tiles (each read's
    windows whole tiles of one size; tiles outside the tensor ignored). False: the per-element pass
    decides."""
    hw, hit = None, np.zeros(0, bool)
    for r in reads:
        lat = lattice(r.rr, r.cc, *r.origin, shape)  # elementwise: the factored origins broadcast
        if lat is None or hw not in (None, lat[2:]):
            return False
        ti, tj, h, w = lat
        nr, nc = shape[0] // h, shape[1] // w
        if hw is None:
            hw, hit = (h, w), np.zeros(nr * nc, bool)
        inside = (ti >= 0) & (ti < nr) & (tj >= 0) & (tj < nc)
        hit[(ti * nc + tj)[inside]] = True
    return hw is not None and bool(hit.all())


def _reduced_axes(prog: Program) -> dict[str, set[int]]:
    """For each tensor whose data reaches a multiplied operand of a matrix instruction, the axes of it
    (0 rows, 1 columns) the instruction reduces over: A's K is its fragment's columns, B's its rows,
    likewise the scales of A and of B; a transposed load or LDS read swaps them. Followed through any
    chain of ops, LDS buffers and loop-carried values (not the addend C, which a bias may feed from
    one row). Every element along such an axis is a term of a sum: a row of A read in part is a sum
    missing terms, never a choice; a row never read at all is a slice (rows of another tile)."""
    src: dict[int, frozenset[tuple[str, int]]] = {}  # value / buffer id -> (tensor, transposes mod 2)
    ops = prog.walk()

    def get(a: Any) -> frozenset[tuple[str, int]]:
        return src.get(a.id, frozenset()) if isinstance(a, Value) else frozenset()

    for _ in range(3):  # a pipelined loop stores to LDS after the load that reads it: a few passes
        before = dict(src)
        for op in ops:
            if op.kind in ("load", "lds_copy_async"):
                got = frozenset({(op.attr("tensor"), int(bool(op.attr("transpose"))))})
            elif op.kind in ("lds_load", "lds_load_tr"):
                flip = int(bool(op.attr("transpose")))
                got = frozenset((t, x ^ flip) for t, x in get(op.args[0]))
            else:
                got = frozenset().union(*(get(a) for a in op.args))
            if op.kind == "lds_store":  # the buffer holds the fragment written to it
                src[op.args[0].id] = src.get(op.args[0].id, frozenset()) | get(op.args[1])
            elif op.kind == "lds_copy_async":
                src[op.args[0].id] = src.get(op.args[0].id, frozenset()) | got
            if op.out is not None:
                src[op.out.id] = src.get(op.out.id, frozenset()) | got
            for init, nxt in op.attr("carried") or () if op.kind == "loop" else ():
                src[init.id] = src.get(init.id, frozenset()) | src.get(nxt.id, frozenset())
        if src == before:
            break
    axes: dict[str, set[int]] = {}
    for op in ops:
        if op.kind in MMA_KINDS:  # args: A, B, C, then mma_scaled's scale of A, scale of B
            k_axis = {0: 1, 1: 0} | ({3: 1, 4: 0} if op.kind == "mma_scaled" else {})
            for i, k in k_axis.items():
                if i < len(op.args):
                    for t, flip in get(op.args[i]):
                        axes.setdefault(t, set()).add(k ^ flip)
    return axes


def _unread(st: Any, name: str, shape: tuple[int, int], seen: np.ndarray, reads: list[Read],
            axes: set[int], unwritten: bool) -> None:
    """Name the unread elements: an error for those in a line along a reduced axis (``axes``) that
    some load reads in part, a warning for the rest (whole rows or columns never read: a slice)."""
    rows, cols = shape
    grid = seen.reshape(rows, cols)
    partial = np.zeros_like(grid)
    for ax in axes:  # a line along the reduced axis that is read in part: terms missing from its sum
        part = grid.any(axis=ax, keepdims=True) & ~grid.all(axis=ax, keepdims=True)
        partial |= np.broadcast_to(part, grid.shape) & ~grid
    bad = partial.reshape(-1) if partial.any() else ~seen
    missing = np.flatnonzero(bad)
    r, c = divmod(int(missing[0]), cols)
    mr, mc = missing // cols, missing % cols
    box = f"{name}[{int(mr.min())}:{int(mr.max()) + 1}, {int(mc.min())}:{int(mc.max()) + 1}]"
    head = f"{name}[{r}][{c}] is never read ({missing.size} of {seen.size} elements of {name} unread, within {box})"
    where = f"op {reads[0].op} (load from {name})"
    if partial.any() and not unwritten:
        st.note("error", where, f"{head}, along the axis a matrix instruction sums over ({name}'s "
                f"{' and '.join('rows' if a == 0 else 'columns' for a in sorted(axes))}): its sums miss these terms "
                "(a loop one step short, a loop from the wrong origin, a scale from the wrong k-block?)")
    else:
        st.note("warning", where, f"{head}: no load reads them"
                + (" (the outputs never written, above, may be why)" if unwritten else
                   " (a slice of the tensor, or a wrong origin?)"))
