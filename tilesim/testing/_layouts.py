"""Strategies for random :class:`~tilesim.layouts.Layout` values, and for specs the constructors reject.

A drawn layout is built from a table of images (flat hardware index -> flat logical indices),
never from the code under test's own algebra, so laws checked on it are checked against an
independent description. Kinds, chosen to honour ``bijective`` and ``linear``:

* ``linear`` — F2-linear over power-of-two dims: the image of an index is the XOR of the images
  of its bits (Triton's LinearLayout);
* ``invertible`` — linear and bijective: bit images are the columns of ``P·L·U`` over F2 (every
  invertible matrix has this form);
* ``permutation`` — any bijection, dims of any size;
* ``function`` — total, possibly not injective (replication's inverse) or not onto;
* ``relation`` — 0 to 2 elements per position: partial (OPSEL halves), broadcast (CBSZ/ABID).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np
from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from tilesim.layouts.layout import Dims, Layout

__all__ = ["InvalidLayoutSpec", "invalid_layout_specs", "layouts"]

HW_NAMES = ("lane", "slot", "wave")
LOGICAL_NAMES = ("row", "col", "block")


def _coords(flat: list[int], dims: Dims) -> np.ndarray:
    out = np.zeros((len(flat), len(dims)), np.int64)
    rest = np.asarray(flat, np.int64)
    for d, (_, size) in enumerate(dims):
        out[:, d] = rest % size
        rest = rest // size
    return out


def _build(in_dims: Dims, out_dims: Dims, images: list[list[int]], elem_bits: int | None) -> Layout:
    hw = [h for h, imgs in enumerate(images) for _ in imgs]
    lg = [g for imgs in images for g in imgs]
    return Layout.from_pairs(in_dims, out_dims, _coords(hw, in_dims), _coords(lg, out_dims), elem_bits=elem_bits)


def _is_bijective(lay: Layout) -> bool:
    return lay.is_function() and lay.is_total() and lay.is_injective() and lay.covers()


def _fixed(dims: Mapping[str, int] | Iterable[tuple[str, int]] | None) -> Dims | None:
    if dims is None:
        return None
    items = tuple(dims.items()) if isinstance(dims, Mapping) else tuple(tuple(d) for d in dims)
    return Layout.identity(items).in_dims  # validates names and sizes (LayoutError)


def _pow2(n: int) -> bool:
    return n & (n - 1) == 0


@st.composite
def _dims(draw: st.DrawFn, names: tuple[str, ...], budget: int, pow2: bool, min_total: int) -> Dims:
    count = draw(st.integers(1, len(names)))
    sizes, left = [], budget
    for _ in range(count):
        size = 1 << draw(st.integers(0, left.bit_length() - 1)) if pow2 else draw(st.integers(1, left))
        sizes.append(size)
        left //= size
    if math.prod(sizes) < min_total:
        sizes[0] *= 2  # budget >= min_total was checked by the caller
    return tuple(zip(names, sizes))


@st.composite
def _factor(draw: st.DrawFn, names: tuple[str, ...], total: int) -> Dims:
    """Dims over ``names`` whose sizes multiply to ``total`` (powers of two stay powers of two)."""
    count = draw(st.integers(1, len(names)))
    sizes, left = [], total
    for _ in range(count - 1):
        d = draw(st.sampled_from([d for d in range(1, left + 1) if left % d == 0]))
        sizes.append(d)
        left //= d
    return tuple(zip(names, [*sizes, left]))


def _xor_images(bit_images: list[int], in_size: int) -> list[list[int]]:
    out = []
    for x in range(in_size):
        v = 0
        for b, img in enumerate(bit_images):
            if x >> b & 1:
                v ^= img
        out.append([v])
    return out


@st.composite
def _invertible_bits(draw: st.DrawFn, n: int) -> list[int]:
    """Columns (as bit masks) of a random invertible n x n matrix over F2, as P·L·U."""
    lower = [1 << i | sum(draw(st.booleans()) << k for k in range(i + 1, n)) for i in range(n)]  # column i of L
    upper = [[j == i or (i < j and draw(st.booleans())) for i in range(n)] for j in range(n)]  # upper[j][i] = U[i][j]
    perm = draw(st.permutations(range(n)))
    cols = []
    for j in range(n):
        lu = 0
        for i in range(n):
            if upper[j][i]:
                lu ^= lower[i]
        cols.append(sum(1 << perm[k] for k in range(n) if lu >> k & 1))
    return cols


def layouts(bijective: bool | None = None, linear: bool | None = None, *, max_in: int = 64, max_out: int = 64,
            in_dims: Mapping[str, int] | None = None, out_dims: Mapping[str, int] | None = None,
            elem_bits: int | None = None) -> st.SearchStrategy[Layout]:
    """Random valid :class:`~tilesim.layouts.Layout` values, relations included.

    ``bijective=True`` gives permutations (every position holds one element, every element has
    one owner), ``False`` never a bijection, ``None`` either. ``linear=True`` gives F2-linear
    layouts over power-of-two dims (``bases`` exist), ``False`` never linear, ``None`` either.
    Hardware dims are drawn from (lane, slot, wave) and logical dims from (row, col, block), at
    most ``max_in`` / ``max_out`` positions in all, unless ``in_dims`` / ``out_dims`` fix them.
    ``elem_bits`` is passed on (set it to use ``locations()``). Keep the sizes modest (hundreds):
    every position is drawn through hypothesis so failures shrink.
    """
    for name, v in (("max_in", max_in), ("max_out", max_out)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InvalidArgument(f"{name} must be a positive integer, got {v!r}")
    fin, fout = _fixed(in_dims), _fixed(out_dims)
    fin_size = None if fin is None else math.prod(s for _, s in fin)
    fout_size = None if fout is None else math.prod(s for _, s in fout)
    if linear and any(not _pow2(s) for _, s in (*(fin or ()), *(fout or ()))):
        raise InvalidArgument(f"linear=True needs power-of-two dims; got in_dims={fin}, out_dims={fout}")
    if bijective:
        if fin_size is not None and fout_size is not None and fin_size != fout_size:
            raise InvalidArgument(f"bijective=True needs as many hardware positions as logical elements; "
                                  f"got {fin_size} and {fout_size}")
        cap = fin_size or fout_size or min(max_in, max_out)
        if linear is False and cap < 2:
            raise InvalidArgument("bijective=True, linear=False needs at least 2 positions (every 1-element "
                                  "bijection is linear)")
    if bijective is False and linear and max(fin_size or max_in, fout_size or max_out) < 2:
        raise InvalidArgument("bijective=False, linear=True needs at least 2 positions or elements")
    if bijective is True:
        kinds = {True: ["invertible"], False: ["permutation"], None: ["invertible", "permutation"]}[linear]
    elif bijective is False:
        kinds = {True: ["linear"], False: ["function", "relation"], None: ["linear", "function", "relation"]}[linear]
    else:
        kinds = {True: ["linear", "invertible"], False: ["permutation", "function", "relation"],
                 None: ["linear", "invertible", "permutation", "function", "relation"]}[linear]
    if any(s is not None and not _pow2(s) for s in (fin_size, fout_size)):
        kinds = [k for k in kinds if k not in ("linear", "invertible")] or kinds
    if fin_size is not None and fout_size is not None and fin_size != fout_size:
        kinds = [k for k in kinds if k not in ("invertible", "permutation")] or kinds

    @st.composite
    def draw_layout(draw: st.DrawFn) -> Layout:
        kind = draw(st.sampled_from(kinds))
        pow2 = kind in ("linear", "invertible")
        # at least 2 positions where every smaller layout would break the request (a 1 -> 1 map
        # is a linear bijection); a non-bijective linear map over one position needs 2 elements
        need2 = (bijective is False and kind == "linear") or (bijective is True and linear is False)
        in_min = 2 if need2 and max_in >= 2 else 1
        out_min = 2 if need2 and in_min == 1 else 1
        if kind in ("invertible", "permutation"):
            if fin is not None:
                ind = fin
                outd = fout or draw(_factor(LOGICAL_NAMES, fin_size))
            elif fout is not None:
                outd = fout
                ind = draw(_factor(HW_NAMES, fout_size))
            else:
                ind = draw(_dims(HW_NAMES, min(max_in, max_out), pow2, in_min))
                outd = draw(_factor(LOGICAL_NAMES, math.prod(s for _, s in ind)))
        else:
            ind = fin or draw(_dims(HW_NAMES, max_in, pow2, in_min))
            outd = fout or draw(_dims(LOGICAL_NAMES, max_out, pow2, out_min))
        n_in, n_out = math.prod(s for _, s in ind), math.prod(s for _, s in outd)
        if kind == "linear":
            bits = [draw(st.integers(0, n_out - 1)) for _ in range(n_in.bit_length() - 1)]
            if bijective is False and n_in == n_out and _is_bijective(_build(ind, outd, _xor_images(bits, n_in), None)):
                bits[0] = 0  # a zero basis: two positions hold one element
            images = _xor_images(bits, n_in)
        elif kind == "invertible":
            images = _xor_images(draw(_invertible_bits(n_in.bit_length() - 1)), n_in)
        elif kind == "permutation":
            images = [[p] for p in draw(st.permutations(range(n_out)))]
        elif kind == "function":
            images = [[g] for g in draw(st.lists(st.integers(0, n_out - 1), min_size=n_in, max_size=n_in))]
        else:
            images = draw(st.lists(st.lists(st.integers(0, n_out - 1), max_size=2), min_size=n_in, max_size=n_in))
        lay = _build(ind, outd, images, elem_bits)
        if bijective is False and kind != "linear" and _is_bijective(lay):
            if n_in >= 2:
                images[1] = list(images[0])
            else:
                images[0] = []
            lay = _build(ind, outd, images, elem_bits)
        if linear is False and lay.is_linear():  # a linear map sends 0 to 0: move position 0
            if kind == "permutation" and n_in >= 2:
                images[0], images[1] = images[1], images[0]
            else:
                images[0] = [n_out - 1] if n_out >= 2 else []
            lay = _build(ind, outd, images, elem_bits)
        if (bijective is not None and _is_bijective(lay) != bijective) or (linear is not None and lay.is_linear() != linear):
            reject()  # only tiny corner cases (one input bit) reach here
        return lay

    return draw_layout()


# ----------------------------------------------------------------------------------- invalid specs
class InvalidLayoutSpec(NamedTuple):
    """A call of a ``Layout`` constructor that must raise ``LayoutError``: ``spec.build()`` makes it."""

    problem: str  # what is wrong, in words
    constructor: str  # from_pairs | from_bases | from_function | identity
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def build(self) -> Layout:
        fn: Callable[..., Layout] = getattr(Layout, self.constructor)
        return fn(*self.args, **self.kwargs)


_SIZES = st.integers(1, 8)


@st.composite
def _bad_dims(draw: st.DrawFn) -> tuple[str, Any]:
    size = draw(_SIZES)
    return draw(st.sampled_from([
        ("a dim name repeats", (("lane", size), ("lane", size))),
        ("a dim name is not an identifier", ((draw(st.sampled_from(["2lane", "", "la ne", "a-b"])), size),)),
        ("a dim size is not a positive integer",
         (("lane", draw(st.sampled_from([0, -size, 2.5, True, "4", None]))),)),
        ("the dims span 2**31 positions or more", (("lane", 2**16), ("slot", 2**15 * size))),
    ]))


@st.composite
def invalid_layout_specs(draw: st.DrawFn) -> InvalidLayoutSpec:
    """Constructor calls that ``Layout`` must reject with ``LayoutError`` (for error-path tests)."""
    n, m = draw(_SIZES), draw(_SIZES)
    good_in, good_out = (("lane", n),), (("row", m),)
    e_in, e_out = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    p_in, p_out = (("lane", 1 << e_in),), (("row", 1 << e_out),)
    problem, bad = draw(_bad_dims())
    choice = draw(st.integers(0, 10))
    if choice == 0:
        return InvalidLayoutSpec("bad hardware dims: " + problem, "from_pairs", (bad, good_out, [], []), {})
    if choice == 1:
        return InvalidLayoutSpec("bad logical dims: " + problem, "from_pairs", (good_in, bad, [], []), {})
    if choice == 2:
        return InvalidLayoutSpec("bad dims: " + problem, "identity", (bad,), {})
    if choice == 3:
        coord = draw(st.sampled_from([n, n + 3, -1]))
        return InvalidLayoutSpec(f"hardware coordinate lane={coord} outside 0..{n - 1}", "from_pairs",
                                 (good_in, good_out, [[coord]], [[0]]), {})
    if choice == 4:
        coord = draw(st.sampled_from([m, m + 3, -1]))
        return InvalidLayoutSpec(f"logical coordinate row={coord} outside 0..{m - 1}", "from_pairs",
                                 (good_in, good_out, [[0]], [[coord]]), {})
    if choice == 5:
        k = draw(st.integers(0, n - 1))
        return InvalidLayoutSpec(f"{k + 1} hardware positions but {k} logical coordinates", "from_pairs",
                                 (good_in, good_out, [[i] for i in range(k + 1)], [[0]] * k), {})
    if choice == 6:
        odd = draw(st.sampled_from([3, 5, 6, 12]))
        return InvalidLayoutSpec(f"linear layout over a dim of size {odd}", "from_bases",
                                 ((("lane", odd),), p_out, {"lane": [(0,), (0,)]}), {})
    if choice == 7:
        wrong = draw(st.integers(0, 4).filter(lambda k: k != e_in))
        return InvalidLayoutSpec(f"{wrong} bases for a dim that needs {e_in}", "from_bases",
                                 (p_in, p_out, {"lane": [(0,)] * wrong}), {})
    if choice == 8:
        return InvalidLayoutSpec("a basis with the wrong number of entries", "from_bases",
                                 (p_in, p_out, {"lane": [(0, 0)] * e_in}), {}) if e_in else \
            InvalidLayoutSpec("bases for a dim the layout does not have", "from_bases",
                              (p_in, p_out, {"lane": [], "wave": []}), {})
    if choice == 9:
        big = (1 << e_out) + draw(st.integers(0, 5))
        return InvalidLayoutSpec(f"a basis row={big} outside the logical dim", "from_bases",
                                 ((("lane", 2),), p_out, {"lane": [(big,)]}), {})
    bits = draw(st.sampled_from([0, -8, 2.5, "32"]))
    return InvalidLayoutSpec(f"elem_bits={bits!r} is not a positive integer", "from_pairs",
                             (good_in, good_out, [[0]], [[0]]), {"elem_bits": bits})
