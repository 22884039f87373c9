"""The numerics edge campaign's CI slice (``python tools/numerics_edges.py --quick``) and the
bit-level decoders it trusts (``tests/_bitcodecs.py``, written from the format specifications).

Every case passes on tilesim; every group and path is exercised; and deliberate bugs are caught: a
double rounding, FNUZ and OCP swapped in tilesim's dtype table, a register codec that writes one
element into the wrong bits."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tests import _bitcodecs as bc

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
    assert doc["failures"] == 0 and doc["cases"] >= 120
    assert set(doc["by_group"]) == {"bit patterns", "special values", "round to nearest even", "saturation and overflow",
                                    "register codec", "FNUZ vs OCP", "integers", "NaN and Inf through mma",
                                    "denormals", "self-check"}
    assert doc["by_path"]["simulated mma"] >= 15 and doc["by_path"]["codec"] >= 60
    assert doc["by_path"]["register codec"] >= 20 and doc["by_path"]["register-level mma"] >= 4
    assert all(c["source"] for c in doc["results"]) and len(doc["known_divergences"]) == 3
    # every float format's every pattern is compared with the spec decoder, exhaustively
    exhaustive = {c["case"].split(":")[0] for c in doc["results"] if "bit patterns decode as the specification" in c["case"]}
    assert exhaustive == {"f16", "bf16", "fp8_ocp", "bf8_ocp", "fp8_fnuz", "bf8_fnuz", "fp6", "bf6", "fp4", "e8m0"}


def test_a_planted_double_rounding_is_caught(campaign, monkeypatch, tmp_path):
    from tilesim.matrix import dtypes

    # float64 -> float32 -> narrow format, rounding twice (the bug round-to-odd exists to prevent)
    monkeypatch.setattr(dtypes, "_f32_round_to_odd", lambda v: np.asarray(v, np.float64).astype(np.float32))
    assert campaign.main(["--quick", "--out", str(tmp_path / "x.json")]) == 1
    doc = json.loads((tmp_path / "x.json").read_text())
    failed = {c["case"] for c in doc["results"] if not c["ok"]}
    assert any("no double rounding" in c and c.startswith("fp8_ocp") for c in failed), failed


def test_fnuz_and_ocp_swapped_inside_tilesim_fail_every_fp8_case(campaign, tmp_path):
    """The issue-19 check: with FNUZ and OCP exchanged in tilesim's dtype table, the old campaign
    still passed 9 of 12 FNUZ cases. Now every exhaustive fp8/bf8 case and every FNUZ-vs-OCP case fails."""
    with campaign.swapped_fp8_flavours():
        rc = campaign.main(["--quick", "--out", str(tmp_path / "s.json")])
    assert rc == 1
    doc = json.loads((tmp_path / "s.json").read_text())
    fp8 = [c for c in doc["results"] if c["group"] in ("bit patterns", "register codec")
           and c["case"].startswith(("fp8_", "bf8_"))]
    assert len(fp8) >= 12 and not any(c["ok"] for c in fp8)
    flav = [c for c in doc["results"] if c["group"] == "FNUZ vs OCP"]
    assert flav and not any(c["ok"] for c in flav if c["via"] in ("codec", "register-level mma")
                            and not c["case"].startswith(("fp8_fnuz: -0.0", "bf8_fnuz: -0.0")))
    # and the unswapped run's own self-check case says the swap is caught
    assert campaign.main(["--quick", "--out", str(tmp_path / "ok.json")]) == 0
    (sc,) = [c for c in json.loads((tmp_path / "ok.json").read_text())["results"] if c["group"] == "self-check"]
    assert sc["ok"] and sc["got"] == sc["want"] >= 20


def test_a_register_codec_that_misplaces_bits_is_caught(campaign, monkeypatch, tmp_path):
    wave_codec_mod = importlib.import_module("tilesim.wave.codec")

    real = wave_codec_mod.Codec.from_tile

    def off_by_one_bit(self, tile):
        regs = np.array(real(self, tile))
        regs[..., 0, 0] ^= np.uint32(1 << 3)  # lane 0, VGPR 0: one flipped bit
        return regs

    monkeypatch.setattr(wave_codec_mod.Codec, "from_tile", off_by_one_bit)
    assert campaign.main(["--quick", "--out", str(tmp_path / "c.json")]) == 1
    doc = json.loads((tmp_path / "c.json").read_text())
    bad = {c["case"].split(":")[0] for c in doc["results"] if c["group"] == "register codec" and not c["ok"]}
    assert {"f16", "bf16", "fp8_ocp", "fp8_fnuz", "fp4", "i8"} <= bad


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


# ---------------------------------------------------------------------------------- the spec decoders
def _same(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return bool(np.all(((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))))


@pytest.mark.parametrize(("fmt", "pattern", "value"), [
    # values read off the specifications' tables
    ("f16", 0x3C00, 1.0), ("f16", 0x7BFF, 65504.0), ("f16", 0x0001, 2.0 ** -24), ("f16", 0x8000, -0.0),
    ("f16", 0x7C00, np.inf), ("f16", 0xFE00, np.nan), ("bf16", 0x3F80, 1.0), ("bf16", 0xFF80, -np.inf),
    ("fp8_ocp", 0x7E, 448.0), ("fp8_ocp", 0x78, 256.0), ("fp8_ocp", 0x7F, np.nan), ("fp8_ocp", 0x08, 2.0 ** -6),
    ("fp8_ocp", 0x01, 2.0 ** -9), ("fp8_ocp", 0x80, -0.0), ("bf8_ocp", 0x7B, 57344.0), ("bf8_ocp", 0x7C, np.inf),
    ("bf8_ocp", 0x7D, np.nan), ("fp8_fnuz", 0x7F, 240.0), ("fp8_fnuz", 0x80, np.nan), ("fp8_fnuz", 0x40, 1.0),
    ("fp8_fnuz", 0x01, 2.0 ** -10), ("bf8_fnuz", 0x7F, 57344.0), ("bf8_fnuz", 0x7C, 32768.0),
    ("bf8_fnuz", 0x80, np.nan), ("fp6", 0x1F, 7.5), ("fp6", 0x01, 0.125), ("fp6", 0x20, -0.0), ("bf6", 0x1F, 28.0),
    ("bf6", 0x01, 0.0625), ("fp4", 0x7, 6.0), ("fp4", 0x1, 0.5), ("fp4", 0xF, -6.0), ("e8m0", 0x7F, 1.0),
    ("e8m0", 0x00, 2.0 ** -127), ("e8m0", 0xFE, 2.0 ** 127), ("e8m0", 0xFF, np.nan),
])
def test_spec_decoder_on_table_values(fmt, pattern, value):
    assert _same(bc.decode(np.array([pattern]), fmt), [value])


@pytest.mark.parametrize("fmt", ["f16", "bf16", "fp8_ocp", "bf8_ocp", "fp8_fnuz", "bf8_fnuz", "fp6", "bf6", "fp4", "e8m0"])
def test_spec_decoder_agrees_with_two_other_implementations(fmt):
    """Witnesses for the decoder itself (tilesim is not involved): numpy's float16 and ml_dtypes."""
    f = bc.FORMATS[fmt]
    pats = np.arange(1 << f.bits)
    t = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "fp8_ocp": ml_dtypes.float8_e4m3fn,
         "bf8_ocp": ml_dtypes.float8_e5m2, "fp8_fnuz": ml_dtypes.float8_e4m3fnuz, "bf8_fnuz": ml_dtypes.float8_e5m2fnuz,
         "fp6": ml_dtypes.float6_e2m3fn, "bf6": ml_dtypes.float6_e3m2fn, "fp4": ml_dtypes.float4_e2m1fn,
         "e8m0": ml_dtypes.float8_e8m0fnu}[fmt]
    with np.errstate(invalid="ignore"):
        ml = pats.astype(np.uint16 if f.bits == 16 else np.uint8).view(t).astype(np.float64)
    assert _same(bc.decode(pats, fmt), ml)


