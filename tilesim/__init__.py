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
from tilesim.ir import Program
from tilesim.ir import dsl as _dsl
from tilesim.ir.dsl import *  # ts.load, ts.mma, ts.exp, ...: tilesim/ir/dsl.py's __all__, listed there once
from tilesim.layouts import Layout
from tilesim.matrix import MatrixInstruction, instructions, lookup
from tilesim.wave import SimResult, equivalent, inspect, simulate
from tilesim.ir import check
from tilesim.port import Port, PortError, port
from tilesim.diff import Verdict, run
from tilesim.isa import audit, audit_program, emulate, emulate_program

__version__ = "0.11.0"

__all__ = [
    "audit", "audit_program", "emulate", "emulate_program",
    "Program", "SimResult", "simulate", "check", "equivalent", "inspect", "port", "Port", "PortError", "run",
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
__all__ += [n for n in _dsl.__all__ if n not in _dsl.TYPES]  # the DSL: the value types stay in tilesim.ir
