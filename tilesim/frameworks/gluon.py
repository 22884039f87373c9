"""Gluon-style layout specs: Triton's layout vocabulary as frozen values, converted exactly.

Kernel authors describe register layouts in Triton's Gluon terms (``BlockedLayout``,
``AMDMFMALayout``, ``DotOperandLayout`` …). Each spec here takes the same parameters with the
same meaning and converts, for a tensor shape, to

* ``to_linear(shape)`` -> :class:`DistributedLinearLayout`: F2 bases per hardware dim
  (``register``, ``lane``, ``warp``, ``block``) whose entries are logical coordinates
  ``(dim0, dim1, …)``. The bases equal Triton's own conversion basis for basis, in the same
  register order and with the same all-zero bases where the tensor is smaller than the tile
  (``tests/golden/triton_layouts`` holds Triton 3.9's answers; ``tests/test_gluon.py`` compares);
* ``to_layout(shape)`` -> :class:`tilesim.layouts.Layout` over input dims ``register``, ``lane``,
  ``warp`` (and ``block`` when it is non-trivial) and output dims ``dim0``, ``dim1``, ….

Distributed specs also take Triton's optional ``cga_layout`` (block bases over a grid of CTAs);
their layouts then have a ``block`` input dim.

Shared-memory specs (``SwizzledSharedLayout``, ``PaddedSharedLayout``, in ``gluon_shared`` and
re-exported here) map input ``offset`` (an element's position in shared memory) to the element.

The conversions are written from the layouts' meaning (Triton's documentation and the
instruction's register map) and checked against Triton's output; they are built from a few
operations on small F2 layouts (``_LL``, in ``_gluon_common``): identity / zero 1-D pieces, products and
the two shape adjustments Triton applies — repeat in registers while the tile is smaller than
the tensor, and drop (zero) the largest bases while it is larger.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tilesim.frameworks._gluon_common import (
    DistributedLinearLayout,
    _bool,
    _cga,
    _Distributed,
    _dims,
    _fail,
    _ints,
    _is_int,
    _LL,
    _order,
    _tile_bases,
    _tile_grid,
    _version,
)
from tilesim.frameworks.gluon_shared import (
    NVMMASharedLayout,
    PaddedSharedLayout,
    SharedLinearLayout,
    SwizzledSharedLayout,
)
from tilesim.targets import family_targets as _family_targets
from tilesim.targets import feature_targets

__all__ = [
    "AMDMFMALayout",
    "AMDWMMALayout",
    "BlockedLayout",
    "DistributedLinearLayout",
    "DotOperandLayout",
    "NVMMADistributedLayout",
    "NVMMASharedLayout",
    "PaddedSharedLayout",
    "SPECS",
    "SharedLinearLayout",
    "SliceLayout",
    "SwizzledSharedLayout",
]


_RANK2 = "must have 2 entries (batched rank 3 is not supported)"
_RANK23 = "must have 2 entries [M, N] or 3 [batch, M, N]"


# --------------------------------------------------------------------------- blocked / slice
@dataclass(frozen=True)
class BlockedLayout(_Distributed):
    """Each thread holds a ``size_per_thread`` block; threads and warps tile it; ``order`` lists dims fastest first."""

    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]
    cga_layout: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        cls = "BlockedLayout"
        spt = _ints(cls, "size_per_thread", self.size_per_thread)
        rank = len(spt)
        if not rank:
            raise _fail(cls, "size_per_thread", self.size_per_thread, "must name at least one dim")
        object.__setattr__(self, "size_per_thread", spt)
        object.__setattr__(self, "threads_per_warp", _ints(cls, "threads_per_warp", self.threads_per_warp, rank=rank))
        object.__setattr__(self, "warps_per_cta", _ints(cls, "warps_per_cta", self.warps_per_cta, rank=rank))
        object.__setattr__(self, "order", _order(cls, self.order, rank))
        object.__setattr__(self, "cga_layout", _cga(cls, self.cga_layout, rank))

    def _ll(self, shape: tuple[int, ...], ver: str = "3.9") -> _LL:
        ll = _LL()
        for ind, sizes in (("register", self.size_per_thread), ("lane", self.threads_per_warp),
                           ("warp", self.warps_per_cta)):
            for d in self.order:
                ll = ll * _LL.identity(sizes[d], ind, f"dim{d}")
        fitted = ll.fit(_dims(shape), self.cga_layout)
        # Triton 3.9 drops registers that only hold copies; 3.6 keeps them as all-zero bases
        return fitted if ver == "3.6" else fitted.without_zero_registers()


@dataclass(frozen=True)
class SliceLayout(_Distributed):
    """The parent layout with dim ``dim`` removed (the parent is taken at size 1 there)."""

    dim: int
    parent: Any

    def __post_init__(self) -> None:
        if not isinstance(self.parent, (_Distributed, DistributedLinearLayout)):
            raise _fail("SliceLayout", "parent", self.parent, "must be a distributed layout spec "
                        "(BlockedLayout, AMDMFMALayout, AMDWMMALayout, NVMMADistributedLayout, SliceLayout, …)")
        if not _is_int(self.dim) or not 0 <= self.dim < self.parent.rank:
            raise _fail("SliceLayout", "dim", self.dim, f"must be in 0..{self.parent.rank - 1} (the parent's dims)")
        if self.parent.rank < 2:
            raise _fail("SliceLayout", "parent", self.parent, "must have rank >= 2 to slice a dim away")

    @property
    def rank(self) -> int:
        return self.parent.rank - 1

    def _ll(self, shape: tuple[int, ...], ver: str = "3.9") -> _LL:
        if ver == "3.6" and isinstance(self.parent, DistributedLinearLayout):
            raise _fail("SliceLayout", "parent", "DistributedLinearLayout", "a slice of explicit bases in Triton "
                        "3.6's numbering is not modelled by tilesim; refused rather than guessed")
        pshape = (*shape[:self.dim], 1, *shape[self.dim:])
        p = self.parent._ll(pshape, ver).drop_out(f"dim{self.dim}")
        rename = {f"dim{i}": f"dim{i - (i > self.dim)}" for i in range(self.parent.rank) if i != self.dim}
        bases = {k: [{rename[o]: x for o, x in v.items()} for v in vs] for k, vs in p.bases.items()}
        return _LL(bases, {rename[o]: s for o, s in p.outs.items()}).without_zero_registers()


# --------------------------------------------------------------------------- AMD MFMA
# Triton's AMDMFMALayout version is the CDNA generation; which targets belong to it is the target
# table's business (tilesim.targets), so a new target in an existing family needs no edit here.
_MFMA_FAMILY = {1: "cdna1", 2: "cdna2", 3: "cdna3", 4: "cdna4"}


_MFMA_SHAPES = ((32, 32), (16, 16), (64, 4), (4, 64))


@dataclass(frozen=True)
class AMDMFMALayout(_Distributed):
    """The result (C/D) layout of AMD MFMA instructions, tiled over warps (wave64).

    ``version`` 1-4 = gfx908 / gfx90a / gfx942 / gfx950; ``instr_shape`` is (M, N, K) with
    M x N one of 32x32, 16x16, 64x4, 4x64; ``transposed`` puts a lane's consecutive elements
    along N instead of M; ``element_bitwidth`` 64 (f64 results) holds one row per lane per tile.
    ``warps_per_cta`` / ``tiles_per_warp`` are [M, N] or, batched, [batch, M, N].
    """

    version: int
    instr_shape: tuple[int, ...]
    transposed: bool
    warps_per_cta: tuple[int, ...]
    element_bitwidth: int | None = None
    tiles_per_warp: tuple[int, ...] | None = None
    cga_layout: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        cls = "AMDMFMALayout"
        if not _is_int(self.version) or self.version not in _MFMA_FAMILY:
            raise _fail(cls, "version", self.version, "versions are 1 (gfx908), 2 (gfx90a), 3 (gfx942), 4 (gfx950)")
        shp = _ints(cls, "instr_shape", self.instr_shape, pow2=False)
        if len(shp) != 3:
            raise _fail(cls, "instr_shape", self.instr_shape, "must be (M, N, K)")
        if shp[:2] not in _MFMA_SHAPES:
            raise _fail(cls, "instr_shape", list(shp), "M x N must be one of 32x32, 16x16, 64x4, 4x64")
        object.__setattr__(self, "instr_shape", shp)
        object.__setattr__(self, "transposed", _bool(cls, "transposed", self.transposed))
        warps = _ints(cls, "warps_per_cta", self.warps_per_cta)
        if len(warps) not in (2, 3):
            raise _fail(cls, "warps_per_cta", self.warps_per_cta, _RANK23)
        object.__setattr__(self, "warps_per_cta", warps)
        ebw = 32 if self.element_bitwidth is None else self.element_bitwidth
        if not _is_int(ebw) or ebw not in (32, 64):
            raise _fail(cls, "element_bitwidth", self.element_bitwidth, "must be 32 or 64 (bits of a result element)")
        object.__setattr__(self, "element_bitwidth", ebw)
        tiles = (1,) * len(warps) if self.tiles_per_warp is None else _ints(cls, "tiles_per_warp", self.tiles_per_warp,
                                                                           rank=len(warps))
        object.__setattr__(self, "tiles_per_warp", tiles)
        object.__setattr__(self, "cga_layout", _cga(cls, self.cga_layout, len(warps)))

    wave_size = 64

    @property
    def arch_family(self) -> tuple[str, ...]:
        """The targets this version stands for (from the target table)."""
        return _family_targets(_MFMA_FAMILY[self.version])

    def _tile(self, dm: str, dn: str) -> _LL:
        """One instruction's result tile over out dims ``dm`` (M) and ``dn`` (N), ordered (N, M)."""
        m, n = self.instr_shape[:2]
        height = 1 if self.element_bitwidth == 64 else 4
        tiles = m * n // (64 * height)
        # Not transposed: a lane holds `height` consecutive rows; lanes run along N, then down M.
        # Transposed: the same with M and N exchanged.
        along, across, lanes_across = (dm, dn, n) if not self.transposed else (dn, dm, m)
        t = (_LL.identity(height, "register", along) * _LL.identity(lanes_across, "lane", across)
             * _LL.identity(64 // lanes_across, "lane", along) * _LL.identity(tiles, "register", along))
        return _LL(t.bases, {dn: t.outs[dn], dm: t.outs[dm]})

    def _ll(self, shape: tuple[int, ...], ver: str = "3.9") -> _LL:
        m, n = self.instr_shape[:2]
        if (m, n) == (64, 4) and not self.transposed:
            # As in Triton: the spec may parent dot operands, but its result layout does not exist.
            raise _fail("AMDMFMALayout", "transposed", False, "a 64x4 result is only laid out transposed "
                        "(computed as 4x64 with A and B swapped)")
        r = self.rank
        dm, dn = f"dim{r - 2}", f"dim{r - 1}"
        (tm, tn), (wm, wn) = self.tiles_per_warp[-2:], self.warps_per_cta[-2:]
        ll = (self._tile(dm, dn) * _LL.identity(tn, "register", dn) * _LL.identity(wn, "warp", dn)
              * _LL.identity(shape[-1] // (n * wn * tn), "register", dn)
              * _LL.identity(tm, "register", dm) * _LL.identity(wm, "warp", dm))
        if r == 3:  # batch: warps last; repeats come last too
            ll = ll * _LL.identity(self.warps_per_cta[0], "warp", "dim0")
        return ll.fit(_dims(shape), self.cga_layout)


# --------------------------------------------------------------------------- AMD WMMA
# AMDWMMALayout version -> target family (RDNA3 incl. RDNA3.5, RDNA4, gfx1250).
_WMMA_FAMILY = {1: "rdna3", 2: "rdna4", 3: "gfx1250"}
# The M x N x K shapes Triton 3.9 accepts per version (RDNA3: 16x16x16 only).
_WMMA_SHAPES = {1: ((16, 16, 16),), 2: ((16, 16, 16), (16, 16, 32)),
                3: ((16, 16, 4), (16, 16, 32), (16, 16, 64), (16, 16, 128))}
_WMMA_NAMES = {1: "1 (RDNA3)", 2: "2 (RDNA4)", 3: "3 (gfx1250)"}


@dataclass(frozen=True)
class AMDWMMALayout(_Distributed):
    """The result (C/D) layout of AMD WMMA instructions (wave32), tiled over warps.

    ``version`` 1-3 = RDNA3 / RDNA4 / gfx1250; ``instr_shape`` (M, N, K) defaults to 16x16x16.
    Warps and per-warp tiles are given as ``warps_per_cta`` / ``tiles_per_warp`` ([M, N] or
    [batch, M, N]; last dim fastest), or as Triton 3.9 spells them: ``warp_bases`` / ``reg_bases``
    in instruction tiles. Either spelling is stored in both forms, so equal layouts compare equal.
    """

    version: int
    transposed: bool
    warps_per_cta: tuple[int, ...] | None = None
    instr_shape: tuple[int, ...] | None = None
    tiles_per_warp: tuple[int, ...] | None = None
    warp_bases: tuple[tuple[int, ...], ...] | None = None
    reg_bases: tuple[tuple[int, ...], ...] | None = None
    cga_layout: tuple[tuple[int, ...], ...] = ()
    rank: int | None = None  # type: ignore[assignment]  # Triton 3.9's keyword; the property elsewhere
    triton_version: str | None = None

    def __post_init__(self) -> None:
        cls = "AMDWMMALayout"
        object.__setattr__(self, "triton_version", _version(cls, self.triton_version))
        if not _is_int(self.version) or self.version not in _WMMA_SHAPES:
            raise _fail(cls, "version", self.version, "versions are 1 (RDNA3: gfx11), 2 (RDNA4: gfx12), 3 (gfx1250)")
        object.__setattr__(self, "transposed", _bool(cls, "transposed", self.transposed))
        shp = (16, 16, 16) if self.instr_shape is None else _ints(cls, "instr_shape", self.instr_shape, pow2=False)
        if shp not in _WMMA_SHAPES[self.version]:
            valid = ", ".join("x".join(map(str, s)) for s in _WMMA_SHAPES[self.version])
            raise _fail(cls, "instr_shape", list(shp), f"version {_WMMA_NAMES[self.version]} takes {valid}")
        object.__setattr__(self, "instr_shape", shp)
        if self.warp_bases is None and self.reg_bases is None:
            w = self.warps_per_cta
            if isinstance(w, Sequence) and w and isinstance(w[0], Sequence):
                raise _fail(cls, "warps_per_cta", w, "is a list of bases (Triton 3.9's positional warp_bases); "
                            "pass warp_bases=... and reg_bases=... by keyword, or warps_per_cta as [M, N]")
            warps = _ints(cls, "warps_per_cta", w)
            if len(warps) not in (2, 3):
                raise _fail(cls, "warps_per_cta", self.warps_per_cta, _RANK23)
            r = len(warps)
            if self.rank is not None and self.rank != r:
                raise _fail(cls, "rank", self.rank, f"must equal the length of warps_per_cta ({r})")
            tiles = (1,) * r if self.tiles_per_warp is None else _ints(cls, "tiles_per_warp", self.tiles_per_warp,
                                                                      rank=r)
            # Last dim fastest, in instruction tiles: the convention of Triton's own AMD helpers.
            unit = [tuple(int(i == d) for i in range(r)) for d in range(r)]
            reg = [tuple(x << i for x in unit[d]) for d in reversed(range(r)) for i in range(tiles[d].bit_length() - 1)]
            warp = [tuple(tiles[d] * x << i for x in unit[d]) for d in reversed(range(r))
                    for i in range(warps[d].bit_length() - 1)]
        else:
            if self.warps_per_cta is not None or self.tiles_per_warp is not None:
                raise _fail(cls, "warp_bases", self.warp_bases, "give warps_per_cta/tiles_per_warp or "
                            "warp_bases/reg_bases, not both")
            if self.triton_version == "3.6":
                raise _fail(cls, "warp_bases", self.warp_bases, "is Triton 3.9's spelling; Triton 3.6 takes "
                            "warps_per_cta and tiles_per_warp")
            # Triton 3.9: rank= (default 2) is the bases' length, checked, never inferred from them
            r = 2 if self.rank is None else self.rank
            if not _is_int(r) or r not in (2, 3):
                raise _fail(cls, "rank", self.rank, "must be 2 ([M, N]) or 3 ([batch, M, N])")
            warp = _tile_bases(cls, "warp_bases", self.warp_bases or (), r)
            reg = _tile_bases(cls, "reg_bases", self.reg_bases or (), r)
            _tile_grid(cls, reg, warp)
            warps = tuple(1 << sum(1 for v in warp if v[d]) for d in range(r))
            tiles = tuple(1 << sum(1 for v in reg if v[d]) for d in range(r))
        object.__setattr__(self, "warps_per_cta", warps)
        object.__setattr__(self, "tiles_per_warp", tiles)
        object.__setattr__(self, "warp_bases", tuple(warp))
        object.__setattr__(self, "reg_bases", tuple(reg))
        object.__setattr__(self, "cga_layout", _cga(cls, self.cga_layout, r))
        object.__setattr__(self, "rank", r)

    wave_size = 32

    @property
    def arch_family(self) -> tuple[str, ...]:
        """The targets this version stands for (from the target table)."""
        return _family_targets(_WMMA_FAMILY[self.version])

    def _tile(self) -> _LL:
        """One instruction's 16x16 result tile, out dims ordered (N, M[, batch])."""
        dm, dn = f"dim{self.rank - 2}", f"dim{self.rank - 1}"
        along, across = (dm, dn) if not self.transposed else (dn, dm)
        lanes = _LL.identity(16, "lane", across)
        if self.version == 1:
            # RDNA3: lanes 16-31 hold the odd rows; a lane's 8 registers step by 2 rows.
            t = lanes * _LL.identity(2, "lane", along) * _LL.identity(8, "register", along)
        else:
            # RDNA4 / gfx1250: lanes 16-31 hold rows 8-15; a lane's 8 registers are consecutive rows.
            t = _LL.identity(8, "register", along) * lanes * _LL.identity(2, "lane", along)
        return _LL(t.bases, {dn: t.outs[dn], dm: t.outs[dm], **({"dim0": 1} if self.rank == 3 else {})})

    def _ll(self, shape: tuple[int, ...], ver: str = "3.9") -> _LL:
        if ver == "3.6":
            m, n = shape[-2:]
            if not all(s == 1 or s >= 16 for s in (m, n)):
                raise _fail("AMDWMMALayout", "tensor shape", list(shape), "Triton 3.6 needs M and N each 1 or at "
                            "least the instruction's 16 (its \"Unexpected shape\" assertion)")
            return self._ll36(shape).fit(_dims(shape), self.cga_layout)
        tiled = _tiled(self._tile(), (1,) * (self.rank - 2) + self.instr_shape[:2], self.reg_bases, self.warp_bases)
        return tiled.fit(_dims(shape), self.cga_layout)

    def _ll36(self, shape: tuple[int, ...]) -> _LL:
        """Triton 3.6's order (as for MFMA): the tile, N tiles, N warps, N repeats, then M tiles and M warps;
        3.9 puts all tiles (``reg_bases``) before any repeat."""
        r = self.rank
        dm, dn = f"dim{r - 2}", f"dim{r - 1}"
        (tm, tn), (wm, wn) = self.tiles_per_warp[-2:], self.warps_per_cta[-2:]
        ll = (self._tile() * _LL.identity(tn, "register", dn) * _LL.identity(wn, "warp", dn)
              * _LL.identity(shape[-1] // (16 * wn * tn), "register", dn)
              * _LL.identity(tm, "register", dm) * _LL.identity(wm, "warp", dm))
        if r == 3:
            ll = ll * _LL.identity(self.warps_per_cta[0], "warp", "dim0")
        return ll


def _tiled(tile: _LL, mn: Sequence[int], reg: Sequence[Sequence[int]], warp: Sequence[Sequence[int]]) -> _LL:
    """``tile`` repeated by register and warp bases given in whole tiles of ``mn``."""
    bases = {k: [dict(v) for v in vs] for k, vs in tile.bases.items()}
    outs = dict(tile.outs)
    for ind, vecs in (("register", reg), ("warp", warp)):
        for v in vecs:
            img = {f"dim{d}": x * mn[d] for d, x in enumerate(v) if x}
            bases.setdefault(ind, []).append(img)
            for o, x in img.items():
                outs[o] = max(outs[o], 2 * x)
    return _LL(bases, outs)


# --------------------------------------------------------------------------- NVIDIA mma.sync
def _nv_tile(m: int, n: int, k_width: int, inner: str, outer: str) -> _LL:
    """mma.sync fragment of an ``m`` (outer) x ``n`` (inner) tile: a lane holds ``k_width`` consecutive
    inner elements; 4 lanes run along inner, 8 lanes along outer; then registers repeat outer, inner."""
    t = (_LL(outs={inner: 1, outer: 1}) * _LL.identity(k_width, "register", inner)
         * _LL.identity(4, "lane", inner) * _LL.identity(8, "lane", outer)
         * _LL.identity(m // 8, "register", outer) * _LL.identity(n // (4 * k_width), "register", inner))
    return t


def _warps(warps: Sequence[int], zero_dim: int | None = None, order: Sequence[int] | None = None) -> _LL:
    """Warps over the dims in ``order`` (fastest first, default last dim first); ``zero_dim``'s warps
    broadcast (hold the same data)."""
    ll = _LL()
    for d in order if order is not None else range(len(warps) - 1, -1, -1):
        piece = _LL.zeros if d == zero_dim else _LL.identity
        ll = ll * piece(warps[d], "warp", f"dim{d}")
    return ll


@dataclass(frozen=True)
class NVMMADistributedLayout(_Distributed):
    """The accumulator layout of NVIDIA mma: version [2, 0] = Ampere ``mma.sync`` (instr_shape [16, 8];
    batched: warps [batch, M, N] with instr_shape [1, 16, 8]), [3, 0] = Hopper ``wgmma``
    (instr_shape [16, N, K]; a warp holds 16 rows of the warpgroup's tile)."""

    version: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    instr_shape: tuple[int, ...]
    cga_layout: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        cls = "NVMMADistributedLayout"
        ver = _ints(cls, "version", self.version, pow2=False, allow_zero=True)
        if not 1 <= len(ver) <= 2 or ver[0] not in (2, 3):
            raise _fail(cls, "version", list(ver), "must be [2, 0] (Ampere mma.sync) or [3, 0] (Hopper wgmma); "
                        "Volta's [1, 0] is not supported")
        object.__setattr__(self, "version", ver)
        warps = _ints(cls, "warps_per_cta", self.warps_per_cta)
        if len(warps) not in ((2, 3) if ver[0] == 2 else (2,)):
            raise _fail(cls, "warps_per_cta", self.warps_per_cta, _RANK23 if ver[0] == 2 else
                        "must have 2 entries: a batched (rank 3) Hopper layout is not modelled by tilesim")
        object.__setattr__(self, "warps_per_cta", warps)
        shp = _ints(cls, "instr_shape", self.instr_shape)
        if ver[0] == 2 and len(warps) == 3 and len(shp) == 2:
            raise _fail(cls, "instr_shape", list(shp), "with batched (rank 3) warps_per_cta: a rank-2 instr_shape "
                        "there is not modelled by tilesim (write [1, M, N]); refused rather than guessed")
        sizes = (len(warps),) if ver[0] == 2 else (2, 3)
        if len(shp) not in sizes or shp[sizes[0] - 2] % 8 or shp[sizes[0] - 1] % 8 or (len(shp) == 3 and ver[0] == 2
                                                                                       and shp[0] != 1):
            form = ("[M, N]" if len(warps) == 2 else "[1, M, N]") if ver[0] == 2 else "[M, N] or [M, N, K]"
            raise _fail(cls, "instr_shape", list(shp), f"version {list(ver)} takes {form} with M and N "
                        "power-of-two multiples of 8")
        object.__setattr__(self, "instr_shape", shp)
        object.__setattr__(self, "cga_layout", _cga(cls, self.cga_layout, len(warps)))

    wave_size = 32

    @property
    def arch_family(self) -> tuple[str, ...]:
        # mma.sync runs on every target that has it (Ampere and later); wgmma only on Hopper.
        if self.version[0] == 3:
            return _family_targets("sm90")
        return feature_targets("mma_sync")

    def _ll(self, shape: tuple[int, ...], ver: str = "3.9") -> _LL:
        r = self.rank
        m, n = self.instr_shape[r - 2:r] if self.version[0] == 2 else self.instr_shape[:2]
        tile = _nv_tile(m, n, 2, f"dim{r - 1}", f"dim{r - 2}") * _warps(self.warps_per_cta, order=self.warp_order)
        return tile.fit(_dims(shape), self.cga_layout)

    @property
    def warp_order(self) -> tuple[int, ...]:
        """Hopper's warpgroup stacks its 4 warps down M; Ampere's warps go along N first (batch last)."""
        return (0, 1) if self.version[0] == 3 else tuple(range(self.rank - 1, -1, -1))


# --------------------------------------------------------------------------- dot operands
@dataclass(frozen=True)
class DotOperandLayout(_Distributed):
    """Operand A (``operand_index`` 0, shape M x K) or B (1, K x N) of a dot whose result has layout ``parent``.

    ``k_width`` is the number of consecutive K elements a lane holds (required for MFMA, WMMA
    and mma.sync parents; must be 0 for a blocked parent, where each thread holds all of K).
    """

    operand_index: int
    parent: Any
    k_width: int

    def __post_init__(self) -> None:
        cls = "DotOperandLayout"
        if not _is_int(self.operand_index) or self.operand_index not in (0, 1):
            raise _fail(cls, "operand_index", self.operand_index, "must be 0 (A, M x K) or 1 (B, K x N)")
        if not isinstance(self.parent, (AMDMFMALayout, AMDWMMALayout, NVMMADistributedLayout, BlockedLayout)):
            raise _fail(cls, "parent", self.parent, "must be AMDMFMALayout, AMDWMMALayout, NVMMADistributedLayout "
                        "or BlockedLayout")
        kw = self.k_width
        if not _is_int(kw) or kw < 0 or (kw and kw & (kw - 1)):
            raise _fail(cls, "k_width", kw, "must be 0 or a power of two")
        if isinstance(self.parent, NVMMADistributedLayout) and self.parent.version[0] == 3 and self.operand_index:
            raise _fail(cls, "operand_index", 1,
                        "must be 0 for a Hopper ([3, 0]) parent: wgmma reads B from shared memory")
        if isinstance(self.parent, BlockedLayout):
            if kw != 0:
                raise _fail(cls, "k_width", kw, "must be 0 when the parent is a BlockedLayout")
            if self.parent.rank < 2 and self.operand_index == 1:
                raise _fail(cls, "parent", self.parent, "operand B (K x N) needs a parent of rank >= 2")
        elif kw == 0:
            raise _fail(cls, "k_width", 0,
                        f"is required (a power of two >= 1) for a {type(self.parent).__name__} parent")
        elif isinstance(self.parent, AMDWMMALayout) and self.parent.version < 3:
            # Triton 3.9's rule: a lane's K run is 8/16 on RDNA3, 4/8/16 on RDNA4.
            allowed = (8, 16) if self.parent.version == 1 else (4, 8, 16)
            if kw not in allowed:
                raise _fail(cls, "k_width", kw, f"must be one of {'/'.join(map(str, allowed))} for an "
                            f"AMDWMMALayout version {_WMMA_NAMES[self.parent.version]} parent")

    @property
    def rank(self) -> int:
        return self.parent.rank

    def _ll(self, shape: tuple[int, ...], ver: str = "3.9") -> _LL:
        p, kw, a, r = self.parent, self.k_width, self.operand_index == 0, self.parent.rank
        kd, nd = (r - 1, r - 2) if a else (r - 2, r - 1)  # K dim, non-K dim (-1 for a rank-1 blocked A)
        k, nk = f"dim{kd}", f"dim{nd}"
        if isinstance(p, AMDMFMALayout):
            non_k = p.instr_shape[0] if a else p.instr_shape[1]
            # One instruction's K: k_width per lane times the lane groups of the narrower operand
            # (4x64 / 64x4: the 4-wide operand's 16 groups set K = 16*k_width for both).
            k_tile = kw * (64 // min(p.instr_shape[:2]))
            ll = (_LL.identity(kw, "register", k) * _LL.identity(non_k, "lane", nk)
                  * _LL.identity(64 // non_k, "lane", k)
                  * _LL.identity(max(shape[kd], k_tile) // (kw * (64 // non_k)), "register", k)
                  * _LL.identity(p.tiles_per_warp[nd], "register", nk) * _warps(p.warps_per_cta, zero_dim=kd))
        elif isinstance(p, AMDWMMALayout):
            # RDNA3 replicates A/B across the two half-waves; RDNA4/gfx1250 split K between them.
            second = _LL.zeros(2, "lane", k) if p.version == 1 else _LL.identity(2, "lane", k)
            # RDNA4/gfx1250: registers repeat until the pair of half-waves covers the instruction's K
            # (RDNA3: the k_width run is the whole tile).
            k_regs = 1 if p.version == 1 else p.instr_shape[2] // (2 * kw)
            fit_order = {k: 1, nk: 1, **({"dim0": 1} if r == 3 else {})}  # K, non-K, batch
            ll = (_LL(outs=fit_order) * _LL.identity(kw, "register", k)
                  * _LL.identity(16, "lane", nk) * second * _LL.identity(k_regs, "register", k))
            if ver == "3.6" and (r == 3 or p.cga_layout):
                raise _fail("DotOperandLayout", "parent", f"AMDWMMALayout rank {r}", "a batched (rank 3) or "
                            "multi-CTA (cga_layout) AMDWMMALayout operand in Triton 3.6's numbering is not modelled by tilesim; refused "
                            "rather than guessed")
            if ver == "3.6" and p.version == 3 and kw not in (2, 8, 16):
                raise _fail("DotOperandLayout", "k_width", kw, "must be 2, 8 or 16 for an AMDWMMALayout version 3 "
                            "(gfx1250) parent in Triton 3.6")
            if ver == "3.6":
                # Triton 3.6 numbers the repeats along K before the parent's tiles_per_warp repeats (3.9:
                # after them), in K steps of k_width x 2 half-waves x the registers for the instruction's
                # K (RDNA3 too, as if its half-waves split K)
                ll = ll * _LL.identity(max(shape[kd] // (kw * 2 * max(k_regs, 1)), 1), "register", k)
            # The parent's repeats and warps along the other operand's dim hold the same data here.
            reg = [u for v in p.reg_bases if any(u := tuple(0 if d == kd else x for d, x in enumerate(v)))]
            warp = [tuple(0 if d == kd else x for d, x in enumerate(v)) for v in p.warp_bases]
            ll = _tiled(ll, (1,) * (r - 2) + (16, 16), reg, warp)
        elif isinstance(p, NVMMADistributedLayout):
            m, n = (16, kw * 8) if a else (8, kw * 8)
            ll = _nv_tile(m, n, kw, k, nk) * _warps(p.warps_per_cta, zero_dim=kd, order=p.warp_order)
        else:  # blocked: a thread holds the whole K extent; lanes and warps along K broadcast
            sizes = {"register": list(p.size_per_thread), "lane": p.threads_per_warp, "warp": p.warps_per_cta}
            sizes["register"][kd] = shape[kd]
            ll = _LL(outs={f"dim{d}": 1 for d in p.order})
            for ind, sz in sizes.items():
                for d in p.order:
                    piece = _LL.zeros if (ind != "register" and d == kd) else _LL.identity
                    ll = ll * piece(sz[d], ind, f"dim{d}")
        grid = p.cga_layout
        if not isinstance(p, AMDMFMALayout):  # every CTA holds the whole K extent: K block bases broadcast
            grid = tuple(tuple(0 if d == kd else x for d, x in enumerate(v)) for v in grid)
        return ll.fit(_dims(shape), grid)


SPECS: dict[str, type] = {}


def _register(*classes: type) -> None:
    for c in classes:
        SPECS[c.__name__] = c


_register(DistributedLinearLayout, BlockedLayout, SliceLayout, AMDMFMALayout, AMDWMMALayout, NVMMADistributedLayout,
          DotOperandLayout, SwizzledSharedLayout, PaddedSharedLayout, NVMMASharedLayout, SharedLinearLayout)
