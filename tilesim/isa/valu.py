"""Vector ALU instructions (VOP1/VOP2/VOP3/VOPC/VOPD): integer, bit and f32/f16 arithmetic.

The table of semantics is :mod:`tilesim.isa.valu_ops`; this module reads operands (inline constants,
SGPR broadcast, true16 halves, float neg/abs) and writes results under EXEC. Semantics are the
RDNA3/RDNA4/CDNA3 ISA guides' pseudo-code (``D.u = S0.u + S1.u`` …); float arithmetic is IEEE-754
binary32 with round-to-nearest-even and denormals kept — the only mode :mod:`tilesim.isa.launch`
accepts from the kernel descriptor. Transcendental approximations
(``v_exp_f32``, ``v_rcp_f32``) are modelled as the correctly rounded function: the hardware is
specified to 1 ULP, so results there may differ from silicon in the last bit.

DPP16/DPP8 on VOP1/VOP2 ops with a vector result, and RDNA's ``v_permlane16_b32`` /
``v_permlanex16_b32``, move lanes as the ISA guides' DPP_CTRL table and permlane pseudo-code say
(:class:`_Dpp`, :func:`_permlane`). Anything outside the table — another mnemonic, a VOP3 DPP or SDWA
form, a DPP control the target lacks, ``clamp``/``omod``/``op_sel`` — raises
:class:`~tilesim.isa.asm.IsaError` when the kernel is prepared.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tilesim.isa.asm import Imm, Instr, Reg
from tilesim.isa.state import EXEC, NULL, VCC, Ctx, Machine, imm_bits
from tilesim.isa.valu_ops import (KIND_BITS as _BITS, KIND_DT as _KIND_DT, SNAN_REFUSED, VALU_OPS, WIDE as _WIDE,
                                  fma_f32, signaling_nan)
from tilesim.isa.variants import VARIANT_OPS
from tilesim.targets import get_target

__all__ = ["compile_valu", "VALU_OPS", "fma_f32"]

_U32, _U64 = np.uint32, np.uint64

_FLOAT_KINDS = ("f32", "f16", "f64")
# non-true16 16-bit results whose high-half rule is known: those of LLVM's
# GCNSubtarget::zeroesHigh16BitsOfDest list that VALU_OPS models (gfx9 zeroes, gfx10+ preserve)
_HIGH_RULE = ("v_cvt_f16_f32", "v_lshlrev_b16", "v_lshrrev_b16", "v_add_u16", "v_sub_u16")


def _cnd_source(op: object, ctx: Ctx, ins: Instr, st: Machine) -> Callable[[], np.ndarray]:
    """A v_cndmask_b32 source: VOP3 neg/abs act on bit 31 as on an f32 (clang selects fneg this way)."""
    if isinstance(op, Reg) and (op.neg or op.abs):
        f = _source(op, "f32", ctx, ins, st)
        return lambda: np.asarray(f()).view(np.uint32)
    return _source(op, "u32", ctx, ins, st)


def _source(op: object, kind: str, ctx: Ctx, ins: Instr, st: Machine,
            gather: Callable[[np.ndarray], np.ndarray] | None = None) -> Callable[[], np.ndarray]:
    """A reader of one source operand: bits (uint32/uint64, broadcastable to [waves, lanes]) viewed
    as ``kind``, with float neg/abs applied; ``gather`` moves a VGPR's lanes first (DPP)."""
    dt = _KIND_DT[kind]
    if isinstance(op, Imm):
        bits = imm_bits(op, _BITS[kind], ctx, ins)
        const = np.array(bits, {16: np.uint16, 32: np.uint32, 64: np.uint64}[np.dtype(dt).itemsize * 8]).view(dt)
        return lambda: const
    if not isinstance(op, Reg) or op.file == "off":
        raise ctx.err(ins, f"operand {op!r} is not a vector ALU source")
    if (op.neg or op.abs) and kind not in _FLOAT_KINDS:
        raise ctx.err(ins, "neg/abs source modifiers on an integer operand are not modelled")
    wide = kind in _WIDE
    want = 2 if wide else 1
    if op.count != want:
        raise ctx.err(ins, f"source needs {want} register(s), got {op.count}")
    if op.file == "s":
        i = op.index
        if op.half:
            raise ctx.err(ins, "16-bit halves of scalar registers are not modelled")
        get = (lambda: st.read_s(i, want)[:, None])
    else:
        b = st.vbase(op)
        if op.half == "h":
            get = (lambda: st.v[b] >> _U32(16))
        else:
            get = (lambda: st.read_v(b, want))
    if gather is not None:
        if op.file == "s" or op.half or wide:
            raise ctx.err(ins, "DPP on a scalar, 16-bit-half or 64-bit source is not modelled")
        plain = get
        get = (lambda: gather(plain()))
    if kind in ("u16", "f16", "i16"):  # non-true16 forms read the low half
        raw = get
        get = (lambda: (raw() & _U32(0xFFFF)).astype(np.uint16))
    sign = {"f32": _U32(0x80000000), "f64": _U64(1 << 63), "f16": np.uint16(0x8000)}.get(kind)
    if op.abs or op.neg:
        raw2 = get
        none = sign & 0
        clear = ~sign if op.abs else ~none
        flip = sign if op.neg else none
        get = (lambda: (raw2() & clear) ^ flip)
    return lambda: get().view(dt)


