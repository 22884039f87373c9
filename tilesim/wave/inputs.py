"""What ``simulate`` accepts: input arrays by tensor name, and the fragment ids to trace.

Checked at the entry, before any state is built, so a malformed call is one ``InputError`` naming
the bad value and the valid choices — never a numpy ``ValueError`` from deep inside the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from tilesim.errors import InputError, choices
from tilesim.ir.core import Program, Value

__all__ = ["check_inputs"]


def _frag_ids(prog: Program) -> list[int]:
    ids = set()
    for op in prog.walk():
        for v in (op.out, *op.args):
            if isinstance(v, Value) and v.kind == "frag":
                ids.add(v.id)
    return sorted(ids)


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
    if isinstance(trace, (str, bytes)) or not isinstance(trace, Iterable):
        raise InputError(f"simulate(): trace must be a tuple of fragment value ids, got {trace!r}"[:300])
    frags = _frag_ids(prog)
    trace = tuple(trace)
    for t in trace:
        if not isinstance(t, (int, np.integer)) or isinstance(t, (bool, np.bool_)) or int(t) not in frags:
            raise InputError(f"simulate(): trace id {t!r} is not a fragment value of {prog.name}; fragment ids: "
                             f"{choices(frags)}"[:300])
    return tuple(int(t) for t in trace)
