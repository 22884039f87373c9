"""Run a device step in a child process under a watchdog, so no device failure can hang tilesim.

``guarded_call(runner, emitted, arrays, timeout_s=...)`` runs ``runner(emitted, arrays)`` in a
fresh interpreter, ``python -m tilesim.hw._device_child``, and returns a :class:`DeviceRun`, or
raises :class:`~tilesim.errors.DeviceError` with a ``kind`` and the child's ``exit_status``:

* ``launch`` — the runner raised (launch failure, a HIP/CUDA error code); a ``DeviceError``
  raised by the runner keeps its own ``kind`` (``compile`` for an NVRTC error);
* ``oom`` — the runner ran out of device or host memory (an exception whose name or message
  says "out of memory", or ``MemoryError``);
* ``watchdog`` — no result within ``timeout_s``: the child's process group is sent SIGTERM,
  then SIGKILL;
* ``crash`` — the child died without a result (a signal such as SIGSEGV in the driver, or
  ``os._exit``).

With a ``probe`` (``() -> (compute capability or None, description)``, e.g.
:func:`tilesim.hw.nvidia.cuda_device`) the child asks first whether a device is there, so the
caller's process never initialises a device runtime; no device, or one older than ``min_cc``,
comes back as ``DeviceRun(unavailable=why)``, not an error.

Why a child process and not a thread or a signal. A hung kernel blocks inside the driver's
synchronise call, in C: a thread cannot be interrupted there and ``signal.alarm`` only runs its
handler when control returns to Python, which it never does. Killing a process is the one
interruption that always works; the driver then tears down that process's context, so a sticky
error (an illegal address poisons a CUDA context for the rest of the process) or a hang never
reaches the caller's context.

Why its own module, not ``multiprocessing``. A ``spawn`` child re-imports the caller's
``__main__``: a user's script without an ``if __name__ == "__main__":`` guard ran again inside
the child and died with "An attempt has been made to start a new process before the current
process has finished its bootstrapping" (issue 19, item 8). The child here imports only tilesim
and the runner's module. What crosses the process boundary is data, never a pickle: the runner
and probe by ``module:qualname``, the emitted kernel and program as JSON, arrays as ``.npy``
files (``allow_pickle=False``; ml_dtypes arrays as their raw bits and the type's name), results
back the same way, all in a private temporary folder.

The timeout comes from the ``timeout_s`` argument, else ``TILESIM_DEVICE_TIMEOUT`` (seconds), else
:data:`DEFAULT_TIMEOUT_S`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from tilesim.errors import DeviceError
from tilesim.hw.offline import signal_group

__all__ = ["DEFAULT_TIMEOUT_S", "DeviceRun", "Opaque", "device_timeout", "guarded_call", "no_device_path"]

DEFAULT_TIMEOUT_S = 300.0
_KILL_GRACE_S = 2.0
REQUEST, RESULT = "request.json", "result.json"


@dataclass(frozen=True)
class Opaque:
    """A runner's result (or one entry of it) that is not an array: only its type name crosses back."""

    type_name: str


@dataclass(frozen=True)
class DeviceRun:
    """What the child reported: outputs and the device (``device``, ``cc`` from the probe), or ``unavailable``."""

    outputs: Any = None  # dict of arrays (Opaque entries for non-arrays), or an Opaque for a non-dict result
    device: str | None = None
    cc: int | None = None
    unavailable: str | None = None  # why no device run happened (the probe found none)


def device_timeout(timeout_s: float | None = None) -> float:
    """The watchdog timeout to use: the argument, else ``TILESIM_DEVICE_TIMEOUT``, else the default."""
    if timeout_s is None:
        env = os.environ.get("TILESIM_DEVICE_TIMEOUT")
        if env is None:
            return DEFAULT_TIMEOUT_S
        try:
            timeout_s = float(env)
        except ValueError:
            raise DeviceError(f"TILESIM_DEVICE_TIMEOUT={env!r} is not a number of seconds") from None
        source = "TILESIM_DEVICE_TIMEOUT"
    else:
        source = "device timeout"
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < 1e7:
        raise DeviceError(f"{source} {timeout_s!r}: give seconds, greater than 0 and below 1e7")
    return float(timeout_s)


def no_device_path(paths: tuple[str, ...]) -> bool:
    """True only where no device can exist: on Linux, when none of ``paths`` (the device nodes, driver
    folders and helpers through which a vendor's runtime reaches a GPU) exists. Elsewhere, or when
    any exists, False: "maybe", and the device process probes. Costs a few ``stat`` calls where a
    device process costs an interpreter start and tilesim's imports (about 1 s)."""
    return sys.platform.startswith("linux") and not any(os.path.exists(p) for p in paths)


def function_ref(fn: Callable[..., Any], role: str) -> str:
    """``module:qualname`` of a function the child can import without running the caller's script."""
    mod, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    name = getattr(fn, "__name__", type(fn).__name__)
    if not callable(fn) or not isinstance(mod, str) or not isinstance(qual, str):
        raise DeviceError(f"the {role} must be a function, got {type(fn).__name__}", kind="launch")
    if mod == "__main__":
        raise DeviceError(f"the {role} {name} is defined in the script being run (__main__); the device process "
                          "never re-runs your script: define it in a module and import it from there", kind="launch")
    if "<" in qual:
        raise DeviceError(f"the {role} {qual} is not a module-level function (a lambda or a nested function); "
                          "the device process imports it by name", kind="launch")
    return f"{mod}:{qual}"


# ------------------------------------------------------------ arrays and results as files

