"""TileLang-style index maps: a forward map ``(i, j) -> (thread, local)`` and its claimed inverse
``(thread, local) -> (i, j)``, imported as a :class:`Layout` and checked.

Frameworks often hand-write these pairs per instruction and operand, with the shape in the
function name; nothing forces the pair to be inverses, or the forward map to be the one the
instruction reads. :func:`check_index_maps` evaluates both maps over the whole finite domain and
answers in the vocabulary of :func:`tilesim.frameworks.check_layout` (:mod:`tilesim.frameworks.verdict`):

* ``rejected`` — ``forward`` leaves the register space (with the wave-size note when the map is
  written for another wave: "this map is for 64 lanes; gfx1201 is wave32"), or the instruction
  does not run with this many threads;
* ``mismatch`` — two elements in one (thread, local) slot, ``inverse`` not the inverse of
  ``forward``, or a forward layout that is not the instruction's (first lane/VGPR, pattern);
* ``match_k_permuted`` — the instruction's A/B layout up to a permutation of k (right as long as
  the other operand uses the same k order), exactly as ``check_layout`` says of the same layout;
* ``match`` — the instruction's layout; or, with no instruction given, a consistent pair.

``local`` is the element's slot in the thread's registers (slot ``s`` holds bits
``[s*w, (s+1)*w)``), the same convention as ``Layout.locations()``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilesim.errors import LayoutError, choices
from tilesim.frameworks.verdict import LayoutCheck, _Status, verdict
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import lookup
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.targets import get_target

__all__ = ["from_index_maps", "check_index_maps", "IndexMapReport"]

Forward = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
Inverse = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]

# Whole-domain evaluation allocates a few arrays of this many entries; past it, refuse up front.
MAX_DOMAIN = 1 << 22
_OPERANDS = ("A", "B", "C", "D")


@dataclass(frozen=True)
class IndexMapReport(_Status):
    """The answer of :func:`check_index_maps`: a ``status`` from the same vocabulary as
    :class:`~tilesim.frameworks.verdict.LayoutCheck`, the problems found (first counterexample
    first) and, when an instruction was given, ``check_layout``'s own verdict for the forward layout."""

    status: str
    layout: Layout | None
    problems: tuple[str, ...] = ()
    verdict: LayoutCheck | None = None
    notes: tuple[str, ...] = ()

    @property
    def k_permutation(self) -> tuple[int, ...] | None:
        return None if self.verdict is None else self.verdict.k_permutation

    def __str__(self) -> str:
        head = {"match": "index maps OK", "match_k_permuted": "index maps OK (k permuted)",
                "mismatch": "index maps wrong", "rejected": "index maps rejected"}[self.status]
        lines = [head + (":" if self.problems or self.notes else "")]
        lines += [f"  {p}" for p in self.problems]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


# --------------------------------------------------------------------------- arguments
def _count(what: str, value: Any, *, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < low:
        raise LayoutError(f"{what} must be an integer >= {low}, got {value!r}")
    return int(value)


def _shape(shape: Any) -> tuple[int, int]:
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (tuple, list)) or len(shape) != 2:
        raise LayoutError(f"shape must be (rows, cols): two positive integers, got {shape!r}")
    return _count("shape rows", shape[0]), _count("shape cols", shape[1])


def _sizes(shape: Any, threads: Any, locals_: Any, elem_bits: Any) -> tuple[tuple[int, int], int, int, int]:
    rows, cols = _shape(shape)
    threads, locals_ = _count("threads", threads), _count("locals", locals_)
    bits = _count("elem_bits", elem_bits)
    if bits not in (4, 6, 8, 16, 32, 64):
        raise LayoutError(f"elem_bits {bits}; valid: {choices((4, 6, 8, 16, 32, 64))}")
    for what, n in (("shape", rows * cols), ("threads x locals", threads * locals_)):
        if n > MAX_DOMAIN:
            raise LayoutError(f"{what} has {n} positions; index maps are checked over the whole domain, at most "
                              f"{MAX_DOMAIN} (one instruction tile is a few thousand)")
    return (rows, cols), threads, locals_, bits


def _operand(operand: Any) -> str:
    op = operand.upper() if isinstance(operand, str) else operand
    if op not in _OPERANDS:
        raise LayoutError(f"operand {operand!r}; valid: {choices(_OPERANDS)}")
    return op


