"""The soundness campaign's CI slice (``python tools/soundness.py``, issue 13) and its own honesty.

The slice draws a hundred random GEMMs (``tilesim.testing.tile_cases``), mutates each once, and runs
the first program of every example with all its layout and structural mutants, checking the four
invariants. Planted failures — an untyped exception from ``simulate``, a ``check`` that says OK to
everything with a verdict that always passes — must show up as violations with reproducers.
"""

from __future__ import annotations

import json

import pytest

import tilesim
from tilesim.ir.core import Program
from tools import soundness

SLICE = dict(random=100, seed=3, cli=6, example_limit=1)


@pytest.fixture(scope="module")
def slice_doc():
    return soundness.run_campaign(**SLICE)


def test_slice_covers_every_source_and_invariant(slice_doc):
    doc = slice_doc
    assert doc["programs"] >= 300 and doc["seed"] == 3 and doc["invariants"] == list(soundness.INVARIANTS)
    kinds = doc["by_kind"]
    assert kinds["original"]["programs"] >= 100
    assert {"layout:lane_swap", "layout:k_perm_shared", "grid_shrink", "loop_trip", "store_drop"} <= set(kinds)
    # layout bugs are judged by the register model over golden layouts, not by the simulator
    assert sum(c.get("truth: register model", 0) for c in kinds.values()) >= 30
    # result-changing mutants exist and are all accounted for: caught, refused, or a violation
    for kind, c in kinds.items():
        if kind == "original":
            continue
        handled = c.get("caught_by_check", 0) + c.get("caught_by_verdict", 0) + c.get("refused_by_run", 0)
        assert handled <= c.get("result_changing", 0), kind
    assert doc["counts"]["cli programs"] >= 1
    for v in doc["violation_records"]:
        assert v["invariant"] in soundness.INVARIANTS and v["seed"] == 3
        assert json.loads(v["program_json"])["format"] == "tilesim.program/1"  # a reproducer


def test_an_untyped_exception_after_check_ok_is_a_violation(monkeypatch):
    real = tilesim.simulate

    def broken(prog, **arrays):
        if prog.name == "random_gemm":
            raise KeyError("planted")
        return real(prog, **arrays)

    monkeypatch.setattr(tilesim, "simulate", broken)
    doc = soundness.run_campaign(random=5, seed=0, cli=0, with_examples=False)
    i1 = [v for v in doc["violation_records"] if v["invariant"].startswith("I1")]
    assert i1 and "KeyError" in i1[0]["detail"] and doc["violations"] >= 5
    assert Program.from_json(i1[0]["program_json"]).name == "random_gemm"


def test_a_blind_check_and_a_verdict_that_always_passes_are_caught(monkeypatch):
    class Ok:
        ok = True
        errors: list = []

    monkeypatch.setattr(tilesim, "check", lambda prog: Ok())
    monkeypatch.setattr(soundness, "passing", lambda v: True)
    doc = soundness.run_campaign(random=20, seed=1, cli=0, with_examples=False)
    i3 = [v for v in doc["violation_records"] if v["invariant"].startswith("I3")]
    assert i3, doc["by_kind"]
    assert any("register model" in v["what"] for v in i3)  # a layout bug the simulator alone might not see


def test_exit_status_follows_violations(monkeypatch, tmp_path):
    monkeypatch.setattr(soundness, "run_campaign", lambda *a, **k: {
        "programs": 1, "seed": 0, "commit": "x", "seconds": 0, "violations": 1, "counts": {}, "by_kind": {},
        "violation_records": [{"invariant": soundness.INVARIANTS[0], "what": "w", "detail": "d"}]})
    assert soundness.main(["--json", str(tmp_path / "s.json")]) == 1
    monkeypatch.setattr(soundness, "run_campaign", lambda *a, **k: {
        "programs": 1, "seed": 0, "commit": "x", "seconds": 0, "violations": 0, "counts": {}, "by_kind": {},
        "violation_records": []})
    assert soundness.main(["--json", str(tmp_path / "s.json")]) == 0


def test_no_invariant_violations(slice_doc):
    """Issue 13's done-when, on the CI slice."""
    assert slice_doc["violations"] == 0, [v["what"][:160] for v in slice_doc["violation_records"][:10]]
