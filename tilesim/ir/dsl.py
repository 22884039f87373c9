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
import operator
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilesim.errors import ModifierError, TilesimError, VerifyError, choices
from tilesim.targets import get_target
from tilesim.ir.async_copy import widest_copy
from tilesim.ir.core import Block, KernelOrigin, LdsLayout, Program, TensorParam, Value
from tilesim.ir.ops import ELEMENTWISE, REDUCE, REDUCE_AXES, Elementwise
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import dtype as _dtype
from tilesim.ir.loops import range, when  # noqa: A004 - ts.range is the DSL's loop
from tilesim.ir.trace import _TRACE, Opaque, Scalar, Traced, _as_arg, _tr, _Trace
from tilesim.matrix.instruction import SCALE_FORMAT_MODIFIERS, MatrixInstruction
from tilesim.matrix.scale import SCALE_FORMATS
from tilesim.matrix.sparse import meta_layout, values_layout
from tilesim.matrix.lds_transpose import select_transpose_read, transpose_read

# The DSL's names, listed here only: tilesim.ir exports all of them, tilesim (``ts.load``, ...) all but the
# value types (TYPES); + one function per ELEMENTWISE row (below).
TYPES = ("Kernel", "MmaOp", "Frag", "Scalar")
__all__ = ["Tensor", "kernel", "mma_op", "grid", "waves", "tile_id", "wave_id", "zeros", "load",
           "load_row", "load_col", "store", "mma", "range", "when", "lds_alloc", "lds_store", "lds_load", "lds_load_tr", "barrier", "lds_copy_async",
           "async_commit", "async_wait", "cast", "convert",
           "shuffle", "reduce", "elementwise", *TYPES]


# ---------------------------------------------------------------------------- fragments
class Frag(Traced):
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


@dataclass(frozen=True)
class _TileRef:
    tensor: TensorParam
    row0: Any
    col0: Any


class _TensorProxy(Opaque):
    def __init__(self, param: TensorParam) -> None:
        self.param = param
        self.shape = param.shape
        self.dtype = param.dtype

    def __getitem__(self, idx: Any) -> _TileRef:
        if not isinstance(idx, tuple) or len(idx) != 2 or not all(isinstance(s, slice) for s in idx):
            raise VerifyError(f"index {self.param.name} with two slices, e.g. {self.param.name}[r0:, c0:]")
        name = self.param.name
        for axis, sl in zip(("row", "column"), idx):
            # the layout decides a tile's extent: a stop or a step would be dropped, and a negative
            # start (numpy: from the end) would address elements before the tensor, masked to zeros
            if sl.stop is not None or sl.step not in (None, 1):
                raise VerifyError(f"{name}[{sl.start}:{sl.stop}:{sl.step}] ({axis}s): give only the tile's corner, "
                                  f"e.g. {name}[r0:, c0:]; the layout decides the extent (a stop or step would be "
                                  "ignored, and strided views are not modelled)")
            if isinstance(sl.start, (int, np.integer)) and not isinstance(sl.start, bool) and sl.start < 0:
                raise VerifyError(f"{name}[{sl.start}:] ({axis}s): a negative start is not counted from the end as "
                                  f"in numpy; write the row or column index, e.g. {name}[{name}.shape[0] - 16:, c0:]")
        starts = [0 if s.start is None else s.start for s in idx]
        return _TileRef(self.param, _as_arg(starts[0]), _as_arg(starts[1]))


