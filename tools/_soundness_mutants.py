"""Mutants for tools/soundness.py: one-point changes to a tile program, made on its JSON form (so
every kind of program can be mutated the same way) or on its layouts (tools/mutation.py).

Structural kinds — each models a slip a kernel author makes:

=================  =================================================================================
grid_shrink        one grid axis one workgroup short (output tiles never written: issue 13 case 2)
tile_axis_swap     ``tile_id`` axes 0 and 1 exchanged (tiles land transposed)
loop_trip          a counted loop one step short (a K slice never accumulated)
index_const        a constant of the index arithmetic (a tile stride, an offset) off by one
ew_op_swap         an elementwise op replaced by its sibling (add/sub, max/min, mul/add)
ew_const           an elementwise constant changed
unknown_op         an elementwise op renamed to one outside the vocabulary (``exp2``)
retarget           the program moved to a sibling target without re-specialising (gfx1100 <-> gfx1201,
                   gfx942 <-> gfx950, gfx908 <-> gfx90a)
wave_retarget      a wave32 program moved to gfx942 (wave64) or a wave64 one to gfx1201 (wave32)
barrier_drop       one barrier removed
store_drop         one store removed (an output never written)
=================  =================================================================================

Mutants are built on the program's dataclasses (``dataclasses.replace``), as any API user can.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from tilesim.errors import TilesimError
from tilesim.ir.core import Block, Op, Program

__all__ = ["KINDS", "pick", "structural"]

SIBLING = {"gfx1100": "gfx1201", "gfx1201": "gfx1100", "gfx942": "gfx950", "gfx950": "gfx942", "gfx908": "gfx90a",
           "gfx90a": "gfx908"}
OP_SWAP = {"add": "sub", "sub": "add", "max": "min", "min": "max", "mul": "add", "div": "mul"}


def _rewrite(prog: Program, fn: Callable[[Op], Any]) -> Program | None:
    """``prog`` with the first op for which ``fn`` returns something other than ``...`` replaced by it
    (``None``: dropped); None when no op matched."""
    done = [False]

    def block(b: Block) -> Block:
        ops = []
        for o in b.ops:
            if not done[0]:
                o = o.with_blocks(block)
            r = fn(o) if not done[0] else ...
            if r is ...:
                ops.append(o)
                continue
            done[0] = True
            if r is not None:
                ops.append(r)
        return Block(tuple(ops))

    new = dataclasses.replace(prog, body=block(prog.body))
    return new if done[0] else None


def _set(o: Op, **kw: Any) -> Op:
    return dataclasses.replace(o, attrs=tuple((k, kw.get(k, v)) for k, v in o.attrs))


def _grid_shrink(p: Program) -> Program | None:
    for i, g in enumerate(p.grid):
        if g > 1:
            return dataclasses.replace(p, grid=p.grid[:i] + (g - 1,) + p.grid[i + 1:])
    return None


def _tile_axis_swap(p: Program) -> Program | None:
    if len(p.grid) < 2 or sum(o.kind == "tile_id" for o in p.walk()) < 2:
        return None

    def block(b: Block) -> Block:
        ops = []
        for o in b.ops:
            o = o.with_blocks(block)
            if o.kind == "tile_id" and o.attr("axis") in (0, 1):
                o = _set(o, axis=1 - o.attr("axis"))
            ops.append(o)
        return Block(tuple(ops))

    return dataclasses.replace(p, body=block(p.body))


def _loop_trip(p: Program) -> Program | None:
    def fn(o: Op) -> Any:
        if o.kind == "loop" and all(isinstance(a, int) for a in o.args[:3]) and o.args[1] - o.args[2] > o.args[0]:
            return dataclasses.replace(o, args=(o.args[0], o.args[1] - o.args[2], *o.args[2:]))
        return ...
    return _rewrite(p, fn)


def _index_const(p: Program) -> Program | None:
    def fn(o: Op) -> Any:
        if o.kind == "binop" and len(o.args) == 2 and isinstance(o.args[1], int) and o.args[1] > 1:
            return dataclasses.replace(o, args=(o.args[0], o.args[1] - 1))
        return ...
    return _rewrite(p, fn)


def _ew(p: Program, what: str) -> Program | None:
    def fn(o: Op) -> Any:
        if o.kind != "elementwise":
            return ...
        if what == "swap" and o.attr("op") in OP_SWAP:
            return _set(o, op=OP_SWAP[o.attr("op")])
        if what == "unknown":
            try:
                return _set(o, op="exp2")
            except TilesimError:  # the op table refuses an unknown op when the op is made: no mutant
                return ...
        if what == "const":
            for j, a in enumerate(o.args):
                if isinstance(a, (int, float)) and not isinstance(a, bool):
                    return dataclasses.replace(o, args=o.args[:j] + (a + 1,) + o.args[j + 1:])
        return ...
    return _rewrite(p, fn)


def _drop(p: Program, kind: str) -> Program | None:
    return _rewrite(p, lambda o: None if o.kind == kind else ...)


EDITS: dict[str, Callable[[Program], Program | None]] = {
    "grid_shrink": _grid_shrink, "tile_axis_swap": _tile_axis_swap, "loop_trip": _loop_trip,
    "index_const": _index_const, "ew_op_swap": lambda p: _ew(p, "swap"), "ew_const": lambda p: _ew(p, "const"),
    "unknown_op": lambda p: _ew(p, "unknown"),
    "retarget": lambda p: dataclasses.replace(p, target=SIBLING[p.target]) if p.target in SIBLING else None,
    "wave_retarget": lambda p: dataclasses.replace(p, target="gfx942" if p.wave_size == 32 else "gfx1201"),
    "barrier_drop": lambda p: _drop(p, "barrier"), "store_drop": lambda p: _drop(p, "store"),
}
KINDS = tuple(EDITS)


def edit(prog: Program, kind: str) -> Program | None:
    """The mutant, or None when the kind does not apply."""
    return EDITS[kind](prog)


def structural(prog: Program) -> list[tuple[str, Program]]:
    out = []
    for kind in KINDS:
        m = edit(prog, kind)
        if m is not None:
            out.append((kind, m))
    return out


def pick(prog: Program, rng: np.random.Generator, post: Callable | None = None
         ) -> list[tuple[str, Program, bool | None, str]]:
    """One mutant of a random GEMM: a layout mutant (judged by the register model) half the time, a
    structural one (judged by simulation against the float64 reference) otherwise."""
    from tools import mutation as mut

    if rng.random() < 0.5:
        fams = [f for f in mut.layout_families(prog) if len({r for r, _ in f["feeds"]}) == 1]
        cands = []
        for f in fams:
            for opname, lay in mut._operand_mutations(prog, f):
                cands.append((opname, f, lay))
        if cands:
            opname, f, lay = cands[int(rng.integers(len(cands)))]
            mp = mut.replace_layouts(prog, {m: lay for m in f["members"]})
            m = mut.Mutant("random", prog, 0, opname, f["feeds"][0][0], "direct", mp, {f["root"].id: (f["root"].layout, lay)})
            truth, how = mut._truth(m, post=post)
            if opname in mut.HAZARDS:
                truth, how = None, "simulated vs float64 reference (hazard)"
            return [("layout:" + opname, mp, truth, how)]
    kinds = list(KINDS)
    for _ in range(len(kinds)):
        kind = kinds.pop(int(rng.integers(len(kinds))))
        m = edit(prog, kind)
        if m is not None:
            return [(kind, m, None, "")]
    return []
