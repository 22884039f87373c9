"""Layout mutants for ``tools/mutation.py``: program surgery (replace a layout family, drop an op),
the mutation operators on layouts (lane swap, VGPR off by one, slot swap, upper lanes dropped, a k
permutation), where a mutant moved elements, and the independent truth: a float64 register model
that reads operands through the hardware layouts from AMD's calculator data / the ISA tables
(``tests/_golden``), not through tilesim's simulator."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

import numpy as np

from tests import _golden  # hardware layouts from AMD's calculator and the ISA tables
from tilesim.errors import TilesimError
from tilesim.ir.core import Block, Op, Program, Value
from tilesim.layouts import Layout
from tilesim.matrix import lookup


# ----------------------------------------------------------------------------- program surgery
def _map_values(prog: Program, fv) -> Program:
    def arg(a: Any) -> Any:
        if isinstance(a, Value):
            return fv(a)
        if isinstance(a, tuple):
            return tuple(arg(x) for x in a)
        return a

    def block(b: Block) -> Block:
        ops = []
        for o in b.ops:
            attrs = []
            for k, v in o.attrs:
                if k == "body":
                    attrs.append((k, block(v)))
                elif k == "carried":
                    attrs.append((k, tuple((fv(i), fv(n)) for i, n in v)))
                else:
                    attrs.append((k, arg(v)))
            ops.append(Op(o.kind, None if o.out is None else fv(o.out), arg(o.args), tuple(attrs)))
        return Block(tuple(ops))

    return dataclasses.replace(prog, body=block(prog.body))


def replace_layouts(prog: Program, new: dict[int, Layout]) -> Program:
    """``prog`` with the layout of each value id in ``new`` replaced everywhere the value occurs
    (definition, arguments, loop-carried pairs); each keeps its own element width."""
    cache: dict[int, Value] = {}

    def fv(v: Value) -> Value:
        if v.id not in new:
            return v
        if v.id not in cache:
            cache[v.id] = dataclasses.replace(v, layout=new[v.id].with_elem_bits(v.layout.elem_bits))
        return cache[v.id]

    return _map_values(prog, fv)


def drop_op(prog: Program, index: int) -> Program:
    """``prog`` without the ``index``-th op of ``prog.walk()`` (an op with no result, e.g. a barrier)."""
    target = prog.walk()[index]
    if target.out is not None:
        raise TilesimError(f"op {index} ({target.kind}) defines a value; only result-less ops can be dropped")

    def block(b: Block) -> Block:
        ops = []
        for o in b.ops:
            if o is target:
                continue
            o = o.with_blocks(block)
            ops.append(o)
        return Block(tuple(ops))

    return dataclasses.replace(prog, body=block(prog.body))


def layout_families(prog: Program) -> list[dict[str, Any]]:
    """The declared fragment layouts: one entry per ``load``/``zeros``/``lds_load`` value with the
    ids of every value that inherits its layout, and the mma operand(s) it feeds."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    def union(a: int, b: int) -> None:
        parent[find(a)] = find(b)

    ops = prog.walk()
    for op in ops:
        if op.out is None or op.out.kind != "frag":
            continue
        if op.kind == "mma":
            union(op.out.id, op.args[2].id)
        elif op.kind in ("elementwise", "cast", "shuffle", "reduce"):
            union(op.out.id, op.args[0].id)
    for op in ops:
        if op.kind == "loop":
            for i, n in op.attr("carried"):
                if i.kind == "frag":
                    union(i.id, n.id)
    frags = {op.out.id: op.out for op in ops if op.out is not None and op.out.kind == "frag"}
    fams = []
    for op in ops:
        if op.kind not in ("load", "zeros", "lds_load"):
            continue
        root = op.out
        members = sorted(v for v in frags if find(v) == find(root.id))
        feeds = []
        for m in ops:
            if m.kind == "mma":
                for name, a in zip("ABC", m.args):
                    if a.id in members:
                        feeds.append((name, m.attr("instr")))
        fams.append({"root": root, "op": op.kind, "tensor": op.attr("tensor"), "members": members,
                     "feeds": sorted(set(feeds))})
    return fams


