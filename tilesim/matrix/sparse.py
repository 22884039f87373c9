"""2:4 structured sparsity (SMFMAC, SWMMAC) as kernels store it: compressed values plus metadata bytes.

A sparse A keeps at most two non-zeros in each aligned group of four k. Kernel authors do not
compress in the kernel: a pruned weight matrix is compressed once on the host (cuSPARSELt's
``cusparseLtSpMMACompress``, hipSPARSELt's ``hipsparseLtSpMMACompress``) into

* **values** ``(M, K/2)``: the two kept elements of group ``g`` at columns ``2g`` (lower k) and
  ``2g + 1``;
* **metadata** ``uint8 (M, K/8)``: one 4-bit code per group, ``code = idx0 | idx1 << 2`` with the
  kept positions ``idx0 < idx1`` in 0..3, two groups per byte (group ``2j`` in the low nibble of
  byte ``j``).

That metadata is byte for byte what the index VGPR of the instruction holds (CDNA3 ISA §7.1.6
"Sparse matrix"; RDNA4 ISA §7.9 SWMMAC: "4 bits per group of 4, lower group in the lower bits"),
so a tile program loads both with ordinary loads, no unpacking in the kernel. This module
derives, from the catalog row's hardware layouts (A: one slot of ``2 x bits`` per group, K: one
4-bit slot per group), the layouts of those two tiles in registers:

* :func:`values_layout` — ``(lane, slot) -> (row, col < K/2)``, the A element width per slot
  (the lower kept element in the low bits of the group's field, as the hardware reads it);
* :func:`meta_layout` — ``(lane, byte) -> (row, col < K/8)`` of the index VGPR, 8 bits per slot,
  with the index set (SMFMAC ABID, SWMMAC OPSEL ``index_key``) applied.

:func:`compress` and :func:`decompress` convert between the dense matrix and that form on the
host (numpy); :func:`decompress` is also what the simulator applies to the registers.
"""

from __future__ import annotations

import functools

import numpy as np

from tilesim.errors import ModifierError
from tilesim.layouts.layout import Layout
from tilesim.matrix.dtypes import dtype
from tilesim.matrix.instruction import MatrixInstruction

__all__ = ["values_layout", "meta_layout", "compress", "decompress", "meta_codes", "outside_format",
           "OUTSIDE_FORMAT"]

# what tilesim says of a code the format does not have (it adds no meaning of its own to it)
OUTSIDE_FORMAT = ("the 2:4 format keeps positions idx0 < idx1 (6 of the 16 codes); no source states what the "
                  "instruction reads for another code, so tilesim does not guess it")


def _sparse(row: MatrixInstruction) -> None:
    if not row.sparse:
        raise ModifierError(f"{row.mnemonic} is not a sparse instruction (SMFMAC/SWMMAC); it has no compressed A")


