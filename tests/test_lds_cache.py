"""The LDS caches of ``tilesim/wave/lds.py`` (addresses per distinct origin, bank cycles per
distinct access, race results per epoch access sequence, workgroup 0 standing for alike
workgroups) give the uncached detector's reports and registers bit for bit.

Reference: the same simulation with ``TILESIM_NO_FUSE=1`` (every access computed from scratch),
with the compiled kernels on and off. The programs mix workgroups that access LDS alike and
workgroups that do not (an offset by tile id), epochs that repeat and epochs that do not, races
in some steps only and inactive waves."""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
import tilesim.wave.kernels as kernels
from tilesim.matrix import lookup
from tests.test_fused import _same

LAY = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")


@ts.kernel
def ragged(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"], *, skew=1, load_skew=0, barrier_every=2):
    ts.grid(3)
    ts.waves(2)
    w, t = ts.wave_id(), ts.tile_id(0)
    buf = ts.lds_alloc("f32", 64, 16)
    acc = ts.load(X[0:, 0:], LAY)
    for k in ts.range(0, 6, 1):
        row = (t * skew + w * 16 + k % 2 * 8) % 48
        with ts.when((w + k % 3) * -1 < 0):  # wave 0 skips every third step
            ts.lds_store(buf, row, 0, acc)
        y = ts.lds_load(buf, (row + 16 + t * load_skew) % 48, 0, LAY)  # alike or not in every workgroup
        acc = acc + y
        if barrier_every == 1:
            ts.barrier()
    ts.store(Y[0:, 0:], acc)


@pytest.mark.parametrize("skew,load_skew,barrier_every", [(0, 0, 1), (1, 0, 1), (0, 0, 2), (5, 0, 2), (0, 3, 1),
                                                          (0, 3, 2)])
@pytest.mark.parametrize("jit", [True, False])
def test_cached_lds_is_the_uncached_lds(skew: int, load_skew: int, barrier_every: int, jit: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not jit:
        monkeypatch.setattr(kernels, "HAVE_NUMBA", False)
    prog = ragged.specialize(target="gfx1201", M=16, N=16, skew=skew, load_skew=load_skew,
                              barrier_every=barrier_every)
    X = np.random.default_rng(skew).standard_normal((16, 16)).astype(np.float32)
    on = ts.simulate(prog, X=X)
    monkeypatch.setenv("TILESIM_NO_FUSE", "1")
    off = ts.simulate(prog, X=X)
    _same(on, off)
    assert on.report.race_count > 0  # races in some epochs: the messages and counts were compared
