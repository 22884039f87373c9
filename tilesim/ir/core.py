"""Tile IR: values, ops, blocks and programs. Frozen, comparable, printable, serialisable.

A :class:`Program` is one kernel specialised for one target and concrete sizes. Its body is a
:class:`Block` of :class:`Op`; loops and branches hold nested blocks. Every op produces at most
one :class:`Value`:

* ``scalar`` — one int per (workgroup, wave): tile ids, wave id, loop counters, index arithmetic;
* ``frag`` — a register fragment: element type + :class:`~tilesim.layouts.Layout` mapping
  (lane, slot) to tile coordinates (row, col), the same layout values the catalog gives;
* ``lds`` — a shared-memory buffer: element type, (rows, cols) and a shared layout that maps
  (row, col) to a byte offset (padding and XOR swizzles included).

Op kinds and their operands (``args``: value ids or python constants; ``attrs``: the rest):

=============  =====================================  =========================================
kind           args                                   attrs
=============  =====================================  =========================================
const          —                                      value
tile_id        —                                      axis
wave_id        —                                      —
binop          a, b (scalars or ints)                 op (a row of ops.BINOPS)
zeros          —                                      —
load           row0, col0 (scalars)                   tensor, transpose
store          frag, row0, col0                       tensor, transpose
lds_alloc      —                                      — (the value's LdsLayout)
lds_store      lds, frag, row0, col0                  —
lds_load       lds, row0, col0                        —
lds_load_tr    lds, row0, col0                        instr (an LDS transpose read), transpose
barrier        —                                      —
lds_copy_async lds, row0, col0, trow0, tcol0          tensor, layout (which lane copies what), bytes
async_commit   —                                      —
async_wait     —                                      pending (groups left in flight)
mma            a, b, c                                instr, family, modifiers
mma_sparse     a (compressed values), b, c, metadata  instr, family, modifiers
mma_scaled     a, b, c, scale_a, scale_b              instr, family, modifiers (SA/SB: block scales)
elementwise    x, y (frags or scalar constants)       op (a row of ops.ELEMENTWISE)
cast           x                                      dtype
convert        x                                      — (the result's layout)
shuffle        x                                      src_lane (tuple, one per lane)
reduce         x                                      op (ops.REDUCE), axis (row/col)
loop           start, stop, step                      body (Block), carried ((init, next), …)
branch         cond (scalar)                          body (Block)
=============  =====================================  =========================================

The table itself, with each attribute's check, is :data:`tilesim.ir.ops.KINDS`: an ``Op`` is
validated against it when made, and a ``Program`` checks what depends on it (tile_id axes against
its grid, shuffles against its wave, tensors by name), so no malformed op reaches the simulator
or the code generator.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tilesim.errors import LayoutError, VerifyError, choices
from tilesim.files import check_keys, strict_json
from tilesim.ir.ops import BLOCK_KINDS, INT_MAX, KINDS, OP_KINDS, TENSOR_KINDS, OpError, check_attrs, valid_name
from tilesim.layouts.layout import Layout
from tilesim.layouts.render import from_json, to_json
from tilesim.matrix.dtypes import DTYPES
from tilesim.targets import get_target

__all__ = ["Value", "Op", "Block", "TensorParam", "Program", "OP_KINDS", "LdsLayout", "KernelOrigin", "MAX_NESTING"]

# loops and branches inside each other: every pass over a program (check, simulate, emit, port,
# printing, JSON) recurses once or more per level, so the limit is checked once, here, where a
# program is made; 200 levels from JSON made `tilesim port` die in a RecursionError
MAX_NESTING = 64



@dataclass(frozen=True)
class LdsLayout:
    """(row, col) -> byte offset: ``(row * (cols + pad) + (col ^ swz)) * elem_bytes`` where the XOR
    swizzle ``swz = ((row // per_phase) % max_phase) * vec`` permutes vec-element groups per row."""

    rows: int
    cols: int
    elem_bytes: int
    pad: int = 0  # elements of padding after each row
    vec: int = 1
    per_phase: int = 1
    max_phase: int = 1  # 1 = no swizzle

    @property
    def bytes(self) -> int:
        return self.rows * (self.cols + self.pad) * self.elem_bytes

    def offset(self, row: Any, col: Any) -> Any:
        swz = ((row // self.per_phase) % self.max_phase) * self.vec
        return (row * (self.cols + self.pad) + (col ^ swz)) * self.elem_bytes


_VALUE_KINDS = ("scalar", "frag", "lds", "none")
# the attributes that hold a nested block (the op table's; a loop's or branch's "body")
_BLOCK_ATTRS = frozenset(a.name for r in KINDS.values() for a in r.attrs if a.structure == "block")


@dataclass(frozen=True)
class Value:
    id: int
    kind: str  # scalar | frag | lds | none
    dtype: str | None = None
    layout: Layout | None = field(default=None, compare=True)
    lds: LdsLayout | None = None
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.id, int) or isinstance(self.id, bool) or not 0 <= self.id <= INT_MAX:
            raise OpError(f"value id {ascii(self.id)[:40]} must be an integer in 0..{INT_MAX}")
        if self.kind not in _VALUE_KINDS:
            raise OpError(f"value %{self.id}: kind {ascii(self.kind)[:40]}; value kinds: {choices(_VALUE_KINDS)}")
        if not valid_name(self.name):
            raise OpError(f"value %{self.id}: name {ascii(self.name)[:60]}: names are text without lone surrogates")
        if not (self.dtype is None or (isinstance(self.dtype, str) and self.dtype in DTYPES)):
            raise OpError(f"value %{self.id}: dtype {ascii(self.dtype)[:40]}; element types: {choices(sorted(DTYPES))}")
        if self.kind in ("scalar", "none") and (self.dtype, self.layout, self.lds) != (None, None, None):
            raise OpError(f"value %{self.id}: a {self.kind} value has no element type, layout or LDS buffer; got "
                          f"dtype {ascii(self.dtype)[:40]}, {'a' if self.layout is not None else 'no'} layout, "
                          f"{'an' if self.lds is not None else 'no'} LDS buffer")

    def short(self) -> str:
        return f"%{self.id}" + (f"<{self.name}>" if self.name else "")


@dataclass(frozen=True)
class Op:
    kind: str
    out: Value | None
    args: tuple[Any, ...] = ()
    attrs: tuple[tuple[str, Any], ...] = ()

    def attr(self, name: str, default: Any = None) -> Any:
        return dict(self.attrs).get(name, default)

    def blocks(self) -> tuple[Block, ...]:
        """The blocks nested in this op (a loop's or a branch's body): the op table's block attributes."""
        return tuple(v for k, v in self.attrs if k in _BLOCK_ATTRS) if self.kind in BLOCK_KINDS else ()

    def with_blocks(self, f: Callable[[Block], Block]) -> Op:
        """This op with each nested block ``b`` replaced by ``f(b)`` (itself when it nests none)."""
        if self.kind not in BLOCK_KINDS:
            return self
        return Op(self.kind, self.out, self.args, tuple((k, f(v) if k in _BLOCK_ATTRS else v) for k, v in self.attrs))

    def __post_init__(self) -> None:
        # every attribute against the op table (tilesim/ir/ops.py), so no op outside its vocabulary
        # exists to reach the simulator or the code generator
        check_attrs(self.kind, self.attrs)
        if not isinstance(self.args, tuple):
            raise OpError(f"{self.kind} op: arguments must be a tuple")
        if not (self.out is None or isinstance(self.out, Value)):
            raise OpError(f"{self.kind} op: its result must be a Value or None")
        for a in KINDS[self.kind].attrs:
            v = self.attr(a.name)
            if a.structure == "block" and not isinstance(v, Block):
                raise OpError(f"{self.kind} op: attribute {a.name!r} must be a block of ops")
            if a.structure == "carried" and not (isinstance(v, tuple) and all(
                    isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, Value) for x in p)
                    and p[0].kind == p[1].kind for p in v)):
                raise OpError("loop-carried values must be a tuple of (init, next) value pairs of one kind")


@dataclass(frozen=True)
class Block:
    ops: tuple[Op, ...] = ()

    def walk(self) -> list[Op]:
        """Every op, loop and branch bodies flattened in program order."""
        out: list[Op] = []
        for op in self.ops:
            out.append(op)
            for b in op.blocks():
                out += b.walk()
        return out


@dataclass(frozen=True)
class TensorParam:
    name: str
    dtype: str
    dims: tuple[str, ...]  # symbolic names, e.g. ("M", "K")
    shape: tuple[int, ...]  # concrete sizes after specialisation
    output: bool = False


@dataclass(frozen=True, eq=False)
class KernelOrigin:
    """Where a DSL program came from: the kernel, the options and sizes it was specialised with.

    Kept so ``tilesim.port`` can re-specialise the same kernel for another target. It is not
    part of the program's meaning: it takes no part in equality, hashing or JSON.
    """

    kernel: Any  # tilesim.ir.dsl.Kernel (not imported: dsl imports this module)
    options: tuple[tuple[str, Any], ...]
    sizes: tuple[tuple[str, int], ...]
    wave_size: int | None = None  # as asked at specialisation (None: the target's default)


@dataclass(frozen=True)
class Program:
    """A kernel specialised for a target and sizes."""

    name: str
    target: str
    wave_size: int
    waves_per_workgroup: int
    grid: tuple[int, ...]
    tensors: tuple[TensorParam, ...]
    sizes: tuple[tuple[str, int], ...]
    body: Block
    origin: KernelOrigin | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _validate(self)  # from the DSL, from JSON, from port: no program exists that is not well formed

    @property
    def workgroups(self) -> int:
        n = 1
        for g in self.grid:
            n *= g
        return n

    def tensor(self, name: str) -> TensorParam:
        for t in self.tensors:
            if t.name == name:
                return t
        raise VerifyError(f"{self.name} has no tensor {name!r}; tensors: {[t.name for t in self.tensors]}")

    def walk(self) -> list[Op]:
        """Every op, loops and branches flattened in program order."""
        return self.body.walk()

    # ------------------------------------------------------------------ printing
    def __str__(self) -> str:
        head = (f"kernel {self.name} target={self.target} wave{self.wave_size} "
                f"waves/wg={self.waves_per_workgroup} grid={self.grid}")
        lines = [head]
        for t in self.tensors:
            shape = "x".join(f"{d}={s}" for d, s in zip(t.dims, t.shape))
            lines.append(f"  tensor {t.name}: {t.dtype}[{shape}]" + (" (out)" if t.output else ""))
        lines += _print_block(self.body, 1)
        return "\n".join(lines)

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> str:
        return json.dumps({"format": "tilesim.program/1", "name": self.name, "target": self.target,
                           "wave_size": self.wave_size, "waves_per_workgroup": self.waves_per_workgroup,
                           "grid": list(self.grid), "sizes": [list(s) for s in self.sizes],
                           "tensors": [[t.name, t.dtype, list(t.dims), list(t.shape), t.output] for t in self.tensors],
                           "body": _block_json(self.body)})

    @staticmethod
    def from_json(text: str) -> Program:
        """Read :meth:`to_json`'s document strictly: every object has exactly its known keys (an
        unknown or repeated one is refused, never ignored), every field its JSON type (no text
        read as a flag, no string split into dims), then the same validation as any program."""
        try:
            d = strict_json(text, "program JSON", VerifyError)
            if not isinstance(d, dict):
                raise VerifyError(f"not a tilesim program (a JSON {type(d).__name__})")
            if d.get("format") != "tilesim.program/1":
                raise VerifyError(f"not a tilesim program (format {ascii(d.get('format'))[:80]})")
            check_keys(d, "program", _PROGRAM_KEYS, (), VerifyError)
            values: dict[int, Value] = {}
            prog = Program(d["name"], d["target"], d["wave_size"], d["waves_per_workgroup"],
                           tuple(_list(d["grid"], "grid")),
                           tuple(_tensor_from(t) for t in _list(d["tensors"], "tensors")),
                           tuple(tuple(_list(p, "a sizes entry", 2)) for p in _list(d["sizes"], "sizes")),
                           _block_from(d["body"], values))
            return prog
        except VerifyError:
            raise
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, OverflowError, RecursionError) as e:
            raise VerifyError(f"malformed program JSON: {e!r}"[:300].replace("\n", " ")) from None


