"""Shared machinery of the Gluon specs: a small F2 layout builder, parameter checks and the
explicit-bases :class:`DistributedLinearLayout`.

``_LL`` builds a linear layout from identity / zero 1-D pieces and products, then applies the two
shape adjustments Triton applies to a CTA tile: repeat in registers while the tile is smaller than
the tensor, and zero the largest bases while it is larger. Output dims keep the order they were
introduced in, which decides where repeated registers go.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tilesim.errors import LayoutError, choices
from tilesim.layouts.layout import Layout

HW_DIMS = ("register", "lane", "warp", "block")


# --------------------------------------------------------------------------- small F2 layouts
class _LL:
    """A linear layout under construction: ``bases[in_dim]`` lists images as {out_dim: value}.

    Output dims keep the order they were introduced in (this order decides where repeated
    registers go, exactly as in Triton), with their sizes in ``outs``.
    """

    def __init__(self, bases: dict[str, list[dict[str, int]]] | None = None,
                 outs: dict[str, int] | None = None) -> None:
        self.bases = bases or {}
        self.outs = outs or {}

    @staticmethod
    def strided(size: int, stride: int, ind: str, outd: str) -> _LL:
        n = max(size, 1).bit_length() - 1
        return _LL({ind: [{outd: stride << i} for i in range(n)]}, {outd: stride * (1 << n)})

    @staticmethod
    def identity(size: int, ind: str, outd: str) -> _LL:
        return _LL.strided(size, 1, ind, outd)

    @staticmethod
    def zeros(size: int, ind: str, outd: str) -> _LL:
        n = max(size, 1).bit_length() - 1
        return _LL({ind: [{} for _ in range(n)]}, {outd: 1})

    def __mul__(self, other: _LL) -> _LL:
        bases = {k: [dict(v) for v in vs] for k, vs in self.bases.items()}
        for ind, vecs in other.bases.items():
            dst = bases.setdefault(ind, [])
            for v in vecs:
                dst.append({o: x * self.outs.get(o, 1) for o, x in v.items()})
        outs = dict(self.outs)
        for o, s in other.outs.items():
            outs[o] = outs.get(o, 1) * s
        return _LL(bases, outs)

    def not_smaller(self, shape: Mapping[str, int]) -> _LL:
        ret = self
        for o in list(self.outs):
            want, have = shape[o], self.outs[o]
            if want > have:
                ret = ret * _LL.identity(want // have, "register", o)
        return ret

    def not_larger(self, shape: Mapping[str, int]) -> _LL:
        """Every basis that reaches past ``shape`` in a dim loses that component (those hardware bits then
        hold copies), as Triton cuts a layout down to a smaller tensor; with distinct powers of two that
        is the largest bases, and a repeated basis is cut with its twin."""
        bases = {k: [{o: x for o, x in v.items() if x < shape.get(o, x + 1)} for v in vs]
                 for k, vs in self.bases.items()}
        outs = {o: min(s, shape[o]) if o in shape else s for o, s in self.outs.items()}
        return _LL(bases, outs)

    def fit(self, shape: Mapping[str, int], cga: Sequence[Sequence[int]] = ()) -> _LL:
        """Triton's combination of a CTA tile with the CTA grid: the grid (``cga``: block bases in CTA
        units) takes its share of ``shape``; the tile repeats up to the rest, then is cut down to it."""
        grid = _LL({"block": [{f"dim{d}": x for d, x in enumerate(v) if x} for v in cga]},
                   {o: 1 << max((x.bit_length() for v in cga for d, x in enumerate(v) if f"dim{d}" == o), default=0)
                    for o in shape})
        grid = grid.not_larger(shape)
        cta = {o: max(1, s // grid.outs[o]) for o, s in shape.items()}
        tile = self.not_smaller(cta).not_larger(cta)
        return tile * grid if cga else tile

    def without_zero_registers(self) -> _LL:
        """Registers that hold copies (all-zero bases) removed, as Triton does for blocked and sliced layouts."""
        bases = dict(self.bases)
        bases["register"] = [v for v in bases.get("register", []) if any(v.values())]
        return _LL(bases, self.outs)

    def drop_out(self, outd: str) -> _LL:
        bases = {k: [{o: x for o, x in v.items() if o != outd} for v in vs] for k, vs in self.bases.items()}
        return _LL(bases, {o: s for o, s in self.outs.items() if o != outd})

    def linear(self, shape: Sequence[int]) -> DistributedLinearLayout:
        names = [f"dim{i}" for i in range(len(shape))]

        def vecs(ind: str) -> tuple[tuple[int, ...], ...]:
            return tuple(tuple(v.get(n, 0) for n in names) for v in self.bases.get(ind, []))

        return DistributedLinearLayout(vecs("register"), vecs("lane"), vecs("warp"), vecs("block"), tuple(shape))


# --------------------------------------------------------------------------- checking helpers
def _fail(cls: str, what: str, value: Any, why: str) -> LayoutError:
    return LayoutError(f"{cls} {what} {value!r}: {why}"[:400])


def _is_int(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _is_pow2(x: Any) -> bool:
    return _is_int(x) and x >= 1 and x & (x - 1) == 0


def _ints(cls: str, what: str, value: Any, *, rank: int | None = None, pow2: bool = True,
          allow_zero: bool = False) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise _fail(cls, what, value, "must be a list of integers")
    out = tuple(int(x) if _is_int(x) else x for x in value)
    if rank is not None and len(out) != rank:
        raise _fail(cls, what, value, f"must have {rank} entries (the layout's rank)")
    for x in out:
        if not _is_int(x) or x < (0 if allow_zero else 1):
            raise _fail(cls, what, value, "entries must be positive integers")
        if pow2 and not _is_pow2(x):
            raise _fail(cls, what, value, "entries must be powers of two")
    return out


def _shape(cls: str, shape: Any, rank: int) -> tuple[int, ...]:
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence) or len(shape) != rank:
        raise _fail(cls, "tensor shape", shape, f"must be a list of {rank} power-of-two sizes (the layout's rank)")
    for s in shape:
        if not _is_pow2(s):
            raise _fail(cls, "tensor shape", list(shape), "sizes must be powers of two")
    return tuple(int(s) for s in shape)


def _order(cls: str, order: Any, rank: int) -> tuple[int, ...]:
    if (isinstance(order, (str, bytes)) or not isinstance(order, Sequence) or not all(_is_int(x) for x in order)
            or sorted(order) != list(range(rank))):
        raise _fail(cls, "order", order, f"must be a permutation of 0..{rank - 1}")
    return tuple(order)


def _bool(cls: str, what: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _fail(cls, what, value, "must be True or False")
    return value


def _vectors(cls: str, what: str, raw: Any, shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Basis vectors: one coordinate per dim of ``shape``, each inside it."""
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        raise _fail(cls, what, raw, "must be a list of basis vectors")
    vecs = []
    for v in raw:
        vec = _ints(cls, what, v, rank=len(shape), pow2=False, allow_zero=True)
        if any(x >= s for x, s in zip(vec, shape)):
            raise _fail(cls, what, list(v), f"basis lies outside shape {list(shape)}")
        vecs.append(vec)
    return tuple(vecs)


