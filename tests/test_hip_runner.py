"""The hip-python runner (`tilesim.hw.amd.run_amd`) wired into `run(..., device="auto")` for AMD
targets, end to end against the fake `hip` in tests/fakes/hip: hip-python's call sequence and return
conventions, with tilesim's AMDGPU ISA emulator executing the very code object the runner loads.

**Not AMD hardware**: these tests prove the call sequence, the kernel-argument buffer, the error
mapping and the verdict path; only a machine with ROCm and an AMD GPU can prove the silicon.

Independent expectations: the float64 product ``A @ B`` from numpy (a right GEMM equals it, a planted
one does not); HIP's error names from hip_runtime_api.h; the fake decodes kernel arguments from the
ELF's own NT_AMDGPU_METADATA note, not from tilesim's assembly parser.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

import tilesim as ts
from examples.gemm import gemm, inputs
from tilesim.codegen.hip import emit_hip
from tilesim.errors import DeviceError
from tilesim.hw import amd
from tilesim.layouts import Layout
from tilesim.matrix import lookup

pytestmark = pytest.mark.compiler  # the runner builds code objects with the offline clang

FAKES = str(Path(__file__).parent / "fakes")
WMMA, MFMA = "v_wmma_f32_16x16x16_f16", "v_mfma_f32_32x32x8_f16"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("tilesim-cache"))  # one compile per program for the whole module


def _forget_hip() -> None:
    for name in [m for m in sys.modules if m == "hip" or m.startswith("hip.")]:
        del sys.modules[name]


@pytest.fixture
def no_hip_modules():
    """No `hip` module imported before or left behind (find_spec would find a stale one)."""
    _forget_hip()
    yield
    _forget_hip()


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, cache: str, no_hip_modules):
    """The fake `hip` first on sys.path (the device process inherits the path), a gfx1201 device."""
    monkeypatch.syspath_prepend(FAKES)
    monkeypatch.setenv("TILESIM_ALLOW_FAKE_HIP", "1")
    monkeypatch.setenv("TILESIM_FAKE_HIP_ARCH", "gfx1201")
    monkeypatch.setenv("TILESIM_CACHE", cache)
    monkeypatch.delenv("TILESIM_NO_CACHE", raising=False)
    for var in ("TILESIM_FAKE_HIP_FAIL", "TILESIM_FAKE_HIP_MEMORY", "TILESIM_FAKE_HIP_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    from hip import hip

    return hip


def _prog(target="gfx1201", mma=WMMA, **kw):
    return gemm.specialize(target=target, M=32, N=32, K=32, mma=mma, **kw)


def _verdict(prog):
    arrays = inputs(prog)
    ref = {"C": arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)}  # numpy, not tilesim
    return ts.run(prog, reference=ref, device="auto", **arrays), ref


@pytest.mark.parametrize("target, mma, arch", [("gfx1201", WMMA, "gfx1201"),
                                               ("gfx942", MFMA, "gfx942:sramecc+:xnack-")])
def test_gemm_is_match_through_the_whole_verdict_path(fake, monkeypatch, target, mma, arch):
    monkeypatch.setenv("TILESIM_FAKE_HIP_ARCH", arch)  # gfx942 reports its features; compared by base arch
    v, ref = _verdict(_prog(target, mma))
    assert v.status == "MATCH" and v.ok, str(v)
    assert v.paths == ("simulated", "emitted", "compiled", "device-run")
    assert v.device_name.startswith("fake hip (tilesim ISA emulator; not AMD hardware)") and target in v.device_name
    assert np.allclose(v.device["C"], ref["C"], rtol=1e-3, atol=1e-3)  # the device output itself is right
    assert f"ran on {v.device_name}" in v.reason


def _rows_lane5(target: str, mma: str) -> Layout:
    """Lane 5's accumulator rows declared one row off (examples/gemm_planted.py's c_rows_lane5 kind)."""
    good = lookup(mma, target).layout("C")
    hw, lg = (a.copy() for a in good.pairs())
    row = [d for d, _ in good.out_dims].index("row")
    sel = hw[:, 0] == 5
    lg[sel, row] = (lg[sel, row] + 1) % dict(good.out_dims)["row"]
    return Layout.from_pairs(good.in_dims, good.out_dims, hw, lg, elem_bits=good.elem_bits)


def test_planted_bug_is_mismatch_naming_the_lane(fake):
    v, ref = _verdict(_prog(c_layout=_rows_lane5("gfx1201", WMMA)))
    assert v.status == "MISMATCH" and v.exit_status == 1, str(v)
    assert not np.allclose(v.device["C"], ref["C"], rtol=1e-3, atol=1e-3)  # the run really is wrong
    assert np.array_equal(v.device["C"], v.simulated["C"])  # and the simulator predicted that answer
    assert "lanes 5 only" in v.pattern and any("lane 5," in b for b in v.blame), v.blame


@pytest.mark.parametrize("env, kind, words", [
    ({"TILESIM_FAKE_HIP_MEMORY": "4096"}, "oom", ["hipMalloc", "hipErrorOutOfMemory"]),
    ({"TILESIM_FAKE_HIP_FAIL": "hipModuleLaunchKernel=hipErrorLaunchFailure"}, "launch", ["hipErrorLaunchFailure"]),
    ({"TILESIM_FAKE_HIP_ARCH": "gfx1100"}, "arch", ["built for gfx1201", "device 0 is gfx1100"]),
])
def test_hip_errors_are_device_errors_with_the_hip_name(fake, monkeypatch, env, kind, words):
    for k, val in env.items():
        monkeypatch.setenv(k, val)
    v, _ = _verdict(_prog())
    assert v.status == "DEVICE_ERROR" and v.exit_status == 3 and v.device_error["kind"] == kind, str(v)
    assert all(w in v.reason for w in words), v.reason
    assert "device-run" not in v.paths


def test_no_device_takes_no_device_path(fake, monkeypatch):
    monkeypatch.setenv("TILESIM_FAKE_HIP_DEVICES", "0")
    v, _ = _verdict(_prog())
    assert v.status == "COMPILE_ONLY" and "device-run" not in v.paths, str(v)
    assert v.not_taken["device-run"] == "no AMD GPU (hipErrorNoDevice)"


def test_the_fake_is_refused_outside_tests(fake, monkeypatch, tmp_path):
    monkeypatch.delenv("TILESIM_ALLOW_FAKE_HIP")
    (tmp_path / "kfd").write_text("")  # a machine with an AMD driver node: the device process probes and refuses
    monkeypatch.setattr(amd, "HIP_DEVICE_PATHS", (str(tmp_path / "kfd"),))  # (none: tests/test_device_presence.py)
    v, _ = _verdict(_prog())
    assert v.status == "COMPILE_ONLY" and "device-run" not in v.paths, str(v)
    assert "tilesim's test fake" in v.not_taken["device-run"]


@pytest.mark.parametrize("api", ["current", "legacy"])
def test_probe_names_the_fake_whatever_it_calls_itself(fake, monkeypatch, api):
    monkeypatch.setenv("TILESIM_FAKE_HIP_API", api)
    monkeypatch.setattr(fake, "TILESIM_FAKE_DEVICE", "AMD Instinct MI300X")  # a fake claiming to be silicon
    code, desc = amd.amd_probe()
    assert code == 0 and desc == "fake hip (tilesim ISA emulator; not AMD hardware), gfx1201"


def test_an_undeclared_hip_module_is_not_taken_for_hip_python(monkeypatch, tmp_path, no_hip_modules):
    pkg = tmp_path / "hip"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "hip.py").write_text("def hipGetDeviceCount():\n    return (0, 1)\n")  # claims a device
    monkeypatch.syspath_prepend(str(tmp_path))
    code, why = amd.amd_probe()
    assert code is None and "not installed by hip-python" in why


# ------------------------------------------------------------------ mutations the fake must catch

def test_a_wrong_kernarg_offset_faults(fake, monkeypatch):
    real = amd.pack_kernargs

    def shifted(co, pointers, grid, block):  # B's pointer written 4 bytes late (over C's low half)
        buf = bytearray(real(co, pointers, grid, block))
        b = co.args[1].offset
        buf[b + 4: b + 12] = buf[b: b + 8]
        return bytes(buf)

    monkeypatch.setattr(amd, "pack_kernargs", shifted)
    p = _prog()
    with pytest.raises(DeviceError, match="hipErrorIllegalAddress"):
        amd.run_amd(emit_hip(p), inputs(p))


def test_swapped_kernargs_compute_the_wrong_product(fake, monkeypatch):
    real = amd.pack_kernargs
    monkeypatch.setattr(amd, "pack_kernargs", lambda co, ptrs, g, b: real(co, [ptrs[1], ptrs[0], *ptrs[2:]], g, b))
    p = _prog()
    arrays = inputs(p)
    out = amd.run_amd(emit_hip(p), arrays)["C"]
    assert not np.allclose(out, arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64), atol=1e-2)


def test_extra_as_a_tuple_is_hip_pythons_argument_list_not_a_config(fake, monkeypatch):
    # hip-python packs a tuple as the kernel's own arguments: the C-style (BUFFER_POINTER, buf, ...)
    # tuple gives the kernel the pointer 0x1 as A, which faults
    real = fake.hipModuleLaunchKernel

    def c_style(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        cfg = struct.unpack("<5Q", ctypes.string_at(extra, 40))
        buf = ctypes.string_at(cfg[1], struct.unpack("<Q", ctypes.string_at(cfg[3], 8))[0])
        return real(f, gx, gy, gz, bx, by, bz, shared, stream, params,
                    (fake.HIP_LAUNCH_PARAM_BUFFER_POINTER, buf, fake.HIP_LAUNCH_PARAM_BUFFER_SIZE, len(buf),
                     fake.HIP_LAUNCH_PARAM_END))

    monkeypatch.setattr(fake, "hipModuleLaunchKernel", c_style)
    p = _prog()
    with pytest.raises(DeviceError, match="hipErrorIllegalAddress"):
        amd.run_amd(emit_hip(p), inputs(p))
