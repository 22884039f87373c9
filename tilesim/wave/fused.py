"""Fused k-loops: a loop whose body only loads the A and B operands of one f32-accumulating mma
(plus scalar index arithmetic) runs all but its last iteration in one compiled kernel.

The kernel (:func:`tilesim.wave.kernels.mma_chain`) gathers each operand element's encoded bits
from the tensor at the tensor offset the register image would hold in the slot the *instruction's*
layout reads (load layout composed with instruction layout, computed once from the two codecs'
records), decodes them through a table built by :func:`tilesim.matrix.dtypes.decode`, and runs the
same float64 operations in the same order as the step-by-step path, rounding the accumulator to
f32 after each step as its register image would. Each distinct operand tile of a step is gathered
once (the waves of a GEMM tile row share their A tile), a chunk of steps at a time. Intermediate
register images are not built: nothing reads them (a traced value makes the loop ineligible). The
last iteration then runs step by step from the accumulator's registers, so every register image, report line and the
provenance of later stores is the step-by-step path's.

The plan is checked statically (op kinds, codecs with one slot per element, replicas that
always read the same tensor element, identical C and D register maps); the data-dependent
cases — any NaN result, an out-of-bounds load, an inactive wave, disagreeing accumulator
replicas — fall back to the step-by-step loop before any state it reports has changed.
``TILESIM_NO_FUSE=1`` turns fusion off (the step-by-step path, for comparison and debugging).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tilesim.ir.core import Op, Program, Value
from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import decode, dtype
from tilesim.wave.codec import Codec, codec
from tilesim.wave.images import TileImage
from tilesim.wave import kernels
from tilesim.wave.kernels import mma_chain

__all__ = ["LoopHost", "run_fused_loop"]


class LoopHost(Protocol):
    """The simulator state a fused loop reads and updates (tilesim/wave/sim.py implements it).

    A public interface, so the fused path and the simulator do not import each other: the state
    (program, tensors, register and scalar images, report) and the memory helpers the
    step-by-step loads use, which a fused loop must use identically.
    """

    p: Program
    exact: bool
    G: int  # waves in the launch
    L: int  # wave size
    active: np.ndarray
    tensors: dict[str, np.ndarray]
    regs: Any  # tilesim.wave.images.Registers: images, or TileImages encoded when read
    scal: dict[int, np.ndarray]
    vals: dict[int, Value]
    trace: dict[int, list[np.ndarray]]
    memo: dict[Any, Any]
    rep: Any  # the run's Report: op counts

    def scalar(self, a: Any) -> np.ndarray: ...
    def codec_of(self, v: Value) -> Codec: ...
    def bits_of(self, name: str, dt: Any) -> np.ndarray: ...
    def offsets(self, name: str, c: Codec, transpose: bool) -> tuple[np.ndarray, tuple[int, int, int, int]]: ...
    def in_bounds(self, name: str, c: Codec, row0: np.ndarray, col0: np.ndarray, transpose: bool) -> bool: ...
    def count_transactions(self, name: str, c: Codec, base: np.ndarray, transpose: bool) -> None: ...
    def op_const(self, op: Op) -> None: ...
    def op_binop(self, op: Op) -> None: ...

_SCALAR_OPS = ("const", "binop")
_SCALAR_CHUNK = 1 << 17  # (iteration, wave) pairs of the scalar arithmetic evaluated at once (memory)


@dataclass(frozen=True)
class _Operand:
    load: Op
    decl: Codec  # the load's (declared) layout
    off: np.ndarray  # int64[rows * cols]: tensor offset of each instruction-tile element, -1: reads 0
    hw_dt: str  # the type the instruction reads the bits as
    tile: tuple[int, int]


@dataclass(frozen=True)
class _Plan:
    mma: Op
    a: _Operand
    b: _Operand
    hw_c: Codec
    hw_d: Codec
    init: Value
    scalar_ops: tuple[Op, ...]


@functools.lru_cache(maxsize=16)
def _lut(dt_name: str, width: int) -> np.ndarray:
    lut = decode(np.arange(1 << width, dtype=np.dtype(f"uint{width}")), dt_name)
    lut.setflags(write=False)
    return lut


def _values(sim: LoopHost, name: str, opnd: _Operand) -> tuple[np.ndarray, np.ndarray]:
    """The tensor's elements as the instruction reads them: the load's encoded bits (flat; the
    tensor itself, viewed, when it is held in the load's type) and the table that decodes them as
    the instruction's type. The kernel decodes only the windows it reads (a float64 copy of the
    tensor would be 4x an f16 tensor's bytes)."""
    return sim.bits_of(name, opnd.decl.dt), _lut(opnd.hw_dt, opnd.decl.width)


def _operand(sim: LoopHost, load: Op, hw: Codec, tensor_dt: str) -> _Operand | None:
    decl = sim.codec_of(load.out)
    if hw.slots is None or decl.slots is None or decl._slot_plan[1] is None:
        return None
    if (decl.width, decl.lanes, decl.nregs) != (hw.width, hw.lanes, hw.nregs) or hw.width not in (8, 16):
        return None
    if dtype(tensor_dt).reg_bits != decl.width:
        return None
    off_decl = sim.offsets(load.attr("tensor"), decl, bool(load.attr("transpose")))[0]
    rec_of_slot = decl._slot_plan[1]
    slot_off = off_decl[rec_of_slot]  # tensor offset held in each slot of the image
    owned = hw.primary >= 0
    off = np.where(owned, slot_off[hw.slots[np.maximum(hw.primary, 0)]], -1).astype(np.int64)
    # replicas (RDNA3 A/B lanes 16-31): eligible only when every copy reads the element its primary reads
    if not np.array_equal(slot_off[hw.slots], off[hw.flat_elem]):
        return None
    return _Operand(load, decl, off, hw.dt.name, (hw.rows, hw.cols))


def _plan(sim: LoopHost, loop: Op) -> _Plan | None:
    body = loop.attr("body").ops
    carried = loop.attr("carried") or ()
    if len(carried) != 1 or carried[0][0].kind != "frag":
        return None
    init, nxt = carried[0]
    mmas = [op for op in body if op.kind == "mma"]
    loads = {op.out.id: op for op in body if op.kind == "load"}
    if len(mmas) != 1 or any(op.kind not in (*_SCALAR_OPS, "load", "mma") for op in body):
        return None
    if any(op.attr("broadcast") for op in loads.values()):  # vector loads take the general path
        return None
    mma = mmas[0]
    a_v, b_v, c_v = mma.args
    if mma.out.id != nxt.id or c_v.id != init.id or a_v.id not in loads or b_v.id not in loads:
        return None
    if set(loads) - {a_v.id, b_v.id}:
        return None
    traced = set(sim.trace)
    if traced & ({op.out.id for op in body if op.out is not None} | {init.id}):
        return None
    row = lookup(mma.attr("instr"), sim.p.target)
    mods = dict(mma.attr("modifiers") or ())
    if mods.get("neg", 0) or mods.get("neg_hi", 0) or row.blocks != 1:  # multi-block: one product per block
        return None
    ta, tb, tc, td = (dtype(t) for t in row.types)
    if ta.kind in ("int", "uint") or tb.kind in ("int", "uint") or tc.name != "f32" or td.name != "f32":
        return None
    lays, regs = row.operand_layouts(sim.L, mods), row.registers_for(sim.L)
    hw = {n: codec(lays[n], row.types["ABCD".index(n)], regs[n]) for n in "ABC"}
    hw_d = codec(lays["D"], row.types[3], regs["D"])
    hw_c = hw["C"]
    if (hw_c.slots is None or hw_c._slot_plan[1] is None or not np.array_equal(hw_c.rec, hw_d.rec)
            or hw_c.nregs != hw_d.nregs or (hw_c.primary < 0).any() or sim.codec_of(init).nregs != hw_c.nregs):
        return None
    a = _operand(sim, loads[a_v.id], hw["A"], sim.p.tensor(loads[a_v.id].attr("tensor")).dtype)
    b = _operand(sim, loads[b_v.id], hw["B"], sim.p.tensor(loads[b_v.id].attr("tensor")).dtype)
    if a is None or b is None:
        return None
    (ma, ka), (kb, nb) = a.tile, b.tile
    if ka != kb or (ma, nb) != (hw_c.rows, hw_c.cols):
        return None
    return _Plan(mma, a, b, hw_c, hw_d, init, tuple(op for op in body if op.kind in _SCALAR_OPS))


def run_fused_loop(sim: LoopHost, loop: Op, iters: list[int]) -> int:
    """Run ``iters[:-1]`` of ``loop`` fused when the loop and the data allow it; returns how many
    iterations ran (0: none, the caller runs them all step by step)."""
    if sim.exact or len(iters) < 3 or not sim.active.all() or os.environ.get("TILESIM_NO_FUSE"):
        return 0
    key = ("fused-plan", id(loop))
    if key not in sim.memo:
        sim.memo[key] = _plan(sim, loop)
    plan = sim.memo[key]
    if plan is None or not kernels.available(sim.G * (len(iters) - 1) * plan.hw_c.rows * plan.hw_c.cols
                                             * plan.a.tile[1]):
        return 0
    fused = iters[:-1]
    T = len(fused)
    bases = {}
    for opnd in (plan.a, plan.b):  # int32 where the offsets fit (peak memory)
        size = sim.tensors[opnd.load.attr("tensor")].size
        bases[opnd.load.out.id] = np.empty((T, sim.G), np.int32 if size < 2**31 // 64 else np.int64)
    # scalar index arithmetic, exactly as the step-by-step loop computes it, for a chunk of iterations
    # at once: the loop counter is an [iterations, G] array, and each const/binop is elementwise, so
    # each (iteration, wave) entry is the value that iteration's own pass computes (the last
    # iteration's step-by-step pass then leaves every body scalar as the step-by-step loop would)
    step = max(1, _SCALAR_CHUNK // sim.G)
    for t0 in range(0, T, step):
        its = np.asarray(fused[t0:t0 + step], np.int64)
        sim.scal[loop.out.id] = np.repeat(its[:, None], sim.G, axis=1)
        for op in plan.scalar_ops:
            getattr(sim, "op_" + op.kind)(op)
        for opnd in (plan.a, plan.b):
            ld = opnd.load
            name, tr = ld.attr("tensor"), bool(ld.attr("transpose"))
            row0, col0 = sim.scalar(ld.args[0]), sim.scalar(ld.args[1])
            if not sim.in_bounds(name, opnd.decl, row0, col0, tr):
                return 0
            bases[ld.out.id][t0:t0 + its.size] = row0 * sim.tensors[name].shape[1] + col0
    init = sim.regs.raw(plan.init.id)
    if isinstance(init, TileImage) and init.tile is not None and init.zero:
        acc = np.zeros((sim.G, plan.hw_c.rows, plan.hw_c.cols), np.float32)  # all-zero registers: +0.0
    else:
        acc = _acc_tile(plan, sim.regs[plan.init.id])
    if acc is None:
        return 0
    operands, luts = [], []
    for opnd in (plan.a, plan.b):
        ld = opnd.load
        bits, lut = _values(sim, ld.attr("tensor"), opnd)
        operands += [bits, bases[ld.out.id], opnd.off]
        luts.append(lut)
    acc = mma_chain(*operands, acc, plan.a.tile[1], inplace=True, lut_a=luts[0], lut_b=luts[1])
    del operands
    if acc is None:
        return 0
    # the state the step-by-step iterations would leave that the last iteration and the report read
    for op in loop.attr("body").ops:
        sim.rep.ops[op.kind] += T
    for opnd in (plan.a, plan.b):
        ld = opnd.load
        sim.count_transactions(ld.attr("tensor"), opnd.decl, bases.pop(ld.out.id), bool(ld.attr("transpose")))
    regs = TileImage(plan.hw_d, acc)  # encoded when something other than the next mma reads it
    sim.regs[plan.init.id] = regs
    sim.regs[plan.mma.out.id] = regs
    sim.vals[plan.mma.out.id] = plan.mma.out
    return T


def _acc_tile(plan: _Plan, c_regs: np.ndarray) -> np.ndarray | None:
    """The accumulator's f32 tile ``[G, rows, cols]`` read from its register image as the mma reads
    C, or None when copies of an element disagree (the step-by-step path reports them)."""
    hw = plan.hw_c
    if hw._tile_plan[2].size:  # replicated C: the general read, which finds disagreeing copies
        tile, bad = hw.tile(c_regs)
        return None if bad.any() else np.ascontiguousarray(tile, np.float32)
    view = hw.slot_view(c_regs)  # f32 slots read as float32: the decoded values, without a float64 copy
    return np.take(view, hw._tile_plan[1], axis=-1).view(np.float32).reshape(-1, hw.rows, hw.cols)
