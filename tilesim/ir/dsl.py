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
an op. ``for k in ts.range(...)`` records a counted loop: the body is traced once with ``k``
symbolic, and a variable rebound in the body (``acc = ts.mma(..., acc)``) becomes a loop-carried
value — found by comparing the kernel's local variables before and after the body, so plain
Python reads as it runs. ``break``/``continue`` and Python ``if`` on traced values are not
traceable; use ``with ts.when(cond):`` for a uniform branch.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tilesim.errors import TilesimError, VerifyError
from tilesim.targets import get_target
from tilesim.ir.core import Block, KernelOrigin, LdsLayout, Op, Program, TensorParam, Value
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import dtype as _dtype
from tilesim.matrix.instruction import MatrixInstruction

__all__ = ["Tensor", "kernel", "Kernel", "mma_op", "MmaOp", "grid", "waves", "tile_id", "wave_id", "zeros", "load",
           "store", "mma", "range", "when", "lds_alloc", "lds_store", "lds_load", "barrier", "cast", "convert",
           "shuffle", "reduce", "exp", "maximum", "Frag", "Scalar"]

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

    def value(self, kind: str, **kw: Any) -> Value:
        self.next_id += 1
        return Value(self.next_id, kind, **kw)

    def emit(self, kind: str, out: Value | None, args: tuple[Any, ...] = (), **attrs: Any) -> None:
        self.stack[-1].append(Op(kind, out, args, tuple(sorted(attrs.items()))))


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
                import tilesim

                env = {**fn.__globals__, "ts": tilesim, "tilesim": tilesim, "Tensor": Tensor}
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
    yarg = None if y is None else _as_arg(y)
    if isinstance(y, Frag) and y.dtype != x.dtype:  # the simulator reads both through x's element type
        raise VerifyError(f"elementwise {op} of a {x.dtype} and a {y.dtype} fragment; ts.cast one first")
    if isinstance(y, Frag) and y.layout != x.layout:
        raise VerifyError(f"elementwise {op} of fragments with different layouts; ts.convert one first")
    out = t.value("frag", dtype=x.dtype, layout=x.layout)
    t.emit("elementwise", out, (x.value, yarg), op=op)
    return Frag(out)


def exp(x: Frag) -> Frag:
    return _elementwise("exp", x, None)


def maximum(x: Frag, y: Any) -> Frag:
    return _elementwise("max", x, y)


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
    src = tuple(int(s) for s in src_lane)
    if len(src) != t.wave_size or not all(0 <= s < t.wave_size for s in src):
        raise VerifyError(f"shuffle needs {t.wave_size} source lanes in 0..{t.wave_size - 1}")
    out = t.value("frag", dtype=x.dtype, layout=x.layout)
    t.emit("shuffle", out, (x.value,), src_lane=src)
    return Frag(out)


def reduce(x: Frag, op: str = "sum", axis: str = "col") -> Frag:
    """Cross-lane reduction along ``axis`` of the tile; every holder of a row (axis='col') gets its result."""
    if op not in ("sum", "max", "min") or axis not in ("row", "col"):
        raise VerifyError(f"reduce op must be sum/max/min and axis row/col; got {op!r}, {axis!r}")
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
        frame = sys._getframe(1)
        if self.state == 0:
            self.state = 1
            self.before = dict(frame.f_locals)
            self.first_id = t.next_id
            self.var = t.value("scalar", name="k")
            t.stack.append([])
            t.open_loops += 1
            return Scalar(self.var)
        if self.state == 1:
            self.state = 2
            after = dict(frame.f_locals)
            carried = []
            for name, v_after in after.items():
                v_before = self.before.get(name)
                if (isinstance(v_after, (Frag, Scalar)) and isinstance(v_before, type(v_after))
                        and v_after.value.id > self.first_id and v_before.value.id <= self.first_id):
                    b, a = v_before.value, v_after.value
                    if b.kind == "frag" and (b.dtype != a.dtype or b.layout.registers_per_lane() != a.layout.registers_per_lane()):
                        raise VerifyError(f"loop-carried {name!r} changes from {b.dtype} ({b.layout.registers_per_lane()} "
                                          f"VGPRs) to {a.dtype} ({a.layout.registers_per_lane()} VGPRs) in the loop body; "
                                          "the next iteration would read the new bits as the old type — cast explicitly")
                    carried.append((b, a))
            body = Block(tuple(t.stack.pop()))
            t.open_loops -= 1
            t.emit("loop", self.var, self.args, body=body, carried=tuple(carried))
        raise StopIteration


def range(start: Any, stop: Any = None, step: Any = 1) -> _Range:  # noqa: A001 - ts.range is the DSL's loop
    if stop is None:
        start, stop = 0, start
    return _Range(start, stop, step)


class when:  # noqa: N801 - reads as a keyword: `with ts.when(cond):`
    """A uniform branch: the block runs on the (workgroup, wave)s where ``cond`` is non-zero."""

    def __init__(self, cond: Scalar) -> None:
        self.cond = _as_arg(cond)

    def __enter__(self) -> None:
        _tr().stack.append([])

    def __exit__(self, *exc: Any) -> None:
        t = _tr()
        body = Block(tuple(t.stack.pop()))
        if exc[0] is None:
            t.emit("branch", None, (self.cond,), body=body)
