"""The verdict both framework checkers give (:func:`tilesim.frameworks.check_layout` for Gluon/Triton
specs, :func:`tilesim.frameworks.check_index_maps` for TileLang index maps): one vocabulary, one
comparison, one pattern formula, so the two can never disagree about the same layout.

* ``match`` — every lane/register holds what the instruction reads (A, B) or writes (C/D);
* ``match_k_permuted`` — an A/B layout that differs from the instruction's only by a permutation
  of k: a dot product does not care about the order of k as long as A and B use the same one, so
  it counts as a match, with the permutation reported;
* ``mismatch`` — the first differing lane/VGPR, both sides' elements there, and the pattern;
* ``rejected`` — the layout cannot be this target's instruction at all (wrong wave size, an
  instruction kind the target lacks, a map outside the register space).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilesim.errors import LayoutError, choices
from tilesim.layouts.compare import compare_layouts
from tilesim.layouts.layout import Layout

__all__ = ["LayoutCheck", "STATUSES", "OK_STATUSES", "verdict", "verbs"]

STATUSES = ("match", "match_k_permuted", "mismatch", "rejected")
OK_STATUSES = ("match", "match_k_permuted")


def verbs(operand: str) -> str:
    """What the instruction does with the operand: it reads A and B and writes the result (C/D)."""
    return "reads" if operand in ("A", "B") else "writes"


class _Status:
    """``status`` from :data:`STATUSES`, checked on construction; ``ok`` for the two match statuses.
    Shared by :class:`LayoutCheck` and :class:`~tilesim.frameworks.index_maps.IndexMapReport`."""

    status: str

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise LayoutError(f"status {self.status!r}; valid: {choices(STATUSES)}")

    @property
    def ok(self) -> bool:
        return self.status in OK_STATUSES

    def __bool__(self) -> bool:  # `assert check_layout(...)`: false on a mismatch (a dataclass is always true)
        return self.ok


@dataclass(frozen=True)
class LayoutCheck(_Status):
    """The answer of :func:`check_layout`. ``ok`` is true for ``match`` and ``match_k_permuted``."""

    status: str
    spec: str
    arch: str
    operand: str
    instruction: str | None
    wave_size: int | None
    reason: str
    first_difference: dict[str, Any] | None = None
    pattern: tuple[str, ...] = ()
    k_permutation: tuple[int, ...] | None = None
    notes: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        head = {"match": "MATCH", "match_k_permuted": "MATCH (k permuted)", "mismatch": "MISMATCH",
                "rejected": "REJECTED"}[self.status]
        where = f"{self.instruction} on {self.arch}" if self.instruction else self.arch
        lines = [f"{head}: {self.spec} as {self.operand} of {where}", f"  {self.reason}"]
        lines += [f"  {p}" for p in self.pattern]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "status": self.status, "spec": self.spec, "arch": self.arch, "operand": self.operand,
                "instruction": self.instruction, "wave_size": self.wave_size, "reason": self.reason,
                "first_difference": self.first_difference, "pattern": list(self.pattern),
                "k_permutation": None if self.k_permutation is None else list(self.k_permutation),
                "notes": list(self.notes)}


def _held(lay: Layout, bits: int) -> dict[tuple[int, int], set[tuple[int, int]]]:
    out: dict[tuple[int, int], set[tuple[int, int]]] = {}
    hw, lg = lay.pairs()
    rc = [lay.out_names.index("row"), lay.out_names.index("col")]
    for (lane, slot), (r, c) in zip(hw.tolist(), lg[:, rc].tolist()):
        out.setdefault((lane, slot * bits), set()).add((r, c))
    return out


def _first_difference(dec: Layout, hw: Layout, bits: int, operand: str) -> dict[str, Any] | None:
    """The first (lane, bit offset) whose elements differ, with both sides' elements there."""
    d, h = _held(dec, bits), _held(hw, bits)
    for pos in sorted(set(d) | set(h)):
        if d.get(pos, set()) != h.get(pos, set()):
            lane, bit0 = pos
            return {"lane": lane, "vgpr": bit0 // 32, "bits": [bit0 % 32, bit0 % 32 + bits - 1],
                    "layout_holds": [f"{operand}[{r}][{c}]" for r, c in sorted(d.get(pos, set()))],
                    "instruction_holds": [f"{operand}[{r}][{c}]" for r, c in sorted(h.get(pos, set()))]}
    return None


