"""Store provenance and write counts: which (workgroup, wave, lane, VGPR, bit) last wrote each
output element, and how many (wave, store) pairs wrote it.

Kept compact while stores take the simulator's fast path and expanded to the documented arrays
(:attr:`tilesim.wave.SimResult.provenance`, ``int64[rows, cols, 6]``, and ``write_counts``,
``int64[rows, cols]``) when first read. Three forms, each taken only while it is exact:

* **windows** (no element written twice so far, as in a GEMM): the stores themselves (each wave's
  window origin and the records' offsets) and a ``written`` mask, one byte per element;
* **codes**: ``code[row, col]`` numbers the (wave, record) write that wrote it last (-1: none),
  int32, with a table of stores to decode the numbers; the write counts then live in the simulator;
* **full**: the expanded array, once a general-path store (masked lanes) writes into it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from tilesim.wave.storage import put_tiles

__all__ = ["Provenance", "ProvenanceMap"]

_CHUNK = 1 << 16  # elements per slice of a store (peak memory: 0.5 MiB of indices)


class Provenance:
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(shape)
        self.size = int(np.prod(self.shape))
        self.written: np.ndarray | None = np.zeros(self.size, bool)  # windows form
        self.windows: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]] = []
        self.code: np.ndarray | None = None  # codes form; int64 once it would pass 2**31
        self.stores: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, int]] = []
        self.next = 0
        self._full: np.ndarray | None = None

    # ------------------------------------------------------------------ fast stores
    @staticmethod
    def _slices(base: np.ndarray, off: np.ndarray) -> Iterator[tuple[int, int, np.ndarray]]:
        step = max(1, _CHUNK // max(1, off.size))
        for g0 in range(0, base.size, step):
            g1 = min(base.size, g0 + step)
            yield g0, g1, (base[g0:g1, None] + off[None, :]).reshape(-1)

    def record_windows(self, base: np.ndarray, off: np.ndarray, wg_of: np.ndarray, wave_of: np.ndarray,
                       rec: np.ndarray, vid: int,
                       tiles: tuple[np.ndarray, np.ndarray, int, int] | None = None) -> bool:
        """A fast store: wave ``g`` wrote element ``base[g] + off[r]`` with record ``r``, in (wave,
        record) order. Returns True when it stays in the windows form (every write went to an element
        never written before, so each count is 0 or 1: :meth:`counts`). ``tiles``: the same windows as
        distinct ``h x w`` tiles (tile row, tile col, h, w), which no two waves share."""
        if self.written is not None and tiles is not None and not self.written.any():
            put_tiles(self.written.reshape(self.shape), *tiles, True)  # nothing written yet, disjoint windows
            self.windows.append((base.copy(), off, wg_of, wave_of, rec, vid))
            return True
        if self.written is not None:
            w = self.written
            fresh = not any(w[flat].any() for _, _, flat in self._slices(base, off))
            if fresh:
                before = int(np.count_nonzero(w))
                for _, _, flat in self._slices(base, off):
                    w[flat] = True
                if int(np.count_nonzero(w)) - before == base.size * off.size:
                    self.windows.append((base.copy(), off, wg_of, wave_of, rec, vid))
                    return True
                for _, _, flat in self._slices(base, off):  # two waves wrote one element: undo
                    w[flat] = False
        return False  # not recorded: the caller takes the counts (:meth:`counts`), then codes

    def counts(self) -> np.ndarray | None:
        """The write counts in the windows form (``int64[rows, cols]``: 1 where written), else None."""
        return None if self.written is None else self.written.astype(np.int64).reshape(self.shape)

    def to_codes(self) -> None:
        """Leave the windows form: the stores so far as codes, in order."""
        if self.written is not None:
            self._to_codes()

    def _to_codes(self) -> None:
        windows, self.windows, self.written = self.windows, [], None
        if self._full is None and self.code is None:
            self.code = np.full(self.shape, -1, np.int32)
        for base, off, wg_of, wave_of, rec, vid in windows:
            for g0, g1, flat in self._slices(base, off):
                self.record(flat, wg_of[g0:g1], wave_of[g0:g1], rec, vid)

    def record(self, flat: np.ndarray, wg_of: np.ndarray, wave_of: np.ndarray, rec: np.ndarray, vid: int) -> None:
        """Every wave writes every record: ``flat`` is [wave * records] in (wave, record) order, so
        the last writer of a repeated element wins exactly as in per-element assignment."""
        if self.written is not None:
            self._to_codes()
        n = wg_of.size * rec.shape[0]
        if self._full is not None:
            full = self._full.reshape(-1, 6)
            g, r = np.divmod(np.arange(n), rec.shape[0])
            for j, col in enumerate((wg_of[g], wave_of[g], rec[r, 0], rec[r, 1], rec[r, 2])):
                full[flat, j] = col
            full[flat, 5] = vid
            return
        assert self.code is not None
        if self.code.dtype != np.int64 and self.next + n >= 2**31:
            self.code = self.code.astype(np.int64)
        code = self.code.reshape(-1)
        for i in range(0, n, 1 << 18):  # in order, a slice at a time: no [waves * records] temporary
            code[flat[i:i + (1 << 18)]] = np.arange(self.next + i, self.next + min(n, i + (1 << 18)), dtype=code.dtype)
        self.stores.append((self.next, wg_of, wave_of, rec, vid))
        self.next += n

    def distinct_since(self, start: int) -> bool:
        """Codes form: whether the writes numbered from ``start`` on all went to different elements."""
        if self.code is None:
            return False
        return int(np.count_nonzero(self.code >= start)) == self.next - start

    # ------------------------------------------------------------------ expansion
    def full(self) -> np.ndarray:
        if self._full is None:
            out = np.full((*self.shape, 6), -1, np.int64)
            flat_out = out.reshape(-1, 6)
            for base, off, wg_of, wave_of, rec, vid in self.windows:  # each element written once: its writer
                for g0, g1, flat in self._slices(base, off):
                    g, r = np.divmod(np.arange(flat.size), off.size)
                    flat_out[flat, 0], flat_out[flat, 1] = wg_of[g0 + g], wave_of[g0 + g]
                    flat_out[flat, 2:5] = rec[r]
                    flat_out[flat, 5] = vid
            if self.code is not None:
                code = self.code.reshape(-1)
                for start, wg_of, wave_of, rec, vid in self.stores:
                    sel = np.flatnonzero((code >= start) & (code < start + wg_of.size * rec.shape[0]))
                    if not sel.size:
                        continue
                    g, r = np.divmod(code[sel].astype(np.int64) - start, rec.shape[0])
                    flat_out[sel, 0], flat_out[sel, 1] = wg_of[g], wave_of[g]
                    flat_out[sel, 2:5] = rec[r]
                    flat_out[sel, 5] = vid
            self._full, self.code, self.stores = out, None, []
        return self._full

    def expand(self) -> np.ndarray:
        """:meth:`full` for a general-path store, which writes into the array (leaves the windows form)."""
        full = self.full()
        self.windows, self.written = [], None
        return full


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
