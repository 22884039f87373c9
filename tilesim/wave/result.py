"""What a simulation returns: the outputs, the :class:`Report` of what the simulator saw (op
counts, LDS bank conflicts and races, out-of-bounds lanes, disagreeing replicas, reads of unwritten
LDS, global transactions) and the register images, provenance and write counts behind them
(:class:`SimResult`). The simulator itself is :mod:`tilesim.wave.sim`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilesim.ir.core import Program, Value

__all__ = ["Report", "SimResult"]


@dataclass
class Report:
    ops: Counter = field(default_factory=Counter)
    lds_bank_conflict_cycles: int = 0
    lds_accesses: int = 0
    races: list[str] = field(default_factory=list)
    race_count: int = 0
    oob: list[str] = field(default_factory=list)
    oob_count: int = 0
    replication: list[str] = field(default_factory=list)
    replication_count: int = 0
    uninit: list[str] = field(default_factory=list)  # LDS reads of bytes no store wrote (tilesim/wave/lds.py)
    uninit_count: int = 0
    sparse_index: list[str] = field(default_factory=list)  # index codes outside the 2:4 format (matrix/sparse.py)
    sparse_index_count: int = 0
    global_transactions: int = 0
    global_ideal_transactions: int = 0
    lds_bytes: int = 0
    vgprs: int = 0

    @property
    def coalescing(self) -> float:
        return self.global_ideal_transactions / self.global_transactions if self.global_transactions else 1.0

    def summary(self) -> dict[str, Any]:
        return {"ops": dict(self.ops), "lds_bytes": self.lds_bytes, "vgprs_estimate": self.vgprs,
                "lds_accesses": self.lds_accesses, "lds_bank_conflict_cycles": self.lds_bank_conflict_cycles,
                "races": self.race_count, "out_of_bounds_lanes": self.oob_count,
                "replication_violations": self.replication_count,
                "global_transactions": self.global_transactions, "coalescing": round(self.coalescing, 3),
                **({"unwritten_lds_reads": self.uninit_count} if self.uninit_count else {}),
                **({"sparse_index_outside_format": self.sparse_index_count} if self.sparse_index_count else {})}

    def __str__(self) -> str:
        s = self.summary()
        lines = [f"  {k}: {v}" for k, v in s.items()]
        for title, items in (("races", self.races), ("out of bounds", self.oob), ("replication", self.replication),
                             ("unwritten LDS", self.uninit), ("sparse index", self.sparse_index)):
            lines += [f"  {title}: {x}" for x in items[:5]]
        return "\n".join(lines)


@dataclass
class SimResult:
    program: Program
    outputs: dict[str, np.ndarray]
    report: Report
    # value id -> uint32[workgroup, wave, lane, vgpr] (last value); a mapping that builds an
    # accumulator's image when first read (tilesim.wave.images)
    registers: Mapping[int, np.ndarray]
    values: dict[int, Value]
    trace: dict[int, list[np.ndarray]] = field(default_factory=dict)  # traced value id -> one image per definition
    # output tensor -> int64[rows, cols, 6]: (workgroup, wave, lane, vgpr, bit_lo, store value id) of the
    # last store that wrote each element; -1 where nothing was written
    provenance: Mapping[str, np.ndarray] = field(default_factory=dict)
    # output tensor -> int64[rows, cols]: how many distinct (workgroup, wave, store op) wrote each element
    # (replicated lanes of one store count once)
    write_counts: Mapping[str, np.ndarray] = field(default_factory=dict)
    # check(program)'s errors (simulate(..., verify=True), the default): where there are any, the outputs
    # are what the hardware computes, not what the program says (a CheckWarning says so too)
    check_errors: list[str] = field(default_factory=list)
    checked: bool = False  # False: simulate(..., verify=False), check_errors was not computed

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]