def _dest_writer(op: object, kind: str, ctx: Ctx, ins: Instr, st: Machine) -> Callable[[np.ndarray, np.ndarray], None]:
    if not isinstance(op, Reg) or op.file not in ("v", "a") or op.neg or op.abs:
        raise ctx.err(ins, f"destination {op!r} is not a vector register")
    n = 2 if kind in _WIDE else 1
    if op.count != n:
        raise ctx.err(ins, f"destination needs {n} register(s), got {op.count}")
    if kind not in ("u16", "f16") and op.half:
        raise ctx.err(ins, "a 32-bit result written to a 16-bit half is not modelled")
    b, half = st.vbase(op), op.half
    if kind in ("u16", "f16") and not half:
        # a non-true16 16-bit result: gfx9 zeroes the high half of V_CVT_F16_F32 and its kin, gfx10+
        # preserve it (LLVM's GCNSubtarget::zeroesHigh16BitsOfDest, reviews D104575/D115729)
        if ins.mnemonic.split("_e")[0] not in _HIGH_RULE:
            raise ctx.err(ins, "what a non-true16 16-bit result does to the high half is not modelled for this op")
        half = "l" if get_target(ctx.target).isa != "gfx9" else ""
        if not half:
            return lambda val, act: st.write_v(b, 1, np.asarray(val).view(np.uint16).astype(_U32), act)
    if kind in ("u16", "f16"):
        return lambda val, act: st.write_v(b, 1, np.asarray(val).view(np.uint16).astype(_U32), act, half)
    view = {1: _U32, 2: _U64}[n]
    return lambda val, act: st.write_v(b, n, np.asarray(np.asarray(val).astype(_KIND_DT[kind]), _KIND_DT[kind])
                                       .view(view), act)


def _mask_dest(op: object, ctx: Ctx, ins: Instr, st: Machine) -> tuple[int, int]:
    if not isinstance(op, Reg) or op.file != "s":
        raise ctx.err(ins, f"a lane-mask destination must be scalar, got {op!r}")
    if op.index == NULL:  # `null` is one register name in both wave sizes; a write to it goes nowhere
        return NULL, ctx.wave // 32
    if op.count * 32 != ctx.wave:
        raise ctx.err(ins, f"a wave{ctx.wave} lane mask takes {ctx.wave // 32} SGPR(s), got {op.count}")
    return op.index, op.count


def _no_mods(ins: Instr, ctx: Ctx) -> None:
    if ins.mods:
        raise ctx.err(ins, f"modifier(s) {', '.join(k for k, _ in ins.mods)} not modelled")


def _base_name(m: str, ctx: Ctx, ins: Instr) -> str:
    if m.endswith(("_e64_dpp", "_dpp8")) or ("_dpp" in m and not m.endswith("_dpp")):
        raise ctx.err(ins, "VOP3 DPP forms are not modelled")
    if m.endswith("_dpp"):
        return m[: -len("_dpp")]
    if m.endswith("_sdwa"):
        raise ctx.err(ins, "this SDWA form is not modelled")
    for suf in ("_e32", "_e64", "_e64_dpp"):
        if m.endswith(suf):
            return m[: -len(suf)]
    return m


_Run = Callable[[np.ndarray, np.ndarray], Callable[[], None]]


