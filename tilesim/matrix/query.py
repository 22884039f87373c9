"""Calculator-style single-element queries on an operand layout.

AMD's matrix instruction calculator answers two questions one element at a time:
``--get-register`` (matrix entry I/J/K -> lane, register, bits) and ``--matrix-entry``
(register and lane -> matrix entry), with ``--output-calculation`` printing how the answer
is computed. These are the same questions, asked of tilesim's exact operand layouts, with the
calculator's names for the matrix indices: A is I×K, B is K×J, C and D are I×J.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilesim.errors import LayoutError, choices
from tilesim.layouts import Layout
from tilesim.layouts.expr import expressions
from tilesim.matrix.explain import LOGICAL_NAMES, _rename, primary_copy

__all__ = ["ElementAnswer", "INDEX_NAMES", "element_owners", "register_contents", "formulas"]

# Operand -> (row index name, column index name), as AMD's calculator names them (explain uses the same).
INDEX_NAMES = LOGICAL_NAMES


@dataclass(frozen=True)
class ElementAnswer:
    """One copy of one matrix element: where it sits in the register file."""

    operand: str
    block: int
    row: int
    col: int
    lane: int
    vgpr: int
    bit_lo: int
    bit_hi: int

    def text(self) -> str:
        r, c = INDEX_NAMES[self.operand]
        return (f"{self.operand}[{r}={self.row}][{c}={self.col}]" + (f" block {self.block}" if self.block else "")
                + f" -> lane {self.lane}, v{self.vgpr} bits [{self.bit_hi}:{self.bit_lo}]")

    def as_dict(self) -> dict[str, int | str]:
        return {"operand": self.operand, "block": self.block, "row": self.row, "col": self.col, "lane": self.lane,
                "vgpr": self.vgpr, "bit_lo": self.bit_lo, "bit_hi": self.bit_hi}


def _check_operand(operand: str) -> str:
    op = str(operand).upper()
    if op not in INDEX_NAMES:
        raise LayoutError(f"unknown operand {operand!r}; valid: {choices(INDEX_NAMES)}")
    return op


def _bound(name: str, value: object, size: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < size:
        raise LayoutError(f"{name}={value!r} is outside this operand (valid: 0..{size - 1})")
    return value


def element_owners(layout: Layout, operand: str, *, row: int, col: int, block: int = 0) -> list[ElementAnswer]:
    """Every (lane, VGPR, bits) holding ``operand[row][col]`` of ``block`` (several under replication)."""
    op = _check_operand(operand)
    dims = dict(layout.out_dims)
    r, c = INDEX_NAMES[op]
    _bound(r, row, dims["row"]), _bound(c, col, dims["col"]), _bound("block", block, dims.get("block", 1))
    recs = layout.location_array()
    hit = recs[(recs[:, 0] == block) & (recs[:, 1] == row) & (recs[:, 2] == col)]
    return [ElementAnswer(op, *map(int, (x[0], x[1], x[2], x[4], x[3], x[5], x[6]))) for x in hit]


def register_contents(layout: Layout, operand: str, *, lane: int, vgpr: int) -> list[ElementAnswer]:
    """Every matrix element held (in part) by ``v[vgpr]`` of ``lane``; empty when the register is unused."""
    op = _check_operand(operand)
    _bound("lane", lane, dict(layout.in_dims)["lane"])
    _bound("register", vgpr, layout.registers_per_lane())
    recs = layout.location_array()
    first, last = recs[:, 3], recs[:, 3] + (recs[:, 6] // 32)  # an element wider than 32 bits spans registers
    hit = recs[(recs[:, 4] == lane) & (first <= vgpr) & (vgpr <= last)]
    return [ElementAnswer(op, *map(int, (x[0], x[1], x[2], x[4], x[3], x[5], x[6]))) for x in hit]


def formulas(layout: Layout, operand: str) -> dict[str, str]:
    """How the answers are computed: element -> (lane, slot) and, where each slot holds one element, back."""
    op = _check_operand(operand)
    r, c = INDEX_NAMES[op]
    names = {"row": r, "col": c}
    where = expressions(primary_copy(layout))
    bits = layout.elem_bits or 32
    out = {"element_to_register": f"lane = {_rename(where['lane'].text, names)}, "
                                  f"slot = {_rename(where['slot'].text, names)}; "
                                  f"register = slot * {bits} / 32, bits from (slot * {bits}) % 32"}
    if layout.is_function():
        held = expressions(layout)
        out["register_to_element"] = ", ".join(f"{names.get(k, k)} = {v.text}" for k, v in held.items()
                                              if not (k == "block" and v.text == "0"))
    return out
