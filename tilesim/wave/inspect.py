"""Inspection: what every lane's registers hold after a simulation, with logical coordinates."""

from __future__ import annotations

from typing import Any

import numpy as np

from tilesim.errors import TilesimError
from tilesim.ir.core import Value
from tilesim.wave.codec import codec
from tilesim.wave.sim import SimResult

__all__ = ["inspect", "resolve_value"]


def resolve_value(res: SimResult, value: Any) -> Value:
    """A fragment value of the simulated program, by :class:`Value`, id (``9``) or text (``"%9"``, ``"acc"``)."""
    frags = {vid: v for vid, v in res.values.items() if v.kind == "frag"}
    if isinstance(value, Value):
        vid = value.id
    elif isinstance(value, str) and value.lstrip("%").isdigit():
        vid = int(value.lstrip("%"))
    elif isinstance(value, (int, np.integer)):
        vid = int(value)
    else:
        named = [v.id for v in frags.values() if v.name == value]
        vid = named[-1] if named else -1
    if vid not in frags or vid not in res.registers:
        raise TilesimError(f"no fragment value {value!r} in {res.program.name}; fragments: "
                           f"{', '.join(v.short() for v in frags.values())}")
    return frags[vid]


def inspect(res: SimResult, value: Any, *, workgroup: int = 0, wave: int = 0, lanes: int | None = None,
            as_dict: bool = False) -> Any:
    """Lane x VGPR table of a fragment: each cell lists ``(row,col)=value`` for the slots in that VGPR.

    The coordinates are the program's declared layout (what the program believes each register
    holds); the values are the bits the simulator holds there.
    """
    v = resolve_value(res, value)
    regs = res.registers[v.id]
    if not (0 <= workgroup < regs.shape[0]) or not (0 <= wave < regs.shape[1]):
        raise TilesimError(f"workgroup {workgroup}/wave {wave} out of range: the program ran {regs.shape[0]} "
                           f"workgroups of {regs.shape[1]} waves")
    c = codec(v.layout, v.dtype)
    image = regs[workgroup, wave]
    vals = c.decode(image)
    cells: dict[tuple[int, int], list[str]] = {}
    records = []
    for i, r in enumerate(c.rec):
        lane, vgpr = int(r[4]), int(r[3])
        val = vals[i]
        txt = f"({int(r[1])},{int(r[2])})={float(val):.6g}"
        cells.setdefault((lane, vgpr), []).append(txt)
        records.append({"lane": lane, "vgpr": vgpr, "bit_lo": int(r[5]), "bit_hi": int(r[6]), "row": int(r[1]),
                        "col": int(r[2]), "value": float(val), "bits": int(c.gather_bits(image)[i])})
    if as_dict:
        return {"value": v.short(), "dtype": v.dtype, "workgroup": workgroup, "wave": wave, "records": records}
    n = c.lanes if lanes is None else min(lanes, c.lanes)
    header = ["lane"] + [f"v{j}" for j in range(c.nregs)]
    rows = [[str(lane)] + [" ".join(cells.get((lane, j), ["-"])) for j in range(c.nregs)] for lane in range(n)]
    widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(header)]
    lines = [f"{v.short()} : {v.dtype} fragment, workgroup {workgroup}, wave {wave} — cells are (row,col)=value",
             "  ".join(h.rjust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(x.rjust(w) for x, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)
