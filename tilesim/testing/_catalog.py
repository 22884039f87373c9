"""Strategies over the real tables: targets, catalog rows, and the operand layouts they give.

Everything drawn here is a value the library itself hands out (a :class:`Target` row, a
:class:`MatrixInstruction` row, ``row.layout(...)``), so a property that holds for every draw
holds for the catalog. Draws shrink towards the first rows of the tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from tilesim.errors import InstructionError, ModifierError, TargetError, choices
from tilesim.targets import TARGETS, Target, get_target, has
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import rows
from tilesim.matrix.instruction import INSTRUCTION_KINDS, LAYOUT_MODIFIERS, OPERANDS, MatrixInstruction

__all__ = ["InstructionOnTarget", "OperandLayout", "instruction_targets", "instructions", "operand_layouts", "targets"]

VENDORS = tuple(dict.fromkeys(t.vendor for t in TARGETS.values()))  # from the target table
KINDS = INSTRUCTION_KINDS


class InstructionOnTarget(NamedTuple):
    """A catalog row placed on one target that has it, at a wave size both support."""

    instruction: MatrixInstruction
    target: Target
    wave_size: int

    def __repr__(self) -> str:  # hypothesis prints failing examples: the row's mnemonic, not its whole table
        return f"InstructionOnTarget({self.instruction.mnemonic} on {self.target.name}, wave{self.wave_size})"


class OperandLayout(NamedTuple):
    """One catalog layout and where it came from: ``layout == instruction.layout(operand,
    wave_size=wave_size, **modifiers)``."""

    instruction: MatrixInstruction
    target: Target
    wave_size: int
    operand: str
    modifiers: dict[str, int]
    layout: Layout

    def __repr__(self) -> str:
        mods = "".join(f", {k}={v}" for k, v in self.modifiers.items())
        return (f"OperandLayout({self.instruction.mnemonic} on {self.target.name}, wave{self.wave_size}, "
                f"operand {self.operand}{mods}: {self.layout!r})")


def _names(value: str | Iterable[str] | None, what: str, valid: Iterable[str] | None = None) -> tuple[str, ...] | None:
    if value is None:
        return None
    vals = (value,) if isinstance(value, str) else tuple(value)
    if not vals:
        raise InvalidArgument(f"{what} must name at least one value")
    if valid is not None:
        bad = [v for v in vals if v not in valid]
        if bad:
            raise InvalidArgument(f"{what} {bad[0]!r} is not one of: {choices(valid)}")
    return vals


def _arches(arch: str | Target | Iterable[str | Target] | None) -> tuple[str, ...] | None:
    if arch is None:
        return None
    items = (arch,) if isinstance(arch, (str, Target)) else tuple(arch)
    return tuple(get_target(a).name for a in items)  # TargetError lists the known names


def targets(vendor: str | None = None, feature: str | Iterable[str] | None = None) -> st.SearchStrategy[Target]:
    """Rows of the target table (:class:`~tilesim.targets.Target` values).

    ``vendor`` is ``"amd"`` or ``"nvidia"``; ``feature`` is one feature name or several, all of
    which the target must have (``has(target, f)``; an unknown name raises ``TargetError``).
    """
    if vendor is not None and vendor not in VENDORS:
        raise InvalidArgument(f"vendor {vendor!r} is not one of: {choices(VENDORS)}")
    feats = _names(feature, "feature") or ()
    for f in feats:
        has("gfx942", f)  # validates the name
    picked = [t for t in TARGETS.values()
              if (vendor is None or t.vendor == vendor) and all(has(t, f) for f in feats)]
    if not picked:
        raise TargetError(f"no target is {vendor or 'any vendor'} with features {list(feats)}")
    return st.sampled_from(picked)


def _placements(arch: str | Target | Iterable[str | Target] | None, kind: str | Iterable[str] | None,
                wave_size: int | None, sparse: bool | None, blocks: int | None) -> list[InstructionOnTarget]:
    arches, kinds = _arches(arch), _names(kind, "kind", KINDS)
    out = []
    for row in rows():
        if (kinds is not None and row.kind not in kinds) or (sparse is not None and row.sparse != sparse) \
                or (blocks is not None and row.blocks != blocks):
            continue
        for name in row.targets:
            t = TARGETS[name]
            if arches is not None and name not in arches:
                continue
            for w in row.wave_sizes:
                if w in t.wave_sizes and (wave_size is None or w == wave_size):
                    out.append(InstructionOnTarget(row, t, w))
    if not out:
        raise InstructionError(f"no catalog instruction matches arch={arch!r}, kind={kind!r}, wave_size={wave_size!r}, "
                               f"sparse={sparse!r}, blocks={blocks!r}")
    return out


def instructions(arch: str | Target | Iterable[str | Target] | None = None, kind: str | Iterable[str] | None = None,
                 *, sparse: bool | None = None, blocks: int | None = None) -> st.SearchStrategy[MatrixInstruction]:
    """Catalog rows (:class:`~tilesim.matrix.MatrixInstruction`), each drawn once per row.

    ``arch`` keeps rows that some listed target has (names or aliases; one or several);
    ``kind`` is ``mfma``, ``smfmac``, ``wmma``, ``swmmac`` or ``mma_sync`` (one or several);
    ``sparse`` and ``blocks`` filter on the row's fields. For the row *and* a target and wave
    size to use it on, draw from :func:`instruction_targets`.
    """
    seen: dict[int, MatrixInstruction] = {}
    for p in _placements(arch, kind, None, sparse, blocks):
        seen.setdefault(id(p.instruction), p.instruction)
    return st.sampled_from(list(seen.values()))


def instruction_targets(arch: str | Target | Iterable[str | Target] | None = None,
                        kind: str | Iterable[str] | None = None, *, wave_size: int | None = None,
                        sparse: bool | None = None, blocks: int | None = None) -> st.SearchStrategy[InstructionOnTarget]:
    """``InstructionOnTarget(instruction, target, wave_size)`` triples: every (row, target, wave)
    the catalog allows — the target is one of ``row.targets`` and the wave size one both support.

    Filters as :func:`instructions`, plus ``wave_size``.
    """
    return st.sampled_from(_placements(arch, kind, wave_size, sparse, blocks))


def _modifier_values(draw: st.DrawFn, row: MatrixInstruction) -> dict[str, int]:
    mods: dict[str, int] = {}
    for name in LAYOUT_MODIFIERS:
        m = row.modifier(name)
        if m is None:
            continue
        vals = m.values
        if name == "abid" and m.kind == "broadcast":  # CBSZ/ABID: ABID picks a block inside a group of 2**CBSZ
            vals = tuple(v for v in vals if v < (1 << mods.get("cbsz", 0)))
        mods[name] = draw(st.sampled_from(vals))
    return mods


def operand_layouts(arch: str | Target | Iterable[str | Target] | None = None, operand: str | Iterable[str] | None = None,
                    wave_size: int | None = None, modifiers: bool = False, *,
                    kind: str | Iterable[str] | None = None) -> st.SearchStrategy[OperandLayout]:
    """Catalog operand layouts, as :class:`OperandLayout` records (``.layout`` is the Layout).

    ``operand`` is one of A, B, C, D, K (K: sparse index operand) or several. With
    ``modifiers=True`` the layout-changing modifiers the row has (CBSZ, ABID, BLGP, OPSEL) are
    drawn from the row's :class:`~tilesim.matrix.Modifier` values (ABID below 2**CBSZ where CBSZ
    broadcasts); ``record.modifiers`` is what was passed to ``row.layout``. Otherwise every
    modifier is 0.
    """
    ops = _names(operand, "operand", OPERANDS)
    places = [p for p in _placements(arch, kind, wave_size, None, None)
              if ops is None or set(ops) & set(p.instruction.operands)]
    if not places:
        raise InstructionError(f"no catalog instruction has operand {operand!r} for arch={arch!r}, kind={kind!r}")

    @st.composite
    def draw_one(draw: st.DrawFn) -> OperandLayout:
        row, target, wave = draw(st.sampled_from(places))
        op = draw(st.sampled_from([o for o in row.operands if ops is None or o in ops]))
        mods = _modifier_values(draw, row) if modifiers else {}
        try:
            lay = row.layout(op, wave_size=wave, **mods)
        except ModifierError:  # the one combination rule not in the Modifier rows: sparse index sets per VGPR
            reject()
        return OperandLayout(row, target, wave, op, mods, lay)

    return draw_one()
