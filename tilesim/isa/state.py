"""Machine state of every wave of a launch at once, and operand access.

All waves of the grid are emulated together: SGPRs are ``uint32[128, waves]`` indexed by the
hardware's scalar operand numbers (s0-s105, VCC 106-107, TTMP 108-123, M0 124, NULL 125, EXEC
126-127), VGPRs ``uint32[vgprs, waves, lanes]``, SCC ``bool[waves]``. An instruction runs for the
waves selected by the scheduler (``sel``) and, for vector work, the lanes EXEC enables — one numpy
operation over all of them, never a loop over lanes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tilesim.isa.asm import Imm, Instr, IsaError, Reg

__all__ = ["Machine", "Ctx", "imm_bits", "where"]

VCC, M0, NULL, EXEC = 106, 124, 125, 126
_U32 = np.uint32
_U64 = np.uint64


def where(ins: Instr, target: str) -> str:
    return f"{ins.mnemonic} ({target}, line {ins.line})"


@dataclass
class Ctx:
    """What compiling one instruction needs: the target and the wave size."""

    target: str
    wave: int
    labels: dict[str, int] = field(default_factory=dict)
    index: int = 0  # the instruction being compiled (its position in the program)
    program: tuple = ()

    def err(self, ins: Instr, msg: str) -> IsaError:
        return IsaError(f"{where(ins, self.target)}: {msg} — `{ins.text}`")


def imm_bits(op: Imm, kind: str, ctx: Ctx, ins: Instr) -> int:
    """The bits an immediate operand supplies to an operand of ``kind`` (b16/f16/b32/f32/b64/f64).

    Inline float constants take the operand's own format (``1.0`` is 0x3c00 for f16, 0x3f800000
    for f32); integer inline constants (-16..64) are sign-extended; a 32-bit literal is refused on
    64-bit operands where the ISA's extension rule (zero- vs sign- vs high-half) would decide."""
    bits = {"b16": 16, "f16": 16, "bf16": 16, "b32": 32, "f32": 32, "b64": 64, "f64": 64}[kind]
    v = op.value
    if isinstance(v, float):
        if kind in ("f16", "b16"):
            out = int(np.float16(v).view(np.uint16))
        elif kind in ("f64", "b64"):
            out = int(np.float64(v).view(np.uint64))
        elif kind == "bf16":
            raise ctx.err(ins, "a float constant on a bf16 operand is not modelled")
        else:
            out = int(np.float32(v).view(np.uint32))
            if float(np.float32(v)) != v and abs(v - 0.15915494) > 1e-8:
                raise ctx.err(ins, f"float constant {op.text} is not exact in f32")
    else:
        inline = -16 <= v <= 64
        if bits == 64 and not inline and not (0 <= v < 2**31):
            raise ctx.err(ins, f"literal {op.text} on a 64-bit operand (extension rule not modelled)")
        if kind == "f64" and not inline:
            raise ctx.err(ins, f"literal {op.text} on an f64 operand (the ISA puts it in the high half)")
        out = v & ((1 << bits) - 1)
    if op.neg or op.abs:
        raise ctx.err(ins, "neg/abs on an immediate is not modelled")
    return out


UNSET_VGPR = 0x7FC07E00  # f32 quiet NaN; its f16 halves 0x7FC0 and 0x7E00 are NaNs too


