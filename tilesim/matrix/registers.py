"""Register images: pack matrices into ``uint32[lane, vgpr]``, read them back as an instruction does.

* :func:`pack` writes a logical operand into the registers a program would load it into: every
  copy of a replicated element gets the value; data-moving read modifiers (CBSZ/ABID broadcast,
  BLGP lane patterns) are *not* applied, since they change what the instruction reads, not what
  the registers hold.
* :func:`unpack` reads an operand through the instruction's hardware layout, modifiers included,
  exactly as the hardware reads it — so registers packed for another layout give exactly the
  hardware's wrong answer. Replicas that disagree are reported.
* :func:`execute_registers` = unpack A, B, C (and sparse indices) → :func:`execute_logical` → pack D.

Structured sparsity (SMFMAC/SWMMAC): the logical A is the dense ``M x K`` matrix with at most two
non-zeros in each aligned group of four k; registers hold the two kept values per group and the
index operand ``K`` holds their 2-bit positions (``idx0 < idx1``), 4 bits per group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.errors import ModifierError
from tilesim.matrix.dtypes import DType, decode, dtype, encode
from tilesim.matrix.geometry import FormatGeometry
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.matrix.numerics import execute_logical
from tilesim.matrix.sparse import OUTSIDE_FORMAT, outside_format

__all__ = ["pack", "unpack", "execute_registers", "compress_sparse", "Unpacked"]

_HOLD = ("format", "half_select", "index_set")  # modifiers that also decide where registers hold data


@dataclass(frozen=True)
class Unpacked:
    values: np.ndarray  # (blocks, rows, cols) logical values
    disagreements: list[tuple[int, int, int]]  # elements whose replicas hold different bits


def _operand_type(ins: MatrixInstruction, op: str, mods: dict[str, int]) -> DType:
    if op in "AB":
        recipe = ins.recipe(op, ins.wave_sizes[0])
        if isinstance(recipe, FormatGeometry):
            return dtype(recipe.dtype(mods.get(recipe.modifier, 0)))
    return dtype(ins.types["ABCD".index(op)])


def _shape(ins: MatrixInstruction, op: str) -> tuple[int, int, int]:
    return {"A": (ins.blocks, ins.m, ins.k), "B": (ins.blocks, ins.k, ins.n), "C": (ins.blocks, ins.m, ins.n),
            "D": (ins.blocks, ins.m, ins.n), "K": (ins.blocks, ins.m, ins.k)}[op]


def _bit_fields(regs: np.ndarray, lane: np.ndarray, vgpr: np.ndarray, lo: np.ndarray, width: int) -> np.ndarray:
    r = np.concatenate([regs.astype(np.uint64), np.zeros((regs.shape[0], 2), np.uint64)], 1)
    word = r[lane, vgpr] | (r[lane, vgpr + 1] << np.uint64(32))
    if width == 64:
        return word
    return (word >> lo.astype(np.uint64)) & np.uint64((1 << width) - 1)


def _write_fields(regs: np.ndarray, lane: np.ndarray, vgpr: np.ndarray, lo: np.ndarray, width: int,
                  bits: np.ndarray) -> None:
    """OR ``bits`` (``width`` wide, at bit ``lo`` of register ``vgpr``) into a zeroed image.

    Several elements share a register, so the writes accumulate with ``bitwise_or.at``; an
    element may straddle two registers (f6) or span two (f64).
    """
    bits = bits.astype(np.uint64)
    start = vgpr.astype(np.int64) * 32 + lo.astype(np.int64)  # absolute bit offset in the lane's tuple
    for part in range(-(-(width + 31) // 32) + 1):
        reg = start // 32 + part
        shift = (start % 32) - 32 * part  # where the element's bit 0 lands in this register
        ok = (shift > -width) & (shift < 32) & (reg < regs.shape[1])
        if not ok.any():
            continue
        s = shift[ok]
        chunk = np.where(s >= 0, bits[ok] << np.maximum(s, 0).astype(np.uint64),
                         bits[ok] >> np.maximum(-s, 0).astype(np.uint64)) & np.uint64(0xFFFFFFFF)
        np.bitwise_or.at(regs, (lane[ok], reg[ok]), chunk.astype(np.uint32))


def _hold_mods(ins: MatrixInstruction, mods: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in mods.items() if (m := ins.modifier(k)) is not None and m.kind in _HOLD}


def compress_sparse(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense 4:2 A ``(..., K)`` -> kept values ``(..., K/2)`` and 2-bit indices ``(..., K/2)``.

    Groups with fewer than two non-zeros keep zeros at the lowest free positions; more than two
    non-zeros in a group is not 4:2 sparse and raises ``ModifierError``.
    """
    g = np.asarray(a, np.float64).reshape(*a.shape[:-1], -1, 4)
    nz = g != 0
    if (nz.sum(-1) > 2).any():
        bad = np.argwhere(nz.sum(-1) > 2)[0]
        raise ModifierError(f"A is not 4:2 sparse: group {tuple(int(x) for x in bad)} has more than 2 non-zeros")
    # order positions: non-zeros first (by position), then zeros (by position); keep the first two, sorted
    key = np.where(nz, 0, 4) + np.arange(4)
    keep = np.sort(np.argsort(key, axis=-1)[..., :2], axis=-1)
    vals = np.take_along_axis(g, keep, -1)
    return vals.reshape(*a.shape[:-1], -1), keep.reshape(*a.shape[:-1], -1)


