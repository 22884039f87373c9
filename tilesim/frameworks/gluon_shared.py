"""Gluon's shared-memory layouts: ``SwizzledSharedLayout`` and ``PaddedSharedLayout``.

``to_layout(shape)`` maps input ``offset`` (an element's index in shared memory, padding not
counted) to the logical element ``dim0, dim1, …``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tilesim.frameworks._gluon_common import _dims, _fail, _ints, _is_int, _order, _shape, _vectors
from tilesim.layouts.layout import Layout

__all__ = ["PaddedSharedLayout", "SwizzledSharedLayout"]


def _f2_rank(bases: Sequence[Sequence[int]], shape: Sequence[int]) -> int:
    """Rank over F2 of the bases, each flattened into one bit string (dim after dim)."""
    widths = [int(s).bit_length() - 1 for s in shape]
    rows = []
    for v in bases:
        x, at = 0, 0
        for c, w in zip(v, widths):
            x |= int(c) << at
            at += w
        rows.append(x)
    rank = 0
    while rows:
        pivot = max(rows)
        rows.remove(pivot)
        if not pivot:
            break
        rank += 1
        top = 1 << (pivot.bit_length() - 1)
        rows = [r ^ pivot if r & top else r for r in rows]
    return rank


def _shared_layout(bases: Sequence[Sequence[int]], shape: tuple[int, ...]) -> Layout:
    return Layout.from_bases({"offset": 1 << len(bases)}, _dims(shape), {"offset": [tuple(v) for v in bases]})


@dataclass(frozen=True)
class SwizzledSharedLayout:
    """Shared memory with XOR swizzling: row ``r`` (along ``order[1]``) of the fastest dim ``order[0]``
    is stored with its columns XORed by ``((r // per_phase) % max_phase) * vec``.

    ``to_layout(shape)`` maps ``offset`` (element index in shared memory) to the logical element.
    The layout is F2-linear: offset bit ``b`` of the rows maps to row ``2**b`` with that row's XOR;
    for power-of-two ``vec`` / ``per_phase`` / ``max_phase`` this is exactly the swizzle above, and
    for other values it is, as in Triton, the linear map through those power-of-two rows.
    """

    vec: int
    per_phase: int
    max_phase: int
    order: tuple[int, ...]

    def __post_init__(self) -> None:
        cls = "SwizzledSharedLayout"
        for what in ("vec", "per_phase", "max_phase"):
            if not _is_int(getattr(self, what)) or getattr(self, what) < 1:
                raise _fail(cls, what, getattr(self, what), "must be a positive integer")
        if isinstance(self.order, (str, bytes)) or not isinstance(self.order, Sequence) or not self.order:
            raise _fail(cls, "order", self.order, "must be a non-empty permutation of the dims")
        object.__setattr__(self, "order", _order(cls, self.order, len(self.order)))

    @property
    def rank(self) -> int:
        return len(self.order)

    def offset_bases(self, shape: Sequence[int]) -> tuple[tuple[int, ...], ...]:
        """Image of each offset bit: the fastest dim's columns, then swizzled rows, then the other dims."""
        shp = _shape("SwizzledSharedLayout", shape, self.rank)
        rank = self.rank
        out: list[tuple[int, ...]] = []

        def unit(d: int, x: int, extra: tuple[int, int] | None = None) -> tuple[int, ...]:
            v = [0] * rank
            v[d] = x
            if extra:
                v[extra[0]] = extra[1]
            return tuple(v)

        inner = self.order[0]
        for i in range(shp[inner].bit_length() - 1):
            out.append(unit(inner, 1 << i))
        if rank >= 2:
            outer = self.order[1]
            cols = shp[inner]
            for i in range(shp[outer].bit_length() - 1):
                row = 1 << i
                out.append(unit(outer, row, (inner, (self.vec * ((row // self.per_phase) % self.max_phase)) % cols)))
            for d in self.order[2:]:
                out.extend(unit(d, 1 << i) for i in range(shp[d].bit_length() - 1))
        return tuple(out)

    def to_layout(self, shape: Sequence[int]) -> Layout:
        return _shared_layout(self.offset_bases(shape), tuple(shape))


@dataclass(frozen=True)
class PaddedSharedLayout:
    """Shared memory with padding (Triton 3.9): after every ``interval`` elements, ``padding`` unused
    elements are inserted (summed when several intervals divide a position); ``offset_bases`` map
    the unpadded offset to logical ``[dim0, …]``; ``shape`` is the logical shape.

    ``to_layout()`` maps the unpadded ``offset`` to the element; :meth:`padded_offset` gives
    the position in memory including the padding.
    """

    interval_padding_pairs: tuple[tuple[int, int], ...]
    offset_bases: tuple[tuple[int, ...], ...]
    cga_layout: tuple[tuple[int, ...], ...]
    shape: tuple[int, ...]

    def __post_init__(self) -> None:
        cls = "PaddedSharedLayout"
        shape = _ints(cls, "shape", self.shape)
        if not shape:
            raise _fail(cls, "shape", self.shape, "must name at least one dim")
        object.__setattr__(self, "shape", shape)
        pairs = self.interval_padding_pairs
        if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence) or not pairs:
            raise _fail(cls, "interval_padding_pairs", pairs, "must be a non-empty list of [interval, padding]")
        norm = tuple(_ints(cls, "interval_padding_pairs", p, rank=2) for p in pairs)
        if len({p[0] for p in norm}) != len(norm):
            raise _fail(cls, "interval_padding_pairs", pairs, "intervals must be distinct")
        object.__setattr__(self, "interval_padding_pairs", norm)
        if self.cga_layout:
            raise _fail(cls, "cga_layout", self.cga_layout, "multi-CTA (cluster) layouts are not supported; pass []")
        object.__setattr__(self, "cga_layout", ())
        bases = _vectors(cls, "offset_bases", self.offset_bases, shape)
        if 1 << len(bases) != math.prod(shape):
            raise _fail(cls, "offset_bases", self.offset_bases, f"needs {math.prod(shape).bit_length() - 1} bases "
                        f"for shape {list(shape)}")
        # Every element must have a place: the offsets reach all of the shape (Triton: "Layout is expected
        # to be surjective"); with exactly log2(size) bases, that is a bijection.
        if _f2_rank(bases, shape) < len(bases):
            raise _fail(cls, "offset_bases", [list(v) for v in bases], f"do not reach every element of shape "
                        f"{list(shape)} (two offsets would share an element, others hold none)")
        object.__setattr__(self, "offset_bases", bases)

    @classmethod
    def with_identity_for(cls, interval_padding_pairs: Sequence[Sequence[int]], shape: Sequence[int],
                          order: Sequence[int]) -> PaddedSharedLayout:
        """Padding over a plain row-major-by-``order`` placement (``order[0]`` fastest)."""
        shp = _ints("PaddedSharedLayout", "shape", shape)
        bases = [tuple((1 << b) if i == d else 0 for i in range(len(shp)))
                 for d in _order("PaddedSharedLayout", order, len(shp)) for b in range(shp[d].bit_length() - 1)]
        return cls(interval_padding_pairs, bases, (), shp)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def padded_offset(self, offset: int) -> int:
        """Where unpadded element ``offset`` sits in memory, counting the inserted padding."""
        return offset + sum((offset // iv) * pad for iv, pad in self.interval_padding_pairs)

    def to_layout(self, shape: Sequence[int] | None = None) -> Layout:
        if shape is not None and tuple(shape) != self.shape:
            raise _fail("PaddedSharedLayout", "tensor shape", list(shape),
                        f"the layout is for shape {list(self.shape)}")
        return _shared_layout(self.offset_bases, self.shape)
