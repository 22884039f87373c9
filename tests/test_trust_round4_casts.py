"""Round four: a kernel's own ``ts.cast`` must not buy tolerance against the float64 reference.

The bound added one rounding of every type the program cast to: a round trip through bf8 added
rtol 0.5 (relative to |A||B|), so a GEMM whose result was multiplied by 1.3 (with a bf8 round trip
beside it), one that quantised A to bf8, or one that accumulated through bf16 at every k-step was
REFERENCE_OK. The expected answer here is float64 numpy on the same inputs; each wrong kernel is
shown to be far from it (beyond anything f32 accumulation explains) before tilesim is asked.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilesim as ts
from tilesim.diff.reference import check_reference, result_tolerance

MMA = "v_wmma_f32_16x16x16_f16"
BUGS = ("bf8_inputs", "bf16_accumulator", "scaled_beside_bf8", "scaled_beside_bf16")


@ts.kernel
def gemm(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"], *, bug=""):
    op = ts.mma_op(MMA)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], op.k):
        a = ts.load(A[tm * op.m:, k:], op.layout("A"))
        b = ts.load(B[k:, tn * op.n:], op.layout("B"))
        if bug in ("bf8_inputs", "bf8_inputs_modelled"):
            a = ts.cast(ts.cast(a, "bf8_ocp"), "f16")
        acc = ts.mma(op, a, b, acc)
        if bug == "bf16_accumulator":
            acc = ts.cast(ts.cast(acc, "bf16"), "f32")
    if bug == "scaled_beside_bf8":
        acc = ts.cast(ts.cast(acc, "bf8_ocp"), "f32") * 1.3
    if bug == "scaled_beside_bf16":
        acc = ts.cast(ts.cast(acc, "bf16"), "f32") * 1.02
    ts.store(C[tm * op.m:, tn * op.n:], acc)


def _case(bug: str, K: int = 256):
    prog = gemm.specialize(target="gfx1100", M=32, N=32, K=K, bug=bug)
    rng = np.random.default_rng(4)
    A = rng.standard_normal((32, K)).astype(np.float16)
    B = rng.standard_normal((K, 32)).astype(np.float16)
    return prog, {"A": A, "B": B}


def _exact(A, B):
    return A.astype(np.float64) @ B.astype(np.float64)


@pytest.mark.parametrize("bug", BUGS)
def test_a_kernel_that_rounds_or_scales_is_far_from_numpy_and_fails(bug):
    prog, arrays = _case(bug)
    want = _exact(**arrays)
    got = np.asarray(ts.simulate(prog, **arrays)["C"], np.float64)
    mag = np.abs(arrays["A"].astype(np.float64)) @ np.abs(arrays["B"].astype(np.float64))
    # f32 accumulation over K=256 moves an element by far less than 1e-4 of |A||B|: these are wrong by numpy
    assert np.max(np.abs(got - want) / mag) > 1e-3
    rc = check_reference(prog, {"C": got}, {"C": want}, arrays, {"C": mag})
    assert not rc.ok
    assert "ts.cast" in rc.describe()


def test_cli_simulate_and_run_fail_the_scaled_kernel(tmp_path, capsys):
    src = tmp_path / "scaled.py"
    src.write_text(
        "import numpy as np\n"
        "from tests.test_trust_round4_casts import gemm\n"
        "def programs():\n"
        "    return [gemm.specialize(target='gfx1100', M=32, N=32, K=256, bug='scaled_beside_bf8')]\n"
        "def inputs(prog, seed=0):\n"
        "    r = np.random.default_rng(seed)\n"
        "    return {'A': r.standard_normal((32, 256)).astype(np.float16),\n"
        "            'B': r.standard_normal((256, 32)).astype(np.float16)}\n"
        "def reference(A, B):\n"
        "    return {'C': A.astype(np.float64) @ B.astype(np.float64)}\n")
    from tilesim.cli import main
    assert main(["simulate", str(src)]) == 1
    assert "REFERENCE_MISMATCH" in capsys.readouterr().out
    assert main(["run", str(src)]) == 1
    assert "SIM_MISMATCH" in capsys.readouterr().out


def test_a_reference_that_rounds_where_the_kernel_does_passes():
    prog, arrays = _case("bf8_inputs_modelled")
    a8 = arrays["A"].astype(ml_dtypes.float8_e5m2).astype(np.float64)  # OCP E5M2, round to nearest even
    want = a8 @ arrays["B"].astype(np.float64)
    got = ts.simulate(prog, **arrays)["C"]
    mag = np.abs(a8) @ np.abs(arrays["B"].astype(np.float64))
    assert check_reference(prog, {"C": got}, {"C": want}, arrays, {"C": mag}).ok


def test_an_output_of_a_narrow_type_keeps_its_rounding_and_a_device_keeps_the_casts():
    import examples.gemm_bias as gb  # casts to bf16 and stores a bf16 output: the output's type counts
    prog = gb.programs()[0]
    arrays = gb.inputs(prog)
    assert check_reference(prog, ts.simulate(prog, **arrays).outputs, gb.reference(**arrays), arrays).ok
    scaled, _ = _case("scaled_beside_bf16")
    # a device against the simulator: both round at the cast, so the cast's rounding is allowed there
    assert result_tolerance(scaled)[0] > 2 * 2.0 ** -8 > result_tolerance(scaled, simulated=True)[0]
