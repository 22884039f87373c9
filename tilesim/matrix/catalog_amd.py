"""AMD rows: MFMA and SMFMAC (CDNA1–CDNA4), WMMA and SWMMAC (RDNA3, RDNA4); gfx1250 in catalog_gfx1250.py.

One row per instruction per architecture family, made by small factories; a row per line.
Facts (shapes, blocks, register counts, cycles, modifiers) come from AMD's matrix instruction
calculator v1.3.2 (``--detail-instruction``) and the CDNA3/CDNA4/RDNA3/RDNA4 ISA guides
(chapter 7, "Matrix Arithmetic Instructions"); builtin names and operand types from clang's
builtin table (``BuiltinsAMDGPU.def``), checked by compiling each one (tests/test_compiler_truth.py).
Layouts are recipes over :mod:`tilesim.matrix.geometry`; tests compare every one of them with the
calculator's printed layouts (tests/golden/amd_calculator).
"""

from __future__ import annotations

import re
from dataclasses import replace

from tilesim.targets import family_targets

from tilesim.matrix.dtypes import dtype
from tilesim.matrix.geometry import AccGeometry, FormatGeometry, InputGeometry
from tilesim.matrix.instruction import Builtin, Immediate, MatrixInstruction, Modifier
from tilesim.matrix.scale import mx_scales

__all__ = ["AMD_ROWS", "parse_clang_type"]

CALC = "AMD matrix instruction calculator v1.3.2 (--detail-instruction); "
ISA = {
    "cdna1": "AMD Instinct MI100 (CDNA1) ISA §7",
    "cdna2": "AMD Instinct MI200 (CDNA2) ISA §7",
    "cdna3": "AMD Instinct MI300 (CDNA3) ISA §7.1",
    "cdna4": "AMD Instinct CDNA4 ISA (Aug 2025) §7.1, Table 28",
    "rdna3": "AMD RDNA3 ISA §7.9 (WMMA)",
    "rdna4": "AMD RDNA4 ISA §7.9 (WMMA/SWMMAC)",
    "gfx1250": "LLVM gfx1250 WMMA tests + Composable Kernel / Triton WMMA v3 / AMD rocjitsu layouts (CDNA5 ISA not read)",
}


def _bits(t: str) -> int:
    """Bits one element of type ``t`` occupies in registers (xf32: 32)."""
    return dtype(t).reg_bits

_IU = {"i8": "u8", "i4": "u4"}  # RDNA iu8/iu4: unsigned unless the NEG bits say signed
FP8_PAIRS = [(a, b) for a in ("fp8", "bf8") for b in ("fp8", "bf8")]  # the A x B fp8 variants of a shape


