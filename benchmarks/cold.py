"""The ``cold`` group: ``tilesim run`` in a fresh process on a fresh install copy (issue 17's cold start),
against warm runs, without bytecode, and with a ``hip`` module importable but no GPU."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.rows import _figure, _load

__all__ = ["bench_cold"]

ROOT = Path(__file__).resolve().parents[1]
_COLD_ARGS = ("run", "examples/gemm.py", "--target", "gfx1201")  # the command: device auto


def _child(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + sys, with the process's children: clang) of one fresh process."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def _install(dest: Path, bytecode: bool) -> None:
    """A fresh copy of tilesim and examples in ``dest``, byte-compiled as ``pip install`` does when
    ``bytecode`` (a wheel install), else left as source (a checkout run with PYTHONDONTWRITEBYTECODE)."""
    for name in ("tilesim", "examples"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if bytecode:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest)], env=env, check=True,
                       stdout=subprocess.DEVNULL)


def bench_cold(repeat: int) -> list[dict[str, Any]]:
    """``tilesim run examples/gemm.py --target gfx1201`` (device auto, the issue's command) in a fresh
    process on a fresh install: tilesim and examples copied into a new folder and byte-compiled as
    pip does, numba's cache (beside the copy's tilesim/wave/_jit.py) and tilesim's compile cache
    empty; then ``repeat`` more runs with the caches the first filled. The same from a copy without
    bytecode (every module compiled from source on every run: a checkout run with
    PYTHONDONTWRITEBYTECODE=1). And ``import tilesim`` alone against ``import numpy``. Nothing is
    written outside the temporary folder (PYTHONDONTWRITEBYTECODE=1 for the runs). Wall and CPU
    time: CPU time moves less with the load."""
    rows: list[dict[str, Any]] = []
    for bytecode in (True, False):
        l0 = _load()
        with tempfile.TemporaryDirectory() as d:
            pkg = Path(d, "install")
            _install(pkg, bytecode)
            env = {k: v for k, v in os.environ.items()
                   if k not in ("NUMBA_CACHE_DIR", "TILESIM_NO_CACHE", "PYTHONPYCACHEPREFIX")}
            env.update(PYTHONPATH=str(pkg), TILESIM_CACHE=str(Path(d, "cache")), PYTHONDONTWRITEBYTECODE="1")
            cmd = [sys.executable, "-m", "tilesim", *_COLD_ARGS]
            cold_wall, cold_cpu = _child(cmd, pkg, env)
            warm = [_child(cmd, pkg, env) for _ in range(max(1, repeat))]
            if bytecode:
                imp = [_child([sys.executable, "-c", "import tilesim"], pkg, env) for _ in range(3)]
                base = [_child([sys.executable, "-c", "import numpy"], pkg, env) for _ in range(3)]
                # a machine with hip-python installed but no AMD GPU: tests/fakes/hip stands in for the
                # module (not allowed: TILESIM_ALLOW_FAKE_HIP unset, as outside tilesim's tests)
                shutil.copytree(ROOT / "tests" / "fakes" / "hip", Path(d, "fakes", "hip"))
                hip_env = {**env, "PYTHONPATH": os.pathsep.join([str(pkg), str(Path(d, "fakes"))])}
                hip_env.pop("TILESIM_ALLOW_FAKE_HIP", None)
                hip = [_child(cmd, pkg, hip_env) for _ in range(max(1, repeat))]
        how = "fresh install (bytecode compiled)" if bytecode else "source copy without bytecode"
        what = f"tilesim {' '.join(_COLD_ARGS)}, {how}"
        sfx = "" if bytecode else "-nobytecode"
        rows += [_figure(f"cold/run-first{sfx}", f"{what}, empty numba + compile caches (wall)", cold_wall, "s",
                         "next runs, caches filled (wall)", [w for w, _ in warm], load_start=l0,
                         target={"max_seconds": 1.5} if bytecode else None, cpu_seconds=cold_cpu, bytecode=bytecode),
                 _figure(f"cold/run-first-cpu{sfx}", f"{what}, empty caches (CPU user+sys)", cold_cpu, "s",
                         "next runs, caches filled (CPU)", [c for _, c in warm], load_start=l0, bytecode=bytecode)]
        if bytecode:
            rows.append(_figure("cold/import", "import tilesim, fresh process, fresh install (wall)",
                                [w for w, _ in imp], "s", "import numpy (wall)", [w for w, _ in base], load_start=l0,
                                cpu_seconds=min(c for _, c in imp), baseline_cpu_seconds=min(c for _, c in base)))
            rows.append(_figure("cold/run-hip-no-gpu", f"{what}, caches filled, a `hip` module importable but no "
                                "AMD GPU (wall)", [w for w, _ in hip], "s", "the same without `hip` (wall)",
                                [w for w, _ in warm], load_start=l0, cpu_seconds=[c for _, c in hip],
                                baseline_cpu_seconds=[c for _, c in warm]))
    return rows
