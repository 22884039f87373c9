"""Store provenance: which (workgroup, wave, lane, VGPR, bit) last wrote each output element.

Kept compact while stores take the simulator's fast path and expanded to the documented
``int64[rows, cols, 6]`` array of :attr:`tilesim.wave.SimResult.provenance` when first read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

__all__ = ["Provenance", "ProvenanceMap"]


class Provenance:
    """The last writer of every element of one output tensor, kept compact while every store to it
    takes the fast path (all waves active, all lanes in bounds): ``code[row, col]`` numbers the
    (wave, record) of the store that wrote it (-1: nothing), and each store adds one entry to a
    table of ``(first code, workgroup of each wave, wave of each wave, per-record lane/VGPR/bit_lo,
    store value id)``. :meth:`full` expands it to the ``int64[rows, cols, 6]`` array of
    :attr:`SimResult.provenance` (the same values the per-element writes gave) on first use; a
    general-path store expands it first and then writes into the full array."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(shape)
        self.code: np.ndarray | None = np.full(self.shape, -1, np.int64)
        self.stores: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, int]] = []
        self.next = 0
        self._full: np.ndarray | None = None

    def record(self, flat: np.ndarray, wg_of: np.ndarray, wave_of: np.ndarray, rec: np.ndarray, vid: int) -> None:
        """Every wave writes every record: ``flat`` is [wave * records] in (wave, record) order, so
        the last writer of a repeated element wins exactly as in per-element assignment."""
        n = wg_of.size * rec.shape[0]
        if self._full is not None:
            full = self._full.reshape(-1, 6)
            g, r = np.divmod(np.arange(n), rec.shape[0])
            for j, col in enumerate((wg_of[g], wave_of[g], rec[r, 0], rec[r, 1], rec[r, 2])):
                full[flat, j] = col
            full[flat, 5] = vid
            return
        assert self.code is not None
        code = self.code.reshape(-1)
        for i in range(0, n, 1 << 18):  # in order, a slice at a time: no [waves * records] temporary
            code[flat[i:i + (1 << 18)]] = np.arange(self.next + i, self.next + min(n, i + (1 << 18)), dtype=np.int64)
        self.stores.append((self.next, wg_of, wave_of, rec, vid))
        self.next += n

    def full(self) -> np.ndarray:
        if self._full is None:
            out = np.full((*self.shape, 6), -1, np.int64)
            assert self.code is not None
            code, flat = self.code.reshape(-1), out.reshape(-1, 6)
            for start, wg_of, wave_of, rec, vid in self.stores:
                sel = np.flatnonzero((code >= start) & (code < start + wg_of.size * rec.shape[0]))
                if not sel.size:
                    continue
                g, r = np.divmod(code[sel] - start, rec.shape[0])
                flat[sel, 0], flat[sel, 1] = wg_of[g], wave_of[g]
                flat[sel, 2:5] = rec[r]
                flat[sel, 5] = vid
            self._full, self.code, self.stores = out, None, []
        return self._full


class ProvenanceMap(Mapping):
    """``SimResult.provenance``: output tensor -> int64[rows, cols, 6], each array built when first read."""

    def __init__(self, prov: dict[str, Provenance]) -> None:
        self._prov = prov

    def __getitem__(self, name: str) -> np.ndarray:
        return self._prov[name].full()

    def __iter__(self) -> Iterator[str]:
        return iter(self._prov)

    def __len__(self) -> int:
        return len(self._prov)
