"""Verdicts fail closed (issue 13 items 1 and 5): a program whose simulation disagrees with the float64
reference, or that `check` rejects, gets a failing verdict (SIM_MISMATCH / CHECK_FAILED, exit 1)
whatever the device situation; COMPILE_ONLY / SIMULATED_ONLY only for a right simulation, with the
paths the program took and why it went no further; one exit-status table (README, `tilesim --help`,
docs/cli.md) that the commands obey.

The wrong program is the issue's: a gfx1100 (RDNA3) GEMM declared with RDNA4's accumulator rows.
Its expected error is independent of tilesim: the float64 product ``A @ B`` from numpy.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from examples import gemm, gemm_planted
from tests import _fake_runners as fake
from tilesim.cli import main
from tilesim.diff import EXIT_STATUS, PATHS, VERDICTS, Verdict, check_reference, exit_status, run
from tilesim.errors import TilesimError
from tilesim.matrix import lookup

ROOT = Path(__file__).resolve().parents[1]
WMMA = "v_wmma_f32_16x16x16_f16"
NV = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


def _rdna4_rows_on_rdna3():
    return gemm.gemm.specialize(target="gfx1100", M=32, N=32, K=32, mma=WMMA,
                                c_layout=lookup(WMMA, "gfx1201").layout("C"))


def _sm90(bug=None):
    return gemm.gemm.specialize(target="sm_90", M=32, N=32, K=32, mma=NV, **(bug or {}))


def _run(p, **kw):
    arrays = gemm.inputs(p)
    ref = {"C": arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)}  # numpy, not tilesim
    return run(p, reference=ref, **arrays, **kw)


# ---------------------------------------------------------------- the table

def test_every_verdict_has_one_exit_status_and_ok_mirrors_it(monkeypatch):
    assert set(VERDICTS) == set(EXIT_STATUS)
    assert {"SIM_MISMATCH", "CHECK_FAILED", "EMULATED_MATCH", "EMULATED_MISMATCH"} <= set(VERDICTS)
    p = _sm90()
    for status in VERDICTS:
        ran = {"MATCH": "device-run", "MISMATCH": "device-run", "EMULATED_MATCH": "emulated",
               "EMULATED_MISMATCH": "emulated"}.get(status)
        kw = {"device": {"C": np.zeros((32, 32))}, "paths": ("simulated", ran)} if ran else {}
        kw |= {"device_error": {"kind": "launch"}} if status == "DEVICE_ERROR" else {}
        kw |= {"check_errors": ["error: x"]} if status == "CHECK_FAILED" else {}
        v = Verdict(status, p, "r", {}, **kw)
        assert v.ok == (v.exit_status == 0) == (EXIT_STATUS[status] == 0)
        assert v.to_dict()["ok"] == v.ok and v.to_dict()["exit_status"] == EXIT_STATUS[status]
    with pytest.raises(TilesimError, match="fail closed"):
        Verdict("CHECK_FAILED", p, "r", {})  # a CHECK_FAILED names the errors
    with pytest.raises(TilesimError, match="fail closed"):
        Verdict("EMULATED_MATCH", p, "r", {}, device={"C": np.zeros((32, 32))})  # an emulator is no device
    with pytest.raises(TilesimError, match="unknown path"):
        Verdict("SIMULATED_ONLY", p, "r", {}, paths=("simulated", "guessed"))


def _documented(text: str) -> dict[str, int]:
    """verdict -> exit status from the `run` rows of a table (markdown or the --help text)."""
    out = {}
    md = re.search(r"^\| `tilesim run` \|(.*)\|\s*$", text, re.M)
    if md:
        for code, cell in zip((0, 1, 3, 4), md.group(1).split("|")):
            out |= {w: code for w in re.findall(r"[A-Z][A-Z_]+", cell)}
        return out
    block = re.search(r"^  run +0 (.*?)^  simulate", text, re.M | re.S).group(0)
    for code, words in re.findall(r"^\s+(?:run\s+)?([0134])\s+(.*)$", block, re.M):
        out |= {w: int(code) for w in re.findall(r"\b[A-Z][A-Z_]{3,}\b", words)}
    return out


@pytest.mark.parametrize("doc", ["README.md", "docs/cli.md"])
def test_documented_exit_table_equals_the_code(doc):
    assert _documented((ROOT / doc).read_text()) == EXIT_STATUS


def test_exit_status_over_several_verdicts():
    p = _sm90()

    def v(s):
        kw = {"device_error": {"kind": "launch"}} if s == "DEVICE_ERROR" else {}
        return Verdict(s, p, "r", {}, **kw)

    assert exit_status([v("SIMULATED_ONLY"), v("COMPILE_ONLY")]) == 0
    assert exit_status([v("DEVICE_ERROR"), v("SIM_MISMATCH")]) == 1
    assert exit_status([v("DEVICE_ERROR"), v("SIMULATED_ONLY")]) == 3


# ---------------------------------------------------------------- the commands on a right and a wrong program

RIGHT = "from examples.gemm import inputs, reference\nfrom examples.gemm import programs as _all\n" \
        "def programs():\n    return [p for p in _all(32, 32, 32) if p.target == 'sm_90']\n"
WRONG = textwrap.dedent("""
    from examples.gemm import gemm, inputs, reference
    from tilesim.matrix import lookup
    W = "v_wmma_f32_16x16x16_f16"
    def programs():
        return [gemm.specialize(target="gfx1100", M=32, N=32, K=32, mma=W,
                                c_layout=lookup(W, "gfx1201").layout("C"))]
