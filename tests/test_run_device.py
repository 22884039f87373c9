"""`tilesim run` on a real NVIDIA GPU: sm_90 examples MATCH, planted layout bugs MISMATCH with the
lane named. Skipped cleanly without CuPy and a CUDA device (the device machine runs it)."""

from __future__ import annotations

import numpy as np
import pytest

from examples import gemm
from tilesim.diff import run
from tilesim.layouts import Layout
from tilesim.matrix import lookup

cp = pytest.importorskip("cupy", reason="needs CuPy and an NVIDIA GPU (run on the device machine)")

NV = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


def _device_or_skip():
    from tilesim.hw.nvidia import cuda_device

    cc, desc = cuda_device()
    if cc is None:
        pytest.skip(desc)
    return cc


@pytest.mark.cuda
@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
def test_gemm_matches_on_the_gpu(target):
    _device_or_skip()
    p = gemm.gemm.specialize(target=target, M=64, N=64, K=64, mma=NV)
    arrays = gemm.inputs(p)
    v = run(p, reference=gemm.reference(**arrays), **arrays)
    assert v.status == "MATCH", str(v)
    assert v.device_vs_sim["C"] <= 1e-5


@pytest.mark.cuda
def test_planted_accumulator_bug_mismatches_with_the_lane_named():
    _device_or_skip()
    good = lookup(NV, "sm_90").layout("C")
    hw, lg = good.pairs()
    lg2 = lg.copy()
    swap = hw[:, 0] == 5  # lane 5's two rows swapped: c0,c1 <-> c2,c3 (row g and g+8)
    lg2[swap, 1] = np.where(lg[swap, 1] < 8, lg[swap, 1] + 8, lg[swap, 1] - 8)
    bad_c = Layout.from_pairs(good.in_dims, good.out_dims, hw, lg2, elem_bits=32)
    p = gemm.gemm.specialize(target="sm_90", M=32, N=32, K=32, mma=NV, c_layout=bad_c)
    arrays = gemm.inputs(p)
    v = run(p, reference=gemm.reference(**arrays), **arrays)
    assert v.status == "MISMATCH", str(v)
    assert "reference" in v.reason  # the device agrees with the simulator; both differ from the intent
    assert v.device_vs_sim["C"] <= 1e-5
    assert "lane 5," in v.blame[0] and "lanes 5 only" in v.pattern
    assert set(np.nonzero(v.mismatch_counts.sum(1))[0]) == {5} and "lane 5, v" in v.heatmap_svg()


@pytest.mark.cuda
@pytest.mark.parametrize("which,lane_text", [("c_rows_lane5", "lane 5,"), ("a_lane_off", "A lanes 8-11"),
                                             ("b_vgpr_swap", "B lanes")])
def test_each_planted_bug_in_examples_mismatches_on_the_gpu(which, lane_text):
    from examples import gemm_planted

    _device_or_skip()
    (p,) = [q for q in gemm_planted.programs() if q.name == f"gemm_{which}"]
    arrays = gemm_planted.inputs(p)
    v = run(p, reference=gemm_planted.reference(**arrays), **arrays)
    assert v.status == "MISMATCH", str(v)
    assert v.device_vs_sim["C"] <= 1e-5  # the simulator predicted the hardware's wrong answer
    assert any(lane_text in b for b in v.blame), v.blame
