"""The Python DSL: decorator-traced kernels that become Tile IR.

::

    @ts.kernel
    def gemm(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"],
             *, mma="v_wmma_f32_16x16x16_f16"):
        op = ts.mma_op(mma)
        ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        acc = ts.zeros(op.layout("C"), "f32")
        for k in ts.range(0, A.shape[1], op.k):
            a = ts.load(A[tm * op.m:, k:], op.layout("A"))
            b = ts.load(B[k:, tn * op.n:], op.layout("B"))
            acc = ts.mma(op, a, b, acc)
        ts.store(C[tm * op.m:, tn * op.n:], acc)

    prog = gemm.specialize(target="gfx1201", M=256, N=256, K=256)

The function runs once, at ``specialize`` time, with concrete sizes; every ``ts.*`` call records
an op. ``for k in ts.range(...)`` records a counted loop: the body is traced twice with ``k``
symbolic, and wherever the second trace reads a value the first one made, that value is
loop-carried — ``acc = ts.mma(..., acc)``, ``accs[j] = ts.mma(..., accs[j])`` in a list, a dict, an
object attribute or a global alike, so plain Python reads as it runs. The second trace becomes
the loop body. A body whose two traces differ otherwise (Python state that changes the ops from
one trip to the next, such as a Python counter used as an offset) is refused with the line that
differs; so is a value of the first trace kept past the loop (``outs.append(x)``), and a value
defined inside ``with ts.when(cond):`` read after it (a uniform branch carries no values out).
``break``/``continue`` and Python ``if`` on traced values are not traceable; use
``with ts.when(cond):`` for a uniform branch.
"""

from __future__ import annotations

import functools
import inspect
import linecache
import operator
import re
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tilesim.errors import TilesimError, VerifyError
from tilesim.targets import get_target
from tilesim.ir.core import Block, KernelOrigin, LdsLayout, Op, Program, TensorParam, Value
from tilesim.ir.ops import ELEMENTWISE, REDUCE, REDUCE_AXES, Elementwise
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import dtype as _dtype
from tilesim.matrix.instruction import MatrixInstruction

__all__ = ["Tensor", "kernel", "Kernel", "mma_op", "MmaOp", "grid", "waves", "tile_id", "wave_id", "zeros", "load",
           "store", "mma", "range", "when", "lds_alloc", "lds_store", "lds_load", "barrier", "cast", "convert",
           "shuffle", "reduce", "elementwise", "Frag", "Scalar"]  # + one function per ELEMENTWISE row (below)

_range = range  # the builtin, before ts.range shadows it here


# ---------------------------------------------------------------------------- trace state
@dataclass
class _Trace:
    target: str
    wave_size: int
    next_id: int = 0
    stack: list[list[Op]] = field(default_factory=lambda: [[]])
    grid: tuple[int, ...] = (1,)
    waves: int = 1
    stored: set[str] = field(default_factory=set)
    open_loops: int = 0
    # values no later op may read (by object identity: ids are reused after a loop), with why: the first
    # trace of a loop body, a branch's values
    dead: dict[int, tuple[Value, str]] = field(default_factory=dict)
    # second-trace values of a loop body (the ones Python code holds) -> the body's value, renumbered
    alias: dict[int, tuple[Value, Value]] = field(default_factory=dict)
    where: dict[int, tuple[Op, str]] = field(default_factory=dict)  # id(op) -> (op, "file:line" of the user's call)
    defined_at: dict[int, str] = field(default_factory=dict)  # id(value object) -> "file:line"

    def value(self, kind: str, **kw: Any) -> Value:
        self.next_id += 1
        if kind == "frag" and "name" not in kw:  # `acc = ts.mma(...)` -> %9<acc>, so --inspect acc works
            kw["name"] = _assigned_name()
        return Value(self.next_id, kind, **kw)

    def emit(self, kind: str, out: Value | None, args: tuple[Any, ...] = (), **attrs: Any) -> None:
        loc = _user_line()

        def fix(a: Any) -> Any:
            if isinstance(a, tuple):
                return tuple(fix(x) for x in a)
            if not isinstance(a, Value):
                return a
            a = self.resolve(a)
            gone = self.dead.get(id(a))
            if gone is not None and gone[0] is a:
                raise VerifyError(f"{loc}: {kind} reads {a.short()} (made at {self.defined_at.get(id(a), '?')}), "
                                  f"{gone[1]}")
            return a

        args = fix(args)
        if "carried" in attrs:
            attrs["carried"] = fix(attrs["carried"])
        op = Op(kind, out, args, tuple(sorted(attrs.items())))
        self.where[id(op)] = (op, loc)
        if out is not None:
            self.defined_at.setdefault(id(out), loc)
        self.stack[-1].append(op)

    def kill(self, ops: Any, why: str) -> None:
        """No later op may read the values these ops (and their nested blocks) define."""
        for op in ops:
            if op.out is not None:
                self.dead[id(op.out)] = (op.out, why)
            if op.kind in ("loop", "branch"):
                self.kill(op.attr("body").ops, why)

    def resolve(self, a: Value) -> Value:
        """The value a loop body holds for ``a`` (a second-trace value Python code still names)."""
        got = self.alias.get(id(a))
        while got is not None and got[0] is a:  # an inner loop's value, renumbered again by an outer loop
            a = got[1]
            got = self.alias.get(id(a))
        return a

    def line_of(self, op: Op) -> str:
        got = self.where.get(id(op))
        return got[1] if got is not None and got[0] is op else "?"


