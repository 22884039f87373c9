"""``ts.lds_load_tr`` in tile programs: traced, checked, simulated against float64 numpy, emitted
through the clang builtin, compiled, and run in the ISA emulator; every misfit refused with a
typed error naming what does not fit."""

# No `from __future__ import annotations`: the 8-bit kernels name their tensor types through a
# closure variable, evaluated when each kernel is defined.

import numpy as np
import pytest

import tilesim as ts
from examples import lds_tr_gemm
from examples.lds_gemm import copy_layout
from tilesim.errors import InstructionError, VerifyError
from tilesim.ir.core import Program
from tilesim.layouts import Layout
from tilesim.matrix.lds_transpose import TRANSPOSE_READS

RNG = np.random.default_rng(2)


def _gemm_inputs(prog, seed=0, integers=False):
    rng = np.random.default_rng(seed)
    (K, M), (_, N) = prog.tensor("At").shape, prog.tensor("B").shape
    if integers:  # small integers: every product and sum exact in f32, so the result is exact
        return {"At": rng.integers(-3, 4, (K, M)).astype(np.float16), "B": rng.integers(-3, 4, (K, N)).astype(np.float16)}
    return {"At": rng.standard_normal((K, M)).astype(np.float16), "B": rng.standard_normal((K, N)).astype(np.float16)}


@pytest.mark.parametrize("i", range(len(lds_tr_gemm.CONFIGS)), ids=[t for t, _ in lds_tr_gemm.CONFIGS])
def test_example_simulates_to_the_float64_product(i):
    prog = lds_tr_gemm.programs(M=32, N=48, K=96)[i]
    rep = ts.check(prog)
    assert rep.ok, [str(f) for f in rep.findings]
    assert {o.kind for o in prog.walk()} >= {"lds_load_tr", "mma"}
    for integers in (False, True):
        arrays = _gemm_inputs(prog, integers=integers)
        ref = arrays["At"].astype(np.float64).T @ arrays["B"].astype(np.float64)  # numpy, not tilesim
        got = ts.simulate(prog, **arrays)["C"]
        if integers:
            np.testing.assert_array_equal(got, ref)
        else:
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)


def test_program_round_trips_through_json():
    prog = lds_tr_gemm.programs()[0]
    again = Program.from_json(prog.to_json())
    ops = [o for o in again.walk() if o.kind == "lds_load_tr"]
    assert [o.attr("instr") for o in ops] == ["ds_read_b64_tr_b16"] * 2
    assert [bool(o.attr("transpose")) for o in ops] == [True, False]


@pytest.mark.parametrize("target", ["gfx1201", "gfx942"])
def test_targets_without_a_transpose_read_are_refused(target):
    mma = {"gfx1201": "v_wmma_f32_16x16x16_f16", "gfx942": "v_mfma_f32_16x16x16_f16"}[target]
    with pytest.raises(InstructionError, match="targets with one: gfx1250, gfx950"):
        lds_tr_gemm.lds_tr_gemm.specialize(target=target, M=16, N=16, K=16, mma=mma)


@ts.kernel
def _one_read(X: ts.Tensor["f16", "R", "S"], Y: ts.Tensor["f16", "P", "Q"], C: ts.Tensor["f32", "M", "N"], *, mma="v_mfma_f32_16x16x32_f16",
              operand="B", transpose=False, col0=0, pad=0, vec=1, per_phase=1, max_phase=1, instr=None, buf_dtype="f16",
              waves=1, read_other=False, barrier=True):
    """Each wave stages its own ``R / waves`` rows of X into one LDS buffer, then reads an operand
    from its own rows (or, ``read_other``, the next wave's) with a transpose read; the other operand
    is Y, so C = Y @ slab (operand B) or slabᵀ @ Y (operand A, transpose=True)."""
    op = ts.mma_op(mma)
    R, S = X.shape
    h = R // waves
    ts.waves(waves)
    w = ts.wave_id()
    s = ts.lds_alloc(buf_dtype, R, S, pad=pad, vec=vec, per_phase=per_phase, max_phase=max_phase)
    ts.lds_store(s, w * h, 0, ts.load(X[w * h:, 0:], copy_layout(h, S, op.wave_size)))
    if barrier:
        ts.barrier()
    frag = ts.lds_load_tr(s, ((w + 1) % waves if read_other else w) * h, col0, op.layout(operand),
                          transpose=transpose, instr=instr)
    other = ts.load(Y[0:, 0:], op.layout("A" if operand == "B" else "B"))
    acc = ts.mma(op, frag, other, ts.zeros(op.layout("C"), "f32")) if operand == "A" else \
        ts.mma(op, other, frag, ts.zeros(op.layout("C"), "f32"))
    ts.store(C[w * op.m:, 0:], acc)