class _TensorType:
    """``ts.Tensor["f16", "M", "K"]``: a 2-D global tensor parameter; a dim is a size name or a fixed
    positive integer (``ts.Tensor["f32", 1, "N"]``: a row vector, e.g. a bias)."""

    def __init__(self, dt: str, dims: tuple[str | int, ...]) -> None:
        _dtype(dt)  # validates
        if len(dims) != 2:
            raise VerifyError(f"tensors are 2-D for now; got dims {dims}")
        for d in dims:
            if not (isinstance(d, str) or (isinstance(d, int) and not isinstance(d, bool) and d >= 1)):
                raise VerifyError(f"a tensor dim is a size name or a positive integer; got {d!r}")
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
        dims = sorted({d for _, tt in self.tensors for d in tt.dims if isinstance(d, str)})
        missing = [d for d in dims if d not in sizes]
        extra = [k for k in sizes if k not in dims]
        if missing or extra:
            raise VerifyError(f"{self.name}.specialize needs sizes {dims}" + (f"; missing {missing}" if missing else "")
                              + (f"; unknown {extra} (options: {sorted(self.options)})" if extra else ""))
        for d, v in sizes.items():
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise VerifyError(f"size {d}={v!r} must be a positive integer")
        params = [TensorParam(n, tt.dtype, tuple(str(d) for d in tt.dims),
                              tuple(d if isinstance(d, int) else sizes[d] for d in tt.dims)) for n, tt in self.tensors]
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
class MmaOp(Opaque):
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

    @property
    def blocks(self) -> int:
        return self.row.blocks

    @property
    def sparse(self) -> bool:
        return self.row.sparse

    def layout(self, operand: str, **mods: int) -> Layout:
        """The layout a program loads ``operand`` through. Multi-block rows: a ``(blocks*M) x K`` A
        tile (block b in rows b*M…), ``(blocks*K) x N`` B, ``(blocks*M) x N`` C/D. Sparse rows: "A" is
        the compressed values ``M x K/2`` and "index" (or "K") the metadata bytes ``M x K/8``
        (:mod:`tilesim.matrix.sparse`); CBSZ/ABID broadcast changes what the mma reads, not what a
        load holds, so it is not applied here."""
        op = operand.upper() if isinstance(operand, str) else operand
        held = {k: v for k, v in mods.items() if (m := self.row.modifier(k)) is None or m.kind != "broadcast"}
        if self.row.sparse and op == "A":
            return values_layout(self.row, self.wave_size, **held)
        if self.row.sparse and op in ("K", "INDEX"):
            return meta_layout(self.row, self.wave_size, **held)
        return self.row.layout(operand, wave_size=self.wave_size, **held)


def mma_op(mnemonic: str) -> MmaOp:
    t = _tr()
    row = lookup(mnemonic, t.target)
    if t.wave_size not in row.wave_sizes:
        raise VerifyError(f"{row.mnemonic} on {t.target} needs wave{'/'.join(map(str, row.wave_sizes))}; "
                          f"the kernel is specialised for wave{t.wave_size}")
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


def load_row(ref: _TileRef, layout: Layout, dt: str | None = None) -> Frag:
    """A row vector broadcast down a fragment: element (row, col) of ``layout``'s tile is
    ``tensor[row0, col0 + col]`` for every row — a bias along N after a GEMM::

        bias = ts.load_row(Bias[0:, tn * op.n:], op.layout("C"))   # Bias: ts.Tensor["f32", 1, "N"]
        ts.store(C[tm * op.m:, tn * op.n:], acc + bias)

    ``ref`` is where the vector starts. Elements outside the tensor read 0 and are reported; the
    vector's reads are bounds-checked like any load."""
    return _load_vector(ref, layout, dt, "row")


def load_col(ref: _TileRef, layout: Layout, dt: str | None = None) -> Frag:
    """A column vector broadcast across a fragment: element (row, col) is ``tensor[row0 + row, col0]``
    for every column (a per-row bias or scale, e.g. along M)."""
    return _load_vector(ref, layout, dt, "col")


def _load_vector(ref: _TileRef, layout: Layout, dt: str | None, axis: str) -> Frag:
    if not isinstance(ref, _TileRef):
        raise VerifyError(f"ts.load_{axis} takes a tensor slice like Bias[0:, c0:] (where the vector starts)")
    _check_frag_layout(layout)
    d = _dtype(dt or ref.tensor.dtype)
    t = _tr()
    out = t.value("frag", dtype=d.name, layout=layout.with_elem_bits(d.reg_bits))
    t.emit("load", out, (ref.row0, ref.col0), tensor=ref.tensor.name, transpose=False, broadcast=axis)
    return Frag(out)


