"""gfx1250 rows (CDNA5-generation WMMA, wave32 only), split from :mod:`catalog_amd` by concern.

The rows reuse catalog_amd's factories (``_wmma``, ``_builtin``) and modifier values; each row
names its sources and confidence in its notes and in docs/catalog.md.
"""

from __future__ import annotations

from tilesim.matrix.catalog_amd import _IU, FP8_PAIRS, NEG, NEG_HI, SIGNED, _bits, _builtin, _regs, _wmma
from tilesim.matrix.geometry import AccGeometry, InputGeometry
from tilesim.matrix.instruction import MatrixInstruction

__all__ = ["GFX1250_ROWS"]


def _gfx1250() -> list[MatrixInstruction]:
    """gfx1250 dense WMMA (wave32 only). A/B: chunks of ``kl`` k alternate the two lane halves
    (Composable Kernel ``LayoutFromDataType`` = Triton WMMA v3); C/D as RDNA4 wave32.
    Medium confidence: the CDNA5 ISA tables were not available to us; see docs/catalog.md.
    SWMMAC is not modelled: its sparse-A and index layouts are not in any source we could read.
    """
    rows = []
    specs = [
        ("v_wmma_f32_16x16x4_f32", 4, "f32", "f32", "f32", 2, "V8fIbV2fIbV2fIsV8fIbIb"),
        ("v_wmma_f32_16x16x32_f16", 32, "f16", "f32", "f32", 8, "V8fIbV16hIbV16hIsV8fIbIb"),
        ("v_wmma_f32_16x16x32_bf16", 32, "bf16", "f32", "f32", 8, "V8fIbV16yIbV16yIsV8fIbIb"),
        ("v_wmma_f16_16x16x32_f16", 32, "f16", "f16", "f16", 8, "V8hIbV16hIbV16hIsV8hIbIb"),
        ("v_wmma_bf16_16x16x32_bf16", 32, "bf16", "bf16", "bf16", 8, "V8yIbV16yIbV16yIsV8yIbIb"),
        ("v_wmma_bf16f32_16x16x32_bf16", 32, "bf16", "f32", "bf16", 8, "V8yIbV16yIbV16yIsV8fIbIb"),
        ("v_wmma_i32_16x16x64_iu8", 64, "i8", "i32", "i32", 8, "V8iIbV8iIbV8iV8iIbIb"),
    ]
    for kk, vec in ((64, "V8i"), (128, "V16i")):
        for out, osig in (("f32", "V8f"), ("f16", "V8h")):
            specs += [(f"v_wmma_{out}_16x16x{kk}_{an}_{bn}", kk, (an, bn), out, out, 8, f"{osig}{vec}{vec}Is{osig}IbIb")
                      for an, bn in FP8_PAIRS]
    for name, k, a, c, d, kl, sig in specs:
        at, bt = (f"{a[0]}_ocp", f"{a[1]}_ocp") if isinstance(a, tuple) else (a, a)
        ab, cb, db = _bits(at), _bits(c), _bits(d)
        per_lane = 16 * k // 32
        inp = InputGeometry(16, 2, kl, 32, per_lane)
        acc_c = AccGeometry(16, 2, 8, 32, 8)
        geo = {32: {"A": (inp, ab), "B": (inp, ab), "C": (acc_c, cb), "D": (acc_c, db)}}
        regs = {32: _regs(geo[32])}
        mods = (NEG, NEG_HI) if ab >= 16 else (SIGNED,) if at == "i8" else ()
        # clang's gfx1250 forms: (neg_a, A, neg_b, B, c_mod, C, reuse_a, reuse_b); iu8 has signedness bits
        # instead of neg and no c_mod; fp8/f8f6f4 have neither
        imms = (("neg_a", "neg_b", "c_mod") if ab >= 16 else ("a_signed", "b_signed") if at == "i8"
                else ("c_mod",)) + ("reuse_a", "reuse_b")
        at, bt = _IU.get(at, at), _IU.get(bt, bt)
        row = _wmma("gfx1250", name, k, at, c, None, geo, regs, b=bt, d=d, mods=mods,
                    builtins=(_builtin("__builtin_amdgcn_" + name[2:], sig, 32, imms),),
                    notes="layout from CK/Triton (medium confidence); cycles unknown")
        rows.append(row)
    return rows


GFX1250_ROWS: list[MatrixInstruction] = _gfx1250()