def _k_permutation(dec: Layout, hw: Layout, operand: str, k: int) -> tuple[int, ...] | None:
    """pi with dec = hw with k replaced by pi[k] at every position, if one exists."""
    if operand not in ("A", "B") or dec.in_dims != hw.in_dims:
        return None
    (dh, dl), (hh, hl) = dec.pairs(), hw.pairs()
    if dh.shape != hh.shape or not np.array_equal(dh, hh):  # pairs are sorted by position, then element
        return None
    kd, other = (2, 1) if operand == "A" else (1, 2)
    if not np.array_equal(dl[:, other], hl[:, other]):
        return None
    pi = np.full(k, -1, np.int64)
    for a, b in zip(hl[:, kd].tolist(), dl[:, kd].tolist()):
        if pi[a] not in (-1, b):
            return None
        pi[a] = b
    if (pi < 0).any() or len(set(pi.tolist())) != k:
        return None
    return tuple(int(v) for v in pi)


def _copies(lay: Layout) -> int:
    """How many hardware positions hold each element (the most, over the tile)."""
    _, lg = lay.pairs()
    return int(np.unique(lg, axis=0, return_counts=True)[1].max()) if len(lg) else 0


def verdict(dec: Layout, hw: Layout, op_key: str, *, mnemonic: str = "the instruction", kind: str = "",
            notes: list[str] | tuple[str, ...] = (), spec: str, arch: str, operand: str) -> LayoutCheck:
    """Compare ``dec`` ((lane, slot) -> (block, row, col), the framework's layout of one instruction tile)
    with ``hw``, the layout of operand ``op_key`` (A, B or C) of instruction ``mnemonic`` (of ``kind``)."""
    notes = list(notes)
    out = dict(hw.out_dims)
    k = out["col"] if op_key == "A" else out["row"]
    lanes = dict(hw.in_dims)["lane"]
    bits = hw.elem_bits or 32
    dec = dec.with_elem_bits(bits)
    does = verbs(op_key)
    got = dict(instruction=None if mnemonic == "the instruction" else mnemonic, wave_size=lanes, spec=spec, arch=arch, operand=operand)
    if dec == hw:
        return LayoutCheck("match", reason=f"every lane and register holds what {mnemonic} {does} "
                           f"({len(hw)} element copies in {lanes} lanes)", notes=tuple(notes), **got)
    pi = _k_permutation(dec, hw, op_key, k)
    if pi is not None:
        return LayoutCheck("match_k_permuted", k_permutation=pi, notes=tuple(notes),
                           reason=f"holds what {mnemonic} reads up to a permutation of k (layout k = pi[hardware "
                                  f"k], pi = {list(pi)}); correct only if the other operand uses the same k order, as "
                                  "Triton's dot operands with equal k_width do", **got)
    first = _first_difference(dec, hw, bits, op_key)
    slots_d, slots_h = dict(dec.in_dims)["slot"], dict(hw.in_dims)["slot"]
    if slots_d != slots_h:
        notes.insert(0, f"the layout gives each lane {slots_d} {bits}-bit elements of this tile; {mnemonic} "
                        f"uses {slots_h}")
    rep_d, rep_h = _copies(dec), _copies(hw)
    if rep_d != rep_h:
        notes.append(f"the layout keeps {rep_d} cop{'y' if rep_d == 1 else 'ies'} of each element in a wave, "
                     f"{mnemonic} {rep_h}" + (" (RDNA3 WMMA replicates A/B in lanes 16-31; RDNA4 does not)"
                                                  if kind == "wmma" and op_key in "AB" else ""))
    pattern = tuple(compare_layouts(dec, hw, op_key, verbs=("is held at", "the instruction has it at")))
    reason = "differs from the instruction"
    if first is not None:
        reason = (f"first difference at lane {first['lane']}, VGPR {first['vgpr']}"
                  + (f" bits {first['bits'][0]}-{first['bits'][1]}" if bits < 32 else "")
                  + f": the layout holds {', '.join(first['layout_holds']) or 'nothing'}, "
                  f"{mnemonic} {does} "
                  f"{', '.join(first['instruction_holds']) or 'nothing'}")
    return LayoutCheck("mismatch", reason=reason, first_difference=first, pattern=pattern, notes=tuple(notes), **got)


