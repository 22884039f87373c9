"""Offline AMDGPU compilation: HIP source -> ISA text and metadata, with no GPU and no ROCm.

Uses a clang with the AMDGPU target: the ``ziglang`` wheel (``pip install tilesim[compiler]``,
clang 22) or ROCm's clang when ``TILESIM_CLANG`` or ``/opt/rocm/llvm/bin/clang`` exists.
Sources are compiled device-only without HIP headers (``-nogpuinc``), so emitted code spells
kernels ``__attribute__((global))`` and reads ids through ``__builtin_amdgcn_*``.
Toolchains are always called with argument lists, never through a shell.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tilesim.errors import ToolchainError
from tilesim.matrix.catalog import ISA_PREFIXES
from tilesim.targets import get_target

__all__ = ["Compiled", "clang_command", "compile_hip", "isa_mnemonics", "cache_dir"]


@dataclass(frozen=True)
class Compiled:
    target: str
    isa: str
    metadata: dict[str, int] = field(default_factory=dict)

    def mnemonics(self, prefix: tuple[str, ...] = ISA_PREFIXES) -> list[str]:
        return isa_mnemonics(self.isa, prefix)


@functools.lru_cache(maxsize=1)
def clang_command() -> tuple[str, ...]:
    """The clang to run, as an argument list prefix; raises ``ToolchainError`` naming the fixes."""
    explicit = os.environ.get("TILESIM_CLANG")
    if explicit:
        return (explicit,)
    if importlib.util.find_spec("ziglang") is not None:
        return (sys.executable, "-m", "ziglang", "clang")
    for cand in ("/opt/rocm/llvm/bin/clang", shutil.which("amdclang") or ""):
        if cand and os.path.exists(cand):
            return (cand,)
    raise ToolchainError(
        "no clang with the AMDGPU target found: `pip install tilesim[compiler]` (the ziglang wheel), "
        "install ROCm, or set TILESIM_CLANG to a clang that knows amdgcn"
    )


_META_KEYS = {
    ".vgpr_count": "vgpr_count",
    ".agpr_count": "agpr_count",
    ".sgpr_count": "sgpr_count",
    ".wavefront_size": "wavefront_size",
    ".group_segment_fixed_size": "lds_bytes",
    ".private_segment_fixed_size": "scratch_bytes",
}


def _metadata(isa: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, name in _META_KEYS.items():
        m = re.search(rf"^\s*{re.escape(key)}:\s*(\d+)", isa, re.M)
        if m:
            out[name] = int(m.group(1))
    return out


def isa_mnemonics(isa: str, prefix: tuple[str, ...]) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^\s*((?:%s)\w*)\s" % "|".join(map(re.escape, prefix)), isa, re.M)]


def cache_dir() -> Path | None:
    """Where compiled ISA is cached (``TILESIM_CACHE``, else ~/.cache/tilesim); None when
    ``TILESIM_NO_CACHE`` is set."""
    if os.environ.get("TILESIM_NO_CACHE"):
        return None
    base = os.environ.get("TILESIM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "tilesim")
    return Path(base)


@functools.lru_cache(maxsize=1)
def _compiler_id() -> str:
    cmd = clang_command()
    if cmd[-2:] == ("ziglang", "clang"):
        return "ziglang-" + importlib.metadata.version("ziglang")
    try:
        return subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()[0]
    except Exception:
        return " ".join(cmd)


_HEADER = "; tilesim-cache v2 key={key} sha256={digest}"


def _cache_path(key: str) -> Path | None:
    d = cache_dir()
    return None if d is None else d / key[:2] / f"{key}.s"


def _cache_get(key: str) -> str | None:
    """The cached ISA for ``key``, or None. An entry is trusted only when its header names this key
    and the SHA-256 of the body that follows; anything else (truncated, corrupted, another key's
    entry, undecodable bytes) is deleted and rebuilt by the caller."""
    path = _cache_path(key)
    if path is None:
        return None
    try:
        head, _, body = path.read_bytes().decode("utf-8").partition("\n")
    except FileNotFoundError:
        return None
    except (OSError, ValueError):  # unreadable, a directory, or not UTF-8
        head, body = "", ""
    if head != _HEADER.format(key=key, digest=hashlib.sha256(body.encode()).hexdigest()):
        try:
            path.unlink()  # never trusted: the caller compiles and writes a fresh entry
        except OSError:
            pass
        return None
    return body


def _cache_put(key: str, isa: str) -> None:
    """Write an entry atomically: a temporary file in the entry's own folder, then ``os.replace``,
    so a reader sees the old entry, no entry, or the whole new one — never part of one."""
    path = _cache_path(key)
    if path is None:
        return
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
        with os.fdopen(fd, "wb") as f:
            f.write((_HEADER.format(key=key, digest=hashlib.sha256(isa.encode()).hexdigest()) + "\n" + isa).encode())
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass  # a read-only or full cache never fails a compile
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def compile_hip(source: str, target: str, *, wave_size: int | None = None, opt: str = "-O3",
                timeout: float = 120.0, extra_args: tuple[str, ...] = ()) -> Compiled:
    """Compile device-only HIP for an AMD target and return the ISA text and its metadata.

    Results are cached by content (compiler, target, flags and source); see :func:`cache_dir`.
    """
    t = get_target(target)
    if t.vendor != "amd":
        raise ToolchainError(f"{t.name} is not an AMD target; the offline AMDGPU compiler cannot build for it")
    args = [*clang_command(), "-x", "hip", f"--offload-arch={t.name}", "-nogpulib", "-nogpuinc",
            "--cuda-device-only", opt, *extra_args, "-S", "-o", "-", "-"]
    if wave_size is not None and wave_size != t.default_wave:
        args[-4:-4] = ["-Xclang", "-target-feature", "-Xclang", f"+wavefrontsize{wave_size}"]
    key = hashlib.sha256("\0".join([_compiler_id(), *args[len(clang_command()):], source]).encode()).hexdigest()
    cached = _cache_get(key)
    if cached is not None:
        return Compiled(t.name, cached, _metadata(cached))
    with tempfile.TemporaryDirectory(prefix="tilesim-cc-") as tmp:
        try:
            # the compiler's own temporary files go inside this folder too, removed even after an error
            proc = subprocess.run(args, input=source, capture_output=True, text=True, timeout=timeout, cwd=tmp,
                                  env={**os.environ, "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp})
        except FileNotFoundError as e:
            raise ToolchainError(f"cannot run clang ({args[0]}): {e}") from None
        except subprocess.TimeoutExpired:
            raise ToolchainError(f"clang timed out after {timeout:.0f}s compiling for {t.name}") from None
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:300])
        raise ToolchainError(f"clang failed for {t.name}: {first}")
    _cache_put(key, proc.stdout)
    return Compiled(t.name, proc.stdout, _metadata(proc.stdout))
