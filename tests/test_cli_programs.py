"""The program commands of the CLI: check, simulate, emit, compile, run (exit codes and output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tilesim.cli import main

ROOT = Path(__file__).resolve().parents[1]
GEMM = str(ROOT / "examples" / "gemm.py")
PLANTED = str(ROOT / "examples" / "gemm_planted.py")


def test_check_ok_and_failing(capsys):
    assert main(["check", GEMM]) == 0
    assert capsys.readouterr().out.count(": OK;") == 5
    assert main(["check", PLANTED, "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc[0]["ok"] is False and "lane 5" in doc[0]["findings"][0]["message"]


def test_simulate_reports_and_inspects(capsys):
    assert main(["simulate", GEMM, "--target", "gfx1100", "--inspect", "%9"]) == 0
    out = capsys.readouterr().out
    assert "max |C - reference|" in out and "%9<acc> : f32 fragment" in out  # named after the user's variable


@pytest.mark.compiler
def test_emit_compile_run(capsys):
    assert main(["emit", GEMM, "--target", "sm_90"]) == 0
    assert "mma.sync.aligned.m16n8k16" in capsys.readouterr().out
    assert main(["compile", PLANTED.replace("gemm_planted", "gemm"), "--target", "gfx1201", "--isa"]) == 0
    out = capsys.readouterr().out
    assert "VGPRs (estimate" in out and "v_wmma_f32_16x16x16_f16" in out
    assert main(["run", GEMM, "--target", "gfx1201", "--format", "json"]) == 0
    (v,) = json.loads(capsys.readouterr().out)
    assert v["verdict"] == "COMPILE_ONLY" and "not run on AMD hardware" in v["reason"]


@pytest.mark.parametrize("argv,needle", [(["run", GEMM, "--target", "gfx1030"], "no program for gfx1030"),
                                        (["check", "nope.py"], "no such file"),
                                        (["run", GEMM, "--device", "gpu"], "invalid choice")])
def test_program_command_errors_are_one_line(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tilesim: error:") and needle in err[0]


def test_layout_pictures_and_gallery(tmp_path, capsys):
    assert main(["layout", "--arch", "gfx1100", "--instr", "v_wmma_f32_16x16x16_f16", "--operand", "A",
                 "--format", "svg"]) == 0
    assert capsys.readouterr().out.startswith("<svg")
    out = tmp_path / "cmp.svg"
    assert main(["layout", "--arch", "gfx1100", "--instr", "v_wmma_f32_16x16x16_f16", "--operand", "D",
                 "--format", "svg", "--compare", "gfx1201", "--out", str(out)]) == 0
    assert "224 of 256 elements differ" in out.read_text()
    assert main(["gallery", str(tmp_path / "g"), "--family", "sm80"]) == 0
    assert (tmp_path / "g" / "index.html").exists()
    assert main(["layout", "--arch", "gfx1100", "--instr", "v_wmma_f32_16x16x16_f16", "--operand", "A",
                 "--format", "png"]) == 2
    assert "--out" in capsys.readouterr().err
