"""The op table: every op kind of the Tile IR, its attributes, and every named operation an
attribute can take — with its arity, its numpy semantics and its C template.

This is the one place the vocabulary lives. The DSL (``tilesim/ir/dsl.py``) makes its
``ts.exp``/``ts.maximum``/… functions from :data:`ELEMENTWISE`; the IR (``Op``, ``Program``,
``Program.from_json``) validates every attribute against :data:`KINDS` when it is constructed;
the verifier reports which paths a program can take from :func:`emit_refusals`; the simulator
(``tilesim/wave/sim.py``) applies the ``numpy`` functions; the code generator
(``tilesim/codegen/hip.py``) writes only the ``c`` templates and the prelude macros below, into
which it substitutes its own register expressions, never text from the program. The testing
strategies (``tilesim/testing/_programs.py``) draw epilogues from ``test_constants``.

Adding an elementwise op is one :class:`Elementwise` row here (with its C macro if it calls a
math function) plus its expected values in ``tests/test_ops.py``, which pins each row's numpy
semantics to independent values and fails when another file re-declares an op list.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilesim.errors import TilesimError, VerifyError, choices
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import DTYPES
from tilesim.targets import get_target

__all__ = ["Macro", "Elementwise", "Binop", "Reduce", "Attr", "OpKind", "OpError", "ELEMENTWISE", "BINOPS", "REDUCE",
           "REDUCE_AXES", "ASYNC_COPY_BYTES", "ASYNC_WAIT_MAX", "BROADCASTS", "KINDS", "OP_KINDS",
           "MMA_KINDS", "TENSOR_KINDS", "BLOCK_KINDS",
           "prelude_macros", "emit_refusals", "check_attrs", "INT_MAX", "PathStatus", "program_paths"]


class OpError(VerifyError):
    """An op or attribute outside the op table: an unknown kind or op name, a missing or unknown
    attribute, or a value of the wrong type or range. The message names the valid choices."""


INT_MAX = 2**31 - 1  # every integer that reaches generated source is a C `int`


# ---------------------------------------------------------------------------- named operations
@dataclass(frozen=True)
class Macro:
    """A prelude macro: its name with parameters, and its body on AMD (clang builtins, no headers)
    and on NVIDIA (CUDA math functions)."""

    head: str  # e.g. "TS_EXPF(x)"
    amd: str
    cuda: str


@dataclass(frozen=True)
class Elementwise:
    """``op`` of an ``elementwise`` op: ``f(x)`` (arity 1) or ``f(x, y)`` (arity 2), element by element.

    ``c`` is a C expression over the float values ``{a}`` and ``{b}``; ``numpy(a, b)`` is what the
    simulator computes in float64 (int64 for integer elements) before the result becomes the
    fragment's type (``b`` is None for arity 1). ``c_double``: the same over doubles (f64 elements;
    "" = ``c``), with its own ``macro64``; ``c_int``: over ``long long`` integers, wrapping as numpy's
    int64 does, or giving what numpy's float result becomes as a cast does (``{lo}``/``{hi}``: the
    element type's range); "" = computed in double, then cast (``tilesim.matrix.numerics.cast``).
    ``dsl`` names the ``ts.<dsl>(x[, y])`` function made from this row ("" when it is reached only
    through a Python operator on fragments). ``test_constants``: constants the testing strategies
    draw an epilogue with (every result stays a small integer in every accumulator type); empty
    when the op is not drawn."""

    name: str
    arity: int
    numpy: Callable[[Any, Any], Any]
    c: str
    dsl: str = ""
    macro: Macro | None = None
    test_constants: tuple[int, ...] = ()
    doc: str = ""
    c_double: str = ""
    macro64: Macro | None = None
    c_int: str = ""
    # f(|a|, |b|) >= |f(a, b)| when b is a fragment or a constant >= 0 (tilesim/diff/reference.py's
    # per-element bound: the reference on |inputs| bounds each output's magnitude)
    monotone: bool = False
    # the emitted code computes the simulator's bits (IEEE ops, one rounding); False where it calls a
    # library function that is not correctly rounded (expf): an emulated run is then compared within
    # the tolerance, else bit for bit (tilesim/diff/verdict.py)
    exact_in_code: bool = True


@dataclass(frozen=True)
class Binop:
    """``op`` of a ``binop`` (uniform integer arithmetic); ``c`` over C ints ``{a}`` and ``{b}``;
    ``divides``: undefined when ``b`` is 0 (the verifier reports it)."""

    name: str
    numpy: Callable[[Any, Any], Any]
    c: str
    divides: bool = False


@dataclass(frozen=True)
class Reduce:
    """``op`` of a ``reduce``: the numpy reduction and the C expression combining floats ``a`` and ``b``
    (``c_double``/``macro64`` for doubles, "" = ``c``; ``c_int`` for ``long long`` integers)."""

    name: str
    numpy: Callable[..., Any]
    c: str
    macro: Macro | None = None
    c_double: str = ""
    macro64: Macro | None = None
    c_int: str = ""
    monotone: bool = False  # as Elementwise.monotone: |reduce(x)| <= reduce(|x|)


def _rows(*rows: Any) -> Mapping[str, Any]:
    out: dict[str, Any] = {}
    for r in rows:
        if r.name in out:
            raise ValueError(f"op {r.name!r} appears twice in the op table")
        out[r.name] = r
    return out


_EXPF = Macro("TS_EXPF(x)", "__builtin_expf(x)", "expf(x)")
_FMAXF = Macro("TS_FMAXF(a, b)", "__builtin_fmaxf(a, b)", "fmaxf(a, b)")
_FMINF = Macro("TS_FMINF(a, b)", "__builtin_fminf(a, b)", "fminf(a, b)")
# a product rounded on its own, as the simulator rounds every op: never fused with an add into an FMA
# (NVIDIA: the _rn intrinsics are never contracted; AMD: the prelude's `#pragma clang fp contract(off)`)
_FMULF = Macro("TS_FMULF(a, b)", "((a) * (b))", "__fmul_rn(a, b)")
_FMUL64 = Macro("TS_FMUL64(a, b)", "((a) * (b))", "__dmul_rn(a, b)")
_EXP64 = Macro("TS_EXP64(x)", "ts_exp64(x)", "exp(x)")  # AMD: tilesim/codegen/elements.py (no f64 exp builtin)
_FMAX64 = Macro("TS_FMAX64(a, b)", "__builtin_fmax(a, b)", "fmax(a, b)")
_FMIN64 = Macro("TS_FMIN64(a, b)", "__builtin_fmin(a, b)", "fmin(a, b)")
# integer elements: unsigned 64-bit arithmetic wraps as numpy's int64 does (signed overflow is UB in C)
_WRAP = "(long long)((ts_u64){a} {o} (ts_u64){b})"

ELEMENTWISE: Mapping[str, Elementwise] = _rows(
    Elementwise("add", 2, lambda a, b: a + b, "{a} + {b}", test_constants=(-3, -1, 1, 2),
                c_int=_WRAP.replace("{o}", "+"), monotone=True),
    Elementwise("sub", 2, lambda a, b: a - b, "{a} - {b}", test_constants=(1, 3), c_int=_WRAP.replace("{o}", "-")),
    Elementwise("mul", 2, lambda a, b: a * b, "TS_FMULF({a}, {b})", macro=_FMULF, c_double="TS_FMUL64({a}, {b})",
                macro64=_FMUL64, test_constants=(-1, 2, 3), c_int=_WRAP.replace("{o}", "*"), monotone=True),
    # true division: a float even for integers, which then truncates and saturates (numerics.cast) —
    # what ts_idiv computes with integer division ({lo}/{hi}: the element type's range)
    Elementwise("div", 2, lambda a, b: a / b, "{a} / {b}", c_int="ts_idiv({a}, {b}, {lo}, {hi})"),
    Elementwise("neg", 1, lambda a, b: -a, "-{a}", test_constants=(0,), c_int="(long long)(0ull - (ts_u64){a})"),
    Elementwise("exp", 1, lambda a, b: np.exp(a), "TS_EXPF({a})", dsl="exp", macro=_EXPF,
                doc="e**x, element by element.", c_double="TS_EXP64({a})", macro64=_EXP64, exact_in_code=False),
    Elementwise("max", 2, lambda a, b: np.fmax(a, b), "TS_FMAXF({a}, {b})", dsl="maximum", macro=_FMAXF,
                test_constants=(0, -2), doc="The larger of x and y (a fragment or a number), element by element.",
                c_double="TS_FMAX64({a}, {b})", macro64=_FMAX64, c_int="({a} > {b} ? {a} : {b})", monotone=True),
    Elementwise("min", 2, lambda a, b: np.fmin(a, b), "TS_FMINF({a}, {b})", dsl="minimum", macro=_FMINF,
                doc="The smaller of x and y (a fragment or a number), element by element.",
                c_double="TS_FMIN64({a}, {b})", macro64=_FMIN64, c_int="({a} < {b} ? {a} : {b})"),
)

BINOPS: Mapping[str, Binop] = _rows(
    Binop("+", np.add, "({a} + {b})"),
    Binop("-", np.subtract, "({a} - {b})"),
    Binop("*", np.multiply, "({a} * {b})"),
    Binop("//", np.floor_divide, "ts_floordiv({a}, {b})", divides=True),  # Python's floor division, not C's
    Binop("%", np.mod, "ts_mod({a}, {b})", divides=True),
    Binop("min", np.minimum, "({a} < {b} ? {a} : {b})"),
    Binop("max", np.maximum, "({a} > {b} ? {a} : {b})"),
    Binop("<", np.less, "({a} < {b})"),
    Binop(">=", np.greater_equal, "({a} >= {b})"),
    Binop("==", np.equal, "({a} == {b})"),
)

# max/min are IEEE 754-2008 maxNum/minNum (a NaN loses to a number), as C fmaxf/fminf and AMD's
# v_max_f32/v_min_f32 in IEEE mode compute them: np.fmax/np.fmin, not np.maximum (which propagates NaN).
REDUCE: Mapping[str, Reduce] = _rows(
    Reduce("sum", np.sum, "a + b", c_int="(long long)((ts_u64)a + (ts_u64)b)", monotone=True),
    Reduce("max", np.fmax.reduce, "TS_FMAXF(a, b)", _FMAXF, "TS_FMAX64(a, b)", _FMAX64, "(a > b ? a : b)",
           monotone=True),
    Reduce("min", np.fmin.reduce, "TS_FMINF(a, b)", _FMINF, "TS_FMIN64(a, b)", _FMIN64, "(a < b ? a : b)"),
)
REDUCE_AXES = ("row", "col")  # reduce along the tile's rows (axis='row': down each column) or columns

def prelude_macros(vendor: str, used: set[Macro] | frozenset[Macro] | None = None) -> list[str]:
    """``#define`` lines for the macros the op table's templates call — those in ``used`` (all when
    None) — in table order. The generator defines only what a kernel uses, so a new row changes no
    other kernel's source."""
    seen: dict[str, Macro] = {}
    for r in (*ELEMENTWISE.values(), *REDUCE.values()):
        for m in (r.macro, r.macro64):
            if m is not None and (used is None or m in used):
                seen.setdefault(m.head, m)
    return [f"#define {m.head} {m.amd if vendor == 'amd' else m.cuda}" for m in seen.values()]