_PROGRAM_KEYS = ("format", "name", "target", "wave_size", "waves_per_workgroup", "grid", "sizes", "tensors", "body")
_OP_KEYS = ("kind", "out", "args", "attrs")
_VALUE_KEYS = ("id", "kind"), ("dtype", "layout", "lds", "name")


def _list(x: Any, where: str, n: int | None = None) -> list[Any]:
    if not isinstance(x, list) or (n is not None and len(x) != n):
        raise VerifyError(f"{where} must be a JSON list{f' of {n} items' if n else ''}; got {ascii(x)[:80]}")
    return x


def _tensor_from(t: Any) -> TensorParam:
    name, dtype, dims, shape, output = _list(t, "a tensors entry ([name, dtype, dims, shape, output])", 5)
    if not isinstance(output, bool):
        raise VerifyError(f"tensor {ascii(name)[:60]}: output must be true or false; got {ascii(output)[:40]}")
    return TensorParam(name, dtype, tuple(_list(dims, f"tensor {ascii(name)[:60]} dims")),
                       tuple(_list(shape, f"tensor {ascii(name)[:60]} shape")), output)


def _fmt_arg(a: Any) -> str:
    return a.short() if isinstance(a, Value) else repr(a)


def _print_block(b: Block, depth: int) -> list[str]:
    pad = "  " * depth
    lines = []
    for op in b.ops:
        lhs = f"{op.out.short()} = " if op.out is not None and op.out.kind != "none" else ""
        attrs = {k: v for k, v in op.attrs if k not in ("body", "layout", "carried")}
        extra = ""
        if op.out is not None and op.out.kind == "frag":
            extra = f" : {op.out.dtype} frag{dict(op.out.layout.in_dims)}"
        if op.kind == "loop":
            carried = ", ".join(f"{i.short()}<-{n.short()}" for i, n in op.attr("carried"))
            lines.append(f"{pad}{lhs}for {op.out.short()} in range({', '.join(map(_fmt_arg, op.args))})"
                         + (f" carry {carried}" if carried else "") + ":")
            lines += _print_block(op.attr("body"), depth + 1)
            continue
        if op.kind == "branch":
            lines.append(f"{pad}if {_fmt_arg(op.args[0])}:")
            lines += _print_block(op.attr("body"), depth + 1)
            continue
        a = ", ".join(_fmt_arg(x) for x in op.args)
        at = ", ".join(f"{k}={v}" for k, v in attrs.items())
        lines.append(f"{pad}{lhs}{op.kind}({a}{'; ' if a and at else ''}{at}){extra}")
    return lines


