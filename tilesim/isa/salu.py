"""Scalar ALU, scalar memory, branches and the instructions that only order or time work.

Semantics from the ISA guides' SOP1/SOP2/SOPC/SOPK/SOPP pseudo-code: bit ops set SCC to
``result != 0``, ``s_add_u32`` to the carry, ``s_add_i32`` to signed overflow, compares to their
result; ``s_*_saveexec`` copy EXEC to the destination, then EXEC = op(source, EXEC). Timing
instructions (``s_waitcnt``, ``s_wait_*``, ``s_delay_alu``, ``s_nop``, ``s_clause``, cache
invalidates) do nothing here: every load completes before the next instruction runs, so the
emulator does not detect a missing ``s_waitcnt`` (documented in docs/emulator.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tilesim.isa.asm import Imm, Instr, Label, Reg, Sym
from tilesim.isa.state import EXEC, Ctx, Machine, imm_bits
from tilesim.isa.variants import popcount

__all__ = ["compile_salu", "TIMING", "SALU_NAMES"]

_U32, _U64 = np.uint32, np.uint64
M32, M64 = 0xFFFFFFFF, (1 << 64) - 1

TIMING = ("s_waitcnt", "s_wait_alu", "s_wait_loadcnt", "s_wait_storecnt", "s_wait_dscnt", "s_wait_kmcnt",
          "s_wait_samplecnt", "s_wait_bvhcnt", "s_wait_expcnt", "s_wait_loadcnt_dscnt", "s_wait_storecnt_dscnt",
          "s_delay_alu", "s_clause", "s_nop", "s_setprio", "global_inv", "buffer_inv", "buffer_wbl2",
          "s_waitcnt_vscnt", "s_waitcnt_vmcnt", "s_waitcnt_lgkmcnt", "s_sleep", "s_inst_prefetch")

_BIT = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
        "andn2": lambda a, b: a & ~b, "and_not1": lambda a, b: a & ~b, "orn2": lambda a, b: a | ~b,
        "or_not1": lambda a, b: a | ~b, "nand": lambda a, b: ~(a & b), "nor": lambda a, b: ~(a | b),
        "xnor": lambda a, b: ~(a ^ b)}
_CMP = {"eq": np.equal, "lg": np.not_equal, "gt": np.greater, "ge": np.greater_equal, "lt": np.less,
        "le": np.less_equal}
# saveexec: EXEC = f(S0, EXEC)
_SAVEEXEC = {"and": lambda s, e: s & e, "or": lambda s, e: s | e, "xor": lambda s, e: s ^ e,
             "andn2": lambda s, e: s & ~e, "and_not1": lambda s, e: s & ~e, "orn2": lambda s, e: s | ~e,
             "or_not1": lambda s, e: s | ~e, "nand": lambda s, e: ~(s & e), "nor": lambda s, e: ~(s | e),
             "xnor": lambda s, e: ~(s ^ e), "andn1": lambda s, e: ~s & e, "and_not0": lambda s, e: ~s & e,
             "orn1": lambda s, e: ~s | e, "or_not0": lambda s, e: ~s | e}


CODE_BASE = 0x10000  # where the emulator places instruction n: CODE_BASE + 4 * n (a model, not the encoding)


def _brev32(a: np.ndarray) -> np.ndarray:
    x = a.astype(_U64) & _U64(0xFFFFFFFF)
    out = np.zeros_like(x)
    for i in range(32):
        out |= ((x >> _U64(i)) & _U64(1)) << _U64(31 - i)
    return out


def getpc_value(index: int) -> int:
    """What ``s_getpc_b64`` at program position ``index`` returns: the next instruction's address."""
    return CODE_BASE + 4 * (index + 1)


_INLINE_F = {0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0}


def _salu_bytes(ins: Instr, ctx: Ctx) -> int:
    """Encoded size of a scalar instruction: 4 bytes, plus a 32-bit literal where an operand is not
    an inline constant (SOPK/SOPP immediates are inline)."""
    if not ins.mnemonic.startswith("s_"):
        raise ctx.err(ins, "a non-scalar instruction between s_getpc_b64 and its relocation is not modelled")
    if ins.mnemonic.startswith(("s_movk", "s_cmpk", "s_addk", "s_mulk", "s_cmovk", "s_wait", "s_delay", "s_nop")):
        return 4
    lit = any(isinstance(o, Sym) or (isinstance(o, Imm) and (
        (isinstance(o.value, int) and not -16 <= o.value <= 64) or
        (isinstance(o.value, float) and o.value not in _INLINE_F))) for o in ins.operands)
    return 8 if lit else 4