# ---------------------------------------------------------------------------- attribute checks
# Each returns None for a valid value, else what is wrong (the caller names the op and attribute).
Check = Callable[[Any], "str | None"]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_in(lo: int, hi: int) -> Check:
    def check(v: Any) -> str | None:
        return None if _is_int(v) and lo <= v <= hi else f"an integer in {lo}..{hi}"
    return check


def _one_of(table: Mapping[str, Any] | tuple[str, ...]) -> Check:
    def check(v: Any) -> str | None:
        return None if isinstance(v, str) and v in table else f"one of: {choices(table)}"
    return check


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else "true or false"


_TOKEN = re.compile(r"[A-Za-z0-9_.]{1,96}")


def _token(v: Any) -> str | None:
    # a catalog mnemonic or family (v_wmma_f32_16x16x16_f16, mma.sync.aligned.m16n8k16...); the
    # catalog lookup itself happens in check (an unknown one is a finding there, not a crash)
    return None if isinstance(v, str) and _TOKEN.fullmatch(v) else "a catalog name (letters, digits, '_' and '.')"


def _name(v: Any) -> str | None:
    return None if valid_name(v) else "text without lone surrogates"


def valid_name(v: Any) -> bool:
    """A user-chosen name (kernel, tensor, value, size): any text that encodes as UTF-8. (A lone
    surrogate cannot be printed, hashed to an identifier or written to a file; the code generator
    turns every other name into a safe identifier, tilesim/codegen/idents.py.)"""
    if not isinstance(v, str):
        return False
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _dtype(v: Any) -> str | None:
    return None if isinstance(v, str) and v in DTYPES else f"an element type: {choices(sorted(DTYPES))}"


