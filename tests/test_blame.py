"""Blame names the element the hardware put in the register (issue 13 item 6), on every family.

Planted bugs: on AMD, a C store declared with rows and columns swapped (the declared accumulator
layout is the transpose of the instruction's); on sm_90, lane 5's accumulator rows swapped
(examples/gemm_planted.py). For each wrong element, blame says which lane and VGPR stored it and
which D element the instruction computed there. The expectations are independent of tilesim's
layout code: AMD's matrix instruction calculator (tests/golden/amd_calculator, as read by
tests/test_calculator_golden.py) for RDNA3, RDNA4 and CDNA3, and the ISA formulas written out here
for CDNA4 and sm_90 (and, as a second source, RDNA3).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from examples import gemm, gemm_planted
from tilesim.diff import blame, run
from tilesim.layouts import Layout
from tilesim.matrix import lookup
from tilesim.wave.sim import simulate

GOLDEN = Path(__file__).parent / "golden" / "amd_calculator"
LINE = re.compile(r"^C\[(\d+)\]\[(\d+)\]: .*?lane (\d+), VGPR (\d+).*? as D\[(\d+)\]\[(\d+)\]")


@lru_cache(maxsize=None)
def _golden_d(arch: str, mnemonic: str, wave: int) -> dict[tuple[int, int], tuple[int, int]]:
    """(row, col) of D -> (lane, vgpr), from the calculator's records (block, row, col, vgpr, lane, lo, hi)."""
    rec = np.load(GOLDEN / f"LAYOUTS_{arch}.npz")["records"].astype(np.int64)
    off, n = json.loads((GOLDEN / f"index_{arch}.json").read_text())[f"{mnemonic}|D|w{wave}|cbsz=0|abid=0|blgp=0|opsel=0"]
    return {(int(r[1]), int(r[2])): (int(r[4]), int(r[3])) for r in rec[off:off + n] if r[0] == 0}


def _isa_d(family: str, lane: int, vgpr: int) -> tuple[int, int]:
    """(row, col) of D in (lane, VGPR), as the ISA documents write it (f32 accumulators, 16-wide tiles)."""
    if family == "rdna3":  # RDNA3 ISA §7.9: VGPR v of lane l holds row 2v + l/16 (lanes 16-31 the odd rows)
        return 2 * vgpr + lane // 16, lane % 16
    if family == "cdna":  # CDNA3/CDNA4 ISA, 16x16 MFMA D: row 4*(l/16) + v, col l%16
        return 4 * (lane // 16) + vgpr, lane % 16
    if family == "sm_90":  # PTX ISA, m16n8k16 D: groupID = l/4 (row, +8 for c2/c3), 2*(l%4) + (i%2) (col)
        return lane // 4 + 8 * (vgpr // 2), 2 * (lane % 4) + vgpr % 2
    raise AssertionError(family)


def _transposed(layout: Layout) -> Layout:
    hw, lg = layout.pairs()
    lg = lg.copy()
    r, c = layout.out_names.index("row"), layout.out_names.index("col")
    lg[:, [r, c]] = lg[:, [c, r]]
    return Layout.from_pairs(layout.in_dims, layout.out_dims, hw, lg, elem_bits=layout.elem_bits)


def _blamed(prog) -> list[tuple[int, ...]]:
    arrays = gemm.inputs(prog)
    res = simulate(prog, **arrays)
    ref = arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)
    got = np.asarray(res.outputs["C"], np.float64)
    bad = np.abs(got - ref) > 1e-3 * (np.abs(ref).max() + 1)
    assert bad.any()
    lines, _ = blame(res, "C", bad, got, limit=10**6, expected=ref, got_label="simulated")
    parsed = [tuple(int(x) for x in m.groups()) for m in map(LINE.match, lines) if m]
    assert len(parsed) == int(bad.sum()), lines[:3]
    return parsed


AMD = [("gfx1100", "rdna3", "v_wmma_f32_16x16x16_f16", 32, "rdna3"),
       ("gfx1201", "rdna4", "v_wmma_f32_16x16x16_f16", 32, None),
       ("gfx942", "cdna3", "v_mfma_f32_16x16x16_f16", 64, "cdna"),  # the calculator's spelling
       ("gfx950", None, "v_mfma_f32_16x16x16_f16", 64, "cdna")]


@pytest.mark.parametrize("target,arch,mnemonic,wave,formula", AMD, ids=[a[0] for a in AMD])
def test_swapped_c_store_blames_the_hardware_element(target, arch, mnemonic, wave, formula):
    c = _transposed(lookup(mnemonic, target).layout("C"))
    prog = gemm.gemm.specialize(target=target, M=16, N=16, K=32, mma=mnemonic, c_layout=c)
    gold = _golden_d(arch, mnemonic, wave) if arch else None
    for i, j, lane, vgpr, r, col in _blamed(prog):
        li, lj = i % 16, j % 16
        # the declared layout put hardware D[lj][li] at C[li][lj]: the register that stored C[i][j]
        # holds D[lj][li], and blame must say so (before: D[li][lj], the declared element)
        assert (r, col) == (lj, li), (i, j, lane, vgpr, r, col)
        if gold is not None:
            assert gold[(lj, li)] == (lane, vgpr), (i, j, gold[(lj, li)], lane, vgpr)
        if formula is not None:
            assert _isa_d(formula, lane, vgpr) == (lj, li)


def test_sm90_lane5_rows_blames_the_hardware_element():
    prog = gemm_planted.programs()[0]
    assert prog.name == "gemm_c_rows_lane5"
    blamed = _blamed(prog)
    assert {b[2] for b in blamed} == {5}
    for i, j, lane, vgpr, r, col in blamed:
        # lane 5 declared its rows g and g+8 swapped: the hardware's D row is the other one
        assert (r, col) == _isa_d("sm_90", lane, vgpr) == ((i % 16 + 8) % 16, j % 8), (i, j, vgpr, r, col)


def test_the_verdict_carries_the_hardware_blame():
    """The issue's example: a gfx1100 C store with rows and columns swapped. Hardware lane 16, VGPR 0
    holds D[1][0] (RDNA3: row 2*0 + 16/16); the old blame said D[0][1]."""
    mnemonic = "v_wmma_f32_16x16x16_f16"
    prog = gemm.gemm.specialize(target="gfx1100", M=16, N=16, K=16, mma=mnemonic,
                                c_layout=_transposed(lookup(mnemonic, "gfx1100").layout("C")))
    arrays = gemm.inputs(prog)
    ref = {"C": arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)}
    res = simulate(prog, **arrays)
    got = np.asarray(res.outputs["C"], np.float64)
    lines, _ = blame(res, "C", np.ones_like(got, bool), got, limit=256, expected=ref["C"])
    (line,) = [x for x in lines if "lane 16, VGPR 0;" in x]
    assert line.startswith("C[0][1]:") and " as D[1][0] " in line
