"""Block-scale operands of scaled matrix instructions, as first-class operand layouts.

A scaled instruction computes ``D = (A ∘ SA) · (B ∘ SB) + C``: every ``block`` consecutive k of a
row of A share one scale, and so do every ``block`` k of a column of B. The scales are their own
operands with their own layouts:

* ``SA`` maps hardware (lane, slot) to logical ``(row = i, col = kb)`` — the scale of
  ``A[i][kb*block : (kb+1)*block]``;
* ``SB`` maps hardware (lane, slot) to logical ``(row = kb, col = j)`` — the scale of
  ``B[kb*block : (kb+1)*block][j]``.

A slot is one scale element (a byte for E8M0/E4M3) of the lane's scale register (32 or 64 bits).
Placement reuses :class:`~tilesim.matrix.geometry.InputGeometry` over the k-block index: the
outer index ``r`` (i or j) picks the lane inside a lane group, the k-block ``kb`` is cut into
chunks over the lane groups, and a *select* modifier adds a slot offset (which byte of the
register the instruction reads)::

    lane = r + rows * (kb % groups) + copy + select * select_lanes,
    slot = (kb // groups) + select * select_stride

gfx950 ``v_mfma_scale_f32_16x16x128_f8f6f4``: rows 16, groups 4 → scale (i, kb) in lane
``i + 16*kb``, byte ``opsel_a`` of the scale VGPR; ``32x32x64``: lane ``i + 32*kb``. Sources and
confidence per fact: docs/catalog.md ("gfx950 block scales").

E8M0 (OCP Microscaling Formats v1.0 §5.4.1): 8 exponent bits, no sign, no mantissa, bias 127;
pattern ``e`` is ``2**(e - 127)`` — so ``0x00`` is ``2**-127``, not zero — and ``0xFF`` is NaN.
gfx1250's scaled WMMA also reads E5M3 and E4M3 scales (``matrix_*_scale_fmt`` 1 and 2, LLVM's
``MATRIX_SCALE_FMT_E5M3``/``_E4M3``): E5M3 is unsigned, 5 exponent bits (bias 15), 3 mantissa bits,
subnormals, ``0xFF`` NaN, no infinity (AMD rocjitsu ``fp8_e5m3_to_f32``); E4M3 is OCP FP8 E4M3 (bias
7, ``S.1111.111`` NaN, no infinity). :func:`decode_scale` decodes all three at the bit level
(ml_dtypes' ``float8_e8m0fnu`` is only a cross-check in the tests).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tilesim.errors import ModifierError, choices
from tilesim.layouts.layout import Layout
from tilesim.matrix.geometry import InputGeometry, input_layout

__all__ = ["ScaleGeometry", "SCALE_OPERANDS", "SCALE_FORMATS", "SCALE_DTYPES", "SCALE_SELECTS", "decode_scale", "mx_scales"]

SCALE_OPERANDS = ("SA", "SB")  # SA scales A (logical: row i, col k-block), SB scales B (row k-block, col j)
SCALE_SELECTS = ("opsel_a", "opsel_b")  # the modifier fields that pick the slot group of SA / SB
SCALE_FORMATS = {"e8m0": 8, "e5m3": 8, "e4m3": 8}  # scale element formats and their bits
# The tensor element types a program may hold each scale format in: the format's own dtype (a load
# encodes values into its bits), or u8 (the raw scale bytes, for every format; E5M3 has no dtype).
SCALE_DTYPES = {"e8m0": ("e8m0", "u8"), "e5m3": ("u8",), "e4m3": ("fp8_ocp", "u8")}


@dataclass(frozen=True)
class ScaleGeometry:
    """Where a scaled instruction reads the block scales of A (``SA``) or B (``SB``).

    ``place`` is an :class:`InputGeometry` over the k-block index (``slots`` = scale elements per
    lane = ``reg_bits // bits``); ``select`` names the modifier that picks which slot group is read
    (gfx950: the byte, ``opsel_a``/``opsel_b``), legal values ``select_values``, each moving the
    read ``select_stride`` slots. ``formats`` lists the scale formats an instruction field selects,
    by code (gfx1250 ``matrix_*_scale_fmt``: 0 E8M0, 1 E5M3, 2 E4M3); empty: ``fmt`` is fixed.
    """

    operand: str  # "SA" | "SB"
    block: int  # k elements per scale (32: OCP MX; 16: gfx1250 SCALE16)
    fmt: str  # scale element format: "e8m0" | "e4m3"
    place: InputGeometry
    reg_bits: int  # 32 (one VGPR) or 64 (a VGPR pair)
    select: str  # modifier field: "opsel_a" | "opsel_b"
    select_values: tuple[int, ...]
    select_stride: int = 1
    select_lanes: int = 0  # lanes the select moves the read (gfx1250 matrix_*_scale ROW1: 16)
    formats: tuple[str, ...] = ()  # scale formats by the format field's code; () = fmt only

    def __post_init__(self) -> None:
        if self.operand not in SCALE_OPERANDS:
            raise ValueError(f"scale operand {self.operand!r}; valid: {SCALE_OPERANDS}")
        if self.fmt not in SCALE_FORMATS:
            raise ValueError(f"scale format {self.fmt!r}; valid: {tuple(SCALE_FORMATS)}")
        if self.reg_bits not in (32, 64) or self.place.slots * self.bits != self.reg_bits:
            raise ValueError(f"{self.operand}: {self.place.slots} slots of {self.bits} bits do not fill a "
                             f"{self.reg_bits}-bit scale register")
        if self.select not in SCALE_SELECTS or self.block < 1:
            raise ValueError(f"scale select {self.select!r} (valid: {SCALE_SELECTS}), block {self.block}")
        if self.formats and (self.fmt not in self.formats or any(f not in SCALE_FORMATS for f in self.formats)):
            raise ValueError(f"scale formats {self.formats}: must hold {self.fmt!r}, each one of "
                             f"{tuple(SCALE_FORMATS)}")

    def in_format(self, code: int) -> ScaleGeometry:
        """The geometry with the scale format the format field's ``code`` selects (the placement is
        the same for every format: one byte per scale)."""
        legal = tuple(range(len(self.formats))) or (0,)
        if code not in legal:
            names = ", ".join(f"{c} {f}" for c, f in enumerate(self.formats or (self.fmt,)))
            raise ModifierError(f"{self.operand} scale format {code} is not legal; legal: {names}")
        return replace(self, fmt=self.formats[code]) if self.formats else self

    def code_of(self, name: str) -> int:
        """The format field's code for the scale format ``name`` ("e8m0", "e5m3", "e4m3")."""
        have = self.formats or (self.fmt,)
        if name not in have:
            names = ", ".join(f"{f!r}" for f in have)
            raise ModifierError(f"{self.operand} scale format {name!r} is not legal here; legal: {names}")
        return have.index(name)

    @property
    def bits(self) -> int:
        return SCALE_FORMATS[self.fmt]

    @property
    def registers(self) -> int:
        """32-bit registers per lane the scale operand takes."""
        return self.reg_bits // 32

    def blocks_of(self, k: int) -> int:
        """Scales along k for an instruction of depth ``k``."""
        if k % self.block:
            raise ModifierError(f"K={k} is not a multiple of the scale block {self.block}")
        return k // self.block

    def layout(self, outer: int, k: int, sel: int) -> Layout:
        """The operand's layout for ``outer`` rows (M for SA, N for SB), depth ``k`` and select value ``sel``."""
        if sel not in self.select_values:
            raise ModifierError(f"{self.select}={sel} is not legal; legal: {choices(self.select_values)}")
        geo = replace(self.place, slot_shift=self.place.slot_shift + sel * self.select_stride,
                      copies=tuple(c + sel * self.select_lanes for c in self.place.copies))
        return input_layout(geo, outer, self.blocks_of(k), 1, self.bits, transpose=self.operand == "SB")


