"""The ``tilesim`` command line, run in-process (plus one run of the installed console script).

Expected facts come from outside the CLI: target names and wave sizes from LLVM's processor
table; the RDNA4 wave32 accumulator layout from the RDNA4 ISA §7.9 / AMD's matrix instruction
calculator (D[i][j] in lane 16*(i//8) + j, VGPR i % 8, all 32 bits); the MFMA's two LLVM
spellings and its 32 cycles on CDNA3 from the calculator; the error contract (one line
``tilesim: error: …`` naming the value and the choices, status 2) from the CLI's own docstring.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tilesim.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def ok(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    rc, out, err = run(capsys, *argv)
    assert rc == 0, err
    assert err == ""
    return out


# --------------------------------------------------------------------------- targets / instructions
def test_targets_table(capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(capsys, "targets")
    lines = out.splitlines()
    rows = {ln.split()[0]: ln for ln in lines[2:]}
    for name in ("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1201", "gfx1250", "sm_90"):
        assert name in rows
    assert " 64 " in rows["gfx942"] and "32/64" in rows["gfx1201"]
    assert "fnuz" in rows["gfx942"] and "ocp" in rows["gfx950"]


def test_targets_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(ok(capsys, "targets", "--format", "json"))
    by_name = {t["name"]: t for t in data}
    assert by_name["gfx942"]["wave_sizes"] == [64]
    assert by_name["gfx942"]["fp8"] == "fnuz"
    assert by_name["gfx1201"]["wave_sizes"] == [32, 64]
    assert by_name["gfx1250"]["wave_sizes"] == [32]
    assert "xf32" in by_name["gfx942"]["features"] and "xf32" not in by_name["gfx950"]["features"]


def test_instructions_gfx942(capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(capsys, "instructions", "gfx942")
    names = [ln.split()[0] for ln in out.splitlines()[2:] if ln.strip()]
    assert "v_mfma_f32_32x32x8_f16" in names  # gfx94x spelling
    assert "v_mfma_f32_32x32x8f16" not in names
    assert not any(n.startswith("v_wmma") for n in names)
    assert re.search(r"v_mfma_f32_32x32x8_f16\s+32x32x8\s+f16 -> f32\s+w64", out)


def test_instructions_gfx1030_has_none(capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(capsys, "instructions", "gfx1030")
    assert "gfx1030" in out and "no matrix instructions" in out and "dp4a" in out
    assert json.loads(ok(capsys, "instructions", "gfx1030", "--format", "json")) == []


def test_instructions_sm90_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(ok(capsys, "instructions", "sm_90", "--format", "json"))
    names = {d["mnemonic"] for d in data}
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in names
    assert any("e4m3" in n for n in names)  # sm_90 has fp8 mma (PTX: sm_89+)
    assert all(d["wave_sizes"] == [32] for d in data)
    first = next(d for d in data if d["mnemonic"] == "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    assert (first["m"], first["n"], first["k"]) == (16, 8, 16)
    sm80 = [d["mnemonic"] for d in json.loads(ok(capsys, "instructions", "sm_80", "--format", "json"))]
    assert sm80 and not any("e4m3" in n or "e5m2" in n for n in sm80)  # no fp8 mma before sm_89


# --------------------------------------------------------------------------- explain
def test_explain_text(capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(capsys, "explain", "v_mfma_f32_32x32x8f16", "--arch", "gfx942")
    assert "v_mfma_f32_32x32x8_f16" in out and "v_mfma_f32_32x32x8f16" in out  # both spellings
    assert re.search(r"registers\s+A 2, B 2, C 16, D 16", out)  # 32*8 f16 / 64 lanes = 4 -> 2 VGPRs
    assert re.search(r"cycles\s+32\b", out)
    assert re.search(r"A\[i\]\[k\] -> lane = ", out)  # a lane formula
    assert "FLOPs 16384" in out  # 2 * 32 * 32 * 8


def test_explain_json(capsys: pytest.CaptureFixture[str]) -> None:
    d = json.loads(ok(capsys, "explain", "v_mfma_f32_32x32x8f16", "--arch", "gfx942", "--format", "json"))
    assert d["mnemonic"] == "v_mfma_f32_32x32x8_f16"
    assert "v_mfma_f32_32x32x8f16" in d["aliases"]
    assert d["cycles"] == 32
    assert d["registers"]["64"] == {"A": 2, "B": 2, "C": 16, "D": 16}
    assert "lane" in d["formulas"]["D"]["where"]


def test_explain_same_row_by_either_spelling(capsys: pytest.CaptureFixture[str]) -> None:
    a = ok(capsys, "explain", "v_mfma_f32_32x32x8f16", "--arch", "gfx942")
    b = ok(capsys, "explain", "v_mfma_f32_32x32x8_f16", "--arch", "gfx942")
    assert a == b


# --------------------------------------------------------------------------- layout
LAYOUT = ("layout", "--arch", "gfx1201", "--instr", "v_wmma_f32_16x16x16_f16", "--operand", "D")


def _rdna4_w32_d(i: int, j: int) -> tuple[int, int]:
    """RDNA4 ISA §7.9 (wave32, 32-bit C/D): element (i, j) -> (lane, VGPR)."""
    return 16 * (i // 8) + j, i % 8


def test_layout_csv_rdna4_accumulator(capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(capsys, *LAYOUT, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert out.splitlines()[0] == "block,row,col,vgpr,lane,bit_lo,bit_hi"
    assert len(rows) == 256
    seen = set()
    for r in rows:
        i, j = int(r["row"]), int(r["col"])
        lane, vgpr = _rdna4_w32_d(i, j)
        assert (int(r["lane"]), int(r["vgpr"])) == (lane, vgpr), r
        assert (int(r["block"]), int(r["bit_lo"]), int(r["bit_hi"])) == (0, 0, 31)
        seen.add((i, j))
    assert seen == {(i, j) for i in range(16) for j in range(16)}
    # spot checks written out by hand from the formula
    spot = {(0, 0): (0, 0), (7, 15): (15, 7), (8, 0): (16, 0), (9, 3): (19, 1), (15, 15): (31, 7)}
    got = {(int(r["row"]), int(r["col"])): (int(r["lane"]), int(r["vgpr"])) for r in rows}
    assert {k: got[k] for k in spot} == spot


def test_layout_json(capsys: pytest.CaptureFixture[str]) -> None:
    d = json.loads(ok(capsys, *LAYOUT, "--format", "json"))
    assert d["arch"] == "gfx1201" and d["operand"] == "D" and d["wave"] == 32
    assert len(d["locations"]) == 256
    fields = d.get("location_fields", ["block", "row", "col", "vgpr", "lane", "bit_lo", "bit_hi"])
    for loc in d["locations"]:
        rec = dict(zip(fields, loc))
        assert (rec["lane"], rec["vgpr"]) == _rdna4_w32_d(rec["row"], rec["col"])


def test_layout_registers_view(capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(capsys, *LAYOUT, "--view", "registers")
    lines = out.splitlines()
    assert lines[0].split() == ["lane"] + [f"v{v}" for v in range(8)]
    body = {int(ln.split()[0]): ln.split()[1:] for ln in lines[2:]}
    assert sorted(body) == list(range(32))
    for lane in (0, 5, 16, 31):
        for v in range(8):
            i, j = v + 8 * (lane // 16), lane % 16  # the inverse of the ISA formula
            assert body[lane][v] == f"({i},{j})"


def test_layout_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(capsys, *LAYOUT, "--format", "markdown")
    lines = out.splitlines()
    assert lines[0].startswith("| row |") and lines[1].startswith("|---")
    cells = [c.strip() for c in lines[2 + 9].strip("|").split("|")]  # row 9
    assert cells[0] == "9"
    assert cells[1 + 3] == "L19.v1"  # D[9][3]: lane 16 + 3, VGPR 1
    reg = ok(capsys, *LAYOUT, "--format", "markdown", "--view", "registers")
    assert reg.splitlines()[0].startswith("| lane |")


def test_layout_table_default(capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(capsys, *LAYOUT)
    row9 = next(ln for ln in out.splitlines() if ln.split() and ln.split()[0] == "9")
    assert row9.split()[1 + 3] == "L19.v1"


def test_layout_modifiers_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    # CDNA broadcast: cbsz=1, abid=1 on a 2-block MFMA; RDNA3 OPSEL[2] moves 16-bit D to the high halves
    out = ok(capsys, "layout", "--arch", "gfx90a", "--instr", "v_mfma_f32_32x32x1f32", "--operand", "A",
             "--cbsz", "1", "--abid", "1", "--format", "csv")
    assert len(out.splitlines()) > 1
    hi = ok(capsys, "layout", "--arch", "gfx1100", "--instr", "v_wmma_f16_16x16x16_f16", "--operand", "D",
            "--opsel", "4", "--format", "csv")
    assert {r["bit_lo"] for r in csv.DictReader(io.StringIO(hi))} == {"16"}
    lo = ok(capsys, "layout", "--arch", "gfx1100", "--instr", "v_wmma_f16_16x16x16_f16", "--operand", "D",
            "--format", "csv")
    assert {r["bit_lo"] for r in csv.DictReader(io.StringIO(lo))} == {"0"}


# --------------------------------------------------------------------------- errors
def bad(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    rc, out, err = run(capsys, *argv)
    assert rc == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tilesim: error: ")
    assert "Traceback" not in err
    return lines[0]


ERRORS = [
    # argv, strings the one line must contain (the bad value, then valid choices)
    (["instructions", "gfx9999"], ["gfx9999", "gfx942", "gfx1201", "sm_90"]),
    (["explain", "v_mfma_nope", "--arch", "gfx942"], ["v_mfma_nope", "v_mfma_f32_32x32x8_f16"]),
    (["explain", "v_wmma_f32_16x16x16_f16", "--arch", "gfx1030"], ["gfx1030", "dp4a", "gfx1100", "gfx1201"]),
    ([*LAYOUT[:-1], "Q"], ["'Q'", "A, B, C, D"]),
    (["layout", "--arch", "gfx1250", "--instr", "v_wmma_f32_16x16x32_f16", "--operand", "A", "--wave", "64"],
     ["wave64", "32"]),
    (["layout", "--arch", "gfx942", "--instr", "v_mfma_f32_32x32x8f16", "--operand", "A", "--wave", "32"],
     ["wave32", "64"]),
    (["layout", "--arch", "gfx942", "--instr", "v_mfma_f32_32x32x8f16", "--operand", "A", "--cbsz", "1"],
     ["CBSZ", "none"]),
    (["layout", "--arch", "gfx90a", "--instr", "v_mfma_f32_32x32x1f32", "--operand", "A", "--cbsz", "3"],
     ["cbsz=3", "0, 1"]),
    (["layout", "--arch", "gfx90a", "--instr", "v_mfma_f32_16x16x1f32", "--operand", "A", "--cbsz", "1",
      "--abid", "2"], ["abid=2", "2"]),
    (["layout", "--arch", "gfx90a", "--instr", "v_mfma_f32_32x32x1f32", "--operand", "A", "--cbsz", "0",
      "--abid", "1"], ["abid=1", "1"]),
    (["layout", "--arch", "gfx90a", "--instr", "v_mfma_f32_32x32x1f32", "--operand", "B", "--blgp", "9"],
     ["blgp=9", "0, 1, 2, 3, 4, 5, 6, 7"]),
    (["layout", "--arch", "gfx1100", "--instr", "v_wmma_f16_16x16x16_f16", "--operand", "D", "--opsel", "1"],
     ["opsel=1", "0, 4"]),
    # argparse-level mistakes keep the same one-line contract
    (["layout", "--arch", "gfx942"], ["--instr", "--operand"]),
    ([*LAYOUT, "--format", "xml"], ["'xml'", "csv", "json"]),
    ([*LAYOUT, "--opsel", "abc"], ["'abc'"]),
    (["frobnicate"], ["'frobnicate'", "targets", "layout"]),
]


@pytest.mark.parametrize("argv, needles", ERRORS, ids=[" ".join(a[:2]) + f"#{n}" for n, (a, _) in enumerate(ERRORS)])
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str],
                                          needles: list[str]) -> None:
    line = bad(capsys, *argv)
    for s in needles:
        assert s.lower() in line.lower(), (s, line)


def test_wmma_on_gfx1030_names_its_matrix_path(capsys: pytest.CaptureFixture[str]) -> None:
    line = bad(capsys, "layout", "--arch", "gfx1030", "--instr", "v_wmma_f32_16x16x16_f16", "--operand", "D")
    assert "gfx1030" in line and "matrix path dp4a" in line


# --------------------------------------------------------------------------- demo
def test_demo_text(capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(capsys, "demo")
    assert "gfx942" in out and "gfx1201" in out
    assert "a 128-VGPR wave gets 4 waves/SIMD" in out  # gfx942: 512 // 128
    assert "a 128-VGPR wave gets 12 waves/SIMD" in out  # RDNA4 table: 113-128 -> 12


def test_demo_json(capsys: pytest.CaptureFixture[str]) -> None:
    d = json.loads(ok(capsys, "demo", "--format", "json"))
    assert d["targets"] == ["gfx942", "gfx1201"]
    # RDNA3 D row = 2*v + lane//16 (ISA §7.9), RDNA4 D row = v + 8*(lane//16): they differ where the
    # formulas do; count those (lane, v) slots independently.
    differ = sum(2 * v + lane // 16 != v + 8 * (lane // 16) for lane in range(32) for v in range(8))
    assert d["rdna3_vs_rdna4_D"]["registers_holding_different_rows"] == differ
    assert 0 <= d["wmma_max_abs_error_vs_float64"] < 1e-5


# --------------------------------------------------------------------------- console script
def test_console_script_help() -> None:
    exe = Path(sys.executable).with_name("tilesim")
    assert exe.exists(), f"console script not installed next to {sys.executable}"
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    p = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout.startswith("usage: tilesim")
    for cmd in ("targets", "instructions", "explain", "layout", "demo"):
        assert cmd in p.stdout