def save_arrays(folder: Path, prefix: str, arrays: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Write each array as ``.npy`` (no pickles): numpy's own numeric types as they are, ml_dtypes
    types (bf16, fp8, ...) as their raw bits plus the type's name. Non-arrays become type names."""
    index = {}
    for i, (name, arr) in enumerate(arrays.items()):
        if not isinstance(arr, np.ndarray):
            index[str(name)] = {"type": type(arr).__name__}
            continue
        a = np.ascontiguousarray(arr)
        entry = {"file": f"{prefix}{i}.npy"}
        if a.dtype.kind in "biuf" and a.dtype.isbuiltin == 1:
            np.save(folder / entry["file"], a, allow_pickle=False)
        elif a.dtype.type.__module__ == "ml_dtypes":
            entry["ml_dtype"] = a.dtype.name
            np.save(folder / entry["file"], a.view(f"u{a.dtype.itemsize}"), allow_pickle=False)
        else:
            index[str(name)] = {"type": f"ndarray of {a.dtype}"}
            continue
        index[str(name)] = entry
    return index


def load_arrays(folder: Path, index: dict[str, dict[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, entry in index.items():
        if "file" not in entry:
            out[name] = Opaque(entry.get("type", "unknown"))
            continue
        a = np.load(folder / os.path.basename(entry["file"]), allow_pickle=False)
        if "ml_dtype" in entry:
            t = getattr(ml_dtypes, entry["ml_dtype"], None)
            if t is None:
                raise DeviceError(f"unknown array type {entry['ml_dtype']!r} from the device process", kind="crash")
            a = a.view(np.dtype(t))
        out[name] = a
    return out


def emitted_to_json(em: Any) -> dict[str, Any] | None:
    if em is None:
        return None
    doc = {f.name: getattr(em, f.name) for f in dataclasses.fields(em) if f.name != "program"}
    doc["program"] = em.program.to_json()
    return doc


# ------------------------------------------------------------ the call

def guarded_call(runner: Callable[..., Any], emitted: Any, arrays: dict[str, Any] | None, *,
                 timeout_s: float | None = None, what: str = "device run",
                 probe: Callable[[], tuple[int | None, str]] | None = None, min_cc: int = 0,
                 target: str = "") -> DeviceRun:
    """``runner(emitted, arrays)`` in ``python -m tilesim.hw._device_child``, killed after ``timeout_s``.

    ``runner`` and ``probe`` must be importable by name (module-level functions outside ``__main__``).
    """
    limit = device_timeout(timeout_s)
    request = {"runner": function_ref(runner, "runner"), "probe": None if probe is None else function_ref(probe, "probe"),
               "min_cc": int(min_cc), "target": str(target), "emitted": emitted_to_json(emitted),
               "sys_path": [os.path.abspath(p) if p else os.getcwd() for p in sys.path]}
    folder = Path(tempfile.mkdtemp(prefix="tilesim-dev-"))
    proc = None
    try:
        request["arrays"] = save_arrays(folder, "in_", dict(arrays or {}))
        cannot = {k: v["type"] for k, v in request["arrays"].items() if "file" not in v}
        if cannot:
            name, kind = next(iter(cannot.items()))
            raise DeviceError(f"{what}: input {name[:80]!r} is a {kind}, not a numeric array: only numeric arrays "
                              "cross to the device process", kind="launch")
        (folder / REQUEST).write_text(json.dumps(request))
        try:
            proc = subprocess.Popen([sys.executable, "-m", "tilesim.hw._device_child", str(folder)],
                                    stdin=subprocess.DEVNULL, start_new_session=True, env=_child_env())
        except OSError as e:
            raise DeviceError(f"{what}: could not start the device process: {e}", kind="launch") from None
        try:
            proc.wait(limit)
        except subprocess.TimeoutExpired:
            _stop(proc)
            raise DeviceError(f"{what}: watchdog fired after {limit:g} s (hung kernel or runtime); "
                              f"device process killed (exit status {proc.returncode})", kind="watchdog",
                              exit_status=proc.returncode, timeout_s=limit) from None
        try:
            msg = json.loads((folder / RESULT).read_text())
        except (OSError, ValueError):
            raise DeviceError(f"{what}: device process died without a result (exit status {proc.returncode}"
                              f"{_signal_name(proc.returncode)})", kind="crash", exit_status=proc.returncode) from None
        if msg.get("status") == "unavailable":
            return DeviceRun(unavailable=str(msg.get("why", "no device")))
        if msg.get("status") == "error":
            on = f" on {msg['device']}" if msg.get("device") else ""
            raise DeviceError(f"{what}{on} failed: {msg.get('message', '')}", kind=str(msg.get("kind", "launch")),
                              exit_status=proc.returncode)
        result = msg.get("result", {})
        outputs = (load_arrays(folder, result["outputs"]) if "outputs" in result
                   else Opaque(str(result.get("type", "unknown"))))
        return DeviceRun(outputs=outputs, device=msg.get("device"), cc=msg.get("cc"))
    finally:
        if proc is not None and proc.poll() is None:  # KeyboardInterrupt or any other way out: no child left
            _stop(proc)
        shutil.rmtree(folder, ignore_errors=True)


def _child_env() -> dict[str, str]:
    """The caller's environment, with this tilesim first on the path (the child must import the same one)."""
    root = str(Path(__file__).resolve().parents[2])  # the folder that holds this tilesim package
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _stop(proc: subprocess.Popen) -> None:
    signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(_KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        signal_group(proc, signal.SIGKILL)
        proc.wait(_KILL_GRACE_S)


def _signal_name(code: int | None) -> str:
    if code is None or code >= 0:
        return ""
    try:
        return f", killed by {signal.Signals(-code).name}"
    except ValueError:
        return ""