def store(ref: _TileRef, frag: Frag, *, transpose: bool = False) -> None:
    if not isinstance(ref, _TileRef) or not isinstance(frag, Frag):
        raise VerifyError("ts.store takes a tensor tile like C[r0:, c0:] and a fragment")
    t = _tr()
    t.stored.add(ref.tensor.name)
    t.emit("store", None, (frag.value, ref.row0, ref.col0), tensor=ref.tensor.name, transpose=bool(transpose))


def mma(op: MmaOp, a: Frag, b: Frag, c: Frag, *, index: Frag | None = None, scale_a: Frag | None = None,
        scale_b: Frag | None = None, a_scale_fmt: str = "e8m0", b_scale_fmt: str = "e8m0", **mods: int) -> Frag:
    """``D = A·B + C``. Sparse rows (SMFMAC/SWMMAC) take ``a`` = the compressed values and
    ``index`` = the metadata bytes, both loaded through ``op.layout("A")`` / ``op.layout("index")``.
    ``scale_a``/``scale_b`` (fragments in ``op.layout("SA")``/``op.layout("SB")``) make it the
    block-scaled form (gfx950 ``v_mfma_scale_*``, gfx1250 ``v_wmma_scale*``); ``a_scale_fmt`` /
    ``b_scale_fmt`` name the format the instruction reads their bytes in: "e8m0" (default), or on
    gfx1250 "e5m3" / "e4m3" (``matrix_*_scale_fmt`` 1 / 2, traced as the modifier's code)."""
    if not isinstance(op, MmaOp):
        raise VerifyError("ts.mma's first argument is ts.mma_op(mnemonic)")
    if op.row.sparse != (index is not None):
        raise VerifyError(f"{op.row.mnemonic} is sparse: pass its metadata, ts.mma(op, a, b, c, index=meta)"
                          if op.row.sparse else f"{op.row.mnemonic} is dense: it takes no index= operand")
    if index is not None and not isinstance(index, Frag):
        raise VerifyError(f"index= takes the metadata fragment (ts.load(..., op.layout('index'))), got {index!r}"[:200])
    if (scale_a is None) != (scale_b is None):
        raise VerifyError("ts.mma takes scale_a and scale_b together (the block scales of A and of B)")
    scales = () if scale_a is None else (scale_a, scale_b)
    if not all(isinstance(s, Frag) for s in scales):
        raise VerifyError("scale_a and scale_b are fragments, e.g. ts.load(SA[...], op.layout('SA'))")
    mods = {**mods, **_scale_format_codes(op.row, bool(scales), a_scale_fmt, b_scale_fmt)}
    t = _tr()
    d = op.row.dtypes[3]
    # The result carries the accumulator's *declared* layout (what the program believes D looks
    # like, used by its epilogue); the simulator writes the registers the way the hardware does.
    out = t.value("frag", dtype=d.name, layout=c.layout.with_elem_bits(d.reg_bits))
    args = (a.value, b.value, c.value) + ((index.value,) if index is not None else ()) + tuple(s.value for s in scales)
    kind = "mma_sparse" if index is not None else "mma_scaled" if scales else "mma"
    t.emit(kind, out, args, instr=op.row.mnemonic, family=op.row.family, modifiers=tuple(sorted(mods.items())))
    return Frag(out)


def _scale_format_codes(row: MatrixInstruction, scaled: bool, *names: str) -> dict[str, int]:
    """The scale-format modifiers (codes) for the format names of SA and SB; E8M0 (code 0) adds none,
    so an E8M0 program traces as before. A row without a format field takes "e8m0" only."""
    out = {}
    for operand, name in zip(("SA", "SB"), names):
        field = SCALE_FORMAT_MODIFIERS[operand]
        if not isinstance(name, str) or name not in SCALE_FORMATS:
            raise ModifierError(f"{field}={name!r}: scale formats are {choices(tuple(SCALE_FORMATS))}"[:200])
        if not scaled:
            if name != "e8m0":
                raise ModifierError(f"{field}={name!r} needs block scales: ts.mma(op, a, b, c, scale_a=..., "
                                    f"scale_b=..., {field}=...)")
            continue
        try:
            code = row.scale(operand).code_of(name)
        except ModifierError as e:  # say which instruction refuses it
            raise ModifierError(f"{row.mnemonic} ({row.family}): {e}") from None
        if code:
            out[field] = code
    return out


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


