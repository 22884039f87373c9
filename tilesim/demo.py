"""``tilesim demo``: a short tour of the truth layer.

It shows one CDNA and one RDNA target, the same product computed by MFMA (wave64) and WMMA
(wave32), where every element lives, and the porting trap between them (RDNA3 vs RDNA4
accumulator rows), checked by executing both instructions on the same matrices.
"""

from __future__ import annotations

import json

import numpy as np

from tilesim.hw.targets import get_target, occupancy
from tilesim.layouts.render import render_registers
from tilesim.matrix.catalog import lookup
from tilesim.matrix.explain import explain
from tilesim.matrix.numerics import execute_logical

__all__ = ["tour"]


def _target_line(name: str) -> str:
    t = get_target(name)
    waves = "/".join(f"wave{w}" for w in t.wave_sizes)
    occ = occupancy(t, 128)
    return (f"{t.name} ({t.family}, {t.marketing}): {waves}, {t.vgprs_per_simd} VGPRs/SIMD, "
            f"LDS {t.lds_bytes // 1024} KiB in {t.lds_banks} banks, matrix path {t.matrix_path}, "
            f"fp8 {t.fp8 or 'none'}; a 128-VGPR wave gets {occ} waves/SIMD")


def _head(text: str, lines: int) -> str:
    rows = text.splitlines()
    more = f"\n  … {len(rows) - lines} more rows" if len(rows) > lines else ""
    return "\n".join(rows[:lines]) + more


def tour(fmt: str = "text") -> str:
    cdna = lookup("v_mfma_f32_32x32x8f16", "gfx942")
    rdna4 = lookup("v_wmma_f32_16x16x16_f16", "gfx1201")
    rdna3 = lookup("v_wmma_f32_16x16x16_f16", "gfx1100")

    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 16)).astype(np.float16)
    d4 = execute_logical(rdna4, a, b)
    d3 = execute_logical(rdna3, a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.max(np.abs(d4 - ref)))

    # Same logical D, different registers: where does D[9][3] live on each?
    where3 = rdna3.layout("D").owners_of(block=0, row=9, col=3)
    where4 = rdna4.layout("D").owners_of(block=0, row=9, col=3)
    mismatch = int(sum(
        rdna3.layout("D").apply(lane=l, slot=v)["row"] != rdna4.layout("D").apply(lane=l, slot=v)["row"]
        for l in range(32) for v in range(8)
    ))

    if fmt == "json":
        return json.dumps({
            "targets": [get_target("gfx942").name, get_target("gfx1201").name],
            "instructions": [explain(cdna, as_dict=True), explain(rdna4, as_dict=True)],
            "rdna3_vs_rdna4_D": {"D[9][3]": {"gfx1100": where3, "gfx1201": where4},
                                 "registers_holding_different_rows": mismatch},
            "wmma_max_abs_error_vs_float64": err,
        }, indent=1, default=str)

    out = [
        "tilesim — which lane, VGPR and bits hold which matrix element",
        "",
        "1. Two targets",
        "   " + _target_line("gfx942"),
        "   " + _target_line("gfx1201"),
        "",
        "2. A CDNA3 instruction (wave64)",
        str(explain(cdna)),
        "",
        "   A operand, lanes x VGPRs (first 8 lanes): (i,k)@bits",
        _head(render_registers(cdna.layout("A")), 10),
        "",
        "3. An RDNA4 instruction (wave32)",
        str(explain(rdna4)),
        "",
        "   D accumulator, lanes x VGPRs (first 8 lanes of 32):",
        _head(render_registers(rdna4.layout("D")), 10),
        "",
        "4. The porting trap: the same WMMA mnemonic on RDNA3 and RDNA4",
        f"   D[9][3] lives at {where3} on gfx1100 but at {where4} on gfx1201;",
        f"   {mismatch} of 256 (lane, VGPR) accumulator slots hold a different row.",
        f"   Both compute the same D (max |gfx1100 - gfx1201| = {float(np.max(np.abs(d3 - d4))):g});",
        f"   the model's D matches float64 A@B within {err:.2e} (one rounding to f32).",
        "",
        "Next: `tilesim explain MNEMONIC --arch ARCH`, `tilesim layout --arch ARCH --instr MNEMONIC --operand A`.",
    ]
    return "\n".join(out)
