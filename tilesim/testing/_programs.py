"""Strategies for small, valid tile programs: a GEMM over a random catalog instruction.

The kernel is the guide's GEMM with the tensor types taken from the instruction's row: a grid
of ``tiles_m x tiles_n`` workgroups, one wave each, a counted K loop of ``k_steps`` mma, and an
optional elementwise epilogue (add/sub/mul/max with a small constant, negate) before the
store. Every single-block, non-sparse row the DSL takes is a candidate, on every target and
wave size the catalog allows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import tilesim.ir.dsl as ts
from tilesim.targets import Target
from tilesim.ir.core import Program
from tilesim.ir.ops import ELEMENTWISE
from tilesim.matrix.dtypes import dtype
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.matrix.numerics import quantize
from tilesim.testing._catalog import InstructionOnTarget, _placements

__all__ = ["EPILOGUE_OPS", "TileCase", "tile_cases", "tile_programs"]

# op -> constants it is drawn with; every result stays a small integer in every accumulator type.
# Drawn from the op table (tilesim/ir/ops.py, each row's test_constants): a row added there is
# drawn here too. The rows' numpy semantics, used for the reference below, are pinned to
# independent values in tests/test_ops.py.
EPILOGUE_OPS: dict[str, tuple[int, ...]] = {e.name: e.test_constants for e in ELEMENTWISE.values() if e.test_constants}


def _apply(name: str, x: np.ndarray, c: int) -> np.ndarray:
    e = ELEMENTWISE[name]
    return e.numpy(x, None if e.arity == 1 else c)


def _trace(name: str, f: ts.Frag, c: int) -> ts.Frag:
    return ts.elementwise(name, f, None if ELEMENTWISE[name].arity == 1 else c)


class TileCase(NamedTuple):
    """A drawn GEMM program with inputs and the float64 reference of what it must store."""

    program: Program
    instruction: MatrixInstruction
    target: Target
    epilogue: tuple[tuple[str, int], ...]  # (op, constant) applied in order after the K loop
    inputs: dict[str, np.ndarray]  # A, B: small integers, exact in every operand type
    expected: dict[str, np.ndarray]  # C

    def __repr__(self) -> str:
        shapes = ", ".join(f"{t.name}{list(t.shape)}" for t in self.program.tensors)
        return (f"TileCase({self.instruction.mnemonic} on {self.target.name}, wave{self.program.wave_size}, "
                f"grid {self.program.grid}, {shapes}, epilogue {list(self.epilogue)})")


@functools.cache
def _kernel(types: tuple[str, str, str, str], epilogue: tuple[tuple[str, int], ...]) -> ts.Kernel:
    a_t, b_t, c_t, d_t = types

    def gemm(A, B, C, *, mma=""):  # annotations are set below, from the row
        op = ts.mma_op(mma)
        ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        acc = ts.zeros(op.layout("C"), c_t)
        for k in ts.range(0, A.shape[1], op.k):
            a = ts.load(A[tm * op.m:, k:], op.layout("A"))
            b = ts.load(B[k:, tn * op.n:], op.layout("B"))
            d = ts.mma(op, a, b, acc)
            acc = d.to(c_t) if c_t != d_t else d  # carry in C's type (gfx1250 bf16f32: D bf16, C f32)
        if c_t != d_t:
            acc = acc.to(d_t)
        for name, const in epilogue:
            acc = _trace(name, acc, const)
        ts.store(C[tm * op.m:, tn * op.n:], acc)

    # The tensor types come from the row, so they are set here rather than written in the signature.
    gemm.__annotations__ = {"A": ts.Tensor[a_t, "M", "K"], "B": ts.Tensor[b_t, "K", "N"],
                            "C": ts.Tensor[d_t, "M", "N"]}
    gemm.__name__ = gemm.__qualname__ = "random_gemm"
    return ts.kernel(gemm)


def _dsl_placements(arch: object, kind: object, wave_size: int | None) -> list[InstructionOnTarget]:
    # single-block, dense instructions; block-scaled rows (gfx950 v_mfma_scale_*) need SA/SB operands
    # this GEMM does not draw (check refuses them without; examples/mxfp8_gemm.py covers them)
    places = _placements(arch, kind, wave_size, False, 1)  # type: ignore[arg-type]
    return [p for p in places if not p.instruction.scale_operands]


def _check_limits(max_tiles: int, max_k_steps: int) -> None:
    for name, v in (("max_tiles", max_tiles), ("max_k_steps", max_k_steps)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InvalidArgument(f"{name} must be a positive integer, got {v!r}")


@st.composite
def _epilogues(draw: st.DrawFn, epilogue: bool | None) -> tuple[tuple[str, int], ...]:
    if epilogue is False:
        return ()
    n = draw(st.integers(1 if epilogue else 0, 2))
    out = []
    for _ in range(n):
        name = draw(st.sampled_from(sorted(EPILOGUE_OPS)))
        out.append((name, draw(st.sampled_from(EPILOGUE_OPS[name]))))
    return tuple(out)


@st.composite
def _drawn(draw: st.DrawFn, places: list[InstructionOnTarget], max_tiles: int, max_k_steps: int,
           epilogue: bool | None) -> tuple[Program, InstructionOnTarget, tuple[tuple[str, int], ...], int]:
    place = draw(st.sampled_from(places))
    row = place.instruction
    tiles_m, tiles_n = draw(st.integers(1, max_tiles)), draw(st.integers(1, max_tiles))
    # C and D of another type (gfx1250 v_wmma_bf16f32) are carried in C's type by an explicit cast
    k_steps = draw(st.integers(1, max_k_steps))
    epi = draw(_epilogues(epilogue))
    prog = _kernel(row.types, epi).specialize(target=place.target.name, wave_size=place.wave_size,
                                              M=tiles_m * row.m, N=tiles_n * row.n, K=k_steps * row.k,
                                              mma=row.mnemonic)
    return prog, place, epi, k_steps


def tile_programs(arch: str | Target | Iterable[str | Target] | None = None, kind: str | Iterable[str] | None = None,
                  *, wave_size: int | None = None, max_tiles: int = 2, max_k_steps: int = 2,
                  epilogue: bool | None = None) -> st.SearchStrategy[Program]:
    """Specialised GEMM :class:`~tilesim.ir.Program` values over random catalog instructions.

    ``arch``/``kind``/``wave_size`` filter the instructions as :func:`instruction_targets` does
    (single-block, dense rows only: what the DSL takes). The grid is 1..``max_tiles`` tiles each
    way and the K loop 1..``max_k_steps`` steps. ``epilogue=None`` adds 0-2 random elementwise
    ops, ``True`` 1-2, ``False`` none. The program has tensors ``A`` (M x K), ``B`` (K x N) in
    the row's operand types and output ``C`` (M x N) in its D type. For inputs and the expected
    output too, draw :func:`tile_cases`.
    """
    _check_limits(max_tiles, max_k_steps)
    places = _dsl_placements(arch, kind, wave_size)
    return _drawn(places, max_tiles, max_k_steps, epilogue).map(lambda t: t[0])


def _inputs(rng: np.random.Generator, t: str, shape: tuple[int, int]) -> np.ndarray:
    lo, hi = (0, 4) if dtype(t).kind == "uint" else (-2, 3)  # exact in every operand type, fp4 included
    return rng.integers(lo, hi, shape).astype(np.float64)


def _reference(row: MatrixInstruction, epi: tuple[tuple[str, int], ...], k_steps: int, A: np.ndarray,
               B: np.ndarray) -> np.ndarray:
    """The intended result: per K step one exact product sum rounded to D, then the epilogue."""
    d = row.types[3]
    acc = np.zeros((A.shape[0], B.shape[1]))
    for s in range(k_steps):
        ks = slice(s * row.k, (s + 1) * row.k)
        acc = quantize(A[:, ks] @ B[ks, :] + acc, d).astype(np.float64)
    for name, const in epi:
        acc = quantize(_apply(name, acc, const), d).astype(np.float64)
    return acc


def tile_cases(arch: str | Target | Iterable[str | Target] | None = None, kind: str | Iterable[str] | None = None,
               *, wave_size: int | None = None, max_tiles: int = 2, max_k_steps: int = 2,
               epilogue: bool | None = None) -> st.SearchStrategy[TileCase]:
    """:func:`tile_programs` draws with inputs and the expected output: a :class:`TileCase`.

    Inputs are small integers (0..3 unsigned, -2..2 otherwise) from a drawn seed, so every
    product and sum is exact and ``simulate(case.program, **case.inputs)["C"]`` must equal
    ``case.expected["C"]`` bit for bit.
    """
    _check_limits(max_tiles, max_k_steps)
    places = _dsl_placements(arch, kind, wave_size)

    @st.composite
    def draw_case(draw: st.DrawFn) -> TileCase:
        prog, place, epi, k_steps = draw(_drawn(places, max_tiles, max_k_steps, epilogue))
        row = place.instruction
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
        A, B = _inputs(rng, row.types[0], (M, K)), _inputs(rng, row.types[1], (K, N))
        return TileCase(prog, row, place.target, epi, {"A": A, "B": B}, {"C": _reference(row, epi, k_steps, A, B)})

    return draw_case()