""")
WRONG_NV = textwrap.dedent("""
    from examples.gemm_planted import inputs, reference, programs as _all
    def programs():
        return _all()[:1]
""")


@pytest.fixture
def files(tmp_path):
    d = tmp_path / "progs"
    d.mkdir()
    out = {}
    for name, text in (("right", RIGHT), ("wrong", WRONG), ("wrong_nv", WRONG_NV)):
        (d / f"{name}.py").write_text(text)
        out[name] = str(d / f"{name}.py")
    return out


@pytest.mark.parametrize("cmd,prog,code", [
    ("check", "right", 0), ("check", "wrong", 1), ("check", "wrong_nv", 1),
    ("simulate", "right", 0), ("simulate", "wrong", 1), ("simulate", "wrong_nv", 1),
    ("run", "right", 0), ("run", "wrong_nv", 1),
])
def test_each_command_exits_as_documented(files, capsys, cmd, prog, code):
    assert main([cmd, files[prog]]) == code, capsys.readouterr()


@pytest.mark.compiler
def test_run_on_the_issues_wrong_kernel_without_a_gpu_exits_1(files, capsys):
    """Issue 13 item 1: COMPILE_ONLY ... max |C| = 42.6 and exit 0 before; now SIM_MISMATCH, exit 1."""
    assert main(["run", files["wrong"]]) == 1
    out = capsys.readouterr().out
    assert out.startswith("SIM_MISMATCH: gemm on gfx1100") and "COMPILE_ONLY otherwise" in out
    assert "paths: simulated, emitted, compiled; device-run: no" in out


def test_simulate_json_says_whether_the_reference_holds(files, capsys):
    import json

    assert main(["simulate", files["wrong_nv"], "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)[0]
    assert doc["reference_ok"] is False and doc["max_abs_error_vs_reference"]["C"] > 1
    assert main(["simulate", files["right"], "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["reference_ok"] is True


# ---------------------------------------------------------------- verdicts through the API

def test_wrong_simulation_without_a_device_is_sim_mismatch_with_blame():
    v = _run(_sm90(gemm_planted.PLANTED["c_rows_lane5"]), device="none")  # SIMULATED_ONLY, exit 0 before
    assert v.status == "SIM_MISMATCH" and not v.ok and v.exit_status == 1
    assert "SIMULATED_ONLY otherwise" in v.reason and v.sim_vs_reference["C"] > 1
    assert "lanes 5 only" in v.pattern and all("lane 5," in b for b in v.blame)
    assert v.check_errors  # check sees it too, and the verdict says so
    assert "lane 5, v" in v.heatmap_svg()


def test_right_simulation_keeps_simulated_only():
    v = _run(_sm90(), device="none")
    assert v.status == "SIMULATED_ONLY" and v.ok and not v.check_errors
    assert v.paths == ("simulated", "emitted") and "device-run" in v.not_taken


def test_no_reference_is_said_and_check_errors_still_fail():
    arrays = gemm.inputs(_sm90())
    v = run(_sm90(), device="none", **arrays)
    assert v.status == "NOT_JUDGED" and v.exit_status == 4 and "no reference" in v.reason
    w = run(_sm90(gemm_planted.PLANTED["a_lane_off"]), device="none", **arrays)  # no reference: check decides
    assert w.status == "CHECK_FAILED" and not w.ok and "operand A" in w.reason and w.check_errors


def test_emit_refusal_is_a_reason_not_silence_and_a_wrong_simulation_still_fails(monkeypatch):
    import tilesim as ts
    from tilesim.codegen.hip import CodegenError
    from tilesim.diff import verdict as vd

    lay = lookup(NV, "sm_90").layout("C")

    @ts.kernel
    def double_math(X: ts.Tensor["f64", "M", "N"], Y: ts.Tensor["f64", "M", "N"]):
        x = ts.load(X[0:, 0:], lay)
        ts.store(Y[0:, 0:], x + x)

    def refuse(prog):  # every element type is emitted now (issue 16 item 5): the refusal is injected
        raise CodegenError("op 1 (elementwise): refused for this test")

    monkeypatch.setattr(vd, "emit_hip", refuse)
    p = double_math.specialize(target="sm_90", M=16, N=8)
    X = np.arange(128).reshape(16, 8) / 8
    right = run(p, reference={"Y": 2.0 * X.astype(np.float64)}, runner=fake.device_like_simulator, X=X)
    assert right.status == "SIMULATED_ONLY" and right.ok
    assert right.paths == ("simulated",) and "not emitted" in right.reason
    assert right.not_taken["emitted"] and right.not_taken["emitted"] in right.reason
    assert "emitted: no — " in str(right)
    wrong = run(p, reference={"Y": 3.0 * X.astype(np.float64)}, runner=fake.device_like_simulator, X=X)
    assert wrong.status == "SIM_MISMATCH" and not wrong.ok and "not emitted" in wrong.reason


def test_a_device_run_that_differs_keeps_mismatch_precedence():
    v = _run(_sm90(gemm_planted.PLANTED["c_rows_lane5"]), runner=fake.device_like_simulator)
    assert v.status == "MISMATCH" and v.device is not None and "reference" in v.reason
    assert v.paths == ("simulated", "emitted", "device-run") and v.device_vs_sim["C"] == 0


def test_a_wrong_program_beats_a_device_error():
    v = _run(_sm90(gemm_planted.PLANTED["c_rows_lane5"]), runner=fake.launch_failure)
    assert v.status == "SIM_MISMATCH" and v.exit_status == 1 and "unspecified launch failure" in v.reason
    assert v.not_taken["device-run"].startswith("launch")


def test_a_device_that_agrees_does_not_excuse_a_check_error():
    arrays = gemm.inputs(_sm90())
    v = run(_sm90(gemm_planted.PLANTED["a_lane_off"]), runner=fake.device_like_simulator, **arrays)
    assert v.status == "CHECK_FAILED" and v.device is None and "device-run" in v.paths


@pytest.mark.compiler
def test_amd_paths_and_sim_mismatch():
    v = _run(_rdna4_rows_on_rdna3())
    assert v.status == "SIM_MISMATCH" and v.paths == ("simulated", "emitted", "compiled")
    assert v.compile_metadata.get("vgpr_count") and "device-run" in v.not_taken
    assert _run(gemm.gemm.specialize(target="gfx1100", M=32, N=32, K=32, mma=WMMA)).status == "COMPILE_ONLY"


# ---------------------------------------------------------------- the tolerance

@pytest.mark.parametrize("module", ["gemm", "gemm_abt", "int8_gemm", "lds_gemm", "softmax", "fp8_gemm", "sparse_gemm",
                                    "batched_small_gemm", "block_gemm"])
def test_every_example_simulates_within_tolerance_of_its_reference(module):
    import importlib

    mod = importlib.import_module(f"examples.{module}")
    for p in mod.programs():
        arrays = mod.inputs(p)
        from tilesim import simulate

        res = simulate(p, **arrays)
        rc = check_reference(p, res.outputs, mod.reference(**arrays), arrays)
        assert rc.ok, (p.name, p.target, rc.describe())


def test_every_planted_bug_is_beyond_tolerance():
    for p in gemm_planted.programs():
        arrays = gemm_planted.inputs(p)
        from tilesim import simulate

        rc = check_reference(p, simulate(p, **arrays).outputs, gemm_planted.reference(**arrays), arrays)
        assert not rc.ok, p.name


def test_bad_references_are_typed_errors():
    p = _sm90()
    arrays = gemm.inputs(p)
    for ref, text in ((np.zeros((32, 32)), "must be a dict"), ({"D": np.zeros((32, 32))}, "not an output"),
                      ({"C": np.zeros((4, 4))}, "has shape"), ({"C": "x"}, "not numeric")):
        with pytest.raises(TilesimError, match=text):
            run(p, reference=ref, **arrays)


def test_heatmap_of_a_sim_mismatch(files, tmp_path, capsys):
    svg = tmp_path / "heat.svg"
    assert main(["run", files["wrong_nv"], "--device", "none", "--heatmap", str(svg)]) == 1
    assert "lane 5, v" in svg.read_text()


def test_run_help_names_every_verdict_and_leaves_exit_statuses_to_the_table():
    """0.8.0's `tilesim run --help` left EMULATED_MATCH/EMULATED_MISMATCH out and restated the exit rule
    without EMULATED_MISMATCH; the statuses are the one table of `tilesim --help` (checked above)."""
    import argparse

    from tilesim.cli.parser import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    text = sub.choices["run"].description
    assert set(re.findall(r"\b[A-Z][A-Z_]{3,}\b", text)) == set(VERDICTS)
    assert not re.search(r"\b[Ee]xits? [0-9] on\b", text)  # "exit 1 on X, Y": a second table
