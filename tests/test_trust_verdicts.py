"""Verdicts that exit 0 say what was not judged, and what the simulator sees at run time fails closed.

* A device (or the emulator) that agrees with the simulator proves the model right, not the program:
  without a reference, MATCH says the result was not judged (0.7.0 said so only for COMPILE_ONLY and
  SIMULATED_ONLY). The program here scales A @ B by 1.25 (numpy: not A @ B), a wrong program that
  no layout contradicts. (Until 0.8.0 it summed only K-steps 1..K-1; check now finds that: columns of
  A never read along the reduced axis, tests/test_input_coverage.py.)
* Disagreeing replicas the simulator observes make the verdict CHECK_FAILED even where `check` has
  nothing to say (here: check is told nothing, through a monkeypatched check that passes all).
"""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from tests import _fake_runners as fake
from tilesim.diff import run
from tilesim.diff import judge as judge_mod

NV = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


@ts.kernel
def skip_first(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"], *,
               mma=NV, start=16, scale=1.0):
    op = ts.mma_op(mma)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(start, A.shape[1], op.k):
        acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")), acc)
    ts.store(C[tm * op.m:, tn * op.n:], acc * scale if scale != 1.0 else acc)


def _arrays():
    rng = np.random.default_rng(3)
    return {"A": rng.standard_normal((32, 32)).astype(np.float16), "B": rng.standard_normal((32, 32)).astype(np.float16)}


def test_match_without_reference_says_not_judged():
    assert not ts.check(skip_first.specialize(target="sm_90", M=32, N=32, K=32)).ok  # K-step 0 never read
    p, arrays = skip_first.specialize(target="sm_90", M=32, N=32, K=32, start=0, scale=1.25), _arrays()
    assert ts.check(p).ok
    want = arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)
    assert not np.allclose(ts.simulate(p, **arrays)["C"], want, rtol=1e-3)  # wrong by numpy
    v = run(p, runner=fake.device_like_simulator, **arrays)  # the device agrees; nothing judged the intent
    assert v.status == "NOT_JUDGED" and v.exit_status == 4 and "the device computes what the program says" in v.reason
    w = run(p, runner=fake.device_like_simulator, reference={"C": want}, **arrays)
    assert w.status == "MISMATCH" and not w.ok  # the device agrees with the simulator, both differ from numpy


