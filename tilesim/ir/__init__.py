"""Tile IR and the Python DSL that traces into it."""

from tilesim.ir.core import OP_KINDS, Block, LdsLayout, Op, Program, TensorParam, Value
from tilesim.ir.dsl import FUNCTIONS as _FUNCTIONS
from tilesim.ir.dsl import (
    Frag,
    Kernel,
    MmaOp,
    Scalar,
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

__all__ = [
    "OP_KINDS", "Block", "Frag", "Kernel", "LdsLayout", "MmaOp", "Op", "Program", "Scalar", "Tensor", "TensorParam",
    "Value", "async_commit", "async_wait", "barrier", "cast", "convert", "elementwise", "grid", "kernel", "lds_alloc", "lds_copy_async", "lds_load", "lds_load_tr", "lds_store",
    "load", "load_col", "load_row", "mma", "mma_op", "range", "reduce", "shuffle", "store", "tile_id", "wave_id", "waves", "when",
    "zeros",
]

# one DSL function per elementwise row of the op table (ts.exp, ts.maximum, ts.minimum, ...)
globals().update(_FUNCTIONS)
__all__ += [n for n in sorted(_FUNCTIONS) if n not in __all__]

from tilesim.ir.ops import OpError  # noqa: E402

__all__ += ["OpError"]

from tilesim.ir.verify import CheckReport, Finding, check, compare_layouts  # noqa: E402

__all__ += ["CheckReport", "Finding", "check", "compare_layouts"]
