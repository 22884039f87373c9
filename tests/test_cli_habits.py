"""Issue 18's CLI habits: --version, ``python -m tilesim``, did-you-mean, codenames and target-ID suffixes,
and the packaging facts (py.typed, extras that match what the code imports)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tilesim.cli import main
from tilesim.errors import InstructionError, TargetError
from tilesim.matrix import lookup
from tilesim.targets import get_target

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_version_flag_prints_the_project_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"tilesim {PYPROJECT['project']['version']}"


def test_the_version_is_looked_up_only_for_version(monkeypatch, capsys):
    # importlib.metadata costs ~50 ms of every command's start; and a package copied without an install
    # or pyproject.toml failed every command (a traceback from building the parser) before this
    from tilesim.cli import parser

    def broken() -> str:
        raise AssertionError("version looked up")

    monkeypatch.setattr(parser, "_version", broken)
    assert main(["targets"]) == 0 and "gfx1201" in capsys.readouterr().out


def test_python_dash_m_tilesim_is_the_command():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "tilesim", "explain", "v_wmma_f32_16x16x16_f16", "--arch", "navi48"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert p.returncode == 0, p.stderr
    assert "v_wmma_f32_16x16x16_f16" in p.stdout and "gfx1201" in p.stdout


# Codenames from LLVM's AMDGPUUsage processor table; product names from AMD's spec pages.
@pytest.mark.parametrize("name,want", [
    ("gfx942:sramecc+:xnack-", "gfx942"), ("gfx90a:xnack+", "gfx90a"), ("navi31", "gfx1100"), ("navi48", "gfx1201"),
    ("aldebaran", "gfx90a"), ("arcturus", "gfx908"), ("MI355X", "gfx950"), ("RX 9070 XT", "gfx1201"),
    ("navi44", "gfx1200"), ("strix-halo", "gfx1151"),
])
def test_codenames_and_target_id_suffixes(name, want):
    assert get_target(name).name == want


def test_unknown_target_feature_is_refused_with_the_valid_ones():
    with pytest.raises(TargetError, match=r"unknown target feature 'wavefrontsize64\+'.*xnack\+"):
        get_target("gfx1100:wavefrontsize64+")


def test_typo_in_target_suggests_the_closest():
    with pytest.raises(TargetError, match=r"did you mean [^?]*gfx1201"):
        get_target("gfx1210")


def test_typo_in_mnemonic_suggests_and_stays_short():
    with pytest.raises(InstructionError) as e:
        lookup("v_wmma_f32_16x16x16_f61", "gfx1201")
    msg = str(e.value)
    assert "did you mean v_wmma_f32_16x16x16_f16" in msg
    assert "tilesim instructions gfx1201" in msg
    assert len(msg) < 600  # was a 1,335-character list


def test_cli_typo_is_one_line_with_the_suggestion(capsys):
    assert main(["explain", "v_mfma_f32_32x32x8_f61", "--arch", "gfx942"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean v_mfma_f32_32x32x8_f16" in err


def test_py_typed_ships_with_the_package():
    assert (ROOT / "tilesim" / "py.typed").exists()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["tilesim"]


def _top_level_third_party_imports(module: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_nvidia_extra_installs_what_the_nvidia_runner_imports():
    imported = set()
    for f in (ROOT / "tilesim" / "hw").glob("nvidia*.py"):
        imported |= _top_level_third_party_imports(f)
    assert "cupy" in imported
    extra = PYPROJECT["project"]["optional-dependencies"]["nvidia"]
    assert any(req.startswith("cupy") for req in extra), extra


def test_testing_extra_is_lean():
    extra = {r.split(">")[0].split("=")[0] for r in PYPROJECT["project"]["optional-dependencies"]["testing"]}
    assert extra == {"pytest", "hypothesis"}


def test_emit_json_has_launch_facts_and_source(capsys):
    assert main(["emit", "examples/gemm.py", "--target", "gfx1201", "--format", "json"]) == 0
    (doc,) = __import__("json").loads(capsys.readouterr().out)
    assert doc["target"] == "gfx1201" and doc["block"] == [32, 1, 1] and doc["parameters"] == ["A", "B", "C"]
    assert "__builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12" in doc["builtins"]
    assert "__builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12" in doc["source"]


@pytest.mark.compiler
def test_compile_asm_prints_the_whole_assembly(capsys):
    assert main(["compile", "examples/gemm.py", "--target", "gfx1201", "--asm"]) == 0
    out = capsys.readouterr().out
    # the whole kernel, not only the matrix instructions: descriptor directives, loads, the end of the program
    for needle in (".amdhsa_kernel", "global_load", "v_wmma_f32_16x16x16_f16", "s_endpgm"):
        assert needle in out, needle