def _value_json(v: Value | None) -> Any:
    if v is None:
        return None
    d: dict[str, Any] = {"id": v.id, "kind": v.kind}
    if v.dtype:
        d["dtype"] = v.dtype
    if v.layout is not None:
        d["layout"] = json.loads(to_json(v.layout))
    if v.lds is not None:
        d["lds"] = [v.lds.rows, v.lds.cols, v.lds.elem_bytes, v.lds.pad, v.lds.vec, v.lds.per_phase, v.lds.max_phase]
    if v.name:
        d["name"] = v.name
    return d


def _arg_json(a: Any) -> Any:
    if isinstance(a, Value):
        return {"ref": a.id}
    if isinstance(a, tuple):
        return {"tuple": [_arg_json(x) for x in a]}
    return a


def _block_json(b: Block) -> list[Any]:
    out = []
    for op in b.ops:
        attrs = {}
        for k, v in op.attrs:
            if k == "body":
                attrs[k] = {"block": _block_json(v)}
            elif k == "carried":
                attrs[k] = [[i.id, n.id] for i, n in v]
            elif k == "layout":
                attrs[k] = {"layout": json.loads(to_json(v))}
            else:
                attrs[k] = _arg_json(v)
        out.append({"kind": op.kind, "out": _value_json(op.out), "args": [_arg_json(a) for a in op.args],
                    "attrs": attrs})
    return out


