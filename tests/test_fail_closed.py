"""Fail closed: no verdict is MATCH without a device run, and every device failure — launch
failure, out of memory, a crash, a hang past the watchdog, outputs that cannot be judged — is a
DEVICE_ERROR verdict with the reason and the device process's exit status, never a hang.

No GPU is needed: fake runners (tests/_fake_runners.py) stand in for ``run_nvidia`` and run in the
watchdog's child process exactly as the real runner does.
"""

from __future__ import annotations

import json
import signal
import time

import numpy as np
import pytest

from examples import gemm
from tests import _fake_runners as fake
from tilesim.cli import main
from tilesim.diff import VERDICTS, Verdict, run
from tilesim.errors import DeviceError, TilesimError
from tilesim.hw import nvidia
from tilesim.hw.watchdog import device_timeout, guarded_call

NV = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


@pytest.fixture(scope="module")
def prog():
    return gemm.gemm.specialize(target="sm_90", M=16, N=16, K=16, mma=NV)


@pytest.fixture
def fake_gpu(monkeypatch):
    """A CUDA device that is present (as far as tilesim's probe, run in the device process, knows);
    the runner is set per test."""
    monkeypatch.setattr(nvidia, "cuda_runtime_missing", lambda: None)
    monkeypatch.setattr(nvidia, "cuda_device", fake.fake_h100)

    def use(runner):
        monkeypatch.setattr(nvidia, "run_nvidia", runner)

    return use


def _run(p, **kw):
    arrays = gemm.inputs(p)
    return run(p, reference=gemm.reference(**arrays), **arrays, **kw)


# ---------------------------------------------------------------- no device run: never MATCH

def test_verdict_value_refuses_match_or_mismatch_without_device_outputs(prog):
    for status in ("MATCH", "MISMATCH"):
        with pytest.raises(TilesimError, match="fail closed"):
            Verdict(status, prog, "claimed", {})
    out = {"C": np.zeros((16, 16))}
    for status in set(VERDICTS) - {"MATCH", "MISMATCH"}:
        with pytest.raises(TilesimError, match="fail closed"):
            Verdict(status, prog, "claimed", {}, device=out, device_error={"kind": "launch"})
    with pytest.raises(TilesimError, match="device_error"):
        Verdict("DEVICE_ERROR", prog, "no details", {})
    with pytest.raises(TilesimError, match="device_error"):
        Verdict("SIMULATED_ONLY", prog, "x", {}, device_error={"kind": "launch"})


def test_no_cuda_device_is_simulated_only(prog, monkeypatch):
    monkeypatch.setattr(nvidia, "cuda_runtime_missing", lambda: None)
    monkeypatch.setattr(nvidia, "cuda_device", fake.no_cuda_device)
    monkeypatch.setattr(nvidia, "run_nvidia", fake.device_like_simulator)  # must not be called
    v = _run(prog)
    assert v.status == "SIMULATED_ONLY" and v.device is None and "no CUDA driver" in v.reason


def test_device_none_is_simulated_only_even_with_a_runner(prog, fake_gpu):
    fake_gpu(fake.device_like_simulator)
    assert _run(prog, device="none").status == "SIMULATED_ONLY"
    assert _run(prog, device="none", runner=fake.device_like_simulator).status == "SIMULATED_ONLY"


def test_older_device_than_the_program_is_simulated_only(prog, monkeypatch):
    monkeypatch.setattr(nvidia, "cuda_runtime_missing", lambda: None)
    monkeypatch.setattr(nvidia, "cuda_device", fake.fake_a100)
    monkeypatch.setattr(nvidia, "run_nvidia", fake.device_like_simulator)
    v = _run(prog)
    assert v.status == "SIMULATED_ONLY" and "sm_80, older than sm_90" in v.reason


def test_not_emitted_is_simulated_only(monkeypatch):
    """Whatever the generator refuses is SIMULATED_ONLY, never MATCH. Since every element type is
    emitted (issue 16 item 5) no program check accepts is refused, so the refusal is injected."""
    import tilesim as ts
    from tilesim.codegen.hip import CodegenError
    from tilesim.diff import verdict as vd
    from tilesim.matrix import lookup

    lay = lookup(NV, "sm_90").layout("C")

    @ts.kernel
    def double_math(X: ts.Tensor["f64", "M", "N"], Y: ts.Tensor["f64", "M", "N"]):
        x = ts.load(X[0:, 0:], lay)
        ts.store(Y[0:, 0:], x + x)

    def refuse(prog):
        raise CodegenError("op 1 (elementwise): refused for this test")

    p = double_math.specialize(target="sm_90", M=16, N=8)
    monkeypatch.setattr(vd, "emit_hip", refuse)
    x = np.ones((16, 8), np.float64)
    v = run(p, runner=fake.device_like_simulator, reference={"Y": 2 * x}, X=x)
    assert v.status == "SIMULATED_ONLY" and "not emitted" in v.reason and "refused for this test" in v.reason


@pytest.mark.compiler
def test_amd_compile_only_never_runs_without_a_runner():
    p = gemm.gemm.specialize(target="gfx1201", M=16, N=16, K=16)
    v = _run(p)
    assert v.status == "COMPILE_ONLY" and v.device is None and "not run on AMD hardware" in v.reason