def pack(ins: MatrixInstruction, op: str, values: np.ndarray, *, wave_size: int | None = None,
         **mods: int) -> np.ndarray:
    """The ``uint32[lanes, vgprs]`` register image holding logical operand ``op`` = ``values``."""
    wave = ins._wave(wave_size)
    hold = _hold_mods(ins, mods)
    lay = ins.layout(op, wave_size=wave, **hold)
    nregs = ins.registers_for(wave)[op]
    lanes = dict(lay.in_dims)["lane"]
    regs = np.zeros((lanes, nregs), np.uint32)
    shape = _shape(ins, op)
    vals = np.asarray(values)
    if shape[0] == 1 and vals.shape == shape[1:]:
        vals = vals[None]
    if vals.shape != shape:
        raise ModifierError(f"{op} of {ins.mnemonic} has shape {shape[1:]}" + (f" x {shape[0]} blocks" if shape[0] > 1 else "")
                            + f"; got {np.asarray(values).shape}")
    rec = lay.location_array()
    b, r, c, v, ln, lo = (rec[:, i] for i in range(6))
    if ins.sparse and op in "AK":
        kept, idx = compress_sparse(vals)  # per (block, row, group): two values, two positions
        grp = c // 4
        first = (c % 4) == 0  # one record per group: the group's first k
        b, r, grp, v, ln, lo = (x[first] for x in (b, r, grp, v, ln, lo))
        if op == "A":
            t = dtype(ins.types[0])
            half = t.reg_bits
            for part in (0, 1):
                bits = encode(kept[b, r, 2 * grp + part], t)
                _write_fields(regs, ln, v, lo + part * half, half, bits)
        else:
            bits = (idx[b, r, 2 * grp] | (idx[b, r, 2 * grp + 1] << 2)).astype(np.uint64)
            _write_fields(regs, ln, v, lo, 4, bits)
        return regs
    t = _operand_type(ins, op, mods)
    bits = encode(vals[b, r, c], t)
    _write_fields(regs, ln, v, lo, lay.elem_bits or t.reg_bits, bits)
    return regs


def unpack(ins: MatrixInstruction, op: str, regs: np.ndarray, *, wave_size: int | None = None,
           k_regs: np.ndarray | None = None, **mods: int) -> Unpacked:
    """Read operand ``op`` from a register image through the instruction's layout (modifiers applied)."""
    wave = ins._wave(wave_size)
    lay = ins.layout(op, wave_size=wave, **mods)
    regs = np.asarray(regs, np.uint32)
    rec = lay.location_array()
    b, r, c, v, ln, lo, hi = (rec[:, i] for i in range(7))
    shape = _shape(ins, op)
    out = np.zeros(shape, np.float64)
    width = int(hi[0] - lo[0] + 1)
    fields = _bit_fields(regs, ln, v, lo, width)
    if ins.sparse and op == "A":
        if k_regs is None:
            raise ModifierError(f"{ins.mnemonic} is sparse: unpacking A needs the index registers (k_regs)")
        klay = ins.layout("K", wave_size=wave, **mods)
        krec = klay.location_array()
        kf = _bit_fields(np.asarray(k_regs, np.uint32), krec[:, 4], krec[:, 3], krec[:, 5], 4)
        idx = np.zeros(shape, np.int64)
        idx[krec[:, 0], krec[:, 1], krec[:, 2]] = kf.astype(np.int64)
        bad = outside_format(kf)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ModifierError(f"{ins.mnemonic}: index code {int(kf[i]):#06b} of A row {int(krec[i, 1])}, group "
                                f"{int(krec[i, 2])} (lane {int(krec[i, 4])}, {int(bad.sum())} such codes): "
                                + OUTSIDE_FORMAT)
        t = dtype(ins.types[0])
        half = t.reg_bits
        first = (c % 4) == 0
        for part in (0, 1):
            val = decode((fields[first] >> np.uint64(part * half)) & np.uint64((1 << half) - 1), t)
            pos = (idx[b[first], r[first], c[first]] >> (2 * part)) & 3
            np.add.at(out, (b[first], r[first], c[first] + pos), val)  # equal positions: both products count
        return Unpacked(out, [])
    t = _operand_type(ins, op, mods)
    vals = decode(fields, t)
    flat = (b * shape[1] + r) * shape[2] + c
    order = np.argsort(flat, kind="stable")
    first = np.ones(order.size, bool)
    first[1:] = flat[order][1:] != flat[order][:-1]
    sel = order[first]
    out[b[sel], r[sel], c[sel]] = vals[sel]
    # replicas must hold the same bits (RDNA3 A/B in lanes i and i+16)
    base = np.repeat(fields[sel], np.diff(np.append(np.flatnonzero(first), order.size)))
    bad = order[fields[order] != base]
    disagree = sorted({(int(b[i]), int(r[i]), int(c[i])) for i in bad})
    return Unpacked(out, disagree)


def execute_registers(ins: MatrixInstruction, a: np.ndarray, b: np.ndarray, c: np.ndarray, *,
                      k: np.ndarray | None = None, wave_size: int | None = None, neg: int = 0, neg_hi: int = 0,
                      **mods: int) -> np.ndarray:
    """Run the instruction on register images; returns the D register image."""
    wave = ins._wave(wave_size)
    A = unpack(ins, "A", a, wave_size=wave, k_regs=k, **mods).values
    B = unpack(ins, "B", b, wave_size=wave, **mods).values
    C = unpack(ins, "C", c, wave_size=wave, **mods).values
    types = (_operand_type(ins, "A", mods).name, _operand_type(ins, "B", mods).name, ins.types[2], ins.types[3])
    D = execute_logical(ins, A, B, C, types=types, neg=neg, neg_hi=neg_hi)
    return pack(ins, "D", np.asarray(D).reshape(_shape(ins, "D")), wave_size=wave,
                **{k2: v for k2, v in mods.items() if k2 == "opsel"})
