"""The matrix-instruction catalog: rows, layouts, numerics."""

from tilesim.matrix.catalog import ISA_PREFIXES, find, instructions, lookup, rows
from tilesim.matrix.dtypes import DTYPES, DType, decode, dtype, encode
from tilesim.matrix.explain import explain, row_summary
from tilesim.matrix.catalog_nvidia import mma_sync_asm
from tilesim.matrix.instruction import OPERANDS, Builtin, Immediate, MatrixInstruction, Modifier
from tilesim.matrix.numerics import execute_logical, quantize, tolerance

__all__ = [
    "DTYPES",
    "ISA_PREFIXES",
    "Builtin",
    "DType",
    "Immediate",
    "MatrixInstruction",
    "Modifier",
    "OPERANDS",
    "decode",
    "dtype",
    "encode",
    "execute_logical",
    "explain",
    "find",
    "instructions",
    "lookup",
    "mma_sync_asm",
    "quantize",
    "row_summary",
    "rows",
    "tolerance",
]
