"""One distinct LDS access of the simulator's LDS (``tilesim/wave/lds.py``): its byte addresses
per distinct origin and what the caches derive from them, and the small helpers both use (the
bit-move types and their NaN test, array growth, the origins' key)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tilesim.ir.core import Value
from tilesim.wave.codec import Codec

__all__ = ["ALL_ONES", "BIT_MOVE", "BIT_MOVE_TYPES", "Access", "grown", "has_nan", "origins", "what"]

# register types whose decode -> encode round trip keeps every non-NaN bit pattern, and the test
# for a NaN pattern of each (exponent all ones, mantissa not zero)
BIT_MOVE = {"f16": (np.uint16, 0x7FFF, 0x7C00), "bf16": (np.uint16, 0x7FFF, 0x7F80),
             "f32": (np.uint32, 0x7FFFFFFF, 0x7F800000)}
BIT_MOVE_TYPES = tuple(BIT_MOVE)  # (tilesim/wave/lds_fused.py composes these moves)


def has_nan(bits: np.ndarray, dt: str) -> bool:
    unit, mask, inf = BIT_MOVE[dt]
    return bool(((bits & unit(mask)) > unit(inf)).any())


def grown(a: np.ndarray, n: int, fill: int, rows: int | None = None) -> np.ndarray:
    """``a`` with its last axis grown to ``n`` (and its first to ``rows``), the new part ``fill``
    (np.pad's result, without its generic machinery: a few times faster on the race state's
    megabytes)."""
    out = np.full((a.shape[0] if rows is None else rows, *a.shape[1:-1], n), fill, a.dtype)
    out[:a.shape[0], ..., :a.shape[-1]] = a
    return out


def origins(row0: np.ndarray, col0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(np.stack([row0, col0], 1), axis=0, return_inverse=True)``: the distinct (row,
    col) pairs in lexicographic order and each wave's index, through one int64 key per pair (the
    same order: row-major keys sort as the pairs do) instead of the row-wise unique's structured
    sort, several times slower on a thousand waves."""
    row0, col0 = row0.astype(np.int64, copy=False), col0.astype(np.int64, copy=False)
    r0, c0 = (int(row0.min()), int(col0.min())) if row0.size else (0, 0)
    nr, nc = (int(row0.max()) - r0 + 1, int(col0.max()) - c0 + 1) if row0.size else (1, 1)
    if nr * nc >= 1 << 62:  # (the key would overflow)
        origins, inv = np.unique(np.stack([row0, col0], 1), axis=0, return_inverse=True)
        return origins, inv.reshape(-1)
    keys, inv = np.unique((row0 - r0) * nc + (col0 - c0), return_inverse=True)
    return np.stack([keys // nc + r0, keys % nc + c0], 1), inv.reshape(-1)


def what(buf: Value, write: bool) -> str:
    return f"lds_store to %{buf.id}" if write else f"lds_load from %{buf.id}"


ALL_ONES = {2: 0x0101, 4: 0x01010101, 8: 0x0101010101010101}  # an element whose every byte is written


class Access:
    """One distinct access: its byte addresses ``addr[g, record]`` and what is derived from them."""

    __slots__ = ("_addr", "aligned", "banks", "codec", "cols", "flat", "flat_slots", "origin", "per_origin", "runs",
                 "slots_width", "token", "uniform", "wg0", "width")

    def __init__(self, token: int, per_origin: np.ndarray, origin: np.ndarray, codec: Codec) -> None:
        self.token = token
        self._addr: np.ndarray | None = None
        self.per_origin, self.origin = per_origin, origin  # addr == per_origin[origin]
        self.uniform: bool | None = None
        self.codec = codec  # kept alive: the cache key holds its id
        self.aligned: dict[int, bool] = {}
        self.flat: np.ndarray | None = None  # element index into the flat uint{8*eb} view of the LDS
        self.flat_slots: np.ndarray | None = None  # the same per register slot (loads)
        self.width = self.slots_width = -1  # the LDS row length (bytes) flat, flat_slots were computed for
        self.wg0: list[tuple[int, int]] | None = None  # the elements workgroup 0 accesses (_wg0_runs)
        self.runs: list[tuple[int, int, np.ndarray]] | None = None  # a store's runs (_store_runs; []: none)
        self.cols: np.ndarray | None = None  # a load's slots' elements of workgroup 0 (load)
        self.banks: dict[Any, tuple[int, int]] = {}

    @property
    def addr(self) -> np.ndarray:
        """``addr[g, record]`` of every wave (gathered on first use: what the cached paths need
        comes from the addresses per origin)."""
        if self._addr is None:
            self._addr = self.per_origin[self.origin]
            self._addr.setflags(write=False)
        return self._addr

    def rows(self, n: int) -> np.ndarray:
        """``addr[:n]``: the first ``n`` waves' addresses (workgroup 0's), without the others'."""
        return self.per_origin[self.origin[:n]] if self._addr is None else self._addr[:n]
