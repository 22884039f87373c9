"""Trace state of the DSL: the op recorder of a kernel being specialised, the user's source line
for errors, and uniform scalars (``Scalar``). ``Traced`` is the base of every traced value
(``Scalar`` here, ``Frag`` in :mod:`tilesim.ir.dsl`)."""

from __future__ import annotations

import linecache
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from tilesim.errors import TilesimError, VerifyError
from tilesim.ir.core import Op, Value


class Opaque:
    """A DSL handle that holds no traced values (a tensor, an instruction): loop tracing skips it."""


class Traced:
    """A traced value: ``value`` is its IR value."""

    value: Value


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
            for b in op.blocks():
                self.kill(b.ops, why)

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


# frames in these files are the DSL's own; the first frame outside them is the user's kernel line
_DSL_FILES = frozenset(os.path.join(os.path.dirname(__file__), f"{m}.py") for m in ("trace", "loops", "dsl"))


def _user_line() -> str:
    """``file:line`` of the innermost caller outside tilesim's DSL (the user's kernel line)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename in _DSL_FILES:
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
    while f is not None and f.f_code.co_filename in _DSL_FILES:
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
class Scalar(Traced):
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


def _as_arg(x: Any) -> Any:
    if isinstance(x, Traced):
        return x.value
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return x
    raise VerifyError(f"expected a traced value or a number, got {x!r}")


