"""Hardware operand layouts from sources independent of tilesim's catalog (not tilesim code).

* AMD's Matrix Instruction Calculator v1.3.2 (``tests/golden/amd_calculator``): every
  MFMA/SMFMAC/WMMA/SWMMAC operand of CDNA1-3, RDNA3 and RDNA4, as printed by AMD's tool;
* the CDNA4 ISA guide's layout tables (§7.1.4), transcribed per element in
  ``tests/test_cdna4_gfx1250.py`` (dense f16/bf16/i8 A and B of gfx950).

Records are ``(block, row, col, vgpr, lane, bit_lo, bit_hi)`` rows sorted lexicographically, as
``Layout.location_array()`` gives them. ``records(...)`` returns None where no independent source
covers the operand (NVIDIA rows, gfx1250, most gfx950 rows): callers must say so, not fall back
silently.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["ARCH_OF_TARGET", "calculator_keys", "records"]

GOLDEN = Path(__file__).parent / "golden" / "amd_calculator"
ARCH_OF_TARGET = {"gfx908": "cdna1", "gfx90a": "cdna2", "gfx942": "cdna3", "gfx1100": "rdna3", "gfx1201": "rdna4"}


@lru_cache(maxsize=None)
def _calculator(arch: str) -> tuple[np.ndarray, dict[str, list[int]]]:
    rec = np.load(GOLDEN / f"LAYOUTS_{arch}.npz")["records"].astype(np.int64)
    return rec, json.loads((GOLDEN / f"index_{arch}.json").read_text())


def _key(name: str, operand: str, wave: int, cbsz: int = 0, abid: int = 0, blgp: int = 0, opsel: int = 0) -> str:
    return f"{name}|{operand}|w{wave}|cbsz={cbsz}|abid={abid}|blgp={blgp}|opsel={opsel}"


def calculator_keys(target: str) -> list[tuple[str, str, int]]:
    """(mnemonic, operand, wave) of every default-modifier layout the calculator printed for ``target``."""
    arch = ARCH_OF_TARGET.get(target)
    if arch is None:
        return []
    out = []
    for k in _calculator(arch)[1]:
        name, op, wave, *mods = k.split("|")
        if all(m.endswith("=0") for m in mods):
            out.append((name, op, int(wave[1:])))
    return out


@lru_cache(maxsize=4096)
def _cdna4_table(name: str, operand: str) -> np.ndarray | None:
    from tests.test_cdna4_gfx1250 import CDNA4_AB, _expected, _transpose_b

    for mn, m, k, w, lane, item in CDNA4_AB:
        if mn == name and operand in "AB":
            want = _expected((m, k), w, lambda i, kk, lane=lane, item=item: (lane(i, kk), item(i, kk)))
            return want if operand == "A" else _transpose_b(want)
    return None


def records(spellings: tuple[str, ...], target: str, operand: str, wave: int, **mods: int) -> tuple[np.ndarray, str] | None:
    """(records, source) of the hardware layout of ``operand`` for the first spelling an
    independent source knows, or None."""
    arch = ARCH_OF_TARGET.get(target)
    if arch is not None:
        rec, index = _calculator(arch)
        for name in spellings:
            key = _key(name, operand, wave, **mods)
            if key in index:
                off, n = index[key]
                return rec[off:off + n], f"AMD Matrix Instruction Calculator v1.3.2 ({arch}: {key})"
    if target == "gfx950" and not any(mods.values()):
        for name in spellings:
            t = _cdna4_table(name, operand)
            if t is not None:
                return t, f"CDNA4 ISA guide §7.1.4 table ({name} {operand}), tests/test_cdna4_gfx1250.py"
    return None
