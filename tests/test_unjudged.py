"""Fail closed when nothing judged the result: exit 4 (NOT_JUDGED), never 0.

Before 0.9.1 a program file with no ``reference()`` (and every program ``.json``, which cannot carry
one) exited 0 under ``tilesim simulate`` (NOT_JUDGED) and under ``tilesim run`` without a device
(COMPILE_ONLY / SIMULATED_ONLY): a kernel that scales C by 1.25 passed. Now nothing independent of
the program compared its outputs, so tilesim says it could not tell and exits 4; ``--expect FILE.npz``
gives the expected outputs as data (``--inputs FILE.npz`` the inputs), judged as ``reference()`` is.

Every expected value here is float64 numpy on the test's own inputs, never the simulator's output.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

import tilesim as ts
from examples import gemm_planted
from tilesim.cli import main
from tilesim.diff import EXIT_STATUS, Verdict, exit_status, run

NV = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"



@ts.kernel
def gemm(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"], *,
         mma=NV, scale=1.0):
    """C = A @ B, times ``scale``: 1.25 is the wrong kernel nothing in the layouts contradicts."""
    op = ts.mma_op(mma)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], op.k):
        acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")), acc)
    ts.store(C[tm * op.m:, tn * op.n:], acc * scale if scale != 1.0 else acc)


# a program file without reference(): programs() and inputs() only
KERNEL = textwrap.dedent("""
    from tests.test_unjudged import _arrays, gemm

    def programs():
        return [gemm.specialize(target="sm_90", M=32, N=32, K=32, scale={scale})]

    def inputs(prog, seed=0):
        return _arrays(seed)
""")


def _arrays(seed: int = 0) -> dict[str, np.ndarray]:
    """The inputs of KERNEL's inputs() (and of the tests)."""
    rng = np.random.default_rng(seed)
    return {"A": rng.standard_normal((32, 32)).astype(np.float16), "B": rng.standard_normal((32, 32)).astype(np.float16)}


def _numpy_c(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """What the program is meant to compute: C = A @ B in float64 numpy."""
    return arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)


@pytest.fixture
def files(tmp_path):
    """``wrong``/``right`` as .py files without reference() and as program .json files, the inputs as .npz,
    and A @ B (float64 numpy) as ``expect.npz``."""
    out = {}
    for name, scale in (("wrong", 1.25), ("right", 1.0)):
        py = tmp_path / f"{name}.py"
        py.write_text(KERNEL.format(scale=scale))
        out[name] = str(py)
        from tilesim.cli.programs import _load_programs
        (prog,), _ = _load_programs(str(py), None)
        js = tmp_path / f"{name}.json"
        js.write_text(prog.to_json())
        out[name + "_json"] = str(js)
    np.savez(tmp_path / "inputs.npz", **_arrays())
    np.savez(tmp_path / "expect.npz", C=_numpy_c(_arrays()))
    out["inputs"], out["expect"] = str(tmp_path / "inputs.npz"), str(tmp_path / "expect.npz")
    return out


def test_the_wrong_kernel_is_wrong_by_numpy_and_passes_check(files):
    from tilesim.cli.programs import _load_programs
    (prog,), _ = _load_programs(files["wrong"], None)
    assert ts.check(prog).ok  # nothing in the layouts contradicts it: only the intent can
    got = ts.simulate(prog, **_arrays())["C"]
    assert not np.allclose(got, _numpy_c(_arrays()), rtol=1e-2)


@pytest.mark.parametrize("kind", ["", "_json"])
@pytest.mark.parametrize("name", ["wrong", "right"])
def test_without_a_reference_simulate_and_run_exit_4(files, name, kind, capsys):
    path = files[name + kind]
    extra = ["--inputs", files["inputs"]] if kind else []
    assert main(["simulate", path, *extra]) == 4
    out = capsys.readouterr().out
    assert out.startswith("NOT_JUDGED: gemm on sm_90") and "--expect FILE.npz" in out
    assert main(["run", path, "--device", "none", *extra]) == 4
    out = capsys.readouterr().out
    assert out.startswith("NOT_JUDGED: gemm on sm_90") and "simulated, emitted" in out and "--expect" in out
    assert main(["run", path, "--device", "none", "--format", "json", *extra]) == 4
    (doc,) = json.loads(capsys.readouterr().out)
    assert (doc["verdict"], doc["ok"], doc["exit_status"]) == ("NOT_JUDGED", False, 4)
    assert main(["simulate", path, "--format", "json", *extra]) == 4
    (doc,) = json.loads(capsys.readouterr().out)
    assert (doc["status"], doc["ok"]) == ("NOT_JUDGED", False)