@functools.lru_cache(maxsize=512)
def _values(row: MatrixInstruction, wave: int, mods: tuple[tuple[str, int], ...]) -> Layout:
    hw = row.layout("A", wave_size=wave, **dict(mods))
    rec = hw.location_array()  # one record per dense k; the 4 k of a group share one field
    first = rec[rec[:, 2] % 4 == 0]
    bits = dtype(row.types[0]).reg_bits
    b, r, g, vgpr, lane, lo = first[:, 0], first[:, 1], first[:, 2] // 4, first[:, 3], first[:, 4], first[:, 5]
    slot0 = (vgpr * 32 + lo) // bits
    hw_pos = np.concatenate([np.stack([lane, slot0], 1), np.stack([lane, slot0 + 1], 1)])
    logical = np.concatenate([np.stack([b, r, 2 * g], 1), np.stack([b, r, 2 * g + 1], 1)])
    nregs = row.registers_for(wave)["A"]
    return Layout.from_pairs({"lane": wave, "slot": nregs * 32 // bits},
                             {"block": row.blocks, "row": row.m, "col": row.k // 2}, hw_pos, logical, elem_bits=bits)


@functools.lru_cache(maxsize=512)
def _meta(row: MatrixInstruction, wave: int, mods: tuple[tuple[str, int], ...]) -> Layout:
    hw = row.layout("K", wave_size=wave, **dict(mods))
    rec = hw.location_array()
    first = rec[rec[:, 2] % 4 == 0]
    b, r, g, vgpr, lane, lo = first[:, 0], first[:, 1], first[:, 2] // 4, first[:, 3], first[:, 4], first[:, 5]
    nib = (vgpr * 32 + lo) // 4
    # two groups per metadata byte: group 2j must sit in the low nibble, 2j+1 in the high one, of one lane
    key = {(int(bb), int(rr), int(gg)): (int(ln), int(nb)) for bb, rr, gg, ln, nb in zip(b, r, g, lane, nib)}
    for (bb, rr, gg), (ln, nb) in key.items():
        pair = key.get((bb, rr, gg ^ 1))
        if nb % 2 != gg % 2 or pair != (ln, nb ^ 1):
            raise ModifierError(f"{row.mnemonic} wave{wave}: the index nibbles of groups {gg & ~1} and {gg | 1} of row "
                                f"{rr} do not share a byte; byte-packed metadata cannot feed it")
    even = g % 2 == 0
    return Layout.from_pairs({"lane": wave, "slot": 4}, {"block": row.blocks, "row": row.m, "col": row.k // 8},
                             np.stack([lane[even], nib[even] // 2], 1), np.stack([b[even], r[even], g[even] // 2], 1),
                             elem_bits=8)


def _mods(row: MatrixInstruction, mods: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((k, int(v)) for k, v in mods.items() if k in ("cbsz", "abid", "opsel")))


def values_layout(row: MatrixInstruction, wave_size: int | None = None, **mods: int) -> Layout:
    """Where the compressed values ``(M, K/2)`` of a sparse A live in the A registers."""
    _sparse(row)
    return _values(row, row._wave(wave_size), _mods(row, mods))


def meta_layout(row: MatrixInstruction, wave_size: int | None = None, **mods: int) -> Layout:
    """Where the metadata bytes ``(M, K/8)`` live in the index VGPR (the index set picked by ``mods``)."""
    _sparse(row)
    return _meta(row, row._wave(wave_size), _mods(row, mods))


def compress(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense 2:4 ``(..., K)`` -> (values ``(..., K/2)`` float64, metadata ``uint8 (..., K/8)``).

    A group with fewer than two non-zeros keeps zeros at its lowest free positions; more than
    two non-zeros in a group raises :class:`ModifierError` naming the group.
    """
    a = np.asarray(dense, np.float64)
    if a.ndim < 1 or a.shape[-1] % 8:
        raise ModifierError(f"2:4 compression needs K a multiple of 8 (two groups per metadata byte); shape {a.shape}")
    g = a.reshape(*a.shape[:-1], -1, 4)
    nz = g != 0
    if (nz.sum(-1) > 2).any():
        bad = tuple(int(x) for x in np.argwhere(nz.sum(-1) > 2)[0])
        raise ModifierError(f"not 2:4 sparse: group {bad} (k {4 * bad[-1]}..{4 * bad[-1] + 3}) has more than 2 non-zeros")
    key = np.where(nz, 0, 4) + np.arange(4)  # non-zeros first, then zeros, each by position
    keep = np.sort(np.argsort(key, axis=-1)[..., :2], axis=-1)
    vals = np.take_along_axis(g, keep, -1).reshape(*a.shape[:-1], -1)
    code = (keep[..., 0] | (keep[..., 1] << 2)).astype(np.uint8)
    meta = (code[..., 0::2] | (code[..., 1::2] << 4)).astype(np.uint8)
    return vals, meta


def meta_codes(meta: np.ndarray) -> np.ndarray:
    """Metadata bytes ``(..., K/8)`` -> the 4-bit code of every group ``(..., K/4)``."""
    m = np.asarray(meta).astype(np.int64)
    return np.stack([m & 15, m >> 4], -1).reshape(*m.shape[:-1], -1)


def outside_format(codes: np.ndarray) -> np.ndarray:
    """bool mask of the 4-bit group codes (:func:`meta_codes`) that are not ``idx0 | idx1 << 2`` with
    ``idx0 < idx1`` (:data:`OUTSIDE_FORMAT`); a metadata byte never written is two such codes (0)."""
    c = np.asarray(codes, np.int64)
    return (c & 3) >= ((c >> 2) & 3)


def decompress(values: np.ndarray, meta: np.ndarray) -> np.ndarray:
    """Compressed ``(..., K/2)`` + metadata ``(..., K/8)`` -> the dense ``(..., K)`` the instruction multiplies.

    Kept element ``p`` of group ``g`` multiplies B row ``4g + idx_p``. A code outside the format
    (:func:`outside_format`) has no stated meaning: the simulator reports it (the verdict fails) and
    the ISA emulator refuses it; here two equal positions add both values into one k (``np.add.at``).
    """
    v = np.asarray(values, np.float64)
    codes = meta_codes(meta)
    if v.shape[:-1] != codes.shape[:-1] or v.shape[-1] != 2 * codes.shape[-1]:
        raise ModifierError(f"values {v.shape} and metadata {np.asarray(meta).shape} do not describe one 2:4 matrix "
                            "(values (..., K/2), metadata (..., K/8))")
    lead, groups = codes.shape[:-1], codes.shape[-1]
    out = np.zeros((*lead, groups, 4))
    vg = v.reshape(*lead, groups, 2)
    flat = out.reshape(-1, 4)
    rows = np.arange(flat.shape[0])
    for p in (0, 1):
        pos = ((codes >> (2 * p)) & 3).reshape(-1)
        np.add.at(flat, (rows, pos), vg[..., p].reshape(-1))
    return out.reshape(*lead, groups * 4)