def _errors(prog):
    return [str(f) for f in ts.check(prog).errors]


def test_a_layout_the_instruction_cannot_produce_names_lane_and_slot():
    # A (16 x 32, m x k) from an M x K buffer without transpose: a lane's 4 elements are 4 rows apart
    prog = _one_read.specialize(target="gfx950", R=16, S=32, P=32, Q=16, M=16, N=16, operand="A")
    errs = _errors(prog)
    assert any("cannot produce this layout: lane" in e and "consecutive columns of one buffer row" in e
               and "transpose=True" in e for e in errs), errs
    with pytest.raises(VerifyError, match="cannot produce this layout"):
        ts.simulate(prog, X=np.zeros((16, 32), np.float16), Y=np.zeros((32, 16), np.float16))
    # the same fragment read from the K x M buffer with transpose=True is fine
    ok = _one_read.specialize(target="gfx950", R=32, S=16, P=32, Q=16, M=16, N=16, operand="A", transpose=True)
    assert _errors(ok) == []
    X = RNG.integers(-3, 4, (32, 16)).astype(np.float16)
    Y = RNG.integers(-3, 4, (32, 16)).astype(np.float16)
    np.testing.assert_array_equal(ts.simulate(ok, X=X, Y=Y)["C"], X.astype(np.float64).T @ Y.astype(np.float64))


def test_swizzle_and_alignment_are_checked_for_the_actual_offsets():
    base = dict(target="gfx950", R=32, S=16, P=16, Q=32, M=16, N=16)
    X = RNG.integers(-3, 4, (32, 16)).astype(np.float16)
    Y = RNG.integers(-3, 4, (16, 32)).astype(np.float16)
    # an XOR swizzle of single elements breaks each lane's 4-element run; of 4-element groups keeps it
    bad = _one_read.specialize(**base, vec=1, per_phase=1, max_phase=4)
    assert any("does not keep contiguous" in e for e in _errors(bad)), _errors(bad)
    for good in (_one_read.specialize(**base, vec=4, per_phase=1, max_phase=4), _one_read.specialize(**base, pad=4)):
        assert _errors(good) == []
        got = ts.simulate(good, X=X, Y=Y)["C"]
        np.testing.assert_array_equal(got, Y.astype(np.float64) @ X.astype(np.float64))  # exact: small integers
    # padding of 1 element shifts odd rows by 2 bytes: reads are no longer 8-byte aligned
    padded = _one_read.specialize(**base, pad=1)
    assert any("not 8-byte aligned" in e for e in _errors(padded)), _errors(padded)
    with pytest.raises(VerifyError, match="not 8-byte aligned"):
        ts.simulate(padded, X=X, Y=Y)
    odd = _one_read.specialize(target="gfx950", R=32, S=20, P=16, Q=32, M=16, N=16, col0=2)
    assert any("not 8-byte aligned" in e for e in _errors(odd)), _errors(odd)


def test_the_read_fills_exactly_the_operand_registers():
    """One-hot probe through the mma: B from a swizzled buffer via the transpose read, A = a row
    selector, so C row m is B's row k for the selected k — each k checked on its own."""
    prog = lds_tr_gemm.programs(M=16, N=16, K=32)[0]
    K, M = prog.tensor("At").shape
    B = (np.arange(32 * 16) % 251).astype(np.float16).reshape(32, 16)
    for k in range(K):
        At = np.zeros((K, M), np.float16)
        At[k, :] = 1  # every output row selects B[k]
        got = ts.simulate(prog, At=At, B=B)["C"]
        np.testing.assert_array_equal(got, np.broadcast_to(B[k].astype(np.float64), (M, 16)))


