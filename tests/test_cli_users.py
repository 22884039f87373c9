"""Issue 18's CLI leftovers: `check` over several files and folders, `gallery --format json`, and
progress for long commands that a terminal sees and pipes do not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tilesim.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_check_takes_several_files_and_a_folder(capsys, tmp_path):
    code, out, _ = _run(capsys, "check", str(ROOT / "examples" / "gemm.py"), str(ROOT / "examples" / "softmax.py"),
                        "--target", "gfx1201", "--format", "json")
    assert code == 0 and [d["program"] for d in json.loads(out)] == ["gemm", "softmax"]
    # a folder: its programs files, here one good and one JSON program with a wrong accumulator layout
    import tilesim as ts
    from tilesim.examples import load
    from tilesim.matrix import lookup

    gemm = load("gemm").gemm
    bad = gemm.specialize(target="gfx1100", M=32, N=32, K=32,
                          c_layout=lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C"))
    (tmp_path / "bad.json").write_text(bad.to_json())
    (tmp_path / "good.json").write_text(gemm.specialize(target="gfx1100", M=32, N=32, K=32).to_json())
    (tmp_path / "_private.py").write_text("raise SystemExit('must not be imported')\n")
    code, out, _ = _run(capsys, "check", str(tmp_path), "--format", "json")
    docs = json.loads(out)
    assert code == 1 and [d["ok"] for d in docs] == [False, True]  # bad.json, good.json, sorted; _private skipped
    assert not ts.check(bad).ok


def test_check_folder_without_programs_and_target_nowhere(capsys, tmp_path):
    code, _, err = _run(capsys, "check", str(tmp_path))
    assert code != 0 and "no .py or .json program files" in err
    code, _, err = _run(capsys, "check", str(ROOT / "examples" / "gemm.py"), str(ROOT / "examples" / "softmax.py"),
                        "--target", "gfx90a")
    assert code != 0 and "no program for gfx90a" in err


def test_gallery_json_and_no_progress_on_a_pipe(tmp_path):
    p = subprocess.run([sys.executable, "-m", "tilesim", "gallery", str(tmp_path / "g"), "--family", "rdna3",
                        "--format", "json"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0 and p.stderr == ""  # stderr is a pipe: no progress lines
    doc = json.loads(p.stdout)
    files = list((tmp_path / "g").iterdir())
    assert doc["files"] == len(files) and doc["bytes"] == sum(f.stat().st_size for f in files)
    assert doc["index"].endswith("index.html") and len(doc["pages"]) == 8  # index, family, 6 instructions


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_gallery_progress_on_a_terminal(tmp_path):
    master, slave = os.openpty()
    try:
        p = subprocess.run([sys.executable, "-m", "tilesim", "gallery", str(tmp_path / "g"), "--family", "rdna3"],
                           stdout=subprocess.PIPE, stderr=slave, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        os.close(slave)
        slave = -1
        err = os.read(master, 65536).decode()
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    assert p.returncode == 0 and "gallery: 6/6 instruction pages" in err


def test_inspect_by_the_users_variable_name(capsys, tmp_path):
    src = tmp_path / "k.py"
    src.write_text(
        "import tilesim as ts\n"
        "@ts.kernel\n"
        "def k(X: ts.Tensor['f32', 'M', 'N'], Y: ts.Tensor['f32', 'M', 'N']):\n"
        "    lay = ts.mma_op('v_wmma_f32_16x16x16_f16').layout('C')\n"
        "    tile = ts.load(X[0:, 0:], lay)\n"
        "    doubled: object = tile + tile\n"
        "    ts.store(Y[0:, 0:], doubled * 3)\n"  # an unnamed temporary
        "def programs():\n"
        "    return [k.specialize(target='gfx1201', M=16, N=16)]\n")
    assert main(["simulate", str(src), "--inspect", "doubled", "--format", "json"]) == 4  # no reference(): NOT_JUDGED
    doc = json.loads(capsys.readouterr().out)[0]["inspect"]
    assert doc["value"].endswith("<doubled>")
    # X is random; `doubled` holds 2*X at the layout's (row, col): lane 5, v3 is (3, 5) on RDNA4 (row v + 8*(lane/16))
    rec = next(r for r in doc["records"] if r["lane"] == 5 and r["vgpr"] == 3)
    assert (rec["row"], rec["col"]) == (3, 5)
    code, _, err = _run(capsys, "simulate", str(src), "--inspect", "nope")
    assert code != 0 and "%" in err and "<tile>" in err and "<doubled>" in err
