"""Global memory order within one kernel launch: a load of an output tensor against the stores of
other (workgroup, wave)s. Nothing orders two workgroups; two waves of one workgroup are ordered
only across a barrier (the analysis counts barriers as epochs, :mod:`tilesim.ir.accesses`). A load
that another unordered wave's store may precede or follow reads a value that depends on timing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilesim.ir.core import Program

__all__ = ["Load", "read_back_races"]


@dataclass
class Load:
    """A load of an output tensor (one that some store may write), as the analysis evaluated it."""
    op: int
    tensor: str
    flat: np.ndarray  # int64[instances, records] element index, -1 where masked
    g: np.ndarray  # int64[instances] (workgroup, wave) index of each instance
    epoch: int  # barriers passed before it


def read_back_races(prog: Program, loads: Sequence[Load], stores: Sequence[Any], wg_of: np.ndarray,
                    wave_of: np.ndarray) -> list[tuple[str, str]]:
    """(where, message) of each load that reads an element an unordered (workgroup, wave) stores.
    ``stores`` carry ``tensor``, ``flat``, ``g`` and ``epoch`` like :class:`Load`."""
    out = []
    for name in dict.fromkeys(ld.tensor for ld in loads):
        mine = [s for s in stores if s.tensor == name]
        if not mine:
            continue
        rows, cols = prog.tensor(name).shape
        writer = np.full(rows * cols, -1, np.int64)  # a (workgroup, wave) that stores each element, and when
        epoch = np.full(rows * cols, -1, np.int64)
        for s in mine:
            g = np.broadcast_to(s.g[:, None], s.flat.shape)
            keep = s.flat >= 0
            writer[s.flat[keep]], epoch[s.flat[keep]] = g[keep], s.epoch
        for ld in (x for x in loads if x.tensor == name):
            keep = ld.flat >= 0
            f, g = ld.flat[keep], np.broadcast_to(ld.g[:, None], ld.flat.shape)[keep]
            w = writer[f]
            other_wg = wg_of[np.maximum(w, 0)] != wg_of[g]
            bad = (w >= 0) & (w != g) & (other_wg | (epoch[f] == ld.epoch))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                e, a, b = int(f[i]), int(g[i]), int(w[i])
                out.append((f"op {ld.op} (load from {name})",
                            f"{name}[{e // cols}][{e % cols}] is read by workgroup {int(wg_of[a])}, wave "
                            f"{int(wave_of[a])} and written by workgroup {int(wg_of[b])}, wave {int(wave_of[b])} "
                            f"({int(bad.sum())} element reads): a read/write race, the value read depends on which "
                            "runs first (workgroups are not ordered; waves of one workgroup only by a barrier)"))
    return out