def _cga(cls: str, value: Any, rank: int) -> tuple[tuple[int, ...], ...]:
    """CTA-grid (``cga_layout``) bases: one vector per block bit, entries 0 or powers of two (CTA units)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise _fail(cls, "cga_layout", value, f"must be a list of block bases with {rank} entries each")
    out = []
    for v in value:
        vec = _ints(cls, "cga_layout", v, rank=rank, pow2=False, allow_zero=True)
        if any(x and x & (x - 1) for x in vec):
            raise _fail(cls, "cga_layout", [list(x) for x in value], "entries must be 0 or powers of two")
        out.append(vec)
    return tuple(out)


_EXPLICIT = (" (tilesim requires explicit bases to be a permutation at their own shape; a slice of them that "
             "Triton would accept is not modelled by tilesim)")


def _permutation(cls: str, bases: Mapping[str, Sequence[Sequence[int]]], shape: Sequence[int]) -> None:
    """Triton's rule for a distributed layout (``LinearEncodingAttr::verify``, ``isPermutationMatrixLayout``
    and the surjectivity check of ``LinearLayout``): every basis is all zero (a broadcast copy) or one
    power of two in one dim, and the non-zero bases, one per (dim, bit), hold every bit of ``shape`` —
    a permutation after removing the broadcast bases. Raises a ``LayoutError`` naming ``cls`` otherwise."""
    seen: dict[tuple[int, int], str] = {}
    for ind, vecs in bases.items():
        for i, v in enumerate(vecs):
            nz = [(d, x) for d, x in enumerate(v) if x]
            if not nz:
                continue
            where = f"{ind} basis {i} {list(v)}"
            if len(nz) > 1 or not _is_pow2(nz[0][1]):
                raise LayoutError(f"{cls}: {where} must be all zero (a broadcast) or one power of two in one dim, "
                                  "as Triton requires of a distributed layout"[:400])
            key = (nz[0][0], nz[0][1].bit_length() - 1)
            if key in seen:
                raise LayoutError((f"{cls}: {where} repeats {seen[key]}: two hardware bits reach the same element, so "
                                   f"the layout is not injective (Triton: \"requires a permutation matrix layout after "
                                   f"removing broadcast bases\")")[:330]
                                  + (_EXPLICIT if cls == "DistributedLinearLayout" else ""))
            seen[key] = where
    missing = [(d, b) for d, s in enumerate(shape) for b in range(int(s).bit_length() - 1) if (d, b) not in seen]
    if missing:
        d, b = missing[0]
        unheld = [0] * len(shape)
        unheld[d] = 1 << b
        raise LayoutError(f"{cls}: for shape {list(shape)} no register, lane, warp or block basis reaches dim{d} "
                          f"offset {1 << b}, so elements such as {unheld} are held by nobody (Triton: \"Layout is "
                          f"expected to be surjective\"); {len(missing)} of {sum(int(s).bit_length() - 1 for s in shape)} "
                          "bits are missing"[:400])


def _tile_bases(cls: str, what: str, value: Any, rank: int) -> tuple[tuple[int, ...], ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise _fail(cls, what, value, f"must be a list of bases with {rank} entries, in instruction tiles")
    out = []
    for v in value:
        vec = _ints(cls, what, v, rank=rank, pow2=False, allow_zero=True)
        if sum(x != 0 for x in vec) > 1 or any(x and not _is_pow2(x) for x in vec):
            raise _fail(cls, what, list(v), "each basis must be zero or a power of two in one dim")
        out.append(vec)
    return tuple(out)


def _tile_grid(cls: str, reg: Sequence[Sequence[int]], warp: Sequence[Sequence[int]]) -> None:
    """Triton builds ``LinearLayout({register: reg_bases, warp: warp_bases})`` and requires it surjective
    onto its inferred size (each dim up to the next power of two above its largest basis): the non-zero
    bases of a dim must reach 1, 2, 4, … with none missing. A repeated basis is accepted here, as Triton
    accepts it; if it survives the fit to a tensor shape, ``to_linear`` refuses the non-injective result."""
    for d in range(len(next(iter(reg or warp), ()))):
        got = {v[d] for v in [*reg, *warp] if v[d]}
        gap = next((1 << b for b in range(max(got, default=0).bit_length()) if (1 << b) not in got), None)
        if gap is not None:
            raise _fail(cls, "reg_bases/warp_bases", {"reg_bases": [list(x) for x in reg],
                                                      "warp_bases": [list(x) for x in warp]},
                        f"no basis steps {gap} tile(s) along dim {d}, so tiles there are held by nobody (Triton: "
                        "\"Layout is expected to be surjective\"); use 1, 2, 4, … tiles per dim")


TRITON_VERSIONS = ("3.6", "3.9")


def _raw(ll: _LL, shape: Sequence[int]) -> dict[str, list[tuple[int, ...]]]:
    return {k: [tuple(v.get(f"dim{i}", 0) for i in range(len(shape))) for v in ll.bases.get(k, [])] for k in HW_DIMS}


def _version(cls: str, value: Any) -> str | None:
    """None or a Triton version whose numbering tilesim reproduces."""
    if value is None or (isinstance(value, str) and value in TRITON_VERSIONS):
        return value
    raise _fail(cls, "triton_version", value, f"tilesim reproduces Triton {choices(list(TRITON_VERSIONS))}")


def _dims(shape: Sequence[int]) -> dict[str, int]:
    return {f"dim{i}": s for i, s in enumerate(shape)}


# --------------------------------------------------------------------------- linear layouts
@dataclass(frozen=True)
class DistributedLinearLayout:
    """Explicit F2 bases: ``reg_bases[b]`` is the logical coordinate of register bit ``b`` alone, etc.

    Coordinates are ``(dim0, dim1, …)`` and must lie inside ``shape``; all-zero bases mean
    broadcast (the hardware bit selects a copy of the same element).
    """

    reg_bases: tuple[tuple[int, ...], ...]
    lane_bases: tuple[tuple[int, ...], ...]
    warp_bases: tuple[tuple[int, ...], ...]
    block_bases: tuple[tuple[int, ...], ...] = ()
    shape: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        cls = "DistributedLinearLayout"
        shape = _ints(cls, "shape", self.shape)
        if not shape:
            raise _fail(cls, "shape", self.shape, "must name at least one dim")
        object.__setattr__(self, "shape", shape)
        for what in ("reg_bases", "lane_bases", "warp_bases", "block_bases"):
            object.__setattr__(self, what, _vectors(cls, what, getattr(self, what), shape))
        _permutation(cls, {w: getattr(self, w) for w in ("reg_bases", "lane_bases", "warp_bases", "block_bases")}, shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    follows = None  # explicit bases: Triton 3.6 and 3.9 read them alike

    def _ll(self, shape: tuple[int, ...], ver: str = "3.9") -> _LL:
        """As Triton fits a linear layout to another tensor shape: registers repeat it while the tensor is
        larger, and its largest bases become zero (copies) while the tensor is smaller."""
        bases = {k: [{f"dim{d}": x for d, x in enumerate(v) if x} for v in vs]
                 for k, vs in zip(HW_DIMS, (self.reg_bases, self.lane_bases, self.warp_bases, self.block_bases))}
        # repeats go along the register order: dims in the order the register bases first reach them,
        # then the others from the last dim down (Triton's order for a linear layout)
        order = list(dict.fromkeys(d for v in self.reg_bases for d, x in enumerate(v) if x))
        order += [d for d in reversed(range(self.rank)) if d not in order]
        ll = _LL(bases, {f"dim{d}": self.shape[d] for d in order})
        return ll.not_smaller(_dims(shape)).not_larger(_dims(shape))

    def to_linear(self, shape: Sequence[int] | None = None,
                  triton_version: str | None = None) -> DistributedLinearLayout:
        _version("DistributedLinearLayout", triton_version)  # explicit bases: every version reads them alike
        if shape is None or tuple(shape) == self.shape:
            return self
        shp = _shape("DistributedLinearLayout", shape, self.rank)
        return self._ll(shp).linear(shp)

    def to_layout(self, shape: Sequence[int] | None = None, triton_version: str | None = None) -> Layout:
        """The :class:`Layout` these bases describe (``block`` included only when it has bases)."""
        lin = self.to_linear(shape, triton_version)
        bases = {"register": lin.reg_bases, "lane": lin.lane_bases, "warp": lin.warp_bases}
        if lin.block_bases:
            bases["block"] = lin.block_bases
        ind = {k: 1 << len(v) for k, v in bases.items()}
        return Layout.from_bases(ind, _dims(lin.shape), bases)

    def __str__(self) -> str:
        def lists(vs: tuple[tuple[int, ...], ...]) -> list[list[int]]:
            return [list(v) for v in vs]

        return (f"DistributedLinearLayout(reg_bases={lists(self.reg_bases)}, lane_bases={lists(self.lane_bases)}, "
                f"warp_bases={lists(self.warp_bases)}, block_bases={lists(self.block_bases)}, shape={list(self.shape)})")

    def bases_dict(self) -> dict[str, list[list[int]]]:
        """``{"register": [...], "lane": [...], "warp": [...], "block": [...]}`` as plain lists."""
        return {k: [list(v) for v in vs] for k, vs in zip(HW_DIMS, (self.reg_bases, self.lane_bases,
                                                                  self.warp_bases, self.block_bases))}


class _Distributed:
    """Shared behaviour: ``to_layout`` goes through ``to_linear``; the rank is that of
    ``warps_per_cta`` unless a subclass (slice, dot operand) derives it from its parent."""

    @property
    def rank(self) -> int:
        return len(self.warps_per_cta)  # type: ignore[attr-defined]

    @property
    def follows(self) -> str | None:
        """The Triton version whose numbering this spec asks for (``AMDWMMALayout.triton_version``,
        inherited by slices and dot operands of it); None: whichever ``to_linear`` is told."""
        parent = getattr(self, "parent", None)
        return getattr(self, "triton_version", None) or (parent.follows if parent is not None else None)

    def to_linear(self, shape: Sequence[int], triton_version: str | None = None) -> DistributedLinearLayout:
        """Triton's linear layout for a tensor of ``shape``, basis for basis, as ``triton_version`` ("3.6" or
        "3.9") numbers it. Without a version (here or on the spec), a layout that the two versions number
        differently is refused rather than given one version's numbering silently."""
        cls = type(self).__name__
        shp = _shape(cls, shape, self.rank)
        asked, pinned = _version(cls, triton_version), self.follows
        if asked and pinned and asked != pinned:
            raise LayoutError(f"{cls}: the spec follows Triton {pinned} (triton_version={pinned!r}) but "
                              f"to_linear was asked for Triton {asked}")
        ver = asked or pinned
        ll = self._ll(shp, ver or "3.9")
        if ver is None:
            try:
                same = _raw(self._ll(shp, "3.6"), shp) == _raw(ll, shp)
                why = "order this layout's registers differently"
            except LayoutError as e:
                same, why = False, f"disagree (3.6 refuses it: {e})"
            if not same:
                raise LayoutError(f"{cls}: Triton 3.6 and 3.9 {why} for shape {list(shp)}; say which with "
                                  "to_linear(shape, triton_version='3.6' or '3.9'), the spec's triton_version or, "
                                  "on the command line, --triton-version"[:400])
        # checked here too, so the error names the class the user wrote, not DistributedLinearLayout
        names = [f"dim{i}" for i in range(len(shp))]
        _permutation(type(self).__name__, {k: [[v.get(n, 0) for n in names] for v in vs] for k, vs in ll.bases.items()},
                     shp)
        return ll.linear(shp)

    def to_layout(self, shape: Sequence[int], triton_version: str | None = None) -> Layout:
        return self.to_linear(shape, triton_version).to_layout()

    def _ll(self, shape: tuple[int, ...], ver: str = "3.9") -> _LL:  # pragma: no cover - every subclass defines it
        raise NotImplementedError
