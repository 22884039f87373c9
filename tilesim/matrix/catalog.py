"""The catalog: every matrix instruction, keyed by real names.

Public contract (other tools read it; keep it stable):

* ``instructions(arch) -> list[str]`` — canonical mnemonics the target has;
* ``lookup(mnemonic, arch) -> MatrixInstruction`` — either LLVM spelling is accepted
  (``v_mfma_f32_32x32x8f16`` and ``v_mfma_f32_32x32x8_f16``);
* ``rows()`` — every row, in catalog order.
"""

from __future__ import annotations

import functools

from tilesim.errors import InstructionError, choices, did_you_mean
from tilesim.targets import get_target
from tilesim.matrix.catalog_amd import AMD_ROWS
from tilesim.matrix.catalog_gfx1250 import GFX1250_ROWS
from tilesim.matrix.catalog_nvidia import NVIDIA_ROWS
from tilesim.matrix.instruction import MatrixInstruction

__all__ = ["instructions", "lookup", "rows", "find", "ISA_PREFIXES"]


def rows() -> tuple[MatrixInstruction, ...]:
    return _ALL


_ALL: tuple[MatrixInstruction, ...] = (*AMD_ROWS, *GFX1250_ROWS, *NVIDIA_ROWS)

# How AMD matrix instructions start in an ISA listing (``v_mfma``, ``v_smfmac``, ``v_wmma``,
# ``v_swmmac``): every AMD mnemonic is ``v_<kind>…``. Readers of compiler output use this one tuple.
ISA_PREFIXES: tuple[str, ...] = tuple(dict.fromkeys(f"v_{r.kind}" for r in _ALL if r.kind != "mma_sync"))


def _spelling_key(name: str) -> str:
    """Normalise a mnemonic so the gfx908/gfx90a and gfx94x spellings meet.

    LLVM spells ``v_mfma_f32_32x32x8f16`` on gfx908/gfx90a and ``v_mfma_f32_32x32x8_f16`` on
    gfx940+; the ``_1k`` bf16 forms and ``_w32``/``_w64`` builtin suffixes are other such pairs.
    """
    return name.strip().lower().replace("_", "")


@functools.lru_cache(maxsize=None)
def _by_target() -> dict[str, dict[str, MatrixInstruction]]:
    table: dict[str, dict[str, MatrixInstruction]] = {}
    for row in _ALL:
        for t in row.targets:
            per = table.setdefault(t, {})
            for s in row.spellings:
                per.setdefault(s.lower(), row)
                per.setdefault(_spelling_key(s), row)
    return table


def instructions(arch: str) -> list[str]:
    """Canonical mnemonics of every matrix instruction ``arch`` has, in catalog order."""
    t = get_target(arch)
    return [r.mnemonic for r in _ALL if t.name in r.targets]


def lookup(mnemonic: str, arch: str) -> MatrixInstruction:
    """The catalog row for ``mnemonic`` on ``arch``; raises ``InstructionError`` naming the choices."""
    t = get_target(arch)
    if not isinstance(mnemonic, str):
        raise InstructionError(f"instruction must be a mnemonic string, got {mnemonic!r}")
    per = _by_target().get(t.name, {})
    row = per.get(mnemonic.strip().lower()) or per.get(_spelling_key(mnemonic))
    if row is not None:
        return row
    elsewhere = sorted({tt for r in _ALL for tt in r.targets
                        if _spelling_key(mnemonic) in {_spelling_key(s) for s in r.spellings}})
    if elsewhere:
        raise InstructionError(
            f"{t.name} ({t.family}, matrix path {t.matrix_path}) has no {mnemonic}; it exists on: {choices(elsewhere)}"
        )
    have = instructions(t.name)
    if not have:
        raise InstructionError(
            f"unknown instruction {mnemonic!r}: {t.name} has no matrix instructions (matrix path {t.matrix_path})"
        )
    hint = did_you_mean(mnemonic, have)
    if hint:  # a typo: the closest names, not the whole list
        raise InstructionError(f"unknown instruction {mnemonic!r} on {t.name};{hint} ({len(have)} instructions there: "
                               f"`tilesim instructions {t.name}` lists them)")
    raise InstructionError(f"unknown instruction {mnemonic!r} on {t.name}; valid: {choices(have, limit=200)}")


def find(mnemonic: str) -> list[MatrixInstruction]:
    """Every row (any family) that answers to ``mnemonic``."""
    key = _spelling_key(mnemonic)
    return [r for r in _ALL if key in {_spelling_key(s) for s in r.spellings}]
