"""AMD device path: code objects, kernel-argument packing from the compiler's metadata, and a
``hip-python`` runner.

The code object is built offline (clang ``-c`` then ``ld.lld -shared``, as ROCm does); the kernel
argument buffer is packed from the code object's own metadata (``.args``: offsets, sizes, value
kinds, hidden arguments) — so packing is checked against a real compiler even where no AMD GPU
exists. ``run_amd`` needs ROCm's runtime; without it, ``amd_device()`` says why and the verdict is
COMPILE_ONLY. Not run on AMD hardware by this project.
"""

from __future__ import annotations

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
from tilesim.matrix.dtypes import decode, dtype, encode, from_memory, to_memory
from tilesim.matrix.numerics import quantize
from tilesim.targets import get_target

__all__ = ["KernArg", "CodeObject", "build_code_object", "kernarg_metadata", "pack_kernargs", "amd_device", "run_amd"]


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


def build_code_object(em: Emitted, timeout: float = 120.0) -> CodeObject:
    """Compile and link the emitted source into a loadable code object (ELF) for its AMD target."""
    prog = em.program
    t = get_target(prog.target)
    comp = compile_hip(em.source, t.name, wave_size=prog.wave_size)
    args, size = kernarg_metadata(comp.isa, em.kernel)
    cc = list(clang_command())
    ld = cc[:-1] + ["ld.lld"] if cc[-1] == "clang" else [str(Path(cc[0]).with_name("ld.lld"))]
    with tempfile.TemporaryDirectory(prefix="tilesim-co-") as tmp:
        asm, obj, co = Path(tmp, "k.s"), Path(tmp, "k.o"), Path(tmp, "k.co")
        asm.write_text(comp.isa)  # the ISA we already have: assemble it, then link like ROCm does
        for cmd in ([*cc, "-target", "amdgcn-amd-amdhsa", f"-mcpu={t.name}", "-c", str(asm), "-o", str(obj)],
                    [*ld, "-shared", str(obj), "-o", str(co)]):
            try:
                p = run_tool(cmd, timeout=timeout, env={**os.environ, "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp})
            except subprocess.TimeoutExpired:
                raise ToolchainError(f"{' '.join(cmd[-5:-3])} timed out after {timeout:.0f}s") from None
            if p.returncode != 0:
                raise ToolchainError(f"{' '.join(cmd[-5:-3])} failed: {p.stderr.strip().splitlines()[:1]}")
        return CodeObject(t.name, em.kernel, co.read_bytes(), args, size, comp.metadata)


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


def amd_device() -> tuple[bool, str]:
    """(True, description) when ROCm's HIP runtime and an AMD GPU are usable; else (False, why)."""
    try:
        from hip import hip  # hip-python
    except Exception as e:
        return False, f"no AMD runtime: hip-python is not installed ({type(e).__name__})"
    try:
        err, n = hip.hipGetDeviceCount()
    except Exception as e:  # hip-python imports without ROCm and fails on first call
        return False, f"no AMD runtime: {str(e).splitlines()[0][:160]}"
    if int(err) != 0 or n < 1:
        return False, "no AMD GPU"
    return True, f"{n} AMD GPU(s)"


def run_amd(em: Emitted, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:  # pragma: no cover - needs ROCm
    """Run on AMD device 0 through hip-python. Not run on AMD hardware by this project."""
    ok, why = amd_device()
    if not ok:
        raise DeviceError(why)
    from hip import hip

    co = build_code_object(em)

    def chk(res: object) -> object:
        err = res[0] if isinstance(res, tuple) else res
        if int(err) != 0:
            raise DeviceError(f"HIP error {err}")
        return res[1] if isinstance(res, tuple) and len(res) == 2 else res

    module = chk(hip.hipModuleLoadData(co.binary))
    fn = chk(hip.hipModuleGetFunction(module, em.kernel.encode()))
    devs, hosts = [], []
    for tp in em.program.tensors:
        host = to_memory(encode(quantize(arrays[tp.name], tp.dtype), tp.dtype) if tp.name in arrays
                         else np.zeros(tp.shape, np.uint64), tp.dtype)  # packed 4/6-bit elements
        host = np.ascontiguousarray(host)
        d = chk(hip.hipMalloc(host.nbytes))
        chk(hip.hipMemcpy(d, host, host.nbytes, hip.hipMemcpyKind.hipMemcpyHostToDevice))
        devs.append(d)
        hosts.append(host)
    args = pack_kernargs(co, [int(d) for d in devs], em.grid, em.block)
    chk(hip.hipModuleLaunchKernel(fn, *em.grid, *em.block, em.lds_bytes, None, None,
                                  extra=(hip.HIP_LAUNCH_PARAM_BUFFER_POINTER, args,
                                         hip.HIP_LAUNCH_PARAM_BUFFER_SIZE, len(args), hip.HIP_LAUNCH_PARAM_END)))
    chk(hip.hipDeviceSynchronize())
    out = {}
    for tp, d, host in zip(em.program.tensors, devs, hosts):
        if tp.output:
            chk(hip.hipMemcpy(host, d, host.nbytes, hip.hipMemcpyKind.hipMemcpyDeviceToHost))
            out[tp.name] = decode(from_memory(host, tp.dtype, tp.shape), tp.dtype)
        chk(hip.hipFree(d))
    return out
