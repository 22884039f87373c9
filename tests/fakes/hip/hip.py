"""The fake ``hip.hip`` module (see the package docstring). Conventions copied as facts from
hip-python (rocm-bindings-hip 10.0, ``hip.pyx``): every call returns a tuple, ``hipError_t`` first
(an ``IntEnum``), then its outputs; ``hipModuleLaunchKernel``'s ``extra`` is either a tuple/list —
*the kernel's arguments themselves*, packed by hip-python (each ``ctypes`` value at an offset aligned
to min(its size, 8), any other entry as an 8-byte pointer) — or the address of a C
``void*[5]`` config ``{HIP_LAUNCH_PARAM_BUFFER_POINTER, buf, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size,
HIP_LAUNCH_PARAM_END}``, which the fake reads from this process's memory as the runtime does.
Error codes are HIP's (hip_runtime_api.h). Launches run synchronously in the emulator; a memory
fault is reported by the next ``hipDeviceSynchronize`` and stays (a sticky error, as on HIP).

Configured by the environment: ``TILESIM_FAKE_HIP_ARCH`` (gcnArchName; unset: no device),
``TILESIM_FAKE_HIP_DEVICES=0``, ``TILESIM_FAKE_HIP_MEMORY`` (bytes of device memory, default 1 GiB),
``TILESIM_FAKE_HIP_FAIL=CALL=ERROR`` (make one API call return that error, e.g.
``hipModuleLaunchKernel=hipErrorLaunchFailure``), ``TILESIM_FAKE_HIP_API=legacy`` (hip-python
5.x-7.x's ``hipGetDeviceProperties(props, deviceId)``).
"""

from __future__ import annotations

import ctypes
import enum
import os
import struct

from hip import _device

# tilesim.hw.amd refuses a module carrying this unless TILESIM_ALLOW_FAKE_HIP=1 (tilesim's own tests)
TILESIM_FAKE_DEVICE = "fake hip (tilesim ISA emulator)"


class hipError_t(enum.IntEnum):  # noqa: N801 - hip-python's name
    hipSuccess = 0
    hipErrorInvalidValue = 1
    hipErrorOutOfMemory = 2
    hipErrorNotInitialized = 3
    hipErrorInvalidDevicePointer = 17
    hipErrorNoDevice = 100
    hipErrorInvalidDevice = 101
    hipErrorInvalidImage = 200
    hipErrorNoBinaryForGpu = 209
    hipErrorInvalidHandle = 400
    hipErrorNotFound = 500
    hipErrorIllegalAddress = 700
    hipErrorLaunchFailure = 719
    hipErrorNotSupported = 801


class hipMemcpyKind(enum.IntEnum):  # noqa: N801
    hipMemcpyHostToHost = 0
    hipMemcpyHostToDevice = 1
    hipMemcpyDeviceToHost = 2
    hipMemcpyDeviceToDevice = 3
    hipMemcpyDefault = 4


HIP_LAUNCH_PARAM_BUFFER_POINTER = 1
HIP_LAUNCH_PARAM_BUFFER_SIZE = 2
HIP_LAUNCH_PARAM_END = 3

_OK = hipError_t.hipSuccess
_STATE: dict[str, object] = {}


class DeviceArray:
    """What ``hipMalloc`` returns (hip-python: ``DeviceArray``, a ``Pointer``): ``int()`` is the address."""

    def __init__(self, address: int) -> None:
        self._address = address

    def __int__(self) -> int:
        return self._address

    def __repr__(self) -> str:
        return f"<fake DeviceArray {self._address:#x}>"


class hipDeviceProp_t:  # noqa: N801
    def __init__(self, name: bytes = b"", gcnArchName: bytes = b"", totalGlobalMem: int = 0, warpSize: int = 0):
        self.name, self.gcnArchName, self.totalGlobalMem, self.warpSize = name, gcnArchName, totalGlobalMem, warpSize


class ihipModule_t:  # noqa: N801
    def __init__(self, module: _device.Module) -> None:
        self.module = module


class ihipModuleSymbol_t:  # noqa: N801
    def __init__(self, module: _device.Module, name: str) -> None:
        self.module, self.name = module, name


def _device_or_none() -> _device.Device | None:
    if "device" not in _STATE:
        _STATE["device"] = _device.config_from_env()
    return _STATE["device"]  # type: ignore[return-value]


