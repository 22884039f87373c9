"""Tile IR and the Python DSL that traces into it."""

from tilesim.ir import dsl as _dsl
from tilesim.ir.core import OP_KINDS, Block, LdsLayout, Op, Program, TensorParam, Value
from tilesim.ir.dsl import *  # the DSL's names (and ts.exp, ...): tilesim/ir/dsl.py's __all__, listed there once

__all__ = ["OP_KINDS", "Block", "LdsLayout", "Op", "Program", "TensorParam", "Value"]
__all__ += _dsl.__all__

from tilesim.ir.ops import OpError  # noqa: E402

__all__ += ["OpError"]

from tilesim.ir.verify import CheckReport, Finding, check, compare_layouts  # noqa: E402

__all__ += ["CheckReport", "Finding", "check", "compare_layouts"]
