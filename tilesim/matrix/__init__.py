"""The matrix-instruction catalog: rows, layouts, numerics."""

from tilesim.matrix.catalog import find, instructions, lookup, rows
from tilesim.matrix.dtypes import DTYPES, DType, decode, dtype, encode
from tilesim.matrix.explain import explain, row_summary
from tilesim.matrix.instruction import OPERANDS, Builtin, MatrixInstruction, Modifier
from tilesim.matrix.numerics import execute_logical, quantize, tolerance

__all__ = [
    "DTYPES",
    "Builtin",
    "DType",
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
    "quantize",
    "row_summary",
    "rows",
    "tolerance",
]
