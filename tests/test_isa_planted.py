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

CASES = [("gfx1201", "v_wmma_f32_16x16x16_f16", 32), ("gfx1100", "v_wmma_f32_16x16x16_f16", 32),
         ("gfx942", "v_mfma_f32_16x16x16f16", 64),
         # RDNA in wave64 and CDNA2: the catalog's wave64 WMMA layouts, gfx90a's MFMA
         ("gfx1201", "v_wmma_f32_16x16x16_f16", 64), ("gfx1100", "v_wmma_f32_16x16x16_f16", 64),
         ("gfx90a", "v_mfma_f32_16x16x16f16", 64)]


def _mutated(mma: str, target: str, op: str, kind: str, wave: int | None = None) -> Layout:
    good = lookup(mma, target).layout(op, wave_size=wave)
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
@pytest.mark.parametrize(("target", "mma", "wave"), CASES, ids=[f"{t}-w{w}" for t, _, w in CASES])
@pytest.mark.parametrize("plant", list(PLANTS))
def test_planted_bug_fails_identically(target: str, mma: str, wave: int, plant: str) -> None:
    op, kind, kw = PLANTS[plant]
    prog = gemm.specialize(target=target, wave_size=wave, M=32, N=32, K=32, mma=mma,
                           **{kw: _mutated(mma, target, op, kind, wave)})
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
                                              ("gfx942", "s_waitcnt lgkmcnt"), ("gfx90a", "s_waitcnt vmcnt"),
                                              ("gfx90a", "s_waitcnt lgkmcnt"), ("gfx1100:64", "s_waitcnt vmcnt"),
                                              ("gfx1201:64", "s_wait_loadcnt")])
def test_a_deleted_wait_is_reported_as_a_hazard(target: str, wait: str) -> None:
    """Loads complete at once in the emulator, so the answer stays right; the hazard tracker still
    sees a register used while its load was in flight and names the line and register."""
    from tilesim.codegen.hip import emit_hip
    from tilesim.hw.offline import compile_hip

    target, _, wave = target.partition(":")  # TARGET:64 is RDNA in wave64
    mma = {"gfx942": "v_mfma_f32_16x16x16f16", "gfx90a": "v_mfma_f32_16x16x16f16"}.get(target, "v_wmma_f32_16x16x16_f16")
    prog = gemm.specialize(target=target, wave_size=int(wave or 0) or None, M=32, N=32, K=32, mma=mma)
    em = emit_hip(prog)
    isa = compile_hip(em.source, target, wave_size=prog.wave_size).isa
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


# where each plant must show, judged against numpy's float64 product: A's lanes 9 and 10 hold rows 9 and 10
# of each 16-row tile (every 16x16 instruction here), lane 5's accumulator holds column 5 of each tile
WRONG_AT = {"a_lane_off": (0, {9, 10, 25, 26}), "c_rows_lane5": (1, {5, 21})}


@pytest.mark.compiler
@pytest.mark.parametrize(("target", "mma", "wave"), CASES[3:], ids=[f"{t}-w{w}" for t, _, w in CASES[3:]])
@pytest.mark.parametrize("plant", list(WRONG_AT))
def test_planted_bug_is_emulated_mismatch_at_the_planted_lanes(target: str, mma: str, wave: int, plant: str) -> None:
    from tilesim.diff import run as verdict

    op, kind, kw = PLANTS[plant]
    prog = gemm.specialize(target=target, wave_size=wave, M=32, N=32, K=32, mma=mma,
                           **{kw: _mutated(mma, target, op, kind, wave)})
    arrays = inputs(prog)
    ref = arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)
    v = verdict(prog, device="emulator", reference={"C": ref}, **arrays)
    assert v.status == "EMULATED_MISMATCH" and v.exit_status == 1, str(v)
    axis, where = WRONG_AT[plant]
    wrong = ~np.isclose(v.device["C"], ref, rtol=1e-2, atol=1e-2)
    assert set(np.nonzero(wrong)[axis].tolist()) == where
    assert v.blame
