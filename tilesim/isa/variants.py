"""What differs between the modelled targets and wave sizes: CDNA2 (gfx90a) and RDNA wave64.

The rest of the emulator is written for a wave of ``ctx.wave`` lanes (lane masks of one SGPR in
wave32, an SGPR pair in wave64) and for the gfx9 / gfx11 / gfx12 ISA generations; this module holds
the few rules that depend on the family or on the wave size beyond that:

* Mnemonics gfx90a does not have, though gfx940+ does (the gfx940 ISA added them; LLVM's
  ``isGFX940Plus`` predicates, and clang emits none of them for gfx90a): refused on CDNA2 rather than
  executed with CDNA3 semantics on a target that has no such instruction.
* VOPD (``v_dual_*``) in wave64: RDNA3/RDNA4 dual issue is a wave32 feature; refused.
* ``ds_bpermute_b32`` / ``ds_permute_b32`` on RDNA in wave64 work on half-waves of 32 lanes (Mesa
  ACO's ``emit_bpermute``: "The bpermute instruction is limited to half-wave operation" on GFX10+
  wave64, which ACO emulates with extra code). A lane whose source (bpermute) or destination
  (permute) lies in its own half is modelled; one that crosses halves raises — what the hardware
  gives there is not documented in what this project could read.
* ``v_mbcnt_lo_u32_b32`` / ``v_mbcnt_hi_u32_b32`` (how code finds its lane in a wave64): ``D = S1 +
  popcount(S0 & ThreadMask[31:0])`` (``[63:32]`` for hi), ``ThreadMask = (1 << lane) - 1`` — the
  ISA guides' pseudo-code, the same on every family.
* ``v_permlane64_b32`` (RDNA): in wave64 lane ``i`` takes the source of lane ``i ^ 32`` — read whether
  that lane is active or not — and writes where EXEC enables it; in wave32 it writes nothing (the
  RDNA3.5 ISA guide's pseudo-code and notes for opcode 103, which RDNA3 and RDNA4 share).
* ``v_pk_mov_b32`` (gfx90a+: a 64-bit move of two dwords picked by ``op_sel``): ``D[31:0] =
  S0.dword[op_sel[0]]``, ``D[63:32] = S1.dword[op_sel[1]]`` — the CDNA3 ISA guide's pseudo-code,
  and what clang relies on when it copies ``s[2:3]`` with ``v_pk_mov_b32 v[a:b], s[2:3], s[2:3]
  op_sel:[0,1]``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tilesim.isa.asm import Imm, Instr, IsaError, Reg
from tilesim.isa.state import Ctx, Machine
from tilesim.targets import get_target

__all__ = ["check_variant", "permute_halves", "check_halves", "popcount", "VARIANT_OPS"]

# gfx940+ instructions the emulator models that gfx90a lacks (the direct-to-LDS loads refuse gfx90a in
# tilesim.isa.lds_dma already: it has no M0 field width for CDNA2)
_GFX940_ONLY = ("v_lshl_add_u64", "v_mov_b64", "v_bitop3_b32")


def _base(m: str) -> str:
    for suffix in ("_e32", "_e64", "_dpp", "_sdwa"):
        if m.endswith(suffix):
            return m[: -len(suffix)]
    return m


def check_variant(ins: Instr, ctx: Ctx) -> None:
    """Raise for an instruction the target family or the wave size does not have (see above)."""
    m = ins.mnemonic
    t = get_target(ctx.target)
    if t.family == "cdna2" and _base(m) in _GFX940_ONLY:
        raise ctx.err(ins, f"{_base(m)} is a gfx940+ instruction; {ctx.target} (CDNA2) has none")
    if ctx.wave == 64 and m.startswith("v_dual_"):
        raise ctx.err(ins, "VOPD dual issue is a wave32 feature; in wave64 it is not modelled")


def permute_halves(ctx: Ctx) -> bool:
    """Whether ``ds_(b)permute_b32`` is limited to half-waves here (RDNA in wave64)."""
    return ctx.wave == 64 and get_target(ctx.target).isa != "gfx9"


def check_halves(idx: np.ndarray, act: np.ndarray, what: Callable[[int, int], str]) -> None:
    """``idx``: each lane's partner lane (0-63) in an RDNA wave64; raise where an active lane's
    partner is in the other half-wave (not modelled)."""
    lane = np.arange(idx.shape[1])[None, :]
    bad = act & ((idx >> 5) != (lane >> 5))
    if bad.any():
        w, ln = (int(x[0]) for x in np.nonzero(bad))
        raise IsaError(f"{what(w, ln)}: lane {ln}'s partner lane {int(idx[w, ln])} is in the other half-wave; "
                       "RDNA wave64 permutes work on 32-lane halves and a crossing is not modelled")


def compile_pk_mov(ins: Instr, ctx: Ctx, st: Machine) -> Callable[[np.ndarray, np.ndarray], Callable[[], None]]:
    """``v_pk_mov_b32 vD[2], S0[2], S1[2] [op_sel:[a,b]]`` (see the module docstring)."""
    if get_target(ctx.target).isa != "gfx9":
        raise ctx.err(ins, "v_pk_mov_b32 is a CDNA instruction")
    if set(dict(ins.mods)) - {"op_sel"}:
        raise ctx.err(ins, f"modifier(s) {', '.join(k for k, _ in ins.mods if k != 'op_sel')} not modelled")
    opsel = (ins.mod("op_sel") or "[0,0]").replace(" ", "")
    if opsel not in ("[0,0]", "[1,0]", "[0,1]", "[1,1]"):
        raise ctx.err(ins, f"op_sel {opsel} not modelled (two bits expected)")
    if len(ins.operands) != 3:
        raise ctx.err(ins, "expected vD[2], S0[2], S1[2]")
    d, s0, s1 = ins.operands
    if not (isinstance(d, Reg) and d.file in ("v", "a") and d.count == 2 and not (d.neg or d.abs or d.half)):
        raise ctx.err(ins, "the destination must be a VGPR pair")
    db = st.vbase(d)
    picks = [_dword(s, int(opsel[1 + 2 * k]), ctx, ins, st) for k, s in enumerate((s0, s1))]

    def run(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
        lo, hi = (np.broadcast_to(p(), act.shape).copy() for p in picks)

        def commit() -> None:
            st.v[db] = np.where(act, lo, st.v[db])
            st.v[db + 1] = np.where(act, hi, st.v[db + 1])
        return commit
    return run


def _dword(op: object, k: int, ctx: Ctx, ins: Instr, st: Machine) -> Callable[[], np.ndarray]:
    """Dword ``k`` (0 low, 1 high) of a 64-bit source, as uint32 broadcastable to [waves, lanes]."""
    if isinstance(op, Imm):
        # an inline integer's 32-bit value is its low dword; which value fills the high dword of a packed
        # 32-bit operand is not modelled, nor are float constants (0 is 0 under every rule)
        if op.neg or op.abs or isinstance(op.value, float) or not -16 <= op.value <= 64 or (k and op.value):
            raise ctx.err(ins, f"constant {op.text} as dword {k} of a packed source is not modelled")
        c = np.uint32(op.value & 0xFFFFFFFF)
        return lambda: c
    if not (isinstance(op, Reg) and op.file in ("v", "a", "s") and op.count == 2 and not (op.neg or op.abs or op.half)):
        raise ctx.err(ins, f"source {op!r} must be a register pair or an inline integer")
    if op.file == "s":
        i = op.index + k
        return lambda: st.s[i][:, None]
    b = st.vbase(op) + k
    return lambda: st.v[b]


def popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 (numpy>=1.24 has no bitwise_count)."""
    b = np.ascontiguousarray(np.asarray(x, np.uint64).astype("<u8")).view(np.uint8).reshape(-1, 8)
    return np.unpackbits(b, axis=1).sum(axis=1).astype(np.uint64).reshape(np.shape(x))


