"""Emulate any HIP kernel, not only tilesim's: compile a HIP source offline and run one kernel.

Arguments are given as specs, in the kernel's parameter order:

* ``NAME=DTYPE[D0,D1,...]`` — a buffer of that element type and shape, random (seeded) for
  float types, random small integers for integer types; ``NAME=zeros:DTYPE[...]`` for zeros;
* ``NAME=FILE.npy`` — a buffer loaded from a ``.npy`` file;
* ``NAME=DTYPE:VALUE`` — a by-value scalar (``n=i32:64``, ``alpha=f32:0.5``).

DTYPE is one of f16, bf16, f32, f64, i8, u8, i16, u16, i32, u32, i64, u64.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from tilesim.budget import check_elements
from tilesim.errors import choices
from tilesim.files import MAX_ARRAY_BYTES, read_array
from tilesim.hw.offline import compile_hip
from tilesim.isa.api import Emulation, emulate
from tilesim.isa.asm import IsaError

__all__ = ["ArgSpec", "parse_arg", "materialise", "emulate_hip"]

_DT = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "u8": np.uint8, "i16": np.int16,
       "u16": np.uint16, "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64}


def _dtype(name: str) -> np.dtype:
    if name == "bf16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    if name not in _DT:
        raise IsaError(f"unknown element type {name!r}; types: {choices([*_DT, 'bf16'])}")
    return np.dtype(_DT[name])


@dataclass(frozen=True)
class ArgSpec:
    name: str
    kind: str  # "buffer" | "scalar"
    dtype: str
    shape: tuple[int, ...] = ()
    value: float | int | None = None
    path: str | None = None
    zeros: bool = False


def parse_arg(spec: str) -> ArgSpec:
    """One ``NAME=...`` spec (see the module docstring); raises IsaError naming the bad part."""
    name, sep, rhs = spec.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise IsaError(f"argument {spec!r}: expected NAME=DTYPE[shape], NAME=FILE.npy or NAME=DTYPE:VALUE")
    if rhs.endswith(".npy"):
        return ArgSpec(name, "buffer", "", path=rhs)
    m = re.fullmatch(r"(zeros:)?(\w+)\[([\d, ]+)\]", rhs)
    if m:
        _dtype(m.group(2))
        shape = tuple(int(x) for x in m.group(3).split(",") if x.strip())
        if not shape or any(d < 1 for d in shape):
            raise IsaError(f"argument {spec!r}: shape must be positive integers")
        return ArgSpec(name, "buffer", m.group(2), shape, zeros=bool(m.group(1)))
    m = re.fullmatch(r"(\w+):(-?[\d.eE+-]+)", rhs)
    if m:
        return ArgSpec(name, "scalar", m.group(1), value=_scalar(spec, m.group(1), m.group(2)))
    raise IsaError(f"argument {spec!r}: expected NAME=DTYPE[shape], NAME=FILE.npy or NAME=DTYPE:VALUE")


def _scalar(spec: str, dtype: str, text: str) -> float | int:
    """A by-value scalar that its type holds exactly (an integer in range) or finitely (a float)."""
    dt = _dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if not re.fullmatch(r"-?\d+", text) or not info.min <= int(text) <= info.max:
            raise IsaError(f"argument {spec!r}: a {dtype} value is an integer in {info.min}..{info.max}")
        return int(text)
    try:
        v = float(text)
    except ValueError:
        raise IsaError(f"argument {spec!r}: {text!r} is not a number") from None
    with np.errstate(over="ignore"):
        if not np.isfinite(dt.type(v)):
            raise IsaError(f"argument {spec!r}: {text} does not fit a finite {dtype}")
    return v


def _materialise(a: ArgSpec, rng: np.random.Generator) -> tuple[str, np.ndarray] | np.generic:
    if a.kind == "scalar":
        return _dtype(a.dtype).type(a.value)
    if a.path is not None:
        return a.name, read_array(a.path, f"argument {a.name}:", MAX_ARRAY_BYTES, IsaError)  # no FIFO, no size
    dt = _dtype(a.dtype)
    if a.zeros:
        return a.name, np.zeros(a.shape, dt)
    if dt.kind == "f" or a.dtype == "bf16":
        return a.name, rng.standard_normal(a.shape).astype(dt)
    info = np.iinfo(dt)
    return a.name, rng.integers(max(info.min, -8), min(info.max, 8) + 1, a.shape).astype(dt)


def materialise(args: list[str | ArgSpec], seed: int = 0) -> list:
    """The argument values for :func:`tilesim.isa.emulate` from specs: ``(name, array)`` or a scalar."""
    rng = np.random.default_rng(seed)
    specs = [a if isinstance(a, ArgSpec) else parse_arg(a) for a in args]
    check_elements(sum(math.prod(a.shape) for a in specs if a.kind == "buffer"),  # before allocating any
                   "the emulated kernel's buffers (" + ", ".join(a.name for a in specs if a.kind == "buffer") + ")")
    return [_materialise(a, rng) for a in specs]


def emulate_hip(source: str, target: str, kernel: str, *, grid: tuple[int, ...], block: tuple[int, ...],
                args: list[str | ArgSpec], seed: int = 0, wave_size: int | None = None) -> tuple[Emulation, dict]:
    """Compile ``source`` for ``target`` and emulate ``kernel``. Returns the emulation and the inputs
    it was given (name -> array), so a caller can save both."""
    vals = materialise(args, seed)
    inputs = {v[0]: v[1].copy() for v in vals if isinstance(v, tuple)}
    comp = compile_hip(source, target, wave_size=wave_size)
    return emulate(comp, target, kernel, grid=grid, block=block, args=vals), inputs