def _call(fn: Callable, a: np.ndarray, b: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    if not callable(fn):
        raise LayoutError(f"{what} map must be a function (i, j) -> (thread, local), got {type(fn).__name__}")
    try:
        out = fn(a, b)
        x, y = (np.asarray(v) for v in out)
        if x.dtype.kind not in "iub" or y.dtype.kind not in "iub":
            bad = x if x.dtype.kind not in "iub" else y
            raise TypeError(f"returned {bad.dtype} values; index maps return integers (use //, not /)")
        x, y = (np.broadcast_to(v.astype(np.int64), a.shape) for v in (x, y))
    except Exception as e:  # a user's function: any failure is reported, not raised raw
        raise LayoutError(f"{what} map failed on whole-domain arrays: {type(e).__name__}: {e}"[:400]) from None
    return x, y


# --------------------------------------------------------------------------- the forward layout
def _forward(forward: Forward, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    i, j = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    i, j = i.ravel(), j.ravel()
    t, s = _call(forward, i, j, "forward")
    return i, j, t, s


def _outside(i: np.ndarray, j: np.ndarray, t: np.ndarray, s: np.ndarray, threads: int, locals_: int,
             wave: str | None) -> str | None:
    """Why ``forward`` leaves the register space, or None. ``wave`` says what the target runs, if known."""
    bad = (t < 0) | (t >= threads) | (s < 0) | (s >= locals_)
    if not bad.any():
        return None
    k = int(np.argmax(bad))
    msg = f"forward({i[k]}, {j[k]}) = ({t[k]}, {s[k]}) is outside {threads} threads x {locals_} locals"
    top = int(t.max())
    if t.min() >= 0 and top >= threads:
        lanes = 1 << top.bit_length()  # the power-of-two wave the map's threads fill
        msg = f"this map is for {lanes} lanes (forward reaches thread {top}); " + \
              (wave or f"it was given {threads} threads") + "; " + msg
    return msg


def from_index_maps(forward: Forward, shape: tuple[int, int], threads: int, locals_: int,
                    elem_bits: int) -> Layout:
    """The layout ``forward`` describes: hardware (lane, slot) -> logical (row, col); strict."""
    shape, threads, locals_, elem_bits = _sizes(shape, threads, locals_, elem_bits)
    i, j, t, s = _forward(forward, shape)
    why = _outside(i, j, t, s, threads, locals_, None)
    if why:
        raise LayoutError(why)
    return _layout(i, j, t, s, shape, threads, locals_, elem_bits)


def _layout(i: np.ndarray, j: np.ndarray, t: np.ndarray, s: np.ndarray, shape: tuple[int, int], threads: int,
            locals_: int, elem_bits: int) -> Layout:
    return Layout.from_pairs({"lane": threads, "slot": locals_}, {"block": 1, "row": shape[0], "col": shape[1]},
                             np.stack([t, s], 1), np.stack([0 * t, i, j], 1), elem_bits=elem_bits)


def _pair_problems(lay: Layout, inverse: Inverse | None, threads: int, locals_: int) -> list[str]:
    """The pair's own faults: a slot holding several elements, an inverse that is not one."""
    out = []
    if not lay.is_function():
        counts = np.bincount(lay._flat[0], minlength=lay.in_size)
        h = int(np.argmax(counts > 1))
        held = lay.elements_at(lane=h % threads, slot=h // threads)
        out.append(f"forward puts {len(held)} elements in thread {h % threads}, local {h // threads}: "
                   f"{[(e['row'], e['col']) for e in held[:3]]}")
    if inverse is None:
        return out
    t, s = np.meshgrid(np.arange(threads), np.arange(locals_), indexing="ij")
    t, s = t.ravel(), s.ravel()
    try:
        i, j = _call(inverse, t, s, "inverse")
    except LayoutError as e:
        return out + [str(e)]
    if not lay.is_function():
        return out
    want = lay.apply(lane=t, slot=s)
    held = want["row"] >= 0
    wrong = held & ((i != want["row"]) | (j != want["col"]))
    if wrong.any():
        k = int(np.argmax(wrong))
        out.append(f"inverse({t[k]}, {s[k]}) = ({i[k]}, {j[k]}) but forward maps ({want['row'][k]}, "
                   f"{want['col'][k]}) there: not a true inverse ({int(wrong.sum())} of {int(held.sum())} slots "
                   "disagree)")
    unheld = ~held
    if unheld.any() and not lay.is_total():
        k = int(np.argmax(unheld))
        out.append(f"forward never produces thread {t[k]}, local {s[k]}; the inverse maps it to ({i[k]}, {j[k]})")
    return out


def _instruction(instr: Any, arch: Any) -> tuple[MatrixInstruction, str]:
    """The catalog row and the words for its target's wave ("gfx1201 is wave32")."""
    if isinstance(instr, MatrixInstruction):
        if arch is None:
            fam = "/".join(instr.targets)
            return instr, f"{instr.mnemonic} ({fam}) runs in wave{'/'.join(map(str, instr.wave_sizes))}"
        instr = instr.mnemonic
    if not isinstance(instr, str):
        raise LayoutError(f"instr must be an instruction mnemonic or a MatrixInstruction, got {instr!r}")
    if arch is None:
        raise LayoutError(f"instr {instr!r} needs arch= (the target, e.g. 'gfx1201')")
    target = get_target(arch)
    row = lookup(instr, target.name)
    return row, f"{target.name} is wave{target.default_wave}"


def check_index_maps(forward: Forward, inverse: Inverse | None, shape: tuple[int, int], threads: int,
                     locals_: int, elem_bits: int, *, expected: Layout | None = None, operand: str = "A",
                     instr: str | MatrixInstruction | None = None, arch: str | None = None) -> IndexMapReport:
    """Check a forward/inverse pair over the whole domain, and against the instruction if given.

    The instruction is ``instr`` (a mnemonic with ``arch``, or a catalog row) read as ``operand``
    (A, B, C or D; the result layout is compared as C), or ``expected``, an operand layout
    ``(lane, slot) -> (block, row, col)``. Raises ``LayoutError`` for malformed arguments.
    """
    shape, threads, locals_, elem_bits = _sizes(shape, threads, locals_, elem_bits)
    op = _operand(operand)
    if not callable(forward):
        raise LayoutError(f"forward map must be a function (i, j) -> (thread, local), got {type(forward).__name__}")
    if inverse is not None and not callable(inverse):
        raise LayoutError(f"inverse map must be a function (thread, local) -> (i, j) or None, got "
                          f"{type(inverse).__name__}")
    if expected is not None and instr is not None:
        raise LayoutError("give expected= (a Layout) or instr= (an instruction), not both")
    if expected is not None and not isinstance(expected, Layout):
        if isinstance(expected, MatrixInstruction):
            instr, expected = expected, None
        else:
            raise LayoutError(f"expected must be a Layout (e.g. row.layout({op!r})) or a MatrixInstruction, got "
                              f"{expected!r}"[:300])
    if expected is not None and (set(expected.in_names) != {"lane", "slot"}
                                 or set(expected.out_names) != {"block", "row", "col"}):
        raise LayoutError(f"expected must be an operand layout (lane, slot) -> (block, row, col), got "
                          f"{list(expected.in_names)} -> {list(expected.out_names)}")
    if arch is not None and instr is None:
        raise LayoutError(f"arch={arch!r} needs instr= (the instruction on that target)")
    row, wave = _instruction(instr, arch) if instr is not None else (None, None)
    if wave is None and expected is not None:
        wave = f"the instruction's layout has {dict(expected.in_dims).get('lane', '?')} lanes"
    try:
        i, j, t, s = _forward(forward, shape)
    except LayoutError as e:  # the user's map raised or returned non-integers: an answer, not a crash
        return IndexMapReport("rejected", None, (str(e),))
    why = _outside(i, j, t, s, threads, locals_, wave)
    if why:
        lanes = 1 << int(t.max()).bit_length()
        hint = ()
        if row is not None and lanes != threads and lanes in row.wave_sizes:
            hint = (f"{row.mnemonic} also runs in wave{lanes} here: pass threads={lanes} (and its locals) to check "
                    f"the map as wave{lanes}",)
        return IndexMapReport("rejected", None, (why,), notes=hint)
    lay = _layout(i, j, t, s, shape, threads, locals_, elem_bits)
    problems = _pair_problems(lay, inverse, threads, locals_)
    op_key = "C" if op == "D" else op
    if row is not None:
        if threads not in row.wave_sizes:
            return IndexMapReport("rejected", lay, tuple(problems) + (
                f"this map is for {threads} lanes; {row.mnemonic} runs in wave{'/'.join(map(str, row.wave_sizes))}",))
        expected = row.layout(op_key, wave_size=threads)
        want = {"A": (row.m, row.k), "B": (row.k, row.n), "C": (row.m, row.n)}[op_key]
        if shape != want:
            return IndexMapReport("mismatch", lay, tuple(problems) + (
                f"the maps cover {shape[0]}x{shape[1]} but {row.mnemonic}'s {op} is {want[0]}x{want[1]}",))
    if expected is not None and dict(expected.in_dims).get("lane") != threads:
        return IndexMapReport("rejected", lay, tuple(problems) + (
            f"this map is for {threads} lanes; {wave}",))
    if expected is None:
        notes = () if problems else ("forward and inverse agree over the whole domain; not compared with an "
                                     "instruction (pass instr= and arch=, or expected=)",)
        return IndexMapReport("mismatch" if problems else "match", lay, tuple(problems), notes=notes)
    v = verdict(lay, expected, op_key, mnemonic=row.mnemonic if row else "the instruction",
                kind=row.kind if row else "", spec="index maps", arch=arch or (row and "/".join(row.targets)) or "?",
                operand=op)
    who = f"{row.mnemonic}'s {op}" if row else "the instruction's"
    detail = [] if v.ok else [f"differs from {who} layout: {v.reason}", *v.pattern]
    notes = tuple(v.notes) + ((v.reason,) if v.status == "match_k_permuted" else ())
    return IndexMapReport("mismatch" if problems else v.status, lay, tuple(problems + detail), v, notes)
