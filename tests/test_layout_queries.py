"""Calculator-style single-element queries (``tilesim layout -g / -m / -o``), answered against
AMD's matrix instruction calculator records (tests/golden/amd_calculator: independent of the
catalog), one element and one register at a time, through the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tilesim.cli import main
from tests.test_calculator_golden import ARCH_TARGET, _golden, _parse

# (calculator arch, record key): wave32/wave64 WMMA, 32x32 and multi-block MFMA, a broadcast CBSZ form.
CASES = [
    ("rdna3", "v_wmma_f16_16x16x16_f16|A|w32|cbsz=0|abid=0|blgp=0|opsel=0"),
    ("rdna3", "v_wmma_f16_16x16x16_f16|D|w32|cbsz=0|abid=0|blgp=0|opsel=4"),
    ("rdna3", "v_wmma_f16_16x16x16_f16|B|w64|cbsz=0|abid=0|blgp=0|opsel=0"),
    ("rdna4", "v_wmma_i32_16x16x16_iu8|D|w32|cbsz=0|abid=0|blgp=0|opsel=0"),
    ("cdna3", "v_mfma_f32_32x32x8_f16|D|w64|cbsz=0|abid=0|blgp=0|opsel=0"),
    ("cdna3", "v_mfma_f32_4x4x4_16b_bf16|A|w64|cbsz=2|abid=1|blgp=0|opsel=0"),
    ("cdna2", "v_mfma_f32_32x32x1f32|A|w64|cbsz=1|abid=1|blgp=0|opsel=0"),
]
NAMES = {"A": ("I", "K"), "B": ("K", "J"), "C": ("I", "J"), "D": ("I", "J")}


def _records(arch: str, key: str) -> np.ndarray:
    rec, index = _golden(arch)
    if key not in index:
        pytest.skip(f"{key} not in the calculator records")
    off, n = index[key]
    return rec[off:off + n]


def _argv(arch: str, key: str) -> list[str]:
    name, op, wave, mods = _parse(key)
    argv = ["layout", "--arch", ARCH_TARGET[arch], "--instr", name, "--operand", op, "--wave", str(wave)]
    for k, v in mods.items():
        argv += [f"--{k}", str(v)]
    return argv


@pytest.mark.parametrize(("arch", "key"), CASES)
def test_get_register_matches_the_calculator(capsys, arch, key):
    recs = _records(arch, key)
    op = _parse(key)[1]
    rng = np.random.default_rng(0)
    for blk, row, col in {tuple(r[:3]) for r in recs[rng.choice(len(recs), 12, replace=False)].tolist()}:
        want = {(int(r[4]), int(r[3]), int(r[5]), int(r[6])) for r in recs
                if (r[0], r[1], r[2]) == (blk, row, col)}
        r_flag, c_flag = NAMES[op]
        argv = [*_argv(arch, key), "-g", f"-{r_flag}", str(row), f"-{c_flag}", str(col), "-b", str(blk),
                "--format", "json"]
        assert main(argv) == 0
        got = {(a["lane"], a["vgpr"], a["bit_lo"], a["bit_hi"]) for a in json.loads(capsys.readouterr().out)["answers"]}
        assert got == want, (argv, got, want)


@pytest.mark.parametrize(("arch", "key"), CASES)
def test_matrix_entry_matches_the_calculator(capsys, arch, key):
    recs = _records(arch, key)
    for lane, vgpr in [(0, 0), (17, 1), (int(recs[-1][4]), int(recs[-1][3]))]:
        want = {(int(r[0]), int(r[1]), int(r[2])) for r in recs if r[4] == lane and r[3] == vgpr}
        if not want and vgpr >= 1 + int(recs[:, 3].max()):
            continue
        assert main([*_argv(arch, key), "-m", "-r", str(vgpr), "-l", str(lane), "--format", "json"]) == 0
        got = {(a["block"], a["row"], a["col"]) for a in json.loads(capsys.readouterr().out)["answers"]}
        assert got == want, (lane, vgpr)


def test_output_calculation_formula_gives_the_calculators_answer(capsys):
    # CDNA3 32x32x8 D, calculator record for D[i=6][j=1]: lane 33, v2 (AMD: lane = j + 32*((i/4)%2), item = i%4 + 4*(i/8)).
    recs = _records("cdna3", "v_mfma_f32_32x32x8_f16|D|w64|cbsz=0|abid=0|blgp=0|opsel=0")
    (want,) = [r for r in recs.tolist() if r[1:3] == [6, 1]]
    assert main(["layout", "--arch", "gfx942", "--instr", "v_mfma_f32_32x32x8f16", "--operand", "D",
                 "-g", "-I", "6", "-J", "1", "-o"]) == 0
    out = capsys.readouterr().out
    assert f"lane {want[4]}, v{want[3]} bits" in out
    calc = next(line for line in out.splitlines() if "element to register" in line)
    lane_expr = calc.split("lane = ")[1].split(", slot")[0]
    assert eval(lane_expr.replace("/", "//"), {"i": 6, "j": 1}) == want[4]  # noqa: S307 - our own formula text


@pytest.mark.parametrize("argv, needle", [
    (["-g", "-I", "1"], "missing -K"),
    (["-g", "-I", "1", "-K", "2", "-J", "0"], "-J is not an index of A"),
    (["-g", "-I", "99", "-K", "0"], "i=99"),
    (["-m", "-r", "0"], "-r REGISTER and -l LANE"),
    (["-m", "-r", "9", "-l", "0"], "register=9"),
    (["-I", "1"], "need --get-register"),
    (["--compare", "gfx90a"], "--compare needs --format svg"),
    (["--view", "registers", "--format", "csv"], "--view registers has no csv"),
    (["--out", "x.txt"], "--out writes pictures only"),
    (["-o"], "--output-calculation goes with"),
])
def test_ignored_or_incomplete_flags_are_refused(capsys, argv, needle):
    base = ["layout", "--arch", "gfx942", "--instr", "v_mfma_f32_32x32x8f16", "--operand", "A"]
    assert main([*base, *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_out_suffix_picks_the_picture_format(tmp_path, capsys):
    out = tmp_path / "a.svg"
    assert main(["layout", "--arch", "gfx1201", "--instr", "v_wmma_f32_16x16x16_f16", "--operand", "A",
                 "--out", str(out)]) == 0
    assert out.read_text().startswith("<svg")
    assert capsys.readouterr().out.strip() == f"wrote {out}"