def _reloc(op: Sym, ctx: Ctx, ins: Instr, st: Machine) -> int:
    """``SYM@rel32@lo/hi`` = SYM + addend - P, with P the address of this instruction's literal —
    computed from the encoded sizes of the scalar instructions since the paired ``s_getpc_b64`` (the
    nearest one before that wrote the register pair this instruction adds to), whose result is the
    address after it. The addend may carry an offset into the object beyond the encoding distance."""
    dst = ins.operands[0]
    want = dst.index - (1 if op.part == "hi" else 0) if isinstance(dst, Reg) else -1
    for back in range(1, 9):
        j = ctx.index - back
        if j < 0:
            break
        prev = ctx.program[j]
        if isinstance(prev, Instr) and prev.mnemonic == "s_getpc_b64":
            r = prev.operands[0]
            if isinstance(r, Reg) and r.index == want and r.count == 2:
                if op.name not in st.symbols:
                    raise ctx.err(ins, f"symbol {op.name} is not a data object of the kernel")
                between = sum(_salu_bytes(ctx.program[i], ctx) for i in range(j + 1, ctx.index))
                lit_at = getpc_value(j) + between + 4
                value = (st.symbols[op.name] + op.addend - lit_at) & ((1 << 64) - 1)
                return value & M32 if op.part == "lo" else value >> 32
            break
    raise ctx.err(ins, f"{op.name}@rel32@{op.part} without a paired s_getpc_b64 of the same registers")


def _ssrc(op: object, bits: int, ctx: Ctx, ins: Instr, st: Machine) -> Callable[[], np.ndarray]:
    """A scalar source as int64/uint64 values per wave (``bits`` 32 or 64)."""
    if isinstance(op, Sym):
        const_r = np.full(st.W, _reloc(op, ctx, ins, st), _U64)
        return lambda: const_r
    if isinstance(op, Imm):
        v = imm_bits(op, "b64" if bits == 64 else "b32", ctx, ins)
        const = np.full(st.W, v, _U64)
        return lambda: const
    if isinstance(op, Reg) and op.file == "s" and not (op.neg or op.abs or op.half):
        n = bits // 32
        if op.count != n:
            raise ctx.err(ins, f"scalar source needs {n} register(s), got {op.count}")
        i = op.index
        return lambda: st.read_s(i, n).astype(_U64)
    raise ctx.err(ins, f"operand {op!r} is not a scalar source")


def _sdst(op: object, bits: int, ctx: Ctx, ins: Instr) -> tuple[int, int]:
    if isinstance(op, Reg) and op.file == "s" and not (op.neg or op.abs or op.half):
        if op.count != bits // 32:
            raise ctx.err(ins, f"scalar destination needs {bits // 32} register(s), got {op.count}")
        return op.index, op.count
    raise ctx.err(ins, f"operand {op!r} is not a scalar destination")


def _signed(x: np.ndarray, bits: int) -> np.ndarray:
    x = x.astype(np.int64) if bits == 32 else x.view(np.int64)
    return np.where(x >= 2**31, x - 2**32, x) if bits == 32 else x


