"""The simulator's ``mma``, ``mma_sparse`` and ``mma_scaled`` ops: operands read through the
*instruction's* hardware layouts.

Whatever layout the program declared, the instruction reads its registers through its own
layout, so a wrong declaration gives exactly the hardware's wrong answer; disagreeing replicas
(RDNA3 A/B lanes 16-31 vs 0-15) are reported. Numerics: inputs as the registers hold them,
products and sum in float64, one rounding to the accumulator type (``exact``: the catalog's exact
rational model). Sparse and multi-block rows read their operands as `tilesim/wave/mma_forms.py` says.
gfx950 f8f6f4 reads A and B in the formats CBSZ/BLGP name (``numerics.format_types``);
``mma_scaled`` also reads the block-scale operands SA/SB through their layouts (the byte
``opsel_a``/``opsel_b`` selects) as raw bytes, decodes them in the format ``a_scale_fmt``/``b_scale_fmt``
name (E8M0; gfx1250 also E5M3, E4M3) and multiplies each block of k of A and B by its scale before
the dot product (``numerics.execute_scaled``'s model).

Fast path (f16/bf16/fp8 operands, f32 accumulator, no modifiers, not exact): one compiled step
(:func:`tilesim.wave.kernels.mma_step`) reads A and B straight from their register slots and
the accumulator from the previous step's float32 tile (:class:`tilesim.wave.images.TileImage`),
doing the same float64 operations in the same order; a NaN result or anything it does not cover
takes the general path, which the fast path is tested against bit for bit.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import decode, dtype
from tilesim.matrix.instruction import SCALE_FORMAT_MODIFIERS, MatrixInstruction
from tilesim.matrix.numerics import apply_negation, check_neg, dot_exact, format_types, quantize, signed_types
from tilesim.matrix.scale import decode_scale
from tilesim.matrix.sparse import OUTSIDE_FORMAT, meta_codes, outside_format
from tilesim.wave.codec import Codec, codec
from tilesim.wave.images import TileImage, WindowImage
from tilesim.wave.kernels import batched_dot, mma_step
from tilesim.wave.mma_forms import dense_operands, operand_codecs, per_block, unblock

__all__ = ["MmaHost", "fast_spec", "run_mma"]

MMA_CHUNK = 1 << 18  # the general path runs its waves in chunks of about this many elements per operand tile


class MmaHost(Protocol):
    """What the mma reads and writes of the simulator (tilesim/wave/sim.py)."""

    p: Any
    exact: bool
    G: int
    L: int
    regs: Any  # images.Registers
    rep: Any

    def set_frag(self, v: Any, regs: Any) -> None: ...
    def _note(self, lst: list[str], msg: str) -> None: ...
    def _where(self, g: int) -> str: ...


@dataclass(frozen=True)
class _Spec:
    row: MatrixInstruction
    neg: int
    neg_hi: int
    hws: dict[str, Codec]
    hw_d: Codec
    td: Any
    fast: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int] | None  # idx_a, lut_a, idx_b, lut_b, k


@functools.lru_cache(maxsize=16)
def _lut(dt_name: str, width: int) -> np.ndarray:
    lut = decode(np.arange(1 << width, dtype=np.dtype(f"uint{width}")), dt_name)
    lut.setflags(write=False)
    return lut


def _prim_index(hw: Codec) -> np.ndarray:
    """Slot of each logical element's first owner in the slot view, -1 where no lane owns it (reads 0)."""
    owned, prim_slot = hw._tile_plan[0], hw._tile_plan[1]
    return np.where(owned, prim_slot, -1).astype(np.int64)


