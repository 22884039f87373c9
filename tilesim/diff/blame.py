"""Blame: for each wrong element, who stored it and what the hardware computed in that register.

The simulator's provenance gives, per output element, the (workgroup, wave, lane, VGPR, low bit)
of the store and the value it came from. When that value is a matrix instruction's result, the
register holds what the *instruction's* D layout puts there (the catalog row, with the op's
OPSEL) — not what the program declared: a program that declares the wrong accumulator layout
stores the hardware's D[r][c] wherever its declaration says, and the blame must name D[r][c].
"""

from __future__ import annotations

import numpy as np

from tilesim.ir.ops import MMA_KINDS
from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import dtype
from tilesim.wave.sim import SimResult

__all__ = ["blame"]


def _ranges(xs: list[int]) -> str:
    xs = sorted(set(xs))
    out, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(f"{xs[i]}-{xs[j]}" if j > i else f"{xs[i]}")
        i = j + 1
    return ", ".join(out)


def _hardware_d(op, res: SimResult, lane: int, slot: int) -> tuple[object, dict[str, int]]:
    """The catalog row and the D element (block, row, col) the instruction wrote to (lane, slot)."""
    row = lookup(op.attr("instr"), res.program.target)
    mods = dict(op.attr("modifiers") or ())
    d = row.layout("D", wave_size=res.program.wave_size, **{k: v for k, v in mods.items() if k == "opsel"})
    return row, {k: int(v) for k, v in d.apply(lane=lane, slot=slot).items()}


def blame(res: SimResult, name: str, bad: np.ndarray, got: np.ndarray, limit: int = 5,
          expected: np.ndarray | None = None, got_label: str = "device") -> tuple[list[str], str]:
    """Blame lines for the first differing elements of output ``name``, and the pattern over all.

    ``got`` is the result being judged (the device's, or the simulator's against a reference:
    ``got_label`` names it), ``expected`` what it should be (default: the simulator's outputs).
    """
    prov = res.provenance.get(name)
    want = np.asarray(res.outputs[name], np.float64) if expected is None else expected
    idx = np.argwhere(bad)
    if prov is None or idx.size == 0:
        return [], ""
    producers = {op.out.id: op for op in res.program.walk()
                 if op.out is not None and op.kind in MMA_KINDS}
    lines = []
    for i, j in idx[:limit]:
        wg, wave, lane, vgpr, lo, vid = (int(x) for x in prov[i, j])
        if wg < 0:
            lines.append(f"{name}[{i}][{j}]: {got_label} {got[i, j]:g}, expected {want[i, j]:g}; "
                         "never stored by the program")
            continue
        val = res.values.get(vid)
        bits = dtype(val.dtype).reg_bits if val is not None else 32
        line = (f"{name}[{i}][{j}]: {got_label} {got[i, j]:g}, expected {want[i, j]:g}; stored by workgroup {wg}, "
                f"wave {wave}, lane {lane}, VGPR {vgpr}" + (f", bits {lo}-{lo + bits - 1}" if bits < 32 else ""))
        op = producers.get(vid)
        if op is not None and val is not None:
            row, d = _hardware_d(op, res, lane, (vgpr * 32 + lo) // bits)
            if d["row"] >= 0:
                a = row.layout("A", wave_size=res.program.wave_size)
                b = row.layout("B", wave_size=res.program.wave_size)
                blk = max(d.get("block", 0), 0)
                a_l = sorted({o["lane"] for k in range(row.k) for o in a.owners_of(block=blk, row=d["row"], col=k)})
                b_l = sorted({o["lane"] for k in range(row.k) for o in b.owners_of(block=blk, row=k, col=d["col"])})
                where = f"block {blk} " if row.blocks > 1 else ""
                line += (f"; computed by {row.mnemonic} as {where}D[{d['row']}][{d['col']}] (the instruction's D "
                         f"layout) from A lanes {_ranges(a_l)} and B lanes {_ranges(b_l)}")
        lines.append(line)
    lanes = sorted({int(prov[i, j, 2]) for i, j in idx if prov[i, j, 0] >= 0})
    vgprs = sorted({int(prov[i, j, 3]) for i, j in idx if prov[i, j, 0] >= 0})
    W = res.program.wave_size
    parts = [f"{len(idx)} of {bad.size} elements differ", f"lanes {_ranges(lanes)}" + (" only" if len(lanes) < W else ""),
             f"VGPRs {_ranges(vgprs)}"]
    # rows permuted: every differing row of the result equals some other row of the right answer
    rows = sorted({int(i) for i, _ in idx})
    sim_rows = {tuple(np.round(want[r], 3)) for r in range(want.shape[0])}
    if rows and all(tuple(np.round(got[r], 3)) in sim_rows for r in rows):
        parts.append("rows permuted (each wrong row is another row of the right answer)")
    return lines, "; ".join(parts)