def _number(v: Any) -> str | None:
    if v is None or (isinstance(v, float)) or (_is_int(v) and abs(v) <= 2**53):
        return None
    return "a number (an integer of magnitude at most 2**53, or a float)"


def _modifiers(v: Any) -> str | None:
    # names and values; which names and values the instruction takes is checked against its
    # catalog row by the program (Program validation) once the target is known
    ok = isinstance(v, tuple) and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str)
                                      and re.fullmatch(r"[a-z_]{1,16}", p[0]) and _is_int(p[1]) and 0 <= p[1] <= 255
                                      for p in v)
    if ok and len({p[0] for p in v}) != len(v):
        return "(name, value) pairs with distinct names"
    return None if ok else "a tuple of (name, value) pairs: a modifier name and an integer in 0..255"


def _lanes(v: Any) -> str | None:
    ok = isinstance(v, tuple) and len(v) in (32, 64) and all(_is_int(s) and 0 <= s < len(v) for s in v)
    return None if ok else "one source lane per lane: 32 or 64 integers, each a lane of the wave"


def _copy_layout(v: Any) -> str | None:
    ok = isinstance(v, Layout) and set(v.in_names) == {"lane", "slot"} and {"row", "col"} <= set(v.out_names) \
        and v.elem_bits is not None
    return None if ok else "a fragment layout (lane, slot) -> (row, col) with its element bits"