@pytest.mark.parametrize("kind", ["", "_json"])
def test_expect_judges_like_a_reference(files, kind, capsys):
    extra = ["--expect", files["expect"]] + (["--inputs", files["inputs"]] if kind else [])
    assert main(["simulate", files["right" + kind], *extra]) == 0
    assert capsys.readouterr().out.startswith("REFERENCE_OK: gemm on sm_90")
    assert main(["simulate", files["wrong" + kind], *extra, "--format", "json"]) == 1
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["status"] == "REFERENCE_MISMATCH" and doc["max_abs_error_vs_reference"]["C"] > 0.1
    assert main(["run", files["right" + kind], "--device", "none", *extra]) == 0
    assert capsys.readouterr().out.startswith("SIMULATED_ONLY: gemm on sm_90")
    assert main(["run", files["wrong" + kind], "--device", "none", *extra, "--format", "json"]) == 1
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "SIM_MISMATCH" and doc["blame"]


def test_wrong_expected_outputs_fail_a_right_kernel(files, tmp_path, capsys):
    np.savez(tmp_path / "off.npz", C=_numpy_c(_arrays()) + 1.0)
    assert main(["simulate", files["right"], "--expect", str(tmp_path / "off.npz")]) == 1
    assert capsys.readouterr().out.startswith("REFERENCE_MISMATCH")
    assert main(["run", files["right"], "--device", "none", "--expect", str(tmp_path / "off.npz")]) == 1
    assert capsys.readouterr().out.startswith("SIM_MISMATCH")


def test_a_check_error_without_reference_still_exits_1(tmp_path, capsys):
    """Failing verdicts beat NOT_JUDGED, for one program and over several (simulate took the max: 4 > 1)."""
    f = tmp_path / "mixed.py"
    f.write_text("from examples.gemm import programs as _all, inputs\n"
                 "from examples.gemm_planted import programs as _planted\n"
                 "def programs():\n"
                 "    return [p for p in _all(32, 32, 32) if p.target == 'sm_90'] + _planted()[:1]\n")
    assert main(["simulate", str(f)]) == 1
    out = capsys.readouterr().out
    assert "NOT_JUDGED: gemm on sm_90" in out and "CHECK_FAILED: gemm_" in out
    assert main(["run", str(f), "--device", "none"]) == 1
    out = capsys.readouterr().out
    assert "NOT_JUDGED: gemm on sm_90" in out and "CHECK_FAILED: gemm_" in out
    prog = gemm_planted.programs()[0]
    v = run(prog, device="none", **gemm_planted.inputs(prog))
    assert v.status == "CHECK_FAILED" and v.exit_status == 1


def test_api_run_without_reference_is_not_judged(files):
    from tilesim.cli.programs import _load_programs
    (prog,), _ = _load_programs(files["wrong"], None)
    v = run(prog, device="none", **_arrays())
    assert v.status == "NOT_JUDGED" and not v.ok and v.exit_status == 4
    assert v.paths == ("simulated", "emitted") and "reference" in v.reason
    w = run(prog, device="none", reference={"C": _numpy_c(_arrays())}, **_arrays())
    assert w.status == "SIM_MISMATCH" and w.exit_status == 1


def test_exit_status_over_several_verdicts():
    p = gemm_planted.programs()[0]

    def v(status):
        kw = {"device_error": {"kind": "x"}} if status == "DEVICE_ERROR" else {}
        kw.update({"check_errors": ["e"]} if status == "CHECK_FAILED" else {})
        return Verdict(status, p, "r", {}, **kw)

    assert EXIT_STATUS["NOT_JUDGED"] == 4
    assert exit_status([v("NOT_JUDGED"), v("SIMULATED_ONLY")]) == 4
    assert exit_status([v("NOT_JUDGED"), v("DEVICE_ERROR")]) == 3
    assert exit_status([v("NOT_JUDGED"), v("CHECK_FAILED"), v("DEVICE_ERROR")]) == 1


