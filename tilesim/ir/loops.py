"""Control flow of the DSL: ``ts.range`` (a counted loop traced twice to find the loop-carried
values) and ``ts.when`` (a uniform branch)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

from tilesim.errors import VerifyError
from tilesim.ir.core import Block, Op, Value
from tilesim.layouts.layout import Layout

from tilesim.ir.trace import Opaque, Scalar, Traced, _as_arg, _tr, _Trace, _user_line


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
        if isinstance(x, Traced):
            out[path] = (x.value, x)
        elif d <= 0 or isinstance(x, (str, bytes, int, float, type, Opaque)) or callable(x):
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


def _find(ops: list[Op] | tuple[Op, ...], vid: int) -> Value:
    for op in ops:
        if op.out is not None and op.out.id == vid:
            return op.out
        for b in op.blocks():
            try:
                return _find(b.ops, vid)
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
            made = {id(op.out) for op in body.walk()}
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
