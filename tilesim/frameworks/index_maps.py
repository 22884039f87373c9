"""TileLang-style index maps: a forward map ``(i, j) -> (thread, local)`` and its claimed inverse
``(thread, local) -> (i, j)``, imported as a :class:`Layout` and checked.

Frameworks often hand-write these pairs per instruction and operand, with the shape in the
function name; nothing forces the pair to be inverses, or the forward map to be the one the
instruction reads. :func:`check_index_maps` evaluates both maps over the whole finite domain and
reports, with the first counterexample:

* ``forward`` not a function into the register space (two elements in one (thread, local) slot,
  or out of range);
* ``inverse`` not the inverse of ``forward`` (``inverse(forward(i, j)) != (i, j)``, or a
  (thread, local) that ``forward`` never produces);
* the layout differs from the instruction's operand layout (lane/VGPR/bits and the pattern,
  through :func:`tilesim.layouts.compare.compare_layouts`).

``local`` is the element's slot in the thread's registers (slot ``s`` holds bits
``[s*w, (s+1)*w)``), the same convention as ``Layout.locations()``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tilesim.errors import LayoutError
from tilesim.layouts.compare import compare_layouts
from tilesim.layouts.layout import Layout

__all__ = ["from_index_maps", "check_index_maps", "IndexMapReport"]

Forward = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
Inverse = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass
class IndexMapReport:
    layout: Layout | None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        return "index maps OK" if self.ok else "index maps wrong:\n  " + "\n  ".join(self.problems)


def _call(fn: Callable, a: np.ndarray, b: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        out = fn(a, b)
        x, y = (np.broadcast_to(np.asarray(v, np.int64), a.shape) for v in out)
    except Exception as e:  # a user's function: any failure is reported, not raised raw
        raise LayoutError(f"{what} map failed on whole-domain arrays: {type(e).__name__}: {e}") from None
    return x, y


def from_index_maps(forward: Forward, shape: tuple[int, int], threads: int, locals_: int,
                    elem_bits: int) -> Layout:
    """The layout ``forward`` describes: hardware (lane, slot) -> logical (row, col); strict."""
    rows, cols = shape
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    t, s = _call(forward, i.ravel(), j.ravel(), "forward")
    bad = (t < 0) | (t >= threads) | (s < 0) | (s >= locals_)
    if bad.any():
        k = int(np.argmax(bad))
        raise LayoutError(f"forward({i.ravel()[k]}, {j.ravel()[k]}) = ({t[k]}, {s[k]}) is outside "
                          f"{threads} threads x {locals_} locals")
    return Layout.from_pairs({"lane": threads, "slot": locals_}, {"block": 1, "row": rows, "col": cols},
                             np.stack([t, s], 1), np.stack([0 * t, i.ravel(), j.ravel()], 1), elem_bits=elem_bits)


def check_index_maps(forward: Forward, inverse: Inverse | None, shape: tuple[int, int], threads: int,
                     locals_: int, elem_bits: int, *, expected: Layout | None = None,
                     operand: str = "A") -> IndexMapReport:
    """Check a forward/inverse pair over the whole domain, and against ``expected`` if given."""
    try:
        lay = from_index_maps(forward, shape, threads, locals_, elem_bits)
    except LayoutError as e:
        return IndexMapReport(None, [str(e)])
    rep = IndexMapReport(lay)
    if not lay.is_function():
        counts = np.bincount(lay._flat[0], minlength=lay.in_size)
        h = int(np.argmax(counts > 1))
        held = lay.elements_at(lane=h % threads, slot=h // threads)
        rep.problems.append(f"forward puts {len(held)} elements in thread {h % threads}, local {h // threads}: "
                            f"{[(e['row'], e['col']) for e in held[:3]]}")
    if inverse is not None:
        t, s = np.meshgrid(np.arange(threads), np.arange(locals_), indexing="ij")
        t, s = t.ravel(), s.ravel()
        i, j = _call(inverse, t, s, "inverse")
        want = lay.apply(lane=t, slot=s) if lay.is_function() else None
        if want is not None:
            held = want["row"] >= 0
            wrong = held & ((i != want["row"]) | (j != want["col"]))
            if wrong.any():
                k = int(np.argmax(wrong))
                rep.problems.append(f"inverse({t[k]}, {s[k]}) = ({i[k]}, {j[k]}) but forward maps "
                                    f"({want['row'][k]}, {want['col'][k]}) there: not a true inverse "
                                    f"({int(wrong.sum())} of {int(held.sum())} slots disagree)")
            unheld = ~held
            if unheld.any() and not lay.is_total():
                k = int(np.argmax(unheld))
                rep.problems.append(f"forward never produces thread {t[k]}, local {s[k]}; the inverse maps it to "
                                    f"({i[k]}, {j[k]})")
    if expected is not None:
        diff = compare_layouts(lay, expected, operand)
        if diff:
            rep.problems.append("differs from the instruction's layout: " + "; ".join(diff))
    return rep
