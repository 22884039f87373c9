"""What ``simulate`` accepts: input arrays by tensor name, and the fragment ids to trace.

Checked at the entry, before any state is built, so a malformed call is one ``InputError`` naming
the bad value and the valid choices — never a numpy ``ValueError`` from deep inside the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import ml_dtypes
import numpy as np

from tilesim.errors import InputError, choices
from tilesim.ir.core import Program, Value
from tilesim.matrix.dtypes import dtype
from tilesim.matrix.numerics import quantize

__all__ = ["check_inputs"]


def _frag_ids(prog: Program) -> list[int]:
    ids = set()
    for op in prog.walk():
        for v in (op.out, *op.args):
            if isinstance(v, Value) and v.kind == "frag":
                ids.add(v.id)
    return sorted(ids)


def _check_floats(name: str, d: Any, arr: np.ndarray) -> None:
    """A finite value a float tensor's type overflows on (1e6 in an f16: inf; 1e4 in an fp8: NaN) is
    refused, as an integer out of range is: the kernel would read another value than the given one. A
    non-finite value given is the caller's own; rounding within the range is documented (rounded_inputs).
    Only elements past the type's largest finite value are rounded to look."""
    if arr.dtype.kind not in "fiu" or arr.dtype == np.dtype(d.np) or arr.size == 0:
        return
    try:
        top = float(np.finfo(np.float32).max if d.truncated_f32 else ml_dtypes.finfo(d.np).max)
    except (TypeError, ValueError):
        top = 0.0
    with np.errstate(all="ignore"):
        x = arr.astype(np.float64)
        big = np.isfinite(x) & (np.abs(x) > top)
        if not big.any():
            return
        bad = np.zeros(arr.shape, bool)
        bad[big] = ~np.isfinite(np.asarray(quantize(x[big], d.name), np.float64))
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(f"simulate(): tensor {name} is {d.name} (largest finite value {top:.6g}); element {at} is "
                         f"{x[at]!r}, which it holds only as inf or NaN ({int(bad.sum())} such element(s)): give "
                         f"values the type holds"[:300])


def _check_held(name: str, dt: str, a: Any) -> None:
    """An integer tensor's values must be integers its type holds: the simulator would wrap 300 to 44 in
    an i8 and truncate 1.5 to 1, simulating other inputs than the caller's (a reference computed from
    the given values then blamed the kernel). Arrays of a numpy integer type inside the range pass
    without a scan."""
    d = dtype(dt)
    if d.kind == "float":
        return _check_floats(name, d, np.asarray(a))
    if d.kind not in ("int", "uint"):
        return
    lo, hi = (0, (1 << d.bits) - 1) if d.kind == "uint" else (-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1)
    arr = np.asarray(a)
    if arr.dtype.kind in "iu" and lo <= np.iinfo(arr.dtype).min and np.iinfo(arr.dtype).max <= hi:
        return
    if arr.dtype.kind == "b" or arr.size == 0:
        return
    with np.errstate(invalid="ignore"):
        v = arr.astype(np.float64) if arr.dtype.kind not in "iu" else arr
        wrong = ~np.isfinite(v) | (v != np.trunc(v)) | (v < lo) | (v > hi) if arr.dtype.kind not in "iu" \
            else (arr < lo) | (arr > hi)
    if wrong.any():
        at = tuple(int(i) for i in np.argwhere(wrong)[0])
        x = arr[at].item()
        why = "not an integer" if arr.dtype.kind not in "iu" and (not np.isfinite(float(x)) or x != np.trunc(x)) \
            else "outside the type"
        raise InputError(f"simulate(): tensor {name} is {d.name} (integers {lo}..{hi}); element {at} is {x!r} "
                         f"({why}; {int(wrong.sum())} such element(s)): tilesim neither wraps nor rounds inputs, "
                         f"give values the type holds"[:300])


def check_inputs(prog: Program, arrays: Mapping[str, Any], trace: Any) -> tuple[int, ...]:
    """Raise :class:`InputError` for an unknown tensor name, a non-numeric array or a bad trace id;
    returns the trace ids as a tuple."""
    names = [t.name for t in prog.tensors]
    for name, a in arrays.items():
        if name not in names:
            raise InputError(f"simulate(): {name!r} is not a tensor of {prog.name}; tensors: {choices(names)}"[:300])
        kind = np.asarray(a).dtype.kind if not isinstance(a, (str, bytes)) else "U"
        if kind == "O":  # object arrays of Python numbers are fine; anything else is not a number
            try:
                np.asarray(a, np.float64)
            except (TypeError, ValueError):
                kind = "U"
        if kind not in "biufO":
            what = {"c": "complex", "U": "text", "S": "bytes", "M": "datetime", "m": "timedelta"}.get(kind, kind)
            raise InputError(f"simulate(): tensor {name} must be a real numeric array; got {what} "
                             f"({type(a).__name__} {str(a)[:40]!r})"[:300])
    for t in prog.tensors:
        if t.name in arrays and not t.output:
            _check_held(t.name, t.dtype, arrays[t.name])
    if isinstance(trace, (str, bytes)) or not isinstance(trace, Iterable):
        raise InputError(f"simulate(): trace must be a tuple of fragment value ids, got {trace!r}"[:300])
    frags = _frag_ids(prog)
    trace = tuple(trace)
    for t in trace:
        if not isinstance(t, (int, np.integer)) or isinstance(t, (bool, np.bool_)) or int(t) not in frags:
            raise InputError(f"simulate(): trace id {t!r} is not a fragment value of {prog.name}; fragment ids: "
                             f"{choices(frags)}"[:300])
    return tuple(int(t) for t in trace)
