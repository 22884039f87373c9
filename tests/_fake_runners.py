"""Fake device runners for the fail-closed tests: each stands in for ``tilesim.hw.nvidia.run_nvidia``
and runs in the watchdog's child process, so each must be a module-level function."""

from __future__ import annotations

import os
import signal
import time

import numpy as np


class OutOfMemoryError(Exception):
    """Named like ``cupy.cuda.memory.OutOfMemoryError``."""


def launch_failure(em, arrays):
    raise RuntimeError("cudaErrorLaunchFailure: unspecified launch failure")


def out_of_memory(em, arrays):
    raise OutOfMemoryError("Out of memory allocating 85,899,345,920 bytes (allocated so far: 0 bytes).")


def hang(em, arrays):
    time.sleep(3600)  # a kernel that never finishes: the synchronise call never returns


def hang_ignoring_sigterm(em, arrays):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a runtime stuck in C ignores SIGTERM: SIGKILL follows
    time.sleep(3600)


def crash(em, arrays):
    os.kill(os.getpid(), signal.SIGSEGV)  # a driver segfault
    time.sleep(60)


def device_like_simulator(em, arrays):
    from tilesim.wave.sim import simulate

    out = simulate(em.program, **arrays).outputs
    return {t.name: np.asarray(out[t.name], np.float64) for t in em.program.tensors if t.output}


def off_by_one(em, arrays):
    return {k: v + 1.0 for k, v in device_like_simulator(em, arrays).items()}


def no_outputs(em, arrays):
    return {}


def wrong_shape(em, arrays):
    return {k: v[:1] for k, v in device_like_simulator(em, arrays).items()}


# probes standing in for ``tilesim.hw.nvidia.cuda_device``: the device process calls them by name
def fake_h100():
    return 90, "Fake H100"


def fake_a100():
    return 80, "Fake A100"


def no_cuda_device():
    return None, "no CUDA driver or device: test"


def counting_h100():
    """A probe that leaves its process id in the file named by TILESIM_TEST_PROBE_LOG."""
    with open(os.environ["TILESIM_TEST_PROBE_LOG"], "a") as f:
        f.write(f"{os.getpid()}\n")
    return 90, "Fake H100"


def echo_inputs(em, arrays):
    return dict(arrays)


def list_outputs(em, arrays):
    return {"C": [[1.0, 2.0]], "extra": np.array([{"a": 1}], dtype=object)}


def tuple_result(em, arrays):
    return (1, 2)


def small_rows_reversed(em, arrays):
    """The simulator's outputs with rows 16..31 in reverse order: a device bug confined to those rows
    (tests/test_trust_tolerance.py gives them values 1e7 times smaller than rows 0..15)."""
    return {k: np.concatenate([v[:16], v[16:][::-1]]) for k, v in device_like_simulator(em, arrays).items()}


def scaled_by_1_5(em, arrays):
    """A device whose every output is 1.5 times the simulator's (a wrong kernel)."""
    return {k: v * 1.5 for k, v in device_like_simulator(em, arrays).items()}
