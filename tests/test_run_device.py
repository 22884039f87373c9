"""`tilesim run` on a real NVIDIA GPU: sm_90 examples MATCH, planted layout bugs MISMATCH with the
lane named. Skipped cleanly without CuPy and a CUDA device (the device machine runs it)."""

from __future__ import annotations

import numpy as np
import pytest

from examples import gemm
from tilesim.diff import exit_status, run
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


@pytest.mark.cuda
@pytest.mark.parametrize("async_copy", [False, True])
def test_block_gemm_matches_on_the_gpu(async_copy):
    """examples/block_gemm.py on sm_90, with and without cp.async copies: MATCH (device within the
    catalog tolerance of the simulator and of float64)."""
    from examples import block_gemm

    _device_or_skip()
    p = block_gemm.program("sm_90", 256, 256, 128, async_copy=async_copy)
    arrays = block_gemm.inputs(p)
    v = run(p, reference=block_gemm.reference(**arrays), **arrays)
    assert v.status == "MATCH", str(v)


@pytest.mark.cuda
def test_async_copy_tile_is_moved_bit_for_bit_on_the_gpu():
    """cp.async 16-byte and 8-byte copies (the test kernel of tests/test_async_copy.py): the device's
    output is the input tile, bit for bit (a copy computes nothing)."""
    from tests.test_async_copy import swap

    _device_or_skip()
    A = np.random.default_rng(3).standard_normal((32, 32)).astype(np.float16)
    for opts in ({}, {"col": 4, "nbytes": 8}):
        p = swap.specialize(target="sm_90", M=32, K=32, **opts)
        v = run(p, reference={"C": A.astype(np.float64)}, A=A)
        assert v.status == "MATCH", str(v)
        # the runner returns the values as float64; every f16 value converts exactly both ways
        assert np.array_equal(np.asarray(v.device["C"]).astype(np.float16).view(np.uint16), A.view(np.uint16))


@pytest.mark.cuda
def test_reading_before_the_wait_is_refused_before_the_gpu_runs():
    """A planted bug (the k-loop's async_wait removed): check reports the read before the wait, and the
    verdict fails (exit 1) whatever the device computed."""
    from examples import block_gemm
    from tests.test_async_copy import _without

    _device_or_skip()
    p = _without(block_gemm.program("sm_90", 256, 256, 128, async_copy=True), "async_wait")
    arrays = block_gemm.inputs(p)
    v = run(p, reference=block_gemm.reference(**arrays), **arrays)
    assert exit_status([v]) == 1 and v.status != "MATCH", str(v)
    assert any("asynchronous copy" in e for e in v.check_errors), str(v)
