"""AMD device path: code objects, kernel-argument packing from the compiler's metadata, and a
``hip-python`` runner.

The code object is built offline (clang ``-c`` then ``ld.lld -shared``, as ROCm does); the kernel
argument buffer is packed from the code object's own metadata (``.args``: offsets, sizes, value
kinds, hidden arguments) — so packing is checked against a real compiler even where no AMD GPU
exists. ``run_amd`` needs ROCm's runtime and hip-python; without them, ``amd_probe()`` says why and
the verdict is COMPILE_ONLY (NOT_JUDGED without a reference). **Not run on AMD hardware by this project**: the whole hip-python call
sequence is exercised in CI against a fake ``hip`` module whose device is tilesim's ISA emulator
(``tests/fakes/hip``; docs/hardware-runs.md), never against silicon.

hip-python facts this module relies on (rocm-bindings-hip 10.0 ``hip.pyx``; the same in hip-python
5.x-7.x): every call returns a tuple whose first item is a ``hipError_t`` (an ``IntEnum``), then the
outputs (``hipMalloc`` -> ``(err, DeviceArray)``); ``hipModuleLaunchKernel``'s ``extra`` given as a
tuple is *the kernel's argument list* (hip-python packs it with its own alignment rule), while any
other object is taken as the address of a C ``void*[5]`` config — so tilesim passes the address of
``{HIP_LAUNCH_PARAM_BUFFER_POINTER, buf, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END}``
with ``buf`` packed from the code object's own metadata. The runtime copies each explicit argument
from ``buf`` at its metadata offset and fills the hidden arguments itself (clr ``hip_module.cpp``).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import re
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tilesim.codegen.hip import Emitted
from tilesim.errors import DeviceError, ToolchainError
from tilesim.hw.offline import clang_command, compile_hip, run_tool
from tilesim.hw.watchdog import no_device_path
from tilesim.matrix.dtypes import decode, encode, from_memory, to_memory
from tilesim.matrix.numerics import quantize
from tilesim.targets import get_target

__all__ = ["KernArg", "CodeObject", "FAKE_HIP_ENV", "amd_device", "amd_probe", "base_arch", "build_code_object",
           "hip_runtime_missing", "kernarg_metadata", "link_code_object", "pack_kernargs", "run_amd"]

# tilesim's own tests set this to let the fake ``hip`` (tests/fakes/hip, a module that declares itself
# with TILESIM_FAKE_DEVICE) stand in for hip-python; without it a fake is refused, never run
FAKE_HIP_ENV = "TILESIM_ALLOW_FAKE_HIP"
FAKE_DEVICE_NAME = "fake hip (tilesim ISA emulator; not AMD hardware)"
# How ROCm reaches an AMD GPU on Linux: the KFD compute node, which the amdgpu kernel driver creates
# and containers must be given (ROCm's "Running ROCm Docker containers": --device /dev/kfd is "the
# main compute interface, shared by all GPUs"), or, under WSL2, the DirectX paravirtual driver's
# /dev/dxg (librocdxg; rocprofiler-sdk's WSL2 page: "/dev/dxg ... rather than the native KFD
# driver (/dev/kfd)"). With neither, hipGetDeviceCount finds no device.
HIP_DEVICE_PATHS = ("/dev/kfd", "/dev/dxg")


@dataclass(frozen=True)
class KernArg:
    offset: int
    size: int
    value_kind: str
    name: str = ""


@dataclass(frozen=True)
class CodeObject:
    target: str
    kernel: str
    binary: bytes
    args: tuple[KernArg, ...]
    kernarg_size: int
    metadata: dict[str, int]


def kernarg_metadata(isa: str, kernel: str) -> tuple[tuple[KernArg, ...], int]:
    """The ``.args`` list and ``.kernarg_segment_size`` of ``kernel`` from the ISA's AMDGPU metadata."""
    m = re.search(r"amdhsa\.kernels:(.*?)(?:amdhsa\.target|\.end_amdgpu_metadata)", isa, re.S)
    if not m:
        raise ToolchainError("no .amdhsa.kernels metadata in the ISA")
    body = m.group(1)
    for kern in re.split(r"\n\s{2}- ", body):
        if re.search(rf"\.name:\s+{re.escape(kernel)}\s*$", kern, re.M):
            args_m = re.search(r"\.args:\s*\n(.*?)(?=\n\s{4}\.[a-z_]+:)", kern, re.S)
            size = int(re.search(r"\.kernarg_segment_size:\s*(\d+)", kern).group(1))
            args = []
            for item in re.split(r"\n\s{6}- ", "\n" + (args_m.group(1) if args_m else "")):
                off = re.search(r"\.offset:\s*(\d+)", item)
                if not off:
                    continue
                sz = int(re.search(r"\.size:\s*(\d+)", item).group(1))
                kind = re.search(r"\.value_kind:\s*(\w+)", item).group(1)
                nm = re.search(r"\.name:\s*(\w+)", item)
                args.append(KernArg(int(off.group(1)), sz, kind, nm.group(1) if nm else ""))
            return tuple(args), size
    raise ToolchainError(f"kernel {kernel!r} not in the code object's metadata")


