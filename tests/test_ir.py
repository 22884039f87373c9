"""Tile IR and DSL: tracing, loops and loop-carried values, branches, printing, JSON round trip,
re-specialisation across targets, and clear errors for what cannot be traced."""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from tilesim.errors import InstructionError, TilesimError, VerifyError
from tilesim.ir import Program
from examples.gemm import gemm
from tilesim.matrix import lookup


def test_trace_records_a_loop_with_the_accumulator_carried():
    p = gemm.specialize(target="gfx1201", M=32, N=32, K=64)
    loops = [op for op in p.walk() if op.kind == "loop"]
    assert len(loops) == 1
    (init, nxt), = loops[0].attr("carried")
    mma = [op for op in p.walk() if op.kind == "mma"][0]
    assert init.id == mma.args[2].id and nxt.id == mma.out.id  # acc = mma(..., acc)
    assert loops[0].args == (0, 64, 16)
    assert p.grid == (2, 2) and p.wave_size == 32
    assert [t.name for t in p.tensors if t.output] == ["C"]
    text = str(p)
    assert "for %" in text and "carry" in text and "mma(" in text


def test_one_kernel_re_specialises_for_other_targets_and_waves():
    for target, mnemonic, wave in [("gfx1100", "v_wmma_f32_16x16x16_f16", 64), ("gfx942", "v_mfma_f32_32x32x8f16", 64),
                                   ("sm_80", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 32)]:
        p = gemm.specialize(target=target, wave_size=wave, M=64, N=64, K=32, mma=mnemonic)
        mma = [op for op in p.walk() if op.kind == "mma"][0]
        assert mma.attr("instr") == lookup(mnemonic, target).mnemonic and p.wave_size == wave


def test_json_round_trip_is_equal_and_simulates_the_same():
    p = gemm.specialize(target="gfx1100", M=32, N=32, K=32)
    q = Program.from_json(p.to_json())
    assert q == p and str(q) == str(p)
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((32, 32)).astype(np.float16), rng.standard_normal((32, 32)).astype(np.float16)
    assert np.array_equal(ts.simulate(p, A=A, B=B)["C"], ts.simulate(q, A=A, B=B)["C"])


def test_a_target_without_the_instruction_is_rejected_at_specialise():
    with pytest.raises(InstructionError, match="gfx1030"):
        gemm.specialize(target="gfx1030", M=32, N=32, K=32)
    with pytest.raises(InstructionError, match="exists on"):
        gemm.specialize(target="gfx1201", M=32, N=32, K=32, mma="v_mfma_f32_32x32x8f16")
    with pytest.raises(VerifyError, match="wave"):
        gemm.specialize(target="gfx942", wave_size=32, M=32, N=32, K=32, mma="v_mfma_f32_32x32x8f16")


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [({"M": 32, "N": 32}, "missing \\['K'\\]"), ({"M": 32, "N": 32, "K": 32, "Q": 1}, "unknown \\['Q'\\]"),
     ({"M": 0, "N": 32, "K": 32}, "positive integer")],
)
def test_bad_sizes_name_what_is_wrong(kwargs, pattern):
    with pytest.raises(VerifyError, match=pattern):
        gemm.specialize(target="gfx1201", **kwargs)


def test_untraceable_python_is_a_clear_error():
    @ts.kernel
    def branchy(A: ts.Tensor["f32", "M", "N"]):
        ts.grid(2)
        if ts.tile_id(0) == 1:  # Python `if` on a traced value
            pass

    with pytest.raises(VerifyError, match="ts.when"):
        branchy.specialize(target="gfx1201", M=16, N=16)

    @ts.kernel
    def breaks(A: ts.Tensor["f32", "M", "N"]):
        for _k in ts.range(0, 4):
            break

    with pytest.raises(VerifyError, match="break"):
        breaks.specialize(target="gfx1201", M=16, N=16)
    with pytest.raises(TilesimError, match="specialize"):
        gemm(None, None, None)
    with pytest.raises(TilesimError, match="inside a @ts.kernel"):
        ts.tile_id(0)


def test_uniform_branch_only_writes_where_the_condition_holds():
    lay = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")

    @ts.kernel
    def copy_odd(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.grid(X.shape[0] // 16)
        t = ts.tile_id(0)
        x = ts.load(X[t * 16:, 0:], lay)
        with ts.when(t % 2):
            ts.store(Y[t * 16:, 0:], x)

    p = copy_odd.specialize(target="gfx1201", M=64, N=16)
    X = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    Y = ts.simulate(p, X=X)["Y"]
    want = np.zeros_like(X)
    want[16:32], want[48:64] = X[16:32], X[48:64]
    assert np.array_equal(Y, want)


def test_scalar_arithmetic_matches_python():
    lay = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")

    @ts.kernel
    def shifted(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.grid(3)
        t = ts.tile_id(0)
        src = ((t + 1) * 7 // 2 - 1) % 3 * 16  # exercised on every tile id
        ts.store(Y[t * 16:, 0:], ts.load(X[src:, 0:], lay))

    p = shifted.specialize(target="gfx1201", M=48, N=16)
    X = np.arange(48 * 16, dtype=np.float32).reshape(48, 16)
    Y = ts.simulate(p, X=X)["Y"]
    for t in range(3):
        src = ((t + 1) * 7 // 2 - 1) % 3 * 16
        assert np.array_equal(Y[t * 16:(t + 1) * 16], X[src:src + 16])