@pytest.mark.parametrize("arrays,needle", [
    ({"D": np.zeros((32, 32))}, "'D', not an output"),
    ({}, "no array for output C"),
    ({"C": np.zeros((32, 16))}, "has shape (32, 16)"),
    ({"C": np.zeros((32, 32), complex)}, "not a real numeric array"),
    ({"C": np.array([["a"] * 32] * 32)}, "not a real numeric array"),
])
def test_bad_expected_files_are_input_errors(files, tmp_path, arrays, needle, capsys):
    np.savez(tmp_path / "bad.npz", **arrays)
    assert main(["simulate", files["right"], "--expect", str(tmp_path / "bad.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "outputs: C" in err[0], err


def test_unreadable_expected_files_are_input_errors(files, tmp_path, capsys):
    np.save(tmp_path / "plain.npy", np.zeros(3))
    np.savez(tmp_path / "obj.npz", C=np.array([{"x": 1}], dtype=object))
    (tmp_path / "text.npz").write_text("not a zip")
    for name, needle in (("plain.npy", "not an .npz"), ("obj.npz", "pickled"), ("text.npz", "not an .npz"),
                         ("missing.npz", "cannot read")):
        assert main(["run", files["right"], "--device", "none", "--expect", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("tilesim: error:") and needle in err, (name, err)


def test_expect_with_reference_or_several_programs_is_refused(tmp_path, capsys):
    np.savez(tmp_path / "e.npz", C=np.zeros((64, 64)))
    assert main(["simulate", "examples/gemm.py", "--target", "sm_90", "--expect", str(tmp_path / "e.npz")]) == 2
    assert "has reference()" in capsys.readouterr().err
    (tmp_path / "several.py").write_text("from examples.gemm import programs, inputs\n")  # no reference()
    assert main(["simulate", str(tmp_path / "several.py"), "--expect", str(tmp_path / "e.npz")]) == 2
    assert "has 5 programs" in capsys.readouterr().err


def test_bad_inputs_files_name_the_inputs(files, tmp_path, capsys):
    np.savez(tmp_path / "in.npz", A=np.zeros((32, 32)))
    assert main(["simulate", files["right_json"], "--inputs", str(tmp_path / "in.npz")]) == 2
    err = capsys.readouterr().err
    assert "no array for input B" in err and "inputs: A, B" in err


@pytest.mark.compiler
def test_amd_compile_only_and_the_emulator_without_a_reference():
    """AMD: compiled, no device and no reference is NOT_JUDGED (it was COMPILE_ONLY, exit 0), and its
    reason points at the emulator; an emulator run that agrees with the simulator is NOT_JUDGED too
    (it was EMULATED_MATCH, exit 0: the compiled code computes what the program says, but nothing
    said what the program should compute), and with the float64 reference the same wrong kernel fails."""
    p = gemm.specialize(target="gfx1201", M=16, N=16, K=16, mma="v_wmma_f32_16x16x16_f16", scale=1.25)
    rng = np.random.default_rng(1)
    arrays = {"A": rng.standard_normal((16, 16)).astype(np.float16), "B": rng.standard_normal((16, 16)).astype(np.float16)}
    v = run(p, device="none", **arrays)
    assert v.status == "NOT_JUDGED" and v.paths == ("simulated", "emitted", "compiled") and v.compile_metadata
    assert "--device emulator" in v.reason and "COMPILE_ONLY with a reference" in v.reason
    e = run(p, device="emulator", **arrays)
    assert e.status == "NOT_JUDGED" and e.exit_status == 4 and "the emulated run computes what the program says" in e.reason
    assert "emulated" in e.paths and e.device_vs_sim["C"] == 0.0
    w = run(p, device="emulator", reference={"C": _numpy_c(arrays)}, **arrays)
    assert w.status == "EMULATED_MISMATCH" and w.exit_status == 1


def test_the_emulator_is_suggested_only_where_it_runs():
    p = gemm.specialize(target="sm_90", M=16, N=8, K=16, scale=1.25)
    rng = np.random.default_rng(1)
    arrays = {"A": rng.standard_normal((16, 16)).astype(np.float16), "B": rng.standard_normal((16, 8)).astype(np.float16)}
    v = run(p, device="none", **arrays)
    assert v.status == "NOT_JUDGED" and "--device emulator" not in v.reason and "run it on a device" in v.reason


def test_npz_archives_are_read_as_data_within_limits(files, tmp_path, monkeypatch, capsys):
    """An archive that inflates past the limit, names an array twice (which copy a reader takes is up
    to it) or holds a member that is no .npy is refused before numpy reads it."""
    import io
    import zipfile

    def npy(a):
        buf = io.BytesIO()
        np.save(buf, a)
        return buf.getvalue()

    c = npy(_numpy_c(_arrays()))
    with zipfile.ZipFile(tmp_path / "twice.npz", "w") as z:
        z.writestr("C.npy", c)
        with pytest.warns(UserWarning, match="Duplicate name"):
            z.writestr("C.npy", npy(np.zeros((32, 32))))
    with zipfile.ZipFile(tmp_path / "other.npz", "w") as z:
        z.writestr("C.npy", c)
        z.writestr("run.py", "print('not data')")
    with zipfile.ZipFile(tmp_path / "big.npz", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("C.npy", c)
    for name, needle in (("twice.npz", "'C.npy' appears twice"), ("other.npz", "'run.py' is not an array")):
        assert main(["simulate", files["right"], "--expect", str(tmp_path / name)]) == 2
        assert needle in capsys.readouterr().err, name
    assert main(["simulate", files["right"], "--expect", str(tmp_path / "big.npz")]) == 0  # within the limit
    capsys.readouterr()
    monkeypatch.setattr("tilesim.files.MAX_ARRAY_BYTES", len(c) - 1)
    assert (tmp_path / "big.npz").stat().st_size < len(c) - 1  # small on disk, too large inflated
    assert main(["simulate", files["right"], "--expect", str(tmp_path / "big.npz")]) == 2
    assert f"inflates to {len(c)} bytes" in capsys.readouterr().err
