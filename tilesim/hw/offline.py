"""Offline AMDGPU compilation: HIP source -> ISA text and metadata, with no GPU and no ROCm.

Uses a clang with the AMDGPU target: the ``ziglang`` wheel (``pip install tilesim[compiler]``,
clang 22) or ROCm's clang when ``TILESIM_CLANG`` or ``/opt/rocm/llvm/bin/clang`` exists.
Sources are compiled device-only without HIP headers (``-nogpuinc``), so emitted code spells
kernels ``__attribute__((global))`` and reads ids through ``__builtin_amdgcn_*``.
Toolchains are always called with argument lists, never through a shell.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import hmac
import importlib.util
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from tilesim.errors import ToolchainError
from tilesim.matrix.catalog import ISA_PREFIXES
from tilesim.targets import get_target

__all__ = ["Compiled", "clang_command", "compile_hip", "isa_mnemonics", "cache_dir", "run_tool"]


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
    spec = importlib.util.find_spec("ziglang")
    if spec is not None:
        zig = _zig_binary(spec)
        # the binary itself where `python -m ziglang` would only exec it (POSIX): one interpreter
        # start (~20-40 ms of CPU) less per compile
        return (zig, "clang") if zig else (sys.executable, "-m", "ziglang", "clang")
    for cand in ("/opt/rocm/llvm/bin/clang", shutil.which("amdclang") or ""):
        if cand and os.path.exists(cand):
            return (cand,)
    raise ToolchainError(
        "no clang with the AMDGPU target found: `pip install tilesim[compiler]` (the ziglang wheel), "
        "install ROCm, or set TILESIM_CLANG to a clang that knows amdgcn"
    )


def _zig_binary(spec: importlib.machinery.ModuleSpec) -> str | None:
    """The ``zig`` executable that ziglang's ``__main__`` runs with ``os.execv`` on POSIX (the file
    beside its ``__init__.py``); None elsewhere or when it is not an executable file."""
    if os.name != "posix" or not spec.origin:
        return None
    zig = os.path.join(os.path.dirname(spec.origin), "zig")
    return zig if os.path.isfile(zig) and os.access(zig, os.X_OK) else None


def run_tool(args: list[str] | tuple[str, ...], *, input: str | None = None, timeout: float | None = None,
             cwd: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``subprocess.run(args, capture_output=True, text=True)`` with the tool in a process group of its own.

    The driver may start children (zig starts clang; ``python -m ziglang``, where it is used, starts zig); killing
    only the first one leaves the rest running. On a timeout, an interrupt (SIGINT's
    ``KeyboardInterrupt``, the CLI's SIGTERM exception) or any other error, the whole group is
    killed and reaped before the exception goes on, so no compiler outlives tilesim.
    """
    proc = subprocess.Popen(args, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env,
                            start_new_session=True)  # its own session and process group (pgid = pid)
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except BaseException:
        _kill_group(proc)
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def signal_group(proc: subprocess.Popen, sig: int) -> None:
    """Send ``sig`` to the process group of ``proc`` (started with ``start_new_session``: pgid = pid).

    Sent even when the leader has exited: its children may still be in the group, and while any
    member lives the pid cannot be reused for another group."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


def _kill_group(proc: subprocess.Popen) -> None:
    signal_group(proc, signal.SIGKILL)
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    for f in (proc.stdin, proc.stdout, proc.stderr):
        try:
            if f is not None:
                f.close()
        except OSError:
            pass
    proc.wait()


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
    if cmd[-2:] == ("ziglang", "clang") or (len(cmd) == 2 and Path(cmd[0]).parent.name == "ziglang"):
        return "ziglang-" + _ziglang_version()
    try:
        return run_tool([*cmd, "--version"], timeout=30).stdout.splitlines()[0]
    except Exception:
        return " ".join(cmd)


def _ziglang_version() -> str:
    """ziglang's version, as ``importlib.metadata.version`` gives it, read from the one
    ``ziglang-VERSION.dist-info`` folder beside the package when there is exactly one (importing
    importlib.metadata costs ~50 ms, which every compile, cached or not, paid for its key)."""
    spec = importlib.util.find_spec("ziglang")
    if spec is not None and spec.origin:
        site = Path(spec.origin).parent.parent
        found = [p.name[len("ziglang-"):-len(".dist-info")] for p in site.glob("ziglang-*.dist-info")]
        if len(found) == 1:
            return found[0]
    from importlib import metadata  # not `import importlib.metadata`: that makes `importlib` local here

    return metadata.version("ziglang")


# An entry's header names its key and an HMAC of key and body under a secret of this cache (the
# v2 header's SHA-256 of the body anyone can compute: an entry planted with a right-looking header
# was served as clang's output). The secret is a 32-byte file at the cache's root that only its
# owner may read; one that is not ours, or that others can read or write, turns the cache off.
_HEADER = "; tilesim-cache v3 key={key} hmac={mac}"
_SECRET = "secret"  # beside the two-hex-digit shard folders, never one of them
_SECRET_BYTES = 32


def _mac(secret: bytes, key: str, body: str) -> str:
    return hmac.new(secret, key.encode() + b"\n" + body.encode(), hashlib.sha256).hexdigest()


def _secret(create: bool) -> bytes | None:
    """This cache's secret (made on first use when ``create``), or None: no cache, no secret (yet),
    or one that cannot be trusted (then with a warning)."""
    d = cache_dir()
    if d is None or not _SAFE:
        return None
    try:
        if create:
            d.mkdir(parents=True, exist_ok=True)
        dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for _ in range(2):
            try:
                fd = os.open(_SECRET, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
            except FileNotFoundError:
                if not create:
                    return None
                # whole or not at all: written under a temporary name, then linked into place (a
                # process that loses the race reads the winner's secret)
                tmp = f".tmp-{secrets.token_hex(8)}.part"
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dfd)
                try:
                    with os.fdopen(fd, "wb") as f:
                        f.write(secrets.token_bytes(_SECRET_BYTES))
                    os.link(tmp, _SECRET, src_dir_fd=dfd, dst_dir_fd=dfd)
                except FileExistsError:
                    pass
                finally:
                    os.unlink(tmp, dir_fd=dfd)
                continue
            with os.fdopen(fd, "rb") as f:
                st, data = os.fstat(f.fileno()), f.read(_SECRET_BYTES + 1)
            if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077
                    or len(data) != _SECRET_BYTES):
                warnings.warn(f"tilesim: compile cache secret {d / _SECRET} is not a {_SECRET_BYTES}-byte file "
                              "that only you can read and write; the cache is off (remove the file to start the "
                              "cache afresh)", RuntimeWarning, stacklevel=4)
                return None
            return data
        return None
    except OSError:  # a symbolic link, a folder, unreadable: never trusted
        warnings.warn(f"tilesim: compile cache secret {d / _SECRET} cannot be read as a regular file; the cache is "
                      "off", RuntimeWarning, stacklevel=4)
        return None
    finally:
        os.close(dfd)


def _cache_path(key: str) -> Path | None:
    d = cache_dir()
    return None if d is None else d / key[:2] / f"{key}.s"


# Entries are read and written relative to an open descriptor of their shard folder, opened with
# O_NOFOLLOW: a shard folder or an entry that is a symbolic link (planted to point outside the
# cache) is never read, written or deleted through. Without dir_fd support the cache is off.
_SAFE = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")


def _shard_fd(key: str, create: bool) -> int | None:
    path = _cache_path(key)
    if path is None or not _SAFE:
        return None
    try:
        if create and not os.path.islink(path.parent):
            path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EEXIST) and os.path.islink(path.parent):
            warnings.warn(f"tilesim: compile cache folder {path.parent} is a symbolic link; not reading or writing "
                          "through it (remove it to cache there again)", RuntimeWarning, stacklevel=3)
        return None


def _cache_get(key: str) -> str | None:
    """The cached ISA for ``key``, or None. An entry is trusted only when its header names this key
    and the HMAC of key and body under this cache's secret; anything else (truncated, corrupted,
    another key's entry, a planted one, undecodable bytes, a symbolic link) is deleted and rebuilt
    by the caller."""
    secret = _secret(create=True)  # made here too, so that a planted entry is deleted, not just skipped
    if secret is None:
        return None
    dfd = _shard_fd(key, create=False)
    if dfd is None:
        return None
    name = f"{key}.s"
    try:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
            with os.fdopen(fd, "rb") as f:
                head, _, body = f.read().decode("utf-8").partition("\n")
        except FileNotFoundError:
            return None
        except (OSError, ValueError):  # unreadable, a directory, a symbolic link, or not UTF-8
            head, body = "", ""
        if not hmac.compare_digest(head, _HEADER.format(key=key, mac=_mac(secret, key, body))):
            try:
                os.unlink(name, dir_fd=dfd)  # never trusted (a link is removed, not its target)
            except OSError:
                pass
            return None
        return body
    finally:
        os.close(dfd)


def _cache_put(key: str, isa: str) -> None:
    """Write an entry atomically: a temporary file in the entry's own folder, then ``os.replace``,
    so a reader sees the old entry, no entry, or the whole new one — never part of one."""
    secret = _secret(create=True)
    if secret is None:
        return
    dfd = _shard_fd(key, create=True)
    if dfd is None:
        return
    tmp = None
    try:
        tmp = f".tmp-{secrets.token_hex(8)}.part"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dfd)
        with os.fdopen(fd, "wb") as f:
            f.write((_HEADER.format(key=key, mac=_mac(secret, key, isa)) + "\n" + isa).encode())
        os.replace(tmp, f"{key}.s", src_dir_fd=dfd, dst_dir_fd=dfd)
        tmp = None
    except OSError:
        pass  # a read-only or full cache never fails a compile
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
        os.close(dfd)


def compile_hip(source: str, target: str, *, wave_size: int | None = None, opt: str = "-O3",
                timeout: float = 120.0, extra_args: tuple[str, ...] = ()) -> Compiled:
    """Compile device-only HIP for an AMD target and return the ISA text and its metadata.

    Results are cached by content (compiler, target, flags and source); see :func:`cache_dir`.
    """
    t = get_target(target)
    if t.vendor != "amd":
        raise ToolchainError(f"{t.name} is not an AMD target; the offline AMDGPU compiler cannot build for it")
    if wave_size is not None and wave_size not in t.wave_sizes:  # clang's own message names no valid size
        raise ToolchainError(f"wave size {wave_size}: {t.name} runs wave{'/wave'.join(map(str, t.wave_sizes))} only")
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
            proc = run_tool(args, input=source, timeout=timeout, cwd=tmp,
                            env={**os.environ, "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp})
        except OSError as e:  # missing, not executable
            raise ToolchainError(f"cannot run clang ({args[0]}): {e}") from None
        except subprocess.TimeoutExpired:
            raise ToolchainError(f"clang timed out after {timeout:.0f}s compiling for {t.name}") from None
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:300])
        raise ToolchainError(f"clang failed for {t.name}: {first}")
    _cache_put(key, proc.stdout)
    return Compiled(t.name, proc.stdout, _metadata(proc.stdout))
