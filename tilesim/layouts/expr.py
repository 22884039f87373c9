"""Symbolic index expressions for a layout, in the form a code generator emits.

For an F2-linear layout each logical coordinate is an XOR of shifted bit-fields of the
hardware indices. Runs of consecutive bits become ``(x / 2^a % 2^n) * 2^b`` terms; terms that
touch disjoint output bits are joined with ``+`` (equal to XOR there), overlapping ones with
``^`` (swizzles). A layout that is not linear gets a lookup table. Every expression evaluates
(in Python and in C, on non-negative integers) to exactly the layout's table — a law the test
suite and ``proofs/`` check over the whole domain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.errors import LayoutError
from tilesim.layouts.layout import Layout

__all__ = ["IndexExpr", "Term", "expressions"]


@dataclass(frozen=True)
class Term:
    """``((dim >> shift) & (2**width - 1)) << out_shift``."""

    dim: str
    shift: int
    width: int
    out_shift: int

    def text(self, dim_size: int) -> str:
        x = self.dim
        if self.shift:
            x = f"{x} / {1 << self.shift}"
        if self.shift + self.width < (dim_size.bit_length() - 1):
            x = f"{x} % {1 << self.width}" if self.shift == 0 else f"({x}) % {1 << self.width}"
        if self.out_shift:
            x = f"({x}) * {1 << self.out_shift}" if ("/" in x or "%" in x) else f"{x} * {1 << self.out_shift}"
        return x


@dataclass(frozen=True)
class IndexExpr:
    """One logical coordinate as an expression over hardware dims.

    ``terms`` (linear layouts) or ``table`` (others, indexed by the flat hardware index;
    ``-1`` where nothing is held). ``text`` is valid C and Python-with-``//`` both, given
    non-negative operands: ``/`` is written for C; :meth:`py` gives Python text.
    """

    dim: str
    terms: tuple[Term, ...]
    xor: bool
    table: tuple[int, ...] | None
    in_dims: tuple[tuple[str, int], ...]

    @property
    def text(self) -> str:
        if self.table is not None:
            return f"{self.dim.upper()}_TABLE[{_flat_text(self.in_dims)}]"
        if not self.terms:
            return "0"
        sizes = dict(self.in_dims)
        parts = [t.text(sizes[t.dim]) for t in self.terms]
        if len(parts) == 1:
            return parts[0]
        sep = " ^ " if self.xor else " + "
        return sep.join(f"({p})" if ("+" in p or "^" in p) else p for p in parts)

    def py(self) -> str:
        return self.text.replace(" / ", " // ")

    def evaluate(self, **hw: np.ndarray | int) -> np.ndarray:
        """Evaluate over hardware index arrays (vectorised)."""
        if self.table is not None:
            flat = np.zeros(np.broadcast(*hw.values()).shape, np.int64)
            stride = 1
            for name, size in self.in_dims:
                flat = flat + np.asarray(hw[name], np.int64) * stride
                stride *= size
            return np.asarray(self.table, np.int64)[flat]
        acc = np.zeros(np.broadcast(*hw.values()).shape, np.int64)
        for t in self.terms:
            v = ((np.asarray(hw[t.dim], np.int64) >> t.shift) & ((1 << t.width) - 1)) << t.out_shift
            acc = acc ^ v if self.xor else acc + v
        return acc


def _flat_text(in_dims: tuple[tuple[str, int], ...]) -> str:
    parts, stride = [], 1
    for name, size in in_dims:
        parts.append(name if stride == 1 else f"{name} * {stride}")
        stride *= size
    return " + ".join(parts)


def expressions(layout: Layout) -> dict[str, IndexExpr]:
    """One :class:`IndexExpr` per logical dim of a function layout."""
    if not layout.is_function():
        raise LayoutError("index expressions need each hardware position to hold at most one element")
    if not layout.is_linear():
        table = layout.apply(**_full_grid(layout))
        return {
            name: IndexExpr(name, (), False, tuple(int(v) for v in table[name].reshape(-1)), layout.in_dims)
            for name in layout.out_names
        }
    bases = layout.bases
    out: dict[str, IndexExpr] = {}
    for d, name in enumerate(layout.out_names):
        # (in_dim, in_bit) -> the set of output bits of this coordinate it flips
        bits = [
            (dim, b, ob)
            for dim, vecs in bases.items()
            for b, vec in enumerate(vecs)
            for ob in range(int(vec[d]).bit_length())
            if (vec[d] >> ob) & 1
        ]
        terms = _runs(bits)
        covered = [t.out_shift + i for t in terms for i in range(t.width)]
        out[name] = IndexExpr(name, tuple(terms), len(covered) != len(set(covered)), None, layout.in_dims)
    return out


def _runs(bits: list[tuple[str, int, int]]) -> list[Term]:
    """Merge single-bit contributions into runs of consecutive in-bits -> consecutive out-bits."""
    bits = sorted(bits)
    terms: list[Term] = []
    for dim, b, ob in bits:
        if terms:
            t = terms[-1]
            if t.dim == dim and t.shift + t.width == b and t.out_shift + t.width == ob:
                terms[-1] = Term(dim, t.shift, t.width + 1, t.out_shift)
                continue
        terms.append(Term(dim, b, 1, ob))
    return sorted(terms, key=lambda t: (t.out_shift, t.dim))


def _full_grid(layout: Layout) -> dict[str, np.ndarray]:
    idx = np.arange(layout.in_size, dtype=np.int64)
    grid, stride = {}, 1
    for name, size in layout.in_dims:
        grid[name] = (idx // stride) % size
        stride *= size
    return grid