@pytest.mark.parametrize("fmt", ["f16", "bf16", "fp8_ocp", "bf8_ocp", "fp8_fnuz", "bf8_fnuz", "fp6", "bf6", "fp4"])
def test_spec_encoder_round_trips_and_rounds_ties_to_even(fmt):
    f = bc.FORMATS[fmt]
    pats = np.arange(1 << f.bits)
    vals = bc.decode(pats, fmt)
    fin = ~np.isnan(vals)
    assert (bc.encode(vals[fin], fmt) == pats[fin]).all()
    s = np.unique(vals[np.isfinite(vals)])
    mids = (s[1:] + s[:-1]) / 2
    got = bc.encode(mids, fmt)
    assert (got % 2 == 0).all()  # ties land on the even pattern ...
    back = bc.decode(got, fmt)
    assert ((back == s[:-1]) | (back == s[1:])).all()  # ... which is one of the two neighbours


def test_spec_encoder_matches_numpy_float16_on_random_doubles():
    rng = np.random.default_rng(5)
    xs = rng.standard_normal(20000) * 2.0 ** rng.integers(-30, 20, 20000)
    with np.errstate(over="ignore"):
        want = xs.astype(np.float16).view(np.uint16).astype(np.int64)
    assert (bc.encode(xs, "f16") == want).all()