# bytes one lane moves per asynchronous copy instruction: the cp-size values of PTX cp.async
# (PTX ISA, "cp.async": .ca takes 4, 8 or 16, .cg only 16; both addresses aligned to cp-size)
ASYNC_COPY_BYTES = (4, 8, 16)
ASYNC_WAIT_MAX = 7  # cp.async.wait_group N: N an immediate; deeper pipelines are not written here


def _copy_bytes(v: Any) -> str | None:
    return None if _is_int(v) and v in ASYNC_COPY_BYTES else f"one of: {choices(ASYNC_COPY_BYTES)}"


@dataclass(frozen=True)
class Attr:
    """An attribute of an op kind. ``check`` validates a plain value; ``structure`` names an
    attribute the IR checks itself (``block``: a nested Block; ``carried``: (init, next) pairs)."""

    name: str
    check: Check | None = None
    required: bool = True
    structure: str = ""


@dataclass(frozen=True)
class OpKind:
    """An op kind: its arguments (``frag``, ``lds``, ``int`` — a scalar value or an int constant —,
    ``any`` — a fragment, a scalar, a number or None), its result kind, and its attributes."""

    name: str
    args: tuple[str, ...]
    result: str | None
    attrs: tuple[Attr, ...] = ()
    # its value on |inputs| bounds its value's magnitude (data movement, index arithmetic, +, the mma without
    # negating modifiers): tilesim/diff/reference.py; elementwise/reduce decide by their op's row
    monotone: bool = False
    # never writes LDS bytes itself (tilesim/wave/lds_fused.py may chain across it); False where unsure
    leaves_lds: bool = False


