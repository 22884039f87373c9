"""The reference bound is per element (trust, round two): a small wrong element next to a huge one
no longer hides under ``rtol * max |reference|``.

The wrong program: a GEMM whose second row tile reads A's k blocks in reverse while B's are in order,
so rows 16-31 of C are wrong and rows 0-15 right; rows 0-15 of A are ~1e4, rows 16-31 ~1e-3. Its
wrongness is shown by float64 numpy (``A @ B``), not by tilesim. The right neighbour (the same kernel
without the bug) and a right program whose elements cancel to ~0 still pass.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import tilesim as ts
from tilesim.cli import main
from tilesim.diff import check_reference, judge_simulation, magnitude_inputs

SKEW = textwrap.dedent('''
    import numpy as np
    import tilesim as ts

    @ts.kernel
    def skew(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"],
             *, mma="v_wmma_f32_16x16x16_f16", bug=True):
        op = ts.mma_op(mma)
        ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        acc = ts.zeros(op.layout("C"), "f32")
        for k in ts.range(0, A.shape[1], op.k):
            ka = (A.shape[1] - op.k) * tm + k * (1 - 2 * tm) if bug else k  # tile 1: A's k blocks reversed
            a = ts.load(A[tm * op.m:, ka:], op.layout("A"))
            b = ts.load(B[k:, tn * op.n:], op.layout("B"))
            acc = ts.mma(op, a, b, acc)
        ts.store(C[tm * op.m:, tn * op.n:], acc)

    BUG = {bug}

    def programs():
        return [skew.specialize(target="gfx1201", M=32, N=16, K=32, bug=BUG)]

    def inputs(prog, seed=0):
        rng = np.random.default_rng(seed)
        A = rng.standard_normal((32, 32))
        A[:16] *= 1e4
        A[16:] *= 1e-3
        return {{"A": A.astype(np.float16), "B": rng.standard_normal((32, 16)).astype(np.float16)}}

    def reference(A, B):
        return {{"C": A.astype(np.float64) @ B.astype(np.float64)}}
''')


def _module(tmp_path, bug: bool):
    path = tmp_path / f"skew_{bug}.py"
    path.write_text(SKEW.format(bug=bug))
    ns: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)  # noqa: S102 - the test's own file
    return path, ns


def test_small_row_bug_is_wrong_by_numpy_and_hid_under_the_tile_scale(tmp_path) -> None:
    _, ns = _module(tmp_path, True)
    prog = ns["programs"]()[0]
    arrays = ns["inputs"](prog)
    want = arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)
    got = ts.simulate(prog, **arrays)["C"]
    err = np.abs(got - want)
    assert err[16:].max() > 100 * np.abs(want[16:]).max() * 1e-3  # rows 16-31: wrong by the data's own size
    assert err[:16].max() <= 1e-6 * np.abs(want[:16]).max()  # rows 0-15: right
    old = check_reference(prog, {"C": got}, {"C": want})  # no magnitude, no inputs: the tile's scale
    assert old.ok and old.per_element == ()  # the class this closes: the bug hides under max |C| ~ 1e5
    mag = ns["reference"](**magnitude_inputs(prog, arrays))
    new = check_reference(prog, {"C": got}, {"C": want}, arrays, mag)
    assert not new.ok and new.per_element == ("C",)
    bad = dict(new.bad)["C"]
    assert bad[16:].any() and not bad[:16].any()
    assert judge_simulation(prog, ts.simulate(prog, **arrays), {"C": want}, arrays, magnitude=mag).status \
        == "REFERENCE_MISMATCH"


def test_cli_simulate_and_run_fail_the_small_row_bug(tmp_path, capsys) -> None:
    path, _ = _module(tmp_path, True)
    assert main(["simulate", str(path)]) == 1
    assert "REFERENCE_MISMATCH" in capsys.readouterr().out
    assert main(["run", str(path), "--device", "none"]) == 1
    assert "SIM_MISMATCH" in capsys.readouterr().out


def test_the_right_kernel_still_passes_per_element(tmp_path, capsys) -> None:
    path, ns = _module(tmp_path, False)
    assert main(["simulate", str(path)]) == 0
    assert "REFERENCE_OK" in capsys.readouterr().out
    prog = ns["programs"]()[0]
    arrays = ns["inputs"](prog)
    mag = ns["reference"](**magnitude_inputs(prog, arrays))
    assert check_reference(prog, ts.simulate(prog, **arrays).outputs, ns["reference"](**arrays), arrays, mag).ok


def test_cancellation_to_zero_is_not_a_false_failure() -> None:
    """C_ij ~ 0 from large terms of both signs: |C| says nothing of the rounding, |A| |B| does."""
    from examples.gemm import gemm

    prog = gemm.specialize(target="gfx1201", M=16, N=16, K=32, mma="v_wmma_f32_16x16x16_f16")
    rng = np.random.default_rng(3)
    A = (rng.standard_normal((16, 32)) * 100).astype(np.float16)
    B = rng.standard_normal((32, 16)).astype(np.float16)
    B[:, 1] = -B[:, 0]
    B[::2, 0] *= -1  # column 0 against column 1 does not cancel; the columns of A's rows do, below
    A[:, 16:] = A[:, :16]
    B[16:, 2] = -B[:16, 2]  # C[:, 2] is exactly 0 in real arithmetic, from terms of size ~1e3
    arrays = {"A": A, "B": B}
    want = {"C": A.astype(np.float64) @ B.astype(np.float64)}
    assert np.abs(want["C"][:, 2]).max() == 0.0
    mag = {"C": np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))}
    assert check_reference(prog, ts.simulate(prog, **arrays).outputs, want, arrays, mag).ok


@pytest.mark.parametrize("module", ["softmax"])
def test_a_program_that_is_not_monotone_keeps_the_tile_scale(module: str) -> None:
    import importlib

    m = importlib.import_module(f"examples.{module}")
    prog = m.programs()[0]
    assert magnitude_inputs(prog, m.inputs(prog)) is None


def test_a_device_wrong_only_in_the_small_rows_is_a_mismatch(tmp_path) -> None:
    """The right kernel on sm_90, with a fake device that reverses rows 16..31 of C: numpy says those
    rows are wrong by their own size; under the tile's scale (max |C| ~ 1e5) they passed."""
    from tests import _fake_runners as fake
    from tilesim.diff import result_tolerance, run
    from tilesim.diff.reference import beyond

    _, ns = _module(tmp_path, False)
    mma = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    prog = ns["skew"].specialize(target="sm_90", M=32, N=16, K=32, mma=mma, bug=False)
    arrays = ns["inputs"](prog)
    want = ns["reference"](**arrays)["C"]
    dev = fake.small_rows_reversed(type("E", (), {"program": prog})(), arrays)["C"]
    assert np.abs(dev[16:] - want[16:]).max() > 0.5 * np.abs(want[16:]).max()  # wrong by the data's size
    rtol, atol = result_tolerance(prog)
    assert not beyond(dev, want, rtol, atol).any()  # the class this closes: hidden under max |C|
    mag = ns["reference"](**magnitude_inputs(prog, arrays))
    v = run(prog, runner=fake.small_rows_reversed, reference={"C": want}, reference_magnitude=mag, **arrays)
    assert v.status == "MISMATCH", v
    right = run(prog, runner=fake.device_like_simulator, reference={"C": want}, reference_magnitude=mag, **arrays)
    assert right.status == "MATCH", right