def test_wrong_instruction_or_type_is_refused():
    with pytest.raises(InstructionError, match="targets that have it: gfx1250"):
        _one_read.specialize(target="gfx950", R=32, S=16, P=16, Q=32, M=16, N=16, instr="ds_load_tr16_b128")
    with pytest.raises(InstructionError, match="no LDS transpose read of 32-bit elements"):
        _one_read.specialize(target="gfx950", R=32, S=16, P=16, Q=32, M=16, N=16, buf_dtype="f32")
    prog = _one_read.specialize(target="gfx950", R=32, S=16, P=16, Q=32, M=16, N=16, instr="ds_read_b64_tr_b8")
    assert any("moves 8-bit elements unchanged" in e for e in _errors(prog))


def test_race_analysis_knows_which_bytes_the_reads_touch():
    """Two waves, no barrier: reading one's own freshly written rows is no race; reading the other
    wave's rows is, in check (static) and in the simulator — and the barrier removes it."""
    kw = dict(target="gfx950", R=64, S=16, P=16, Q=32, M=32, N=16, waves=2)
    X = RNG.integers(-3, 4, (64, 16)).astype(np.float16)
    Y = RNG.integers(-3, 4, (16, 32)).astype(np.float16)
    X64, Y64 = X.astype(np.float64), Y.astype(np.float64)
    own = _one_read.specialize(**kw, barrier=False)
    out = ts.simulate(own, X=X, Y=Y)
    assert _errors(own) == [] and out.report.race_count == 0
    np.testing.assert_array_equal(out["C"], np.vstack([Y64 @ X64[:32], Y64 @ X64[32:]]))
    other = _one_read.specialize(**kw, barrier=False, read_other=True)
    assert any("LDS race" in e for e in _errors(other)), _errors(other)
    assert ts.simulate(other, X=X, Y=Y).report.race_count > 0
    fenced = _one_read.specialize(**kw, read_other=True)
    out = ts.simulate(fenced, X=X, Y=Y)
    assert _errors(fenced) == [] and out.report.race_count == 0
    np.testing.assert_array_equal(out["C"], np.vstack([Y64 @ X64[32:], Y64 @ X64[:32]]))


@pytest.mark.compiler
def test_emitted_builtin_compiles_and_runs_in_the_emulator():
    from tilesim.cli import main
    from tilesim.codegen.hip import emit_hip
    from tilesim.hw.offline import compile_hip

    prog = lds_tr_gemm.programs()[0]
    src = emit_hip(prog).source
    assert src.count("__builtin_amdgcn_ds_read_tr16_b64_v4i16(") == 2
    isa = compile_hip(src, "gfx950").isa
    assert "ds_read_b64_tr_b16" in isa and "v_mfma_f32_16x16x32_f16" in isa
    assert main(["run", "examples/lds_tr_gemm.py", "--target", "gfx950", "--device", "emulator"]) == 0


@pytest.mark.compiler
def test_emulated_bit_exact_to_the_simulator_and_gfx1250_compiles():
    """Two independent paths: the simulator's reads vs the compiled address arithmetic feeding the
    emulator's instruction model — equal bit for bit (gfx950). gfx1250's code compiles to
    ds_load_tr16_b128 (the emulator does not run gfx1250 kernels' prologue yet)."""
    from tilesim.codegen.hip import emit_hip
    from tilesim.hw.offline import compile_hip
    from tilesim.isa import emulate_program

    gfx950, gfx1250 = lds_tr_gemm.programs()
    arrays = _gemm_inputs(gfx950, seed=5)
    got = emulate_program(gfx950, arrays)
    assert got.races == ()
    np.testing.assert_array_equal(got.outputs["C"], ts.simulate(gfx950, **arrays)["C"])
    isa = compile_hip(emit_hip(gfx1250).source, "gfx1250").isa
    assert "ds_load_tr16_b128" in isa and "v_wmma_f32_16x16x32_f16" in isa


