"""The tile simulator's ``mma``, ``mma_sparse`` and ``mma_scaled``: operands read through the instruction's layouts.

Every operand is read from its registers through the *instruction's* hardware layout (whatever
the program declared), so a wrong declaration gives the hardware's wrong answer. gfx950 f8f6f4
reads A and B in the formats CBSZ/BLGP name (``numerics.format_types``). ``mma_scaled`` also reads
the block-scale operands SA/SB through their layouts (the byte ``opsel_a``/``opsel_b`` selects),
as raw E8M0 bytes, and multiplies each 32-k block of A and B by its decoded scale before the dot
product — the catalog's model (``numerics.execute_scaled``). Sparse and multi-block forms read
their operands as :mod:`tilesim.wave.mma_forms` says.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tilesim.ir.core import Op
from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import dtype
from tilesim.matrix.numerics import apply_negation, check_neg, dot_exact, format_types, quantize, signed_types
from tilesim.matrix.scale import decode_scale
from tilesim.wave.codec import codec
from tilesim.wave.kernels import batched_dot
from tilesim.wave.mma_forms import dense_operands, operand_codecs, per_block, unblock

__all__ = ["run_mma"]

MMA_CHUNK = 1 << 18  # an mma runs its waves in chunks of about this many elements per operand tile (float64)


def _regs_for(sim: Any, v: Any, hw: Any, g0: int, g1: int) -> np.ndarray:
    regs = sim.regs[v.id][g0:g1]
    if regs.shape[-1] != hw.nregs:  # a declared fragment of another size: the hardware reads its registers
        fixed = np.zeros((g1 - g0, hw.lanes, hw.nregs), np.uint32)
        n = min(hw.nregs, regs.shape[-1])
        fixed[:, :, :n] = regs[:, :, :n]
        regs = fixed
    return regs


def run_mma(sim: Any, op: Op) -> None:
    """Execute an ``mma`` (args a, b, c), ``mma_sparse`` (a, b, c, index) or ``mma_scaled``
    (a, b, c, scale_a, scale_b) op on ``sim``."""
    scaled = op.kind == "mma_scaled"
    row = lookup(op.attr("instr"), sim.p.target)
    mods = dict(op.attr("modifiers") or ())
    neg, neg_hi = mods.get("neg", 0), mods.get("neg_hi", 0)
    check_neg(row, neg, neg_hi)
    fmt = format_types(row, mods.get("cbsz", 0), mods.get("blgp", 0))  # f8f6f4: CBSZ/BLGP formats
    dts, neg = signed_types(row, neg, fmt)  # iu8/iu4: NEG bit 0 = A signed, bit 1 = B signed
    types = [d.name for d in dts]
    lays, regs = row.operand_layouts(sim.L, mods), row.registers_for(sim.L)
    hws = operand_codecs(row, sim.L, mods, types, lays, regs)  # sparse and multi-block: tilesim/wave/mma_forms.py
    if scaled:  # scales are read as raw bytes (u8): decode_scale turns the E8M0 bits into factors, bit for bit
        hws.update({name: codec(lays[name], "u8", regs[name]) for name in row.scale_operands})
    hw_d = codec(lays["D"], row.types[3], regs["D"])
    td = dtype(row.types[3])
    # waves in chunks whose float64 tiles stay small (memory O(chunk), not O(waves)); every wave's
    # result depends on that wave alone, and the replication notes still name each operand's first bad copy
    per_wave = max(hws[n].rows * hws[n].cols for n in "ABC")
    step = max(1, MMA_CHUNK // max(1, per_wave))
    out = np.empty((sim.G, hw_d.lanes, hw_d.nregs), np.uint32)
    operands = dict(zip(hws, op.args))  # A, B, C (, index | SA, SB)
    bad_count = dict.fromkeys(operands, 0)
    first_bad: dict[str, tuple[int, int, int]] = {}
    for g0 in range(0, sim.G, step):
        g1 = min(sim.G, g0 + step)
        tiles = {}
        for name, v in operands.items():
            hw = hws[name]
            tile, bad = hw.tile(_regs_for(sim, v, hw, g0, g1))
            if bad.any():
                bad_count[name] += int(bad.sum())
                if name not in first_bad:
                    g, i, j = (int(x) for x in np.argwhere(bad)[0])
                    first_bad[name] = (g0 + g, i, j)
            tiles[name] = tile
        tiles = dense_operands(row, tiles)
        if neg or neg_hi:
            A, B, C = apply_negation(row, tiles["A"], tiles["B"], tiles["C"], neg, neg_hi)
        else:  # apply_negation without negation is a float64 copy
            A, B, C = (np.asarray(tiles[x], np.float64) for x in "ABC")
        if scaled:  # each block of k of A's rows and B's columns times its scale (exact: powers of two)
            sa, sb = row.scale("SA", sim.L), row.scale("SB", sim.L)
            fa = np.repeat(decode_scale(tiles["SA"].astype(np.int64), sa.fmt), sa.block, axis=-1)
            fb = np.repeat(decode_scale(tiles["SB"].astype(np.int64), sb.fmt), sb.block, axis=-2)
            with np.errstate(invalid="ignore"):
                A, B = A * fa, B * fb
        A, B, C = per_block(row, A, B, C)  # one product per block
        if td.kind in ("int", "uint"):
            D = np.einsum("gmk,gkn->gmn", A.astype(np.int64), B.astype(np.int64)) + C.astype(np.int64)
        elif sim.exact:
            D = np.stack([dot_exact(A[g], B[g], C[g], td.name) for g in range(g1 - g0)])
        else:
            D = batched_dot(A, B, C)
        D = unblock(row, D)
        if td.name not in ("f32", "i32"):  # for these, encoding a value already rounded gives the same bits
            D = quantize(D, td.name)
        out[g0:g1] = hw_d.from_tile(D)  # registers as the hardware writes D
    for name in operands:
        if bad_count[name]:
            sim.rep.replication_count += bad_count[name]
            g, i, j = first_bad[name]
            lanes = sorted({int(r[4]) for r in hws[name].rec if r[1] == i and r[2] == j})
            sim._note(sim.rep.replication, f"{row.mnemonic} {name}[{i}][{j}]: copies in lanes {lanes} differ "
                      f"({sim._where(g)}); the hardware may read any copy")
    sim.set_frag(op.out, out)