def test_an_mma_that_negates_by_any_modifier_keeps_the_tile_scale() -> None:
    """Which modifiers negate is the catalog row's fact (Modifier.kind "negate"/"signedness"): CDNA3's f64
    MFMA negates A/B/C through blgp (CDNA3 ISA §7.1, "f64: negate A (bit 0), B (bit 1), C (bit 2)"). 0.8.0
    kept its own list (neg, neg_hi, abs) and took an f64 GEMM with blgp=1 for monotone."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from examples import gemm

    mma = "v_mfma_f64_16x16x4_f64"

    @ts.kernel
    def neg_gemm(A: ts.Tensor["f64", "M", "K"], B: ts.Tensor["f64", "K", "N"], C: ts.Tensor["f64", "M", "N"]):
        op = ts.mma_op(mma)
        acc = ts.mma(op, ts.load(A[0:, 0:], op.layout("A")), ts.load(B[0:, 0:], op.layout("B")),
                     ts.zeros(op.layout("C"), "f64"), blgp=1)
        ts.store(C[0:, 0:], acc)

    rng = np.random.default_rng(0)
    arrays = {"A": rng.standard_normal((16, 4)), "B": rng.standard_normal((4, 16))}
    assert magnitude_inputs(neg_gemm.specialize(target="gfx942", M=16, N=16, K=4), arrays) is None
    plain = gemm.gemm.specialize(target="gfx942", M=32, N=32, K=8, mma="v_mfma_f32_32x32x8f16")
    assert magnitude_inputs(plain, gemm.inputs(plain, 0)) is not None
