"""NVIDIA device runner: NVRTC compile (through CuPy) of the emitted source, launch, copy back.

Tensors travel as raw element bits (the emitted kernel moves bits, as the simulator does), so a
device result is compared bit for bit with what the simulator stored.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from tilesim.codegen.hip import Emitted
from tilesim.errors import DeviceError
from tilesim.hw.watchdog import no_device_path
from tilesim.matrix.dtypes import decode, dtype, encode, from_memory, to_memory
from tilesim.matrix.numerics import quantize

__all__ = ["CUDA_DEVICE_PATHS", "cuda_device", "cuda_runtime_missing", "run_nvidia"]

# How the CUDA driver reaches an NVIDIA GPU on Linux; with none of these, cuInit finds no device. The
# list errs towards "maybe": the module loaded (/proc/driver/nvidia) or nvidia-modprobe installed
# (the setuid helper the driver library runs to load the module and create the nodes on first use)
# count, so a machine whose nodes do not exist yet is still probed.
CUDA_DEVICE_PATHS = (
    "/dev/nvidiactl",  # the desktop/server driver's control node (with /dev/nvidia0, ...)
    "/dev/dxg",  # WSL2: the GPU through the DirectX paravirtual driver
    "/dev/nvhost-ctrl-gpu", "/dev/nvmap",  # Jetson (Tegra): the integrated GPU's nodes
    "/proc/driver/nvidia",  # the kernel module is loaded
    "/usr/bin/nvidia-modprobe",  # the driver library may load the module and create the nodes itself
)


def cuda_runtime_missing() -> str | None:
    """Why no CUDA run can happen here, found without importing CuPy or initialising CUDA: CuPy not
    installed, or (on Linux) none of :data:`CUDA_DEVICE_PATHS`. None means "maybe": the device
    process probes with :func:`cuda_device`."""
    if importlib.util.find_spec("cupy") is None:
        return "no CUDA runtime: CuPy is not installed (pip install cupy-cuda12x or cupy-cuda13x)"
    if no_device_path(CUDA_DEVICE_PATHS):
        return (f"no CUDA device: none of {', '.join(CUDA_DEVICE_PATHS)} exists (no NVIDIA driver, or the "
                "device is not passed through)")
    return None


def cuda_device() -> tuple[int | None, str]:
    """(compute capability as an int like 90, description) or (None, why there is none)."""
    try:
        import cupy as cp
    except ImportError:
        return None, "no CUDA runtime: CuPy is not installed (pip install cupy-cuda12x or cupy-cuda13x)"
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver
        return None, f"no CUDA driver or device: {e}"
    if n < 1:
        return None, "no CUDA device"
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return int(props["major"]) * 10 + int(props["minor"]), name


def run_nvidia(emitted: Emitted, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Compile with NVRTC, launch on device 0, return output tensors as values (float64/int64).

    Runs in the calling process; :func:`tilesim.diff.run` calls it in a child process under a
    watchdog (:mod:`tilesim.hw.watchdog`), so a hang or a poisoned context cannot reach the caller.
    Every failure is a :class:`DeviceError` with ``kind`` ``compile``, ``launch`` or ``oom``.
    """
    cc, desc = cuda_device()
    if cc is None:
        raise DeviceError(desc)
    import cupy as cp

    prog = emitted.program
    want = int(prog.target.split("_")[1])
    if cc < want:
        raise DeviceError(f"{prog.target} program, but the device ({desc}) is sm_{cc}")
    try:
        mod = cp.RawModule(code=emitted.source, options=("-std=c++17",), name_expressions=None)
        fn = mod.get_function(emitted.kernel)
    except Exception as e:
        raise DeviceError(f"NVRTC failed to compile {emitted.kernel}: {(str(e).splitlines() or [''])[0][:300]}",
                          kind="compile") from None
    try:
        bufs = []
        for tp in prog.tensors:
            host = to_memory(encode(quantize(arrays[tp.name], tp.dtype), tp.dtype) if tp.name in arrays
                             else np.zeros(tp.shape, np.uint64), tp.dtype)  # packed 4/6-bit elements
            bufs.append(cp.asarray(np.ascontiguousarray(host)))
    except Exception as e:  # cupy.cuda.memory.OutOfMemoryError and runtime errors: a device error, typed
        oom = "memory" in type(e).__name__.lower() or "out of memory" in str(e).lower()
        raise DeviceError(f"copy of {emitted.kernel}'s tensors to the device failed: {type(e).__name__}: "
                          f"{(str(e).splitlines() or [''])[0][:200]}", kind="oom" if oom else "launch") from None
    try:
        fn(emitted.grid, emitted.block, tuple(bufs))
        cp.cuda.Device(0).synchronize()
        return {tp.name: decode(from_memory(cp.asnumpy(b), tp.dtype, tp.shape), tp.dtype)
                for tp, b in zip(prog.tensors, bufs) if tp.output}
    except Exception as e:
        raise DeviceError(f"launch of {emitted.kernel} failed: {type(e).__name__}: "
                          f"{(str(e).splitlines() or [''])[0][:200]}", kind="launch") from None
