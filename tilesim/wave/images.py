"""Register images, some kept lazily: an f32 accumulator written by the fast mma path is held as
its logical tile (float32 ``[G, rows, cols]``) and encoded into its ``uint32[G, lane, vgpr]``
image only when something other than the next mma reads it (a store, an elementwise op, the
result). The next mma step reads the tile as its C operand directly, skipping a decode and an
encode per k-step; the image, when built, is bit for bit the one the step would have written
(the tile holds the f32-rounded values :meth:`Codec.from_tile` encodes, and never a NaN)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from tilesim.wave.codec import Codec
from tilesim.wave.kernels import gather_windows

__all__ = ["RegisterMap", "Registers", "TileImage", "WindowImage", "WriteCounts", "tile_elements"]


class TileImage:
    """A register image not yet encoded: ``codec.from_tile(tile)``."""

    __slots__ = ("codec", "tile", "zero", "_image")

    def __init__(self, codec: Codec, tile: np.ndarray, zero: bool = False) -> None:
        self.codec = codec
        self.tile: np.ndarray | None = tile
        self.zero = zero  # ``ts.zeros``: every register bit 0, the tile a read-only broadcast of +0.0
        self._image: np.ndarray | None = None

    @classmethod
    def zeros(cls, codec: Codec, waves: int) -> TileImage:
        return cls(codec, np.broadcast_to(np.float32(0), (waves, codec.rows, codec.cols)), zero=True)

    def image(self) -> np.ndarray:
        if self._image is None:
            if self.zero:  # +0.0 is the all-zero pattern in every slot
                self._image = np.zeros((self.tile.shape[0], self.codec.lanes, self.codec.nregs), np.uint32)
            else:
                self._image = self.codec.from_tile(self.tile)
            self.tile = None  # one copy of the value in memory: the image from now on
        return self._image


class WindowImage:
    """A loaded register image not yet gathered: slot ``s`` of wave ``g`` holds ``bits[base[g] + off[s]]``
    (the tensor's encoded bits, ``codec``'s slot view). The mma's fast path reads the operand from the
    tensor directly; anything else builds the image. The simulator builds it before a store to the
    tensor (``bits`` may be a view of it)."""

    __slots__ = ("codec", "bits", "base", "off", "tensor", "_image")

    def __init__(self, codec: Codec, bits: np.ndarray, base: np.ndarray, off: np.ndarray, tensor: str) -> None:
        self.codec, self.bits, self.base, self.off, self.tensor = codec, bits, base, off, tensor
        self._image: np.ndarray | None = None

    def image(self) -> np.ndarray:
        if self._image is None:
            self._image = self.codec.from_slots(gather_windows(self.bits, self.base, self.off))
            self.bits = self.base = self.off = None  # type: ignore[assignment]
        return self._image


class Registers(dict):
    """value id -> register image; reading an id encodes a :class:`TileImage` and keeps the image.
    :meth:`raw` reads without encoding (the fast mma path and the loop's carried values)."""

    def __getitem__(self, key: int) -> np.ndarray:
        v = dict.__getitem__(self, key)
        if isinstance(v, (TileImage, WindowImage)):
            v = v.image()
            dict.__setitem__(self, key, v)
        return v

    def raw(self, key: int) -> Any:
        return dict.__getitem__(self, key)

    def images(self) -> dict[int, np.ndarray]:
        return {k: self[k] for k in list(self)}

    def settle(self, tensor: str) -> None:
        """Build the images of the loads from ``tensor`` still held as windows (before a store to it)."""
        for k in [k for k, v in dict.items(self) if isinstance(v, WindowImage) and v._image is None
                  and v.tensor == tensor]:
            self[k]


def tile_elements(img: TileImage, c: Codec) -> np.ndarray | None:
    """For a value read through codec ``c`` from a lazily encoded image: the tile element each of
    ``c``'s records would decode to (``c.decode(img.image())[..., r] == tile.flat[elem[r]]``, the tile
    holding no NaN), or None when that needs the image (other widths, types or register counts)."""
    d = img.codec
    if (img.tile is None or c.slots is None or d.slots is None or d._slot_plan[1] is None or c.dt.name != d.dt.name
            or c.width != d.width or (c.lanes, c.nregs) != (d.lanes, d.nregs)):
        return None
    return d._slot_plan[2][c.slots]


class RegisterMap(Mapping):
    """``SimResult.registers``: value id -> ``uint32[workgroup, wave, lane, vgpr]``, an accumulator's
    image encoded when first read."""

    def __init__(self, regs: Registers, nwg: int, waves: int) -> None:
        self._regs, self._shape = regs, (nwg, waves)

    def __getitem__(self, vid: int) -> np.ndarray:
        r = self._regs[vid]
        return r.reshape(*self._shape, *r.shape[1:])

    def __iter__(self) -> Iterator[int]:
        return iter(list(self._regs))

    def __len__(self) -> int:
        return len(self._regs)


class WriteCounts(Mapping):
    """``SimResult.write_counts``: tensor -> ``int64[rows, cols]``, built when first read from the
    simulator's narrow counts, or from the provenance's written mask while no element was written
    twice (:meth:`tilesim.wave.provenance.Provenance.counts`)."""

    def __init__(self, counts: dict[str, np.ndarray], prov: Mapping[str, Any]) -> None:
        self._counts, self._prov = counts, prov

    def __getitem__(self, name: str) -> np.ndarray:
        c = self._counts.get(name)
        if c is None and name in self._prov:
            c = self._prov[name].counts()
        if c is None:
            raise KeyError(name)
        if c.dtype != np.int64:
            c = c.astype(np.int64)
        self._counts[name] = c
        return c

    def __iter__(self) -> Iterator[str]:
        return iter([k for k in self._prov if k in self._counts or self._prov[k].written is not None])

    def __len__(self) -> int:
        return len(list(iter(self)))
