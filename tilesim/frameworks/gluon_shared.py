"""Gluon's shared-memory layouts: ``SwizzledSharedLayout``, ``NVMMASharedLayout``, ``SharedLinearLayout``
and ``PaddedSharedLayout``.

``to_layout(shape)`` maps input ``offset`` (an element's index in shared memory, padding not
counted) — and ``block`` (the CTA) when the layout spreads over several CTAs — to the logical
element ``dim0, dim1, …``; ``shared_bases(shape)`` gives the same as plain lists, in Triton's
order (``{"offset": [...], "block": [...]}``, what Triton's ``to_linear_layout`` prints).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tilesim.frameworks._gluon_common import (
    _LL,
    _cga,
    _dims,
    _fail,
    _ints,
    _is_int,
    _order,
    _shape,
    _vectors,
    _version,
)
from tilesim.layouts.layout import Layout

__all__ = ["NVMMASharedLayout", "PaddedSharedLayout", "SharedLinearLayout", "SwizzledSharedLayout"]


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


def _shared_layout(bases: Sequence[Sequence[int]], shape: tuple[int, ...],
                   block: Sequence[Sequence[int]] = ()) -> Layout:
    ind = {"offset": 1 << len(bases), **({"block": 1 << len(block)} if block else {})}
    vecs = {"offset": [tuple(v) for v in bases], **({"block": [tuple(v) for v in block]} if block else {})}
    return Layout.from_bases(ind, _dims(shape), vecs)


def _grid(cga: Sequence[Sequence[int]], shape: tuple[int, ...]) -> tuple[list[list[int]], tuple[int, ...]]:
    """Triton's split of ``shape`` between the CTA grid and one CTA (``combineCtaCgaWithShape``): the
    grid's block bases (in elements; bases beyond the tensor become zero, i.e. broadcast CTAs) and
    the shape one CTA holds."""
    if not cga:
        return [], shape
    grid = _LL({"block": [{f"dim{d}": x for d, x in enumerate(v) if x} for v in cga]},
               {f"dim{d}": 1 << max((v[d].bit_length() for v in cga), default=0) for d in range(len(shape))})
    grid = grid.not_larger(_dims(shape))
    cta = tuple(max(1, s // grid.outs[f"dim{d}"]) for d, s in enumerate(shape))
    block = [[v.get(f"dim{d}", 0) * cta[d] for d in range(len(shape))] for v in grid.bases["block"]]
    return block, cta


class _Shared:
    """Shared behaviour: ``to_layout`` and ``shared_bases`` from ``_offsets(cta_shape)`` and the CTA grid."""

    def _cga_bases(self) -> tuple[tuple[int, ...], ...]:
        return self.cga_layout  # type: ignore[attr-defined]

    def shared_bases(self, shape: Sequence[int], triton_version: str | None = None) -> dict[str, list[list[int]]]:
        _version(type(self).__name__, triton_version)  # shared layouts: one numbering (checked against 3.9)
        shp = _shape(type(self).__name__, shape, self.rank)  # type: ignore[attr-defined]
        block, cta = _grid(self._cga_bases(), shp)
        offsets = [list(v) for v in self._offsets(cta)]
        if not offsets:
            raise _fail(type(self).__name__, "tensor shape", list(shp), f"leaves each CTA one element (CTA share "
                        f"{list(cta)}): no offset bases (Triton: \"offset_bases must not be empty\")")
        return {"offset": offsets, "block": block}

    def to_layout(self, shape: Sequence[int], triton_version: str | None = None) -> Layout:
        b = self.shared_bases(shape, triton_version)
        return _shared_layout(b["offset"], tuple(shape), b["block"])

    def _offsets(self, shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:  # pragma: no cover
        raise NotImplementedError


@dataclass(frozen=True)
class SwizzledSharedLayout(_Shared):
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
    cga_layout: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        cls = "SwizzledSharedLayout"
        for what in ("vec", "per_phase", "max_phase"):
            if not _is_int(getattr(self, what)) or getattr(self, what) < 1:
                raise _fail(cls, what, getattr(self, what), "must be a positive integer")
        if isinstance(self.order, (str, bytes)) or not isinstance(self.order, Sequence) or not self.order:
            raise _fail(cls, "order", self.order, "must be a non-empty permutation of the dims")
        object.__setattr__(self, "order", _order(cls, self.order, len(self.order)))
        object.__setattr__(self, "cga_layout", _cga(cls, self.cga_layout, len(self.order)))

    @property
    def rank(self) -> int:
        return len(self.order)

    def offset_bases(self, shape: Sequence[int]) -> tuple[tuple[int, ...], ...]:
        """Image of each offset bit in one CTA's share of ``shape``: the fastest dim's columns, then
        swizzled rows, then the other dims."""
        return tuple(tuple(v) for v in self.shared_bases(shape)["offset"])

    def _offsets(self, shp: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
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

    def to_layout(self, shape: Sequence[int] | None = None, triton_version: str | None = None) -> Layout:
        _version("PaddedSharedLayout", triton_version)
        if shape is not None and tuple(shape) != self.shape:
            raise _fail("PaddedSharedLayout", "tensor shape", list(shape),
                        f"the layout is for shape {list(self.shape)}")
        return _shared_layout(self.offset_bases, self.shape)


# --------------------------------------------------------------------------- NVMMA shared
_SWIZZLES = (0, 32, 64, 128)


@dataclass(frozen=True)
class NVMMASharedLayout(_Shared):
    """Shared memory as NVIDIA's TMA and wgmma read it: rows of ``swizzle_byte_width`` bytes whose
    16-byte chunks are XOR-swizzled by the row (the 32/64/128-byte swizzle modes; 0 = none).

    A swizzle tile is 8 rows of ``8 * swizzle_byte_width / element_bitwidth`` elements along the
    contiguous dim (the last dim; with ``transposed`` the first of the two, dim0 for rank 2). In
    a tile, chunk ``c`` of row ``r`` is stored at chunk ``c ^ ((r // per_phase) % max_phase)``
    with ``per_phase = 128 / swizzle`` and ``max_phase = swizzle / 16``. Offsets walk one tile's
    columns, its 8 rows, the rest of the rows, the outer dims, then the next tile to the right.

    Not modelled (a typed refusal, never a guess): ``fp4_padded`` and ``transposed`` at rank 3 or more.
    """

    swizzle_byte_width: int
    element_bitwidth: int
    rank: int = 2
    transposed: bool = False
    fp4_padded: bool = False
    cga_layout: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        cls = "NVMMASharedLayout"
        if not _is_int(self.swizzle_byte_width) or self.swizzle_byte_width not in _SWIZZLES:
            raise _fail(cls, "swizzle_byte_width", self.swizzle_byte_width, "must be 0, 32, 64 or 128 (bytes)")
        if not _is_int(self.element_bitwidth) or self.element_bitwidth not in (8, 16, 32, 64):
            raise _fail(cls, "element_bitwidth", self.element_bitwidth, "must be 8, 16, 32 or 64")
        if not _is_int(self.rank) or self.rank < 1:
            raise _fail(cls, "rank", self.rank, "must be a positive integer (the tensor's rank)")
        for what in ("transposed", "fp4_padded"):
            if not isinstance(getattr(self, what), bool):
                raise _fail(cls, what, getattr(self, what), "must be True or False")
        if self.fp4_padded and (self.swizzle_byte_width != 128 or self.element_bitwidth != 8):
            raise _fail(cls, "fp4_padded", True, "needs swizzle_byte_width=128 and element_bitwidth=8 (as in Triton)")
        object.__setattr__(self, "cga_layout", _cga(cls, self.cga_layout, self.rank))

    def _offsets(self, shp: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
        cls = "NVMMASharedLayout"
        if self.fp4_padded:
            raise _fail(cls, "fp4_padded", True, "is not modelled by tilesim (packed fp4 with padding); "
                        "refused rather than guessed")
        rank = self.rank
        if self.transposed and rank != 2:
            raise _fail(cls, "transposed", True, f"at rank {rank} is not modelled by tilesim (only rank 2); "
                        "refused rather than guessed")
        # the contiguous dim, and the row dims fastest first (the outer dims flattened into rows)
        col = 0 if self.transposed else rank - 1
        rows = [1] if self.transposed else list(range(rank - 2, -1, -1))
        row_bits = [(d, 1 << i) for d in rows for i in range(int(shp[d]).bit_length() - 1)]
        sw = self.swizzle_byte_width
        # one TMA box: with a swizzle, one swizzle row wide, else at most 256 elements; rows along the last
        # dim (transposed) also at most 256
        tile_cols = min(shp[col], 256) if sw == 0 else 8 * sw // self.element_bitwidth
        if sw and (shp[col] < tile_cols or len(row_bits) < 3):
            raise _fail(cls, "tensor shape", list(shp), f"one CTA's share must hold a whole swizzle tile: 8 rows of "
                        f"{tile_cols} elements along dim{col} (Triton: \"Illegal shared layout\")")

        def unit(d: int, x: int, extra: int = 0) -> tuple[int, ...]:
            return tuple(x if i == d else (extra if i == col and extra else 0) for i in range(rank))

        tc = tile_cols.bit_length() - 1
        box_rows = 8 if rows == [rank - 1] else len(row_bits)  # rows along the last dim: 256 per box
        vec, per_phase, max_phase = 128 // self.element_bitwidth, 128 // max(sw, 1), sw // 16
        out = [unit(col, 1 << i) for i in range(tc)]
        for i, (d, r) in enumerate(row_bits[:box_rows]):
            swz = vec * ((1 << i) // per_phase % max_phase) if sw and i < 3 else 0
            out.append(unit(d, r, swz))
        out += [unit(col, 1 << i) for i in range(tc, int(shp[col]).bit_length() - 1)]
        out += [unit(d, r) for d, r in row_bits[box_rows:]]
        return tuple(out)


# --------------------------------------------------------------------------- shared linear
@dataclass(frozen=True)
class SharedLinearLayout(_Shared):
    """Explicit shared-memory bases: ``offset_bases[b]`` is the element that offset bit ``b`` alone
    reaches (XOR of bases for several bits); ``block_bases`` likewise for the CTA. The tensor shape
    is implied (each dim up to the next power of two above its largest basis entry), and the
    bases must reach every element of it. ``alignment`` (bytes) is carried, not used in the map."""

    offset_bases: tuple[tuple[int, ...], ...]
    block_bases: tuple[tuple[int, ...], ...] = ()
    alignment: int = 16

    def __post_init__(self) -> None:
        cls = "SharedLinearLayout"
        raw = self.offset_bases
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence) or not raw:
            raise _fail(cls, "offset_bases", raw, "must be a non-empty list of bases")
        first = raw[0]
        rank = len(first) if isinstance(first, Sequence) and not isinstance(first, (str, bytes)) else 0
        if not rank:
            raise _fail(cls, "offset_bases", raw, "each basis must list one coordinate per dim")
        big = (1 << 30,) * rank
        offs = _vectors(cls, "offset_bases", raw, big)
        block = _vectors(cls, "block_bases", self.block_bases, big)
        if not _is_int(self.alignment) or self.alignment < 1:
            raise _fail(cls, "alignment", self.alignment, "must be a positive integer (bytes)")
        object.__setattr__(self, "offset_bases", offs)
        object.__setattr__(self, "block_bases", block)
        shape = self.shape
        nonzero = [v for v in offs + block if any(v)]
        if _f2_rank(nonzero, shape) < len(nonzero):
            raise _fail(cls, "offset_bases", [list(v) for v in offs], f"with block_bases {[list(v) for v in block]}: "
                        "two offsets would share an element (Triton: \"After removing the zero bases the layout must "
                        "be bijective\")")
        if _f2_rank(offs + block, shape) < sum(s.bit_length() - 1 for s in shape):
            raise _fail(cls, "offset_bases", [list(v) for v in offs], f"with block_bases {[list(v) for v in block]} "
                        f"do not reach every element of their shape {list(shape)} (Triton: \"Layout is expected to "
                        "be surjective\")")

    @property
    def rank(self) -> int:
        return len(self.offset_bases[0])

    @property
    def shape(self) -> tuple[int, ...]:
        """Each dim up to the next power of two above its largest basis entry (Triton's inferred size)."""
        vecs = self.offset_bases + self.block_bases
        return tuple(1 << max((v[d].bit_length() for v in vecs), default=0) for d in range(self.rank))

    def shared_bases(self, shape: Sequence[int] | None = None,
                     triton_version: str | None = None) -> dict[str, list[list[int]]]:
        _version("SharedLinearLayout", triton_version)
        if shape is not None and tuple(shape) != self.shape:
            raise _fail("SharedLinearLayout", "tensor shape", list(shape),
                        f"the bases describe shape {list(self.shape)}")
        return {"offset": [list(v) for v in self.offset_bases], "block": [list(v) for v in self.block_bases]}

    def to_layout(self, shape: Sequence[int] | None = None, triton_version: str | None = None) -> Layout:
        b = self.shared_bases(shape, triton_version)
        return _shared_layout(b["offset"], self.shape, b["block"])
