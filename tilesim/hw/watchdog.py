"""Run a device step in a child process under a watchdog, so no device failure can hang tilesim.

``guarded_call(fn, *args, timeout_s=...)`` runs ``fn(*args)`` in a fresh process and returns its
result, or raises :class:`~tilesim.errors.DeviceError` with a ``kind`` and the child's
``exit_status``:

* ``launch`` — the runner raised (launch failure, a HIP/CUDA error code); a ``DeviceError``
  raised by the runner keeps its own ``kind`` (``compile`` for an NVRTC error);
* ``oom`` — the runner ran out of device or host memory (an exception whose name or message
  says "out of memory", or ``MemoryError``);
* ``watchdog`` — no result within ``timeout_s``: the child is sent SIGTERM, then SIGKILL;
* ``crash`` — the child died without a result (a signal such as SIGSEGV in the driver, or
  ``os._exit``).

Why a child process and not a thread or a signal. A hung kernel blocks inside the driver's
synchronise call, in C: a thread cannot be interrupted there and ``signal.alarm`` only runs its
handler when control returns to Python, which it never does. Killing a process is the one
interruption that always works; the driver then tears down that process's context, so a sticky
error (an illegal address poisons a CUDA context for the rest of the process) or a hang never
reaches the caller's context. The child is started with ``spawn``, not ``fork``: a process that
has already initialised CUDA (``cuda_device()`` does) cannot use CUDA in a forked child. The
cost is one interpreter start and the imports of ``fn``'s module, about a second per run.

The timeout comes from the ``timeout_s`` argument, else ``TILESIM_DEVICE_TIMEOUT`` (seconds), else
:data:`DEFAULT_TIMEOUT_S`.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import traceback
from collections.abc import Callable
from typing import Any

from tilesim.errors import DeviceError

__all__ = ["DEFAULT_TIMEOUT_S", "device_timeout", "guarded_call"]

DEFAULT_TIMEOUT_S = 300.0
_KILL_GRACE_S = 2.0


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


def _is_oom(e: BaseException) -> bool:
    text = (type(e).__name__ + " " + str(e)).lower()
    return isinstance(e, MemoryError) or "outofmemory" in text or "out of memory" in text or "out_of_memory" in text


def _child(conn: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        result = fn(*args)
    except BaseException as e:  # everything goes back to the parent as a message, never a traceback
        kind = e.kind if isinstance(e, DeviceError) else ("oom" if _is_oom(e) else "launch")
        first = (str(e).strip().splitlines() or [""])[0][:300]
        where = traceback.extract_tb(e.__traceback__)[-1:] if e.__traceback__ else []
        at = f" (at {os.path.basename(where[0].filename)}:{where[0].lineno})" if where else ""
        msg = first if isinstance(e, DeviceError) else f"{type(e).__name__}: {first}{at}"
        conn.send(("error", kind, msg or type(e).__name__))
    else:
        conn.send(("ok", result))
    conn.close()


def guarded_call(fn: Callable[..., Any], *args: Any, timeout_s: float | None = None, what: str = "device run") -> Any:
    """``fn(*args)`` in a spawned child process, killed after ``timeout_s``; see the module docstring.

    ``fn`` must be importable by name (a module-level function) and ``args`` picklable.
    """
    limit = device_timeout(timeout_s)
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn, args), name="tilesim-device", daemon=True)
    start = time.monotonic()
    try:
        proc.start()
    except Exception as e:  # e.g. fn or args not picklable
        raise DeviceError(f"{what}: could not start the device process: {type(e).__name__}: {e}",
                          kind="launch") from None
    finally:
        send.close()  # the parent keeps only the reading end, so a dead child reads as EOF
    try:
        msg = None
        if recv.poll(limit):
            try:
                msg = recv.recv()
            except (EOFError, OSError):
                msg = None
        elif proc.is_alive():
            _stop(proc)
            raise DeviceError(f"{what}: watchdog fired after {limit:g} s (hung kernel or runtime); "
                              f"device process killed (exit status {proc.exitcode})", kind="watchdog",
                              exit_status=proc.exitcode, timeout_s=limit)
        proc.join(max(_KILL_GRACE_S, limit - (time.monotonic() - start)))
        if proc.is_alive():  # sent a result but will not exit (a runtime stuck in teardown)
            _stop(proc)
        if msg is None:
            raise DeviceError(f"{what}: device process died without a result (exit status {proc.exitcode}"
                              f"{_signal_name(proc.exitcode)})", kind="crash", exit_status=proc.exitcode)
        if msg[0] == "error":
            raise DeviceError(f"{what} failed: {msg[2]}", kind=msg[1], exit_status=proc.exitcode)
        return msg[1]
    finally:
        if proc.is_alive():  # KeyboardInterrupt or any other way out: never leave a child behind
            _stop(proc)
        recv.close()


def _stop(proc: Any) -> None:
    proc.terminate()
    proc.join(_KILL_GRACE_S)
    if proc.is_alive():
        proc.kill()
        proc.join(_KILL_GRACE_S)


def _signal_name(code: int | None) -> str:
    if code is None or code >= 0:
        return ""
    import signal

    try:
        return f", killed by {signal.Signals(-code).name}"
    except ValueError:
        return ""