def compile_salu(ins: Instr, ctx: Ctx, st: Machine) -> Callable[[np.ndarray], None] | None:
    """``run(sel)`` for a scalar instruction, or None when ``ins`` is not one this module knows."""
    m, ops = ins.mnemonic, ins.operands
    if m in TIMING or m.startswith("s_waitcnt"):
        return lambda sel: None
    parts = m.split("_")
    if m.startswith(("s_load_", "s_buffer_load_")):
        return None  # scalar memory: tilesim.isa.memory
    if ins.mods:
        raise ctx.err(ins, f"modifier(s) {', '.join(k for k, _ in ins.mods)} not modelled")
    bits = 64 if m.endswith(("_b64", "_u64", "_i64")) else 32

    def unary(fn: Callable[[np.ndarray], np.ndarray], scc: Callable[[np.ndarray], np.ndarray] | None,
              sbits: int | None = None) -> Callable[[np.ndarray], None]:
        di, dn = _sdst(ops[0], bits, ctx, ins)
        a = _ssrc(ops[1], sbits or bits, ctx, ins, st)

        def run(sel: np.ndarray) -> None:
            r = fn(a()) & _U64(M64 if bits == 64 else M32)
            if scc is not None:
                st.scc = np.where(sel, scc(r), st.scc)
            st.write_s(di, dn, r, sel)
        return run

    def binary(fn: Callable[..., np.ndarray], scc: Callable[..., np.ndarray] | None, sbits: int | None = None
               ) -> Callable[[np.ndarray], None]:
        di, dn = _sdst(ops[0], bits, ctx, ins)
        a, b = _ssrc(ops[1], sbits or bits, ctx, ins, st), _ssrc(ops[2], 32 if sbits == 32 else bits, ctx, ins, st)

        def run(sel: np.ndarray) -> None:
            x, y = a(), b()
            full = fn(x, y)
            r = full.astype(_U64) & _U64(M64 if bits == 64 else M32) if full.dtype != object else full
            if scc is not None:
                st.scc = np.where(sel, scc(x, y, full, r), st.scc)
            st.write_s(di, dn, r, sel)
        return run

    if m in ("s_mov_b32", "s_mov_b64"):
        return unary(lambda a: a, None)
    if m == "s_getpc_b64":
        di, dn = _sdst(ops[0], 64, ctx, ins)
        pcv = np.full(st.W, getpc_value(ctx.index), _U64)
        return lambda sel: st.write_s(di, dn, pcv, sel)
    if m in ("s_sext_i32_i16", "s_sext_i32_i8"):
        w = 16 if m.endswith("16") else 8
        return unary(lambda a: (((a & _U64((1 << w) - 1)) ^ _U64(1 << (w - 1))) - _U64(1 << (w - 1))), None)
    if m == "s_movk_i32":
        if not isinstance(ops[1], Imm) or isinstance(ops[1].value, float):
            raise ctx.err(ins, "s_movk_i32 takes a 16-bit immediate")
        v = ops[1].value
        v = v - 0x10000 if v >= 0x8000 else v  # simm16, sign-extended
        di, dn = _sdst(ops[0], 32, ctx, ins)
        return lambda sel: st.write_s(di, dn, np.full(st.W, v & M32, _U64), sel)
    if m in ("s_not_b32", "s_not_b64"):
        return unary(lambda a: ~a, lambda r: r != 0)
    if m == "s_brev_b32":  # D.u[31:0] = S0.u[0:31] (bit reverse; no SCC)
        return unary(_brev32, None)
    if m in ("s_bcnt1_i32_b32", "s_bcnt1_i32_b64"):  # D.i32 = CountOneBits(S0); SCC = D != 0 (counting a ballot)
        di, dn = _sdst(ops[0], 32, ctx, ins)
        src = _ssrc(ops[1], 64 if m.endswith("64") else 32, ctx, ins, st)

        def run_bcnt(sel: np.ndarray) -> None:
            r = popcount(src())
            st.scc = np.where(sel, r != 0, st.scc)
            st.write_s(di, dn, r, sel)
        return run_bcnt
    if m in ("s_cselect_b32", "s_cselect_b64"):
        di, dn = _sdst(ops[0], bits, ctx, ins)
        a, b = _ssrc(ops[1], bits, ctx, ins, st), _ssrc(ops[2], bits, ctx, ins, st)
        return lambda sel: st.write_s(di, dn, np.where(st.scc, a(), b()), sel)
    if len(parts) == 3 and parts[1] in _BIT or (len(parts) == 4 and "_".join(parts[1:3]) in _BIT):
        op = parts[1] if len(parts) == 3 else "_".join(parts[1:3])
        return binary(lambda a, b: _BIT[op](a, b), lambda a, b, f, r: r != 0)
    if "saveexec" in m:
        op = m[2:m.index("_saveexec")]
        if op not in _SAVEEXEC:
            return None
        want = ctx.wave // 32
        if bits // 32 != want:
            raise ctx.err(ins, f"wave{ctx.wave} saveexec needs the b{32 * want} form")
        di, dn = _sdst(ops[0], bits, ctx, ins)
        a = _ssrc(ops[1], bits, ctx, ins, st)
        fn = _SAVEEXEC[op]
        mask = _U64(M64 if bits == 64 else M32)

        def run_se(sel: np.ndarray) -> None:
            e = st.read_s(EXEC, want).astype(_U64)
            new = fn(a(), e) & mask
            st.write_s(di, dn, e, sel)
            st.write_s(EXEC, want, new, sel)
            st.scc = np.where(sel, new != 0, st.scc)
        return run_se
    if m in ("s_add_u32", "s_add_co_u32"):
        return binary(lambda a, b: a + b, lambda a, b, f, r: f > M32)
    if m == "s_add_nc_u64":  # gfx12 SOP2: 64-bit add, no carry out, SCC unchanged (RDNA4 ISA, SOP2 opcodes)
        return binary(lambda a, b: a + b, None)
    if m in ("s_sub_u32", "s_sub_co_u32"):
        return binary(lambda a, b: a.astype(np.int64) - b.astype(np.int64), lambda a, b, f, r: f < 0)
    if m in ("s_addc_u32", "s_add_co_ci_u32"):
        return binary(lambda a, b: a + b + st.scc.astype(_U64), lambda a, b, f, r: f > M32)
    if m in ("s_subb_u32", "s_sub_co_ci_u32"):
        return binary(lambda a, b: a.astype(np.int64) - b.astype(np.int64) - st.scc, lambda a, b, f, r: f < 0)
    if m in ("s_add_i32", "s_add_co_i32", "s_sub_i32", "s_sub_co_i32"):
        sub = "_sub_" in m

        def ovf(a: np.ndarray, b: np.ndarray, f: np.ndarray, r: np.ndarray) -> np.ndarray:
            sa, sb, sr = _signed(a, 32), _signed(b, 32), _signed(r, 32)
            return ((sa >= 0) == ((sb < 0) if sub else (sb >= 0))) & ((sr >= 0) != (sa >= 0))
        return binary((lambda a, b: a.astype(np.int64) - b.astype(np.int64)) if sub else (lambda a, b: a + b), ovf)
    if m in ("s_mul_i32",):
        return binary(lambda a, b: (_signed(a, 32) * _signed(b, 32)), None)
    if m in ("s_lshl_b32", "s_lshl_b64"):
        return binary(lambda a, b: a << (b & _U64(bits - 1)), lambda a, b, f, r: r != 0, 32 if bits == 32 else None) \
            if bits == 32 else _shift64(ins, ctx, st, "l")
    if m in ("s_lshr_b32",):
        return binary(lambda a, b: a >> (b & _U64(31)), lambda a, b, f, r: r != 0)
    if m in ("s_bfe_u32", "s_bfe_i32"):
        # GCN3/CDNA3 ISA: D = (S0 >> S1[4:0]) & ((1 << S1[22:16]) - 1), sign-extended from the field's top
        # bit for i32; SCC = D != 0
        di, dn = _sdst(ops[0], 32, ctx, ins)
        a, b = _ssrc(ops[1], 32, ctx, ins, st), _ssrc(ops[2], 32, ctx, ins, st)
        signed = m.endswith("i32")

        def run_bfe(sel: np.ndarray) -> None:
            x, y = a(), b()
            width = (y >> _U64(16)) & _U64(0x7F)
            bad = sel & ((width > 31) | ((width == 0) & signed))  # the guides' formula leaves these unclear
            if bad.any():
                raise ctx.err(ins, f"bit-field width {int(width[bad].max())} is not modelled (1-31; 0 for u32)")
            w = np.clip(width, 1, 31).astype(np.int64)
            r = ((x >> (y & _U64(31))) & ((_U64(1) << w.astype(np.uint64)) - _U64(1))).astype(np.int64)
            if signed:
                r = np.where(r >> (w - 1) & 1, r - (1 << w), r)
            r = np.where(width == 0, 0, r).astype(np.int64) & M32
            st.scc = np.where(sel, r != 0, st.scc)
            st.write_s(di, dn, r.astype(_U64), sel)
        return run_bfe
    if m in ("s_ashr_i32",):
        return binary(lambda a, b: _signed(a, 32) >> (b & _U64(31)).astype(np.int64), lambda a, b, f, r: r != 0)
    if m in ("s_min_u32", "s_max_u32", "s_min_i32", "s_max_i32"):
        signed = m.endswith("i32")
        pick = np.minimum if "_min_" in m else np.maximum
        return binary(lambda a, b: pick(_signed(a, 32), _signed(b, 32)) if signed else pick(a, b),
                      lambda a, b, f, r: ((_signed(a, 32) if signed else a) == f) if "_min_" in m else
                      ((_signed(a, 32) if signed else a) == f))
    if m.startswith(("s_cmpk_", "s_addk_", "s_mulk_", "s_movk_", "s_cmovk_")) and m != "s_movk_i32":
        return _sopk(ins, ctx, st)
    if m.startswith("s_cmp_"):
        _, _, rel, ty = parts[:4] if len(parts) >= 4 else (None, None, None, None)
        if rel not in _CMP or ty not in ("i32", "u32", "u64"):
            return None
        cb = 64 if ty == "u64" else 32
        a, b = _ssrc(ops[0], cb, ctx, ins, st), _ssrc(ops[1], cb, ctx, ins, st)
        fn = _CMP[rel]
        if ty == "i32":
            return lambda sel: setattr(st, "scc", np.where(sel, fn(_signed(a(), 32), _signed(b(), 32)), st.scc))
        return lambda sel: setattr(st, "scc", np.where(sel, fn(a(), b()), st.scc))
    return None


