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
from tilesim.hw.targets import get_target, has, occupancy
from tilesim.layouts import Layout
from tilesim.matrix import MatrixInstruction, instructions, lookup

__version__ = "0.1.0"

__all__ = [
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