def _user_line() -> str:
    """``file:line`` of the innermost caller outside tilesim's DSL (the user's kernel line)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "?"


_ASSIGN = re.compile(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")


def _assigned_name() -> str:
    """The variable the user's current source line assigns (``acc = ts.mma(...)`` -> ``acc``), else "".

    Read from the source line (linecache) rather than by tracing the kernel's frames: no
    ``sys.settrace`` to fight with debuggers and coverage. Only a plain ``name = ...`` line names
    a value (tuple targets, augmented assignments and expressions leave it unnamed); every fragment
    the line creates gets the name, and lookups by name take the last one — the line's result.
    """
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    if f is None:
        return ""
    m = _ASSIGN.match(linecache.getline(f.f_code.co_filename, f.f_lineno))
    return m.group(1) if m else ""


_TRACE: list[_Trace] = []


def _tr() -> _Trace:
    if not _TRACE:
        raise TilesimError("tilesim DSL calls are only valid inside a @ts.kernel function being specialised")
    return _TRACE[-1]


# ---------------------------------------------------------------------------- proxies
class Scalar:
    """A uniform integer (per workgroup and wave) in a traced kernel."""

    def __init__(self, value: Value) -> None:
        self.value = value

    def _bin(self, other: Any, op: str, swap: bool = False) -> Scalar:
        a, b = (_as_arg(other), self.value) if swap else (self.value, _as_arg(other))
        t = _tr()
        out = t.value("scalar")
        t.emit("binop", out, (a, b), op=op)
        return Scalar(out)

    def __add__(self, o: Any) -> Scalar: return self._bin(o, "+")
    def __radd__(self, o: Any) -> Scalar: return self._bin(o, "+", True)
    def __sub__(self, o: Any) -> Scalar: return self._bin(o, "-")
    def __rsub__(self, o: Any) -> Scalar: return self._bin(o, "-", True)
    def __mul__(self, o: Any) -> Scalar: return self._bin(o, "*")
    def __rmul__(self, o: Any) -> Scalar: return self._bin(o, "*", True)
    def __floordiv__(self, o: Any) -> Scalar: return self._bin(o, "//")
    def __mod__(self, o: Any) -> Scalar: return self._bin(o, "%")
    def __lt__(self, o: Any) -> Scalar: return self._bin(o, "<")
    def __ge__(self, o: Any) -> Scalar: return self._bin(o, ">=")
    def __eq__(self, o: Any) -> Scalar: return self._bin(o, "==")  # type: ignore[override]
    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        raise VerifyError("a traced scalar has no Python truth value; use `with ts.when(cond):` for a uniform branch")

    def __index__(self) -> int:
        raise VerifyError("a traced scalar cannot be used as a Python int here (sizes are concrete: use A.shape)")


class Frag:
    """A register fragment: element type + hardware layout."""

    def __init__(self, value: Value) -> None:
        self.value = value

    @property
    def layout(self) -> Layout:
        assert self.value.layout is not None
        return self.value.layout

    @property
    def dtype(self) -> str:
        return self.value.dtype or ""

    def _ew(self, other: Any, op: str) -> Frag:
        return _elementwise(op, self, other)

    def __add__(self, o: Any) -> Frag: return self._ew(o, "add")
    def __radd__(self, o: Any) -> Frag: return self._ew(o, "add")
    def __sub__(self, o: Any) -> Frag: return self._ew(o, "sub")
    def __mul__(self, o: Any) -> Frag: return self._ew(o, "mul")
    def __rmul__(self, o: Any) -> Frag: return self._ew(o, "mul")
    def __truediv__(self, o: Any) -> Frag: return self._ew(o, "div")
    def __neg__(self) -> Frag: return self._ew(None, "neg")

    def to(self, dt: str) -> Frag:
        return cast(self, dt)


def _as_arg(x: Any) -> Any:
    if isinstance(x, (Scalar, Frag)):
        return x.value
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return x
    raise VerifyError(f"expected a traced value or a number, got {x!r}")


@dataclass(frozen=True)
class _TileRef:
    tensor: TensorParam
    row0: Any
    col0: Any


class _TensorProxy:
    def __init__(self, param: TensorParam) -> None:
        self.param = param
        self.shape = param.shape
        self.dtype = param.dtype

    def __getitem__(self, idx: Any) -> _TileRef:
        if not isinstance(idx, tuple) or len(idx) != 2 or not all(isinstance(s, slice) for s in idx):
            raise VerifyError(f"index {self.param.name} with two slices, e.g. {self.param.name}[r0:, c0:]")
        starts = [0 if s.start is None else s.start for s in idx]
        return _TileRef(self.param, _as_arg(starts[0]), _as_arg(starts[1]))


class _TensorType:
    """``ts.Tensor["f16", "M", "K"]``: a 2-D global tensor parameter."""

    def __init__(self, dt: str, dims: tuple[str, ...]) -> None:
        _dtype(dt)  # validates
        if len(dims) != 2:
            raise VerifyError(f"tensors are 2-D for now; got dims {dims}")
        self.dtype, self.dims = dt, dims


class Tensor:
    def __class_getitem__(cls, item: Any) -> _TensorType:
        item = item if isinstance(item, tuple) else (item,)
        return _TensorType(item[0], tuple(item[1:]))


# What a string annotation may name as ``ts.``/``tilesim.`` when the kernel's module did not bind the
# package under that name (the IR layer does not import the top-level package).
_ANNOTATION_NAMES = types.SimpleNamespace(Tensor=Tensor)


# ---------------------------------------------------------------------------- kernel
class Kernel:
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = fn.__name__
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]
        sig = inspect.signature(fn)
        self.tensors: list[tuple[str, _TensorType]] = []
        self.options: dict[str, Any] = {}
        for p in sig.parameters.values():
            ann = p.annotation
            if isinstance(ann, str):  # `from __future__ import annotations`: annotations are strings
                env = {**fn.__globals__, "Tensor": Tensor}
                for alias in ("ts", "tilesim"):  # the package as the user imported it, else its Tensor alone
                    if getattr(env.get(alias), "Tensor", None) is not Tensor:
                        env[alias] = _ANNOTATION_NAMES
                try:
                    ann = eval(ann, env)  # noqa: S307 - the user's own annotation
                except Exception as e:
                    raise VerifyError(f"{self.name}: cannot evaluate the annotation of {p.name!r} ({ann}): {e}") from None
            if isinstance(ann, _TensorType):
                self.tensors.append((p.name, ann))
            elif p.kind == p.KEYWORD_ONLY:
                self.options[p.name] = p.default
            else:
                raise VerifyError(f"{self.name}: parameter {p.name!r} must be a ts.Tensor[...] or keyword-only option")

    def specialize(self, *, target: str, wave_size: int | None = None, **sizes: Any) -> Program:
        t = get_target(target)
        wave = wave_size or t.default_wave
        if wave not in t.wave_sizes:
            raise VerifyError(f"{t.name} has no wave{wave}; wave sizes: {list(t.wave_sizes)}")
        opts = {k: sizes.pop(k) for k in list(sizes) if k in self.options}
        dims = sorted({d for _, tt in self.tensors for d in tt.dims})
        missing = [d for d in dims if d not in sizes]
        extra = [k for k in sizes if k not in dims]
        if missing or extra:
            raise VerifyError(f"{self.name}.specialize needs sizes {dims}" + (f"; missing {missing}" if missing else "")
                              + (f"; unknown {extra} (options: {sorted(self.options)})" if extra else ""))
        for d, v in sizes.items():
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise VerifyError(f"size {d}={v!r} must be a positive integer")
        params = [TensorParam(n, tt.dtype, tt.dims, tuple(sizes[d] for d in tt.dims)) for n, tt in self.tensors]
        trace = _Trace(t.name, wave)
        _TRACE.append(trace)
        try:
            self.fn(*[_TensorProxy(p) for p in params], **{**self.options, **opts})
        finally:
            _TRACE.pop()
        if trace.open_loops or len(trace.stack) != 1:
            raise VerifyError(f"{self.name}: a ts.range loop was left early (break/return inside it is not traceable)")
        params = [TensorParam(p.name, p.dtype, p.dims, p.shape, p.name in trace.stored) for p in params]
        origin = KernelOrigin(self, tuple(sorted({**self.options, **opts}.items())), tuple(sorted(sizes.items())),
                              wave_size)
        return Program(self.name, t.name, wave, trace.waves, trace.grid, tuple(params),
                       tuple(sorted(sizes.items())), Block(tuple(trace.stack[0])), origin)

    def __call__(self, *a: Any, **k: Any) -> Any:
        raise TilesimError(f"{self.name} is a tilesim kernel: call {self.name}.specialize(target=..., sizes...) "
                           "and run the program with ts.simulate")


def kernel(fn: Callable[..., Any]) -> Kernel:
    return Kernel(fn)


# ---------------------------------------------------------------------------- ops
@dataclass(frozen=True)
class MmaOp:
    row: MatrixInstruction
    wave_size: int

    @property
    def m(self) -> int:
        return self.row.m

    @property
    def n(self) -> int:
        return self.row.n

    @property
    def k(self) -> int:
        return self.row.k

    def layout(self, operand: str, **mods: int) -> Layout:
        lay = self.row.layout(operand, wave_size=self.wave_size, **mods)
        if dict(lay.out_dims).get("block", 1) != 1:
            raise VerifyError(f"{self.row.mnemonic} has {self.row.blocks} blocks; tile programs use single-block "
                              "instructions for now")
        return lay


def mma_op(mnemonic: str) -> MmaOp:
    t = _tr()
    row = lookup(mnemonic, t.target)
    if t.wave_size not in row.wave_sizes:
        raise VerifyError(f"{row.mnemonic} on {t.target} needs wave{'/'.join(map(str, row.wave_sizes))}; "
                          f"the kernel is specialised for wave{t.wave_size}")
    if row.sparse:
        raise VerifyError(f"{row.mnemonic} is sparse; sparse mma in tile programs is not supported yet")
    return MmaOp(row, t.wave_size)


def grid(*dims: int) -> None:
    if not dims or not all(isinstance(d, int) and d >= 1 for d in dims):
        raise VerifyError(f"ts.grid takes positive integers, got {dims}")
    _tr().grid = tuple(dims)


def waves(n: int) -> None:
    if not isinstance(n, int) or n < 1:
        raise VerifyError(f"ts.waves takes a positive integer, got {n!r}")
    _tr().waves = n


def tile_id(axis: int) -> Scalar:
    t = _tr()
    if not isinstance(axis, int) or isinstance(axis, bool) or axis < 0:
        raise VerifyError(f"tile_id takes a grid axis 0, 1 or 2; got {axis!r}"[:200])
    if axis >= len(t.grid):
        raise VerifyError(f"tile_id({axis}) but the grid has {len(t.grid)} dims; call ts.grid(...) first")
    out = t.value("scalar", name=f"tile{axis}")
    t.emit("tile_id", out, (), axis=axis)
    return Scalar(out)


def wave_id() -> Scalar:
    t = _tr()
    out = t.value("scalar", name="wave")
    t.emit("wave_id", out)
    return Scalar(out)


def _check_frag_layout(layout: Layout) -> None:
    if not isinstance(layout, Layout):
        raise VerifyError(f"expected a Layout (e.g. op.layout('A')), got {layout!r}")
    if {"lane", "slot"} != set(layout.in_names) or not {"row", "col"} <= set(layout.out_names):
        raise VerifyError(f"fragment layouts map (lane, slot) -> (row, col); got {list(layout.in_names)} -> "
                          f"{list(layout.out_names)}")


def zeros(layout: Layout, dt: str) -> Frag:
    _check_frag_layout(layout)
    d = _dtype(dt)
    t = _tr()
    out = t.value("frag", dtype=d.name, layout=layout.with_elem_bits(d.reg_bits))
    t.emit("zeros", out)
    return Frag(out)


def load(ref: _TileRef, layout: Layout, dt: str | None = None, *, transpose: bool = False) -> Frag:
    """Load a tile through ``layout``; element (row, col) comes from ``tensor[row0 + row, col0 + col]``,
    or ``tensor[row0 + col, col0 + row]`` with ``transpose=True`` (B stored N x K for A·Bᵀ).
    Elements outside the tensor read 0 (masked) and are reported."""
    if not isinstance(ref, _TileRef):
        raise VerifyError("ts.load takes a tensor tile like A[r0:, c0:]")
    _check_frag_layout(layout)
    d = _dtype(dt or ref.tensor.dtype)
    t = _tr()
    out = t.value("frag", dtype=d.name, layout=layout.with_elem_bits(d.reg_bits))
    t.emit("load", out, (ref.row0, ref.col0), tensor=ref.tensor.name, transpose=bool(transpose))
    return Frag(out)


def store(ref: _TileRef, frag: Frag, *, transpose: bool = False) -> None:
    if not isinstance(ref, _TileRef) or not isinstance(frag, Frag):
        raise VerifyError("ts.store takes a tensor tile like C[r0:, c0:] and a fragment")
    t = _tr()
    t.stored.add(ref.tensor.name)
    t.emit("store", None, (frag.value, ref.row0, ref.col0), tensor=ref.tensor.name, transpose=bool(transpose))


def mma(op: MmaOp, a: Frag, b: Frag, c: Frag, **mods: int) -> Frag:
    if not isinstance(op, MmaOp):
        raise VerifyError("ts.mma's first argument is ts.mma_op(mnemonic)")
    t = _tr()
    d = op.row.dtypes[3]
    # The result carries the accumulator's *declared* layout (what the program believes D looks
    # like, used by its epilogue); the simulator writes the registers the way the hardware does.
    out = t.value("frag", dtype=d.name, layout=c.layout.with_elem_bits(d.reg_bits))
    t.emit("mma", out, (a.value, b.value, c.value), instr=op.row.mnemonic, family=op.row.family,
           modifiers=tuple(sorted(mods.items())))
    return Frag(out)


def _elementwise(op: str, x: Frag, y: Any) -> Frag:
    t = _tr()
    if not isinstance(x, Frag):
        raise VerifyError(f"elementwise {op} takes a fragment first, got {x!r}"[:200])
    yarg = None if y is None else _as_arg(y)
    if isinstance(y, Frag) and y.dtype != x.dtype:  # the simulator reads both through x's element type
        raise VerifyError(f"elementwise {op} of a {x.dtype} and a {y.dtype} fragment; ts.cast one first")
    if isinstance(y, Frag) and y.layout != x.layout:
        raise VerifyError(f"elementwise {op} of fragments with different layouts; ts.convert one first")
    out = t.value("frag", dtype=x.dtype, layout=x.layout)
    t.emit("elementwise", out, (x.value, yarg), op=op)
    return Frag(out)


def elementwise(op: str, x: Frag, y: Any = None) -> Frag:
    """``op`` (a name from the op table, tilesim/ir/ops.py ``ELEMENTWISE``) of ``x`` and, for a
    binary op, ``y`` (a fragment of the same type and layout, a scalar or a number)."""
    if not isinstance(op, str) or op not in ELEMENTWISE:
        raise VerifyError(f"elementwise op {op!r}; ops: {', '.join(ELEMENTWISE)}"[:300])
    if (ELEMENTWISE[op].arity == 1) != (y is None):
        raise VerifyError(f"elementwise {op} takes {ELEMENTWISE[op].arity} operand(s)")
    return _elementwise(op, x, y)


def _function(e: Elementwise) -> Callable[..., Frag]:
    """``ts.<e.dsl>``, made from the op table row."""
    if e.arity == 1:
        def f(x: Frag) -> Frag:
            return _elementwise(e.name, x, None)
    else:
        def f(x: Frag, y: Any) -> Frag:  # type: ignore[misc]
            return _elementwise(e.name, x, y)
    f.__name__ = f.__qualname__ = e.dsl
    f.__doc__ = e.doc or f"elementwise {e.name!r} (tilesim/ir/ops.py)."
    return f


#: ts.exp, ts.maximum, ...: one function per op table row with a DSL name
FUNCTIONS: dict[str, Callable[..., Frag]] = {e.dsl: _function(e) for e in ELEMENTWISE.values() if e.dsl}
globals().update(FUNCTIONS)
__all__ += sorted(FUNCTIONS)


def cast(x: Frag, dt: str) -> Frag:
    d = _dtype(dt)
    t = _tr()
    out = t.value("frag", dtype=d.name, layout=x.layout.with_elem_bits(d.reg_bits))
    t.emit("cast", out, (x.value,), dtype=d.name)
    return Frag(out)


def convert(x: Frag, layout: Layout) -> Frag:
    _check_frag_layout(layout)
    t = _tr()
    out = t.value("frag", dtype=x.dtype, layout=layout.with_elem_bits(_dtype(x.dtype).reg_bits))
    t.emit("convert", out, (x.value,))
    return Frag(out)


def shuffle(x: Frag, src_lane: Any) -> Frag:
    """Lane permute: lane ``l`` receives lane ``src_lane[l]``'s registers (``__shfl``/DPP/ds_swizzle)."""
    t = _tr()
    try:
        src = tuple(operator.index(s) for s in src_lane)  # ints (numpy ints too); 1.5 or "3" is refused
    except TypeError:
        src = ()
    if len(src) != t.wave_size or not all(0 <= s < t.wave_size for s in src):
        raise VerifyError(f"shuffle needs {t.wave_size} source lanes, integers in 0..{t.wave_size - 1}")
    out = t.value("frag", dtype=x.dtype, layout=x.layout)
    t.emit("shuffle", out, (x.value,), src_lane=src)
    return Frag(out)