def mx_scales(m: int, n: int, k: int, *, lanes: int = 64, block: int = 32) -> tuple[ScaleGeometry, ScaleGeometry]:
    """gfx950 ``v_mfma_scale_*_f8f6f4``: one E8M0 byte per lane, lane = r + rows*kb, byte = OPSEL.

    Sources: Triton ``chooseScaledMfmaScaleLayout`` (lane bases: row bits, then k-block bits);
    Modular's CDNA4 ``BlockScaledMmaOp`` ("lane_row = lane % 16, lane_k_group = lane / 16");
    the byte select is the builtin's ``opsel_a``/``opsel_b`` (clang emits op_sel[i] = bit 0,
    op_sel_hi[i] = bit 1; MLIR ``amdgpu.scaled_mfma`` passes the vector<4xi8> element index).
    """
    out = []
    for op, rows, sel in (("SA", m, "opsel_a"), ("SB", n, "opsel_b")):
        groups = k // block
        if rows * groups != lanes:
            raise ValueError(f"{op}: {rows} rows x {groups} k-blocks do not fill {lanes} lanes")
        out.append(ScaleGeometry(op, block, "e8m0", InputGeometry(rows, groups, 1, lanes, 4), 32, sel, (0, 1, 2, 3)))
    return out[0], out[1]


def decode_scale(bits: np.ndarray, fmt: str = "e8m0") -> np.ndarray:
    """Scale bit patterns -> float64 factors, from the format's bits (not ml_dtypes).

    E8M0 (OCP MX v1.0 §5.4.1): ``2**(e - 127)``; ``0xFF`` NaN; ``0x00`` is ``2**-127`` (exact in float64).
    E5M3 (unsigned): ``2**(e - 15) * (1 + m/8)``, ``e = 0``: ``m * 2**-17``; ``0xFF`` NaN.
    E4M3 (OCP FP8): sign, ``2**(e - 7) * (1 + m/8)``, ``e = 0``: ``m * 2**-9``; ``S.1111.111`` NaN.
    """
    v = np.asarray(bits, np.int64)
    if fmt not in SCALE_FORMATS:
        raise ModifierError(f"scale format {fmt!r} is not a scale format; valid: {choices(tuple(SCALE_FORMATS))}")
    if ((v < 0) | (v > 255)).any():
        raise ModifierError(f"{fmt.upper()} scale patterns are bytes 0..255")
    if fmt == "e8m0":
        return np.where(v == 255, np.nan, np.ldexp(1.0, (v - 127).astype(np.int32)))
    ebits, bias = (5, 15) if fmt == "e5m3" else (4, 7)
    e, m = (v >> 3) & ((1 << ebits) - 1), v & 7
    mag = np.where(e == 0, np.ldexp(m.astype(np.float64), 1 - bias - 3),
                   np.ldexp(1.0 + m / 8.0, (e - bias).astype(np.int32)))
    if fmt == "e5m3":
        return np.where(v == 0xFF, np.nan, mag)
    return np.where((v & 0x7F) == 0x7F, np.nan, np.where(v & 0x80, -mag, mag))