# ----------------------------------------------------------------------------- layout mutations
def _rebuild(lay: Layout, hw: np.ndarray, lg: np.ndarray) -> Layout:
    return Layout.from_pairs(lay.in_dims, lay.out_dims, hw, lg, elem_bits=lay.elem_bits)


def _lane_swap(lay: Layout, a: int, b: int) -> Layout:
    hw, lg = lay.pairs()
    hw = hw.copy()
    d = lay.in_names.index("lane")
    sa, sb = hw[:, d] == a, hw[:, d] == b
    hw[sa, d], hw[sb, d] = b, a
    return _rebuild(lay, hw, lg)


def _vgpr_off_by_one(lay: Layout, lane: int) -> Layout:
    hw, lg = lay.pairs()
    hw = hw.copy()
    spv = max(1, 32 // lay.elem_bits)
    nslots = dict(lay.in_dims)["slot"]
    ln, sl = lay.in_names.index("lane"), lay.in_names.index("slot")
    sel = hw[:, ln] == lane
    hw[sel, sl] = (hw[sel, sl] + spv) % nslots
    return _rebuild(lay, hw, lg)


def _slot_swap(lay: Layout, lane: int) -> Layout:
    hw, lg = lay.pairs()
    hw = hw.copy()
    ln, sl = lay.in_names.index("lane"), lay.in_names.index("slot")
    sel = (hw[:, ln] == lane) & (hw[:, sl] < 2)
    hw[sel, sl] ^= 1
    return _rebuild(lay, hw, lg)


def _drop_upper_lanes(lay: Layout) -> Layout:
    hw, lg = lay.pairs()
    keep = hw[:, lay.in_names.index("lane")] < 16
    return _rebuild(lay, hw[keep], lg[keep])


def _k_perm(lay: Layout, k_dim: str, perm: np.ndarray) -> Layout:
    hw, lg = lay.pairs()
    lg = lg.copy()
    d = lay.out_names.index(k_dim)
    lg[:, d] = perm[lg[:, d]]
    return _rebuild(lay, hw, lg)


def _k_swap(k: int) -> np.ndarray:
    perm = np.arange(k)
    perm[[1, k - 2]] = perm[[k - 2, 1]]
    return perm


def _positions(lay: Layout) -> dict[tuple[int, int], set[tuple[int, ...]]]:
    """(lane, VGPR) -> the (block, row, col, bit_lo) it holds."""
    out: dict[tuple[int, int], set] = defaultdict(set)
    for r in lay.location_array():
        out[(int(r[4]), int(r[3]))].add((int(r[0]), int(r[1]), int(r[2]), int(r[5])))
    return out


def mutated_positions(orig: Layout, mut: Layout) -> set[tuple[int, int]]:
    """The (lane, VGPR)s whose contents differ between two layouts of one fragment."""
    a, b = _positions(orig), _positions(mut)
    return {p for p in set(a) | set(b) if a.get(p, set()) != b.get(p, set())}


def _moved_lanes(orig: Layout, mut: Layout) -> set[int]:
    """Lanes holding, in either layout, an element whose owners differ between the two."""
    def owners(lay):
        o: dict[tuple, set] = defaultdict(set)
        for r in lay.location_array():
            o[(int(r[0]), int(r[1]), int(r[2]))].add((int(r[4]), int(r[3]), int(r[5])))
        return o

    a, b = owners(orig), owners(mut)
    moved = [e for e in set(a) | set(b) if a.get(e, set()) != b.get(e, set())]
    return {lane for e in moved for (lane, _, _) in a.get(e, set()) | b.get(e, set())}


def _mma_row(prog: Program, instr: str):
    return lookup(instr, prog.target)


# ----------------------------------------------------------------------------- the independent truth
def _hw_records(prog: Program, instr: str, role: str) -> tuple[np.ndarray, str]:
    """The hardware layout of ``role`` from an independent source, else the catalog (said so)."""
    row = _mma_row(prog, instr)
    gold = _golden.records(row.spellings, prog.target, role, prog.wave_size)
    if gold is not None:
        return gold[0], "golden"
    return row.layout(role, wave_size=prog.wave_size).location_array(), "catalog"


def _pos_map(rec: np.ndarray) -> dict[tuple[int, int, int], tuple[int, int]]:
    """(lane, VGPR, bit_lo) -> the (row, col) a layout puts there (blocks: single-block rows only)."""
    return {(int(r[4]), int(r[3]), int(r[5])): (int(r[1]), int(r[2])) for r in rec}


def _read(hw: np.ndarray, declared: dict, x: np.ndarray, copy: str) -> np.ndarray:
    """What the hardware reads as each logical element: at its position in the hardware layout (the
    lowest or highest lane among replicas) it finds the element the program wrote there through its
    declared layout (0 where the program wrote nothing)."""
    out = np.zeros_like(x)
    order = hw[np.lexsort((hw[:, 4] if copy == "first" else -hw[:, 4], hw[:, 2], hw[:, 1]))]
    seen: set[tuple[int, int]] = set()
    for r in order:
        e = (int(r[1]), int(r[2]))
        if e in seen:
            continue
        seen.add(e)
        src = declared.get((int(r[4]), int(r[3]), int(r[5])))
        out[e] = x[src] if src is not None else 0
    return out


def model_truth(prog: Program, instr: str, declared: dict[str, Layout], c_loaded: bool, seed: int = 0,
                post: Any = None) -> tuple[bool, str]:
    """Is a GEMM tile whose A/B/C fragments are declared with ``declared`` wrong on the hardware?

    A float64 numpy model, independent of tilesim's simulator: the program writes A, B (and C when it
    is loaded) into registers through its declared layouts; the instruction reads them through the
    hardware layouts (AMD calculator / ISA tables where available); D = A·B + C in float64; the
    program stores D through its declared C layout from registers the hardware filled through the D
    layout. A bug is an output that differs from the float64 reference A·B + C, for either choice of
    replica the hardware may read. Integer-valued inputs keep every sum exact, so a K permutation
    shared by A and B is (rightly) no bug. ``post`` (an elementwise epilogue) is applied to both
    sides before comparing. Returns (bug, truth source)."""
    row = _mma_row(prog, instr)
    M, N, K = row.m, row.n, row.k
    hw = {x: _hw_records(prog, instr, x) for x in "ABCD"}
    src = "golden" if all(v[1] == "golden" for v in hw.values()) else "catalog"
    dec = {x: _pos_map(declared[x].location_array()) for x in "ABC"}
    d_at = _pos_map(hw["D"][0])
    store = declared["C"].location_array()
    store = store[np.lexsort((store[:, 4], store[:, 2], store[:, 1]))]
    rng = np.random.default_rng(seed)
    for _ in range(2):
        A, B = rng.integers(-3, 4, (M, K)).astype(np.float64), rng.integers(-3, 4, (K, N)).astype(np.float64)
        C = rng.integers(-3, 4, (M, N)).astype(np.float64) if c_loaded else np.zeros((M, N))
        ref = A @ B + C
        for copy in ("first", "last"):
            D = _read(hw["A"][0], dec["A"], A, copy) @ _read(hw["B"][0], dec["B"], B, copy) + \
                (_read(hw["C"][0], dec["C"], C, copy) if c_loaded else 0.0)
            out = np.full((M, N), np.nan)
            for r in store:
                e = (int(r[1]), int(r[2]))
                if np.isnan(out[e]):
                    at = d_at.get((int(r[4]), int(r[3]), int(r[5])))
                    out[e] = D[at] if at is not None else 0.0
            if not np.array_equal(out if post is None else post(out), ref if post is None else post(ref)):
                return True, f"register model ({src} hardware layouts)"
    return False, f"register model ({src} hardware layouts)"