def test_replicas_the_simulator_sees_disagree_fail_closed(monkeypatch):
    """gfx1100 WMMA reads A from lanes 0-15 with a copy in 16-31: a shuffle that rotates only the copies.
    With check silenced, the run-time replication report alone must fail the verdict."""
    @ts.kernel
    def split(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"]):
        op = ts.mma_op("v_wmma_f32_16x16x16_f16")
        a = ts.shuffle(ts.load(A[0:, 0:], op.layout("A")), [i if i < 16 else 16 + (i - 15) % 16 for i in range(32)])
        acc = ts.mma(op, a, ts.load(B[0:, 0:], op.layout("B")), ts.zeros(op.layout("C"), "f32"))
        ts.store(C[0:, 0:], acc)

    p = split.specialize(target="gfx1100", M=16, N=16, K=16)
    rng = np.random.default_rng(0)
    arrays = {"A": rng.standard_normal((16, 16)).astype(np.float16), "B": rng.standard_normal((16, 16)).astype(np.float16)}
    monkeypatch.setattr("tilesim.diff.verdict._check_errors", lambda prog, **kw: [])
    v = run(p, device="none", **arrays)
    assert v.status == "CHECK_FAILED" and "copies differ" in v.reason, v
    res = ts.simulate(p, verify=False, **arrays)
    j = judge_mod.judge_simulation(p, res, None, arrays, errors=[])
    assert j.status == "CHECK_FAILED" and not j.ok


def test_outputs_left_unwritten_fail_even_past_the_analysis_budget(monkeypatch):
    """A grid one tile row short leaves C[16:32] unwritten (numpy's A @ B is not 0 there). With the
    static analysis over its budget, check only warns that it did not analyse; the simulation's
    write counts still fail the verdict."""
    import tilesim.ir.accesses as acc

    @ts.kernel
    def short(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"]):
        op = ts.mma_op(NV)
        ts.grid(A.shape[0] // op.m - 1, B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        acc_ = ts.zeros(op.layout("C"), "f32")
        for k in ts.range(0, A.shape[1], op.k):
            acc_ = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")),
                          acc_)
        ts.store(C[tm * op.m:, tn * op.n:], acc_)

    p, arrays = short.specialize(target="sm_90", M=32, N=32, K=32), _arrays()
    assert np.abs(arrays["A"].astype(np.float64)[16:] @ arrays["B"].astype(np.float64)).max() > 0
    assert not ts.check(p).ok  # within the budget, check names the unwritten rows
    monkeypatch.setattr(acc, "BUDGET", 4)
    rep = ts.check(p)
    assert rep.ok and any("not analysed" in f.message for f in rep.findings)
    v = run(p, device="none", **arrays)
    assert v.status == "CHECK_FAILED" and "512 of 1024 elements of output C were never written" in v.reason, v


def test_programs_whose_result_is_undefined_are_never_equivalent():
    """Two copies of the replica-splitting program simulate to the same numbers, but the device may
    read either copy: equal simulations prove nothing, as for LDS races."""
    from tilesim.testing import assert_equivalent
    from tests.test_trust_check import _prog

    p = _prog("shuffle_one_replica", "gfx1100")
    ev = ts.equivalent(p, p, random_runs=1, max_lines=1)
    assert not ev.equal and "undefined" in str(ev) and "copies differ" in str(ev)
    import pytest
    with pytest.raises(AssertionError, match="undefined"):
        assert_equivalent(p, p, random_runs=1, max_lines=1)
    right = _prog("shuffle_both_replicas", "gfx1100")
    assert ts.equivalent(right, right, random_runs=1, max_lines=1).equal


def test_a_program_that_skips_elements_whose_value_is_zero_is_not_equivalent():
    """Both programs store zeros to Y (16x16); the second only to its left half. The simulator's
    unwritten right half is 0 as well, so 0.7.0 called them equivalent; on a device that half is
    whatever the buffer held (numpy's answer, zeros everywhere, is not what it computes)."""
    lay = ts.lookup(NV, "sm_90").layout("C")  # a 16x8 tile

    @ts.kernel
    def zero(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"], *, halves=2):
        x = ts.load(X[0:, 0:], lay)
        for h in range(halves):
            ts.store(Y[0:, 8 * h:], x - x)

    both, left = (zero.specialize(target="sm_90", M=16, N=16, halves=h) for h in (2, 1))
    ev = ts.equivalent(both, left, random_runs=1, max_lines=2)
    assert not ev.equal and "written by only one of the programs" in str(ev)
    assert ts.equivalent(both, both, random_runs=1, max_lines=2).equal


@pytest.mark.compiler
def test_a_missing_wait_is_never_an_emulated_match(monkeypatch):
    """The emulator's loads land at once, so code with a deleted s_waitcnt gives the right numbers there
    (tests/test_isa_planted.py) and a wrong answer on hardware. The emulation's hazard report, here
    taken from a real emulation of the compiled GEMM with one hazard added, must fail the verdict."""
    import dataclasses

    from examples import gemm
    from tilesim.diff import verdict as vd

    p = gemm.gemm.specialize(target="gfx1201", M=32, N=32, K=32, mma="v_wmma_f32_16x16x16_f16")
    arrays = gemm.inputs(p)
    ref = {"C": arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)}
    assert run(p, device="emulator", reference=ref, **arrays).status == "EMULATED_MATCH"
    real = vd.emulate_program
    monkeypatch.setattr(vd, "emulate_program", lambda prog, a: dataclasses.replace(
        real(prog, a), hazards=("line 40: v4 read while the global_load that writes it may be in flight",)))
    v = run(p, device="emulator", reference=ref, **arrays)
    assert v.status == "EMULATED_MISMATCH" and not v.ok and "s_waitcnt" in v.reason


@pytest.mark.compiler
def test_emulate_exits_1_on_a_hazard(monkeypatch, tmp_path, capsys):
    import dataclasses

    from tilesim.cli import main
    from tilesim.isa import hipfile

    from tests.test_isa_hip import AXPY

    src = tmp_path / "k.hip"
    src.write_text(AXPY)
    cmd = ["emulate", str(src), "--target", "gfx1201", "--kernel", "axpy", "--block", "64", "--arg", "x=f32[64]",
           "--arg", "y=f32[64]", "--arg", "a=f32:2.0", "--arg", "n=i32:64"]
    assert main(cmd) == 0
    real = hipfile.emulate_hip
    monkeypatch.setattr(hipfile, "emulate_hip", lambda *a, **k: (lambda r: (dataclasses.replace(
        r[0], hazards=("line 9: v1 used while its load may be in flight",)), r[1]))(real(*a, **k)))
    capsys.readouterr()
    assert main(cmd) == 1
    assert "hazard: line 9" in capsys.readouterr().out


def test_an_f16_accumulator_at_large_k_still_catches_a_skipped_k_step():
    """v_wmma_f16_16x16x16_f16, K=1024: 0.7.0's bound was K roundings of f16 (rtol 1.0), which passes
    a GEMM that drops its last k-step (numpy: C moves by ~13% of its scale). The simulator rounds
    once per instruction (K/16 roundings), and its result is judged by that bound; the right
    program still passes."""
    @ts.kernel
    def g(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f16", "M", "N"], *, stop=0):
        op = ts.mma_op("v_wmma_f16_16x16x16_f16")
        ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        acc = ts.zeros(op.layout("C"), "f16")
        for k in ts.range(0, A.shape[1] - stop, op.k):
            acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")),
                         acc)
        ts.store(C[tm * op.m:, tn * op.n:], acc)

    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((32, 1024)).astype(np.float16), rng.standard_normal((1024, 32)).astype(np.float16)
    want = A.astype(np.float64) @ B.astype(np.float64)
    missing = A[:, -16:].astype(np.float64) @ B[-16:].astype(np.float64)
    assert np.abs(missing).max() > 0.05 * (np.abs(want).max() + 1)
    short = g.specialize(target="gfx1201", M=32, N=32, K=1024, stop=16)
    assert run(short, device="none", reference={"C": want}, A=A, B=B).status == "SIM_MISMATCH"
    right = g.specialize(target="gfx1201", M=32, N=32, K=1024)
    assert run(right, device="none", reference={"C": want}, A=A, B=B).ok