def _injected(call: str) -> hipError_t | None:
    spec = os.environ.get("TILESIM_FAKE_HIP_FAIL", "")
    name, _, err = spec.partition("=")
    return hipError_t[err] if name == call and err else None


def _address(obj: object) -> int | None:
    """A pointer as hip-python's ``Pointer`` would read it: None, int, ctypes.c_void_p, ``int()``-able
    device arrays, or the address of a host buffer (bytes, numpy arrays, ctypes arrays)."""
    if obj is None:
        return 0
    if isinstance(obj, ctypes.c_void_p):
        return obj.value or 0
    if isinstance(obj, (int, DeviceArray)):
        return int(obj)
    if isinstance(obj, ctypes.Array):
        return ctypes.addressof(obj)
    if isinstance(obj, bytes):
        return ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p).value
    iface = getattr(obj, "__array_interface__", None)
    if isinstance(iface, dict):
        return int(iface["data"][0])
    return None


def _host_bytes(obj: object, n: int) -> bytes | None:
    try:
        mv = memoryview(obj).cast("B")  # type: ignore[arg-type]
    except TypeError:
        return None
    return bytes(mv[:n]) if mv.nbytes >= n else None


# ------------------------------------------------------------------ device management

def hipGetDeviceCount():  # noqa: N802
    dev = _device_or_none()
    return (hipError_t.hipErrorNoDevice, 0) if dev is None else (_OK, 1)


def hipGetDeviceProperties(*args):  # noqa: N802
    """hip-python 10: ``(deviceId) -> (err, props)``; with TILESIM_FAKE_HIP_API=legacy, hip-python
    5.x-7.x's ``(props, deviceId) -> (err,)`` that fills the ``hipDeviceProp_t`` passed in."""
    legacy = os.environ.get("TILESIM_FAKE_HIP_API") == "legacy"
    if len(args) != (2 if legacy else 1):
        raise TypeError(f"hipGetDeviceProperties() takes {2 if legacy else 1} positional argument(s)")
    device_id = args[-1]
    dev = _device_or_none()
    if dev is None or device_id != 0:
        return (hipError_t.hipErrorInvalidDevice,) if legacy else (hipError_t.hipErrorInvalidDevice, None)
    from tilesim.targets import get_target

    wave = get_target(_device._base(dev.arch)).default_wave
    props = args[0] if legacy else hipDeviceProp_t()
    props.__init__(TILESIM_FAKE_DEVICE.encode(), dev.arch.encode(), dev.capacity, wave)
    return (_OK,) if legacy else (_OK, props)


def hipDeviceSynchronize():  # noqa: N802
    dev = _device_or_none()
    if dev is None:
        return (hipError_t.hipErrorNoDevice,)
    if dev.sticky is not None:
        return (hipError_t[dev.sticky],)
    return (_injected("hipDeviceSynchronize") or _OK,)


def hipGetErrorName(hip_error):  # noqa: N802
    return (_OK, hipError_t(int(hip_error)).name.encode())


# ------------------------------------------------------------------ memory

def hipMalloc(size):  # noqa: N802
    dev = _device_or_none()
    if dev is None:
        return (hipError_t.hipErrorNoDevice, None)
    if _injected("hipMalloc"):
        return (_injected("hipMalloc"), None)
    if size == 0:
        return (_OK, None)
    addr = dev.malloc(int(size))
    return (hipError_t.hipErrorOutOfMemory, None) if addr is None else (_OK, DeviceArray(addr))


def hipFree(ptr):  # noqa: N802
    dev = _device_or_none()
    addr = _address(ptr)
    if dev is None or addr is None:
        return (hipError_t.hipErrorInvalidValue,)
    if addr == 0:
        return (_OK,)
    return (_OK,) if dev.free(addr) else (hipError_t.hipErrorInvalidValue,)


def hipMemcpy(dst, src, sizeBytes, kind):  # noqa: N802, N803
    dev = _device_or_none()
    if dev is None:
        return (hipError_t.hipErrorNoDevice,)
    if _injected("hipMemcpy"):
        return (_injected("hipMemcpy"),)
    n = int(sizeBytes)
    if kind == hipMemcpyKind.hipMemcpyHostToDevice:
        data, addr = _host_bytes(src, n), _address(dst)
        if data is None or addr is None or not dev.write(addr, data):
            return (hipError_t.hipErrorInvalidValue,)
        return (_OK,)
    if kind == hipMemcpyKind.hipMemcpyDeviceToHost:
        addr = _address(src)
        data = None if addr is None else dev.read(addr, n)
        if data is None:
            return (hipError_t.hipErrorInvalidValue,)
        try:
            out = memoryview(dst).cast("B")
            out[:n] = data
        except (TypeError, ValueError):
            return (hipError_t.hipErrorInvalidValue,)
        return (_OK,)
    return (hipError_t.hipErrorNotSupported,)  # the fake copies host<->device only


