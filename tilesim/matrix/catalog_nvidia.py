"""NVIDIA ``mma.sync`` rows (sm_80+), fragments as the PTX ISA states them.

PTX ISA 8.x §9.7.14.5 ("Matrix Fragments for mma.m16n8k*"), figures "MMA .m16n8k16 fragment
layout for matrix A" etc. In every figure ``groupID = laneid >> 2`` and
``threadID_in_group = laneid % 4``; fragment element ``i`` of a thread is our ``slot``.
The formulas below are the figures' row/col expressions, hardware -> logical.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tilesim.errors import ModifierError
from tilesim.layouts.layout import Layout
from tilesim.targets import feature_targets, get_target
from tilesim.matrix.dtypes import dtype
from tilesim.matrix.instruction import Builtin, MatrixInstruction

__all__ = ["NVIDIA_ROWS", "mma_sync_asm"]

_PTX = "PTX ISA 8.5 §9.7.14.5.{sec} (mma.{shape} fragment figures)"
# Which targets run a row is the target table's answer (its mma_sync features), never a list here.
_ALL_MMA = "mma_sync"
_FP8_MMA = "mma_sync_fp8"

Frag = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _g(lane: np.ndarray) -> np.ndarray:  # groupID
    return lane >> 2


def _t(lane: np.ndarray) -> np.ndarray:  # threadID_in_group
    return lane & 3


# Accumulator of every m16n8 shape: c_i at row groupID + 8*(i >= 2), col 2*tig + (i & 1).
def _acc16x8(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _g(lane) + 8 * (i >> 1), 2 * _t(lane) + (i & 1)


def _a_k16(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # 16-bit A, m16n8k16: a0..a7, row groupID + 8*((i>>1)&1), col 2*tig + (i&1) + 8*(i>>2)
    return _g(lane) + 8 * ((i >> 1) & 1), 2 * _t(lane) + (i & 1) + 8 * (i >> 2)


def _b_k16(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # 16-bit B, m16n8k16: b0..b3, row(k) 2*tig + (i&1) + 8*(i>>1), col groupID
    return 2 * _t(lane) + (i & 1) + 8 * (i >> 1), _g(lane)


def _a_k8_16b(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # 16-bit A, m16n8k8: a0..a3, row groupID + 8*(i>>1), col 2*tig + (i&1)
    return _g(lane) + 8 * (i >> 1), 2 * _t(lane) + (i & 1)


def _b_k8_16b(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # 16-bit B, m16n8k8: b0..b1, row(k) 2*tig + i, col groupID
    return 2 * _t(lane) + i, _g(lane)


def _a_tf32(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # tf32 A, m16n8k8: a0..a3, row groupID + 8*(i&1), col tig + 4*(i>>1)
    return _g(lane) + 8 * (i & 1), _t(lane) + 4 * (i >> 1)


def _b_tf32(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # tf32 B, m16n8k8: b0..b1, row(k) tig + 4*i, col groupID
    return _t(lane) + 4 * i, _g(lane)


def _a_k32_8b(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # 8-bit A, m16n8k32: a0..a15, row groupID + 8*((i>>2)&1), col 4*tig + (i&3) + 16*(i>>3)
    return _g(lane) + 8 * ((i >> 2) & 1), 4 * _t(lane) + (i & 3) + 16 * (i >> 3)


def _b_k32_8b(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # 8-bit B, m16n8k32: b0..b7, row(k) 4*tig + (i&3) + 16*(i>>2), col groupID
    return 4 * _t(lane) + (i & 3) + 16 * (i >> 2), _g(lane)


def _a_f64(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # f64 A, m8n8k4: a0, row groupID, col tig
    return _g(lane) + 0 * i, _t(lane) + 0 * i


def _b_f64(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # f64 B, m8n8k4: b0, row(k) tig, col groupID
    return _t(lane) + 0 * i, _g(lane) + 0 * i


def _c_f64(lane: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # f64 C/D, m8n8k4: c0..c1, row groupID, col 2*tig + i
    return _g(lane), 2 * _t(lane) + i


def _frag(frag: Frag, slots: int, rows: int, cols: int, bits: int) -> Callable[..., Layout]:
    def build(**_mods: int) -> Layout:
        def fn(lane: np.ndarray, slot: np.ndarray) -> dict[str, np.ndarray]:
            r, c = frag(lane, slot)
            return {"block": np.zeros_like(r), "row": r, "col": c}

        return Layout.from_function({"lane": 32, "slot": slots}, {"block": 1, "row": rows, "col": cols}, fn,
                                    elem_bits=bits)

    return build


def _mma(
    shape: str,
    atype: str,
    ctype: str,
    a: tuple[Frag, int],
    b: tuple[Frag, int],
    c: tuple[Frag, int],
    *,
    feature: str = _ALL_MMA,
    sec: str = "8",
    ptx_types: str,
    btype: str | None = None,
    c_regs: int | None = None,
) -> MatrixInstruction:
    m, n, k = (int(x) for x in shape[1:].replace("n", " ").replace("k", " ").split())
    btype = btype or atype
    ab, bb, cb = (dtype(t).reg_bits for t in (atype, btype, ctype))
    geo = (("A", _frag(a[0], a[1], m, k, ab)), ("B", _frag(b[0], b[1], k, n, bb)),
           ("C", _frag(c[0], c[1], m, n, cb)), ("D", _frag(c[0], c[1], m, n, cb)))

    regs = {op: -(-slots * dtype(t).reg_bits // 32) for op, slots, t in
            (("A", a[1], atype), ("B", b[1], btype), ("C", c[1], ctype), ("D", c[1], ctype))}
    mnemonic = f"mma.sync.aligned.{shape}.row.col.{ptx_types}"
    # mma.sync is the same on every later architecture, so one row serves them all; its family
    # is the first family (in the target table) that has the instruction.
    targets = feature_targets(feature)
    return MatrixInstruction(
        mnemonic=mnemonic,
        kind="mma_sync",
        family=get_target(targets[0]).family,
        targets=targets,
        m=m,
        n=n,
        k=k,
        blocks=1,
        types=(atype, btype, ctype, ctype),
        wave_sizes=(32,),
        geometry=((32, geo),),
        registers=((32, tuple(regs.items())),),
        cycles=None,
        modifiers=(),
        builtins=(Builtin(f"__tilesim_mma_{shape}_{ptx_types.replace('.', '_')}", "inline-ptx", (), 32),),
        citation=_PTX.format(sec=sec, shape=shape),
    )


NVIDIA_ROWS: list[MatrixInstruction] = [
    _mma("m16n8k16", "f16", "f32", (_a_k16, 8), (_b_k16, 4), (_acc16x8, 4), ptx_types="f32.f16.f16.f32"),
    _mma("m16n8k16", "f16", "f16", (_a_k16, 8), (_b_k16, 4), (_acc16x8, 4), ptx_types="f16.f16.f16.f16"),
    _mma("m16n8k16", "bf16", "f32", (_a_k16, 8), (_b_k16, 4), (_acc16x8, 4), ptx_types="f32.bf16.bf16.f32"),
    _mma("m16n8k8", "f16", "f32", (_a_k8_16b, 4), (_b_k8_16b, 2), (_acc16x8, 4), ptx_types="f32.f16.f16.f32"),
    _mma("m16n8k8", "bf16", "f32", (_a_k8_16b, 4), (_b_k8_16b, 2), (_acc16x8, 4), ptx_types="f32.bf16.bf16.f32"),
    _mma("m16n8k8", "tf32", "f32", (_a_tf32, 4), (_b_tf32, 2), (_acc16x8, 4), ptx_types="f32.tf32.tf32.f32"),
    _mma("m16n8k32", "i8", "i32", (_a_k32_8b, 16), (_b_k32_8b, 8), (_acc16x8, 4), ptx_types="s32.s8.s8.s32"),
    _mma("m16n8k32", "u8", "i32", (_a_k32_8b, 16), (_b_k32_8b, 8), (_acc16x8, 4), ptx_types="s32.u8.u8.s32"),
    _mma("m8n8k4", "f64", "f64", (_a_f64, 1), (_b_f64, 1), (_c_f64, 2), ptx_types="f64.f64.f64.f64"),
    _mma("m16n8k32", "fp8_ocp", "f32", (_a_k32_8b, 16), (_b_k32_8b, 8), (_acc16x8, 4), feature=_FP8_MMA,
         ptx_types="f32.e4m3.e4m3.f32"),
    _mma("m16n8k32", "bf8_ocp", "f32", (_a_k32_8b, 16), (_b_k32_8b, 8), (_acc16x8, 4), feature=_FP8_MMA,
         ptx_types="f32.e5m2.e5m2.f32"),
]


def mma_sync_asm(row: MatrixInstruction, d: str, a: str, b: str, c: str) -> tuple[str, str, str]:
    """The inline PTX of one ``mma.sync`` row: (quoted instruction, output operands, input operands)
    of an ``asm volatile`` statement, for C register arrays named ``d``, ``a``, ``b``, ``c``.

    One template for the code generator and the hardware probe. Registers are 32-bit (``"r"``);
    f64 fragments pass 64-bit registers (``"l"``), half as many.
    """
    if row.kind != "mma_sync":
        raise ModifierError(f"{row.mnemonic} is not an mma.sync row")
    regs = row.registers_for(32)
    wide = row.types[0] == "f64"
    na, nb, nc = (regs[o] // (2 if wide else 1) for o in "ABC")
    cons = "l" if wide else "r"
    groups, o = [], 0
    for n in (nc, na, nb, nc):
        groups.append("{" + ", ".join(f"%{o + i}" for i in range(n)) + "}")
        o += n
    text = f'"{row.mnemonic} {groups[0]}, {groups[1]}, {groups[2]}, {groups[3]};"'
    outs = ", ".join(f'"={cons}"({d}[{i}])' for i in range(nc))
    ins = ", ".join([f'"{cons}"({a}[{i}])' for i in range(na)] + [f'"{cons}"({b}[{i}])' for i in range(nb)]
                    + [f'"{cons}"({c}[{i}])' for i in range(nc)])
    return text, outs, ins