_TRANSPOSE = Attr("transpose", _bool, required=False)
_MMA_ATTRS = (Attr("instr", _token), Attr("family", _token, required=False), Attr("modifiers", _modifiers, required=False))
# a vector load onto a fragment (a bias): "row" reads one tensor row for every fragment row (element
# (r, c) <- T[row0, col0 + c]); "col" one column for every fragment column ((r, c) <- T[row0 + r, col0])
BROADCASTS = ("row", "col")

KINDS: Mapping[str, OpKind] = _rows(
    OpKind("const", (), "scalar", (Attr("value", _int_in(-INT_MAX - 1, INT_MAX)),), monotone=True, leaves_lds=True),
    OpKind("tile_id", (), "scalar", (Attr("axis", _int_in(0, 2)),), monotone=True, leaves_lds=True),  # grid x, y, z
    OpKind("wave_id", (), "scalar", monotone=True, leaves_lds=True),
    OpKind("binop", ("int", "int"), "scalar", (Attr("op", _one_of(BINOPS)),), monotone=True, leaves_lds=True),
    OpKind("zeros", (), "frag", monotone=True, leaves_lds=True),
    OpKind("load", ("int", "int"), "frag", (Attr("tensor", _name), _TRANSPOSE,
                                           Attr("broadcast", _one_of(BROADCASTS), required=False)),
           monotone=True, leaves_lds=True),
    OpKind("store", ("frag", "int", "int"), None, (Attr("tensor", _name), _TRANSPOSE), monotone=True, leaves_lds=True),
    OpKind("lds_alloc", (), "lds", monotone=True, leaves_lds=True),
    OpKind("lds_store", ("lds", "frag", "int", "int"), None, monotone=True),
    OpKind("lds_load", ("lds", "int", "int"), "frag", monotone=True, leaves_lds=True),
    # one or more LDS transpose reads (tilesim/matrix/lds_transpose.py) fill the fragment
    OpKind("lds_load_tr", ("lds", "int", "int"), "frag", (Attr("instr", _token), _TRANSPOSE), monotone=True,
           leaves_lds=True),
    OpKind("barrier", (), None, monotone=True, leaves_lds=True),
    # global -> LDS without registers (docs/guide.md "Asynchronous copies"): args (buffer, row0, col0, tensor
    # row0, tensor col0); lane l copies the elements `layout` gives it, `bytes` per instruction. The data lands
    # at the async_wait that completes its commit group: reading the destination before then is a race.
    OpKind("lds_copy_async", ("lds", "int", "int", "int", "int"), None,
           (Attr("tensor", _name), Attr("layout", _copy_layout), Attr("bytes", _copy_bytes)), monotone=True),
    OpKind("async_commit", (), None, monotone=True),  # close this wave's uncommitted copies into a group (may be empty)
    # wait until at most `pending` of this wave's newest committed groups are still in flight
    OpKind("async_wait", (), None, (Attr("pending", _int_in(0, ASYNC_WAIT_MAX)),), monotone=True),
    OpKind("mma", ("frag", "frag", "frag"), "frag", _MMA_ATTRS, monotone=True, leaves_lds=True),
    # SMFMAC/SWMMAC: (compressed A values, B, C, metadata bytes); tilesim/matrix/sparse.py
    OpKind("mma_sparse", ("frag", "frag", "frag", "frag"), "frag", _MMA_ATTRS, monotone=True, leaves_lds=True),
    # a block-scaled mma (gfx950 v_mfma_scale_*): a, b, c, then the scale fragments of A and B (SA, SB)
    OpKind("mma_scaled", ("frag", "frag", "frag", "frag", "frag"), "frag", _MMA_ATTRS, leaves_lds=True),
    OpKind("elementwise", ("frag", "any"), "frag", (Attr("op", _one_of(ELEMENTWISE)),), leaves_lds=True),
    OpKind("cast", ("frag",), "frag", (Attr("dtype", _dtype),), monotone=True, leaves_lds=True),
    OpKind("convert", ("frag",), "frag", monotone=True, leaves_lds=True),
    OpKind("shuffle", ("frag",), "frag", (Attr("src_lane", _lanes),), monotone=True, leaves_lds=True),
    OpKind("reduce", ("frag",), "frag", (Attr("op", _one_of(REDUCE)), Attr("axis", _one_of(REDUCE_AXES))),
           leaves_lds=True),
    OpKind("loop", ("int", "int", "int"), "scalar", (Attr("body", structure="block"),
                                                      Attr("carried", structure="carried")), monotone=True),
    OpKind("branch", ("int",), None, (Attr("body", structure="block"),), monotone=True),
)
OP_KINDS: tuple[str, ...] = tuple(KINDS)
# Sets of kinds read off the rows, so that no other module lists them (tests/test_one_source.py scans
# for a literal that restates one): the kinds that run a catalog row (they carry the mma attributes),
# the kinds that name a tensor parameter, and the kinds that hold a nested block (a loop's or branch's body).
MMA_KINDS: frozenset[str] = frozenset(k for k, r in KINDS.items() if r.attrs == _MMA_ATTRS)
TENSOR_KINDS: frozenset[str] = frozenset(k for k, r in KINDS.items() if any(a.name == "tensor" for a in r.attrs))
BLOCK_KINDS: frozenset[str] = frozenset(k for k, r in KINDS.items() if any(a.structure == "block" for a in r.attrs))


