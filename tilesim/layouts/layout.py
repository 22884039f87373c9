"""``Layout``: an exact, immutable map between a hardware index space and logical coordinates.

A layout relates hardware positions — named input dims such as ``lane`` and ``slot`` (the
element slot in a lane's register tuple), optionally ``wave`` or ``tile`` — to logical
coordinates — named output dims such as ``block``, ``row``, ``col``. It is stored as the
canonical set of (hardware, logical) pairs, so every case is exact:

* an ordinary layout is a function from hardware to logical;
* replication (RDNA3 WMMA keeps A in lanes i and i+16) is one logical element with two
  hardware owners — :meth:`Layout.inverse` lists every owner;
* broadcast on read (CDNA ``CBSZ``/``ABID``: one block's A feeds several blocks) is one
  hardware position with several logical elements;
* positions that hold nothing (``OPSEL`` picks one half of each register) are simply absent.

When the layout is a total function over power-of-two dims and is linear over F2, it also has
``bases`` (one basis vector per input bit, as in Triton's LinearLayout): ``apply(x)`` is the XOR
of the bases of the set bits of ``x``. Both forms are one value; equality and hashing use the
pair set, so a layout built from bases equals the same map built from a table.

Flat indices put the first dim lowest (little-endian mixed radix): for dims
``(("lane", 64), ("slot", 4))`` the flat index is ``lane + 64 * slot``.

Worked example (RDNA3 wave32 accumulator rows interleave: row = 2*v + lane/16)::

    >>> c = Layout.from_function({"lane": 32, "slot": 8}, {"row": 16, "col": 16},
    ...     lambda lane, slot: {"row": 2 * slot + lane // 16, "col": lane % 16})
    >>> c.apply(lane=17, slot=3)
    {'row': 7, 'col': 1}
    >>> c.is_injective(), c.covers(), c.is_linear()
    (True, True, True)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from tilesim.budget import check_positions
from tilesim.errors import LayoutError
from tilesim.layouts.algebra import compose_keys, product_pairs

__all__ = ["Layout", "Location", "Dims", "compose", "product"]

Dims = tuple[tuple[str, int], ...]


class Location(NamedTuple):
    """Where one copy of one logical element lives (the public record of ``locations()``)."""

    block: int
    row: int
    col: int
    vgpr: int
    lane: int
    bit_lo: int
    bit_hi: int


def _norm_dims(dims: Mapping[str, int] | Iterable[tuple[str, int]], what: str) -> Dims:
    try:
        items = tuple(dims.items()) if isinstance(dims, Mapping) else tuple(tuple(d) for d in dims)
    except TypeError:
        raise LayoutError(f"{what} dims must be a mapping or (name, size) pairs, got {dims!r}"[:300]) from None
    if not items:
        raise LayoutError(f"{what} dims are empty; a layout needs at least one named dim")
    for item in items:
        if len(item) != 2:
            raise LayoutError(f"{what} dims must be (name, size) pairs, got {item!r}"[:300])
    for name, size in items:
        if not isinstance(name, str) or not name.isidentifier():
            raise LayoutError(f"{what} dim name must be an identifier, got {name!r}"[:300])
        if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 1:
            raise LayoutError(f"{what} dim {name!r} must have a positive integer size, got {size!r}"[:300])
    names = [n for n, _ in items]
    if len(set(names)) != len(names):
        raise LayoutError(f"{what} dims repeat a name: {names}")
    out = tuple((str(n), int(s)) for n, s in items)
    if math.prod(s for _, s in out) >= 2**31:
        raise LayoutError(f"{what} dims {out} span 2**31 or more positions; too large for an exact table")
    check_positions(math.prod(s for _, s in out), f"a layout with {what} dims {dict(out)}")
    return out


def _int_array(x: Any, what: str) -> np.ndarray:
    """``x`` as an int64 array, or ``LayoutError`` (non-integers, ragged lists, values beyond int64)."""
    try:
        a = np.asarray(x)
        if a.dtype == object or not (a.size == 0 or np.issubdtype(a.dtype, np.integer) or a.dtype == bool):
            raise TypeError(f"dtype {a.dtype}")
        return a.astype(np.int64)
    except (TypeError, ValueError, OverflowError) as e:
        raise LayoutError(f"{what} must be integers: {e}"[:300]) from None


def _flatten(coords: np.ndarray, dims: Dims) -> np.ndarray:
    flat = np.zeros(coords.shape[0], dtype=np.int64)
    stride = 1
    for d, (_, size) in enumerate(dims):
        flat += coords[:, d].astype(np.int64) * stride
        stride *= size
    return flat


def _unflatten(flat: np.ndarray, dims: Dims) -> np.ndarray:
    out = np.empty((flat.shape[0], len(dims)), dtype=np.int64)
    rest = flat.astype(np.int64)
    for d, (_, size) in enumerate(dims):
        out[:, d] = rest % size
        rest = rest // size
    return out


def _column(x: Any, n: int, what: str, kind: type = np.int64) -> np.ndarray:
    """A layout function's value for one dim, broadcast to the ``n`` grid points."""
    try:
        a = np.asarray(x)
        if kind is bool:
            return np.broadcast_to(a.astype(bool), (n,))
        return np.broadcast_to(_int_array(a, f"values of {what!r}"), (n,))
    except ValueError as e:
        raise LayoutError(f"layout function value for {what!r} does not fit the {n}-point grid: {e}"[:300]) from None


