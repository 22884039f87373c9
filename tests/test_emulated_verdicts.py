"""`run(..., device="emulator")` / `tilesim run --device emulator`: the compiled AMDGPU code runs in
tilesim's ISA emulator and is judged like a device run, with its own verdict names
(EMULATED_MATCH exit 0, EMULATED_MISMATCH exit 1). MATCH stays reserved for silicon.

Expected values are independent of tilesim: the float64 product ``A @ B`` from numpy. Not run on
AMD hardware."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tilesim.diff.verdict as verdict_mod
from examples import gemm
from tilesim.cli import main
from tilesim.diff import Verdict, run
from tilesim.errors import TilesimError
from tilesim.isa import IsaError, Race
from tilesim.matrix import lookup

pytestmark = pytest.mark.compiler  # the emulator runs what the offline clang emits

WMMA = "v_wmma_f32_16x16x16_f16"


def _run(p, **kw):
    arrays = gemm.inputs(p)
    ref = {"C": arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)}  # numpy, not tilesim
    return run(p, reference=ref, device="emulator", **arrays, **kw), arrays, ref


@pytest.mark.parametrize("target, mma", [("gfx1201", WMMA), ("gfx1100", WMMA), ("gfx942", "v_mfma_f32_32x32x8_f16")])
def test_a_right_gemm_is_emulated_match_never_match(target, mma):
    v, _, ref = _run(gemm.gemm.specialize(target=target, M=32, N=32, K=32, mma=mma))
    assert v.status == "EMULATED_MATCH" and v.ok and v.exit_status == 0, str(v)
    assert "emulated" in v.paths and "device-run" not in v.paths
    assert "not AMD hardware" in v.reason
    assert np.allclose(v.device["C"], ref["C"], rtol=1e-3, atol=1e-3)  # the emulated output itself is right


def test_the_issues_wrong_kernel_is_emulated_mismatch_with_blame():
    # gfx1100 GEMM declared with RDNA4's accumulator rows (issue 13 item 1)
    p = gemm.gemm.specialize(target="gfx1100", M=32, N=32, K=32, mma=WMMA, c_layout=lookup(WMMA, "gfx1201").layout("C"))
    v, _, ref = _run(p)
    assert v.status == "EMULATED_MISMATCH" and not v.ok and v.exit_status == 1, str(v)
    wrong = ~np.isclose(v.device["C"], ref["C"], rtol=1e-3, atol=1e-3)
    assert wrong.any()  # the compiled code really computes the wrong answer, judged by numpy
    assert np.array_equal(v.device["C"], v.simulated["C"])  # and the simulator predicted exactly that answer
    assert v.blame and "lane" in v.blame[0]


def test_emulator_on_nvidia_is_a_usage_error(capsys):
    p = gemm.gemm.specialize(target="sm_90", M=32, N=32, K=32, mma="mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    with pytest.raises(TilesimError, match="AMDGPU code only"):
        _run(p)
    assert main(["run", "examples/gemm.py", "--target", "sm_90", "--device", "emulator"]) == 2
    assert "AMDGPU code only" in capsys.readouterr().err


def test_an_instruction_the_emulator_does_not_model_is_a_device_error(monkeypatch):
    def not_modelled(prog, arrays):
        raise IsaError("v_frobnicate_b32 is not modelled (gfx1201, line 12)")

    monkeypatch.setattr(verdict_mod, "emulate_program", not_modelled)
    v, _, _ = _run(gemm.gemm.specialize(target="gfx1201", M=32, N=32, K=32, mma=WMMA))
    assert v.status == "DEVICE_ERROR" and v.exit_status == 3 and "v_frobnicate_b32" in v.reason
    assert v.device_error["kind"] == "emulator"


def test_a_race_in_the_compiled_code_fails_even_when_the_numbers_agree(monkeypatch):
    real = verdict_mod.emulate_program

    def racy(prog, arrays):
        em = real(prog, arrays)
        return dataclasses.replace(em, races=(Race("read after write", 40, "ds_load_b128 v[0:3], v9", 0, 1, 0, 128),))

    monkeypatch.setattr(verdict_mod, "emulate_program", racy)
    v, _, _ = _run(gemm.gemm.specialize(target="gfx1201", M=32, N=32, K=32, mma=WMMA))
    assert v.status == "EMULATED_MISMATCH" and "LDS race" in v.reason


def test_match_needs_silicon_and_emulated_verdicts_need_the_emulator():
    p = gemm.gemm.specialize(target="gfx1201", M=32, N=32, K=32, mma=WMMA)
    out = {"C": np.zeros((32, 32))}
    with pytest.raises(TilesimError, match="needs the 'device-run' path"):
        Verdict("MATCH", p, "x", {}, device=out, paths=("simulated", "emitted", "compiled", "emulated"))
    with pytest.raises(TilesimError, match="needs the 'emulated' path"):
        Verdict("EMULATED_MATCH", p, "x", {}, device=out, paths=("simulated", "emitted", "compiled", "device-run"))


def test_cli_run_device_emulator(capsys):
    assert main(["run", "examples/gemm.py", "--target", "gfx1201", "--device", "emulator"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("EMULATED_MATCH: gemm on gfx1201") and "emulated vs simulator" in out
