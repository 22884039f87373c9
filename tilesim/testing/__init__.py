"""Tools for people who test GPU kernels with tilesim: hypothesis strategies, assertions, a pytest plugin.

Strategies (need ``hypothesis``, in the ``dev`` extra)::

    targets(vendor=None, feature=None)                      -> Target rows
    instructions(arch=None, kind=None)                      -> MatrixInstruction rows
    instruction_targets(arch=None, kind=None, wave_size=None)  -> InstructionOnTarget(instruction, target, wave_size)
    operand_layouts(arch=None, operand=None, wave_size=None, modifiers=False)
                                                            -> OperandLayout(..., modifiers, layout)
    layouts(bijective=None, linear=None, max_in=64, max_out=64)  -> Layout values, relations included
    invalid_layout_specs()                                  -> InvalidLayoutSpec; .build() raises LayoutError
    matrices(dtype, shape, edge_values=False, max_abs=None) -> numpy arrays representable in dtype
    tile_programs(arch=None, kind=None, ...)                -> specialised GEMM Programs
    tile_cases(arch=None, kind=None, ...)                   -> TileCase(program, ..., inputs, expected)

Assertions: ``assert_layout_equal(actual, expected)``, ``assert_equivalent(p1, p2)``.
The pytest plugin (``tilesim.testing.plugin``, loaded by entry point) adds ``--tilesim-device``
and the ``tilesim_gpu`` marker. See docs/testing.md.
"""

from __future__ import annotations

import importlib
from typing import Any

from tilesim.testing.asserts import assert_equivalent, assert_layout_equal

# Strategies import hypothesis, a dev extra. pytest loads this package for the plugin in every
# environment where tilesim is installed, so they are imported on first use, not here.
_LAZY = {
    "InstructionOnTarget": "_catalog", "OperandLayout": "_catalog", "instruction_targets": "_catalog",
    "instructions": "_catalog", "operand_layouts": "_catalog", "targets": "_catalog",
    "InvalidLayoutSpec": "_layouts", "invalid_layout_specs": "_layouts", "layouts": "_layouts",
    "edge_values_of": "_values", "matrices": "_values",
    "EPILOGUE_OPS": "_programs", "TileCase": "_programs", "tile_cases": "_programs", "tile_programs": "_programs",
}

__all__ = [
    "EPILOGUE_OPS", "InstructionOnTarget", "InvalidLayoutSpec", "OperandLayout", "TileCase", "assert_equivalent",
    "assert_layout_equal", "edge_values_of", "instruction_targets", "instructions", "invalid_layout_specs", "layouts",
    "matrices", "operand_layouts", "targets", "tile_cases", "tile_programs",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tilesim.testing' has no attribute {name!r}")
    try:
        mod = importlib.import_module(f"tilesim.testing.{module}")
    except ModuleNotFoundError as e:
        if e.name != "hypothesis" and not (e.name or "").startswith("hypothesis."):
            raise
        raise ImportError(f"tilesim.testing.{name} needs hypothesis: pip install 'tilesim[dev]' "
                          "(or pip install hypothesis)") from e
    value = getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