@functools.lru_cache(maxsize=16)
def link_code_object(isa: str, target: str, timeout: float = 120.0) -> bytes:
    """Assemble clang's ISA text and link it into a loadable code object (ELF), as ROCm does.

    Deterministic, so remembered per process (a runner and a loader checking its image link once)."""
    t = get_target(target)
    cc = list(clang_command())
    ld = cc[:-1] + ["ld.lld"] if cc[-1] == "clang" else [str(Path(cc[0]).with_name("ld.lld"))]
    with tempfile.TemporaryDirectory(prefix="tilesim-co-") as tmp:
        asm, obj, co = Path(tmp, "k.s"), Path(tmp, "k.o"), Path(tmp, "k.co")
        asm.write_text(isa)  # the ISA we already have: assemble it, then link like ROCm does
        for cmd in ([*cc, "-target", "amdgcn-amd-amdhsa", f"-mcpu={t.name}", "-c", str(asm), "-o", str(obj)],
                    [*ld, "-shared", str(obj), "-o", str(co)]):
            try:
                p = run_tool(cmd, timeout=timeout, env={**os.environ, "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp})
            except subprocess.TimeoutExpired:
                raise ToolchainError(f"{' '.join(cmd[-5:-3])} timed out after {timeout:.0f}s") from None
            if p.returncode != 0:
                raise ToolchainError(f"{' '.join(cmd[-5:-3])} failed: {p.stderr.strip().splitlines()[:1]}")
        return co.read_bytes()


def build_code_object(em: Emitted, timeout: float = 120.0) -> CodeObject:
    """Compile and link the emitted source into a loadable code object (ELF) for its AMD target."""
    prog = em.program
    t = get_target(prog.target)
    comp = compile_hip(em.source, t.name, wave_size=prog.wave_size)
    args, size = kernarg_metadata(comp.isa, em.kernel)
    return CodeObject(t.name, em.kernel, link_code_object(comp.isa, t.name, timeout), args, size, comp.metadata)


def pack_kernargs(co: CodeObject, pointers: list[int], grid: tuple[int, int, int], block: tuple[int, int, int]) -> bytes:
    """The kernel-argument buffer: tensor pointers at their offsets, hidden arguments filled."""
    buf = bytearray(co.kernarg_size)
    ptrs = iter(pointers)
    hidden = {"hidden_block_count_x": grid[0], "hidden_block_count_y": grid[1], "hidden_block_count_z": grid[2],
              "hidden_group_size_x": block[0], "hidden_group_size_y": block[1], "hidden_group_size_z": block[2],
              "hidden_grid_dims": sum(1 for g in grid if g > 1) or 1}
    for a in co.args:
        if a.value_kind == "global_buffer":
            try:
                val = next(ptrs)
            except StopIteration:
                raise DeviceError(f"{co.kernel} takes more buffers than the {len(pointers)} given") from None
            struct.pack_into("<Q", buf, a.offset, val)
        elif a.value_kind in hidden:
            struct.pack_into({2: "<H", 4: "<I", 8: "<Q"}[a.size], buf, a.offset, hidden[a.value_kind])
        elif a.value_kind.startswith("hidden_"):
            continue  # zero: no printf buffer, no default queue, no completion action
        else:
            raise DeviceError(f"kernel argument kind {a.value_kind!r} at offset {a.offset} is not supported")
    if next(ptrs, None) is not None:
        raise DeviceError(f"{co.kernel} takes fewer buffers than the {len(pointers)} given")
    return bytes(buf)


# ------------------------------------------------------------------ the device (hip-python)

def hip_runtime_missing() -> str | None:
    """Why no AMD run can happen here, found without importing hip-python or initialising HIP: no
    ``hip`` module, or (on Linux) none of :data:`HIP_DEVICE_PATHS`. None means "maybe": the device
    process probes with :func:`amd_probe`. With :data:`FAKE_HIP_ENV` set the paths are not asked
    (tilesim's test fake needs no driver), so the probe decides."""
    if importlib.util.find_spec("hip") is None:
        return "no AMD runtime: hip-python is not installed (pip install hip-python, with ROCm)"
    if os.environ.get(FAKE_HIP_ENV) != "1" and no_device_path(HIP_DEVICE_PATHS):
        return (f"no AMD GPU: none of {', '.join(HIP_DEVICE_PATHS)} exists (the amdgpu kernel driver is not "
                "loaded, or the device is not passed through)")
    return None


def _genuine(mod: object) -> str | None:
    """The distribution (hip-python, or rocm-bindings-hip that hip-python 10 re-exports) whose
    installed files include ``mod``'s file; None when none does."""
    from importlib import metadata  # here, not at import: ~50 ms that every `tilesim run` paid

    f = getattr(mod, "__file__", None)
    if not f:
        return None
    want = Path(f).resolve()
    for dist in ("hip-python", "rocm-bindings-hip"):
        try:
            d = metadata.distribution(dist)
        except metadata.PackageNotFoundError:
            continue
        files = d.files or []  # no RECORD: cannot tell, so not genuine
        if any(Path(str(d.locate_file(x))).resolve() == want for x in files if str(x).startswith(("hip", "rocm"))):
            return dist
    return None


def _hip_module() -> tuple[object, bool]:
    """(hip-python's ``hip`` module, whether it is tilesim's test fake). A ``hip`` that is neither the
    installed hip-python nor the declared fake with :data:`FAKE_HIP_ENV` set is refused: MATCH means
    silicon, so nothing else may stand in for the runtime."""
    try:
        from hip import hip  # hip-python
    except Exception as e:
        raise DeviceError(f"no AMD runtime: hip-python does not import ({type(e).__name__}: "
                          f"{(str(e).splitlines() or [''])[0][:160]})") from None
    if getattr(hip, "TILESIM_FAKE_DEVICE", None) is not None:
        if os.environ.get(FAKE_HIP_ENV) != "1":
            raise DeviceError(f"the importable `hip` ({getattr(hip, '__file__', '?')}) is tilesim's test fake, not "
                              f"hip-python: no device run ({FAKE_HIP_ENV}=1 is for tilesim's own tests)")
        return hip, True
    if _genuine(hip) is None:
        raise DeviceError(f"the importable `hip` module ({getattr(hip, '__file__', '?')}) is not installed by "
                          "hip-python or rocm-bindings-hip: no device run")
    return hip, False


def base_arch(gcn_arch_name: str) -> str:
    """``gfx942:sramecc+:xnack-`` -> ``gfx942`` (the target features after ``:`` do not change the ISA)."""
    return gcn_arch_name.split(":", 1)[0].strip()


def _text(v: object) -> str:
    return (v.decode(errors="replace") if isinstance(v, (bytes, bytearray)) else str(v)).split("\0", 1)[0]


def _err_name(hip: object, err: object) -> str:
    name = getattr(err, "name", None)  # hip-python's hipError_t is an IntEnum
    if isinstance(name, str):
        return name
    try:
        return _text(hip.hipGetErrorName(err)[1])  # type: ignore[attr-defined]
    except Exception:
        return f"hipError_t {int(err)}"  # type: ignore[call-overload]


def _check(hip: object, what: str, res: object) -> object:
    """The output of a hip-python call (``(err,)`` or ``(err, value)``), or DeviceError naming the error."""
    err = res[0] if isinstance(res, tuple) else res
    if int(err) != 0:  # type: ignore[call-overload]
        name = _err_name(hip, err)
        kind = "oom" if name in ("hipErrorOutOfMemory", "hipErrorMemoryAllocation") else "launch"
        raise DeviceError(f"{what}: {name} ({int(err)})", kind=kind)  # type: ignore[call-overload]
    return res[1] if isinstance(res, tuple) and len(res) > 1 else None


def _properties(hip: object, device: int) -> tuple[str, str]:
    """(device name, gcnArchName) of ``device``. hip-python 10 returns the properties; 5.x-7.x fill a
    ``hipDeviceProp_t`` passed in."""
    try:
        props = _check(hip, "hipGetDeviceProperties", hip.hipGetDeviceProperties(device))  # type: ignore[attr-defined]
    except TypeError:
        props = hip.hipDeviceProp_t()  # type: ignore[attr-defined]
        _check(hip, "hipGetDeviceProperties", hip.hipGetDeviceProperties(props, device))  # type: ignore[attr-defined]
    return _text(props.name), _text(props.gcnArchName)


def _describe(name: str, arch: str, fake: bool) -> str:
    # tilesim names the fake itself: whatever the module calls its device, a verdict says "fake"
    return f"{FAKE_DEVICE_NAME}, {arch}" if fake else f"{name} ({arch})"


def amd_probe() -> tuple[int | None, str]:
    """``(0, "NAME (gfxNNN...)")`` for AMD device 0, or ``(None, why there is none)``.

    The device process calls it (:func:`tilesim.hw.watchdog.guarded_call`'s ``probe``), so the
    caller's process never initialises HIP. The 0 stands where a CUDA probe returns its compute
    capability; the architecture check is :func:`run_amd`'s, by name.
    """
    try:
        hip, fake = _hip_module()
        try:
            res = hip.hipGetDeviceCount()  # type: ignore[attr-defined]
        except Exception as e:  # hip-python imports without ROCm and fails on its first call
            return None, f"no AMD runtime: {(str(e).splitlines() or [''])[0][:160]}"
        err, n = res[0], res[1]
        if int(err) != 0 or n < 1:
            return None, "no AMD GPU" + (f" ({_err_name(hip, err)})" if int(err) else "")
        return 0, _describe(*_properties(hip, 0), fake)
    except DeviceError as e:
        return None, str(e)


def amd_device() -> tuple[bool, str]:
    """(True, description) when ROCm's HIP runtime and an AMD GPU are usable; else (False, why)."""
    missing = hip_runtime_missing()
    if missing is not None:
        return False, missing
    code, desc = amd_probe()
    return code is not None, desc


def run_amd(em: Emitted, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run on AMD device 0 through hip-python: check the device's architecture, build the code object,
    load it, copy the inputs, launch with the metadata-packed kernel arguments, synchronise, copy
    the outputs back and free. Any nonzero ``hipError_t`` raises DeviceError naming the call and the
    error (``kind`` ``oom`` for hipErrorOutOfMemory, else ``launch``); a device of another
    architecture raises DeviceError ``kind="arch"`` naming both. Not run on AMD hardware by this
    project (CI runs it against tests/fakes/hip)."""
    hip, fake = _hip_module()
    prog = em.program
    name, arch = _properties(hip, 0)
    if base_arch(arch) != prog.target:
        raise DeviceError(f"the program is built for {prog.target}, but AMD device 0 is {base_arch(arch)} "
                          f"(gcnArchName {arch}): a {prog.target} code object does not run there", kind="arch")
    co = build_code_object(em)
    module = _check(hip, "hipModuleLoadData", hip.hipModuleLoadData(co.binary))
    fn = _check(hip, f"hipModuleGetFunction({em.kernel})", hip.hipModuleGetFunction(module, em.kernel.encode()))
    devs: list[object] = []
    try:
        hosts = []
        for tp in prog.tensors:
            host = to_memory(encode(quantize(arrays[tp.name], tp.dtype), tp.dtype) if tp.name in arrays
                             else np.zeros(tp.shape, np.uint64), tp.dtype)  # packed 4/6-bit elements
            host = np.ascontiguousarray(host)
            devs.append(_check(hip, f"hipMalloc({host.nbytes}) for {tp.name}", hip.hipMalloc(host.nbytes)))
            _check(hip, f"hipMemcpy of {tp.name} to the device",
                   hip.hipMemcpy(devs[-1], host, host.nbytes, hip.hipMemcpyKind.hipMemcpyHostToDevice))
            hosts.append(host)
        packed = pack_kernargs(co, [int(d) for d in devs], em.grid, em.block)  # type: ignore[call-overload]
        buf = ctypes.create_string_buffer(packed, max(len(packed), 1))
        size = ctypes.c_size_t(len(packed))
        config = (ctypes.c_void_p * 5)(hip.HIP_LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(buf),
                                       hip.HIP_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(size),
                                       hip.HIP_LAUNCH_PARAM_END)
        # extra: the config's address, not a tuple (a tuple is hip-python's argument list); LDS is
        # declared static in the kernel (its descriptor), so no dynamic shared memory is requested
        _check(hip, f"hipModuleLaunchKernel({em.kernel})",
               hip.hipModuleLaunchKernel(fn, *em.grid, *em.block, 0, None, None, extra=ctypes.addressof(config)))
        _check(hip, f"hipDeviceSynchronize after {em.kernel}", hip.hipDeviceSynchronize())
        out = {}
        for tp, d, host in zip(prog.tensors, devs, hosts):
            if tp.output:
                _check(hip, f"hipMemcpy of {tp.name} from the device",
                       hip.hipMemcpy(host, d, host.nbytes, hip.hipMemcpyKind.hipMemcpyDeviceToHost))
                out[tp.name] = decode(from_memory(host, tp.dtype, tp.shape), tp.dtype)
    finally:
        for d in devs:
            hip.hipFree(d)  # best effort: the device process ends right after, freeing the rest
    return out
