"""Public entry points: :func:`emulate` (any clang-compiled AMDGPU kernel) and
:func:`emulate_program` (a tile program: emit HIP, compile through the cache, emulate)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from tilesim.codegen.hip import emit_hip
from tilesim.errors import DeviceError
from tilesim.hw.amd import CodeObject, kernarg_metadata, pack_kernargs
from tilesim.hw.offline import Compiled, compile_hip
from tilesim.isa.asm import IsaError, parse
from tilesim.isa.launch import Launch, run_kernel
from tilesim.isa.memory import Heap, Race
from tilesim.matrix.dtypes import decode, dtype, encode, from_memory, to_memory
from tilesim.matrix.numerics import quantize
from tilesim.targets import get_target

__all__ = ["emulate", "emulate_program", "Emulation"]


@dataclass(frozen=True)
class Emulation:
    """Buffers after the kernel ran (raw bytes viewed as the dtypes given), with what was seen."""

    buffers: dict[str, np.ndarray]
    races: tuple[Race, ...] = ()
    notes: tuple[str, ...] = ()
    instructions: int = 0  # wave-instructions executed
    seconds: float = 0.0
    target: str = ""
    kernel: str = ""
    hazards: tuple[str, ...] = ()  # registers used while their load may be in flight (missing s_waitcnt)
    unwritten: tuple[str, ...] = ()  # LDS reads of bytes no store wrote (the hardware's hold leftovers)
    outputs: dict[str, np.ndarray] = field(default_factory=dict)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name] if name in self.outputs else self.buffers[name]


def _dims(x: int | tuple[int, ...], what: str) -> tuple[int, int, int]:
    t = (x,) if isinstance(x, int) else tuple(x)
    if not 1 <= len(t) <= 3 or any(not isinstance(v, (int, np.integer)) or v < 1 for v in t):
        raise IsaError(f"{what} must be 1-3 positive integers, got {x!r}")
    return tuple(int(v) for v in t) + (1,) * (3 - len(t))  # type: ignore[return-value]


def _kernarg(isa: str, target: str, kernel: str, pointers: list[int], scalars: list[object],
             grid: tuple[int, int, int], block: tuple[int, int, int]) -> bytes:
    args, size = kernarg_metadata(isa, kernel)
    by_value = [a for a in args if a.value_kind == "by_value"]
    co = CodeObject(target, kernel, b"", tuple(a for a in args if a.value_kind != "by_value"), size, {})
    try:
        buf = bytearray(pack_kernargs(co, pointers, grid, block))
    except DeviceError as e:
        raise IsaError(f"kernel {kernel} ({target}): {e}") from None
    if len(scalars) != len(by_value):
        raise IsaError(f"kernel {kernel} takes {len(by_value)} by-value argument(s), got {len(scalars)}")
    for a, v in zip(by_value, scalars):
        arr = np.asarray(v)
        if arr.dtype.itemsize != a.size or arr.ndim:
            raise IsaError(f"by-value argument {a.name or a.offset} is {a.size} bytes; got {v!r} ({arr.dtype})")
        buf[a.offset: a.offset + a.size] = arr.tobytes()
    return bytes(buf)


def emulate(code: str | Compiled, target: str | None = None, kernel: str | None = None, *,
            grid: int | tuple[int, ...] = 1, block: int | tuple[int, ...] = 1,
            args: list[tuple[str, np.ndarray] | np.generic | int | float] | None = None,
            max_steps: int = 5_000_000, mma_hook: object = None) -> Emulation:
    """Run one kernel of clang's AMDGPU assembly (text or :class:`~tilesim.hw.offline.Compiled`).

    ``args`` are the kernel's parameters in order: ``(name, array)`` for a pointer (the array is
    copied into emulated global memory; after the run ``result.buffers[name]`` holds its bytes as
    the same dtype and shape), a numpy scalar for a by-value parameter. Raises :class:`IsaError`
    for anything not modelled."""
    isa = code.isa if isinstance(code, Compiled) else str(code)
    k = parse(isa, kernel)
    if target is not None and target != k.target:
        raise IsaError(f"the assembly is for {k.target}, not {target}")
    g, b = _dims(grid, "grid"), _dims(block, "block")
    heap = Heap()
    pointers, scalars, shapes = [], [], {}
    for a in args or []:
        if isinstance(a, tuple):
            name, arr = a
            arr = np.ascontiguousarray(arr)
            if name in shapes:
                raise IsaError(f"two buffers are named {name!r}")
            shapes[name] = (arr.dtype, arr.shape)
            pointers.append(heap.add(name, arr))
        else:
            scalars.append(a)
    # kernarg goes in the heap too: s_load reads it through the pointer in s[0:1]
    kern = _kernarg(isa, k.target, k.name, pointers, scalars, g, b)
    kaddr = heap.add("kernarg", np.frombuffer(kern, np.uint8).copy() if kern else np.zeros(8, np.uint8))
    t0 = time.perf_counter()
    st, races, notes = run_kernel(k, Launch(g, b, kern), heap, kaddr, max_steps=max_steps, mma_hook=mma_hook)
    dt = time.perf_counter() - t0
    out = {n: heap.view(n).copy().view(d).reshape(s) for n, (d, s) in shapes.items()}
    return Emulation(out, tuple(races), tuple(notes), st.executed, dt, k.target, k.name,
                     hazards=tuple(st.hazards.found) if st.hazards is not None else (),
                     unwritten=tuple(st.lds.unwritten) if st.lds is not None else ())


def emulate_program(prog: object, inputs: dict[str, np.ndarray] | None = None, **kw: np.ndarray) -> Emulation:
    """Emit a tile program as HIP, compile it for its AMD target (cached), emulate it, and return
    its output tensors decoded as the simulator returns them (``result.outputs`` / ``result[name]``)."""
    arrays = {**(inputs or {}), **kw}
    em = emit_hip(prog)  # type: ignore[arg-type]
    p = em.program
    if get_target(p.target).vendor != "amd":
        raise IsaError(f"{p.target} is not an AMD target; the emulator runs AMDGPU code only")
    comp = compile_hip(em.source, p.target, wave_size=p.wave_size)
    unknown = sorted(set(arrays) - {t.name for t in p.tensors})
    if unknown:
        raise IsaError(f"no tensor named {unknown[0]!r}; tensors: {', '.join(t.name for t in p.tensors)}")
    args = []
    for name in em.tensors:
        tp = p.tensor(name)
        host = to_memory(encode(quantize(arrays[name], tp.dtype), tp.dtype) if name in arrays
                         else np.zeros(tp.shape, np.uint64), tp.dtype)  # packed 4/6-bit elements
        args.append((name, host))
    res = emulate(comp, p.target, em.kernel, grid=em.grid, block=em.block, args=args)
    outs = {tp.name: decode(from_memory(res.buffers[tp.name], tp.dtype, tp.shape), tp.dtype)
            for tp in p.tensors if tp.output}
    return replace(res, outputs=outs)