def _bitop3(ins: Instr, ctx: Ctx, st: Machine) -> _Run:
    """gfx950 ``v_bitop3_b32 d, s0, s1, s2 bitop3:T``: each result bit is bit ``4*s0 + 2*s1 + s2`` of the
    8-bit truth table ``T`` (CDNA4 ISA, V_BITOP3_B32), so ``T`` = 0xF0 is s0, 0xCC s1, 0xAA s2."""
    bad = [k for k, _ in ins.mods if k != "bitop3"]
    if bad or len(ins.operands) != 4:
        raise ctx.err(ins, f"modifier(s) {', '.join(bad)} not modelled" if bad else "expected d, s0, s1, s2")
    try:
        tt = int(ins.mod("bitop3") or "0", 0)
    except ValueError:
        raise ctx.err(ins, "bitop3 takes an integer truth table") from None
    if not 0 <= tt <= 255:
        raise ctx.err(ins, f"bitop3:{tt} is not an 8-bit truth table")
    d, *srcs = ins.operands
    fs = [_source(x, "u32", ctx, ins, st) for x in srcs]
    w = _dest_writer(d, "u32", ctx, ins, st)

    def run(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
        a, b, c = (np.asarray(f(), dtype=_U32) for f in fs)
        r = np.zeros(np.broadcast(a, b, c).shape, _U32)
        for i in range(8):  # minterm i: s0 = bit 2, s1 = bit 1, s2 = bit 0 of i
            if tt >> i & 1:
                r |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
        return lambda: w(r, act)
    return run


def compile_part(ins: Instr, ctx: Ctx, st: Machine, dual: bool = False) -> _Run:
    """Compile one VALU instruction into ``run(act) -> commit``: ``run`` reads sources and computes,
    ``commit()`` writes — separated so both halves of a VOPD pair read before either writes."""
    if ins.mnemonic.endswith("_sdwa"):
        return _sdwa(ins, ctx, st)
    m = _base_name(ins.mnemonic, ctx, ins)
    dpp = _Dpp(ins, ctx, st) if ins.mnemonic.endswith("_dpp") else None
    if m == "v_bitop3_b32" and dpp is None and not dual:
        return _bitop3(ins, ctx, st)
    if m in VARIANT_OPS and dpp is None:  # tilesim.isa.variants: v_pk_mov_b32, v_mbcnt_*
        return VARIANT_OPS[m](ins, ctx, st)
    if dpp is None:
        if m not in ("v_permlane16_b32", "v_permlanex16_b32"):  # permlane checks its own op_sel
            _no_mods(ins, ctx)
    elif dual or m in _NOT_DPP or VALU_OPS.get(m, ((), "mask"))[1] == "mask":
        raise ctx.err(ins, "DPP is modelled on VOP1/VOP2 ops with a vector result only")
    if dual:
        m = "v_" + m[len("v_dual_"):]
        if m == "v_fmac_f32":
            m = "v_fmac_f32"
    ops = ins.operands
    if m in ("v_fmac_f32",):
        d, a, b = ops
        fa, fb, fc = (_source(x, "f32", ctx, ins, st) for x in (a, b, d))
        w = _dest_writer(d, "f32", ctx, ins, st)
        return lambda act, sel: (lambda r: (lambda: w(r, act)))(fma_f32(fa(), fb(), fc()))
    if m == "v_cndmask_b32":
        if len(ops) == 3 and dual:
            d, a, b = ops
            mi, mc = VCC, ctx.wave // 32
        elif len(ops) == 4:
            d, a, b, msk = ops
            mi, mc = _mask_dest(msk, ctx, ins, st)
        else:
            raise ctx.err(ins, "unexpected operand count")
        fa, fb = (_cnd_source(x, ctx, ins, st) for x in (a, b))
        w = _dest_writer(d, "u32", ctx, ins, st)
        return lambda act, sel: (lambda r: (lambda: w(r, act)))(np.where(st.read_mask(mi, mc), fb(), fa()))
    if m in ("v_add_co_u32", "v_sub_co_u32", "v_subrev_co_u32", "v_add_co_ci_u32", "v_addc_co_u32",
             "v_sub_co_ci_u32", "v_subrev_co_ci_u32", "v_subb_co_u32", "v_subbrev_co_u32"):  # gfx9 spells borrow "subb"
        return _carry(m, ins, ctx, st)
    if m in ("v_mad_u64_u32", "v_mad_co_u64_u32"):  # gfx12 renamed it (the carry out is the same)
        return _mad_u64(ins, ctx, st)
    if m == "v_lshl_add_u64":
        d, a, b, c = ops
        fa, fc = _source(a, "u64", ctx, ins, st), _source(c, "u64", ctx, ins, st)
        fb = _source(b, "u32", ctx, ins, st)
        w = _dest_writer(d, "u64", ctx, ins, st)

        def run_lshl(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
            sh = np.asarray(fb())
            if np.any((sh > 4) & np.broadcast_to(act, np.broadcast(sh, act).shape)):
                raise ctx.err(ins, "shift above 4 (the ISA allows 0-4)")
            r = (fa() << (sh & _U32(7)).astype(_U64)) + fc()
            return lambda: w(r, act)
        return run_lshl
    if m in ("v_div_scale_f32", "v_div_fmas_f32", "v_div_fixup_f32"):
        return _division(m, ins, ctx, st)
    if m in ("v_readlane_b32", "v_readfirstlane_b32", "v_writelane_b32"):
        return _lanes(m, ins, ctx, st)
    if m in ("v_permlane16_b32", "v_permlanex16_b32"):
        return _permlane(m, ins, ctx, st)
    cmpx = m.startswith("v_cmpx_")
    if cmpx:
        m = "v_cmp_" + m[len("v_cmpx_"):]
    if m not in VALU_OPS:
        raise ctx.err(ins, "instruction not modelled")
    kinds, out, fn = VALU_OPS[m]
    if cmpx:  # EXEC = compare result on the active lanes (gfx9 also writes the SGPR mask it names)
        if VALU_OPS[m][1] != "mask" or len(ops) not in (len(kinds), len(kinds) + 1):
            raise ctx.err(ins, "unexpected operands")
        extra = _mask_dest(ops[0], ctx, ins, st) if len(ops) == len(kinds) + 1 else None
        xsrcs = [_source(x, k, ctx, ins, st) for x, k in zip(ops[len(ops) - len(kinds):], kinds)]

        def run_cmpx(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
            with np.errstate(all="ignore"):
                r = np.broadcast_to(fn(*(f() for f in xsrcs)), act.shape) & act

            def commit() -> None:
                if extra is not None:
                    st.write_mask(extra[0], extra[1], r, sel)
                st.write_mask(EXEC, ctx.wave // 32, r, sel)
            return commit
        return run_cmpx
    if out == "mask":
        if len(ops) != len(kinds) + 1:
            raise ctx.err(ins, f"expected {len(kinds) + 1} operands, got {len(ops)}")
        mi, mc = _mask_dest(ops[0], ctx, ins, st)
        srcs = [_source(x, k, ctx, ins, st) for x, k in zip(ops[1:], kinds)]

        def run_cmp(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
            with np.errstate(all="ignore"):
                r = np.broadcast_to(fn(*(f() for f in srcs)), act.shape) & act  # inactive lanes write 0
            return lambda: st.write_mask(mi, mc, r, sel)
        return run_cmp
    if len(ops) != len(kinds) + 1:
        raise ctx.err(ins, f"expected {len(kinds) + 1} operands, got {len(ops)}")
    srcs = [_source(x, k, ctx, ins, st, gather=dpp.gather if dpp is not None and i == 0 else None)
            for i, (x, k) in enumerate(zip(ops[1:], kinds))]
    w = _dest_writer(ops[0], out, ctx, ins, st)
    if dpp is not None:
        w = dpp.writer(w)

    def run(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
        vals = [f() for f in srcs]
        if m in SNAN_REFUSED and any(np.any(signaling_nan(k, v) & act) for k, v in zip(kinds, vals)):
            raise ctx.err(ins, "a signaling NaN source is not modelled (the ISA quiets it; the payload is unspecified)")
        with np.errstate(all="ignore"):  # overflow to inf, NaN: IEEE results, not errors
            r = np.array(fn(*vals))  # a copy: a VOPD partner may overwrite a source view
        return lambda: w(r, act)
    return run


def _carry(m: str, ins: Instr, ctx: Ctx, st: Machine) -> Callable[[np.ndarray, np.ndarray], Callable[[], None]]:
    ops = ins.operands
    with_ci = "_ci_" in m or m.startswith(("v_addc", "v_subb"))
    if len(ops) != (5 if with_ci else 4):
        raise ctx.err(ins, f"expected {'5' if with_ci else '4'} operands, got {len(ops)}")
    d, cd, a, b = ops[:4]
    ci = _mask_dest(ops[4], ctx, ins, st) if with_ci else None
    co = _mask_dest(cd, ctx, ins, st)
    fa, fb = _source(a, "u32", ctx, ins, st), _source(b, "u32", ctx, ins, st)
    w = _dest_writer(d, "u32", ctx, ins, st)
    sub = "sub" in m
    rev = "subrev" in m or "subbrev" in m

    def run(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
        x, y = fa().astype(np.int64), fb().astype(np.int64)
        if rev:
            x, y = y, x
        c = st.read_mask(*ci).astype(np.int64) if ci else 0
        full = (x - y - c) if sub else (x + y + c)
        res = (full & 0xFFFFFFFF).astype(_U32)
        carry = np.broadcast_to((full < 0) if sub else (full > 0xFFFFFFFF), act.shape) & act
        return lambda: (w(res, act), st.write_mask(co[0], co[1], carry, sel))
    return run


def _mad_u64(ins: Instr, ctx: Ctx, st: Machine) -> _Run:
    """V_MAD_U64_U32 (VOP3B; CDNA3/CDNA4 guide §12.11, RDNA3/RDNA4 VOP3SD): ``{ D1.u1, D0.u64 } =
    65'B(65'U(S0.u32) * 65'U(S1.u32) + 65'U(S2.u64))`` — the low 64 bits in the VGPR pair, bit 64
    (the carry out of the add; the product itself fits 64 bits) in the lane mask SDST (``null``: none)."""
    if len(ins.operands) != 5:
        raise ctx.err(ins, f"expected 5 operands, got {len(ins.operands)}")
    d, cd, a, b, c = ins.operands
    null = isinstance(cd, Reg) and cd.file == "s" and cd.index == 125 and cd.count == 1
    co = None if null else _mask_dest(cd, ctx, ins, st)
    fa, fb, fc = _source(a, "u32", ctx, ins, st), _source(b, "u32", ctx, ins, st), _source(c, "u64", ctx, ins, st)
    w = _dest_writer(d, "u64", ctx, ins, st)

    def run(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
        prod = np.asarray(fa()).astype(_U64) * np.asarray(fb()).astype(_U64)  # < 2**64: exact
        res = prod + np.asarray(fc()).astype(_U64)  # wraps mod 2**64
        carry = np.broadcast_to(res < prod, act.shape) & act  # inactive lanes write 0, as the compares
        return lambda: (w(res, act), None if co is None else st.write_mask(co[0], co[1], carry, sel))
    return run


def compile_valu(ins: Instr | tuple[Instr, Instr], ctx: Ctx, st: Machine) -> Callable[[np.ndarray], None]:
    """``run(sel)`` for a VALU instruction or a VOPD pair."""
    if isinstance(ins, tuple):
        x, y = (compile_part(p, ctx, st, dual=True) for p in ins)

        def run_dual(sel: np.ndarray) -> None:
            act = st.active(sel)
            cx, cy = x(act, sel), y(act, sel)
            cx()
            cy()
        return run_dual
    f = compile_part(ins, ctx, st)

    def run_one(sel: np.ndarray) -> None:
        f(st.active(sel), sel)()
    return run_one


def _exp_field(x: np.ndarray) -> np.ndarray:
    return ((x.view(_U32) >> _U32(23)) & _U32(0xFF)).astype(np.int64)


def _division(m: str, ins: Instr, ctx: Ctx, st: Machine) -> Callable[[np.ndarray, np.ndarray], Callable[[], None]]:
    """The f32 division expansion (``v_div_scale``, ``v_div_fmas``, ``v_div_fixup``), modelled on its
    ordinary path only: finite, normal, non-zero operands whose quotient and reciprocal are normal
    and far from overflow — where the ISA guides' pseudo-code scales nothing (VCC = 0, D = S0) and
    fixup only applies the quotient's sign. Every other lane raises (the scaling branches are not
    modelled), so a result is never a guess."""
    ops = ins.operands

    def ordinary(act: np.ndarray, *xs: np.ndarray) -> None:
        ok = np.ones(act.shape, bool)
        for x in xs:
            e = _exp_field(np.broadcast_to(x, act.shape))
            ok &= (e > 23) & (e < 253)  # normal, far from both ends of the range
        if len(xs) == 2:
            num, den = (np.broadcast_to(x, act.shape) for x in xs)
            d = _exp_field(num) - _exp_field(den)
            ok &= (d < 96) & (d > -100)
        if np.any(act & ~ok):
            w, ln = np.argwhere(act & ~ok)[0]
            raise ctx.err(ins, f"wave {w} lane {ln}: operands outside the ordinary range (zero, denormal, "
                               "non-finite or extreme exponents): the scaling branches are not modelled")

    if m == "v_div_scale_f32":
        if len(ops) != 5:
            raise ctx.err(ins, "expected D, VCC/SDST, S0, S1, S2")
        mi, mc = _mask_dest(ops[1], ctx, ins, st)
        f0, f1, f2 = (_source(x, "f32", ctx, ins, st) for x in ops[2:])
        w = _dest_writer(ops[0], "f32", ctx, ins, st)

        def run_scale(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
            s0, s1, s2 = np.array(f0()), f1(), f2()
            ordinary(act, s2, s1)
            return lambda: (w(s0, act), st.write_mask(mi, mc, np.zeros(act.shape, bool), sel))
        return run_scale
    if len(ops) != 4:
        raise ctx.err(ins, "expected D, S0, S1, S2")
    f0, f1, f2 = (_source(x, "f32", ctx, ins, st) for x in ops[1:])
    w = _dest_writer(ops[0], "f32", ctx, ins, st)
    if m == "v_div_fmas_f32":
        def run_fmas(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
            if np.any(st.read_mask(VCC, ctx.wave // 32) & act):
                raise ctx.err(ins, "VCC set (the 2**32 rescaling branch) is not modelled")
            r = fma_f32(f0(), f1(), f2())
            return lambda: w(r, act)
        return run_fmas

    def run_fixup(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
        q, den, num = np.array(f0()), f1(), f2()
        ordinary(act, num, den)
        neg = np.signbit(den) ^ np.signbit(num)
        r = np.where(neg, -np.abs(q), np.abs(q)).astype(np.float32)
        return lambda: w(r, act)
    return run_fixup


_SDWA_SEL = {"BYTE_0": (0, 8), "BYTE_1": (8, 8), "BYTE_2": (16, 8), "BYTE_3": (24, 8), "WORD_0": (0, 16),
             "WORD_1": (16, 16), "DWORD": (0, 32)}


def _sdwa(ins: Instr, ctx: Ctx, st: Machine) -> Callable[[np.ndarray, np.ndarray], Callable[[], None]]:
    """GFX9 SDWA on 32-bit integer VOP2 ops: each source is a selected byte/word (zero- or, with
    ``sext()``, sign-extended); the result's low byte/word goes to the ``dst_sel`` field, the other
    bits zero (``UNUSED_PAD``) or kept from the destination (``UNUSED_PRESERVE``) — the SDWA field
    table of the GCN3/Vega ISA guides (CLRX's GcnInstrsSdwa.md spells it out as pseudo-code).
    ``UNUSED_SEXT`` on a partial ``dst_sel`` raises."""
    m = ins.mnemonic[: -len("_sdwa")]
    mods = dict(ins.mods)
    allowed = {"dst_sel", "dst_unused", "src0_sel", "src1_sel"}
    dst_sel, unused = mods.get("dst_sel", "DWORD"), mods.get("dst_unused", "UNUSED_PAD")
    if set(mods) - allowed or dst_sel not in _SDWA_SEL or \
            unused not in (("UNUSED_PAD", "UNUSED_PRESERVE") if dst_sel != "DWORD" else ("UNUSED_PAD",)):
        raise ctx.err(ins, "SDWA destination selects and other SDWA modifiers are not modelled")
    if m not in VALU_OPS or VALU_OPS[m][0] not in (("u32", "u32"), ("u32",)) or VALU_OPS[m][1] != "u32":
        raise ctx.err(ins, "SDWA is modelled for 32-bit integer ops only")
    kinds, _, fn = VALU_OPS[m]
    ops = ins.operands
    srcs = []
    for i, (x, k) in enumerate(zip(ops[1:], kinds)):
        sel = mods.get(f"src{i}_sel", "DWORD")
        if sel not in _SDWA_SEL:
            raise ctx.err(ins, f"src{i}_sel:{sel} not understood")
        lo, width = _SDWA_SEL[sel]
        plain = Reg(x.file, x.index, x.count) if isinstance(x, Reg) else x
        get = _source(plain, "u32", ctx, ins, st)
        signed = isinstance(x, Reg) and x.sext

        def pick(get=get, lo=lo, width=width, signed=signed) -> np.ndarray:
            v = (np.asarray(get()).astype(np.int64) >> lo) & ((1 << width) - 1)
            if signed and width < 32:
                v = (v ^ (1 << (width - 1))) - (1 << (width - 1))
            return (v & 0xFFFFFFFF).astype(_U32)
        srcs.append(pick)
    w = _dest_writer(ops[0], "u32", ctx, ins, st)
    lo, width = _SDWA_SEL[dst_sel]
    field = _U32(((1 << width) - 1) << lo)
    old = _source(ops[0], "u32", ctx, ins, st) if unused == "UNUSED_PRESERVE" else (lambda: _U32(0))

    def run(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
        r = np.asarray(fn(*(f() for f in srcs))).astype(_U32)
        r = ((r << _U32(lo)) & field) | (np.asarray(old()) & ~field)  # DWORD: field is every bit
        return lambda: w(r, act)
    return run


def _lanes(m: str, ins: Instr, ctx: Ctx, st: Machine) -> _Run:
    """Between a lane and an SGPR, EXEC ignored: ``v_readlane_b32 sD, vS, lane``, ``v_readfirstlane_b32
    sD, vS`` (the lowest active lane; lane 0 when EXEC is zero), ``v_writelane_b32 vD, sS, lane``."""
    ops = ins.operands
    L = ctx.wave

    def lane_sel(op: object) -> Callable[[], np.ndarray]:
        if isinstance(op, Imm) and isinstance(op.value, int):
            return lambda: np.full(st.W, op.value & (L - 1), np.int64)
        if isinstance(op, Reg) and op.file == "s" and op.count == 1:
            return lambda: st.s[op.index].astype(np.int64) & (L - 1)
        raise ctx.err(ins, "the lane select must be an SGPR or an integer")

    if m == "v_writelane_b32":
        d = _dest_writer(ops[0], "u32", ctx, ins, st)
        src = _source(ops[1], "u32", ctx, ins, st)
        pick = lane_sel(ops[2])

        def run_w(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
            onehot = (np.arange(L)[None, :] == pick()[:, None]) & sel[:, None]
            val = np.broadcast_to(src(), onehot.shape).copy()
            return lambda: d(val, onehot)
        return run_w
    if not (isinstance(ops[0], Reg) and ops[0].file == "s" and ops[0].count == 1):
        raise ctx.err(ins, "the destination must be one SGPR")
    di = ops[0].index
    vs = ops[1]
    if not (isinstance(vs, Reg) and vs.file in ("v", "a") and vs.count == 1 and not (vs.neg or vs.abs or vs.half)):
        raise ctx.err(ins, "the source must be one VGPR")
    b = st.vbase(vs)
    if m == "v_readlane_b32":
        pick = lane_sel(ops[2])
        first = None
    else:
        first = True

    def run_r(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
        if first:
            e = st.exec_mask()
            lane = np.where(e.any(axis=1), e.argmax(axis=1), 0)
        else:
            lane = pick()
        val = st.v[b][np.arange(st.W), lane].copy()
        return lambda: st.write_s(di, 1, val, sel)
    return run_r


# ------------------------------------------------------------------ DPP and permlane

_NOT_DPP = ("v_fmac_f32", "v_cndmask_b32", "v_lshl_add_u64", "v_readlane_b32", "v_readfirstlane_b32",
            "v_writelane_b32", "v_permlane16_b32", "v_permlanex16_b32", "v_div_scale_f32", "v_div_fmas_f32",
            "v_div_fixup_f32", "v_add_co_u32", "v_sub_co_u32", "v_subrev_co_u32", "v_add_co_ci_u32",
            "v_addc_co_u32", "v_sub_co_ci_u32", "v_subrev_co_ci_u32")
_DPP_CTRLS = ("quad_perm", "row_shl", "row_shr", "row_ror", "row_mirror", "row_half_mirror", "row_share",
              "row_newbcast", "row_xmask", "wave_shl", "wave_rol", "wave_shr", "wave_ror", "row_bcast", "dpp8")


class _Dpp:
    """DPP16/DPP8 on src0 (AMD ISA guides, "DPP"): each lane reads src0 from the lane the control
    names (:func:`~tilesim.isa.valu_ops.dpp_sources`). A source lane out of range, or disabled in
    EXEC without ``fi:1``, is invalid: with ``bound_ctrl:1`` it reads 0, else the lane is not
    written. ``row_mask``/``bank_mask`` disable destination writes only (row = 16 lanes, bank = 4
    lanes of a row). A written lane whose source the ISA leaves undefined raises."""

    def __init__(self, ins: Instr, ctx: Ctx, st: Machine) -> None:
        from tilesim.isa.valu_ops import UNDEFINED, dpp_sources

        mods = dict(ins.mods)
        ctrls = [k for k in mods if k in _DPP_CTRLS]
        gfx9 = get_target(ctx.target).isa == "gfx9"
        extra = set(mods) - set(ctrls) - {"row_mask", "bank_mask", "bound_ctrl", *(() if gfx9 else ("fi",))}
        if len(ctrls) != 1 or extra:
            raise ctx.err(ins, f"DPP modifiers {', '.join(k for k, _ in ins.mods)} not modelled")
        ctrl = ctrls[0]
        src = dpp_sources(ctrl, mods[ctrl], ctx.wave, gfx9)
        if src is None:
            raise ctx.err(ins, f"DPP control {ctrl}:{mods[ctrl]} is not modelled for {ctx.target}")
        try:
            rmask, bmask = (int(mods.get(k, "0xf"), 0) for k in ("row_mask", "bank_mask"))
        except ValueError:
            raise ctx.err(ins, "row_mask/bank_mask must be integers") from None
        if mods.get("bound_ctrl", "1") != "1" or mods.get("fi", "0") not in ("0", "1"):
            raise ctx.err(ins, "only bound_ctrl:1 and fi:0/1 are modelled")
        self.bc = "bound_ctrl" in mods
        self.fi = mods.get("fi", "0") == "1"
        lane = np.arange(ctx.wave)
        self.enabled = (((rmask >> (lane // 16)) & 1) & ((bmask >> ((lane % 16) // 4)) & 1)).astype(bool)
        self.src, self.undefined = np.clip(src, 0, ctx.wave - 1), src == UNDEFINED
        self.in_range = src >= 0
        self.ins, self.ctx, self.st = ins, ctx, st
        self.valid = self.in_range[None, :]

    def gather(self, raw: np.ndarray) -> np.ndarray:
        raw = np.broadcast_to(raw, (self.st.W, self.ctx.wave))
        valid = self.in_range[None, :] & (self.fi | self.st.exec_mask()[:, self.src])
        self.valid = valid
        return np.where(valid, raw[:, self.src], raw.dtype.type(0))

    def writer(self, w: Callable[[np.ndarray, np.ndarray], None]) -> Callable[[np.ndarray, np.ndarray], None]:
        def write(val: np.ndarray, act: np.ndarray) -> None:
            if np.any(act & self.enabled[None, :] & self.undefined[None, :]):
                raise self.ctx.err(self.ins, "a written lane reads a source the ISA leaves undefined")
            en = act & self.enabled[None, :] & (self.valid | self.bc)
            w(val, en)
        return write


def _permlane(m: str, ins: Instr, ctx: Ctx, st: Machine) -> _Run:
    """``v_permlane16_b32 vD, vS, sLo, sHi`` / ``v_permlanex16_b32`` (RDNA): lane ``i`` takes ``vS``
    from the lane that nibble ``i % 16`` of ``sHi:sLo`` names, in its own 16-lane row (x16: the other
    row). ``op_sel:[fi, bound_ctrl]``: a source lane disabled in EXEC is read anyway with ``fi``,
    else it reads 0 with ``bound_ctrl``, else ``vD`` keeps its value."""
    from tilesim.isa.valu_ops import permlane_sources

    if get_target(ctx.target).isa == "gfx9":
        raise ctx.err(ins, "v_permlane*16 is an RDNA instruction")
    ops = ins.operands
    opsel = dict(ins.mods).get("op_sel", "[0,0]")
    if len(ops) != 4 or set(dict(ins.mods)) - {"op_sel"} or opsel not in ("[0,0]", "[1,0]", "[0,1]", "[1,1]"):
        raise ctx.err(ins, "expected vD, vS, sLo, sHi with op_sel:[fi,bound_ctrl] only")
    fi, bc = opsel[1] == "1", opsel[3] == "1"
    vs = ops[1]
    if not (isinstance(vs, Reg) and vs.file == "v" and vs.count == 1 and not (vs.neg or vs.abs or vs.half)):
        raise ctx.err(ins, "the source must be one VGPR")
    b = st.vbase(vs)
    lo, hi = (_source(x, "u32", ctx, ins, st) for x in ops[2:])
    w = _dest_writer(ops[0], "u32", ctx, ins, st)
    for x in ops[2:]:
        if isinstance(x, Reg) and x.file != "s":
            raise ctx.err(ins, "the lane selects must be SGPRs or constants")

    def run(act: np.ndarray, sel: np.ndarray) -> Callable[[], None]:
        W = st.W
        los, his = (np.broadcast_to(np.asarray(f()), (W, 1))[:, 0] for f in (lo, hi))  # one select per wave
        src = permlane_sources(los, his, ctx.wave, m == "v_permlanex16_b32")
        rows = np.arange(W)[:, None]
        valid = fi | st.exec_mask()[rows, src]
        val = np.where(valid, st.v[b][rows, src], _U32(0))
        en = act & (valid | bc)
        return lambda: w(val, en)
    return run