def _sopk(ins: Instr, ctx: Ctx, st: Machine) -> Callable[[np.ndarray], None] | None:
    """SOPK: a 16-bit immediate, sign-extended for _i32 forms and zero-extended for _u32 ones."""
    m, ops = ins.mnemonic, ins.operands
    if len(ops) != 2 or not isinstance(ops[1], Imm) or isinstance(ops[1].value, float):
        raise ctx.err(ins, "SOPK takes a register and a 16-bit immediate")
    raw = ops[1].value & 0xFFFF
    signed = m.endswith("_i32")
    imm = (raw - 0x10000 if raw >= 0x8000 else raw) if signed else raw
    di, dn = _sdst(ops[0], 32, ctx, ins)
    if m.startswith("s_cmpk_"):
        rel = m.split("_")[2]
        if rel not in _CMP:
            return None
        fn = _CMP[rel]
        return lambda sel: setattr(st, "scc", np.where(
            sel, fn(_signed(st.s[di].astype(_U64), 32) if signed else st.s[di].astype(np.int64), imm), st.scc))
    if m == "s_addk_i32":
        def run_addk(sel: np.ndarray) -> None:
            a = _signed(st.s[di].astype(_U64), 32)
            r = a + imm
            st.scc = np.where(sel, (r < -2**31) | (r >= 2**31), st.scc)
            st.write_s(di, dn, r & M32, sel)
        return run_addk
    if m == "s_mulk_i32":
        return lambda sel: st.write_s(di, dn, (_signed(st.s[di].astype(_U64), 32) * imm) & M32, sel)
    if m == "s_cmovk_i32":
        return lambda sel: st.write_s(di, dn, np.full(st.W, imm & M32, np.int64), sel & st.scc)
    return None