def _regs(geo: dict[str, tuple[object, int]]) -> dict[str, int]:
    """VGPRs per lane of each operand: slots x element bits, rounded up; the sparse index is 1 VGPR."""
    return {op: 1 if op == "K" else -(-g.slots * bits // 32) for op, (g, bits) in geo.items()}  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- clang types
_CLANG_BASE = {"f": "f32", "d": "f64", "x": "f16", "h": "fp16", "y": "bf16", "s": "i16", "i": "i32",
               "b": "bool", "c": "i8"}


def parse_clang_type(sig: str) -> tuple[str, tuple[str, ...]]:
    """Decode a clang builtin type string (``V8fV16xV16xV8f``) into (return, args).

    Vectors become ``v<N><base>``; immediates ``imm``; ``Wi``/``Li`` are i64, ``Zi`` i32.
    """
    toks = re.findall(r"(I?)(?:V(\d+))?([WLZU]*)([a-z])", sig)
    out = []
    for imm, vec, mod, base in toks:
        b = _CLANG_BASE[base]
        if base == "i" and ("W" in mod or "L" in mod):
            b = "i64"
        t = f"v{vec}{b}" if vec else b
        out.append(f"imm:{t}" if imm else t)
    return out[0], tuple(out[1:])


# Immediate arguments of the builtins, by name, and the modifier bits each carries. Sources: clang's
# BuiltinsAMDGPU.def parameter order; CDNA3/CDNA4 ISA §7.1 (CBSZ, ABID, BLGP fields); RDNA3/RDNA4 ISA
# §7.9 (NEG bits as iu8/iu4 signedness, OPSEL[2] for 16-bit results); gfx950 scale byte selects
# ``opsel_a``/``opsel_b`` (clang: op_sel[i] = bit 0, op_sel_hi[i] = bit 1; tests/test_scaled_mfma.py).
# The rest are always 0: clamp, the gfx1250 reuse hints, and fields tilesim does not model (gfx1250 NEG/C modifiers).
IMMEDIATES = {imm.name: imm for imm in (
    Immediate("cbsz", "cbsz"), Immediate("abid", "abid"), Immediate("blgp", "blgp"),
    Immediate("a_signed", "neg", 0, 1), Immediate("b_signed", "neg", 1, 1), Immediate("opsel_hi", "opsel", 2, 1),
    Immediate("clamp"), Immediate("reuse_a"), Immediate("reuse_b"),
    Immediate("opsel_a", "opsel_a"), Immediate("opsel_b", "opsel_b"),
    Immediate("neg_a"), Immediate("neg_b"), Immediate("c_mod"),
)}
MFMA_IMMS = ("cbsz", "abid", "blgp")
SMFMAC_IMMS = ("cbsz", "abid")
SCALE_IMMS = ("cbsz", "blgp", "opsel_a", "opsel_b")
SIGNED_IMMS = ("a_signed", "b_signed", "clamp")


def _builtin(name: str, sig: str, wave: int, imms: tuple[str, ...] = ()) -> Builtin:
    """A builtin from its clang type string; ``imms`` names its immediate arguments in order."""
    ret, args = parse_clang_type(sig)
    names = iter(imms)
    named = tuple(f"imm:{next(names)}" if t.startswith("imm:") else t for t in args)
    if next(names, None) is not None:
        raise ValueError(f"{name}: more immediate names than immediates in {sig}")
    return Builtin(name, ret, named, wave, tuple(IMMEDIATES[t[4:]] for t in named if t.startswith("imm:")))


# --------------------------------------------------------------------------- modifiers
def _cbsz_abid(blocks: int) -> tuple[Modifier, ...]:
    top = blocks.bit_length() - 1
    return (
        Modifier("cbsz", tuple(range(top + 1)), "A broadcast: groups of 2**CBSZ blocks share one block's A", "broadcast"),
        Modifier("abid", tuple(range(1 << top)), "A broadcast source block within its group (ABID < 2**CBSZ)", "broadcast"),
    )


BLGP = Modifier("blgp", tuple(range(8)), "B lane pattern: lanes read B from other lanes (broadcast/rotate)",
                "lane_pattern")
BLGP_NEG = Modifier("blgp", tuple(range(8)), "f64: negate A (bit 0), B (bit 1), C (bit 2)", "negate")
NEG = Modifier("neg", tuple(range(8)), "negate A (bit 0), B (bit 1), C (bit 2); low halves for packed 16-bit")
NEG_HI = Modifier("neg_hi", tuple(range(8)), "negate high halves of packed 16-bit A/B; |C| for bit 2")
NEG_C = Modifier("neg", (0, 4), "bit 2 negates C")
NEG_HI_C = Modifier("neg_hi", (0, 4), "bit 2 takes |C|")
SIGNED = Modifier("neg", (0, 1, 2, 3), "integer signedness: bit 0 A signed, bit 1 B signed (unsigned by default)",
                  "signedness")
OPSEL_HI = Modifier("opsel", (0, 4), "OPSEL[2]: 16-bit C/D in the high half of each VGPR", "half_select")


# --------------------------------------------------------------------------- MFMA
_FP8 = {"fnuz": ("fp8_fnuz", "bf8_fnuz"), "ocp": ("fp8_ocp", "bf8_ocp")}


def _mfma(
    family: str,
    name: str,
    m: int,
    k: int,
    blocks: int,
    a: str,
    c: str,
    cycles: int | None,
    *,
    alias: str = "",
    b: str | None = None,
    mods: tuple[Modifier, ...] = (),
    builtin: str = "",
    sig: str = "",
    sparse: bool = False,
) -> MatrixInstruction:
    """A CDNA MFMA/SMFMAC row. ``alias`` is the other LLVM spelling (gfx908/gfx90a form)."""
    b = b or a
    n = m
    lanes = 64
    abits, bbits, cbits = _bits(a), _bits(b), _bits(c)
    f64 = c == "f64"
    per_lane = k * blocks * m // lanes  # k elements of one row per lane
    if sparse:
        # 4:2 structured sparsity: A holds 2 of every 4 k; one A slot (and one 4-bit index
        # slot) per 4-group. B is dense with twice the k per lane.
        units = per_lane // 4
        geo_a = InputGeometry(m, lanes // m, units, lanes, units, unit=4)
        geo_k = InputGeometry(m, lanes // m, units, lanes, 8, unit=4)
        geo_b = InputGeometry(n, lanes // n, per_lane, lanes, per_lane)
        a_bits = 2 * abits
    else:
        geo_a = InputGeometry(m, lanes // m, per_lane, lanes, per_lane, block_minor=f64 and blocks > 1)
        geo_b = InputGeometry(n, lanes // n, per_lane, lanes, per_lane, block_minor=f64 and blocks > 1)
        geo_k = None
        a_bits = abits
    acc_slots = m * n * blocks // lanes
    geo_c = AccGeometry(n, lanes // n, 1 if f64 else 4, lanes, acc_slots, block_minor=f64 and blocks > 1)
    geometry: list[tuple[str, object]] = [
        ("A", (geo_a, a_bits)), ("B", (geo_b, bbits)), ("C", (geo_c, cbits)), ("D", (geo_c, cbits)),
    ]
    if geo_k is not None:
        geometry.append(("K", (geo_k, 4)))
    regs = {"A": -(-geo_a.slots * a_bits // 32), "B": -(-per_lane * bbits // 32),
            "C": -(-acc_slots * cbits // 32), "D": -(-acc_slots * cbits // 32)}
    if sparse:
        regs["K"] = 1
    bname = builtin or "__builtin_amdgcn_" + (alias or name)[2:]
    return MatrixInstruction(
        mnemonic=name,
        kind="smfmac" if sparse else "mfma",
        family=family,
        targets=family_targets(family),
        m=m, n=n, k=k, blocks=blocks,
        types=(a, b, c, c),
        wave_sizes=(64,),
        geometry=((64, tuple(geometry)),),
        registers=((64, tuple(regs.items())),),
        cycles=cycles,
        modifiers=mods,
        builtins=(_builtin(bname, sig, 64, SMFMAC_IMMS if sparse else MFMA_IMMS),) if sig else (),
        citation=CALC + ISA[family],
        aliases=(alias,) if alias else (),
        sparse=sparse,
    )


def _classic(family: str, spell3: bool) -> list[MatrixInstruction]:
    """The f32/f16/i8/bf16 MFMA set of CDNA1 (and its CDNA2/CDNA3 continuations)."""
    def nm(old: str, new: str) -> tuple[str, str]:
        return (new, old) if spell3 else (old, "")

    rows = []
    for old, new, m, k, blocks, a, c, cyc, sig in [
        ("v_mfma_f32_32x32x1f32", "v_mfma_f32_32x32x1_2b_f32", 32, 1, 2, "f32", "f32", 64, "V32fffV32fIiIiIi"),
        ("v_mfma_f32_16x16x1f32", "v_mfma_f32_16x16x1_4b_f32", 16, 1, 4, "f32", "f32", 32, "V16fffV16fIiIiIi"),
        ("v_mfma_f32_4x4x1f32", "v_mfma_f32_4x4x1_16b_f32", 4, 1, 16, "f32", "f32", 8, "V4fffV4fIiIiIi"),
        ("v_mfma_f32_32x32x2f32", "v_mfma_f32_32x32x2_f32", 32, 2, 1, "f32", "f32", 64, "V16fffV16fIiIiIi"),
        ("v_mfma_f32_16x16x4f32", "v_mfma_f32_16x16x4_f32", 16, 4, 1, "f32", "f32", 32, "V4fffV4fIiIiIi"),
        ("v_mfma_f32_32x32x4f16", "v_mfma_f32_32x32x4_2b_f16", 32, 4, 2, "f16", "f32", 64, "V32fV4xV4xV32fIiIiIi"),
        ("v_mfma_f32_16x16x4f16", "v_mfma_f32_16x16x4_4b_f16", 16, 4, 4, "f16", "f32", 32, "V16fV4xV4xV16fIiIiIi"),
        ("v_mfma_f32_4x4x4f16", "v_mfma_f32_4x4x4_16b_f16", 4, 4, 16, "f16", "f32", 8, "V4fV4xV4xV4fIiIiIi"),
        ("v_mfma_f32_32x32x8f16", "v_mfma_f32_32x32x8_f16", 32, 8, 1, "f16", "f32", 64, "V16fV4xV4xV16fIiIiIi"),
        ("v_mfma_f32_16x16x16f16", "v_mfma_f32_16x16x16_f16", 16, 16, 1, "f16", "f32", 32, "V4fV4xV4xV4fIiIiIi"),
        ("v_mfma_i32_32x32x4i8", "v_mfma_i32_32x32x4_2b_i8", 32, 4, 2, "i8", "i32", 64, "V32iiiV32iIiIiIi"),
        ("v_mfma_i32_16x16x4i8", "v_mfma_i32_16x16x4_4b_i8", 16, 4, 4, "i8", "i32", 32, "V16iiiV16iIiIiIi"),
        ("v_mfma_i32_4x4x4i8", "v_mfma_i32_4x4x4_16b_i8", 4, 4, 16, "i8", "i32", 8, "V4iiiV4iIiIiIi"),
    ]:
        name, alias = nm(old, new)
        mods = (*(_cbsz_abid(blocks) if blocks > 1 else ()), BLGP)
        rows.append(_mfma(family, name, m, k, blocks, a, c, cyc, alias=alias, mods=mods, sig=sig,
                          builtin="__builtin_amdgcn_" + old[2:]))
    if not spell3:  # CDNA1/CDNA2 only: the pre-gfx940 i8 k=8/16 forms
        for old, m, k, cyc, sig in [("v_mfma_i32_32x32x8i8", 32, 8, 64, "V16iiiV16iIiIiIi"),
                                    ("v_mfma_i32_16x16x16i8", 16, 16, 32, "V4iiiV4iIiIiIi")]:
            rows.append(_mfma(family, old, m, k, 1, "i8", "i32", cyc, mods=(BLGP,), sig=sig))
    return rows


_BF16_OLD = [  # CDNA1 bf16 (2 per VGPR, "bf16" without _1k), kept on CDNA2
    ("v_mfma_f32_32x32x2bf16", 32, 2, 2, 64, "V32fV2sV2sV32fIiIiIi"),
    ("v_mfma_f32_16x16x2bf16", 16, 2, 4, 32, "V16fV2sV2sV16fIiIiIi"),
    ("v_mfma_f32_4x4x2bf16", 4, 2, 16, 8, "V4fV2sV2sV4fIiIiIi"),
    ("v_mfma_f32_32x32x4bf16", 32, 4, 1, 64, "V16fV2sV2sV16fIiIiIi"),
    ("v_mfma_f32_16x16x8bf16", 16, 8, 1, 32, "V4fV2sV2sV4fIiIiIi"),
]
_BF16_1K = [  # CDNA2 "_1k" bf16 (4 per lane), renamed on CDNA3
    ("v_mfma_f32_32x32x4bf16_1k", "v_mfma_f32_32x32x4_2b_bf16", 32, 4, 2, 64, "V32fV4sV4sV32fIiIiIi"),
    ("v_mfma_f32_16x16x4bf16_1k", "v_mfma_f32_16x16x4_4b_bf16", 16, 4, 4, 32, "V16fV4sV4sV16fIiIiIi"),
    ("v_mfma_f32_4x4x4bf16_1k", "v_mfma_f32_4x4x4_16b_bf16", 4, 4, 16, 8, "V4fV4sV4sV4fIiIiIi"),
    ("v_mfma_f32_32x32x8bf16_1k", "v_mfma_f32_32x32x8_bf16", 32, 8, 1, 64, "V16fV4sV4sV16fIiIiIi"),
    ("v_mfma_f32_16x16x16bf16_1k", "v_mfma_f32_16x16x16_bf16", 16, 16, 1, 32, "V4fV4sV4sV4fIiIiIi"),
]


def _bf16(family: str) -> list[MatrixInstruction]:
    rows = []
    if family in ("cdna1", "cdna2"):
        for name, m, k, blocks, cyc, sig in _BF16_OLD:
            mods = (*(_cbsz_abid(blocks) if blocks > 1 else ()), BLGP)
            rows.append(_mfma(family, name, m, k, blocks, "bf16", "f32", cyc, mods=mods, sig=sig))
    if family != "cdna1":
        for old, new, m, k, blocks, cyc, sig in _BF16_1K:
            mods = (*(_cbsz_abid(blocks) if blocks > 1 else ()), BLGP)
            name, alias = (old, "") if family == "cdna2" else (new, old)
            rows.append(_mfma(family, name, m, k, blocks, "bf16", "f32", cyc, alias=alias, mods=mods, sig=sig,
                              builtin="__builtin_amdgcn_" + old[2:]))
    return rows


def _cdna3_fast(rows: list[MatrixInstruction]) -> list[MatrixInstruction]:
    """CDNA3 runs the single-block f16/bf16 forms in half the cycles and drops their BLGP."""
    halved = {"v_mfma_f32_32x32x8_f16": 32, "v_mfma_f32_16x16x16_f16": 16,
              "v_mfma_f32_32x32x8_bf16": 32, "v_mfma_f32_16x16x16_bf16": 16}
    return [replace(r, cycles=halved[r.mnemonic], modifiers=()) if r.mnemonic in halved else r for r in rows]


def _cdna3_new(family: str, fp8: str) -> list[MatrixInstruction]:
    f8, b8 = _FP8[fp8]
    rows = [
        _mfma(family, "v_mfma_i32_32x32x16_i8", 32, 16, 1, "i8", "i32", 32, sig="V16iWiWiV16iIiIiIi"),
        _mfma(family, "v_mfma_i32_16x16x32_i8", 16, 32, 1, "i8", "i32", 16, sig="V4iWiWiV4iIiIiIi"),
        _mfma(family, "v_mfma_f64_16x16x4_f64", 16, 4, 1, "f64", "f64", 32, alias="v_mfma_f64_16x16x4f64",
              mods=(BLGP_NEG,), sig="V4dddV4dIiIiIi"),
        _mfma(family, "v_mfma_f64_4x4x4_4b_f64", 4, 4, 4, "f64", "f64", 16, alias="v_mfma_f64_4x4x4f64",
              mods=(BLGP_NEG,), sig="ddddIiIiIi"),
    ]
    for shape, m, k, cyc, sig in [("16x16x32", 16, 32, 16, "V4fWiWiV4fIiIiIi"),
                                  ("32x32x16", 32, 16, 32, "V16fWiWiV16fIiIiIi")]:
        for an, bn in sorted(FP8_PAIRS):
            at, bt = (b8 if an == "bf8" else f8), (b8 if bn == "bf8" else f8)
            rows.append(_mfma(family, f"v_mfma_f32_{shape}_{an}_{bn}", m, k, 1, at, "f32", cyc, b=bt, sig=sig))
    sparse = [("v_smfmac_f32_16x16x32_f16", 16, 32, "f16", "f32", 16, "V4fV4xV8xV4fiIiIi"),
              ("v_smfmac_f32_32x32x16_f16", 32, 16, "f16", "f32", 32, "V16fV4xV8xV16fiIiIi"),
              ("v_smfmac_f32_16x16x32_bf16", 16, 32, "bf16", "f32", 16, "V4fV4sV8sV4fiIiIi"),
              ("v_smfmac_f32_32x32x16_bf16", 32, 16, "bf16", "f32", 32, "V16fV4sV8sV16fiIiIi"),
              ("v_smfmac_i32_16x16x64_i8", 16, 64, "i8", "i32", 16, "V4iV2iV4iV4iiIiIi"),
              ("v_smfmac_i32_32x32x32_i8", 32, 32, "i8", "i32", 32, "V16iV2iV4iV16iiIiIi")]
    for shape, m, k, cyc, sig in [("16x16x64", 16, 64, 16, "V4fV2iV4iV4fiIiIi"),
                                  ("32x32x32", 32, 32, 32, "V16fV2iV4iV16fiIiIi")]:
        for an, bn in sorted(FP8_PAIRS):
            at, bt = (b8 if an == "bf8" else f8), (b8 if bn == "bf8" else f8)
            sparse.append((f"v_smfmac_f32_{shape}_{an}_{bn}", m, k, (at, bt), "f32", cyc, sig))
    for name, m, k, a, c, cyc, sig in sparse:
        at, bt = a if isinstance(a, tuple) else (a, a)
        rows.append(_mfma(family, name, m, k, 1, at, c, cyc, b=bt, sig=sig, sparse=True, mods=SMFMAC_MODS[_bits(at)]))
    return rows


# SMFMAC index selection: 16-bit types keep two index sets per VGPR (ABID picks one when CBSZ=0);
# 8-bit types use the whole VGPR. Source: CDNA3 ISA §7.1.6 "Sparse matrix".
SMFMAC_MODS: dict[int, tuple[Modifier, ...]] = {
    bits: (Modifier("cbsz", (0, 1, 2, 3), "0: ABID picks the index set; otherwise set 0", "index_set"),
           Modifier("abid", tuple(range(sets)), "index set within the index VGPR (when CBSZ = 0)", "index_set"))
    for bits, sets in ((16, 4), (8, 2))
}


def _cdna() -> list[MatrixInstruction]:
    rows = _classic("cdna1", False) + _bf16("cdna1")
    rows += _classic("cdna2", False) + _bf16("cdna2")
    rows += [
        _mfma("cdna2", "v_mfma_f64_16x16x4f64", 16, 4, 1, "f64", "f64", 32, sig="V4dddV4dIiIiIi"),
        _mfma("cdna2", "v_mfma_f64_4x4x4f64", 4, 4, 4, "f64", "f64", 16, sig="ddddIiIiIi"),
    ]
    cdna3 = [
        _mfma("cdna3", "v_mfma_f32_16x16x8_xf32", 16, 8, 1, "xf32", "f32", 16, sig="V4fV2fV2fV4fIiIiIi"),
        _mfma("cdna3", "v_mfma_f32_32x32x4_xf32", 32, 4, 1, "xf32", "f32", 32, sig="V16fV2fV2fV16fIiIiIi"),
    ]
    cdna3 += _cdna3_fast(_classic("cdna3", True) + _bf16("cdna3"))
    cdna3 += _cdna3_new("cdna3", "fnuz")
    return rows + cdna3 + _cdna4()


def _cdna4() -> list[MatrixInstruction]:
    """gfx950: CDNA3's set without xf32, fp8 in the OCP flavour, plus the new CDNA4 shapes.

    Cycles of the inherited forms are not tabulated in our sources for gfx950: left unknown.
    """
    inherited = _cdna3_fast(_classic("cdna4", True) + _bf16("cdna4")) + _cdna3_new("cdna4", "ocp")
    inherited = [replace(r, cycles=None) for r in inherited]
    new = [
        _mfma("cdna4", "v_mfma_f32_16x16x32_f16", 16, 32, 1, "f16", "f32", 16, mods=(BLGP,), sig="V4fV8xV8xV4fIiIiIi"),
        _mfma("cdna4", "v_mfma_f32_32x32x16_f16", 32, 16, 1, "f16", "f32", 32, mods=(BLGP,), sig="V16fV8xV8xV16fIiIiIi"),
        _mfma("cdna4", "v_mfma_f32_16x16x32_bf16", 16, 32, 1, "bf16", "f32", 16, mods=(BLGP,), sig="V4fV8yV8yV4fIiIiIi"),
        _mfma("cdna4", "v_mfma_f32_32x32x16_bf16", 32, 16, 1, "bf16", "f32", 32, mods=(BLGP,), sig="V16fV8yV8yV16fIiIiIi"),
        _mfma("cdna4", "v_mfma_i32_16x16x64_i8", 16, 64, 1, "i8", "i32", 16, mods=(BLGP,), sig="V4iV4iV4iV4iIiIiIi"),
        _mfma("cdna4", "v_mfma_i32_32x32x32_i8", 32, 32, 1, "i8", "i32", 32, mods=(BLGP,), sig="V16iV4iV4iV16iIiIiIi"),
    ]
    return inherited + new + _f8f6f4()


# --------------------------------------------------------------------------- gfx950 f8f6f4
F8F6F4_FORMATS = {0: "fp8_ocp", 1: "bf8_ocp", 2: "fp6", 3: "bf6", 4: "fp4"}


def _f8f6f4() -> list[MatrixInstruction]:
    """v_mfma_[scale_]f32_{16x16x128,32x32x64}_f8f6f4: CBSZ/BLGP pick the A/B formats (no broadcast).

    Layout (CDNA4 ISA §7.1.5.1 tables): fp8/bf8 hold two 16-k chunks per lane, one from each K half;
    fp6/fp4 hold 32 consecutive k. Built per format by :func:`f8f6f4_layout`. The scale forms add the
    block-scale operands SA/SB (:func:`tilesim.matrix.scale.mx_scales`): one E8M0 byte per 32 k, in lane
    ``r + M*kb``, byte ``opsel_a``/``opsel_b`` of the scale VGPR.
    """
    rows = []
    fmt = tuple(F8F6F4_FORMATS)
    for shape, m, k, cyc in (("16x16x128", 16, 128, 16), ("32x32x64", 32, 64, 32)):
        for scaled in (False, True):
            name = f"v_mfma_{'scale_' if scaled else ''}f32_{shape}_f8f6f4"
            base = _mfma("cdna4", name, m, k, 1, "fp8_ocp", "f32", cyc)
            geo = dict(dict(base.geometry)[64])
            for op, mod in (("A", "cbsz"), ("B", "blgp")):
                geo[op] = (FormatGeometry(mod, tuple((code, F8F6F4_FORMATS[code], *f8f6f4_geometry(m, code),
                                                      F8F6F4_VGPRS[code]) for code in F8F6F4_FORMATS)), 8)
            regs = {"A": 8, "B": 8, "C": base.registers_for()["C"], "D": base.registers_for()["D"]}
            mods = [Modifier("cbsz", fmt, "A format: 0 fp8, 1 bf8, 2 fp6, 3 bf6, 4 fp4", "format"),
                    Modifier("blgp", fmt, "B format: 0 fp8, 1 bf8, 2 fp6, 3 bf6, 4 fp4", "format")]
            if scaled:
                sa, sb = mx_scales(m, m, k)
                geo.update({"SA": (sa, 8), "SB": (sb, 8)})
                regs.update({"SA": sa.registers, "SB": sb.registers})
                mods += [Modifier("opsel_a", sa.select_values, "byte of SA's VGPR holding A's E8M0 scales", "scale_select"),
                         Modifier("opsel_b", sb.select_values, "byte of SB's VGPR holding B's E8M0 scales", "scale_select")]
            sig = ("V4fV8ZiV8ZiV4fIiIiIiiIii" if m == 16 else "V16fV8ZiV8ZiV16fIiIiIiiIii")
            rows.append(replace(
                base,
                geometry=((64, tuple(geo.items())),),
                registers=((64, tuple(regs.items())),),
                modifiers=tuple(mods),
                # Only the scale form has a clang builtin; the unscaled opcode has none (clang emits it
                # for the scale builtin with literal 0 scales and byte selects).
                builtins=((_builtin("__builtin_amdgcn_mfma_scale_f32_" + shape + "_f8f6f4", sig, 64, SCALE_IMMS),)
                          if scaled else ()),
                notes=("cycles double (x2) when A or B is fp8/bf8; the scale forms multiply each 32-k block of A "
                       "and B by an E8M0 scale (SA, SB); clang turns the scale builtin with literal 0 scales "
                       "into the unscaled mnemonic, which applies no scale"),
                cycles=cyc,
            ))
    return rows


# VGPRs of an f8f6f4 A/B operand by format: "the operand tuple must be 8/6/4 VGPRs to match the
# format" (CDNA4 ISA §7.1.5; the assembler rejects other tuple sizes: "wrong register tuple size
# for cbsz value N"). The row's declared count (8) is the fp8/bf8 default, which the builtin takes.
F8F6F4_VGPRS = {0: 8, 1: 8, 2: 6, 3: 6, 4: 4}


def f8f6f4_geometry(m: int, fmt: int) -> tuple[InputGeometry, int]:
    """A/B geometry of gfx950 f8f6f4 for format code ``fmt`` (0-4)."""
    t = F8F6F4_FORMATS[fmt]
    bits = _bits(t)
    groups = 64 // m
    if bits == 8:  # two 16-k chunks per lane, one from each half of K
        return InputGeometry(m, groups, 16, 64, 32), bits
    return InputGeometry(m, groups, 32, 64, 32), bits  # fp6/fp4: 32 consecutive k


# --------------------------------------------------------------------------- WMMA / SWMMAC
def _wmma(
    family: str,
    name: str,
    k: int,
    a: str,
    c: str,
    cycles: int | None,
    geo: dict[int, dict[str, tuple[object, int]]],
    regs: dict[int, dict[str, int]],
    *,
    b: str | None = None,
    d: str | None = None,
    mods: tuple[Modifier, ...] = (),
    builtins: tuple[Builtin, ...] = (),
    sparse: bool = False,
    m: int = 16,
    notes: str = "",
) -> MatrixInstruction:
    waves = tuple(sorted(geo))
    return MatrixInstruction(
        mnemonic=name,
        kind="swmmac" if sparse else "wmma",
        family=family,
        targets=family_targets(family),
        m=m, n=16, k=k, blocks=1,
        types=(a, b or a, c, d or c),
        wave_sizes=waves,
        geometry=tuple((w, tuple(geo[w].items())) for w in waves),
        registers=tuple((w, tuple(regs[w].items())) for w in waves),
        cycles=cycles,
        modifiers=mods,
        builtins=builtins,
        citation=(CALC if family in ("rdna3", "rdna4") else "") + ISA[family],
        sparse=sparse,
        notes=notes,
    )


def _acc(lanes: int, rc: int, c_bits: int, order: tuple[int, ...] | None = None, stride: int = 1) -> AccGeometry:
    groups = lanes // 16
    return AccGeometry(16, groups, rc, lanes, 256 // lanes * stride, slot_stride=stride, group_order=order)


def _rdna3() -> list[MatrixInstruction]:
    """RDNA3: A/B are 16 consecutive k in lanes 0-15, replicated in every other 16-lane group;
    C/D rows interleave across lane halves (row = 2*v + lane/16 in wave32, 4*v + lane/16 in wave64)."""
    rows = []
    for name, a, c, w32sig, w64sig in [
        ("v_wmma_f32_16x16x16_f16", "f16", "f32", "V8fV16xV16xV8f", "V4fV16xV16xV4f"),
        ("v_wmma_f32_16x16x16_bf16", "bf16", "f32", "V8fV16sV16sV8f", "V4fV16sV16sV4f"),
        ("v_wmma_f16_16x16x16_f16", "f16", "f16", "V16xV16xV16xV16xIb", "V8xV16xV16xV8xIb"),
        ("v_wmma_bf16_16x16x16_bf16", "bf16", "bf16", "V16sV16sV16sV16sIb", "V8sV16sV16sV8sIb"),
        ("v_wmma_i32_16x16x16_iu8", "i8", "i32", "V8iIbV4iIbV4iV8iIb", "V4iIbV4iIbV4iV4iIb"),
        ("v_wmma_i32_16x16x16_iu4", "i4", "i32", "V8iIbV2iIbV2iV8iIb", "V4iIbV2iIbV2iV4iIb"),
    ]:
        ab, cb = _bits(a), _bits(c)
        geo, regs = {}, {}
        for lanes in (32, 64):
            copies = tuple(range(0, lanes, 16))
            inp = InputGeometry(16, 1, 16, lanes, 16, copies=copies)
            acc = _acc(lanes, 1, cb, stride=2 if cb == 16 else 1)  # 16-bit results sit in one half
            geo[lanes] = {"A": (inp, ab), "B": (inp, ab), "C": (acc, cb), "D": (acc, cb)}
            regs[lanes] = _regs(geo[lanes])
        mods = (OPSEL_HI, NEG, NEG_HI) if cb == 16 else (SIGNED,) if ab < 16 else (NEG, NEG_HI)
        base = name[2:]
        imms = ("opsel_hi",) if cb == 16 else SIGNED_IMMS if ab < 16 else ()
        bl = (_builtin(f"__builtin_amdgcn_{base}_w32", w32sig, 32, imms),
              _builtin(f"__builtin_amdgcn_{base}_w64", w64sig, 64, imms))
        cyc = 16 if a == "i4" else 32
        at = _IU.get(a, a)
        rows.append(_wmma("rdna3", name, 16, at, c, cyc, geo, regs, mods=mods, builtins=bl))
    return rows


_W64_ORDER = (0, 2, 1, 3)  # RDNA4 wave64 runs as two wave32 halves: lane bit 5 is the half
_W = _W64_ORDER

# RDNA4 A/B geometry, transcribed from the calculator's v1.3.2 RDNA4 formulas:
# (element bits, K, wave) -> (lane groups, k per chunk, slots per lane, lane-group order).
_RDNA4_DENSE = {
    (16, 16, 32): (2, 4, 8, None), (16, 16, 64): (4, 4, 4, None),  # lane = 16*(k//4 % 2) + i (+32*(k//8%2))
    (8, 16, 32): (2, 8, 8, None), (8, 16, 64): (4, 4, 4, _W),  # lane = 32*(k//4 % 2) + 16*(k//8 % 2) + i
    (4, 16, 32): (2, 8, 8, None), (4, 16, 64): (2, 8, 8, None),  # wave64 uses lanes 0-31 only
    (4, 32, 32): (2, 16, 16, None), (4, 32, 64): (4, 8, 8, _W),
}
# Sparse A (one slot per 4-group of k) and the dense B of SWMMAC.
_RDNA4_SPARSE_A = {
    (16, 32, 32): (2, 2, 4, None), (16, 32, 64): (4, 2, 2, None),
    (8, 32, 32): (2, 4, 4, None), (8, 32, 64): (4, 2, 2, _W),
    (4, 32, 32): (2, 4, 4, None), (4, 32, 64): (2, 4, 4, None),
    (4, 64, 32): (2, 8, 8, None), (4, 64, 64): (4, 4, 4, _W),
}
_RDNA4_SPARSE_B = {
    (16, 32, 32): (2, 8, 16, None), (16, 32, 64): (4, 8, 8, None),
    (8, 32, 32): (2, 16, 16, None), (8, 32, 64): (4, 8, 8, _W),
    (4, 32, 32): (2, 16, 16, None), (4, 32, 64): (4, 8, 8, _W),
    (4, 64, 32): (2, 32, 32, None), (4, 64, 64): (4, 16, 16, _W),
}


def _g(table: dict, bits: int, k: int, lanes: int, unit: int = 1) -> InputGeometry:
    groups, kc, slots, order = table[(bits, k, lanes)]
    return InputGeometry(16, groups, kc, lanes, slots, group_order=order, unit=unit)


def _rdna4_acc(lanes: int) -> AccGeometry:
    rc = 8 if lanes == 32 else 4
    return AccGeometry(16, lanes // 16, rc, lanes, 256 // lanes, group_order=_W64_ORDER if lanes == 64 else None)


def _rdna4() -> list[MatrixInstruction]:
    rows = []
    dense = [
        ("v_wmma_f32_16x16x16_f16", 16, "f16", "f32", 16, "V8fV8xV8xV8f", "V4fV4xV4xV4f"),
        ("v_wmma_f32_16x16x16_bf16", 16, "bf16", "f32", 16, "V8fV8sV8sV8f", "V4fV4sV4sV4f"),
        ("v_wmma_f16_16x16x16_f16", 16, "f16", "f16", 16, "V8xV8xV8xV8x", "V4xV4xV4xV4x"),
        ("v_wmma_bf16_16x16x16_bf16", 16, "bf16", "bf16", 16, "V8sV8sV8sV8s", "V4sV4sV4sV4s"),
        ("v_wmma_i32_16x16x16_iu8", 16, "i8", "i32", 8, "V8iIbV2iIbV2iV8iIb", "V4iIbiIbiV4iIb"),
        ("v_wmma_i32_16x16x16_iu4", 16, "i4", "i32", 8, "V8iIbiIbiV8iIb", "V4iIbiIbiV4iIb"),
        ("v_wmma_i32_16x16x32_iu4", 32, "i4", "i32", 8, "V8iIbV2iIbV2iV8iIb", "V4iIbiIbiV4iIb"),
    ]
    dense += [(f"v_wmma_f32_16x16x16_{an}_{bn}", 16, (an, bn), "f32", 8, "V8fV2iV2iV8f", "V4fiiV4f")
              for an, bn in FP8_PAIRS]
    for name, k, a, c, cyc, s32, s64 in dense:
        at, bt = (f"{a[0]}_ocp", f"{a[1]}_ocp") if isinstance(a, tuple) else (a, a)
        ab, cb = _bits(at), _bits(c)
        geo, regs = {}, {}
        for lanes in (32, 64):
            inp = _g(_RDNA4_DENSE, ab, k, lanes)
            acc = _rdna4_acc(lanes)
            geo[lanes] = {"A": (inp, ab), "B": (inp, ab), "C": (acc, cb), "D": (acc, cb)}
            regs[lanes] = _regs(geo[lanes])
        mods = (SIGNED,) if at in _IU else () if ab == 8 else (NEG, NEG_HI)
        imms = SIGNED_IMMS if at in _IU else ()
        at, bt = _IU.get(at, at), _IU.get(bt, bt)
        base = name[2:]
        bl = (_builtin(f"__builtin_amdgcn_{base}_w32_gfx12", s32, 32, imms),
              _builtin(f"__builtin_amdgcn_{base}_w64_gfx12", s64, 64, imms))
        rows.append(_wmma("rdna4", name, k, at, c, cyc, geo, regs, b=bt, mods=mods, builtins=bl))
    rows += _rdna4_sparse()
    return rows


def _rdna4_sparse() -> list[MatrixInstruction]:
    """RDNA4 SWMMAC: A keeps 2 of every 4 k (one slot per 4-group), a 4-bit index per 4-group."""
    rows = []
    sparse = [
        ("v_swmmac_f32_16x16x32_f16", 32, "f16", "f32", 16, "V8fV8hV16hV8fi", "V4fV4hV8hV4fi"),
        ("v_swmmac_f32_16x16x32_bf16", 32, "bf16", "f32", 16, "V8fV8sV16sV8fi", "V4fV4sV8sV4fi"),
        ("v_swmmac_f16_16x16x32_f16", 32, "f16", "f16", 16, "V8hV8hV16hV8hi", "V4hV4hV8hV4hi"),
        ("v_swmmac_bf16_16x16x32_bf16", 32, "bf16", "bf16", 16, "V8sV8sV16sV8si", "V4sV4sV8sV4si"),
        ("v_swmmac_i32_16x16x32_iu8", 32, "i8", "i32", 8, "V8iIbV2iIbV4iV8iiIb", "V4iIbiIbV2iV4iiIb"),
        ("v_swmmac_i32_16x16x32_iu4", 32, "i4", "i32", 8, "V8iIbiIbV2iV8iiIb", "V4iIbiIbiV4iiIb"),
        ("v_swmmac_i32_16x16x64_iu4", 64, "i4", "i32", 8, "V8iIbV2iIbV4iV8iiIb", "V4iIbiIbV2iV4iiIb"),
    ]
    sparse += [(f"v_swmmac_f32_16x16x32_{an}_{bn}", 32, (an, bn), "f32", 8, "V8fV2iV4iV8fi", "V4fiV2iV4fi")
               for an, bn in FP8_PAIRS]
    for name, k, a, c, cyc, s32, s64 in sparse:
        at, bt = (f"{a[0]}_ocp", f"{a[1]}_ocp") if isinstance(a, tuple) else (_IU.get(a, a),) * 2
        ab, cb = _bits(at), _bits(c)
        geo, regs = {}, {}
        for lanes in (32, 64):
            ga = _g(_RDNA4_SPARSE_A, ab, k, lanes, unit=4)
            gk = replace(ga, slots=8)  # the index VGPR: 4 bits per 4-group, same places as A
            gb = _g(_RDNA4_SPARSE_B, ab, k, lanes)
            acc = _rdna4_acc(lanes)
            geo[lanes] = {"A": (ga, 2 * ab), "B": (gb, ab), "C": (acc, cb), "D": (acc, cb), "K": (gk, 4)}
            regs[lanes] = _regs(geo[lanes])
        signed = (SIGNED,) if at in ("u8", "u4") else (NEG, NEG_HI) if ab == 16 else ()
        mods = (Modifier("opsel", (0, 1, 2, 3), "index_key: which index set of the index VGPR "
                         "(sets per VGPR depend on the wave size)", "index_set"), *signed)
        base = name[2:]
        imms = SIGNED_IMMS if signed == (SIGNED,) else ()
        bl = (_builtin(f"__builtin_amdgcn_{base}_w32", s32, 32, imms),
              _builtin(f"__builtin_amdgcn_{base}_w64", s64, 64, imms))
        rows.append(_wmma("rdna4", name, k, at, c, cyc, geo, regs, b=bt, mods=mods, builtins=bl, sparse=True))
    return rows


AMD_ROWS: list[MatrixInstruction] = _cdna() + _rdna3() + _rdna4()  # gfx1250: catalog_gfx1250.py
