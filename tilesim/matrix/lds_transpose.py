"""LDS transpose reads: one catalog row per instruction, with its exact lane map.

A transpose read is a cooperative load. Every lane of a *group* supplies one LDS address and
reads ``read_bits`` contiguous bits there (``elems`` elements of ``elem_bits`` each); the group
then exchanges the elements so that destination lane ``l`` holds, as element ``r`` of its
destination registers (bits ``[r*elem_bits, (r+1)*elem_bits)``), element ``e`` of the read made
by lane ``s``::

    (e, s) = source_of(l, r)

The map is linear over GF(2), written as Triton's LinearLayout writes it: each bit of the
destination lane index and each bit of the destination element index contributes one
``(source element, source lane)`` pair, XOR-ed together (no two bases overlap, so XOR is
addition). For ``ds_read_b64_tr_b16`` (gfx950, wave64)::

    l = 16*G + i  ->  source lane 16*G + i//4 + 4*r,  source element i % 4

so lane 0 gathers element 0 of lanes 0, 4, 8, 12 and lane 4 element 0 of lanes 1, 5, 9, 13:
with a 4x16 row-major tile (lanes 4k..4k+3 reading row k), lane i receives column i.

Sources, per row (``source``) and how far each is established (``confidence``):

* CDNA4 ISA guide, DS opcodes 224-227 ("read N bits per lane, interpret the data as a matrix
  of B-bit elements and transpose it") and section 11.4 (``ds_read_b64_tr_b16``: two
  instructions load a 16x16 operand, K=0..3 and 8..11 then 4..7 and 12..15; each lane holds 4
  consecutive M or N values) — the semantics, not the lane formula.
* Triton's AMD backend (``third_party/amd/lib/TritonAMDGPUToLLVM/MemoryOpToLLVM.cpp``, the
  ``ds_read_tr`` lowering: ``tile * identity(otherLanes, lane) * identity(tileSize, reg) *
  identity(missingLanes/otherLanes, lane)`` into (offset, addr), with otherLanes 4 for b16 and 2
  for b8 on CDNA4, and the gfx1250 "double contiguity" tile for b8) — the lane formula, run on
  MI350 hardware by Triton's test suite. Its 4-bit form follows from Triton's
  ``chooseDotDsReadB64TrLayout`` (lane i of a 16-lane group gathers nibble i of lanes 0..15),
  and LLVM's ds_read_tr documentation gives tr4 and tr6 the same K split (0-15, 32-47 then
  16-31, 48-63).
* Compiler truth (the ziglang clang 22 probe in ``tests/test_lds_tr_compile.py``): which
  targets accept which builtin, and the mnemonic each one becomes.

gfx12 (gfx1200/gfx1201) has no LDS transpose read: its ``global_load_tr_b64``/``_b128`` read
global memory, and clang refuses every ``ds_read_tr*``/``ds_load_tr*`` builtin there. gfx1250's
``ds_load_tr4_b64`` and ``ds_load_tr6_b96`` compile, but no source gives their lane map: the rows
say so (``lane_map_known`` False) and every user of the map refuses them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tilesim.errors import InstructionError, choices, did_you_mean
from tilesim.targets import feature_targets, get_target, has

__all__ = ["TransposeRead", "TRANSPOSE_READS", "transpose_read", "transpose_reads_for", "select_transpose_read"]

Basis = tuple[int, int]  # (source element, source lane) contributed by one index bit


@dataclass(frozen=True)
class TransposeRead:
    """One LDS transpose-read instruction and its lane map (see the module docstring)."""

    mnemonic: str  # as LLVM prints it
    aliases: tuple[str, ...]  # other assembler spellings
    feature: str  # the target feature that has it (LLVM: gfx950-insts / gfx1250-insts)
    wave: int
    elem_bits: int
    read_bits: int  # per lane
    group: int  # lanes that exchange elements
    lane_bases: tuple[Basis, ...] | None  # one per bit of the lane index; None: map not established
    elem_bases: tuple[Basis, ...] | None  # one per bit of the destination element index
    builtin: str  # clang builtin (ptr to LDS vector -> vector)
    vector: tuple[str, int]  # the builtin's element C type and count
    source: str
    confidence: str  # "high" | "medium" | "unknown"

    def __post_init__(self) -> None:
        if self.read_bits % self.elem_bits or self.read_bits % 32:
            raise ValueError(f"{self.mnemonic}: {self.read_bits} bits is not whole registers of {self.elem_bits}-bit "
                             "elements")
        if (self.lane_bases is None) != (self.elem_bases is None):
            raise ValueError(f"{self.mnemonic}: lane and element bases come together")
        if self.lane_bases is None:
            return
        if len(self.lane_bases) != self.wave.bit_length() - 1 or 1 << len(self.elem_bases) != self.elems:
            raise ValueError(f"{self.mnemonic}: {len(self.lane_bases)} lane bases for wave{self.wave}, "
                             f"{len(self.elem_bases)} element bases for {self.elems} elements")
        src_e, src_l = self.source_of(*np.meshgrid(np.arange(self.wave), np.arange(self.elems), indexing="ij"))
        if np.unique(src_l * self.elems + src_e).size != self.wave * self.elems:
            raise ValueError(f"{self.mnemonic}: the lane map is not a permutation of the group's elements")
        lanes = np.arange(self.wave)[:, None]
        if (src_l // self.group != lanes // self.group).any():
            raise ValueError(f"{self.mnemonic}: the lane map leaves its {self.group}-lane group")

    @property
    def elems(self) -> int:
        """Elements per lane."""
        return self.read_bits // self.elem_bits

    @property
    def registers(self) -> int:
        """Destination VGPRs per lane."""
        return self.read_bits // 32

    @property
    def align(self) -> int:
        """Byte alignment of each lane's address (LLVM's ds_read_tr documentation: the load size
        for b64, 12 bytes for b96; 16 for the 128-bit gfx1250 form)."""
        return self.read_bits // 8

    @property
    def lane_map_known(self) -> bool:
        return self.lane_bases is not None

    @property
    def targets(self) -> tuple[str, ...]:
        return feature_targets(self.feature)

    def source_of(self, lane: np.ndarray | int, elem: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        """(source element, source lane) for destination ``lane`` and element ``elem`` (arrays
        broadcast). Raises :class:`InstructionError` for a row whose lane map is not established."""
        if self.lane_bases is None or self.elem_bases is None:
            raise InstructionError(f"{self.mnemonic}: no source establishes its lane map (only that clang accepts it "
                                   f"on {', '.join(self.targets)}); tilesim refuses to model it")
        lane, elem = np.asarray(lane, np.int64), np.asarray(elem, np.int64)
        e = np.zeros(np.broadcast(lane, elem).shape, np.int64)
        s = np.zeros_like(e)
        for bits, bases in ((lane, self.lane_bases), (elem, self.elem_bases)):
            for k, (be, bl) in enumerate(bases):
                on = (bits >> k) & 1
                e ^= on * be
                s ^= on * bl
        return e, s

    def lane_table(self) -> np.ndarray:
        """``int64[wave, elems, 2]``: (source lane, source element) of every destination slot."""
        e, s = self.source_of(*np.meshgrid(np.arange(self.wave), np.arange(self.elems), indexing="ij"))
        return np.stack([s, e], -1)


def _bits(*values: int) -> tuple[Basis, ...]:
    return tuple((0, v) for v in values)


def _elems(*values: int) -> tuple[Basis, ...]:
    return tuple((v, 0) for v in values)


_TRITON = "Triton AMD MemoryOpToLLVM.cpp ds_read_tr lowering (fullTile)"
_CDNA4 = "CDNA4 ISA guide DS opcodes 224-227 and section 11.4"
_PTR3 = "LLVM ds_read_tr documentation (K split)"

_ROWS = (
    # gfx950, wave64, 16-lane groups: lane i = 16G + i gathers element i % E of lanes i//E + (16/E)*r
    TransposeRead("ds_read_b64_tr_b16", ("ds_read_tr16_b64",), "mfma_gfx950", 64, 16, 64, 16,
                  _elems(1, 2) + _bits(1, 2, 16, 32), _bits(4, 8),
                  "__builtin_amdgcn_ds_read_tr16_b64_v4i16", ("short", 4), f"{_CDNA4}; {_TRITON}", "high"),
    TransposeRead("ds_read_b64_tr_b8", ("ds_read_tr8_b64",), "mfma_gfx950", 64, 8, 64, 16,
                  _elems(1, 2, 4) + _bits(1, 16, 32), _bits(2, 4, 8),
                  "__builtin_amdgcn_ds_read_tr8_b64_v2i32", ("int", 2), f"{_CDNA4}; {_TRITON}", "high"),
    TransposeRead("ds_read_b64_tr_b4", ("ds_read_tr4_b64",), "mfma_gfx950", 64, 4, 64, 16,
                  _elems(1, 2, 4, 8) + _bits(16, 32), _bits(1, 2, 4, 8),
                  "__builtin_amdgcn_ds_read_tr4_b64_v2i32", ("int", 2),
                  f"{_CDNA4}; Triton chooseDotDsReadB64TrLayout; {_PTR3}", "medium"),
    TransposeRead("ds_read_b96_tr_b6", ("ds_read_tr6_b96",), "mfma_gfx950", 64, 6, 96, 16,
                  _elems(1, 2, 4, 8) + _bits(16, 32), _bits(1, 2, 4, 8),
                  "__builtin_amdgcn_ds_read_tr6_b96_v3i32", ("int", 3),
                  f"{_CDNA4}; {_PTR3} (same K split as tr4; the 16x16 transpose by analogy)", "medium"),
    # gfx1250, wave32: b16 is a plain 8x8 transpose in 8-lane groups; b8 uses 16-lane groups with the
    # 8-byte rows taken two lanes apart ("double contiguity"). No silicon check yet.
    TransposeRead("ds_load_tr16_b128", ("ds_load_b128_tr_b16",), "wmma_gfx1250", 32, 16, 128, 8,
                  _elems(1, 2, 4) + _bits(8, 16), _bits(1, 2, 4),
                  "__builtin_amdgcn_ds_load_tr16_b128_v8i16", ("short", 8), _TRITON + " (gfx1250, 8-lane groups)",
                  "medium"),
    TransposeRead("ds_load_tr8_b64", ("ds_load_b64_tr_b8",), "wmma_gfx1250", 32, 8, 64, 16,
                  _elems(1, 2, 4) + _bits(4, 16), _bits(1, 2, 8),
                  "__builtin_amdgcn_ds_load_tr8_b64_v2i32", ("int", 2), _TRITON + " (gfx1250 TileKind::DoubleContiguity)",
                  "medium"),
    TransposeRead("ds_load_tr4_b64", ("ds_load_b64_tr_b4",), "wmma_gfx1250", 32, 4, 64, 16, None, None,
                  "__builtin_amdgcn_ds_load_tr4_b64_v2i32", ("int", 2), "compiler only (clang 22 accepts it)",
                  "unknown"),
    TransposeRead("ds_load_tr6_b96", ("ds_load_b96_tr_b6",), "wmma_gfx1250", 32, 6, 96, 16, None, None,
                  "__builtin_amdgcn_ds_load_tr6_b96_v3i32", ("int", 3), "compiler only (clang 22 accepts it)",
                  "unknown"),
)

TRANSPOSE_READS: Mapping[str, TransposeRead] = {r.mnemonic: r for r in _ROWS}
_BY_SPELLING = {name: r for r in _ROWS for name in (r.mnemonic, *r.aliases)}


def transpose_read(name: str, target: str | None = None) -> TransposeRead:
    """The row for ``name`` (a mnemonic or alias); with ``target``, one that target has —
    otherwise :class:`InstructionError` naming the targets that have it."""
    row = _BY_SPELLING.get(str(name).strip().lower())
    if row is None:
        hint = did_you_mean(str(name), list(_BY_SPELLING)) or ""
        raise InstructionError(f"unknown LDS transpose read {str(name)[:60]!r};{hint} known: {choices(TRANSPOSE_READS)}")
    if target is not None and not has(target, row.feature):
        t = get_target(target).name
        raise InstructionError(f"{row.mnemonic} does not exist on {t}; targets that have it: "
                               f"{choices(row.targets)}" + _no_lds_tr(t))
    return row


def transpose_reads_for(target: str) -> tuple[TransposeRead, ...]:
    """Every transpose read ``target`` has (empty for a target without one)."""
    return tuple(r for r in _ROWS if has(target, r.feature))


def select_transpose_read(target: str, elem_bits: int) -> TransposeRead:
    """The transpose read ``target`` uses for ``elem_bits``-bit elements, whose lane map is known;
    :class:`InstructionError` names the targets and element sizes that have one."""
    t = get_target(target).name
    have = transpose_reads_for(t)
    for r in have:
        if r.elem_bits == elem_bits and r.lane_map_known:
            return r
    where = sorted({x for r in _ROWS if r.elem_bits == elem_bits and r.lane_map_known for x in r.targets})
    sizes = sorted({r.elem_bits for r in have if r.lane_map_known})
    raise InstructionError(f"no LDS transpose read of {elem_bits}-bit elements with a known lane map on {t}"
                           + (f" (it has {', '.join(f'{b}-bit' for b in sizes)})" if sizes else "")
                           + f"; targets with one: {choices(where) or 'none'}" + _no_lds_tr(t))


def _no_lds_tr(target: str) -> str:
    if has(target, "wmma_gfx12") and not has(target, "wmma_gfx1250"):
        return " (gfx12 has only global_load_tr_b64/_b128, which read global memory)"
    return ""
