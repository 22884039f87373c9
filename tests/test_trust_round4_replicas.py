"""Round four: the ISA emulator does not pick a copy where the hardware's choice is unknown.

RDNA3 WMMA reads A and B from lanes 0-15 and their copies in lanes 16-31. When the copies differ,
which one the hardware multiplies no source states. The emulator used the lowest lane's copy and
said so in a note, and ``tilesim emulate`` exited 0 with that guess in the output buffers (and
``run --device emulator`` would have called it EMULATED_MATCH). Now ``emulate`` exits 1 and the
verdict is EMULATED_MISMATCH. The kernel below writes row 4 of A into lane 19 where lane 3 holds
row 3: by construction, not by tilesim, the copies of A[3][*] differ.
"""

from __future__ import annotations

import numpy as np
import pytest

KERNEL = """typedef _Float16 half16 __attribute__((ext_vector_type(16)));
typedef float float8 __attribute__((ext_vector_type(8)));
extern "C" __attribute__((global)) void k(const _Float16* A, const _Float16* B, float* C) {
  int lane = __builtin_amdgcn_workitem_id_x(), r = lane % 16;
  int ra = (lane >= 16 && r == 3 && SKEW) ? 4 : r;
  half16 a, b;
  float8 c = {};
  for (int i = 0; i < 16; ++i) { a[i] = A[ra * 16 + i]; b[i] = B[i * 16 + r]; }
  c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a, b, c);
  for (int v = 0; v < 8; ++v) C[(v * 2 + lane / 16) * 16 + r] = c[v];
}
"""
ARGS = ["--target", "gfx1100", "--kernel", "k", "--block", "32", "--arg", "A=f16[16,16]", "--arg", "B=f16[16,16]",
        "--arg", "C=zeros:f32[16,16]"]


@pytest.mark.compiler
@pytest.mark.parametrize(("skew", "status"), [(1, 1), (0, 0)])
def test_emulate_exits_1_when_replicated_copies_differ(tmp_path, capsys, skew, status):
    from tilesim.cli import main
    src = tmp_path / "k.hip"
    src.write_text(KERNEL.replace("SKEW", str(skew)))
    assert main(["emulate", str(src), *ARGS]) == status
    out = capsys.readouterr().out
    assert ("differ" in out) == bool(skew)


@pytest.mark.compiler
def test_the_verdict_does_not_pass_an_emulation_that_read_differing_copies(monkeypatch):
    import examples.gemm as g
    import tilesim.diff.verdict as verdict
    from tilesim.diff import run
    from tilesim.isa import emulate_program

    prog = g.gemm.specialize(target="gfx1100", M=16, N=16, K=16)
    arrays = g.inputs(prog)

    def with_a_note(p, a):  # the compiled code fed the instruction copies that differ (a codegen bug's shape)
        em = emulate_program(p, a)
        return type(em)(**{**em.__dict__, "notes": ("line 1 v_wmma_f32_16x16x16_f16: copies of A[3][0] differ",)})

    monkeypatch.setattr(verdict, "emulate_program", with_a_note)
    v = run(prog, device="emulator", reference=g.reference(**arrays), **arrays)
    assert v.status == "EMULATED_MISMATCH" and "differ" in v.reason
    assert np.array_equal(v.device["C"], v.simulated["C"])  # same numbers: the failure is the undefined read
