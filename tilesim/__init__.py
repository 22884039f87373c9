"""tilesim: lane-accurate matrix-instruction layouts for AMD MFMA/WMMA and NVIDIA mma.sync."""

from tilesim.errors import (
    DeviceError,
    InstructionError,
    LayoutError,
    ModifierError,
    TargetError,
    TilesimError,
    ToolchainError,
    VerifyError,
)
from tilesim.targets import get_target, has, occupancy
from tilesim.ir import (
    Program,
    Tensor,
    async_commit,
    async_wait,
    barrier,
    cast,
    convert,
    elementwise,
    grid,
    kernel,
    lds_alloc,
    lds_copy_async,
    lds_load,
    lds_load_tr,
    lds_store,
    load,
    load_col,
    load_row,
    mma,
    mma_op,
    range,
    reduce,
    shuffle,
    store,
    tile_id,
    wave_id,
    waves,
    when,
    zeros,
)
from tilesim.layouts import Layout
from tilesim.matrix import MatrixInstruction, instructions, lookup
from tilesim.wave import SimResult, equivalent, inspect, simulate
from tilesim.ir import check
from tilesim.ir.dsl import FUNCTIONS as _FUNCTIONS
from tilesim.port import Port, PortError, port
from tilesim.diff import Verdict, run
from tilesim.isa import audit, audit_program, emulate, emulate_program

globals().update(_FUNCTIONS)  # ts.exp, ts.maximum, ts.minimum, ...: one per elementwise row of the op table

__version__ = "0.8.0"

__all__ = [
    "audit", "audit_program", "emulate", "emulate_program",
    "Program", "SimResult", "Tensor", "async_commit", "async_wait", "barrier", "cast", "convert", "elementwise", "grid", "kernel", "lds_alloc",
    "lds_copy_async", "lds_load", "lds_load_tr", "lds_store", "load", "load_col", "load_row", "mma", "mma_op", "range", "reduce", "shuffle", "simulate", "store",
    "tile_id", "wave_id", "waves", "when", "zeros", "check", "equivalent", "inspect", "port", "Port", "PortError", "run",
    "Verdict",
    "DeviceError",
    "InstructionError",
    "Layout",
    "LayoutError",
    "MatrixInstruction",
    "ModifierError",
    "TargetError",
    "TilesimError",
    "ToolchainError",
    "VerifyError",
    "__version__",
    "get_target",
    "has",
    "instructions",
    "lookup",
    "occupancy",
]
__all__ += [n for n in sorted(_FUNCTIONS) if n not in __all__]