def lds_load_tr(buf: Value, row0: Any, col0: Any, layout: Layout, *, transpose: bool = False,
                instr: str | None = None) -> Frag:
    """``lds_load`` through the target's LDS transpose read (docs/lds-transpose.md): the one for the
    buffer's element size, or ``instr``; ``transpose=True`` reads fragment (row, col) from the
    buffer's (col, row). :class:`InstructionError` on a target without one, naming those with one."""
    _check_frag_layout(layout)
    t = _tr()
    d = _dtype(buf.dtype or "f32")
    row = transpose_read(instr, t.target) if instr is not None else select_transpose_read(t.target, d.reg_bits)
    out = t.value("frag", dtype=d.name, layout=layout.with_elem_bits(d.reg_bits))
    t.emit("lds_load_tr", out, (buf, _as_arg(row0), _as_arg(col0)), instr=row.mnemonic, transpose=bool(transpose))
    return Frag(out)


def barrier() -> None:
    _tr().emit("barrier", None)




def lds_copy_async(buf: Value, row0: Any, col0: Any, ref: _TileRef, layout: Layout, *, bytes: int | None = None) -> None:
    """Copy a tile from global memory into LDS without going through registers: lane ``l`` copies the
    elements ``layout`` gives it, element (row, col) from ``tensor[trow0 + row, tcol0 + col]`` (``ref`` is
    ``T[trow0:, tcol0:]``) to ``buf[row0 + row, col0 + col]``, ``bytes`` (4, 8 or 16; default: the widest
    the layout allows) per instruction. The copy is in flight until this wave's ``ts.async_commit()``
    closes its group and an ``ts.async_wait(n)`` completes that group; other waves see the data after
    a ``ts.barrier()`` that follows the wait. Reading (or writing) the destination earlier is a race:
    ``check`` reports it and the simulator counts it. NVIDIA sm_80+: ``cp.async``; AMD: a synchronous
    copy (global load, LDS store) with the same result (docs/guide.md, "Asynchronous copies")."""
    if not isinstance(ref, _TileRef) or not isinstance(buf, Value) or buf.kind != "lds":
        raise VerifyError("ts.lds_copy_async takes an LDS buffer (ts.lds_alloc), its row and column, a tensor tile "
                          "like A[r0:, c0:] and a copy layout")
    _check_frag_layout(layout)
    d = _dtype(buf.dtype or "f32")
    if ref.tensor.dtype != d.name:
        raise VerifyError(f"ts.lds_copy_async from {ref.tensor.name} ({ref.tensor.dtype}) into a {d.name} buffer: the "
                          "copy moves bytes unchanged; use a buffer of the tensor's type")
    lay = layout.with_elem_bits(d.reg_bits)
    eb = max(1, d.reg_bits // 8)
    if bytes is None:
        bytes = widest_copy(lay, eb)
        if not bytes:
            raise VerifyError("ts.lds_copy_async: the layout gives no lane 4, 8 or 16 bytes of consecutive, aligned "
                              f"elements of a row ({d.name}, {eb} byte(s) each); copies move 4, 8 or 16 bytes")
    _tr().emit("lds_copy_async", None, (buf, _as_arg(row0), _as_arg(col0), ref.row0, ref.col0),
               tensor=ref.tensor.name, layout=lay, bytes=bytes)


def async_commit() -> None:
    """Close this wave's asynchronous copies issued since the last commit into a group (``cp.async.commit_group``)."""
    _tr().emit("async_commit", None)


def async_wait(pending: int = 0) -> None:
    """Wait until at most ``pending`` of this wave's most recent committed groups are still in flight
    (``cp.async.wait_group pending``): the older groups' data is in LDS for this wave; a
    ``ts.barrier()`` after it shows it to the other waves."""
    if not isinstance(pending, int) or isinstance(pending, bool):
        raise VerifyError(f"ts.async_wait takes a number of groups, got {pending!r}"[:200])
    _tr().emit("async_wait", None, pending=pending)