@functools.lru_cache(maxsize=256)
def _spec(instr: str, target: str, L: int, mods_key: tuple, scaled: bool = False) -> _Spec:
    row = lookup(instr, target)
    mods = dict(mods_key)
    neg, neg_hi = mods.get("neg", 0), mods.get("neg_hi", 0)
    check_neg(row, neg, neg_hi)
    fmt = format_types(row, mods.get("cbsz", 0), mods.get("blgp", 0))  # f8f6f4: CBSZ/BLGP formats
    dts, neg = signed_types(row, neg, fmt)  # iu8/iu4: NEG bit 0 = A signed, bit 1 = B signed
    types = [d.name for d in dts]
    lays, regs = row.operand_layouts(L, mods), row.registers_for(L)
    hws = operand_codecs(row, L, mods, types, lays, regs)  # sparse and multi-block: tilesim/wave/mma_forms.py
    if scaled:  # scales are read as raw bytes (u8): decode_scale turns the E8M0 bits into factors, bit for bit
        hws.update({name: codec(lays[name], "u8", regs[name]) for name in row.scale_operands})
    hw_d = codec(lays["D"], row.types[3], regs["D"])
    td = dtype(row.types[3])
    fast = None
    a, b, c = hws["A"], hws["B"], hws["C"]
    if (not scaled and not neg and not neg_hi and td.name == "f32" and c.dt.name == "f32" and not row.sparse and row.blocks == 1
            and all(x.dt.kind == "float" and x.width in (8, 16) and x.slots is not None for x in (a, b))
            and c.slots is not None and c._slot_plan[1] is not None and (c.primary >= 0).all()
            and np.array_equal(c.rec, hw_d.rec) and c.nregs == hw_d.nregs
            and a.cols == b.rows and (a.rows, b.cols) == (c.rows, c.cols)):
        fast = (_prim_index(a), _lut(a.dt.name, a.width), _prim_index(b), _lut(b.dt.name, b.width), a.cols)
    return _Spec(row, neg, neg_hi, hws, hw_d, td, fast)


def fast_spec(sim: MmaHost, op: Any) -> _Spec | None:
    """The spec of ``op`` when it may take the fast path (``spec.fast``: f32-accumulating, 8/16-bit
    float operands, no modifiers), else None: what a fused loop that chains the steps requires."""
    if op.kind != "mma" or sim.exact:
        return None
    spec = _spec(op.attr("instr"), sim.p.target, sim.L, tuple(sorted(dict(op.attr("modifiers") or ()).items())))
    return spec if spec.fast is not None else None


def _note_bad(sim: MmaHost, spec: _Spec, bad_count: dict[str, int], first_bad: dict[str, tuple[int, int, int]]) -> None:
    for name in spec.hws:
        if bad_count[name]:
            sim.rep.replication_count += bad_count[name]
            g, i, j = first_bad[name]
            lanes = sorted({int(r[4]) for r in spec.hws[name].rec if r[1] == i and r[2] == j})
            sim._note(sim.rep.replication, f"{spec.row.mnemonic} {name}[{i}][{j}]: copies in lanes {lanes} differ "
                      f"({sim._where(g)}); the hardware may read any copy")


def _note_index(sim: MmaHost, row: MatrixInstruction, index: np.ndarray, g0: int) -> None:
    """Count the sparse index codes outside the 2:4 format (no stated meaning: tilesim.matrix.sparse)."""
    codes = meta_codes(np.asarray(index, np.int64))
    bad = outside_format(codes)
    if bad.any():
        sim.rep.sparse_index_count += int(bad.sum())
        g, i, grp = (int(x) for x in np.argwhere(bad)[0])
        code = int(codes[g, i, grp])
        sim._note(sim.rep.sparse_index, f"{row.mnemonic} index of A row {i}, group {grp}: code {code:#06b} "
                  f"({sim._where(g0 + g)}); " + OUTSIDE_FORMAT)


def _count(name: str, bad: np.ndarray, g0: int, bad_count: dict[str, int],
           first_bad: dict[str, tuple[int, int, int]]) -> None:
    if bad.any():
        bad_count[name] += int(bad.sum())
        if name not in first_bad:
            g, i, j = (int(x) for x in np.argwhere(bad)[0])
            first_bad[name] = (g0 + g, i, j)


