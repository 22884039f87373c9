"""The device step never re-runs the caller's script (issue 19 item 8).

On an H100, a script calling ``tilesim.diff.run`` at top level (no ``if __name__ == "__main__":``
guard) got "An attempt has been made to start a new process before the current process has
finished its bootstrapping" and its body ran twice: the watchdog's ``multiprocessing`` spawn child
re-imported ``__main__``. The child is now ``python -m tilesim.hw._device_child``, fed JSON and
``.npy`` files. No GPU is needed: the fake runners of tests/_fake_runners.py run in that child.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from examples import gemm
from tests import _fake_runners as fake
from tilesim.diff import run
from tilesim.errors import DeviceError
from tilesim.hw import nvidia
from tilesim.hw.watchdog import guarded_call

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    print("BODY RAN")
    import tilesim as ts
    from examples import gemm
    from tests import _fake_runners as fake

    p = gemm.gemm.specialize(target="sm_90", M=16, N=16, K=16, mma="mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    arrays = gemm.inputs(p)
    v = ts.run(p, runner=fake.device_like_simulator, reference=gemm.reference(**arrays), **arrays)
    print("VERDICT", v.status, v.reason)
""")


def _python(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)


def _check(out: subprocess.CompletedProcess) -> None:
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("BODY RAN") == 1, out.stdout  # the script's body ran once, not again in the child
    assert "VERDICT MATCH ran on device_like_simulator" in out.stdout, out.stdout + out.stderr[-2000:]
    assert "bootstrapping" not in out.stdout + out.stderr


def test_an_unguarded_script_runs_once_and_matches(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(SCRIPT)
    _check(_python([str(script)]))


@pytest.mark.parametrize("how", ["-c", "stdin"])
def test_a_notebook_style_main_without_a_file(how):
    _check(_python(["-c", SCRIPT]) if how == "-c" else _python(["-"], stdin=SCRIPT))


def test_a_runner_defined_in_main_is_refused_by_name_not_re_run():
    code = SCRIPT.replace("runner=fake.device_like_simulator", "runner=my_runner").replace(
        'print("BODY RAN")', 'print("BODY RAN")\ndef my_runner(em, arrays):\n    return {}\n')
    out = _python(["-"], stdin=code)
    assert out.returncode == 0 and out.stdout.count("BODY RAN") == 1, out.stdout + out.stderr[-2000:]
    assert "VERDICT DEVICE_ERROR" in out.stdout and "my_runner is defined in the script being run" in out.stdout


def test_lambda_runner_is_refused_with_the_reason():
    p = gemm.gemm.specialize(target="sm_90", M=16, N=16, K=16, mma="mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    v = run(p, runner=lambda em, arrays: {}, **gemm.inputs(p))
    assert v.status == "DEVICE_ERROR" and "not a module-level function" in v.reason


def test_the_device_probe_runs_once_and_only_in_the_child(monkeypatch, tmp_path):
    log = tmp_path / "probe.log"
    monkeypatch.setenv("TILESIM_TEST_PROBE_LOG", str(log))
    monkeypatch.setattr(nvidia, "cuda_runtime_missing", lambda: None)
    monkeypatch.setattr(nvidia, "cuda_device", fake.counting_h100)
    monkeypatch.setattr(nvidia, "run_nvidia", fake.device_like_simulator)
    p = gemm.gemm.specialize(target="sm_90", M=16, N=16, K=16, mma="mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    arrays = gemm.inputs(p)
    v = run(p, reference=gemm.reference(**arrays), **arrays)
    assert v.status == "MATCH" and "Fake H100 (sm_90)" in v.reason
    pids = log.read_text().split()
    assert len(pids) == 1 and int(pids[0]) != os.getpid()


def test_arrays_cross_as_bits_in_every_element_type():
    rng = np.random.default_rng(0)
    arrays = {"f16": rng.standard_normal((4, 4)).astype(np.float16), "i32": np.arange(6, dtype=np.int32),
              "bf16": rng.standard_normal(8).astype(ml_dtypes.bfloat16),
              "fp8": rng.standard_normal(8).astype(ml_dtypes.float8_e4m3fnuz),
              "i4": np.arange(-8, 8).astype(ml_dtypes.int4), "u8": np.arange(9, dtype=np.uint8)}
    back = guarded_call(fake.echo_inputs, None, arrays).outputs
    assert set(back) == set(arrays)
    for k, a in arrays.items():
        assert back[k].dtype == a.dtype and back[k].shape == a.shape
        assert back[k].tobytes() == a.tobytes(), k


def test_object_arrays_never_cross_as_pickles():
    with pytest.raises(DeviceError, match="input 'x' is a ndarray of object"):
        guarded_call(fake.echo_inputs, None, {"x": np.array([{"a": 1}], dtype=object)})
    back = guarded_call(fake.list_outputs, None, {}).outputs  # only type names come back for non-arrays
    assert back["C"].type_name == "list" and back["extra"].type_name == "ndarray of object"
    assert guarded_call(fake.tuple_result, None, {}).outputs.type_name == "tuple"
    with pytest.raises(DeviceError, match="the runner must be a function"):
        guarded_call("fake.echo_inputs", None, {})
