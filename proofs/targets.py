"""Proof obligations over the target table: every target with a matrix path is fully served.

The catalog derives which targets run a row from the target table (a row's family, or for
``mma.sync`` the target features), so a new target of an existing family needs one row in
``tilesim/targets.py`` and nothing else. These obligations catch the other cases — a target of a
new family, or a row whose facts disagree with the table — for every target with a matrix path
(:data:`tilesim.targets.MATRIX_CORE_PATHS`):

1. **instructions** — the catalog has rows for it;
2. **family** — each row's family is a family of the table and is the family of the row's first
   target; AMD rows run on exactly the targets of their family;
3. **features** — each row's kind is a feature of the target (``mfma``, ``smfmac``, ``wmma``,
   ``swmmac``, ``mma_sync``; fp8 ``mma.sync`` needs ``mma_sync_fp8``), and its fp8 flavour
   (FNUZ/OCP) is the target's;
4. **waves** — each row's wave sizes are wave sizes of the target, and every wave size of the
   target has at least one builtin (AMD) to compile; that the builtins compile and the ISA shows
   their instructions is tests/test_compiler_truth.py, one case per (target, wave) derived from
   the same table.

Each obligation returns a list of failure strings (empty = proved).
"""

from __future__ import annotations

from collections.abc import Sequence

from tilesim.matrix.catalog import rows
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.targets import MATRIX_CORE_PATHS, TARGETS, Target, families, family_targets, get_target

__all__ = ["TARGET_OBLIGATIONS", "matrix_targets", "prove_target", "prove_targets"]

def matrix_targets(table: dict[str, Target] | None = None) -> list[Target]:
    """Every target whose matrix path has catalog instructions."""
    return [t for t in (TARGETS if table is None else table).values() if t.matrix_path in MATRIX_CORE_PATHS]


def _rows_of(t: Target, catalog: Sequence[MatrixInstruction]) -> list[MatrixInstruction]:
    return [r for r in catalog if t.name in r.targets]


def instructions(t: Target, have: Sequence[MatrixInstruction]) -> list[str]:
    if not have:
        return [f"{t.name} ({t.family}, matrix path {t.matrix_path}): no catalog rows — a new family needs "
                f"its rows in tilesim/matrix/catalog_*.py (docs/contributing.md)"]
    return []


def family(t: Target, have: Sequence[MatrixInstruction]) -> list[str]:
    out = []
    for r in have:
        if r.family not in families():
            out.append(f"{t.name}: {r.mnemonic} says family {r.family!r}, not a family of the target table")
        elif get_target(r.targets[0]).family != r.family:
            out.append(f"{t.name}: {r.mnemonic} says family {r.family!r}; its first target "
                       f"{r.targets[0]} is {get_target(r.targets[0]).family}")
        elif t.vendor == "amd" and r.targets != family_targets(r.family):
            out.append(f"{t.name}: {r.mnemonic} ({r.family}) runs on {r.targets}, the family has "
                       f"{family_targets(r.family)}")
    return out


def features(t: Target, have: Sequence[MatrixInstruction]) -> list[str]:
    out = []
    for r in have:
        need = {r.kind}  # an instruction kind is the name of the feature that runs it (INSTRUCTION_KINDS)
        flavours = {ty.split("_")[1] for ty in r.types if ty.startswith(("fp8_", "bf8_"))}
        if r.kind == "mma_sync" and flavours:
            need.add("mma_sync_fp8")
        missing = need - t.features
        if missing:
            out.append(f"{t.name}: {r.mnemonic} ({r.kind}) needs features {sorted(missing)}")
        if flavours and flavours != {t.fp8}:
            out.append(f"{t.name}: {r.mnemonic} reads fp8 {sorted(flavours)}; {t.name}'s fp8 is {t.fp8}")
    return out


def waves(t: Target, have: Sequence[MatrixInstruction]) -> list[str]:
    out = [f"{t.name}: {r.mnemonic} has wave sizes {r.wave_sizes}; {t.name} has {t.wave_sizes}"
           for r in have if not set(r.wave_sizes) <= set(t.wave_sizes)]
    if t.vendor == "amd":
        for w in t.wave_sizes:
            if not any(w in r.wave_sizes and r.builtin_for(w) is not None for r in have):
                out.append(f"{t.name}: no row has a clang builtin for wave{w}")
    return out


TARGET_OBLIGATIONS = {"instructions": instructions, "family": family, "features": features, "waves": waves}


def prove_target(t: Target, catalog: Sequence[MatrixInstruction] | None = None) -> dict[str, list[str]]:
    have = _rows_of(t, rows() if catalog is None else catalog)
    return {name: fn(t, have) for name, fn in TARGET_OBLIGATIONS.items()}


def prove_targets() -> list[str]:
    """Every failure over every target with a matrix path (empty = proved)."""
    return [msg for t in matrix_targets() for msgs in prove_target(t).values() for msg in msgs]