def _value_from(d: Any, values: dict[int, Value]) -> Value | None:
    if d is None:
        return None
    check_keys(d, f"value {ascii(d.get('id') if isinstance(d, dict) else d)[:40]}", *_VALUE_KEYS, VerifyError)
    lay = _layout_from(d["layout"], d["id"]) if "layout" in d else None
    lds = LdsLayout(*_list(d["lds"], f"value {ascii(d['id'])[:40]} lds", 7)) if "lds" in d else None
    v = Value(d["id"], d["kind"], d.get("dtype"), lay, lds, d.get("name", ""))
    values[v.id] = v
    return v


def _layout_from(d: Any, where: Any) -> Layout:
    try:
        return from_json(json.dumps(d))  # every key known, the derived tables equal to the pairs'
    except LayoutError as e:
        raise VerifyError(f"value {ascii(where)[:40]} layout: {e}") from None


def _ref(i: Any, values: dict[int, Value]) -> Value:
    if not isinstance(i, int) or isinstance(i, bool) or i not in values:  # True would find value 1
        raise VerifyError(f"reference to no value: {ascii(i)[:40]}")
    return values[i]


def _arg_from(a: Any, values: dict[int, Value]) -> Any:
    if isinstance(a, dict):  # {"ref": id} or {"tuple": [...]}, nothing else
        if "ref" in a:
            return _ref(check_keys(a, "a value reference", ("ref",), (), VerifyError)["ref"], values)
        items = check_keys(a, "an argument object", ("tuple",), (), VerifyError)["tuple"]
        return tuple(_arg_from(x, values) for x in _list(items, "a tuple"))
    return a


