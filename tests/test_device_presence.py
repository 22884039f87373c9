"""The parent's cheap "no device can exist here" decision (`hip_runtime_missing`, `cuda_runtime_missing`)
agrees with the device process's probe (`amd_probe`, `cuda_device`), so `run` starts no device process
where the probe could only say "no device" — and never skips one the probe would have found.

The parent answers from a module search and, on Linux, a few paths (device nodes and driver files:
`HIP_DEVICE_PATHS`, `CUDA_DEVICE_PATHS`), pointed here at a temporary folder where they exist or not.
The probe runs in this process (the same function the device process calls) against tests/fakes/hip
(a declared fake, allowed or refused), an undeclared `hip` module, a fake `cupy` whose runtime fails as
CuPy's does without a driver, or none. Which nodes a real driver needs comes from ROCm's and NVIDIA's
container documentation (cited at the lists), not from these tests: **not run on AMD hardware**, and
the CUDA cases use a fake CuPy, not a GPU.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from examples.gemm import gemm, inputs, reference
from tilesim.diff import verdict
from tilesim.hw import amd, nvidia

FAKES = str(Path(__file__).parent / "fakes")
WMMA = "v_wmma_f32_16x16x16_f16"
MMA_SYNC = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"

FAKE_CUPY = '''
import os


class _Runtime:
    @staticmethod
    def getDeviceCount():
        n = os.environ.get("TEST_FAKE_CUPY_DEVICES", "no-driver")
        if n == "no-driver":  # what CuPy raises where libcuda finds no driver
            raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")
        return int(n)

    @staticmethod
    def getDeviceProperties(i):
        return {"name": b"Fake GPU", "major": 9, "minor": 0}


class cuda:
    runtime = _Runtime
'''


def _forget(name: str) -> None:
    for m in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[m]


@pytest.fixture
def clean(monkeypatch):
    for name in ("hip", "cupy"):
        _forget(name)
    monkeypatch.delenv(amd.FAKE_HIP_ENV, raising=False)
    monkeypatch.delenv("TILESIM_FAKE_HIP_DEVICES", raising=False)
    monkeypatch.delenv("TEST_FAKE_CUPY_DEVICES", raising=False)
    yield
    for name in ("hip", "cupy"):
        _forget(name)


def _nodes(tmp_path: Path, present: bool, name: str) -> tuple[str, ...]:
    node = tmp_path / name
    if present:
        node.write_text("")
    return (str(node),)


def _fake_cupy(monkeypatch, tmp_path: Path) -> None:
    """A `cupy` first on the path whose runtime fails as CuPy's does without a driver (or reports
    TEST_FAKE_CUPY_DEVICES devices)."""
    (tmp_path / "fake_cupy" / "cupy").mkdir(parents=True)
    (tmp_path / "fake_cupy" / "cupy" / "__init__.py").write_text(FAKE_CUPY)
    monkeypatch.syspath_prepend(str(tmp_path / "fake_cupy"))


def _hip(kind: str, monkeypatch, tmp_path: Path) -> None:
    """Put one kind of `hip` on the path: none, the declared fake (allowed or refused, with or without
    a device), or an undeclared module that claims a device."""
    if kind == "none":
        monkeypatch.setattr(sys, "path", [p for p in sys.path if p != FAKES])
        return
    if kind == "undeclared":
        pkg = tmp_path / "undeclared" / "hip"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "hip.py").write_text("def hipGetDeviceCount():\n    return (0, 1)\n")
        monkeypatch.syspath_prepend(str(pkg.parent))
        return
    monkeypatch.syspath_prepend(FAKES)
    if kind.startswith("fake-allowed"):
        monkeypatch.setenv(amd.FAKE_HIP_ENV, "1")
        monkeypatch.setenv("TILESIM_FAKE_HIP_ARCH", "gfx1201")
        monkeypatch.setenv("TILESIM_FAKE_HIP_DEVICES", "0" if kind.endswith("no-device") else "1")


@pytest.mark.parametrize("present", [False, True], ids=["no-nodes", "nodes"])
@pytest.mark.parametrize("kind", ["none", "fake-allowed", "fake-allowed-no-device", "fake-refused", "undeclared"])
def test_the_parents_no_is_the_probes_no(clean, monkeypatch, tmp_path, kind, present):
    monkeypatch.setattr(amd, "HIP_DEVICE_PATHS", _nodes(tmp_path, present, "kfd"))
    _hip(kind, monkeypatch, tmp_path)
    if kind == "none" and importlib.util.find_spec("hip") is not None:
        pytest.skip("hip-python is installed here (the real probe would see this machine's GPU, not the paths set here)")
    parent = amd.hip_runtime_missing()
    code, why = amd.amd_probe()
    if parent is not None:  # the parent said "no device": the probe must say so too
        assert code is None, (parent, why)
    if code is not None:  # the probe finds a device: the parent must have left it to the probe
        assert parent is None
    # and the parent's "no" is taken wherever it can be: hip importable, not the allowed fake, no node
    expect_no = kind == "none" or (not present and kind in ("fake-refused", "undeclared"))
    assert (parent is not None) == expect_no, (kind, present, parent)
    if expect_no and kind != "none":
        assert "no AMD GPU" in parent and str(tmp_path / "kfd") in parent


@pytest.mark.parametrize("present", [False, True], ids=["no-nodes", "nodes"])
@pytest.mark.parametrize("kind", ["none", "no-driver", "no-device"])
def test_the_parents_no_is_the_cuda_probes_no(clean, monkeypatch, tmp_path, kind, present):
    monkeypatch.setattr(nvidia, "CUDA_DEVICE_PATHS", _nodes(tmp_path, present, "nvidiactl"))
    if kind == "none":
        monkeypatch.setattr(sys, "path", [p for p in sys.path if "fake_cupy" not in p])
    else:
        _fake_cupy(monkeypatch, tmp_path)
        if kind == "no-device":
            monkeypatch.setenv("TEST_FAKE_CUPY_DEVICES", "0")
    if kind == "none" and importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed here (the real probe would see this machine's GPU, not the paths set here)")
    parent = nvidia.cuda_runtime_missing()
    cc, why = nvidia.cuda_device()
    assert cc is None, why  # no case here has a device
    assert (parent is not None) == (kind == "none" or not present), (kind, present, parent)
    if kind != "none" and not present:
        assert "no CUDA device" in parent and str(tmp_path / "nvidiactl") in parent


def test_paths_are_not_asked_off_linux(monkeypatch, tmp_path):
    # only Linux's device nodes are known: elsewhere the parent says "maybe" and the probe decides
    from tilesim.hw.watchdog import no_device_path

    missing = (str(tmp_path / "absent"),)
    assert no_device_path(missing)
    monkeypatch.setattr(sys, "platform", "win32")
    assert not no_device_path(missing)


def _no_child(*args, **kwargs):
    raise AssertionError("a device process was started where no device can exist")


@pytest.mark.compiler
def test_run_starts_no_device_process_without_a_kfd_node(clean, monkeypatch, tmp_path):
    monkeypatch.setattr(amd, "HIP_DEVICE_PATHS", _nodes(tmp_path, False, "kfd"))
    monkeypatch.setattr(verdict, "guarded_call", _no_child)
    monkeypatch.setenv("TILESIM_CACHE", str(tmp_path / "cache"))
    _hip("fake-refused", monkeypatch, tmp_path)  # a `hip` is importable, so only the node decides
    p = gemm.specialize(target="gfx1201", M=16, N=16, K=16, mma=WMMA)
    v = verdict.run(p, reference=reference(**inputs(p)), **inputs(p))
    assert v.status == "COMPILE_ONLY" and v.exit_status == 0, str(v)
    assert v.paths == ("simulated", "emitted", "compiled")
    assert "no AMD GPU" in v.not_taken["device-run"] and str(tmp_path / "kfd") in v.not_taken["device-run"]


def test_run_starts_no_device_process_without_nvidia_nodes(clean, monkeypatch, tmp_path):
    monkeypatch.setattr(nvidia, "CUDA_DEVICE_PATHS", _nodes(tmp_path, False, "nvidiactl"))
    monkeypatch.setattr(verdict, "guarded_call", _no_child)
    _fake_cupy(monkeypatch, tmp_path)
    p = gemm.specialize(target="sm_90", M=16, N=16, K=16, mma=MMA_SYNC)
    v = verdict.run(p, reference=reference(**inputs(p)), **inputs(p))
    assert v.status == "SIMULATED_ONLY" and v.exit_status == 0, str(v)
    assert "no CUDA device" in v.not_taken["device-run"] and "device-run" not in v.paths


def test_with_a_node_the_device_process_probes_and_says_why(clean, monkeypatch, tmp_path):
    # the node exists but CuPy's runtime finds no driver: the child probes (once) and its reason comes back
    monkeypatch.setattr(nvidia, "CUDA_DEVICE_PATHS", _nodes(tmp_path, True, "nvidiactl"))
    _fake_cupy(monkeypatch, tmp_path)
    p = gemm.specialize(target="sm_90", M=16, N=16, K=16, mma=MMA_SYNC)
    v = verdict.run(p, reference=reference(**inputs(p)), **inputs(p))
    assert v.status == "SIMULATED_ONLY", str(v)
    assert "cudaErrorInsufficientDriver" in v.not_taken["device-run"]