def _shift64(ins: Instr, ctx: Ctx, st: Machine, kind: str) -> Callable[[np.ndarray], None]:
    di, dn = _sdst(ins.operands[0], 64, ctx, ins)
    a, b = _ssrc(ins.operands[1], 64, ctx, ins, st), _ssrc(ins.operands[2], 32, ctx, ins, st)

    def run(sel: np.ndarray) -> None:
        r = a() << (b() & _U64(63))
        st.scc = np.where(sel, r != 0, st.scc)
        st.write_s(di, dn, r, sel)
    return run


def branch_target(ins: Instr, ctx: Ctx) -> int:
    if len(ins.operands) != 1 or not isinstance(ins.operands[0], Label):
        raise ctx.err(ins, "a branch takes one label")
    return ctx.labels[ins.operands[0].name]


def branch_condition(ins: Instr, ctx: Ctx, st: Machine) -> Callable[[], np.ndarray] | None:
    """For ``s_branch``/``s_cbranch_*``: the per-wave taken condition (None: not a branch)."""
    m = ins.mnemonic
    if m == "s_branch":
        return lambda: np.ones(st.W, bool)
    conds = {"s_cbranch_scc0": lambda: ~st.scc, "s_cbranch_scc1": lambda: st.scc,
             "s_cbranch_execz": lambda: st.exec_bits() == 0, "s_cbranch_execnz": lambda: st.exec_bits() != 0,
             "s_cbranch_vccz": lambda: st.read_s(106, st.L // 32) == 0,
             "s_cbranch_vccnz": lambda: st.read_s(106, st.L // 32) != 0}
    return conds.get(m)


SALU_NAMES = ("s_mov", "s_movk", "s_cselect", "s_and", "s_or", "s_xor", "s_add", "s_sub", "s_cmp", "s_lshl", "s_lshr",
              "s_ashr", "s_mul", "s_not", "s_min", "s_max", "s_nand", "s_nor", "s_xnor", "s_bfe")
