"""``tilesim audit`` (``emulate --audit``) fails on what ``emulate`` fails on (trust, round five).

The audit traces which element each matrix-instruction operand slot holds by emulating the kernel; the
emulator's loads land at once, so with an ``s_waitcnt`` deleted the codes still trace right there, while
on hardware the instruction reads registers whose load is in flight. ``tilesim emulate`` exits 1 on that
hazard (round two); before 0.11.0 the audit of the same code said "0 finding(s)", ``ok``, exit 0: adding
``--audit`` turned a failure into a pass. Now the emulation's races, hazards and disagreeing replicated
copies are in ``AuditReport.hazards`` and fail it (exit 1).

The broken code is clang's own ISA for examples/gemm.py with every load wait deleted (the hazard is the
emulator's independent finding on it, tests/test_isa_planted.py); the clean ISA still audits OK.
"""

from __future__ import annotations

import numpy as np
import pytest

from examples.gemm import gemm, inputs
from tilesim.codegen.hip import emit_hip
from tilesim.hw.offline import compile_hip
from tilesim.isa import emulate
from tilesim.isa.audit import audit

CASES = [("gfx1201", "v_wmma_f32_16x16x16_f16", "s_wait_loadcnt"), ("gfx942", "v_mfma_f32_16x16x16f16",
                                                                     "s_waitcnt vmcnt")]


@pytest.mark.compiler
@pytest.mark.parametrize(("target", "mma", "wait"), CASES)
def test_an_audit_of_code_with_a_deleted_wait_fails(target, mma, wait):
    prog = gemm.specialize(target=target, M=32, N=32, K=32, mma=mma)
    em = emit_hip(prog)
    isa = compile_hip(em.source, target, wave_size=prog.wave_size).isa
    arrays = inputs(prog)
    args = [("A", arrays["A"]), ("B", arrays["B"]), ("C", np.zeros((32, 32), np.float32))]
    broken = "\n".join(ln for ln in isa.splitlines() if not ln.strip().startswith(wait))
    emu = emulate(broken, target, em.kernel, grid=em.grid, block=em.block, args=args)
    assert emu.hazards  # the emulator's own finding: `tilesim emulate` exits 1 on it
    rep = audit(broken, target, em.kernel, grid=em.grid, block=em.block, args=args)
    assert not rep.ok and rep.exit_status == 1 and not rep  # was ok, exit 0
    assert rep.hazards and "in flight" in rep.hazards[0] and "hazard" in str(rep)
    clean = audit(isa, target, em.kernel, grid=em.grid, block=em.block, args=args)
    assert clean.ok and clean.hazards == ()
