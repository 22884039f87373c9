"""Porting a CDNA3 GEMM to RDNA4 and RDNA3, with proof: ``C = A @ B`` (f16 in, f32 accumulate).

The source is ``examples/gemm.py``'s kernel specialised for gfx942 (wave64) with
``v_mfma_f32_32x32x8f16``: one 32x32 tile of C per workgroup, 8 k per step. ``ts.port`` moves it to

* gfx1201 (RDNA4, wave32) with ``v_wmma_f32_16x16x16_f16`` — 16x16 tiles, 16 k per step, four
  times the workgroups; A/B hold 8 k per lane in two groups of four (k = slot % 4 +
  4 * (lane / 16) + 8 * (slot / 4)) and C rows are v + 8 * (lane / 16);
* gfx1100 (RDNA3, wave32) with the same mnemonic but other layouts: A/B hold all 16 k in every
  lane and lanes 16-31 repeat lanes 0-15; C rows interleave as 2 * v + lane / 16.

Each port is proven equivalent to the source (``ts.equivalent``: one-hot probes along every line
of A and B plus random inputs, compared exactly), simulated against a float64 numpy reference,
then all three programs are emitted as HIP and compiled offline (AMDGPU clang from the ziglang
wheel), and the ISA is checked for the instruction each should use. Nothing here runs on AMD
hardware. Run: ``python -m examples.port_cdna3``.
"""

from __future__ import annotations

import functools

import numpy as np

import tilesim as ts
from examples.gemm import gemm, inputs, reference

__all__ = ["SOURCE_TARGET", "SOURCE_INSTR", "TARGETS", "ISA_MNEMONIC", "source", "ports", "programs", "inputs",
           "reference", "compile_all"]

SOURCE_TARGET, SOURCE_INSTR = "gfx942", "v_mfma_f32_32x32x8f16"
TARGETS = ("gfx1201", "gfx1100")
# The mnemonic each target's compiled ISA must contain (as LLVM prints it; gfx94x spells the MFMA
# with an underscore before f16, unlike gfx908/gfx90a's v_mfma_f32_32x32x8f16).
ISA_MNEMONIC = {"gfx942": "v_mfma_f32_32x32x8_f16", "gfx1201": "v_wmma_f32_16x16x16_f16",
                "gfx1100": "v_wmma_f32_16x16x16_f16"}


def source(M: int = 64, N: int = 64, K: int = 64) -> ts.Program:
    return gemm.specialize(target=SOURCE_TARGET, M=M, N=N, K=K, mma=SOURCE_INSTR)


@functools.lru_cache(maxsize=None)
def ports(M: int = 64, N: int = 64, K: int = 64) -> tuple[ts.Port, ...]:
    """The source ported to every target in ``TARGETS`` (each proven, or ``ts.port`` raises)."""
    src = source(M, N, K)
    return tuple(ts.port(src, t) for t in TARGETS)


def programs(M: int = 64, N: int = 64, K: int = 64) -> list[ts.Program]:
    """The source and its ports, so ``tilesim check/compile examples/port_cdna3.py`` see all three."""
    return [source(M, N, K), *(p.program for p in ports(M, N, K))]


def compile_all(progs: list[ts.Program]) -> list[tuple[ts.Program, object]]:
    """Emit and compile each program offline; raises ``ToolchainError`` when no AMDGPU clang exists."""
    from tilesim.codegen import emit_hip
    from tilesim.hw.offline import compile_hip

    return [(p, compile_hip(emit_hip(p).source, p.target, wave_size=p.wave_size)) for p in progs]


if __name__ == "__main__":
    progs = programs()
    for pr in ports():
        print(pr, end="\n\n")
    for prog in progs:
        arrays = inputs(prog)
        err = float(np.abs(ts.simulate(prog, **arrays)["C"] - reference(**arrays)["C"]).max())
        print(f"{prog.target:8} wave{prog.wave_size} grid {prog.grid}: simulated max |C - float64| = {err:.2e}")
    try:
        compiled = compile_all(progs)
    except ts.ToolchainError as e:
        print(f"compile skipped: {e}")
    else:
        for prog, comp in compiled:
            want = ISA_MNEMONIC[prog.target]
            have = comp.mnemonics()
            print(f"{prog.target:8} compiled: {have.count(want)} x {want} in the ISA"
                  f"{'' if want in have else ' -- MISSING'}, {comp.metadata.get('vgpr_count')} VGPRs, "
                  f"wave{comp.metadata.get('wavefront_size')} (not run on AMD hardware)")