@pytest.mark.compiler
def test_amd_injected_runner_failure_is_device_error_with_compile_metadata():
    p = gemm.gemm.specialize(target="gfx1201", M=16, N=16, K=16)
    v = _run(p, runner=fake.launch_failure)
    assert v.status == "DEVICE_ERROR" and v.device is None and v.device_error["kind"] == "launch"
    assert v.compile_metadata.get("vgpr_count") and v.isa_excerpt  # the offline compile still reported
    assert _run(p, runner=fake.device_like_simulator, device="none").status == "COMPILE_ONLY"


# ---------------------------------------------------------------- device errors

@pytest.mark.parametrize("runner,kind,text", [
    (fake.launch_failure, "launch", "unspecified launch failure"),
    (fake.out_of_memory, "oom", "Out of memory"),
])
def test_runner_exceptions_become_device_error(prog, fake_gpu, runner, kind, text):
    fake_gpu(runner)
    v = _run(prog)
    assert v.status == "DEVICE_ERROR" and v.device is None
    assert v.device_error["kind"] == kind and v.device_error["exit_status"] == 0
    assert text in v.reason and "Fake H100" in v.reason
    assert "device error: " + kind in str(v)


def test_crash_of_the_device_process_is_device_error(prog, fake_gpu):
    fake_gpu(fake.crash)
    v = _run(prog)
    assert v.status == "DEVICE_ERROR" and v.device_error["kind"] == "crash"
    assert v.device_error["exit_status"] == -signal.SIGSEGV and "SIGSEGV" in v.reason


def test_hang_fires_the_watchdog_and_returns(prog, fake_gpu):
    fake_gpu(fake.hang)
    t0 = time.monotonic()
    v = _run(prog, device_timeout=1)
    elapsed = time.monotonic() - t0
    assert v.status == "DEVICE_ERROR" and v.device_error["kind"] == "watchdog"
    assert v.device_error["timeout_s"] == 1 and v.device_error["exit_status"] == -signal.SIGTERM
    assert "watchdog fired after 1 s" in v.reason
    assert elapsed < 30, elapsed  # bounded: the watchdog, not the sleeping kernel, ended the run


def test_watchdog_kills_a_child_that_ignores_sigterm(monkeypatch):
    from tilesim.hw import watchdog

    monkeypatch.setattr(watchdog, "_KILL_GRACE_S", 0.3)
    monkeypatch.setenv("TILESIM_DEVICE_TIMEOUT", "6")  # time for the child to start and ignore SIGTERM
    with pytest.raises(DeviceError, match="watchdog") as e:
        guarded_call(fake.hang_ignoring_sigterm, None, {})
    assert e.value.kind == "watchdog" and e.value.exit_status == -signal.SIGKILL


@pytest.mark.parametrize("runner,text", [
    (fake.no_outputs, "outputs are ['C']"),
    pytest.param(fake.wrong_shape, "expected a numeric array of shape (16, 16)", marks=pytest.mark.slow)])
def test_outputs_that_cannot_be_judged_are_device_error_not_match(prog, fake_gpu, runner, text):
    fake_gpu(runner)
    v = _run(prog)
    assert v.status == "DEVICE_ERROR" and v.device_error["kind"] == "bad_output" and text in v.reason


def test_a_device_run_that_agrees_matches_and_one_that_differs_mismatches(prog, fake_gpu):
    fake_gpu(fake.device_like_simulator)
    v = _run(prog)
    assert v.status == "MATCH" and v.device is not None and "Fake H100 (sm_90)" in v.reason
    w = _run(prog, runner=fake.off_by_one)  # an injected runner, no device probe
    assert w.status == "MISMATCH" and w.device_name == "off_by_one" and w.blame


def test_timeout_values_are_checked(prog, monkeypatch):
    for bad in (0, -1, float("nan"), float("inf"), True, "5"):
        with pytest.raises(DeviceError, match="greater than 0"):
            run(prog, device_timeout=bad, **gemm.inputs(prog))
    monkeypatch.setenv("TILESIM_DEVICE_TIMEOUT", "soon")
    with pytest.raises(DeviceError, match="TILESIM_DEVICE_TIMEOUT='soon'"):
        device_timeout()
    monkeypatch.setenv("TILESIM_DEVICE_TIMEOUT", "7.5")
    assert device_timeout() == 7.5 and device_timeout(2) == 2.0
    with pytest.raises(DeviceError, match="runner must be a function"):
        run(prog, runner="fast", **gemm.inputs(prog))


def test_cli_reports_device_error_with_exit_status_3(fake_gpu, capsys):
    fake_gpu(fake.out_of_memory)
    code = main(["run", "examples/gemm.py", "--target", "sm_90", "--format", "json", "--device-timeout", "60"])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out[0]["verdict"] == "DEVICE_ERROR"
    assert out[0]["device_error"] == {"kind": "oom", "exit_status": 0, "timeout_s": None}
    code = main(["run", "examples/gemm.py", "--target", "sm_90", "--device-timeout", "0"])
    assert code == 2 and "greater than 0" in capsys.readouterr().err
