"""Interrupts (issue 19 item 6): SIGINT or SIGTERM while the compiler runs leaves no compiler
process, no ``tilesim-cc-*`` temporary folder and no traceback; the CLI prints one line and exits
130 (SIGINT) or 143 (SIGTERM), the shell's 128 + signal number.

The compiler is a stand-in named by ``TILESIM_CLANG``: a shell script that starts a grandchild
(as ``python -m ziglang`` starts zig, which starts clang), records both process ids and waits, so
the signal always lands mid-compile. On e82022e, SIGTERM killed tilesim at once (status -15) and left
the folder and the grandchild behind; SIGINT printed a KeyboardInterrupt traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tilesim.errors import ToolchainError
from tilesim.hw import offline

ROOT = Path(__file__).resolve().parents[1]

FAKE_CLANG = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "fake clang 0 (tilesim test)"; exit 0; fi
cat > /dev/null
touch "$TMPDIR/clang-scratch.o"
sleep 300 &
echo "$$ $!" > "$FAKE_CLANG_PIDS.part" && mv "$FAKE_CLANG_PIDS.part" "$FAKE_CLANG_PIDS"
wait
"""


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it counts as gone); reads /proc, no psutil."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _fake(tmp_path: Path) -> dict[str, str]:
    exe = tmp_path / "fake-clang"
    exe.write_text(FAKE_CLANG)
    exe.chmod(0o755)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    return {"TILESIM_CLANG": str(exe), "TILESIM_NO_CACHE": "1", "TMPDIR": str(tmp),
            "FAKE_CLANG_PIDS": str(tmp_path / "pids")}


def _gone(pids: list[int]) -> bool:
    """Wait up to 10 s for ``pids`` to end; kill any still running (so a failing run leaves nothing behind)."""
    end = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.05)
    left = [p for p in pids if _alive(p)]
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return not left


def _wait_for(path: Path, seconds: float = 120) -> str:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if path.exists():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"the fake compiler never started ({path} not written)")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("sig, status, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated"),
                                               (signal.SIGTERM, 143, "terminated")])
def test_a_signal_mid_compile_cleans_up_and_prints_one_line(tmp_path, sig, status, word):
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, **_fake(tmp_path), "PYTHONPATH": path}
    proc = subprocess.Popen([sys.executable, "-m", "tilesim.cli", "compile", str(ROOT / "examples" / "gemm.py"),
                             "--target", "gfx1201"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    pids: list[int] = []
    try:
        pids = [int(p) for p in _wait_for(tmp_path / "pids").split()]
        assert all(_alive(p) for p in pids)
        scratch = list((tmp_path / "tmp").glob("tilesim-cc-*"))
        assert len(scratch) == 1 and (scratch[0] / "clang-scratch.o").exists()  # mid-compile, in its folder
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        survived = not _gone(pids)
    assert proc.returncode == status, (proc.returncode, err)
    assert err == f"tilesim: {word}\n" and "Traceback" not in err
    assert list((tmp_path / "tmp").iterdir()) == []  # no tilesim-cc-* folder left
    assert not survived, "a compiler process outlived tilesim"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_compile_timeout_kills_the_whole_compiler_group(tmp_path, monkeypatch):
    for k, v in _fake(tmp_path).items():
        monkeypatch.setenv(k, v)
    offline.clang_command.cache_clear()
    offline._compiler_id.cache_clear()
    monkeypatch.setattr(offline.tempfile, "tempdir", None)  # TMPDIR is read again
    try:
        with pytest.raises(ToolchainError, match="timed out"):
            offline.compile_hip('extern "C" __attribute__((global)) void k() {}', "gfx1201", timeout=3)
    finally:
        offline.clang_command.cache_clear()
        offline._compiler_id.cache_clear()
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert _gone(pids)  # the grandchild too, not only the shell
    assert list((tmp_path / "tmp").iterdir()) == []
