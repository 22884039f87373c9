"""The layout audit of compiled kernels (tilesim.isa.audit): every planted bug is named by lane,
VGPR and element; clean kernels are clean; a k order shared by A and B is reported as such."""

from __future__ import annotations

import numpy as np
import pytest

from examples.gemm import gemm
from tests.test_isa_hip import RDNA3_ROW, RDNA4_ROW, _source
from tests.test_isa_planted import _mutated
from tilesim.isa.audit import audit, audit_program

pytestmark = pytest.mark.compiler
CASES = [("gfx1201", "v_wmma_f32_16x16x16_f16"), ("gfx1100", "v_wmma_f32_16x16x16_f16"),
         ("gfx942", "v_mfma_f32_16x16x16f16")]


def _prog(target: str, mma: str, **bug: object):
    return gemm.specialize(target=target, M=32, N=32, K=32, mma=mma, **bug)


@pytest.mark.parametrize(("target", "mma"), CASES, ids=[t for t, _ in CASES])
def test_clean_gemm_audits_clean(target: str, mma: str) -> None:
    r = audit_program(_prog(target, mma))
    assert r.ok and r.matrix_calls == 2 and r.checked > 0, str(r)


@pytest.mark.parametrize(("target", "mma"), CASES, ids=[t for t, _ in CASES])
def test_a_lane_swap_names_the_lanes(target: str, mma: str) -> None:
    r = audit_program(_prog(target, mma, a_layout=_mutated(mma, target, "A", "lane_off")))
    assert not r.ok and set(r.counts) == {"operand:A"}
    lanes = {f.lane % 16 for f in r.findings}
    assert lanes <= {9, 10} and lanes, lanes
    f = r.findings[0]
    assert f.operand == "A" and f"lane {f.lane}" in f.text and f.holds != f.expected


@pytest.mark.parametrize(("target", "mma"), CASES, ids=[t for t, _ in CASES])
def test_accumulator_rows_of_lane_5_stored_wrong(target: str, mma: str) -> None:
    r = audit_program(_prog(target, mma, c_layout=_mutated(mma, target, "C", "rows_lane5")))
    assert not r.ok and "store:D" in r.counts
    assert any(f.lane == 5 for f in r.findings), [str(f) for f in r.findings[:4]]


@pytest.mark.parametrize(("target", "mma"), CASES, ids=[t for t, _ in CASES])
def test_shared_k_order_is_reported_as_shared(target: str, mma: str) -> None:
    r = audit_program(_prog(target, mma, a_layout=_mutated(mma, target, "A", "slot_swap"),
                            b_layout=_mutated(mma, target, "B", "slot_swap")))
    assert set(r.counts) == {"operand:A", "operand:B"}
    assert any("same k permutation" in n for n in r.notes), r.notes


ARGS = [("A", np.zeros((16, 16), np.float16)), ("X", np.zeros((16, 16), np.float32)),
        ("C", np.zeros((16, 16), np.float32)), ("D", np.zeros((16, 16), np.float32))]


def test_hand_written_rdna3_kernel_is_clean() -> None:
    from tilesim.hw.offline import compile_hip

    r = audit(compile_hip(_source(11, RDNA3_ROW), "gfx1100"), "gfx1100", "abt", grid=1, block=32, args=ARGS)
    assert r.ok, str(r)
    assert r.untraced == 0  # X is f32 converted to f16 in the kernel: its codes survive the conversion


def test_hand_written_rdna4_kernel_shares_a_non_hardware_k_order() -> None:
    from tilesim.hw.offline import compile_hip

    r = audit(compile_hip(_source(12, RDNA4_ROW), "gfx1201"), "gfx1201", "abt", grid=1, block=32, args=ARGS)
    assert set(r.counts) == {"operand:A", "operand:B"}
    assert any("same k permutation" in n for n in r.notes)
    # lanes 16-31 hold k 8-15 where the hardware reads k 4-7 and 12-15
    f = next(f for f in r.findings if f.operand == "A")
    assert f.lane >= 16 and f.text.startswith("v_wmma_f32_16x16x16_f16 at line")


def test_rdna3_rows_on_rdna4_names_rows_lanes_and_registers() -> None:
    from tilesim.hw.offline import compile_hip

    r = audit(compile_hip(_source(12, RDNA3_ROW), "gfx1201"), "gfx1201", "abt", grid=1, block=32, args=ARGS)
    assert r.counts.get("operand:C") and r.counts.get("store:D")
    stores = [f for f in r.findings if f.kind == "store" and f.holds != "nowhere"]
    assert stores
    for f in stores:
        # hardware (RDNA4): D[i][j] is VGPR i % 8 of lane j + 16 * (i // 8); the kernel, assuming RDNA3,
        # wrote VGPR v of lane l to row 2v + l // 16
        i, j = (int(x) for x in f.text.split(": D[", 1)[1].split(" (")[0].strip("[]").split("]["))
        assert (f.lane, f.vgpr) == (j + 16 * (i // 8), i % 8)
        assert f.holds == f"D[{2 * (i % 8) + i // 8}][{j}]" and f.expected == f"D[{i}][{j}]"


def test_cli_emulate_audit_exits_1_and_names_lanes(tmp_path, capsys) -> None:
    from tilesim.cli import main

    args = ["--target", "gfx1201", "--kernel", "abt", "--block", "32", "--arg", "A=f16[16,16]", "--arg", "X=f32[16,16]",
            "--arg", "C=f32[16,16]", "--arg", "D=zeros:f32[16,16]", "--audit"]
    bad, good = tmp_path / "bad.hip", tmp_path / "good.hip"
    bad.write_text(_source(12, RDNA3_ROW))
    good.write_text(_source(11, RDNA3_ROW))
    assert main(["emulate", str(bad), *args]) == 1
    assert "was stored to D[" in capsys.readouterr().out
    args[1] = "gfx1100"
    assert main(["emulate", str(good), *args]) == 0
    assert "0 finding(s)" in capsys.readouterr().out


def test_tilesim_audit_is_emulate_audit_and_ts_audit_is_exported(tmp_path, capsys) -> None:
    import tilesim as ts
    from tilesim.cli import main

    assert ts.audit is audit and callable(ts.audit_program)
    bad = tmp_path / "bad.hip"
    bad.write_text(_source(12, RDNA3_ROW))  # RDNA3 accumulator rows assumed on RDNA4
    assert main(["audit", str(bad), "--target", "gfx1201", "--kernel", "abt", "--block", "32", "--arg", "A=f16[16,16]",
                 "--arg", "X=f32[16,16]", "--arg", "C=f32[16,16]", "--arg", "D=zeros:f32[16,16]"]) == 1
    out = capsys.readouterr().out
    assert "was stored to D[" in out and "lane" in out