def _block_from(ops: Any, values: dict[int, Value]) -> Block:
    out = []
    for o in _list(ops, "a block"):
        check_keys(o, f"op {ascii(o.get('kind') if isinstance(o, dict) else o)[:40]}", _OP_KEYS, (), VerifyError)
        out_v = _value_from(o["out"], values)
        args = tuple(_arg_from(a, values) for a in _list(o["args"], "args"))
        attrs = []
        for k, v in check_keys(o["attrs"], f"{ascii(o['kind'])[:40]} attrs", (), o["attrs"], VerifyError).items():
            if k == "body":
                attrs.append((k, _block_from(check_keys(v, "a body", ("block",), (), VerifyError)["block"], values)))
            elif k == "carried":
                attrs.append((k, tuple((_ref(i, values), _ref(n, values))
                                       for i, n in (_list(p, "a carried pair", 2) for p in _list(v, "carried")))))
            elif k == "layout":
                attrs.append((k, _layout_from(check_keys(v, "a layout attribute", ("layout",), (), VerifyError)
                                              ["layout"], o["kind"])))
            else:
                attrs.append((k, _arg_from(v, values)))
        out.append(Op(o["kind"], out_v, args, tuple(attrs)))
    return Block(tuple(out))


def _validate(prog: Program) -> None:
    """Structural checks, so check/simulate/emit meet only well-formed IR whatever built it (the DSL,
    JSON, a rewrite): value kinds and types, argument signatures and the attributes that depend on
    the program (tile_id axes against the grid, shuffles against the wave, tensors by name).
    (Which modifiers an instruction takes is the catalog's to say when the program is checked or
    simulated: a port re-specialises with one set and then writes the other.) Attributes on their own were checked when
    each op was made (``Op.__post_init__``, from the op table)."""
    def positive(x: Any) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= INT_MAX

    def known_dtype(name: Any, what: str) -> None:
        if not isinstance(name, str) or name not in DTYPES:
            raise VerifyError(f"{what}: element type {ascii(name)[:40]}; element types: {choices(sorted(DTYPES))}")

    if not valid_name(prog.name) or not isinstance(prog.target, str) or not valid_name(prog.target):
        raise VerifyError(f"program name and target must be text without lone surrogates; got "
                          f"{ascii(prog.name)[:80]}, {ascii(prog.target)[:40]}")
    get_target(prog.target)  # TargetError naming the targets
    if not isinstance(prog.grid, tuple) or not 1 <= len(prog.grid) <= 3:
        raise VerifyError(f"the grid has 1 to 3 dimensions (x, y, z); got {ascii(prog.grid)[:80]}")
    if not positive(prog.wave_size) or not positive(prog.waves_per_workgroup) \
            or not all(positive(g) for g in prog.grid):
        raise VerifyError(f"wave size, waves per workgroup and grid must be positive integers; got "
                          f"{prog.wave_size!r}, {prog.waves_per_workgroup!r}, {prog.grid!r}"[:300])
    if not isinstance(prog.sizes, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 and valid_name(p[0]) and positive(p[1]) for p in prog.sizes):
        raise VerifyError(f"sizes must be (name, positive integer) pairs; got {ascii(prog.sizes)[:120]}")
    names = set()
    for t in prog.tensors:
        if not isinstance(t, TensorParam) or not valid_name(t.name) or not isinstance(t.shape, tuple) \
                or not isinstance(t.dims, tuple) or len(t.shape) != 2 or len(t.dims) != 2 \
                or not all(positive(x) for x in t.shape) or not all(valid_name(d) for d in t.dims):
            raise VerifyError(f"tensor {ascii(getattr(t, 'name', t))[:80]}: 2-D with named dims and positive sizes "
                              f"needed, got shape {ascii(getattr(t, 'shape', None))[:80]}")
        known_dtype(t.dtype, f"tensor {t.name!r}")
        names.add(t.name)
    # sizes name each tensor dim, with its size (a fixed dim is its own decimal text): a label that
    # disagreed (JSON's "K": 2**30 beside K = 32) passed, and the tolerance read K from it
    sizes, used = dict(prog.sizes), set()
    for t in prog.tensors:
        for d, n in zip(t.dims, t.shape):
            if d in sizes:
                used.add(d)
                if sizes[d] != n:
                    raise VerifyError(f"tensor {t.name}: dim {d} has size {n}, but sizes say {d}={sizes[d]}")
            elif d != str(n):
                raise VerifyError(f"tensor {t.name}: dim {ascii(d)[:40]} has no entry in sizes "
                                  f"({', '.join(sorted(sizes)) or 'none'})")
    if len(sizes) != len(prog.sizes) or set(sizes) - used:
        raise VerifyError(f"sizes name each tensor dim once; got {ascii(prog.sizes)[:120]}")
    if not isinstance(prog.body, Block):
        raise VerifyError("the program body is not a block")

    def value_ok(v: Any, kind: str) -> bool:
        if kind == "any":
            return (isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) <= 2**53 if isinstance(v, int)
                    else isinstance(v, float)) or v is None or isinstance(v, Value)
        if kind == "int":
            return (isinstance(v, int) and not isinstance(v, bool) and -INT_MAX - 1 <= v <= INT_MAX) or (
                isinstance(v, Value) and v.kind == "scalar")
        return isinstance(v, Value) and v.kind == kind

    def check_value(v: Value) -> None:
        if v.kind == "frag":
            lay = v.layout
            if not isinstance(v.dtype, str) or not isinstance(lay, Layout) or set(lay.in_names) != {"lane", "slot"} \
                    or not {"row", "col"} <= set(lay.out_names) or lay.elem_bits is None:
                raise VerifyError(f"fragment %{v.id} needs a dtype and a (lane, slot) -> (row, col) layout with "
                                  "elem_bits")
            known_dtype(v.dtype, f"fragment %{v.id}")
            if dict(lay.in_dims)["lane"] != prog.wave_size:
                raise VerifyError(f"fragment %{v.id} has {dict(lay.in_dims)['lane']} lanes; the program runs "
                                  f"wave{prog.wave_size}")
        if v.kind == "lds":
            lds = v.lds
            if not isinstance(v.dtype, str) or not isinstance(lds, LdsLayout) or not all(
                    positive(x) for x in (lds.rows, lds.cols, lds.elem_bytes, lds.vec, lds.per_phase, lds.max_phase)) \
                    or not isinstance(lds.pad, int) or isinstance(lds.pad, bool) or not 0 <= lds.pad <= INT_MAX:
                raise VerifyError(f"LDS buffer %{v.id} needs a dtype and positive integer sizes")
            known_dtype(v.dtype, f"LDS buffer %{v.id}")
            want = max(1, DTYPES[v.dtype].reg_bits // 8)  # what ts.lds_alloc derives: one element per this many bytes
            if lds.elem_bytes != want:
                raise VerifyError(f"LDS buffer %{v.id}: elem_bytes {lds.elem_bytes} does not match its dtype {v.dtype} "
                                  f"({want} byte{'s' if want > 1 else ''} per element)")

    def visit(b: Any, depth: int = 0) -> None:
        if not isinstance(b, Block) or not isinstance(b.ops, tuple):
            raise VerifyError("a loop or branch body is not a block")
        if depth > MAX_NESTING:
            raise VerifyError(f"loops and branches nest at most {MAX_NESTING} deep; this program nests deeper")
        for op in b.ops:
            if not isinstance(op, Op):
                raise VerifyError(f"a block holds {type(op).__name__}, not an op")
            spec = KINDS[op.kind]
            ins, out = spec.args, spec.result
            if len(op.args) != len(ins) or not all(value_ok(a, k) for a, k in zip(op.args, ins)):
                raise VerifyError(f"{op.kind} op takes ({', '.join(ins)}), got {len(op.args)} argument(s) "
                                  f"{[a.short() if isinstance(a, Value) else a for a in op.args]}"[:300])
            if (out is None and op.out is not None and op.out.kind != "none") or (out is not None and (
                    op.out is None or op.out.kind != out)):
                raise VerifyError(f"{op.kind} op must define a {out or 'no'} value")
            for v in (op.out, *[a for a in op.args if isinstance(a, Value)]):
                if v is not None:
                    check_value(v)
            _validate_op(prog, op, names)
            for inner in op.blocks():
                visit(inner, depth + 1)

    visit(prog.body)


def _validate_op(prog: Program, op: Op, names: set[str]) -> None:
    """The attributes whose valid values depend on the program."""
    from tilesim.ir.ops import ELEMENTWISE

    if op.kind in TENSOR_KINDS and op.attr("tensor") not in names:
        raise OpError(f"{op.kind} of unknown tensor {ascii(op.attr('tensor'))[:80]}; tensors: "
                      f"{choices(ascii(n)[:40] for n in sorted(names))}")
    if op.kind == "tile_id" and op.attr("axis") >= len(prog.grid):
        raise OpError(f"tile_id axis {op.attr('axis')} but the grid {prog.grid} has {len(prog.grid)} dimension(s); "
                      f"axes: {choices(range(len(prog.grid)))}")
    if op.kind == "shuffle" and len(op.attr("src_lane")) != prog.wave_size:
        raise OpError(f"shuffle has {len(op.attr('src_lane'))} source lanes; the program runs wave{prog.wave_size} "
                      f"(one source lane in 0..{prog.wave_size - 1} per lane)")
    if op.kind == "lds_copy_async":
        _validate_copy(prog, op)
    if op.kind == "elementwise":
        e = ELEMENTWISE[op.attr("op")]
        y = op.args[1]
        if (e.arity == 1) != (y is None):
            raise OpError(f"elementwise {e.name} takes {e.arity} operand(s); got "
                          f"{'none' if y is None else 'a second one'} for y")


def _validate_copy(prog: Program, op: Op) -> None:
    """An asynchronous copy moves the tensor's bytes into the buffer unchanged, one element per slot of
    its layout: same element type on both sides, a layout of the program's wave with one element per
    slot. (Alignment and bounds depend on the indices: check's memory analysis, tilesim/ir/accesses.py.)"""
    buf, lay = op.args[0], op.attr("layout")
    tp = prog.tensor(op.attr("tensor"))
    if tp.dtype != buf.dtype:
        raise OpError(f"lds_copy_async from tensor {ascii(tp.name)[:40]} ({tp.dtype}) into a {buf.dtype} buffer: "
                      "the copy moves bytes, it does not convert; copy into a buffer of the tensor's type")
    if dict(lay.in_dims)["lane"] != prog.wave_size or lay.elem_bits != DTYPES[tp.dtype].reg_bits:
        raise OpError(f"lds_copy_async layout: {dict(lay.in_dims)['lane']} lanes of {lay.elem_bits}-bit elements; the "
                      f"program runs wave{prog.wave_size} on {tp.dtype} ({DTYPES[tp.dtype].reg_bits} bits)")
    if not lay.is_function():
        raise OpError("lds_copy_async layout: one register slot holds several elements; a copy moves one element per "
                      "slot")
