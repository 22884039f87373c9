"""What a simulation saw that leaves the device's result undefined. The simulator resolves each of
these one fixed way, the device any way, so equal or right simulated outputs prove nothing about
such a program: ``run`` and ``tilesim simulate`` fail on them (:mod:`tilesim.diff.judge`) and
:func:`tilesim.wave.equivalence.equivalent` calls no such run equal.
"""

from __future__ import annotations

import numpy as np

from tilesim.wave.sim import SimResult

__all__ = ["undefined", "unwritten"]


def unwritten(res: SimResult, name: str) -> np.ndarray:
    """bool[rows, cols]: the elements of output ``name`` no store wrote."""
    try:
        return res.write_counts[name] == 0
    except KeyError:  # no store ran
        return np.ones(res.program.tensor(name).shape, bool)


def undefined(res: SimResult, *, races: bool = True, unwritten_outputs: bool = True) -> list[str]:
    """What the simulator saw at run time that leaves the device's result undefined: LDS races,
    replicated operand copies that differ (the hardware may read either), LDS reads of bytes no
    store wrote (the LDS holds whatever it held before the kernel), and output elements no
    store wrote (the device leaves whatever the buffer held). ``check`` finds these statically where
    it can (within its analysis budget); a program that reaches the simulator with one still fails.
    ``races=False`` and ``unwritten_outputs=False`` leave those out (for a caller that compares them
    itself)."""
    rep = res.report
    out = []
    for t in res.program.tensors if unwritten_outputs else ():
        n = int(unwritten(res, t.name).sum()) if t.output else 0
        if n:
            out.append(f"simulation: {n} of {int(np.prod(t.shape))} elements of output {t.name} were never written")
    out += [f"simulation: {rep.race_count} racing LDS access(es) (no barrier between waves): {x}"
            for x in rep.races[:1]] if rep.race_count and races else []
    if rep.uninit_count:
        out.append(f"simulation: {rep.uninit_count} LDS element read(s) of bytes no store wrote (the LDS holds "
                   f"whatever it held before): {rep.uninit[0] if rep.uninit else '?'}")
    if rep.sparse_index_count:
        out.append(f"simulation: {rep.sparse_index_count} sparse index code(s) outside the 2:4 format: "
                   f"{rep.sparse_index[0] if rep.sparse_index else '?'}")
    if rep.replication_count:
        first = rep.replication[0] if rep.replication else "?"
        out.append(f"simulation: {rep.replication_count} replicated operand element(s) whose copies differ: {first}")
    return out
