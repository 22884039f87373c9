"""How the simulator's ``mma`` reads the operands of sparse and multi-block instructions.

* **Multi-block MFMA** (``v_mfma_f32_4x4x4f16``: 16 blocks, ``16x16x4f16``: 4, ``32x32x4f16``: 2):
  a fragment's codec stacks the blocks as rows (block ``b`` is rows ``b*M … b*M + M-1``), so A
  is a ``(blocks*M, K)`` tile, B ``(blocks*K, N)``, C/D ``(blocks*M, N)``; each block is its own
  product ``D_b = A_b · B_b + C_b``. CBSZ/ABID are in the instruction's A layout
  (``MatrixInstruction.layout``): block ``b`` reads the registers of block
  ``(b // 2**CBSZ) * 2**CBSZ + ABID`` (CDNA3 ISA §7.1.4 "Broadcasting").
* **SMFMAC/SWMMAC**: A's registers hold the compressed values and the index VGPR the metadata
  (:mod:`tilesim.matrix.sparse`); the instruction multiplies the dense A they describe.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from tilesim.matrix.instruction import MatrixInstruction
from tilesim.matrix.sparse import decompress, meta_layout, values_layout
from tilesim.wave.codec import Codec, codec

__all__ = ["operand_codecs", "dense_operands", "per_block", "unblock"]


def operand_codecs(row: MatrixInstruction, wave: int, mods: Mapping[str, int], types: list[str],
                   lays: Mapping[str, object], regs: Mapping[str, int]) -> dict[str, Codec]:
    """The codec the instruction reads each operand register tuple through: A, B, C, and for a
    sparse row A as its compressed values and ``index`` as the metadata bytes."""
    out = {name: codec(lays[name], types["ABC".index(name)], regs[name]) for name in "ABC"}  # type: ignore[arg-type]
    if row.sparse:
        moving = {k: v for k, v in mods.items() if k in ("cbsz", "abid", "opsel")}
        out["A"] = codec(values_layout(row, wave, **moving), types[0], regs["A"])
        out["index"] = codec(meta_layout(row, wave, **moving), "u8", regs["K"])
    return out


def dense_operands(row: MatrixInstruction, tiles: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Replace a sparse row's compressed A tile by the dense A it multiplies."""
    if row.sparse:
        tiles = dict(tiles)
        tiles["A"] = decompress(tiles["A"], tiles.pop("index").astype(np.int64))
    return tiles


def per_block(row: MatrixInstruction, A: np.ndarray, B: np.ndarray, C: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(n, blocks*M, K)``-style stacked tiles -> ``(n*blocks, M, K)`` batches, one per block."""
    nb = row.blocks
    if nb == 1:
        return A, B, C
    n = A.shape[0]
    return (A.reshape(n * nb, row.m, row.k), B.reshape(n * nb, row.k, row.n), C.reshape(n * nb, row.m, row.n))


def unblock(row: MatrixInstruction, D: np.ndarray) -> np.ndarray:
    """Inverse of :func:`per_block` for the result: ``(n*blocks, M, N)`` -> ``(n, blocks*M, N)``."""
    nb = row.blocks
    return D if nb == 1 else D.reshape(D.shape[0] // nb, nb * row.m, row.n)
