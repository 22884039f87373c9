"""``emulate``/``audit --arg NAME=FILE.npy`` reads through the one input reader (trust, round five).

Round three made the HIP file and ``--inputs``/``--expect`` regular files of bounded size; the buffers of
``--arg x=FILE.npy`` were still read by a bare ``np.load``: a FIFO named ``x.npy`` blocked ``tilesim
emulate`` forever, and a file of any size was read whole. Now it is a regular file of at most
``MAX_ARRAY_BYTES``, read as data (``allow_pickle=False``), or exit 2 naming the file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.test_isa_hip import AXPY
from tilesim.cli import main

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--target", "gfx1201", "--kernel", "axpy", "--block", "64", "--arg", "y=f32[64]", "--arg", "a=f32:2.0",
        "--arg", "n=i32:64"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("command", ["emulate", "audit"])
def test_a_fifo_named_npy_is_refused_not_waited_on(tmp_path, command):
    (tmp_path / "k.hip").write_text(AXPY)
    os.mkfifo(tmp_path / "x.npy")
    proc = subprocess.run([sys.executable, "-m", "tilesim", command, str(tmp_path / "k.hip"), "--arg",
                           f"x={tmp_path / 'x.npy'}", *ARGS], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2 and "x.npy" in proc.stderr and "regular file" in proc.stderr, proc.stderr


@pytest.mark.compiler
def test_a_regular_npy_is_still_read(tmp_path, capsys):
    (tmp_path / "k.hip").write_text(AXPY)
    np.save(tmp_path / "x.npy", np.arange(64, dtype=np.float32))
    out = tmp_path / "out"
    assert main(["emulate", str(tmp_path / "k.hip"), "--arg", f"x={tmp_path / 'x.npy'}", *ARGS, "--out", str(out)]) == 0
    assert np.load(out / "x.npy").tolist() == list(range(64))


def test_a_pickled_npy_is_still_refused(tmp_path, capsys):
    (tmp_path / "k.hip").write_text(AXPY)
    np.save(tmp_path / "x.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert main(["emulate", str(tmp_path / "k.hip"), "--arg", f"x={tmp_path / 'x.npy'}", *ARGS]) == 2
    assert "x.npy" in capsys.readouterr().err