def check_attrs(kind: str, attrs: tuple[tuple[str, Any], ...]) -> None:
    """Raise :class:`OpError` unless ``attrs`` are exactly a valid attribute set of ``kind``
    (structural attributes are only checked for presence here)."""
    if kind not in KINDS:
        raise OpError(f"unknown op kind {str(kind)[:60]!r}; op kinds: {choices(KINDS)}")
    spec = {a.name: a for a in KINDS[kind].attrs}
    if not isinstance(attrs, tuple) or not all(isinstance(p, tuple) and len(p) == 2 for p in attrs):
        raise OpError(f"{kind} op: attributes must be (name, value) pairs")
    names = [k for k, _ in attrs]
    for k in names:
        if k not in spec:
            raise OpError(f"{kind} op has no attribute {str(k)[:60]!r}; its attributes: {choices(spec) or 'none'}")
    if len(set(names)) != len(names):
        raise OpError(f"{kind} op: an attribute appears twice")
    given = dict(attrs)
    for a in spec.values():
        if a.name not in given:
            if a.required:
                raise OpError(f"{kind} op needs attribute {a.name!r}")
            continue
        if a.check is not None:
            why = a.check(given[a.name])
            if why is not None:
                raise OpError(f"{kind} {a.name}={_short(given[a.name])}: must be {why}")


