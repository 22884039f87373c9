"""Expected outputs given as data are judged per element too (trust, round five).

Round two made the bound per element (tests/test_trust_tolerance.py): a layout bug confined to rows of A at
1e-3, next to rows at 1e4, hid under ``rtol * max |C|``. The scale came from ``reference()`` evaluated on
``|inputs|``, so it held only for a program file with ``reference()``: ``--expect FILE.npz`` (0.10.0),
``ts.run(prog, reference=...)`` and ``judge_simulation`` without a magnitude fell back to the tile's scale,
and the same wrong kernel was REFERENCE_OK / COMPILE_ONLY, exit 0. Now, for a monotone program, the
program itself simulated on ``|inputs|`` gives the per-element scale where no reference on ``|inputs|`` does,
never above the tile's (so it can only tighten the old bound; for a right program it *is* ``|A| |B|``).

The wrong kernel is wrong by float64 numpy, A @ B (tests/test_trust_tolerance.py shows it); the expected
file is that float64 product, never tilesim's output.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from tests.test_trust_tolerance import SKEW
from tilesim.cli import main
from tilesim.diff import check_reference, judge_simulation


def _skew(bug: bool):
    ns: dict = {}
    exec(compile(SKEW.format(bug=bug), f"skew_{bug}", "exec"), ns)  # noqa: S102 - the test's own text
    prog = ns["programs"]()[0]
    arrays = ns["inputs"](prog)
    return prog, arrays, {"C": arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)}


@pytest.fixture
def files(tmp_path):
    out = {}
    for bug in (True, False):
        prog, arrays, want = _skew(bug)
        name = "wrong" if bug else "right"
        (tmp_path / f"{name}.json").write_text(prog.to_json())
        out[name] = str(tmp_path / f"{name}.json")
    np.savez(tmp_path / "inputs.npz", **arrays)
    np.savez(tmp_path / "expect.npz", **want)
    out["inputs"], out["expect"] = str(tmp_path / "inputs.npz"), str(tmp_path / "expect.npz")
    return out


def test_the_small_row_bug_fails_against_expected_data(files, capsys):
    io = ["--inputs", files["inputs"], "--expect", files["expect"]]
    assert main(["simulate", files["wrong"], *io]) == 1  # was REFERENCE_OK, exit 0
    assert capsys.readouterr().out.startswith("REFERENCE_MISMATCH")
    assert main(["run", files["wrong"], "--device", "none", *io]) == 1
    assert capsys.readouterr().out.startswith("SIM_MISMATCH")
    assert main(["simulate", files["right"], *io]) == 0
    assert capsys.readouterr().out.startswith("REFERENCE_OK")
    assert main(["run", files["right"], "--device", "none", *io]) == 0


def test_the_python_api_judges_a_reference_given_as_data_per_element():
    prog, arrays, want = _skew(True)
    v = ts.run(prog, device="none", reference=want, **arrays)
    assert v.status == "SIM_MISMATCH" and not v.ok  # was COMPILE_ONLY, ok
    res = ts.simulate(prog, **arrays)
    assert judge_simulation(prog, res, want, arrays).status == "REFERENCE_MISMATCH"
    rc = check_reference(prog, res.outputs, want, arrays)
    bad = dict(rc.bad)["C"]
    assert rc.per_element == ("C",) and bad[16:].any() and not bad[:16].any()  # only the wrong rows
    right, arrays, want = _skew(False)
    assert ts.run(right, device="none", reference=want, **arrays).ok


def test_without_the_inputs_the_tile_scale_is_all_there_is():
    prog, arrays, want = _skew(True)
    assert check_reference(prog, ts.simulate(prog, **arrays).outputs, want).per_element == ()


def test_cancellation_to_zero_is_still_no_false_failure():
    """C_ij = 0 exactly from terms of size ~1e3 (tests/test_trust_tolerance.py): the program on |inputs| is
    |A| |B| there, not |C| = 0."""
    from examples.gemm import gemm

    prog = gemm.specialize(target="gfx1201", M=16, N=16, K=32, mma="v_wmma_f32_16x16x16_f16")
    rng = np.random.default_rng(3)
    A = (rng.standard_normal((16, 32)) * 100).astype(np.float16)
    B = rng.standard_normal((32, 16)).astype(np.float16)
    A[:, 16:] = A[:, :16]
    B[16:, 2] = -B[:16, 2]
    want = {"C": A.astype(np.float64) @ B.astype(np.float64)}
    assert np.abs(want["C"][:, 2]).max() == 0.0
    rc = check_reference(prog, ts.simulate(prog, A=A, B=B).outputs, want, {"A": A, "B": B})
    assert rc.ok and rc.per_element == ("C",)
