"""Input files are read through one reader (round three): only a regular file, of a bounded size,
as UTF-8 text; anything else is a typed error (exit 2).

Before, `tilesim emulate`/`audit` opened the HIP file with a bare ``open()``: a file that is not
UTF-8 ended in a raw ``UnicodeDecodeError`` traceback, and a FIFO named ``k.hip`` blocked the
command forever. `tilesim check FILE.json` read the whole file whatever its size (a sparse file of
a few GiB: a ``MemoryError`` traceback, or the machine's memory).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tilesim.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", ["emulate", "audit"])
def test_a_hip_file_that_is_not_utf8_is_an_input_error(tmp_path, capsys, command):
    f = tmp_path / "k.hip"
    f.write_bytes(b'extern "C" __global__ void k(float* x) { x[0] = 1.0f; } // \xff\xfe\n')
    assert main([command, str(f), "--target", "gfx1201", "--kernel", "k"]) == 2
    err = capsys.readouterr().err
    assert "UTF-8" in err and "Traceback" not in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("name,command", [("k.hip", "emulate"), ("k.hip", "audit"), ("p.json", "check")])
def test_a_fifo_is_refused_not_waited_on(tmp_path, name, command):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    extra = ["--target", "gfx1201", "--kernel", "k"] if command != "check" else []
    proc = subprocess.run([sys.executable, "-m", "tilesim", command, str(fifo), *extra], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2, proc.stderr[-500:]
    assert "not a regular file" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="sparse files and RLIMIT_AS as on Linux")
@pytest.mark.parametrize("name,command", [("huge.json", "check"), ("huge.hip", "emulate")])
def test_a_huge_file_is_refused_before_it_is_read(tmp_path, name, command):
    """A sparse file of 4 GiB (no disk used) under a 3 GiB address-space limit: reading it whole is
    a MemoryError; the size is checked first."""
    big = tmp_path / name
    with open(big, "wb") as f:
        f.truncate(4 << 30)
    extra = ["--target", "gfx1201", "--kernel", "k"] if command != "check" else []
    script = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from tilesim.cli import main
        sys.exit(main({[command, str(big), *extra]!r}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2, proc.stderr[-800:]
    assert "bytes" in proc.stderr and "Traceback" not in proc.stderr


def test_the_right_files_still_read(tmp_path, capsys):
    from examples.gemm import programs

    f = tmp_path / "p.json"
    f.write_text(programs(32, 32, 32)[1].to_json())
    assert main(["check", str(f)]) == 0
    capsys.readouterr()