def _short(v: Any) -> str:
    text = ascii(v)  # printable whatever the value holds (newlines, surrogates)
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------------------- what is emitted
def emit_refusals(prog: Any) -> list[tuple[str, str]]:
    """(where, why) for each op the code generator refuses; empty when the program is emitted. Every
    element type and op of the table is emitted (tilesim/codegen/element_ops.py); what remains are
    facts of a target or a layout: an instruction without a clang builtin for the wave size, and
    loads/stores of a layout where one register slot holds several elements. The code generator
    raises the first of these itself, so ``check``'s paths and ``emit`` agree."""
    out: list[tuple[str, str]] = []
    t, size = get_target(prog.target), prog.waves_per_workgroup * prog.wave_size
    if size > t.max_workgroup_size:  # written into the kernel's launch bounds: a range-checked integer
        out.append(("program", f"{prog.waves_per_workgroup} waves of {prog.wave_size} lanes = {size} work-items per "
                               f"workgroup; {t.name} launches at most {t.max_workgroup_size}"))
    for i, op in enumerate(prog.walk()):
        why = _emit_refusal(op, prog)
        if why:
            out.append((f"op {i} ({op.kind})", why))
    return out


def _emit_refusal(op: Any, prog: Any) -> str | None:
    k = op.kind
    if k in ("load", "store"):
        t = prog.tensor(op.attr("tensor"))
        if t.shape[0] * t.shape[1] > INT_MAX:  # `gr * cols + gc` is computed in int
            return (f"tensor {ascii(t.name)[:60]} has {t.shape[0] * t.shape[1]} elements; the generated code "
                    f"indexes a tensor with a 32-bit int (at most {INT_MAX} elements)")
    if k in ("load", "store", "lds_store", "lds_load"):
        v = op.out if k in ("load", "lds_load") else op.args[0 if k == "store" else 1]
        if not v.layout.is_function():
            return ("a fragment layout where one register slot holds several elements (a broadcast) cannot be "
                    + ("moved through LDS" if k.startswith("lds") else "loaded or stored"))
    if k in MMA_KINDS:
        return _mma_refusal(op, prog)
    return None


def _mma_refusal(op: Any, prog: Any) -> str | None:
    try:
        row = lookup(op.attr("instr"), prog.target)
    except TilesimError as e:  # check reports it as an error too
        return str(e)
    if get_target(prog.target).vendor == "amd":
        if prog.wave_size in row.wave_sizes and row.builtin_for(prog.wave_size) is None:
            return f"{row.mnemonic} has no clang builtin for wave{prog.wave_size}"
    return None


@dataclass(frozen=True)
class PathStatus:
    """Whether a program can take one path (simulate, emit, compile) on its target, and why not —
    or, when it can, how."""

    ok: bool
    reason: str

    def __str__(self) -> str:
        return ("yes" if self.ok else "no") + (f" ({self.reason})" if self.reason else "")


def program_paths(prog: Any) -> dict[str, PathStatus]:
    """The paths a program can take, known statically from the op table and its dtype rules:

    * ``simulate`` — every op of the table has numpy semantics, so every well-formed program
      simulates (whether the result is what the hardware computes is what check's findings say);
    * ``emit`` — HIP/CUDA source, unless an op or tensor is outside what the generator writes
      (:func:`emit_refusals`: the same rules the generator raises on);
    * ``compile`` — AMD: the offline AMDGPU clang (``tilesim compile``) once emitted; NVIDIA: no
      offline compiler, NVRTC builds the source on an NVIDIA device when ``tilesim run`` runs it.
    """
    refused = emit_refusals(prog)
    if refused:
        where, why = refused[0]
        emit = PathStatus(False, f"{where}: {why}" + (f"; and {len(refused) - 1} more" if len(refused) > 1 else ""))
    else:
        emit = PathStatus(True, "")
    t = get_target(prog.target)
    if not emit.ok:
        compile_ = PathStatus(False, "nothing to compile: the program is not emitted")
    elif t.vendor == "amd":
        compile_ = PathStatus(True, f"offline AMDGPU clang, --offload-arch={t.name}")
    else:
        compile_ = PathStatus(False, f"no offline compiler for {t.name}: NVRTC compiles the emitted source on an "
                                     "NVIDIA device at run time (tilesim run)")
    return {"simulate": PathStatus(True, ""), "emit": emit, "compile": compile_}
