"""What one access of a fragment touches, and the coverage the stores give: the records of a
fragment's layout (:func:`records`), a store's footprint (:class:`Store`), the analysis' findings
(:class:`Note`) and its budget, and the pass that every output element is written exactly once
(:func:`coverage`). The walk that produces the footprints is :mod:`tilesim.ir.accesses`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilesim.ir.core import Program, Value

__all__ = ["BUDGET", "Note", "Skip", "Store", "coverage", "lattice", "records"]

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
            _written_twice(st, t.name, cols, counts, flat, g)


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


def _written_twice(st: Any, name: str, cols: int, counts: np.ndarray, flat: np.ndarray, g: np.ndarray) -> None:
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
        return
    e = int(np.flatnonzero(counts > 1)[0])
    st.note("warning", f"store to {name}", f"{name}[{e // cols}][{e % cols}] is written {int(counts[e])} times by one "
            f"wave ({int((counts > 1).sum())} elements written more than once): the last write wins")