class Machine:
    """Registers, LDS and memory of all waves of one launch."""

    def __init__(self, *, target: str, wave: int, waves: int, vgprs: int, agprs: int = 0) -> None:
        self.target, self.L, self.W = target, wave, waves
        self.s = np.zeros((128, waves), _U32)
        # VGPRs (and AGPRs) start as a NaN in f32 and in both f16 halves, not zeros: the hardware's hold what
        # the last wave left, and code reading one it never wrote (a WMMA accumulator never zeroed) got the
        # right answer from zeros; a NaN shows in the result (the launch writes the registers it preloads)
        self.v = np.full((max(vgprs, 1) + agprs, waves, wave), UNSET_VGPR, _U32)
        self.agpr_base = max(vgprs, 1)
        self.scc = np.zeros(waves, bool)
        self.lanes = np.arange(wave, dtype=_U64)
        self.executed = 0  # wave-instructions
        # set by the launch: memory (tilesim.isa.memory.Heap/Lds), scratch bytes, each wave's workgroup,
        # slot within it and barrier epoch, and notes (replicas that disagree …)
        self.heap: object = None
        self.lds: object = None
        self.scratch: np.ndarray | None = None
        self.group = np.zeros(waves, np.int64)
        self.slot = np.arange(waves)
        self.epoch = np.zeros(waves, np.int32)
        self.notes: list[str] = []
        self.symbols: dict[str, int] = {}  # data object -> emulated address
        self.mma_hook: object = None  # called at every matrix instruction (tilesim.isa.audit)
        self.hazards: object = None  # tilesim.isa.hazards.Hazards: loads in flight, missing waits

    # ------------------------------------------------------------------ lane masks
    def mask_of(self, bits: np.ndarray) -> np.ndarray:
        """``bool[waves, lanes]`` from per-wave lane-mask bits (uint32 or uint64)."""
        return ((bits.astype(_U64)[:, None] >> self.lanes) & _U64(1)).astype(bool)

    def bits_of(self, mask: np.ndarray) -> np.ndarray:
        """Per-wave lane-mask bits (uint64) from ``bool[waves, lanes]``."""
        return (mask.astype(_U64) << self.lanes).sum(axis=1, dtype=_U64)

    def exec_bits(self) -> np.ndarray:
        lo = self.s[EXEC].astype(_U64)
        return lo if self.L == 32 else lo | (self.s[EXEC + 1].astype(_U64) << _U64(32))

    def exec_mask(self) -> np.ndarray:
        return self.mask_of(self.exec_bits())

    def active(self, sel: np.ndarray) -> np.ndarray:
        return self.exec_mask() & sel[:, None]

    # ------------------------------------------------------------------ scalar registers
    def sreg_index(self, r: Reg, ctx: Ctx, ins: Instr) -> int:
        if r.file != "s":
            raise ctx.err(ins, f"expected a scalar register, got {r.file}{r.index}")
        if r.neg or r.abs or r.half:
            raise ctx.err(ins, "modifiers on a scalar operand are not modelled")
        return r.index

    def read_s(self, i: int, count: int) -> np.ndarray:
        """uint32[waves] for one SGPR, uint64[waves] for a pair (NULL reads 0)."""
        if i == NULL:
            return np.zeros(self.W, _U32 if count == 1 else _U64)
        if count == 1:
            return self.s[i]
        return self.s[i].astype(_U64) | (self.s[i + 1].astype(_U64) << _U64(32))

    def write_s(self, i: int, count: int, val: np.ndarray, sel: np.ndarray) -> None:
        if i == NULL:
            return
        val = np.asarray(val)
        if count == 1:
            self.s[i] = np.where(sel, val.astype(_U32) if val.dtype != _U32 else val, self.s[i])
        else:
            v64 = val.astype(_U64)
            self.s[i] = np.where(sel, (v64 & _U64(0xFFFFFFFF)).astype(_U32), self.s[i])
            self.s[i + 1] = np.where(sel, (v64 >> _U64(32)).astype(_U32), self.s[i + 1])

    def write_mask(self, i: int, count: int, mask: np.ndarray, sel: np.ndarray) -> None:
        """Write a lane mask (``bool[waves, lanes]``) to an SGPR (wave32) or SGPR pair (wave64)."""
        if count * 32 != self.L:
            raise IsaError(f"a lane mask of wave{self.L} needs {self.L // 32} SGPR(s), got {count}")
        self.write_s(i, count, self.bits_of(mask), sel)

    def read_mask(self, i: int, count: int) -> np.ndarray:
        if count * 32 != self.L:
            raise IsaError(f"a lane mask of wave{self.L} needs {self.L // 32} SGPR(s), got {count}")
        return self.mask_of(self.read_s(i, count))

    # ------------------------------------------------------------------ vector registers
    def vbase(self, r: Reg) -> int:
        base = r.index + (self.agpr_base if r.file == "a" else 0)
        limit = self.agpr_base if r.file == "v" else self.v.shape[0]
        if base + max(r.count, 1) > limit:
            size = limit - (self.agpr_base if r.file == "a" else 0)
            raise IsaError(f"{r.file}{r.index} (+{r.count}) is outside the {size} {r.file.upper()}GPRs "
                           f"of this {self.target} wave")
        return base

    def read_v(self, i: int, count: int) -> np.ndarray:
        if count == 1:
            return self.v[i]
        return self.v[i].astype(_U64) | (self.v[i + 1].astype(_U64) << _U64(32))

    def write_v(self, i: int, count: int, val: np.ndarray, act: np.ndarray, half: str = "") -> None:
        if count == 1:
            new = np.asarray(val).astype(_U32)
            if half == "l":
                new = (self.v[i] & _U32(0xFFFF0000)) | (new & _U32(0xFFFF))
            elif half == "h":
                new = (self.v[i] & _U32(0xFFFF)) | ((new & _U32(0xFFFF)) << _U32(16))
            self.v[i] = np.where(act, new, self.v[i])
        else:
            v64 = np.asarray(val).astype(_U64)
            self.v[i] = np.where(act, (v64 & _U64(0xFFFFFFFF)).astype(_U32), self.v[i])
            self.v[i + 1] = np.where(act, (v64 >> _U64(32)).astype(_U32), self.v[i + 1])
