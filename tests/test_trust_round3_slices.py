"""Tensor slices mean what Python says they mean, or are refused (round three).

``A[r0:, c0:]`` names the corner of a tile whose extent the layout decides. Other Python slices
were read as that corner with the rest dropped: ``A[0:32:2, 0:]`` (every other row, to numpy)
loaded rows 0-15, ``A[0:8, 0:]`` (8 rows) loaded 16, and ``A[-16:, 0:]`` (numpy's last 16 rows)
read 16 rows *before* row 0 — all outside the tensor, masked to zeros, with `check` OK and a
program that multiplies zeros. Each is now a VerifyError naming the slice; ``A[r0:, c0:]`` and
``A[r0:None:1, ...]`` still trace.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from tilesim.errors import VerifyError

WMMA = "v_wmma_f32_16x16x16_f16"


@ts.kernel
def first_tile(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", 16, "N"], *,
               rows=slice(0, None)):
    op = ts.mma_op(WMMA)
    ts.grid(1, 1)
    a = ts.load(A[rows, 0:], op.layout("A"))
    b = ts.load(B[0:, 0:], op.layout("B"))
    ts.store(C[0:, 0:], ts.mma(op, a, b, ts.zeros(op.layout("C"), "f32")))


@pytest.mark.parametrize("rows", [slice(0, 32, 2), slice(0, 8), slice(-16, None), slice(0, 16, -1)],
                         ids=["step", "stop", "negative_start", "negative_step"])
def test_a_slice_tilesim_would_not_honour_is_refused(rows):
    with pytest.raises(VerifyError, match="A"):
        first_tile.specialize(target="gfx1201", M=32, N=16, K=16, rows=rows)


@pytest.mark.parametrize("rows", [slice(0, None), slice(16, None), slice(0, None, 1)])
def test_the_corner_forms_still_trace_and_compute_numpys_answer(rows):
    prog = first_tile.specialize(target="gfx1201", M=32, N=16, K=16, rows=rows)
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((32, 16)).astype(np.float16), rng.standard_normal((16, 16)).astype(np.float16)
    r0 = rows.start
    want = A[r0:r0 + 16].astype(np.float64) @ B.astype(np.float64)
    assert ts.check(prog).ok
    assert np.allclose(ts.simulate(prog, A=A, B=B)["C"], want, rtol=1e-5, atol=1e-5)
