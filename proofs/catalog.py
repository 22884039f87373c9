"""Proof obligations over every catalog layout, exhaustive over the finite lane/slot domain.

For every row, operand, wave size and legal layout-moving modifier value:

1. **coverage** — every logical element of the operand has an owner;
2. **replication as declared** — every element has exactly the number of copies the row's
   recipe declares (RDNA3 A/B: one per 16-lane group; everything else: one), and no hardware
   slot holds two elements unless a modifier broadcasts or the operand is a sparse 4-group;
3. **forward = inverse** — the inverse lists exactly the owners of each element, and both the
   hardware->logical and the logical->hardware index expressions (what a code generator emits)
   evaluate to the table on every lane and slot;
4. **register counts** — the layout spans exactly the VGPRs per lane the row declares, and its
   last register is used.

Each obligation returns a list of failure strings (empty = proved). ``python -m proofs`` runs
them all and prints a report.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from tilesim.layouts.expr import expressions
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import rows
from tilesim.matrix.explain import primary_copy
from tilesim.matrix.geometry import FormatGeometry, InputGeometry
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.matrix.scale import ScaleGeometry

__all__ = ["Case", "cases", "prove", "OBLIGATIONS"]

# which modifier kinds move which operand's data
_MOVES = {"A": ("broadcast", "format"), "B": ("lane_pattern", "format"), "C": ("half_select",),
          "D": ("half_select",), "K": ("index_set",), "SA": ("scale_select",), "SB": ("scale_select",)}


@dataclass(frozen=True)
class Case:
    row: MatrixInstruction
    op: str
    wave: int
    mods: tuple[tuple[str, int], ...]

    @property
    def name(self) -> str:
        m = ",".join(f"{k}={v}" for k, v in self.mods if v)
        return f"{self.row.family}:{self.row.mnemonic}:{self.op}:w{self.wave}" + (f":{m}" if m else "")

    def layout(self) -> Layout:
        return self.row.layout(self.op, wave_size=self.wave, **dict(self.mods))


def _mod_combos(row: MatrixInstruction, op: str, wave: int) -> Iterator[dict[str, int]]:
    moving = {m.name: m for m in row.modifiers if m.kind in _MOVES[op]
              and (op not in row.scale_operands or m.name == row.scale(op, wave).select)}  # SA: opsel_a only
    names = sorted(moving)
    for values in itertools.product(*(moving[n].values for n in names)):
        mods = dict(zip(names, values))
        try:
            row.layout(op, wave_size=wave, **mods)
        except Exception:  # an illegal combination (e.g. ABID >= 2**CBSZ): the API rejects it
            continue
        yield mods


def cases(full: bool = True) -> Iterator[Case]:
    """Every (row, operand, wave, legal modifier combination); ``full=False``: default modifiers only."""
    for row in rows():
        for wave in row.wave_sizes:
            for op in row.operands:
                combos = list(_mod_combos(row, op, wave)) if full else [{}]
                seen = set()
                for mods in combos or [{}]:
                    key = tuple(sorted(mods.items()))
                    if key not in seen:
                        seen.add(key)
                        yield Case(row, op, wave, key)


def _declared_copies(case: Case) -> int:
    entry = dict(dict(case.row.geometry)[case.wave])[case.op]
    recipe = entry[0] if isinstance(entry, tuple) else None
    if isinstance(recipe, ScaleGeometry):  # block scales: placed by their own InputGeometry over k-blocks
        recipe = recipe.place
    return len(recipe.copies) if isinstance(recipe, InputGeometry) else 1


def _unit(case: Case) -> int:
    entry = dict(dict(case.row.geometry)[case.wave])[case.op]
    recipe = entry[0] if isinstance(entry, tuple) else None
    return recipe.unit if isinstance(recipe, InputGeometry) else 1


def coverage(case: Case, lay: Layout) -> list[str]:
    return [] if lay.covers() else [f"{case.name}: {lay.replication()['copies'].get(0, 0)} elements have no owner"]


def replication(case: Case, lay: Layout) -> list[str]:
    out = []
    want = _declared_copies(case)
    copies = lay.replication()["copies"]
    if copies != {want: lay.out_size}:
        out.append(f"{case.name}: copies per element {copies}, declared {want}")
    hw_count = np.bincount(lay._flat[0], minlength=lay.in_size)
    unit = _unit(case)
    broadcasting = any(v for k, v in case.mods if case.row.modifier(k) and case.row.modifier(k).kind
                       in ("broadcast", "lane_pattern"))
    if unit > 1:
        used = hw_count[hw_count > 0]
        if not (used == unit).all():
            out.append(f"{case.name}: sparse slots hold {sorted(set(used.tolist()))} elements, expected {unit}")
    elif not broadcasting and hw_count.max(initial=0) > 1:
        out.append(f"{case.name}: a hardware slot holds {int(hw_count.max())} elements without a broadcast modifier")
    return out


def forward_inverse(case: Case, lay: Layout) -> list[str]:
    out = []
    hw, lg = lay.pairs()
    inv = lay.inverse()
    h, g = lay._flat
    if not np.array_equal(np.sort(g * lay.in_size + h), inv._keys):
        out.append(f"{case.name}: the inverse does not list exactly the owners")
    if inv.inverse() != lay:
        out.append(f"{case.name}: inverse().inverse() != layout")
    grid = {n: hw[:, d] for d, n in enumerate(lay.in_names)}
    if lay.is_function():
        for name, e in expressions(lay).items():
            got = e.evaluate(**grid)
            want = lg[:, lay.out_names.index(name)]
            if not np.array_equal(got, want):
                bad = int(np.argmax(got != want))
                out.append(f"{case.name}: expression {name} = {e.text} gives {got[bad]} at "
                           f"{ {n: int(v[bad]) for n, v in grid.items()} }, table says {want[bad]}")
    prim = primary_copy(lay)
    phw, plg = prim.pairs()  # phw: logical coords, plg: hardware coords
    lgrid = {n: phw[:, d] for d, n in enumerate(prim.in_names)}
    for name, e in expressions(prim).items():
        got = e.evaluate(**lgrid)
        want = plg[:, prim.out_names.index(name)]
        if not np.array_equal(got, want):
            out.append(f"{case.name}: owner expression {name} = {e.text} disagrees with the table")
    # every primary owner is one of the layout's owners
    back = {(tuple(map(int, g)), tuple(map(int, h))) for h, g in zip(hw, lg)}
    for g, h in zip(phw, plg):
        if (tuple(map(int, g)), tuple(map(int, h))) not in back:
            out.append(f"{case.name}: owner {tuple(h)} of {tuple(g)} is not in the layout")
            break
    return out


def registers(case: Case, lay: Layout) -> list[str]:
    declared = case.row.registers_for(case.wave).get(case.op)
    recipe = case.row.recipe(case.op, case.wave)
    if isinstance(recipe, FormatGeometry):  # gfx950 f8f6f4: the tuple size follows the format (ISA)
        declared = recipe.vgprs(dict(case.mods).get(recipe.modifier, 0))
    if declared is None:
        return [f"{case.name}: row declares no register count for {case.op}"]
    rec = lay.location_array()
    last_bit = int((rec[:, 3] * 32 + rec[:, 6]).max())  # highest bit used, across the tuple
    span = last_bit // 32 + 1
    out = []
    if case.op != "K" and lay.registers_per_lane() != declared:
        out.append(f"{case.name}: layout slots span {lay.registers_per_lane()} VGPRs, row declares {declared}")
    if span > declared:
        out.append(f"{case.name}: uses VGPR {span - 1} but the row declares {declared}")
    if case.op in ("SA", "SB"):  # one select value reads one slot group; the register is the row's count
        return out
    if case.op != "K" and not dict(case.mods).get("opsel") and span != declared:
        out.append(f"{case.name}: last declared VGPR unused (span {span}, declared {declared})")
    return out


OBLIGATIONS = {"coverage": coverage, "replication": replication, "forward_inverse": forward_inverse,
               "registers": registers}


def prove(case: Case) -> dict[str, list[str]]:
    lay = case.layout()
    return {name: fn(case, lay) for name, fn in OBLIGATIONS.items()}