def _rows_copy(rows, cols, wave):
    """Row-major order split evenly over the lanes: lane l holds elements l*per .. l*per+per-1."""
    per = rows * cols // wave
    return Layout.from_function({"lane": wave, "slot": per}, {"row": rows, "col": cols},
                                lambda lane, slot: {"row": (lane * per + slot) // cols, "col": (lane * per + slot) % cols})


def _gemm8(dt):
    """An 8-bit GEMM (``dt`` tensors) whose operands come from ds_read_b64_tr_b8 / ds_load_tr8_b64."""

    @ts.kernel
    def gemm8(At: ts.Tensor[dt, "K", "M"], B: ts.Tensor[dt, "K", "N"], C: ts.Tensor["i32", "M", "N"], *,
              mma="v_mfma_i32_16x16x64_i8"):
        op = ts.mma_op(mma)
        ts.grid(At.shape[1] // op.m, B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        sA, sB = ts.lds_alloc(dt, op.k, op.m), ts.lds_alloc(dt, op.k, op.n)
        acc = ts.zeros(op.layout("C"), "i32")
        for k in ts.range(0, At.shape[0], op.k):
            ts.lds_store(sA, 0, 0, ts.load(At[k:, tm * op.m:], _rows_copy(op.k, op.m, op.wave_size)))
            ts.lds_store(sB, 0, 0, ts.load(B[k:, tn * op.n:], _rows_copy(op.k, op.n, op.wave_size)))
            ts.barrier()
            a = ts.lds_load_tr(sA, 0, 0, op.layout("A"), transpose=True)
            b = ts.lds_load_tr(sB, 0, 0, op.layout("B"))
            acc = ts.mma(op, a, b, acc)
            ts.barrier()
        ts.store(C[tm * op.m:, tn * op.n:], acc)

    return gemm8


I8_CASES = [("gfx950", "v_mfma_i32_16x16x64_i8", "i8", "ds_read_b64_tr_b8"),
            ("gfx1250", "v_wmma_i32_16x16x64_iu8", "u8", "ds_load_tr8_b64")]


@pytest.mark.parametrize(("target", "mma", "dt", "read"), I8_CASES, ids=[c[0] for c in I8_CASES])
def test_8bit_gemm_through_the_b8_reads_is_exact(target, mma, dt, read):
    prog = _gemm8(dt).specialize(target=target, K=128, M=32, N=32, mma=mma)
    assert ts.check(prog).ok, [str(f) for f in ts.check(prog).findings]
    assert {o.attr("instr") for o in prog.walk() if o.kind == "lds_load_tr"} == {read}
    lo, hi = (-128, 128) if dt == "i8" else (0, 256)
    At = RNG.integers(lo, hi, (128, 32)).astype(dt.replace("i8", "int8").replace("u8", "uint8"))
    B = RNG.integers(lo, hi, (128, 32)).astype(At.dtype)
    got = ts.simulate(prog, At=At, B=B)["C"]
    np.testing.assert_array_equal(got, At.astype(np.int64).T @ B.astype(np.int64))  # numpy int64


@pytest.mark.compiler
@pytest.mark.parametrize(("target", "mma", "dt", "read"), I8_CASES, ids=[c[0] for c in I8_CASES])
def test_8bit_gemm_compiles_to_the_b8_read(target, mma, dt, read):
    """(The gfx950 kernel also runs in the emulator, exact to numpy: tests/test_isa_sweep_ops.py.)"""
    from tilesim.codegen.hip import emit_hip
    from tilesim.hw.offline import compile_hip

    prog = _gemm8(dt).specialize(target=target, K=128, M=32, N=32, mma=mma)
    src = emit_hip(prog).source
    assert src.count(TRANSPOSE_READS[read].builtin + "(") == 2
    isa = compile_hip(src, target).isa
    assert read in isa and mma in isa
