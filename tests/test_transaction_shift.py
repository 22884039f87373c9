"""Transaction counts of a chain of steps whose windows all move by one offset per step (a fused
k-loop: tilesim/wave/sim.py ``count_transactions`` sums step 0's residue histogram over the steps'
rotations) equal the counts of the same steps taken one at a time (the per-step path, which bins
every window's own residue)."""

from __future__ import annotations

import numpy as np
import pytest

from examples.gemm import gemm, inputs
from tilesim.wave.sim import _Sim


@pytest.mark.parametrize("target,mma", [("gfx1201", "v_wmma_f32_16x16x16_f16"), ("gfx942", "v_mfma_f32_32x32x8f16"),
                                        ("sm_90", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")])
@pytest.mark.parametrize("uniform", [True, False])
def test_shifted_steps_count_as_one_step_at_a_time(target: str, mma: str, uniform: bool) -> None:
    prog = gemm.specialize(target=target, M=128, N=128, K=256, mma=mma)
    loads = [op for op in prog.walk() if op.kind == "load"]
    rng = np.random.default_rng(7)
    for ld in loads:
        name = ld.attr("tensor")
        chain, steps = _Sim(prog, inputs(prog), False), _Sim(prog, inputs(prog), False)
        c = chain.codec_of(ld.out)
        rows, cols = chain.tensors[name].shape
        G, T = chain.G, 9
        # origins anywhere the window fits, moved by odd element offsets (residues mod 64 bytes vary)
        r0 = rng.integers(0, rows - 32, G)
        c0 = rng.integers(0, cols - 64, G)
        shift = np.cumsum(rng.integers(0, 7, T)) - 3
        base = (r0 * cols + c0)[None, :] + shift[:, None]
        if not uniform:
            base[4, 1] += 5  # one wave of one step moved differently: the per-window path
        chain.count_transactions(name, c, base, bool(ld.attr("transpose")))
        for t in range(T):
            steps.count_transactions(name, c, base[t], bool(ld.attr("transpose")))
        assert chain.rep.global_transactions == steps.rep.global_transactions > 0
        assert chain.rep.global_ideal_transactions == steps.rep.global_ideal_transactions