# ------------------------------------------------------------------ modules and launch

def hipModuleLoadData(image):  # noqa: N802
    dev = _device_or_none()
    if dev is None:
        return (hipError_t.hipErrorNoDevice, None)
    try:
        data = bytes(memoryview(image).cast("B"))
    except TypeError:
        return (hipError_t.hipErrorInvalidValue, None)
    try:
        from hip._elf import read_code_object

        target = read_code_object(data).target
    except (ValueError, IndexError, struct.error):
        return (hipError_t.hipErrorInvalidImage, None)
    if _device._base(target.split("--", 1)[-1]) != _device._base(dev.arch):
        return (hipError_t.hipErrorNoBinaryForGpu, None)  # HIP: no kernel image for this device
    return (_OK, ihipModule_t(dev.load(data)))


def hipModuleGetFunction(module, kname):  # noqa: N802
    name = kname.decode() if isinstance(kname, (bytes, bytearray)) else str(kname)
    if not isinstance(module, ihipModule_t):
        return (hipError_t.hipErrorInvalidHandle, None)
    if module.module.image.kernel(name) is None:
        return (hipError_t.hipErrorNotFound, None)
    return (_OK, ihipModuleSymbol_t(module.module, name))


def _pack_argument_list(entries) -> bytes:
    """hip-python's HipModuleLaunchKernel_extra for a tuple/list: each ctypes value copied at an offset
    aligned to min(sizeof, 8); anything else converted to a pointer (8 bytes)."""
    buf = bytearray()
    for e in entries:
        if isinstance(e, ctypes._SimpleCData) or isinstance(e, (ctypes.Structure, ctypes.Union)):
            raw = ctypes.string_at(ctypes.addressof(e), ctypes.sizeof(e))
        else:
            addr = _address(e)
            if addr is None:
                raise TypeError(f"hip-python cannot convert {type(e).__name__} to a Pointer")
            raw = struct.pack("<Q", addr)
        align = min(len(raw), 8)
        buf += b"\0" * (-len(buf) % align)
        buf += raw
    return bytes(buf)


def _explicit_arguments(extra) -> bytes | hipError_t:
    if isinstance(extra, (tuple, list)):
        return _pack_argument_list(extra)
    addr = _address(extra)
    if not addr:
        return hipError_t.hipErrorInvalidValue
    cfg = struct.unpack("<5Q", ctypes.string_at(addr, 40))  # the runtime reads void*[5] at that address
    if (cfg[0], cfg[2], cfg[4]) != (HIP_LAUNCH_PARAM_BUFFER_POINTER, HIP_LAUNCH_PARAM_BUFFER_SIZE,
                                    HIP_LAUNCH_PARAM_END):
        return hipError_t.hipErrorNotInitialized  # clr's answer to a malformed extra
    size = struct.unpack("<Q", ctypes.string_at(cfg[3], 8))[0]
    return ctypes.string_at(cfg[1], size) if size else b""


def hipModuleLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,  # noqa: N802, N803
                          sharedMemBytes, stream, kernelParams, extra):  # noqa: N803
    dev = _device_or_none()
    if dev is None:
        return (hipError_t.hipErrorNoDevice,)
    if not isinstance(f, ihipModuleSymbol_t):
        return (hipError_t.hipErrorInvalidHandle,)
    if _injected("hipModuleLaunchKernel"):
        return (_injected("hipModuleLaunchKernel"),)
    if kernelParams is not None:
        return (hipError_t.hipErrorNotSupported,) if extra is None else (hipError_t.hipErrorInvalidValue,)
    explicit = _explicit_arguments(extra)
    if isinstance(explicit, hipError_t):
        return (explicit,)
    err = dev.launch(f.module, f.name, (gridDimX, gridDimY, gridDimZ), (blockDimX, blockDimY, blockDimZ),
                     int(sharedMemBytes), explicit)
    return (hipError_t[err],) if err else (_OK,)


def reset() -> None:
    """Forget the device (tests that change the TILESIM_FAKE_HIP_* environment in one process)."""
    _STATE.clear()
