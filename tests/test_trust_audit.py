"""The layout audit fails closed (trust, round two): a kernel whose matrix-instruction operands the
audit cannot trace, or that runs no matrix instruction, is UNDECIDED (exit 3), never "0 findings",
exit 0. The expected answers come from the programs' meaning: an i8 GEMM's A and B are 8-bit
buffers, which carry too few codes to trace (the audit's documented limit); a copy kernel has no
matrix instruction at all. The right neighbours (an f16 GEMM, a clean hand-written kernel) still audit
clean with exit 0."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from examples.gemm import gemm
from examples.int8_gemm import int8_gemm
from tests.test_isa_hip import RDNA3_ROW, _source
from tilesim.isa.audit import audit_program

pytestmark = pytest.mark.compiler
ROOT = Path(__file__).resolve().parents[1]

COPY = r"""
extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(32, 32)))
void copy(const float* __restrict__ X, float* __restrict__ Y) {
  int l = __builtin_amdgcn_workitem_id_x();
  Y[l] = X[l];
}
"""


def test_int8_operands_are_untraceable_so_the_audit_is_undecided() -> None:
    r = audit_program(int8_gemm.specialize(target="gfx1201", M=16, N=16, K=16, mma="v_wmma_i32_16x16x16_iu8", neg=3))
    assert r.matrix_calls == 1 and not r.findings
    assert not r.ok and r.exit_status == 3, str(r)  # before: ok, "0 finding(s)", with A and B never looked at
    assert {re.search(r"no ([AB]) operand", u).group(1) for u in r.undecided} == {"A", "B"}
    assert "UNDECIDED" in str(r)


def test_f16_gemm_is_still_decided_and_clean() -> None:
    r = audit_program(gemm.specialize(target="gfx1201", M=16, N=16, K=16, mma="v_wmma_f32_16x16x16_f16"))
    assert r.ok and r.exit_status == 0 and not r.undecided, str(r)


def test_cli_audit_of_a_kernel_without_matrix_instructions_exits_3(tmp_path, capsys) -> None:
    from tilesim.cli import main

    f = tmp_path / "copy.hip"
    f.write_text(COPY)
    args = ["--target", "gfx1201", "--kernel", "copy", "--block", "32", "--arg", "X=f32[32]", "--arg", "Y=zeros:f32[32]"]
    assert main(["audit", str(f), *args]) == 3
    assert "ran no matrix instruction" in capsys.readouterr().out
    assert main(["emulate", str(f), *args, "--audit", "--format", "json"]) == 3
    assert '"undecided"' in capsys.readouterr().out
    assert main(["emulate", str(f), *args]) == 0  # emulating it (no audit asked) is fine


def test_cli_audit_of_a_clean_kernel_still_exits_0(tmp_path, capsys) -> None:
    from tilesim.cli import main

    f = tmp_path / "good.hip"
    f.write_text(_source(11, RDNA3_ROW))
    assert main(["audit", str(f), "--target", "gfx1100", "--kernel", "abt", "--block", "32", "--arg", "A=f16[16,16]",
                 "--arg", "X=f32[16,16]", "--arg", "C=f32[16,16]", "--arg", "D=zeros:f32[16,16]"]) == 0
    assert "UNDECIDED" not in capsys.readouterr().out


@pytest.mark.parametrize("doc", ["README.md", "docs/cli.md"])
def test_documented_audit_exit_3(doc: str) -> None:
    from tilesim.cli.parser import _EPILOG

    text = (ROOT / doc).read_text()
    row = re.search(r"^\| `tilesim emulate` / `audit` \|(.*)\|\s*$", text, re.M)
    if row:
        assert "undecided" in row.group(1).split("|")[2]
    else:
        assert re.search(r"^  audit +1 .*\n +3  undecided", text, re.M)
    assert re.search(r"^  audit +1 .*\n +3  undecided", _EPILOG, re.M)


def test_results_that_reach_no_traceable_output_leave_the_store_audit_undecided() -> None:
    """gemm_bias stores bf16(relu(acc + bias)): the result codes (integers up to 2**24) do not survive
    the epilogue and the bf16 store, so where D is stored cannot be audited; A and B still are."""
    from examples.gemm_bias import programs

    (p,) = [p for p in programs() if p.target == "gfx1201"]
    assert p.tensor("C").dtype == "bf16"
    r = audit_program(p)
    assert not r.findings and r.checked > 0 and r.exit_status == 3, str(r)
    assert any("where D is stored was not audited" in u for u in r.undecided), r.undecided
    assert not any("operand slot" in u for u in r.undecided)  # the operands were traced