def _grid(dims: Dims) -> dict[str, np.ndarray]:
    """Every index of ``dims`` as flat arrays, in flat-index order."""
    total = math.prod(s for _, s in dims)
    coords = _unflatten(np.arange(total, dtype=np.int64), dims)
    return {name: coords[:, d] for d, (name, _) in enumerate(dims)}


def _check_range(coords: np.ndarray, dims: Dims, what: str) -> None:
    for d, (name, size) in enumerate(dims):
        col = coords[:, d]
        bad = (col < 0) | (col >= size)
        if bad.any():
            v = int(col[bad][0])
            raise LayoutError(f"{what} coordinate {name}={v} is outside 0..{size - 1}")


@dataclass(frozen=True)
class Layout:
    """An immutable relation between hardware positions and logical coordinates.

    Build one with :meth:`from_function`, :meth:`from_logical`, :meth:`from_pairs` or
    :meth:`from_bases`; never construct the pair bytes yourself.
    """

    in_dims: Dims
    out_dims: Dims
    keys_bytes: bytes  # sorted unique int64 keys: hw_flat * out_size + logical_flat
    elem_bits: int | None = None  # width of one slot, for locations() and rendering

    def __post_init__(self) -> None:
        object.__setattr__(self, "in_dims", _norm_dims(self.in_dims, "hardware"))
        object.__setattr__(self, "out_dims", _norm_dims(self.out_dims, "logical"))
        if self.elem_bits is not None:
            if (not isinstance(self.elem_bits, (int, np.integer)) or isinstance(self.elem_bits, bool)
                    or not 1 <= self.elem_bits <= 1024):
                raise LayoutError(f"elem_bits must be an integer in 1..1024, got {self.elem_bits!r}"[:300])
            object.__setattr__(self, "elem_bits", int(self.elem_bits))
        keys = np.frombuffer(self.keys_bytes, dtype=np.int64)
        if keys.size and (np.any(np.diff(keys) <= 0) or keys[0] < 0 or keys[-1] >= self.in_size * self.out_size):
            raise LayoutError("layout keys are not canonical (sorted, unique, in range)")

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_pairs(
        cls,
        in_dims: Mapping[str, int] | Dims,
        out_dims: Mapping[str, int] | Dims,
        hw: np.ndarray | Sequence[Sequence[int]],
        logical: np.ndarray | Sequence[Sequence[int]],
        *,
        elem_bits: int | None = None,
    ) -> Layout:
        """A layout holding exactly the given (hardware, logical) coordinate pairs."""
        ind, outd = _norm_dims(in_dims, "hardware"), _norm_dims(out_dims, "logical")
        try:
            hw_a = _int_array(hw, "hardware coordinates").reshape(-1, len(ind))
            lg_a = _int_array(logical, "logical coordinates").reshape(-1, len(outd))
        except ValueError as e:  # LayoutError is a ValueError too
            if isinstance(e, LayoutError):
                raise
            raise LayoutError(f"coordinates must be rows of {len(ind)} hardware / {len(outd)} logical values: {e}") from None
        if hw_a.shape[0] != lg_a.shape[0]:
            raise LayoutError(f"{hw_a.shape[0]} hardware positions but {lg_a.shape[0]} logical coordinates")
        _check_range(hw_a, ind, "hardware")
        _check_range(lg_a, outd, "logical")
        out_size = math.prod(s for _, s in outd)
        keys = np.sort(_flatten(hw_a, ind) * out_size + _flatten(lg_a, outd))
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if keys.size else keys  # np.unique, 3x faster
        return cls(ind, outd, keys.astype(np.int64).tobytes(), elem_bits)

    @classmethod
    def from_function(
        cls,
        in_dims: Mapping[str, int] | Dims,
        out_dims: Mapping[str, int] | Dims,
        fn: Callable[..., Mapping[str, Any]],
        *,
        elem_bits: int | None = None,
    ) -> Layout:
        """Evaluate ``fn(**hardware_index_arrays) -> {out_dim: array}`` over the whole domain.

        ``fn`` is called once with numpy arrays. It may return a ``"valid"`` boolean array to
        mark hardware positions that hold nothing.
        """
        ind, outd = _norm_dims(in_dims, "hardware"), _norm_dims(out_dims, "logical")
        grid = _grid(ind)
        res = fn(**grid)
        n = next(iter(grid.values())).shape[0]
        if not isinstance(res, Mapping):
            raise LayoutError(f"layout function must return {{logical dim: array}}, got {type(res).__name__}")
        missing = [name for name, _ in outd if name not in res]
        if missing:
            raise LayoutError(f"layout function returned no value for logical dims {missing}")
        valid = _column(res.get("valid", True), n, "valid", bool)
        lg = np.stack([_column(res[name], n, name) for name, _ in outd], 1)
        hw = np.stack([grid[name] for name, _ in ind], 1)
        return cls.from_pairs(ind, outd, hw[valid], lg[valid], elem_bits=elem_bits)

    @classmethod
    def from_logical(
        cls,
        in_dims: Mapping[str, int] | Dims,
        out_dims: Mapping[str, int] | Dims,
        fn: Callable[..., Mapping[str, Any] | Sequence[Mapping[str, Any]]],
        *,
        elem_bits: int | None = None,
    ) -> Layout:
        """Build from the logical side: ``fn(**logical_index_arrays)`` gives where each element lives.

        ``fn`` returns ``{hw_dim: array}`` or a list of them, one per copy (replication). This
        is the form ISA documents use ("A[i][k] is in lane i + 32*(k/4)").
        """
        ind, outd = _norm_dims(in_dims, "hardware"), _norm_dims(out_dims, "logical")
        grid = _grid(outd)
        res = fn(**grid)
        try:
            copies = [res] if isinstance(res, Mapping) else list(res)
        except TypeError:
            raise LayoutError(f"layout function must return a mapping or a list of them, got {res!r}"[:300]) from None
        if not copies:
            raise LayoutError("layout function returned no copies")
        n = next(iter(grid.values())).shape[0]
        lg = np.stack([grid[name] for name, _ in outd], 1)
        hw_parts, lg_parts = [], []
        for copy in copies:
            if not isinstance(copy, Mapping) or any(name not in copy for name, _ in ind):
                raise LayoutError(f"layout function must return {{hardware dim: array}} per copy for dims "
                                  f"{[name for name, _ in ind]}, got {copy!r}"[:300])
            valid = _column(copy.get("valid", True), n, "valid", bool)
            hw = np.stack([_column(copy[name], n, name) for name, _ in ind], 1)
            hw_parts.append(hw[valid])
            lg_parts.append(lg[valid])
        return cls.from_pairs(ind, outd, np.concatenate(hw_parts), np.concatenate(lg_parts), elem_bits=elem_bits)

    @classmethod
    def from_bases(
        cls,
        in_dims: Mapping[str, int] | Dims,
        out_dims: Mapping[str, int] | Dims,
        bases: Mapping[str, Sequence[Sequence[int]]],
        *,
        elem_bits: int | None = None,
    ) -> Layout:
        """An F2-linear layout: ``bases[in_dim][b]`` is the logical coordinate of bit ``b`` alone."""
        ind, outd = _norm_dims(in_dims, "hardware"), _norm_dims(out_dims, "logical")
        for name, size in (*ind, *outd):
            if size & (size - 1):
                raise LayoutError(f"linear layouts need power-of-two dims; {name!r} has size {size}")
        if not isinstance(bases, Mapping) or set(bases) != {n for n, _ in ind}:
            given = list(bases) if isinstance(bases, Mapping) else bases
            raise LayoutError(f"bases given for {given!r}, hardware dims are {[n for n, _ in ind]}"[:300])
        grid = _grid(ind)
        n = next(iter(grid.values())).shape[0]
        lg = np.zeros((n, len(outd)), dtype=np.int64)
        for name, size in ind:
            vecs = bases[name]
            if not isinstance(vecs, Sequence) or isinstance(vecs, str) or len(vecs) != size.bit_length() - 1:
                raise LayoutError(f"dim {name!r} of size {size} needs {size.bit_length() - 1} bases, got {len(vecs)}")
            for b, vec in enumerate(vecs):
                v = _int_array(vec, f"basis {name}[{b}]").reshape(-1)
                if v.size != len(outd):
                    raise LayoutError(f"basis {name}[{b}]={vec!r} must have {len(outd)} entries"[:300])
                on = ((grid[name] >> b) & 1).astype(bool)
                lg[on] ^= v
        hw = np.stack([grid[name] for name, _ in ind], 1)
        return cls.from_pairs(ind, outd, hw, lg, elem_bits=elem_bits)

    @classmethod
    def identity(cls, dims: Mapping[str, int] | Dims, *, out_names: Sequence[str] | None = None) -> Layout:
        d = _norm_dims(dims, "hardware")
        names = list(out_names) if out_names is not None else [n for n, _ in d]
        od = tuple(zip(names, (s for _, s in d)))
        return cls.from_function(d, od, lambda **g: {o: g[i] for (i, _), o in zip(d, names)})

    # ----------------------------------------------------------------- raw views
    @property
    def in_size(self) -> int:
        return math.prod(s for _, s in self.in_dims)

    @property
    def out_size(self) -> int:
        return math.prod(s for _, s in self.out_dims)

    @property
    def in_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.in_dims)

    @property
    def out_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.out_dims)

    @functools.cached_property
    def _keys(self) -> np.ndarray:
        keys = np.frombuffer(self.keys_bytes, dtype=np.int64)
        keys.flags.writeable = False
        return keys

    @functools.cached_property
    def _flat(self) -> tuple[np.ndarray, np.ndarray]:
        return self._keys // self.out_size, self._keys % self.out_size

    def __len__(self) -> int:
        return int(self._keys.size)

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """``(hw, logical)`` coordinate arrays, shapes ``(N, len(in_dims))`` and ``(N, len(out_dims))``."""
        h, g = self._flat
        return _unflatten(h, self.in_dims), _unflatten(g, self.out_dims)

    def __repr__(self) -> str:
        kind = "linear" if self.is_linear() else ("function" if self.is_function() else "relation")
        bits = f", elem_bits={self.elem_bits}" if self.elem_bits else ""
        return f"Layout({dict(self.in_dims)} -> {dict(self.out_dims)}, {len(self)} pairs, {kind}{bits})"

    # ----------------------------------------------------------------- queries
    def _hw_flat(self, hw: Mapping[str, Any]) -> np.ndarray:
        unknown = set(hw) - set(self.in_names)
        if unknown or len(hw) != len(self.in_dims):
            raise LayoutError(
                f"give every hardware dim exactly once; got {sorted(hw)}, dims are {list(self.in_names)}"
            )
        try:
            arrs = np.broadcast_arrays(*(_int_array(hw[n], f"hardware index {n}") for n in self.in_names))
        except ValueError as e:
            raise LayoutError(f"hardware indices do not broadcast together: {e}"[:300]) from None
        coords = np.stack([a.reshape(-1) for a in arrs], 1)
        _check_range(coords, self.in_dims, "hardware")
        return _flatten(coords, self.in_dims)

    def apply(self, **hw: Any) -> dict[str, Any]:
        """Logical coordinates held at hardware position(s) ``hw`` (a function layout only).

        Scalars in give ints out; arrays give arrays (``-1`` where nothing is held).
        """
        if not self.is_function():
            raise LayoutError("apply() needs a layout where each hardware position holds at most one element; "
                              "use owners_of()/elements_at() for a relation")
        flat = self._hw_flat(hw)  # validates first: np.ndim of a ragged list raises
        scalar = all(np.ndim(v) == 0 for v in hw.values())
        h, g = self._flat
        idx = np.searchsorted(h, flat)
        idx_c = np.minimum(idx, max(h.size - 1, 0))
        found = (h.size > 0) & (h[idx_c] == flat) if h.size else np.zeros(flat.shape, bool)
        lg = _unflatten(np.where(found, g[idx_c] if h.size else 0, 0), self.out_dims)
        lg[~found] = -1
        if scalar:
            return {n: int(lg[0, d]) for d, n in enumerate(self.out_names)}
        shape = np.broadcast(*(np.asarray(v) for v in hw.values())).shape
        return {n: lg[:, d].reshape(shape) for d, n in enumerate(self.out_names)}

    def elements_at(self, **hw: int) -> list[dict[str, int]]:
        """Every logical element at one hardware position (several under broadcast)."""
        flat = int(self._hw_flat(hw)[0])
        h, g = self._flat
        lo, hi = np.searchsorted(h, flat), np.searchsorted(h, flat, side="right")
        lg = _unflatten(g[lo:hi], self.out_dims)
        return [dict(zip(self.out_names, map(int, row))) for row in lg]

    def owners_of(self, **logical: int) -> list[dict[str, int]]:
        """Every hardware position holding one logical element (several under replication)."""
        return self.inverse().elements_at(**logical)

    # ----------------------------------------------------------------- properties
    def _counts(self) -> tuple[np.ndarray, np.ndarray]:
        h, g = self._flat
        return np.bincount(h, minlength=self.in_size), np.bincount(g, minlength=self.out_size)

    def is_function(self) -> bool:
        """Each hardware position holds at most one logical element."""
        return bool(self._counts()[0].max(initial=0) <= 1)

    def is_total(self) -> bool:
        """Every hardware position holds something."""
        return bool(self._counts()[0].min(initial=1) >= 1)

    def is_injective(self) -> bool:
        """No logical element has two owners (no replication)."""
        return bool(self._counts()[1].max(initial=0) <= 1)

    def covers(self, shape: Mapping[str, int] | None = None) -> bool:
        """Every logical coordinate (within ``shape`` if given, else all of ``out_dims``) has an owner."""
        counts = self._counts()[1]
        if shape is None:
            return bool(counts.min(initial=1) >= 1)
        unknown = set(shape) - set(self.out_names)
        if unknown:
            raise LayoutError(f"covers(): unknown dims {sorted(map(str, unknown))}; logical dims are "
                              f"{list(self.out_names)}")
        bad = {n: v for n, v in shape.items() if not isinstance(v, (int, np.integer)) or isinstance(v, bool)}
        if bad:
            raise LayoutError(f"covers(): sizes must be integers, got {bad!r}"[:300])
        lg = _unflatten(np.arange(self.out_size), self.out_dims)
        inside = np.ones(self.out_size, bool)
        for d, n in enumerate(self.out_names):
            if n in shape:
                inside &= lg[:, d] < shape[n]
        return bool((counts[inside] >= 1).all())

    def replication(self) -> dict[str, Any]:
        """How many copies each logical element has, and which hardware bits only replicate.

        ``copies`` maps a copy count to how many logical elements have it (0 = uncovered).
        ``broadcast_bits`` lists ``(dim, bit)`` whose flip never changes the element held
        (linear layouts only); ``broadcast_reads`` counts hardware positions read as several
        elements.
        """
        hc, lc = self._counts()
        copies = {int(c): int(n) for c, n in zip(*np.unique(lc, return_counts=True))}
        out: dict[str, Any] = {"copies": copies, "broadcast_reads": int((hc > 1).sum())}
        if self.is_linear():
            out["broadcast_bits"] = [
                (name, b) for name, vecs in self.bases.items() for b, v in enumerate(vecs) if not any(v)
            ]
        return out

    # ----------------------------------------------------------------- linear form
    @functools.cached_property
    def _linear_bases(self) -> dict[str, tuple[tuple[int, ...], ...]] | None:
        if any(s & (s - 1) for _, s in (*self.in_dims, *self.out_dims)):
            return None
        hc, _ = self._counts()
        if not (hc == 1).all():
            return None
        _, g = self._flat  # total function: g[x] is the image of flat hardware index x
        lg = _unflatten(g, self.out_dims)
        bases: dict[str, tuple[tuple[int, ...], ...]] = {}
        stride = 1
        for name, size in self.in_dims:
            bases[name] = tuple(tuple(int(v) for v in lg[stride << b]) for b in range(size.bit_length() - 1))
            stride *= size
        # Linear iff the image of every index is the XOR of its bit images.
        flat_bases = np.array([v for vecs in bases.values() for v in vecs] or [[0] * len(self.out_dims)])
        nbits = sum(s.bit_length() - 1 for _, s in self.in_dims)
        idx = np.arange(self.in_size, dtype=np.int64)
        acc = np.zeros_like(lg)
        for b in range(nbits):
            on = ((idx >> b) & 1).astype(bool)
            acc[on] ^= flat_bases[b]
        return bases if np.array_equal(acc, lg) else None

    def is_linear(self) -> bool:
        """A total function over power-of-two dims that is linear over F2."""
        return self._linear_bases is not None

    @property
    def bases(self) -> dict[str, tuple[tuple[int, ...], ...]]:
        """F2 bases per hardware dim (raises ``LayoutError`` when the layout is not linear)."""
        b = self._linear_bases
        if b is None:
            raise LayoutError("layout is not F2-linear (needs a total function over power-of-two dims)")
        return b

    # ----------------------------------------------------------------- algebra
    def inverse(self) -> Layout:
        """Swap sides: logical -> every hardware owner. ``inverse().inverse() == self``."""
        h, g = self._flat
        keys = np.sort(g * self.in_size + h)
        return Layout(self.out_dims, self.in_dims, keys.astype(np.int64).tobytes(), self.elem_bits)

    def then(self, other: Layout) -> Layout:
        """Relational composition ``x -> other(self(x))``; ``self.out_dims`` must be ``other.in_dims``."""
        return compose(other, self)

    def __mul__(self, other: Layout) -> Layout:
        """``a * b``: :func:`product`."""
        return product(self, other)

    def rename(self, **names: str) -> Layout:
        """Rename dims (hardware or logical) without changing the map."""
        def ren(dims: Dims) -> Dims:
            return tuple((names.get(n, n), s) for n, s in dims)

        unknown = set(names) - set(self.in_names) - set(self.out_names)
        if unknown:
            raise LayoutError(f"rename(): unknown dims {sorted(unknown)}")
        return Layout(ren(self.in_dims), ren(self.out_dims), self.keys_bytes, self.elem_bits)

    def with_elem_bits(self, bits: int | None) -> Layout:
        return Layout(self.in_dims, self.out_dims, self.keys_bytes, bits)

    def restrict(self, **fixed: int) -> Layout:
        """Keep the pairs whose hardware dims equal ``fixed`` and drop those dims."""
        hw, lg = self.pairs()
        keep = np.ones(hw.shape[0], bool)
        for n, v in fixed.items():
            if n not in self.in_names:
                raise LayoutError(f"restrict(): unknown hardware dim {n!r}; dims are {list(self.in_names)}")
            size = dict(self.in_dims)[n]
            # one index of the dim: a list, a float, -1 or a huge value used to broadcast or select nothing
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < size:
                raise LayoutError(f"restrict(): {n}={v!r:.60} is not an index of {n}; valid: an integer 0..{size - 1}")
            keep &= hw[:, self.in_names.index(n)] == int(v)
        rest = [d for d, (n, _) in enumerate(self.in_dims) if n not in fixed]
        dims = tuple(self.in_dims[d] for d in rest) or (("one", 1),)
        hw2 = hw[keep][:, rest] if rest else np.zeros((int(keep.sum()), 1), np.int64)
        return Layout.from_pairs(dims, self.out_dims, hw2, lg[keep], elem_bits=self.elem_bits)

    # ----------------------------------------------------------------- records
    def locations(self) -> list[Location]:
        """One :class:`Location` per copy of each logical element, sorted.

        Needs hardware dims ``lane`` and ``slot`` (slot ``s`` occupies bits
        ``[s*w, (s+1)*w)`` of the lane's register tuple, ``w = elem_bits``) and logical dims
        ``row``, ``col`` and optionally ``block``. ``vgpr`` is the element's first register;
        bits count from that register, across the tuple (an f64 in v[3:2] is vgpr 2, bits 0–63).
        """
        return [Location(*map(int, r)) for r in self.location_array()]

    def location_array(self) -> np.ndarray:
        """:meth:`locations` as an ``(N, 7)`` int64 array, rows sorted lexicographically."""
        if self.elem_bits is None:
            raise LayoutError("locations() needs elem_bits (the width of one slot)")
        need_in, need_out = {"lane", "slot"}, {"row", "col"}
        if set(self.in_names) != need_in or not need_out <= set(self.out_names) <= need_out | {"block"}:
            raise LayoutError(
                f"locations() needs hardware dims (lane, slot) and logical dims (block, row, col); "
                f"this layout has {list(self.in_names)} -> {list(self.out_names)}"
            )
        hw, lg = self.pairs()
        col = {n: lg[:, d] for d, n in enumerate(self.out_names)}
        block = col.get("block", np.zeros(hw.shape[0], np.int64))
        lane, slot = hw[:, self.in_names.index("lane")], hw[:, self.in_names.index("slot")]
        bit0 = slot * self.elem_bits
        vgpr = bit0 // 32
        lo = bit0 - 32 * vgpr
        rec = np.stack([block, col["row"], col["col"], vgpr, lane, lo, lo + self.elem_bits - 1], 1)
        return rec[np.lexsort(rec.T[::-1])]

    def registers_per_lane(self) -> int:
        """32-bit registers the slots span (the operand's VGPR count per lane)."""
        if self.elem_bits is None or "slot" not in self.in_names:
            raise LayoutError("registers_per_lane() needs a slot dim and elem_bits")
        return -(-dict(self.in_dims)["slot"] * self.elem_bits // 32)


def compose(outer: Layout, inner: Layout) -> Layout:
    """``outer ∘ inner``: apply ``inner`` first. Relational, so replication and broadcast compose too."""
    if inner.out_dims != outer.in_dims:
        raise LayoutError(f"cannot compose: inner gives {dict(inner.out_dims)}, outer takes {dict(outer.in_dims)}")
    keys = compose_keys(inner._flat, outer._flat, outer.out_size)
    return Layout(inner.in_dims, outer.out_dims, keys.tobytes(), outer.elem_bits)


def product(a: Layout, b: Layout) -> Layout:
    """Tile ``b`` over ``a``: dims with one name concatenate (``a`` varies fastest).

    For power-of-two dims this is Triton's ``LinearLayout`` product; for others it is the
    mixed-radix product ``i = i_a + size_a * i_b``. Associative: ``(a*b)*c == a*(b*c)``.
    """
    ind, outd, hw, lg = product_pairs((a.in_dims, a.out_dims), a.pairs(), (b.in_dims, b.out_dims), b.pairs())
    bits = a.elem_bits if a.elem_bits == b.elem_bits else None
    return Layout.from_pairs(ind, outd, hw, lg, elem_bits=bits)