def _operand(sim: MmaHost, v: Any, hw: Codec, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(flat bits, per-wave base, per-element index) the step kernel reads an operand through: the
    tensor's bits for a load not yet gathered, else the register image's slots; None when the image
    has another register count (the general path pads it)."""
    raw = sim.regs.raw(v.id)
    if (isinstance(raw, WindowImage) and raw._image is None and raw.codec.width == hw.width
            and (raw.codec.lanes, raw.codec.nregs) == (hw.lanes, hw.nregs)):
        return raw.bits, raw.base.astype(np.int64, copy=False), np.where(idx >= 0, raw.off[np.maximum(idx, 0)], -1)
    img = sim.regs[v.id]
    if img.shape[-1] != hw.nregs:
        return None
    flat = hw.slot_view(img).reshape(img.shape[0], -1)
    return flat.reshape(-1), np.arange(img.shape[0], dtype=np.int64) * flat.shape[1], idx


def _fast(sim: MmaHost, op: Any, spec: _Spec) -> bool:
    """The fast path; False (nothing changed) when it does not apply."""
    a_v, b_v, c_v = op.args
    assert spec.fast is not None
    idx_a, lut_a, idx_b, lut_b, k = spec.fast
    ha, hb, hc = spec.hws["A"], spec.hws["B"], spec.hws["C"]
    rc = sim.regs.raw(c_v.id)
    bad_c = None
    if isinstance(rc, TileImage) and rc.tile is not None and rc.zero:
        c32 = np.zeros((sim.G, hc.rows, hc.cols), np.float32)  # all-zero registers read as +0.0 in any layout
    elif isinstance(rc, TileImage) and rc.codec is spec.hw_d and rc.tile is not None:
        c32 = rc.tile
    else:
        rc = sim.regs[c_v.id]
        if rc.shape[-1] != hc.nregs:
            return False
        vals, bad_c = hc.tile(rc)
        with np.errstate(over="ignore", invalid="ignore"):
            c32 = vals.astype(np.float32)  # decoded f32 values: exact
    a = _operand(sim, a_v, ha, idx_a)
    b = _operand(sim, b_v, hb, idx_b)
    if a is None or b is None:
        return False
    d = mma_step(*a, lut_a, *b, lut_b, c32, k)
    del a, b
    if d is None:
        return False
    bad_count = dict.fromkeys(spec.hws, 0)
    first_bad: dict[str, tuple[int, int, int]] = {}
    for name, hw, v in (("A", ha, a_v), ("B", hb, b_v)):
        if hw._tile_plan[2].size:  # replicated operand: compare the copies as the general path does
            _count(name, hw.tile(sim.regs[v.id])[1], 0, bad_count, first_bad)
    if bad_c is not None:
        _count("C", bad_c, 0, bad_count, first_bad)
    _note_bad(sim, spec, bad_count, first_bad)
    sim.set_frag(op.out, TileImage(spec.hw_d, d))
    return True


def run_mma(sim: MmaHost, op: Any) -> None:
    mods = op.attr("modifiers") or ()
    scaled = op.kind == "mma_scaled"
    spec = _spec(op.attr("instr"), sim.p.target, sim.L, tuple(sorted(dict(mods).items())), scaled)
    if spec.fast is not None and not sim.exact and not os.environ.get("TILESIM_NO_FUSE") and _fast(sim, op, spec):
        return
    hws, hw_d, td, row = spec.hws, spec.hw_d, spec.td, spec.row
    # waves in chunks whose float64 tiles stay small (memory O(chunk), not O(waves)); every wave's
    # result depends on that wave alone, and the replication notes still name each operand's first bad copy
    per_wave = max(hws[n].rows * hws[n].cols for n in "ABC")
    step = max(1, MMA_CHUNK // max(1, per_wave))
    out = np.empty((sim.G, hw_d.lanes, hw_d.nregs), np.uint32)
    bad_count = dict.fromkeys(hws, 0)
    first_bad: dict[str, tuple[int, int, int]] = {}
    images = {name: sim.regs[v.id] for name, v in zip(hws, op.args)}  # A, B, C (, index | SA, SB)
    for g0 in range(0, sim.G, step):
        g1 = min(sim.G, g0 + step)
        tiles = {}
        for name in hws:
            hw = hws[name]
            regs = images[name][g0:g1]
            if regs.shape[-1] != hw.nregs:  # a declared fragment of another size: the hardware reads its registers
                fixed = np.zeros((g1 - g0, hw.lanes, hw.nregs), np.uint32)
                n = min(hw.nregs, regs.shape[-1])
                fixed[:, :, :n] = regs[:, :, :n]
                regs = fixed
            tile, bad = hw.tile(regs)
            _count(name, bad, g0, bad_count, first_bad)
            tiles[name] = tile
        if row.sparse:
            _note_index(sim, row, tiles["index"], g0)
        tiles = dense_operands(row, tiles)
        if spec.neg or spec.neg_hi:
            A, B, C = apply_negation(row, tiles["A"], tiles["B"], tiles["C"], spec.neg, spec.neg_hi)
        else:  # apply_negation without negation is a float64 copy
            A, B, C = (np.asarray(tiles[x], np.float64) for x in "ABC")
        if scaled:  # each block of k of A's rows and B's columns times its scale, decoded in the format
            # a_scale_fmt/b_scale_fmt select (E8M0 unless gfx1250 says E5M3/E4M3; exact: <= 4-bit significands)
            sa, sb = (row.scale(x, sim.L).in_format(dict(mods).get(SCALE_FORMAT_MODIFIERS[x], 0)) for x in ("SA", "SB"))
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
    _note_bad(sim, spec, bad_count, first_bad)
    sim.set_frag(op.out, out)
