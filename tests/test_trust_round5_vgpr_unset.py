"""The ISA emulator's VGPRs start unset (a NaN), not at zero (trust, round five).

The hardware's registers hold what the last wave left; the emulator's were zeros, so a kernel whose WMMA
accumulator is never zeroed (``f32x8 c;`` passed as C: undefined by the C++ rules) gave exactly ``A @ B`` in
the emulator, and ``tilesim emulate`` showed the right numbers. Now every VGPR starts as ``UNSET_VGPR``
(a quiet NaN in f32 and in both f16 halves) and the result is visibly wrong (NaN where nothing else had
been in those registers); a tile program's compiled code that
read a register it never wrote would be an EMULATED_MISMATCH against the simulation. The launch still
writes the registers it preloads (work-item ids), and every example's compiled code still emulates to
the simulator's bits (tests/test_isa_sweep_ops.py, tests/test_emulated_verdicts.py).

``A @ B`` is float64 numpy; the neighbour that zeroes ``c`` is still right.
"""

from __future__ import annotations

import numpy as np
import pytest

from tilesim.hw.offline import compile_hip
from tilesim.isa import emulate

SRC = r"""
typedef _Float16 f16x8 __attribute__((ext_vector_type(8)));
typedef float f32x8 __attribute__((ext_vector_type(8)));
extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(1, 32)))
void mm(const _Float16* __restrict__ A, const _Float16* __restrict__ B, float* __restrict__ C) {
  int lane = __builtin_amdgcn_workitem_id_x();
  f16x8 a, b;
  f32x8 c;
  ZERO
  for (int i = 0; i < 8; ++i) {
    a[i] = A[(lane % 16) * 16 + (lane / 16) * 8 + i];
    b[i] = B[((lane / 16) * 8 + i) * 16 + lane % 16];
  }
  f32x8 d = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(a, b, c);
  for (int i = 0; i < 8; ++i) C[(i + (lane / 16) * 8) * 16 + lane % 16] = d[i];
}
"""


@pytest.mark.compiler
def test_a_wmma_accumulator_never_zeroed_does_not_come_out_right():
    rng = np.random.default_rng(0)
    A, B = (rng.standard_normal((16, 16)).astype(np.float16) for _ in range(2))
    want = A.astype(np.float64) @ B.astype(np.float64)
    args = [("A", A), ("B", B), ("C", np.zeros((16, 16), np.float32))]
    bad = emulate(compile_hip(SRC.replace("ZERO", ""), "gfx1201"), "gfx1201", "mm", block=32, args=args)
    got = bad.buffers["C"]  # was A @ B to 5e-7: the zeros the emulator made up for the C registers
    assert np.isnan(got).any() and not np.allclose(got, want, rtol=1e-3, atol=1e-3, equal_nan=False)
    good = emulate(compile_hip(SRC.replace("ZERO", "for (int i = 0; i < 8; ++i) c[i] = 0.0f;"), "gfx1201"),
                   "gfx1201", "mm", block=32, args=args)
    np.testing.assert_allclose(good.buffers["C"], want, rtol=1e-5, atol=1e-5)
