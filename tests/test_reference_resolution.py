"""A comparison that cannot fail is no judgement: where the numerics model's bound is at least a
quarter of every nonzero reference value of an output, a result off by 25% everywhere passes it, so
tilesim says NOT_JUDGED (exit 4) instead of REFERENCE_OK.

The case: ``v_wmma_f16_16x16x16_f16`` over K=4096 rounds its f16 accumulator 256 times; the sound
bound of that (rtol 0.25 relative to ``|A| |B|``, ~2600 here) is above every value of C (~43
typical, 107 at most), so with the per-element scale ``|A| |B|`` (a ``reference()`` evaluated on
|inputs|, as the command line does, or ``reference_magnitude=``) a kernel that multiplies C by 1.5
was REFERENCE_OK (exit 0). The expected values are float64 numpy on the same inputs; the wrong
kernels are shown to be far off before tilesim is asked.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import tilesim as ts
from tilesim.diff.reference import RESOLUTION_LIMIT, check_reference


WMMA16 = "v_wmma_f16_16x16x16_f16"
MMA_SYNC16 = "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"


@ts.kernel
def gemm16(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f16", "M", "N"], *,
           scale=1.0, mma=WMMA16):
    op = ts.mma_op(mma)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f16")
    for k in ts.range(0, A.shape[1], op.k):
        acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")), acc)
    if scale != 1.0:
        acc = acc * scale
    ts.store(C[tm * op.m:, tn * op.n:], acc)


@ts.kernel
def gemm32(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"], *,
           scale=1.0):
    op = ts.mma_op("v_wmma_f32_16x16x16_f16")
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], op.k):
        acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")), acc)
    if scale != 1.0:
        acc = acc * scale
    ts.store(C[tm * op.m:, tn * op.n:], acc)


def _inputs(K: int):
    rng = np.random.default_rng(7)
    A = rng.standard_normal((32, K)).astype(np.float16)
    B = rng.standard_normal((K, 32)).astype(np.float16)
    return {"A": A, "B": B}, A.astype(np.float64) @ B.astype(np.float64)


def _abs_product(A, B):
    return np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))


@pytest.mark.parametrize("scale", [1.0, 1.5, 0.5])
def test_an_f16_accumulator_over_k_4096_is_not_judged_by_a_reference(scale):
    arrays, want = _inputs(4096)
    mag = {"C": _abs_product(**arrays)}
    prog = gemm16.specialize(target="gfx1201", M=32, N=32, K=4096, scale=scale)
    res = ts.simulate(prog, **arrays)
    got = np.asarray(res["C"], np.float64)
    if scale != 1.0:  # the wrong kernels are far from numpy: a third of C's own size and more
        assert np.abs(got - want).max() > 0.3 * np.abs(want).max()
    verdict = ts.run(prog, device="none", reference={"C": want}, reference_magnitude=mag, **arrays)
    assert verdict.status == "NOT_JUDGED" and not verdict.ok
    assert "a quarter" in verdict.reason and "C" in verdict.reason
    ref = check_reference(prog, res.outputs, {"C": want}, arrays, mag)
    assert ref.vacuous == ("C",) and "C" in ref.unjudged
    assert dict(ref.resolution)["C"] >= RESOLUTION_LIMIT


def test_without_the_magnitude_the_tile_scale_judges_k_2048():
    """A reference dict alone: the scale is capped at the tile's largest value (the program on
    |inputs|, capped: tilesim/diff/reference.py), where rtol 0.125 can fail: C * 1.25 fails."""
    arrays, want = _inputs(2048)
    wrong = gemm16.specialize(target="gfx1201", M=32, N=32, K=2048, scale=1.25)
    assert ts.run(wrong, device="none", reference={"C": want}, **arrays).status == "SIM_MISMATCH"
    res = ts.simulate(right := gemm16.specialize(target="gfx1201", M=32, N=32, K=2048), **arrays)
    ref = check_reference(right, res.outputs, {"C": want}, arrays)
    assert ref.ok and not ref.vacuous and dict(ref.resolution)["C"] < RESOLUTION_LIMIT


def test_a_quarter_off_at_k_1024_with_the_magnitude_is_not_passed():
    """K=1024 with the per-element scale |A| |B|: the bound's resolution is about 0.43, so C * 1.25
    was REFERENCE_OK under a limit of one half; now the output is not judged."""
    arrays, want = _inputs(1024)
    mag = {"C": _abs_product(**arrays)}
    wrong = gemm16.specialize(target="gfx1201", M=32, N=32, K=1024, scale=1.25)
    got = np.asarray(ts.simulate(wrong, **arrays)["C"], np.float64)
    assert np.abs(got - want).max() > 0.2 * np.abs(want).max()  # 25% off, by numpy
    v = ts.run(wrong, device="none", reference={"C": want}, reference_magnitude=mag, **arrays)
    assert v.status == "NOT_JUDGED" and not v.ok


@ts.kernel
def gemm_fp8_out(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["fp8_ocp", "M", "N"], *,
                 scale=1.0):
    op = ts.mma_op("v_wmma_f32_16x16x16_f16")
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], op.k):
        acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")), acc)
    ts.store(C[tm * op.m:, tn * op.n:], ts.cast(acc * scale, "fp8_ocp"))


def test_an_fp8_output_is_judged_to_one_unit_of_its_type():
    """The simulator's result is the computed value rounded once to the output type: half a unit
    (at most eps |x|). The bound counted two units (rtol 2 * 2**-3 for fp8 e4m3), which passed C * 1.2;
    with one unit the right kernel passes and the scaled one fails."""
    arrays, want = _inputs(64)
    right = ts.run(gemm_fp8_out.specialize(target="gfx1201", M=32, N=32, K=64), device="none",
                   reference={"C": want}, **arrays)
    assert right.ok, right.reason
    assert right.resolution["C"] < RESOLUTION_LIMIT
    wrong = ts.run(gemm_fp8_out.specialize(target="gfx1201", M=32, N=32, K=64, scale=1.2), device="none",
                   reference={"C": want}, **arrays)
    assert wrong.status == "SIM_MISMATCH"


def test_the_same_kernel_at_k_1024_is_judged_and_its_scaled_twin_fails():
    """K=1024: the bound (64 roundings) is below half of C's larger values, so the comparison can fail:
    the right kernel passes, the one scaled by 1.5 fails."""
    arrays, want = _inputs(1024)
    right = ts.run(gemm16.specialize(target="gfx1201", M=32, N=32, K=1024), device="none", reference={"C": want},
                   **arrays)
    assert right.ok, right.reason
    wrong = ts.run(gemm16.specialize(target="gfx1201", M=32, N=32, K=1024, scale=1.5), device="none",
                   reference={"C": want}, **arrays)
    assert wrong.status == "SIM_MISMATCH"


def test_an_f32_accumulator_reports_a_fine_resolution():
    arrays, want = _inputs(4096)
    prog = gemm32.specialize(target="gfx1201", M=32, N=32, K=4096)
    res = ts.simulate(prog, **arrays)
    ref = check_reference(prog, res.outputs, {"C": want}, arrays)
    assert ref.ok and not ref.vacuous and not ref.unjudged
    assert dict(ref.resolution)["C"] < 1e-3  # would catch a result 0.1% off everywhere
    wrong = gemm32.specialize(target="gfx1201", M=32, N=32, K=4096, scale=1.01)
    assert not check_reference(wrong, ts.simulate(wrong, **arrays).outputs, {"C": want}, arrays).ok


def test_a_reference_of_zeros_leaves_the_rule_out():
    """No nonzero reference value: there is no relative error to miss, and a nonzero result still fails."""
    arrays, _ = _inputs(64)
    arrays["A"][:] = 0
    prog = gemm32.specialize(target="gfx1201", M=32, N=32, K=64)
    res = ts.simulate(prog, **arrays)
    ref = check_reference(prog, res.outputs, {"C": np.zeros((32, 32))}, arrays)
    assert ref.ok and not ref.vacuous and dict(ref.resolution)["C"] == float("inf")
    assert not check_reference(prog, {"C": np.full((32, 32), 1e-3)}, {"C": np.zeros((32, 32))}, arrays).ok


def test_the_command_line_exits_4(tmp_path, capsys):
    from tilesim.cli import main

    src = tmp_path / "g.py"
    src.write_text(
        "import numpy as np\nimport tilesim as ts\n"
        "@ts.kernel\n"
        "def g(A: ts.Tensor['f16', 'M', 'K'], B: ts.Tensor['f16', 'K', 'N'], C: ts.Tensor['f16', 'M', 'N']):\n"
        "    op = ts.mma_op('v_wmma_f16_16x16x16_f16')\n"
        "    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)\n"
        "    tm, tn = ts.tile_id(0), ts.tile_id(1)\n"
        "    acc = ts.zeros(op.layout('C'), 'f16')\n"
        "    for k in ts.range(0, A.shape[1], op.k):\n"
        "        acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout('A')), ts.load(B[k:, tn * op.n:], "
        "op.layout('B')), acc)\n"
        "    ts.store(C[tm * op.m:, tn * op.n:], acc * 1.5)\n"
        "def programs():\n    return [g.specialize(target='gfx1201', M=32, N=32, K=4096)]\n"
        "def reference(A, B):\n"
        "    return {'C': A.astype(np.float64) @ B.astype(np.float64)}\n")
    assert main(["simulate", str(src)]) == 4
    out = capsys.readouterr().out
    assert "NOT_JUDGED" in out
    assert main(["simulate", str(src), "--format", "json"]) == 4
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["status"] == "NOT_JUDGED" and doc["resolution"]["C"] >= RESOLUTION_LIMIT
    assert main(["run", str(src), "--device", "none"]) == 4


def test_simulate_prints_the_resolution_of_a_judged_comparison(capsys):
    from tilesim.cli import main

    assert main(["simulate", "examples/gemm.py", "--format", "json"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert docs and all(0 < d["resolution"]["C"] < 1e-4 for d in docs)  # f32 accumulators, K=64
    assert main(["simulate", "examples/gemm.py"]) == 0
    assert "resolution: the comparison fails C scaled by 1 ± " in capsys.readouterr().out


@pytest.mark.parametrize("with_reference", [False, True])
def test_a_device_run_whose_bound_cannot_fail_is_not_a_match(with_reference):
    """mma.sync with an f16 accumulator over K=1024: a device may round once per product, so the
    device-vs-simulator bound is 1024 f16 roundings (rtol 1.0); a device whose C is 1.5 times the
    simulator's was MATCH. At K=64 (rtol 0.06) the same wrong device is MISMATCH and the right one MATCH."""
    from tests import _fake_runners as fake

    arrays, want = _inputs(1024)
    kw = {"reference": {"C": want}} if with_reference else {}
    prog = gemm16.specialize(target="sm_90", M=32, N=32, K=1024, mma=MMA_SYNC16)
    sim = np.asarray(ts.simulate(prog, **arrays)["C"], np.float64)
    assert np.abs(1.5 * sim - sim).max() > 0.3 * np.abs(want).max()  # the wrong device is far off
    v = ts.run(prog, runner=fake.scaled_by_1_5, **kw, **arrays)
    assert v.status == "NOT_JUDGED" and v.exit_status == 4 and "judged nothing" in v.reason, v.reason
    assert ts.run(prog, runner=fake.device_like_simulator, **kw, **arrays).status == "NOT_JUDGED"
    arrays, want = _inputs(64)
    short = gemm16.specialize(target="sm_90", M=32, N=32, K=64, mma=MMA_SYNC16)
    kw = {"reference": {"C": want}} if with_reference else {}
    assert ts.run(short, runner=fake.scaled_by_1_5, **kw, **arrays).status == "MISMATCH"
    right = ts.run(short, runner=fake.device_like_simulator, **kw, **arrays)
    assert right.status == ("MATCH" if with_reference else "NOT_JUDGED")  # no reference: the intent unjudged


def test_a_run_verdict_carries_the_resolution():
    arrays, want = _inputs(64)
    v = ts.run(gemm32.specialize(target="gfx1201", M=32, N=32, K=64), device="none", reference={"C": want}, **arrays)
    assert v.ok and 0 < v.resolution["C"] < 1e-4
    assert v.to_dict()["resolution"] == v.resolution and "resolution: the reference comparison fails C" in str(v)
    assert ts.run(gemm32.specialize(target="gfx1201", M=32, N=32, K=64), device="none", **arrays).resolution == {}
