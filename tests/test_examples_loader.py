"""tilesim.examples.load finds the checkout's examples/ from any working directory, without the
repository root on sys.path, and fails with a typed error naming the choices."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tilesim.examples import ExamplesError, load, names

ROOT = Path(__file__).resolve().parents[1]


def test_loads_from_another_folder_without_the_repo_on_sys_path(tmp_path):
    shim = tmp_path / "path"
    shim.mkdir()
    (shim / "tilesim").symlink_to(ROOT / "tilesim", target_is_directory=True)
    code = ("import importlib.util\nassert importlib.util.find_spec('examples') is None\n"
            "from tilesim.examples import load\np = load('gemm_planted')\n"  # imports examples.gemm itself
            "print(p.__file__, p.gemm.__module__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(shim)})
    assert out.returncode == 0, out.stderr
    file, module = out.stdout.split()
    assert Path(file) == ROOT / "examples" / "gemm_planted.py" and module == "examples.gemm"


def test_names_and_unknown_example():
    assert {"gemm", "gemm_planted", "softmax"} <= set(names()) and "__init__" not in names()
    with pytest.raises(ExamplesError, match="no example 'gem'.*gemm"):
        load("gem")


def test_missing_folder_is_a_typed_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TILESIM_EXAMPLES", str(tmp_path))
    with pytest.raises(ExamplesError, match="source checkout"):
        load("gemm")


def test_never_shadows_another_examples_package(tmp_path, monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "examples", types.ModuleType("examples"))
    with pytest.raises(ExamplesError, match="different module named 'examples'"):
        load("gemm")
