"""The benchmark harness's CI slice (``python -m benchmarks --quick``): it runs and writes the JSON
the docs describe. No timing is asserted — figures vary with the machine; the table says whether
each target is met. Also: the compiled batched dot product equals numpy's einsum bit for bit on
sums that round (the simulator relies on it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tilesim.wave.kernels import _batched_dot_numpy, batched_dot

ROOT = Path(__file__).resolve().parents[1]


def test_quick_run_writes_the_documented_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    p = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--only", "gemm,lds,isa,export", "--out",
                        str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["schema"] == "tilesim.bench/1" and doc["mode"] == "quick"
    m = doc["machine"]
    assert m["cores"] == __import__("os").cpu_count() and "blas" in m and "numpy" in m
    import numba

    assert m["simulator_threads"] == numba.get_num_threads()
    ids = [f["id"] for f in doc["figures"]]
    for t in ("gfx1201", "gfx942"):
        assert f"gemm/{t}/128" in ids and f"gemm-memory/{t}/128" in ids
    assert any(i.startswith("lds/") for i in ids) and "export/catalog" in ids
    isa = [f for f in doc["figures"] if f["id"].startswith("isa/")]
    if isa:  # the emulator's rows: 64³ only in --quick, same answer as the simulator
        assert sorted(f["id"] for f in isa) == ["isa/gfx1201/64", "isa/gfx942/64"]
        assert all(f["extra"]["bit_exact_to_simulator"] and f["extra"]["wave_instructions"] > 0 for f in isa)
    else:
        assert "isa: skipped" in p.stderr  # no offline clang: said so
    for f in doc["figures"]:
        assert set(f) >= {"id", "what", "value", "median", "unit", "baseline", "ratio", "ratio_median", "target",
                          "met", "load_average_1min", "extra"}
        assert f["value"] > 0 and f["baseline"]["value"] > 0
        assert 0 < f["value"] <= f["median"] and 0 < f["baseline"]["value"] <= f["baseline"]["median"]
        assert f["ratio"] == pytest.approx(f["value"] / f["baseline"]["value"])
        assert f["ratio_median"] == pytest.approx(f["median"] / f["baseline"]["median"])
        assert f["met"] is None or isinstance(f["met"], bool)
        assert set(f["load_average_1min"]) == {"start", "end"}
    timed = next(f for f in doc["figures"] if f["id"] == "gemm/gfx942/128")
    assert timed["repeats"] >= 3 and timed["baseline"]["repeats"] >= 10  # min and median over repeats
    gemm = next(f for f in doc["figures"] if f["id"] == "gemm/gfx1201/128")
    try:
        import threadpoolctl  # noqa: F401  (the dev extra has it)

        # 128³ = 2²¹ MACs, below the 2²⁶ from which a fused chain runs on threads: one thread each side
        assert gemm["extra"]["blas_threads"] == 1
    except ImportError:
        assert gemm["extra"]["blas_threads"] is None  # unpinned, and said so
    assert gemm["extra"]["max_rel_error_vs_float64"] < 1e-5  # the simulated GEMM is right, not only timed
    assert "figure" in p.stdout and "ratio" in p.stdout  # the table


@pytest.mark.parametrize("shape", [(64, 16, 16, 16), (16, 32, 32, 8), (8, 4, 4, 4), (8, 16, 8, 16), (4, 32, 32, 1)])
def test_batched_dot_is_einsum_bit_for_bit(shape: tuple[int, int, int, int]) -> None:
    G, M, N, K = shape
    rng = np.random.default_rng(1)

    def spread(*s: int) -> np.ndarray:  # exponents far apart: the float64 sums round, so order shows
        return rng.standard_normal(s) * 2.0 ** rng.integers(-60, 60, s)

    a, b, c = spread(G, M, K), spread(G, K, N), spread(G, M, N)
    want = _batched_dot_numpy(a, b, c)
    assert np.array_equal(batched_dot(a, b, c).view(np.uint64), want.view(np.uint64))
    a[0, 0, 0], c[-1, -1, -1] = np.nan, -np.inf  # NaN results: the einsum path (payloads follow numpy)
    assert np.array_equal(batched_dot(a, b, c).view(np.uint64), _batched_dot_numpy(a, b, c).view(np.uint64))


def test_cuda_figures_skip_cleanly_without_a_gpu(tmp_path: Path) -> None:
    """``python -m benchmarks.cuda`` is safe anywhere: without CuPy or an sm_90 GPU it says why and exits 0."""
    try:
        import cupy  # noqa: F401

        pytest.skip("CuPy is installed: the figures would run (device machine)")
    except ImportError:
        pass
    out = tmp_path / "cuda.json"
    p = subprocess.run([sys.executable, "-m", "benchmarks.cuda", "--out", str(out)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.startswith("skipped: ") and "CuPy" in json.loads(out.read_text())["skipped"]
    bad = subprocess.run([sys.executable, "-m", "benchmarks.cuda", "--size", "100"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "multiple of 64" in bad.stderr and "Traceback" not in bad.stderr