def reduce(x: Frag, op: str = "sum", axis: str = "col") -> Frag:
    """Cross-lane reduction along ``axis`` of the tile; every holder of a row (axis='col') gets its result."""
    if not isinstance(op, str) or op not in REDUCE or not isinstance(axis, str) or axis not in REDUCE_AXES:
        raise VerifyError(f"reduce op must be one of {'/'.join(REDUCE)} and axis one of {'/'.join(REDUCE_AXES)}; "
                          f"got {op!r}, {axis!r}"[:300])
    t = _tr()
    out = t.value("frag", dtype=x.dtype, layout=x.layout)
    t.emit("reduce", out, (x.value,), op=op, axis=axis)
    return Frag(out)


def lds_alloc(dt: str, rows: int, cols: int, *, pad: int = 0, vec: int = 1, per_phase: int = 1,
              max_phase: int = 1) -> Value:
    d = _dtype(dt)
    t = _tr()
    lay = LdsLayout(rows, cols, max(1, d.reg_bits // 8), pad, vec, per_phase, max_phase)
    out = t.value("lds", dtype=d.name, lds=lay)
    t.emit("lds_alloc", out)
    return out


def lds_store(buf: Value, row0: Any, col0: Any, frag: Frag) -> None:
    _tr().emit("lds_store", None, (buf, frag.value, _as_arg(row0), _as_arg(col0)))


def lds_load(buf: Value, row0: Any, col0: Any, layout: Layout) -> Frag:
    _check_frag_layout(layout)
    t = _tr()
    d = _dtype(buf.dtype or "f32")
    out = t.value("frag", dtype=d.name, layout=layout.with_elem_bits(d.reg_bits))
    t.emit("lds_load", out, (buf, _as_arg(row0), _as_arg(col0)))
    return Frag(out)


def barrier() -> None:
    _tr().emit("barrier", None)


class _Range:
    def __init__(self, start: Any, stop: Any, step: Any) -> None:
        self.args = (_as_arg(start), _as_arg(stop), _as_arg(step))
        self.state = 0

    def __iter__(self) -> Iterator[Scalar]:
        return self  # type: ignore[return-value]

    def __next__(self) -> Scalar:
        t = _tr()
        if self.state == 0:  # first trace of the body
            self.state = 1
            self.line = _user_line()
            self.var = t.value("scalar", name="k")
            t.stack.append([])
            t.open_loops += 1
            return Scalar(self.var)
        if self.state == 1:  # second trace: reads of first-trace values are the loop-carried state
            self.state = 2
            self.first = t.stack.pop()
            self.mid = t.next_id
            t.stack.append([])
            return Scalar(self.var)
        if self.state == 2:
            self.state = 3
            second = t.stack.pop()
            t.open_loops -= 1
            body, carried = _carry(t, self, self.first, second, t.next_id)
            t.kill(self.first, f"a value of the first trace of the ts.range loop at {self.line}, kept past it in "
                               "Python state (e.g. appended to a list each trip); keep per-trip values in a fixed set "
                               "of variables, list slots or dict keys")
            # the body keeps the first trace's value ids (so ids, printed IR and emitted names read as if the
            # body were traced once); the second trace's values, which Python code holds, alias to them
            body, carried = _renumber(t, body, carried, self.mid, t.next_id, self.mid - self.var.id)
            t.next_id = self.mid
            t.emit("loop", self.var, self.args, body=Block(tuple(body)), carried=tuple(carried))
        raise StopIteration


def _carry(t: _Trace, rng: _Range, first: list[Op], second: list[Op], end: int) -> tuple[list[Op], list[tuple[Value, Value]]]:
    """The loop body (the second trace, reads of first-trace values replaced by the loop-carried
    value they update) and the carried (init, next) pairs; refuses traces that differ otherwise."""
    lo, mid = rng.var.id + 1, rng.mid
    delta = mid - rng.var.id
    if end - mid != mid - rng.var.id:
        raise VerifyError(f"{rng.line}: the two traces of this ts.range body make different numbers of values "
                          f"({mid - rng.var.id} then {end - mid}): Python state changes the ops from one trip to the "
                          "next, which a loop cannot represent")
    init_of: dict[int, Value] = {}  # first-trace value id -> the pre-loop value it updates
    carried: list[tuple[Value, Value]] = []

    def differ(op2: Op, what: str) -> VerifyError:
        return VerifyError(f"{t.line_of(op2)}: the second trip of the ts.range loop at {rng.line} {what}; Python state "
                           "that changes from one trip to the next (a counter, a flag, a list that grows) cannot be "
                           "traced into a loop: compute it from the loop variable, or keep it in traced values")

    def arg(a1: Any, a2: Any, op2: Op) -> Any:
        if isinstance(a2, Value) and lo <= a2.id <= mid:  # reads what the first trip made: loop-carried
            if not isinstance(a1, Value) or a1.id >= lo:
                raise differ(op2, f"reads {a2.short()} where the first read "
                                  f"{a1.short() if isinstance(a1, Value) else repr(a1)} (a Python value, not a traced "
                                  "one, before the loop)")
            if init_of.setdefault(a2.id, a1) is not a1 and init_of[a2.id].id != a1.id:
                raise differ(op2, f"reads {a2.short()} in place of two different values")
            if a1.kind != a2.kind or (a1.kind == "frag" and (a1.dtype != a2.dtype or a1.layout.registers_per_lane()
                                                             != a2.layout.registers_per_lane())):
                raise VerifyError(f"{t.line_of(op2)}: loop-carried value changes from {a1.dtype or a1.kind} to "
                                  f"{a2.dtype or a2.kind} in the ts.range body at {rng.line}; the next trip would read "
                                  "the new bits as the old type — cast explicitly")
            return a1
        if isinstance(a2, Value) and isinstance(a1, Value):
            if a2.id == a1.id or (a2.id > mid and a2.id - delta == a1.id):
                return a2
            raise differ(op2, f"reads {a2.short()} where the first read {a1.short()}")
        if isinstance(a1, Value) or isinstance(a2, Value) or type(a1) is not type(a2) or a1 != a2:
            if isinstance(a1, tuple) and isinstance(a2, tuple) and len(a1) == len(a2):
                return tuple(arg(x, y, op2) for x, y in zip(a1, a2))
            raise differ(op2, f"has {a2!r} where the first trip had {a1!r}"[:300])
        return a2

    def block(ops1: list[Op] | tuple[Op, ...], ops2: list[Op] | tuple[Op, ...]) -> list[Op]:
        if len(ops1) != len(ops2):
            at = ops2[min(len(ops1), len(ops2))] if len(ops2) > len(ops1) else ops2[-1] if ops2 else None
            raise VerifyError(f"{t.line_of(at) if at is not None else rng.line}: the two traces of the ts.range body at "
                              f"{rng.line} have {len(ops1)} and {len(ops2)} ops: Python state changes the ops from one "
                              "trip to the next, which a loop cannot represent")
        out = []
        for o1, o2 in zip(ops1, ops2):
            if o1.kind != o2.kind or (o1.out is None) != (o2.out is None) or (
                    o2.out is not None and (o2.out.id - delta != o1.out.id or o1.out.kind != o2.out.kind
                                            or o1.out.dtype != o2.out.dtype or o1.out.layout != o2.out.layout)):
                raise differ(o2, f"makes {o2.kind} where the first made {o1.kind}, or a value of another type")
            args = tuple(arg(a1, a2, o2) for a1, a2 in zip(o1.args, o2.args))
            if len(o1.args) != len(o2.args) or [k for k, _ in o1.attrs] != [k for k, _ in o2.attrs]:
                raise differ(o2, f"calls {o2.kind} with other arguments")
            attrs = []
            for (k, v1), (_, v2) in zip(o1.attrs, o2.attrs):
                if k == "body":
                    v = Block(tuple(block(v1.ops, v2.ops)))
                elif k == "carried":
                    v = tuple((arg(i1, i2, o2), arg(n1, n2, o2)) for (i1, n1), (i2, n2) in zip(v1, v2))
                else:
                    v = arg(v1, v2, o2)
                attrs.append((k, v))
            op = Op(o2.kind, o2.out, args, tuple(attrs))
            t.where[id(op)] = (op, t.line_of(o2))
            out.append(op)
        return out

    body = block(first, second)
    for vid, init in init_of.items():
        nxt = _find(second, vid + delta)
        carried.append((init, nxt))
    return body, carried


def _renumber(t: _Trace, body: list[Op], carried: list[tuple[Value, Value]], mid: int, end: int, delta: int
              ) -> tuple[list[Op], list[tuple[Value, Value]]]:
    memo: dict[int, Value] = {}

    def val(v: Any) -> Any:
        if isinstance(v, tuple):
            return tuple(val(x) for x in v)
        if isinstance(v, Block):
            return Block(tuple(ops(v.ops)))
        if not isinstance(v, Value) or not mid < v.id <= end:
            return v
        if id(v) not in memo:
            memo[id(v)] = new = Value(v.id - delta, v.kind, v.dtype, v.layout, v.lds, v.name)
            t.alias[id(v)] = (v, new)
            t.defined_at[id(new)] = t.defined_at.get(id(v), "?")
        return memo[id(v)]

    def ops(block: Any) -> list[Op]:
        out = []
        for o in block:
            op = Op(o.kind, val(o.out), val(o.args), tuple((k, val(x)) for k, x in o.attrs))
            t.where[id(op)] = (op, t.line_of(o))
            out.append(op)
        return out

    return ops(body), [(i, val(n)) for i, n in carried]


def _leaves(env: dict[str, Any], depth: int = 3) -> dict[str, tuple[Value, Any]]:
    """Traced values reachable from local variables through lists, tuples, dicts and object
    attributes (a few levels deep), by access path (``accs[1]``, ``st.acc``)."""
    out: dict[str, tuple[Value, Any]] = {}

    def visit(x: Any, path: str, d: int) -> None:
        if isinstance(x, (Frag, Scalar)):
            out[path] = (x.value, x)
        elif d <= 0 or isinstance(x, (str, bytes, int, float, type, _TensorProxy, MmaOp)) or callable(x):
            return
        elif isinstance(x, (list, tuple)):
            for i, y in enumerate(x[:256]):
                visit(y, f"{path}[{i}]", d - 1)
        elif isinstance(x, dict):
            for k, y in list(x.items())[:256]:
                visit(y, f"{path}[{k!r}]", d - 1)
        elif hasattr(x, "__dict__") and not isinstance(x, Layout):
            for k, y in list(vars(x).items())[:256]:
                visit(y, f"{path}.{k}", d - 1)

    for name, x in list(env.items()):
        visit(x, name, depth)
    return out


def _walk_ops(ops: Any) -> list[Op]:
    out = []
    for op in ops:
        out.append(op)
        if op.kind in ("loop", "branch"):
            out += _walk_ops(op.attr("body").ops)
    return out


def _find(ops: list[Op] | tuple[Op, ...], vid: int) -> Value:
    for op in ops:
        if op.out is not None and op.out.id == vid:
            return op.out
        if op.kind in ("loop", "branch"):
            try:
                return _find(op.attr("body").ops, vid)
            except LookupError:
                pass
    raise LookupError(vid)


def range(start: Any, stop: Any = None, step: Any = 1) -> _Range:  # noqa: A001 - ts.range is the DSL's loop
    if stop is None:
        start, stop = 0, start
    return _Range(start, stop, step)


class when:  # noqa: N801 - reads as a keyword: `with ts.when(cond):`
    """A uniform branch: the block runs on the (workgroup, wave)s where ``cond`` is non-zero."""

    def __init__(self, cond: Scalar) -> None:
        self.cond = _as_arg(cond)

    def __enter__(self) -> None:
        t = _tr()
        t.stack.append([])
        self.line = _user_line()
        self.frame = sys._getframe(1)
        self.before = _leaves(self.frame.f_locals)

    def __exit__(self, *exc: Any) -> None:
        t = _tr()
        body = Block(tuple(t.stack.pop()))
        if exc[0] is None:
            # Python code in the branch runs on every wave: rebinding a name, list slot, dict key or
            # attribute to a value made before the branch would make it unconditional. Refuse.
            made = {id(op.out) for op in _walk_ops(body.ops)}
            for path, (v, _) in _leaves(self.frame.f_locals).items():
                old = self.before.get(path)
                if old is not None and old[0] is not v and id(t.resolve(v)) not in made:
                    raise VerifyError(f"{self.line}: inside this `with ts.when(...)`, {path} is rebound to "
                                      f"{v.short()}, a value made before the branch; Python runs the rebinding on "
                                      "every wave, so it would not be conditional (compute the value inside the "
                                      "branch and store it there)")
            t.emit("branch", None, (self.cond,), body=body)
            # its values exist only where the branch ran: reading one after it would read garbage elsewhere
            t.kill(body.ops, f"defined inside the `with ts.when(...)` at {self.line} and read after it; a uniform "
                             "branch carries no values out (compute the value before the branch, or store it inside "
                             "the branch)")
