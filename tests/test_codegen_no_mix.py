"""The emitted AMD code rounds ``cast(acc * c, "f16")`` twice, as the program and the simulator do:
once to f32 (the product) and once to f16. clang fused the multiply into the conversion
(``v_fma_mixlo_f16``: one rounding of the exact product to f16), which the ISA emulator does not
model (DEVICE_ERROR) and on hardware could differ from the simulator by an f16 ulp. The expected
values are float64 numpy; the emulated run is held to the simulator bit for bit (EMULATED_MATCH)."""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from tilesim.codegen import emit_hip
from tilesim.hw.offline import compile_hip

pytestmark = pytest.mark.compiler


@ts.kernel
def scaled(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f16", "M", "N"], *, mma=""):
    op = ts.mma_op(mma)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], op.k):
        acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")), acc)
    ts.store(C[tm * op.m:, tn * op.n:], ts.cast(acc * 1.5, "f16"))


@pytest.mark.parametrize("target,mma", [("gfx942", "v_mfma_f32_32x32x8f16"), ("gfx1201", "v_wmma_f32_16x16x16_f16")])
def test_a_scaled_cast_to_f16_is_not_fused_and_emulates_bit_for_bit(target, mma):
    pytest.importorskip("ziglang")
    prog = scaled.specialize(target=target, M=32, N=32, K=32, mma=mma)
    isa = compile_hip(emit_hip(prog).source, target, wave_size=prog.wave_size).isa
    assert "v_fma_mix" not in isa and "v_cvt_f16_f32" in isa
    rng = np.random.default_rng(2)
    A = rng.standard_normal((32, 32)).astype(np.float16)
    B = rng.standard_normal((32, 32)).astype(np.float16)
    want = (A.astype(np.float64) @ B.astype(np.float64)) * 1.5
    v = ts.run(prog, device="emulator", reference={"C": want}, A=A, B=B)
    assert v.status == "EMULATED_MATCH", str(v)
