"""``examples/block_gemm.py`` with asynchronous copies, at a size the ISA emulator runs in seconds.

On CDNA3 (gfx942) and CDNA4 (gfx950) the copies are direct global -> LDS loads
(``global_load_lds_dword`` / ``global_load_lds_dwordx4``; tilesim/codegen/async_copy.py), the copy
layout in LDS lane order (:func:`examples.block_gemm.lds_order_layout`). Not run on AMD hardware:
``tilesim run examples/block_gemm_async.py --target gfx950 --device emulator`` runs the compiled code in
tilesim's ISA emulator (docs/emulator.md).
"""

from __future__ import annotations

import tilesim as ts
from examples.block_gemm import inputs, program, reference

TARGETS = ("gfx942", "gfx950")

__all__ = ["TARGETS", "programs", "inputs", "reference"]


def programs(M: int = 128, N: int = 128, K: int = 64) -> list[ts.Program]:
    return [program(t, M, N, K, async_copy=True) for t in TARGETS]
