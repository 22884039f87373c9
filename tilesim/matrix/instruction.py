"""``MatrixInstruction``: one catalog row, and everything derived from it.

A row is a frozen value. Its layouts come from :mod:`tilesim.matrix.geometry` recipes the row
carries per wave size; its numerics from :mod:`tilesim.matrix.numerics`; the simulator, the
code generator, the docs and the pictures all read the same row.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from tilesim.errors import ModifierError, choices
from tilesim.layouts.layout import Layout
from tilesim.matrix.dtypes import DType, dtype
from tilesim.matrix.geometry import BLGP_SOURCE, AccGeometry, FormatGeometry, InputGeometry, acc_layout, input_layout
from tilesim.matrix.scale import SCALE_OPERANDS, ScaleGeometry

__all__ = ["MatrixInstruction", "Modifier", "Builtin", "Immediate", "OPERANDS", "LAYOUT_MODIFIERS", "INSTRUCTION_KINDS"]

OPERANDS = ("A", "B", "C", "D", "K", *SCALE_OPERANDS)
# The kinds of matrix instruction; each is also the name of the target feature (tilesim.targets.FEATURES)
# of the targets that run it, so `has(target, row.kind)` says whether a target can run a row's kind.
INSTRUCTION_KINDS = ("mfma", "smfmac", "wmma", "swmmac", "mma_sync")

Geometry = InputGeometry | AccGeometry | FormatGeometry | ScaleGeometry
# An operand's recipe: a geometry with the element bits (AMD), or a function that builds the layout
# from the modifiers (NVIDIA fragments, written hardware -> logical as the PTX figures state them).
Recipe = tuple[Geometry, int] | Callable[..., Layout]


# The modifier fields that can move data between registers (the arguments of ``layout()``);
# ``neg``/``neg_hi`` act on values only. ``opsel_a``/``opsel_b`` pick the scale byte of SA/SB (gfx950).
# ``a_scale_fmt``/``b_scale_fmt`` (gfx1250 ``matrix_*_scale_fmt``) say how SA/SB's bytes decode: values only.
LAYOUT_MODIFIERS = ("cbsz", "abid", "blgp", "opsel", "opsel_a", "opsel_b")
SCALE_FORMAT_MODIFIERS = {"SA": "a_scale_fmt", "SB": "b_scale_fmt"}
MODIFIER_NAMES = (*LAYOUT_MODIFIERS, "neg", "neg_hi", *SCALE_FORMAT_MODIFIERS.values())

MODIFIER_KINDS = ("broadcast", "lane_pattern", "negate", "index_set", "half_select", "format", "signedness",
                  "scale_select", "scale_format")


@dataclass(frozen=True)
class Modifier:
    """A modifier field the instruction accepts, its legal raw values, and what it does.

    ``kind`` says how it acts: ``broadcast`` (CBSZ/ABID move A between blocks), ``lane_pattern``
    (BLGP moves B between lanes), ``index_set`` (which sparse-index set is read), ``half_select``
    (16-bit C/D in the high halves), ``format`` (gfx950 f8f6f4 element formats), ``negate`` and
    ``signedness`` (values only; the layout is unchanged), ``scale_select`` (which slot of the
    block-scale register SA/SB is read), ``scale_format`` (how SA/SB's bytes decode: the code
    indexes :attr:`ScaleGeometry.formats`; values only).
    """

    name: str  # one of MODIFIER_NAMES
    values: tuple[int, ...]
    effect: str
    kind: str = "negate"

    def __post_init__(self) -> None:
        if self.kind not in MODIFIER_KINDS:
            raise ValueError(f"modifier kind {self.kind!r}; valid: {MODIFIER_KINDS}")


@dataclass(frozen=True)
class Immediate:
    """One immediate argument of a builtin, and the modifier bits that feed it.

    ``modifier`` names the op modifier field, ``shift``/``bits`` the bits of it this immediate
    takes (RDNA iu8 ``a_signed`` is NEG bit 0). ``modifier=None``: the immediate is always 0
    (clamp, reuse hints, fields tilesim does not model).
    """

    name: str
    modifier: str | None = None
    shift: int = 0
    bits: int = 32

    def value(self, modifiers: Mapping[str, int]) -> int:
        if self.modifier is None:
            return 0
        return (int(modifiers.get(self.modifier, 0)) >> self.shift) & ((1 << self.bits) - 1)

    def mask(self) -> int:
        """The bits of its modifier this immediate carries."""
        return 0 if self.modifier is None else ((1 << self.bits) - 1) << self.shift


@dataclass(frozen=True)
class Builtin:
    """The compiler builtin that emits the instruction: C types, and which modifier feeds which immediate."""

    name: str
    ret: str
    args: tuple[str, ...]  # C types of the arguments in order; immediates are spelled "imm:<name>"
    wave: int
    immediates: tuple[Immediate, ...] = ()  # one per "imm:<name>" argument, in order

    def __post_init__(self) -> None:
        named = tuple(t[4:] for t in self.args if t.startswith("imm:"))
        if named != tuple(i.name for i in self.immediates):
            raise ValueError(f"{self.name}: immediates {named} but {tuple(i.name for i in self.immediates)} described")

    @property
    def operand_types(self) -> tuple[str, ...]:
        """C types of the non-immediate arguments (the operands), in order."""
        return tuple(t for t in self.args if not t.startswith("imm:"))

    def unfed(self, modifiers: Mapping[str, int]) -> list[str]:
        """``name=value`` of each modifier with set bits that no immediate of this builtin carries:
        emitting the call would silently drop them."""
        out = []
        for name, value in modifiers.items():
            carried = 0
            for imm in self.immediates:
                if imm.modifier == name:
                    carried |= imm.mask()
            if int(value) & ~carried:
                out.append(f"{name}={value}")
        return out

    def call(self, operands: Sequence[str], modifiers: Mapping[str, int] | None = None) -> str:
        """The C call: ``operands`` are the expressions of the non-immediate arguments in order; each
        immediate is the value its modifier bits give (0 without modifiers)."""
        if len(operands) != len(self.operand_types):
            raise ModifierError(f"{self.name} takes {len(self.operand_types)} operands "
                                f"({', '.join(self.operand_types)}), got {len(operands)}")
        mods = modifiers or {}
        ops, imms = iter(operands), iter(self.immediates)
        out = [str(next(imms).value(mods)) if t.startswith("imm:") else next(ops) for t in self.args]
        return f"{self.name}({', '.join(out)})"


@dataclass(frozen=True)
class MatrixInstruction:
    """One instruction on one architecture family.

    ``layout(operand, wave_size=..., cbsz=..., abid=..., blgp=..., opsel=...)`` gives the exact
    hardware layout the instruction reads (A, B, C, K) or writes (D).
    """

    mnemonic: str
    kind: str  # one of INSTRUCTION_KINDS
    family: str  # cdna1 … cdna4, rdna3, rdna4, gfx1250, sm80 …
    targets: tuple[str, ...]
    m: int
    n: int
    k: int
    blocks: int
    types: tuple[str, str, str, str]  # A, B, C, D element types
    wave_sizes: tuple[int, ...]
    geometry: tuple[tuple[int, tuple[tuple[str, Recipe], ...]], ...]  # wave -> operand -> recipe
    registers: tuple[tuple[int, tuple[tuple[str, int], ...]], ...]  # wave -> operand -> VGPRs/lane
    cycles: int | None
    modifiers: tuple[Modifier, ...]
    builtins: tuple[Builtin, ...]
    citation: str
    aliases: tuple[str, ...] = ()
    sparse: bool = False
    notes: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.kind not in INSTRUCTION_KINDS:
            raise ValueError(f"{self.mnemonic}: instruction kind {self.kind!r}; valid: {INSTRUCTION_KINDS}")

    # ------------------------------------------------------------------ descriptive
    def __str__(self) -> str:
        return self.mnemonic

    @property
    def spellings(self) -> tuple[str, ...]:
        return (self.mnemonic, *self.aliases)

    @property
    def dtypes(self) -> tuple[DType, DType, DType, DType]:
        a, b, c, d = (dtype(t) for t in self.types)
        return a, b, c, d

    @property
    def flops(self) -> int:
        """Multiply-adds count as two operations (the ISA guides' convention)."""
        return 2 * self.m * self.n * self.k * self.blocks

    @property
    def operands(self) -> tuple[str, ...]:
        return (*(("A", "B", "C", "D", "K") if self.sparse else ("A", "B", "C", "D")), *self.scale_operands)

    @property
    def scale_operands(self) -> tuple[str, ...]:
        """The block-scale operands (``SA``, ``SB``) of a scaled row; empty otherwise."""
        return tuple(op for op, r in dict(self.geometry)[self.wave_sizes[0]]
                     if not callable(r) and isinstance(r[0], ScaleGeometry))

    def scale(self, operand: str, wave_size: int | None = None) -> ScaleGeometry:
        """The :class:`ScaleGeometry` of ``SA`` or ``SB``."""
        rec = self.recipe(operand, wave_size) if operand in self.scale_operands else None
        if not isinstance(rec, ScaleGeometry):
            raise ModifierError(f"{self.mnemonic} has no block-scale operand {operand!r}; scale operands: "
                                f"{choices(self.scale_operands) or 'none'}")
        return rec

    def modifier(self, name: str) -> Modifier | None:
        return next((m for m in self.modifiers if m.name == name), None)

    def registers_for(self, wave_size: int | None = None) -> dict[str, int]:
        wave = self._wave(wave_size)
        return dict(dict(self.registers)[wave])

    def builtin_for(self, wave_size: int | None = None) -> Builtin | None:
        wave = self._wave(wave_size)
        return next((b for b in self.builtins if b.wave == wave), None)

    # ------------------------------------------------------------------ validation
    def _wave(self, wave_size: int | None) -> int:
        if wave_size is None:
            return self.wave_sizes[0]
        if wave_size not in self.wave_sizes:
            raise ModifierError(
                f"{self.mnemonic} ({self.family}) has no wave{wave_size} form; wave sizes: {choices(self.wave_sizes)}"
            )
        return wave_size

    def _check_mods(self, operand: str, cbsz: int, abid: int, blgp: int, opsel: int, opsel_a: int = 0,
                    opsel_b: int = 0) -> None:
        given = {"cbsz": cbsz, "abid": abid, "blgp": blgp, "opsel": opsel, "opsel_a": opsel_a, "opsel_b": opsel_b}
        for name, value in given.items():
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                raise ModifierError(f"{name} must be an integer, got {value!r}")
            mod = self.modifier(name)
            if mod is None:
                if value != 0:
                    have = [m.name for m in self.modifiers] or ["none"]
                    raise ModifierError(
                        f"{name}={value}: {self.mnemonic} ({self.family}) has no {name.upper()} modifier; "
                        f"its modifiers: {choices(have)}"
                    )
            elif value not in mod.values:
                raise ModifierError(f"{name}={value} is not legal for {self.mnemonic}; legal: {choices(mod.values)}")
        ab = self.modifier("abid")
        if ab is not None and ab.kind == "broadcast" and abid >= (1 << cbsz):
            raise ModifierError(f"abid={abid} needs abid < 2**CBSZ = {1 << cbsz} for {self.mnemonic} (cbsz={cbsz})")

    # ------------------------------------------------------------------ layouts
    def layout(
        self,
        operand: str,
        *,
        wave_size: int | None = None,
        cbsz: int = 0,
        abid: int = 0,
        blgp: int = 0,
        opsel: int = 0,
        opsel_a: int = 0,
        opsel_b: int = 0,
    ) -> Layout:
        """The hardware layout of ``operand`` ("A", "B", "C", "D"; "K" for sparse indices; "SA"/"SB"
        for the block scales of a scaled row, whose byte ``opsel_a``/``opsel_b`` select)."""
        op = operand.upper() if isinstance(operand, str) else operand
        if op not in self.operands:
            raise ModifierError(f"unknown operand {operand!r} for {self.mnemonic}; operands: {choices(self.operands)}")
        wave = self._wave(wave_size)
        self._check_mods(op, cbsz, abid, blgp, opsel, opsel_a, opsel_b)
        return _layout_cached(self, op, wave, cbsz, abid, blgp, opsel, opsel_a, opsel_b)

    def operand_layouts(self, wave_size: int | None, modifiers: Mapping[str, int]) -> dict[str, Layout]:
        """The layout of every operand (A, B, C read, D written; K for sparse rows) under an op's
        modifiers: the layout-moving ones (:data:`LAYOUT_MODIFIERS`) are applied, value-only ones
        (``neg``/``neg_hi``) are left to the numerics. The simulator and the fused loop both read this."""
        unknown = sorted(set(modifiers) - set(MODIFIER_NAMES))
        if unknown:
            raise ModifierError(f"unknown modifier {unknown[0]!r} on {self.mnemonic}; modifiers: {choices(MODIFIER_NAMES)}")
        moving = {k: v for k, v in modifiers.items() if k in LAYOUT_MODIFIERS}
        return {op: self.layout(op, wave_size=wave_size, **moving) for op in self.operands}

    def recipe(self, operand: str, wave_size: int | None = None) -> Geometry | None:
        """The geometry recipe of ``operand`` (AMD rows); None where the row carries a fragment
        function instead (NVIDIA)."""
        entry = dict(dict(self.geometry)[self._wave(wave_size)])[operand]
        return None if callable(entry) else entry[0]


def _kind(ins: MatrixInstruction, name: str) -> str | None:
    m = ins.modifier(name)
    return None if m is None else m.kind


def _index_sets(ins: MatrixInstruction, units: int, field: str, value: int, wave: int) -> int:
    """Sparse index VGPR: 32 bits hold 32 // (4*units) sets; ``value`` picks one."""
    sets = 8 // units
    if value >= sets:
        raise ModifierError(
            f"{field}={value}: {ins.mnemonic} in wave{wave} has {sets} index set(s) per VGPR; legal: "
            f"{choices(range(sets))}"
        )
    return value * units


@functools.lru_cache(maxsize=8192)
def _layout_cached(ins: MatrixInstruction, op: str, wave: int, cbsz: int, abid: int, blgp: int, opsel: int,
                   opsel_a: int = 0, opsel_b: int = 0) -> Layout:
    geo = dict(dict(ins.geometry)[wave])
    entry = geo[op]
    if callable(entry):  # NVIDIA fragments are written hardware -> logical
        return entry(cbsz=cbsz, abid=abid, blgp=blgp, opsel=opsel)
    recipe, bits = entry
    if isinstance(recipe, ScaleGeometry):  # block scales: the select modifier picks the slot (byte)
        sel = {"opsel_a": opsel_a, "opsel_b": opsel_b}[recipe.select]
        return recipe.layout(ins.m if op == "SA" else ins.n, ins.k, sel)
    if isinstance(recipe, FormatGeometry):  # gfx950: CBSZ (A) / BLGP (B) pick the element format
        geo_fmt, bits = recipe.geometry(cbsz if recipe.modifier == "cbsz" else blgp)
        return input_layout(geo_fmt, ins.m, ins.k, 1, bits, transpose=(op == "B"))
    if isinstance(recipe, InputGeometry):
        lane_source = block_source = None
        if op == "A" and cbsz and _kind(ins, "cbsz") == "broadcast":
            group = 1 << cbsz  # CBSZ/ABID: each group of 2**CBSZ blocks reads block ABID of the group
            block_source = lambda b: (b // group) * group + abid  # noqa: E731
        if op == "B" and blgp and _kind(ins, "blgp") == "lane_pattern":
            lane_source = BLGP_SOURCE[blgp]
        if op == "K":
            units = geo["A"][0].slots
            if _kind(ins, "abid") == "index_set" and not cbsz:  # SMFMAC: ABID picks the set when CBSZ = 0
                recipe = replace(recipe, slot_shift=_index_sets(ins, units, "abid", abid, wave))
            if _kind(ins, "opsel") == "index_set":  # SWMMAC: OPSEL (index_key) picks the set
                recipe = replace(recipe, slot_shift=_index_sets(ins, units, "opsel", opsel, wave))
        return input_layout(recipe, ins.m if op in ("A", "K") else ins.n, ins.k, ins.blocks, bits,
                            transpose=(op == "B"), lane_source=lane_source, block_source=block_source)
    if isinstance(recipe, AccGeometry):
        if opsel & 4 and _kind(ins, "opsel") == "half_select":
            recipe = replace(recipe, slot_offset=1)  # OPSEL[2]: 16-bit C/D in the high halves (RDNA3)
        return acc_layout(recipe, ins.m, ins.n, ins.blocks, bits)
    raise TypeError(f"bad recipe for {ins.mnemonic} {op}: {recipe!r}")