def _u32(op: object, ctx: Ctx, ins: Instr, st: Machine) -> Callable[[], np.ndarray]:
    """A plain 32-bit integer source (constant, SGPR or VGPR) as uint64 broadcastable to [waves, lanes]."""
    if isinstance(op, Imm) and not isinstance(op.value, float) and not (op.neg or op.abs):
        c = np.uint64(op.value & 0xFFFFFFFF)
        return lambda: c
    if isinstance(op, Reg) and op.count == 1 and not (op.neg or op.abs or op.half):
        if op.file == "s":
            return lambda: st.read_s(op.index, 1).astype(np.uint64)[:, None]
        if op.file in ("v", "a"):
            b = st.vbase(op)
            return lambda: st.v[b].astype(np.uint64)
    raise ctx.err(ins, f"source {op!r} must be a 32-bit integer register or constant")


def compile_mbcnt(ins: Instr, ctx: Ctx, st: Machine) -> Callable[[np.ndarray, np.ndarray], Callable[[], None]]:
    """``v_mbcnt_lo_u32_b32`` / ``v_mbcnt_hi_u32_b32 vD, S0, S1`` (see the module docstring)."""
    if ins.mods or len(ins.operands) != 3:
        raise ctx.err(ins, "expected vD, S0, S1 and no modifiers")
    d, s0, s1 = ins.operands
    if not (isinstance(d, Reg) and d.file == "v" and d.count == 1 and not (d.neg or d.abs or d.half)):
        raise ctx.err(ins, "the destination must be one VGPR")
    db = st.vbase(d)
    mask, add = _u32(s0, ctx, ins, st), _u32(s1, ctx, ins, st)
    lane = np.arange(ctx.wave, dtype=np.uint64)
    below = (np.uint64(1) << lane) - np.uint64(1)  # ThreadMask: the lanes below this one (lane < 64)
    part = (below >> np.uint64(32)) if "_hi_" in ins.mnemonic else (below & np.uint64(0xFFFFFFFF))

    def run(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
        m = np.broadcast_to(mask(), act.shape) & part[None, :]
        r = ((popcount(m) + add()) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        return lambda: st.v.__setitem__(db, np.where(act, r, st.v[db]))
    return run


def compile_permlane64(ins: Instr, ctx: Ctx, st: Machine) -> Callable[[np.ndarray, np.ndarray], Callable[[], None]]:
    """``v_permlane64_b32 vD, vS`` (see the module docstring)."""
    if get_target(ctx.target).isa == "gfx9":
        raise ctx.err(ins, "v_permlane64_b32 is an RDNA instruction")
    if ins.mods or len(ins.operands) != 2:
        raise ctx.err(ins, "expected vD, vS and no modifiers")
    d, src = ins.operands
    for r in (d, src):
        if not (isinstance(r, Reg) and r.file == "v" and r.count == 1 and not (r.neg or r.abs or r.half)):
            raise ctx.err(ins, "the destination and the source must be one VGPR each")
    db, sb = st.vbase(d), st.vbase(src)
    alt = np.arange(ctx.wave) ^ 32 if ctx.wave == 64 else None

    def run(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
        if alt is None:  # wave32: no writes
            return lambda: None
        val = st.v[sb][:, alt].copy()  # every lane's alternate, active or not (D may be S)
        return lambda: st.v.__setitem__(db, np.where(act, val, st.v[db]))
    return run


# VALU mnemonics (their base names) compiled here rather than in tilesim.isa.valu
VARIANT_OPS = {"v_pk_mov_b32": compile_pk_mov, "v_mbcnt_lo_u32_b32": compile_mbcnt, "v_mbcnt_hi_u32_b32": compile_mbcnt,
               "v_permlane64_b32": compile_permlane64}
