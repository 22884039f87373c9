"""Catalog mutants for tools/mutation.py: plant a layout bug in a catalog row and require that it is
caught through independent golden data, never through tilesim comparing against itself.

A catalog row's layout feeds the simulator, the checker, the code generator and the docs alike, so
a wrong row is invisible to every self-comparison: a program declared with ``op.layout("C")`` and
simulated through the same row agrees with itself. Only data that did not come from the catalog can
see it. For each row that an independent source covers (``tests/_golden.py``: AMD's Matrix
Instruction Calculator for CDNA1-3/RDNA3/RDNA4, the CDNA4 ISA tables for gfx950), every operand is
mutated (the program-mutant operators: lanes 5/6 swapped, lane 9 one VGPR off, lane 3's packed
halves swapped, k 1 and K-2 exchanged on A or B, the other RDNA generation's accumulator formula),
the mutated layout is installed in the catalog (``tilesim.matrix.instruction._layout_cached``), and
the golden comparison runs through the public API (``lookup(...).layout(...)``), as
tests/test_calculator_golden.py does.

* **caught**: the catalog's records differ from the golden records;
* **exact blame**: the (lane, VGPR)s of the differing records are exactly the mutated positions.

Rows no independent source covers (NVIDIA, gfx1250, most gfx950 rows) are counted, not mutated.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any, Callable

import numpy as np

import tilesim as ts
from tests import _golden
from tilesim.errors import TilesimError
from tilesim.layouts import Layout
from tilesim.matrix import instruction as _instruction
from tilesim.matrix.catalog import instructions, lookup, rows
from tilesim.targets import feature_targets, has

__all__ = ["installed", "run_catalog_mutants", "wmma_sibling"]

# RDNA3 and RDNA4 WMMA place C differently; a mutant plants the other generation's C layout
_WMMA_SIBLINGS = {"wmma_gfx11": "wmma_gfx12", "wmma_gfx12": "wmma_gfx11"}  # target features (tilesim.targets)


def wmma_sibling(target: str) -> str | None:
    """A target of the other WMMA generation than ``target`` (from the table's features, so a new target of
    either family has one too), or None when ``target`` has neither."""
    mine = next((f for f in _WMMA_SIBLINGS if has(target, f)), None)
    return None if mine is None else feature_targets(_WMMA_SIBLINGS[mine])[0]


@contextlib.contextmanager
def installed(row: Any, operand: str, wave: int, layout: Layout):
    """The catalog with ``row``'s default-modifier ``operand`` layout (wave ``wave``) replaced."""
    real = _instruction._layout_cached

    def patched(ins, op, w, cbsz, abid, blgp, opsel, *scale_sel):  # scale_sel: opsel_a, opsel_b (gfx950 SA/SB)
        if ins is row and op == operand and w == wave and not (cbsz or abid or blgp or opsel or any(scale_sel)):
            return layout
        return real(ins, op, w, cbsz, abid, blgp, opsel, *scale_sel)

    _instruction._layout_cached = patched
    try:
        yield
    finally:
        _instruction._layout_cached = real


def _positions(rec: np.ndarray) -> set[tuple[int, int]]:
    return {(int(r[4]), int(r[3])) for r in rec}


def _golden_diff(ours: np.ndarray, theirs: np.ndarray) -> set[tuple[int, int]]:
    """(lane, VGPR)s of records in one and not the other."""
    a = {tuple(r) for r in ours.tolist()}
    b = {tuple(r) for r in theirs.tolist()}
    return _positions(np.array(sorted(a ^ b), np.int64).reshape(-1, 7))


def _operators(row: Any, target: str, operand: str, wave: int, lay: Layout,
               ops: dict[str, Callable]) -> list[tuple[str, Layout]]:
    out = [("lane_swap", ops["lane_swap"](lay, 5, 6)), ("vgpr_off_by_one", ops["vgpr_off_by_one"](lay, 9))]
    if lay.elem_bits < 32:
        out.append(("slot_swap", ops["slot_swap"](lay, 3)))
    if operand in ("A", "B") and row.blocks == 1:
        k_dim = "col" if operand == "A" else "row"
        out.append(("k_perm_one", ops["k_perm"](lay, k_dim, ops["k_swap"](row.k))))
    other = wmma_sibling(target)
    if operand in ("C", "D") and other is not None:
        with contextlib.suppress(TilesimError):
            out.append(("formula_swap", lookup(row.mnemonic, other).layout(operand, wave_size=wave)
                        .with_elem_bits(lay.elem_bits)))
    return [(name, m) for name, m in out if m != lay]


