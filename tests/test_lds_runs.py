"""The LDS data paths for accesses alike in every workgroup (``tilesim/wave/lds.py``): a store whose
workgroup-0 waves write distinct elements in a few runs writes each run as a column slice of every
workgroup's row (``Lds._store_runs``), and a load reads workgroup 0's columns of every row; the
others take the per-wave flat indices. Both must give the bytes, registers, outputs and reports of
the uncached path (``TILESIM_NO_FUSE=1``, every access from scratch through the flat indices).

Each case is checked to take the path it names (the runs ``_store_runs`` returned), so a store of
two separate strips, one contiguous strip, rows with gaps (too many runs) and two waves storing
the same elements (a race: no order of writes to follow) are all compared."""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from tests.test_fused import _same
from tilesim.matrix import lookup
from tilesim.wave.lds import Lds

LAY = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")  # 16 x 16 f32, every row whole


@ts.kernel
def strips(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"], *, gap=32, cols=16, same=False):
    ts.grid(3)
    ts.waves(2)
    w = ts.wave_id()
    buf = ts.lds_alloc("f32", 64, cols)
    x = ts.load(X[0:, 0:], LAY) if same else ts.load(X[w * 16:, 0:], LAY)
    row = w * 0 if same else w * gap  # wave w stores 16 rows at w * gap (both at 0: the same elements)
    ts.lds_store(buf, row, 0, x)
    ts.barrier()
    y = ts.lds_load(buf, (1 - w) * gap, 0, LAY)  # the other wave's rows
    ts.store(Y[w * 16:, 0:], x + y)


# (gap, cols, same) -> the runs of workgroup 0's store (None: the flat path)
CASES = [((32, 16, False), 2), ((16, 16, False), 1), ((32, 32, False), None), ((16, 16, True), None)]


@pytest.mark.parametrize("case,runs", CASES)
def test_store_runs_and_load_columns_are_the_uncached_lds(case: tuple[int, int, bool], runs: int | None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    gap, cols, same = case
    prog = strips.specialize(target="gfx1201", M=32, N=16, gap=gap, cols=cols, same=same)
    X = np.random.default_rng(gap + cols).standard_normal((32, 16)).astype(np.float32)
    seen: list[int | None] = []
    plan = Lds._store_runs

    def spy(self: Lds, acc: object, eb: int) -> object:
        got = plan(self, acc, eb)  # type: ignore[arg-type]
        seen.append(None if got is None else len(got))
        return got

    monkeypatch.setattr(Lds, "_store_runs", spy)
    on = ts.simulate(prog, X=X, verify=False)
    assert seen == [runs]  # the one store took the path this case is about
    monkeypatch.setenv("TILESIM_NO_FUSE", "1")
    off = ts.simulate(prog, X=X, verify=False)
    _same(on, off)
    if same:
        assert on.report.race_count > 0  # two waves wrote the same bytes: found as uncached
    else:  # each wave adds the other wave's strip, read back through the LDS (float64 sum, rounded once)
        other = np.r_[X[16:], X[:16]].astype(np.float64)
        assert np.array_equal(on.outputs["Y"], (X.astype(np.float64) + other).astype(np.float32))
