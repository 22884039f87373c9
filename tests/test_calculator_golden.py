"""Every layout AMD's matrix instruction calculator prints equals the catalog's layout.

The golden records were produced by running AMD's calculator v1.3.2 (see
tests/golden/amd_calculator/README.md) — an independent source: our layouts come from the
geometry recipes in ``tilesim.matrix``, never from this data. Every instruction, operand, wave
size and legal CBSZ/ABID/BLGP/OPSEL combination the calculator knows is compared, record for
record, and so are the instruction facts it prints (shape, blocks, registers, cycles).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from tilesim.matrix.catalog import instructions, lookup

GOLDEN = Path(__file__).parent / "golden" / "amd_calculator"
ARCH_TARGET = {"cdna1": "gfx908", "cdna2": "gfx90a", "cdna3": "gfx942", "rdna3": "gfx1100", "rdna4": "gfx1201"}


@lru_cache(maxsize=None)
def _golden(arch: str) -> tuple[np.ndarray, dict[str, list[int]]]:
    rec = np.load(GOLDEN / f"LAYOUTS_{arch}.npz")["records"].astype(np.int64)
    index = json.loads((GOLDEN / f"index_{arch}.json").read_text())
    return rec, index


@lru_cache(maxsize=None)
def _details() -> dict:
    return json.loads((GOLDEN / "details.json").read_text())["architectures"]


def _parse(key: str) -> tuple[str, str, int, dict[str, int]]:
    name, op, wave, *mods = key.split("|")
    return name, op, int(wave[1:]), {k: int(v) for k, v in (m.split("=") for m in mods)}


KEYS = [(arch, key) for arch in ARCH_TARGET for key in _golden(arch)[1]]
ROWS = [(arch, name) for arch in ARCH_TARGET for name in _details()[arch]["instructions"]]


def _diff(ours: np.ndarray, theirs: np.ndarray) -> str:
    a = {tuple(r) for r in ours.tolist()}
    b = {tuple(r) for r in theirs.tolist()}
    return (f"{len(a - b)} records only in tilesim, e.g. {sorted(a - b)[:4]}; "
            f"{len(b - a)} only in the calculator, e.g. {sorted(b - a)[:4]} "
            "(block, row, col, vgpr, lane, bit_lo, bit_hi)")


@pytest.mark.parametrize(("arch", "key"), KEYS, ids=[f"{a}:{k}" for a, k in KEYS])
def test_layout_equals_calculator(arch: str, key: str) -> None:
    rec, index = _golden(arch)
    off, n = index[key]
    theirs = rec[off:off + n]
    name, op, wave, mods = _parse(key)
    ours = lookup(name, ARCH_TARGET[arch]).layout(op, wave_size=wave, **mods).location_array()
    assert ours.shape == theirs.shape and np.array_equal(ours, theirs), _diff(ours, theirs)


@pytest.mark.parametrize("arch", list(ARCH_TARGET))
def test_catalog_lists_exactly_the_calculators_instructions(arch: str) -> None:
    theirs = set(_details()[arch]["instructions"])
    ours = set(instructions(ARCH_TARGET[arch]))
    assert ours == theirs, f"only tilesim: {sorted(ours - theirs)}; only calculator: {sorted(theirs - ours)}"


@pytest.mark.parametrize(("arch", "name"), ROWS, ids=[f"{a}:{n}" for a, n in ROWS])
def test_instruction_facts_equal_calculator(arch: str, name: str) -> None:
    d = _details()[arch]["instructions"][name]
    row = lookup(name, ARCH_TARGET[arch])
    assert (row.m, row.n, row.k, row.blocks) == (d["m"], d["n"], d["k"], d["blocks"])
    assert row.cycles == d["cycles"]
    assert row.flops == d["ops"]
    assert row.sparse == d["sparse"]
    assert tuple(row.wave_sizes) == tuple(d["wave_sizes"])
    for w in row.wave_sizes:
        regs = row.registers_for(w)
        theirs = d["gprs"][f"w{w}"]
        assert {op: regs[op] for op in theirs} == theirs, (w, regs, theirs)
        # the layouts occupy exactly the registers the calculator counts
        for op, n in theirs.items():
            assert row.layout(op, wave_size=w).registers_per_lane() == n, (op, w)
