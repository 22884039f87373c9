"""Human-readable description of one catalog row: shapes, registers, cycles, modifiers, formulas.

The formulas are derived from the row's layouts (never written by hand): for each operand,
where element ``[i][k]`` (A), ``[k][j]`` (B) or ``[i][j]`` (C/D) lives — ``lane`` and ``slot``
as index expressions — and, the other way, which element each ``lane``/``slot`` holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilesim.layouts.expr import expressions
from tilesim.layouts.layout import Layout
from tilesim.matrix.instruction import MatrixInstruction

__all__ = ["explain", "primary_copy", "row_summary", "Explanation"]

LOGICAL_NAMES = {"A": ("i", "k"), "B": ("k", "j"), "C": ("i", "j"), "D": ("i", "j"), "K": ("i", "k"),
                  "SA": ("i", "kb"), "SB": ("kb", "j")}  # SA/SB: one block scale per kb = k // block


def primary_copy(layout: Layout) -> Layout:
    """Logical -> hardware, keeping for each element only its lowest (lane, slot) owner."""
    inv = layout.inverse()
    hw, lg = inv.pairs()  # hw here = logical coords, lg = hardware coords
    keys = hw @ np.cumprod([1, *[s for _, s in inv.in_dims][:-1]])
    order = np.lexsort((lg[:, 1], lg[:, 0], keys))
    first = np.ones(order.size, bool)
    first[1:] = keys[order][1:] != keys[order][:-1]
    sel = order[first]
    return Layout.from_pairs(inv.in_dims, inv.out_dims, hw[sel], lg[sel], elem_bits=layout.elem_bits)


@dataclass(frozen=True)
class Explanation:
    row: MatrixInstruction
    wave: int
    formulas: dict[str, dict[str, str]]
    replication: dict[str, dict[str, Any]]

    def __str__(self) -> str:
        r = self.row
        regs = r.registers_for(self.wave)
        lines = [
            f"{r.mnemonic}  ({r.kind}, {r.family}; targets {', '.join(r.targets)})",
        ]
        if r.aliases:
            lines.append(f"  also spelled: {', '.join(r.aliases)}")
        shape = f"{r.m}x{r.n}x{r.k}" + (f", {r.blocks} blocks" if r.blocks > 1 else "")
        lines += [
            f"  shape        D[{r.m}x{r.n}] = A[{r.m}x{r.k}] * B[{r.k}x{r.n}] + C   ({shape})"
            + ("   A is 4:2 structured-sparse" if r.sparse else ""),
            f"  types        A {r.types[0]}, B {r.types[1]}, C {r.types[2]}, D {r.types[3]}",
            f"  wave         {self.wave} (forms: {', '.join(f'wave{w}' for w in r.wave_sizes)})",
            "  registers    " + ", ".join(f"{op} {n}" for op, n in regs.items()) + " VGPRs per lane",
            f"  cycles       {r.cycles if r.cycles is not None else 'n/a'}    FLOPs {r.flops}",
        ]
        if r.modifiers:
            lines.append("  modifiers")
            width = max(7, *(len(m.name) for m in r.modifiers))  # a column as wide as the longest name
            for m in r.modifiers:
                vals = f"{m.values[0]}..{m.values[-1]}" if len(m.values) > 3 else ", ".join(map(str, m.values))
                lines.append(f"    {m.name.upper():{width}} {vals:8} {m.effect}")
        b = r.builtin_for(self.wave)
        if b is not None:
            lines.append(f"  builtin      {b.name}  ({b.ret} <- {', '.join(b.args) or 'inline PTX'})")
        lines.append("  layout formulas (slot s holds bits [s*w, (s+1)*w) of the lane's registers)")
        for op, f in self.formulas.items():
            lines.append(f"    {op}: {f['where']}")
            lines.append(f"       {f['holds']}")
            rep = self.replication[op]
            if set(rep["copies"]) - {1}:
                lines.append(f"       copies per element: {rep['copies']}  (replicated)")
        lines.append(f"  source       {r.citation}")
        return "\n".join(lines)


def explain(row: MatrixInstruction, *, wave_size: int | None = None, as_dict: bool = False) -> Any:
    wave = row._wave(wave_size)
    formulas: dict[str, dict[str, str]] = {}
    replication: dict[str, dict[str, Any]] = {}
    for op in row.operands:
        lay = row.layout(op, wave_size=wave)
        outer, inner = LOGICAL_NAMES[op]
        names = {"row": outer, "col": inner}
        bits = lay.elem_bits or 32
        where = expressions(primary_copy(lay))
        sub = lambda t: _rename(t, names)  # noqa: E731
        elem = f"{op}[{outer}][{inner}]" if dict(lay.out_dims).get("block", 1) == 1 else f"{op}[block][{outer}][{inner}]"
        fw = f"{elem} -> lane = {sub(where['lane'].text)}, slot = {sub(where['slot'].text)}  (w = {bits} bits)"
        holds = expressions(lay) if lay.is_function() else None
        if holds is not None:
            parts = [f"{names.get(k, k)} = {v.text}" for k, v in holds.items() if not (k == "block" and v.text == "0")]
            fh = "lane, slot hold " + ", ".join(parts)
        else:
            fh = "lane, slot hold several elements (broadcast)"
        formulas[op] = {"where": fw, "holds": fh}
        replication[op] = lay.replication()
    ex = Explanation(row, wave, formulas, replication)
    if as_dict:
        return {**row_summary(row), "wave": wave, "formulas": formulas,
                "replication": {k: {"copies": {str(c): n for c, n in v["copies"].items()}} for k, v in replication.items()}}
    return ex


def row_summary(r: MatrixInstruction) -> dict[str, object]:
    """The row as plain JSON-ready data."""
    return {
        "mnemonic": r.mnemonic,
        "aliases": list(r.aliases),
        "kind": r.kind,
        "family": r.family,
        "m": r.m,
        "n": r.n,
        "k": r.k,
        "blocks": r.blocks,
        "types": dict(zip("ABCD", r.types)),
        "wave_sizes": list(r.wave_sizes),
        "registers": {str(w): dict(regs) for w, regs in r.registers},
        "cycles": r.cycles,
        "flops": r.flops,
        "modifiers": {m.name: list(m.values) for m in r.modifiers},
        "builtins": [{"name": b.name, "wave": b.wave, "ret": b.ret, "args": list(b.args)} for b in r.builtins],
        "sparse": r.sparse,
        "citation": r.citation,
    }



def _rename(text: str, names: dict[str, str]) -> str:
    return re.sub(r"\b(row|col)\b", lambda m: names[m.group(1)], text)
