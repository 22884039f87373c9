"""Planted layout bugs (examples/gemm_planted.py's three kinds, on the AMD instructions) fail the
same way in the emulator as in the tile simulator: the compiled code's wrong answer, bit for bit,
is the simulator's predicted wrong answer — and both differ from the float64 reference.

A missing barrier (the LDS GEMM with its barriers taken out) is caught by the race detector."""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from examples.gemm import gemm, inputs, reference
from tilesim.isa import emulate, emulate_program
from tilesim.layouts import Layout
from tilesim.matrix import lookup

CASES = [("gfx1201", "v_wmma_f32_16x16x16_f16"), ("gfx1100", "v_wmma_f32_16x16x16_f16"),
         ("gfx942", "v_mfma_f32_16x16x16f16")]


def _mutated(mma: str, target: str, op: str, kind: str) -> Layout:
    good = lookup(mma, target).layout(op)
    hw, lg = good.pairs()
    hw, lg = hw.copy(), lg.copy()
    if kind == "rows_lane5":  # lane 5's accumulator rows declared shifted by one (mod the tile)
        sel = hw[:, 0] == 5
        row = [d for d, _ in good.out_dims].index("row")
        lg[sel, row] = (lg[sel, row] + 1) % dict(good.out_dims)["row"]
    elif kind == "lane_off":  # lanes 9 and 10 swapped
        a, b = hw[:, 0] == 9, hw[:, 0] == 10
        hw[a, 0], hw[b, 0] = 10, 9
    else:  # first two slots swapped
        hw[:, 1] = np.where(hw[:, 1] < 2, hw[:, 1] ^ 1, hw[:, 1])
    return Layout.from_pairs(good.in_dims, good.out_dims, hw, lg, elem_bits=good.elem_bits)


PLANTS = {"c_rows_lane5": ("C", "rows_lane5", "c_layout"), "a_lane_off": ("A", "lane_off", "a_layout"),
          "b_slot_swap": ("B", "slot_swap", "b_layout")}


@pytest.mark.compiler
@pytest.mark.parametrize(("target", "mma"), CASES, ids=[t for t, _ in CASES])
@pytest.mark.parametrize("plant", list(PLANTS))
def test_planted_bug_fails_identically(target: str, mma: str, plant: str) -> None:
    op, kind, kw = PLANTS[plant]
    prog = gemm.specialize(target=target, M=32, N=32, K=32, mma=mma, **{kw: _mutated(mma, target, op, kind)})
    arrays = inputs(prog)
    sim = ts.simulate(prog, **arrays)["C"]
    emu = emulate_program(prog, arrays)["C"]
    np.testing.assert_array_equal(emu, sim)
    ref = reference(**arrays)["C"]
    assert not np.allclose(emu, ref, atol=1e-2), "the planted bug must change the answer"


LDS_BODY = """
extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(1, 64)))
void shift(const float* __restrict__ x, float* __restrict__ y) {
  __attribute__((shared)) float buf[64];
  int t = __builtin_amdgcn_workitem_id_x();
  buf[t] = x[t] * 2.0f;
  BARRIER
  y[t] = buf[(t + 32) % 64];
}
"""


@pytest.mark.compiler
@pytest.mark.parametrize("target", ["gfx1201", "gfx1100", "gfx942"])
def test_missing_barrier_is_a_race_and_changes_the_result(target: str) -> None:
    from tilesim.hw.offline import compile_hip

    x = np.arange(64, dtype=np.float32)
    want = (2 * x)[(np.arange(64) + 32) % 64]
    # wave32: two waves exchange halves through LDS; wave64: one wave, so no race is possible
    two_waves = target != "gfx942"
    good = compile_hip(LDS_BODY.replace("BARRIER", "__builtin_amdgcn_s_barrier();"), target)
    res = emulate(good, target, "shift", grid=1, block=64, args=[("x", x), ("y", np.zeros(64, np.float32))])
    np.testing.assert_array_equal(res.buffers["y"], want)
    assert res.races == ()
    bad = compile_hip(LDS_BODY.replace("BARRIER", ""), target)
    res = emulate(bad, target, "shift", grid=1, block=64, args=[("x", x), ("y", np.zeros(64, np.float32))])
    if two_waves:
        assert res.races, "reading another wave's LDS write with no barrier between is a race"
        # wave 0 runs to the end first (reading slots wave 1 has not written yet); wave 1's write then
        # lands on bytes wave 0 read in the same barrier epoch
        r = res.races[0]
        assert (r.kind, r.workgroup, r.wave, r.other_wave) == ("write after read", 0, 1, 0)
        assert "line" in str(r) and "ds_" in r.text
        assert not np.array_equal(res.buffers["y"], want)
    else:
        np.testing.assert_array_equal(res.buffers["y"], want)


@pytest.mark.compiler
@pytest.mark.parametrize(("target", "wait"), [("gfx1201", "s_wait_loadcnt"), ("gfx1201", "s_wait_kmcnt"),
                                              ("gfx1100", "s_waitcnt vmcnt"), ("gfx942", "s_waitcnt vmcnt"),
                                              ("gfx942", "s_waitcnt lgkmcnt")])
def test_a_deleted_wait_is_reported_as_a_hazard(target: str, wait: str) -> None:
    """Loads complete at once in the emulator, so the answer stays right; the hazard tracker still
    sees a register used while its load was in flight and names the line and register."""
    from tilesim.codegen.hip import emit_hip
    from tilesim.hw.offline import compile_hip

    mma = {"gfx942": "v_mfma_f32_16x16x16f16"}.get(target, "v_wmma_f32_16x16x16_f16")
    prog = gemm.specialize(target=target, M=32, N=32, K=32, mma=mma)
    em = emit_hip(prog)
    isa = compile_hip(em.source, target).isa
    arrays = inputs(prog)
    args = [("A", arrays["A"]), ("B", arrays["B"]), ("C", np.zeros((32, 32), np.float32))]
    clean = emulate(isa, target, em.kernel, grid=em.grid, block=em.block, args=args)
    assert clean.hazards == ()
    lines = isa.splitlines()
    cut = [i for i, ln in enumerate(lines) if ln.strip().startswith(wait)]
    assert cut, wait
    broken = "\n".join(ln for i, ln in enumerate(lines) if i not in cut)
    res = emulate(broken, target, em.kernel, grid=em.grid, block=em.block, args=args)
    assert res.hazards and "may be in flight" in res.hazards[0]
    np.testing.assert_array_equal(res.buffers["C"], clean.buffers["C"])
