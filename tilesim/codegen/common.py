"""Pieces every part of the code generator shares: its error, the unsigned C types by width,
and validated tokens (integers, op-table rows, f32 literals) for the source."""

from __future__ import annotations

from typing import Any

import numpy as np

from tilesim.errors import TilesimError


class CodegenError(TilesimError):
    """The program uses something the code generator cannot emit (yet), or emits for no target."""


_UINT = {8: "ts_u8", 16: "ts_u16", 32: "ts_u32", 64: "ts_u64"}

def _int(x: object, lo: int, hi: int, what: str) -> int:
    """An integer for the generated source, range-checked: never a bool, a float or text."""
    if not isinstance(x, (int, np.integer)) or isinstance(x, (bool, np.bool_)) or not lo <= int(x) <= hi:
        raise CodegenError(f"{what} {ascii(x)[:60]} is not an integer in {lo}..{hi}")
    return int(x)


def _row(table: Any, name: object, what: str) -> Any:
    """The op table's row for ``name``; the generator writes the row's template, never ``name``."""
    if not isinstance(name, str) or name not in table:
        raise CodegenError(f"{what} op {ascii(name)[:60]}; ops: {', '.join(table)}")
    return table[name]


def _f32_literal(x: float) -> str:
    """A C float constant for ``x``; raw f32 bits where the value is not finite in f32 (``inff`` and
    ``nanf`` are no C literals)."""
    with np.errstate(over="ignore"):
        f = np.float32(x)
    if np.isfinite(f):
        return f"{x!r}f"
    return f"ts_f32(0x{int(np.array(f, np.float32).view(np.uint32)):08x}u)"


