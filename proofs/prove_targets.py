"""The target-table obligations, as tests; each obligation is also shown a broken input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from proofs.targets import TARGET_OBLIGATIONS, matrix_targets, prove_target
from tilesim.matrix.catalog import lookup, rows
from tilesim.targets import TARGETS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("target", [t.name for t in matrix_targets()])
def test_every_target_with_a_matrix_path_is_served(target: str) -> None:
    failures = [m for msgs in prove_target(TARGETS[target]).values() for m in msgs]
    assert not failures, "\n".join(failures)


def test_targets_without_a_matrix_path_are_the_dot_product_ones() -> None:
    # independent statement of the table (LLVM GCNProcessors.td): RDNA1/RDNA2 have no WMMA/MFMA
    without = sorted(set(TARGETS) - {t.name for t in matrix_targets()})
    assert without == sorted(["gfx1010", "gfx1011", "gfx1012", *(f"gfx103{i}" for i in range(7))])


def test_instructions_fails_for_a_target_of_a_new_family() -> None:
    new = replace(TARGETS["gfx1153"], name="gfx1154", family="rdna35")
    assert prove_target(new)["instructions"]


def test_family_fails_for_a_row_that_names_the_wrong_family() -> None:
    fp8 = lookup("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", "sm_90")
    assert not prove_target(TARGETS["sm_90"], [fp8])["family"]
    assert prove_target(TARGETS["sm_90"], [replace(fp8, family="sm80")])["family"]  # sm_80 has no fp8 mma
    wmma = lookup("v_wmma_f32_16x16x16_f16", "gfx1100")
    assert prove_target(TARGETS["gfx1100"], [replace(wmma, targets=("gfx1100",))])["family"]


def test_features_fails_for_the_wrong_fp8_flavour_or_kind() -> None:
    fnuz = lookup("v_mfma_f32_16x16x32_fp8_fp8", "gfx942")
    assert not prove_target(TARGETS["gfx942"], [fnuz])["features"]
    assert prove_target(TARGETS["gfx950"], [replace(fnuz, targets=("gfx950",))])["features"]  # gfx950 is OCP
    wmma = lookup("v_wmma_f32_16x16x16_f16", "gfx1100")
    assert prove_target(TARGETS["gfx942"], [replace(wmma, targets=("gfx942",))])["features"]


def test_waves_fails_without_a_builtin_or_with_a_foreign_wave() -> None:
    row = lookup("v_wmma_f32_16x16x16_f16", "gfx1201")
    assert not prove_target(TARGETS["gfx1201"], [row])["waves"]
    assert prove_target(TARGETS["gfx1201"], [replace(row, builtins=row.builtins[:1])])["waves"]  # no wave64
    assert prove_target(TARGETS["gfx1250"], [replace(row, targets=("gfx1250",))])["waves"]  # wave32 only
    assert set(TARGET_OBLIGATIONS) == {"instructions", "family", "features", "waves"}


_GFX1153 = '    _rdna("gfx1153", "rdna3", "wmma", _RDNA3, isa="gfx11", vgprs=1024, marketing="RDNA3.5 APU"),\n'
_REPORT = """
import json
from tilesim.matrix.catalog import instructions
from tilesim.targets import get_target
from proofs.targets import prove_target
print(json.dumps({"have": instructions("gfx1154"), "base": instructions("gfx1153"),
                  "failures": {k: v for k, v in prove_target(get_target("gfx1154")).items() if v}}))
"""


def _with_extra_target(tmp_path: Path, family: str) -> dict:
    """Copy the package, add one gfx1154 row to tilesim/targets.py (the only edit), and ask the copy."""
    for pkg in ("tilesim", "proofs"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    table = tmp_path / "tilesim" / "targets.py"
    src = table.read_text()
    assert src.count(_GFX1153) == 1
    table.write_text(src.replace(_GFX1153, _GFX1153 + _GFX1153.replace("gfx1153", "gfx1154")
                                 .replace('"rdna3"', repr(family).replace("'", '"'))))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _REPORT], capture_output=True, text=True, check=True, env=env,
                         cwd=tmp_path)
    return json.loads(out.stdout)


def test_a_new_target_of_an_existing_family_is_one_table_row(tmp_path: Path) -> None:
    """Adding only a target-table row gives the new target its family's whole catalog."""
    got = _with_extra_target(tmp_path, "rdna3")
    assert got["have"] == got["base"] and len(got["have"]) == sum("gfx1153" in r.targets for r in rows())
    assert got["failures"] == {}


def test_a_new_target_of_a_new_family_without_rows_fails(tmp_path: Path) -> None:
    got = _with_extra_target(tmp_path, "rdna35")
    assert got["have"] == [] and list(got["failures"]) == ["instructions", "waves"]
