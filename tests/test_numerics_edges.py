"""The numerics edge campaign's CI slice (``python tools/numerics_edges.py --quick``): every case
passes, every group and both paths (codec, simulated mma) are exercised, and a planted double
rounding is caught."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def campaign():
    spec = importlib.util.spec_from_file_location("tilesim_tools_numerics_edges", ROOT / "tools" / "numerics_edges.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_quick_slice_passes(campaign, tmp_path, capsys):
    out = tmp_path / "edges.json"
    assert campaign.main(["--quick", "--out", str(out)]) == 0, capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["failures"] == 0 and doc["cases"] >= 70
    assert set(doc["by_group"]) == {"special values", "round to nearest even", "saturation and overflow", "FNUZ vs OCP",
                                    "integers", "NaN and Inf through mma", "denormals"}
    assert doc["by_path"]["simulated mma"] >= 15 and doc["by_path"]["codec"] >= 40
    assert all(c["source"] for c in doc["results"]) and len(doc["known_divergences"]) == 3


def test_a_planted_double_rounding_is_caught(campaign, monkeypatch, tmp_path, capsys):
    from tilesim.matrix import dtypes

    # float64 -> float32 -> narrow format, rounding twice (the bug round-to-odd exists to prevent)
    monkeypatch.setattr(dtypes, "_f32_round_to_odd", lambda v: np.asarray(v, np.float64).astype(np.float32))
    assert campaign.main(["--quick", "--out", str(tmp_path / "x.json")]) == 1
    doc = json.loads((tmp_path / "x.json").read_text())
    failed = {c["case"] for c in doc["results"] if not c["ok"]}
    assert any("no double rounding" in c and c.startswith("fp8_ocp") for c in failed), failed


def test_the_campaigns_rounding_oracle_agrees_with_numpy(campaign):
    """``_ieee_round`` (exact rationals, from the IEEE definition) is the reference for the overflow
    cases; numpy's float64 -> float32/float16 casts are an independent check of it, ties included."""
    rng = np.random.default_rng(3)
    f32max = float(np.finfo(np.float32).max)
    xs = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.integers(-48, 39, 300),
                         [f32max + 2.0 ** 103, f32max + 2.0 ** 102, -(f32max + 2.0 ** 104), 2.0 ** -150,
                          3 * 2.0 ** -150, 1 + 2.0 ** -24, 1 + 3 * 2.0 ** -24, 65520.0, 65519.0, 2.0 ** -25, 3 * 2.0 ** -26]])
    with np.errstate(over="ignore"):
        want32 = xs.astype(np.float32).astype(np.float64)
        want16 = xs.astype(np.float16).astype(np.float64)
    assert [campaign._ieee_round(float(x), 24, 128, -149) for x in xs] == want32.tolist()
    assert [campaign._ieee_round(float(x), 11, 16, -24) for x in xs] == want16.tolist()