def run_catalog_mutants(ops: dict[str, Callable], quick: bool = False) -> dict[str, Any]:
    """Mutate every covered (row, operand, wave) and judge each mutant against the golden data."""
    targets = ["gfx1100", "gfx1201", "gfx942", "gfx950"] if quick else ["gfx908", "gfx90a", "gfx942", "gfx950",
                                                                         "gfx1100", "gfx1201"]
    records: list[dict[str, Any]] = []
    uncovered: Counter = Counter()
    for target in targets:
        names = instructions(target)
        if quick:
            names = names[:: max(1, len(names) // 6)]
        for name in names:
            row = lookup(name, target)
            for wave in row.wave_sizes:
                for operand in row.operands:
                    if operand == "K":
                        continue
                    gold = _golden.records(row.spellings, target, operand, wave)
                    if gold is None:
                        uncovered[target] += 1
                        continue
                    theirs, source = gold
                    orig = row.layout(operand, wave_size=wave)
                    if not np.array_equal(orig.location_array(), theirs):
                        records.append({"mutant": f"catalog/{target}/{row.mnemonic}/w{wave}/{operand}/baseline",
                                        "baseline_mismatch": True, "source": source})
                        continue
                    for opname, mut in _operators(row, target, operand, wave, orig, ops):
                        moved = ops["mutated_positions"](orig, mut)
                        with installed(row, operand, wave, mut):  # golden data read under the mutant too:
                            ours = lookup(name, target).layout(operand, wave_size=wave).location_array()
                            theirs = _golden.records(row.spellings, target, operand, wave)[0]  # a source derived
                            # from the catalog would follow the mutant here and be exposed
                        caught = not (ours.shape == theirs.shape and np.array_equal(ours, theirs))
                        named = _golden_diff(ours, theirs) if caught else set()
                        records.append({
                            "mutant": f"catalog/{target}/{row.mnemonic}/w{wave}/{operand}/{opname}",
                            "target": target, "operator": opname, "operand": operand, "source": source,
                            "mutated_positions": len(moved), "caught": caught, "exact_blame": caught and named == moved,
                            "blamed_positions": len(named)})
    return _summarise(records, uncovered)


def _summarise(records: list[dict[str, Any]], uncovered: Counter) -> dict[str, Any]:
    muts = [r for r in records if not r.get("baseline_mismatch")]
    caught = [r for r in muts if r["caught"]]
    by_op: dict[str, Counter] = {}
    for r in muts:
        c = by_op.setdefault(r["operator"], Counter())
        c["mutants"] += 1
        c["caught"] += r["caught"]
        c["exact_blame"] += r["exact_blame"]
    return {"summary": {"mutants": len(muts), "caught_by_golden": len(caught),
                        "exact_blame": sum(r["exact_blame"] for r in caught),
                        "baseline_mismatches": len(records) - len(muts),
                        "operands_without_independent_golden": dict(uncovered)},
            "by_operator": {k: dict(v) for k, v in sorted(by_op.items())},
            "escaped": [r for r in muts if not r["caught"]],
            "inexact": [r for r in caught if not r["exact_blame"]],
            "mutants": records}


def self_consistency_demo(ops: dict[str, Callable]) -> dict[str, Any]:
    """The issue-19 plant: gfx1201 WMMA C with lanes 5 and 6 swapped in the catalog. tilesim's own
    check and simulate agree with themselves (they read the same row); the golden data does not."""
    from examples import gemm

    mma = "v_wmma_f32_16x16x16_f16"
    row = lookup(mma, "gfx1201")
    out: dict[str, Any] = {"plant": "gfx1201 v_wmma_f32_16x16x16_f16 C/D: lanes 5 and 6 swapped in the catalog"}
    for operand in ("C", "D"):
        orig = row.layout(operand, wave_size=32)
        mut = ops["lane_swap"](orig, 5, 6)
        with installed(row, operand, 32, mut):
            theirs, _ = _golden.records(row.spellings, "gfx1201", operand, 32)
            ours = lookup(mma, "gfx1201").layout(operand, wave_size=32).location_array()
            out[f"golden_catches_{operand}"] = not np.array_equal(ours, theirs)
            if operand == "C":
                with installed(row, "D", 32, ops["lane_swap"](row.layout("D", wave_size=32), 5, 6)):
                    prog = gemm.gemm.specialize(target="gfx1201", M=32, N=32, K=32, mma=mma)
                    out["check_ok_under_the_plant"] = ts.check(prog).ok
    return out
