"""A store whose windows are disjoint whole tiles (tilesim/wave/sim.py ``_tiles``: one block copy
of the accumulator's tile, and the provenance's written mask set per tile) leaves exactly the state
of the element-by-element store it short-cuts: the same output bits, provenance and write counts.

Each program is simulated twice, as ``simulate`` runs it and with the tile path switched off (the
store as it was before). The programs: the GEMM examples on every target at several sizes (ragged
ones mask their edge tiles and take the general store), a GEMM storing its transpose, GEMMs storing
their tiles in another order than the waves' or only some of them, a planted C layout (its records are not the
tile's row-major order: values element by element, provenance per tile), stores of NaN results
(element by element: a NaN's bits go through the float64 cast), and a second store to an output
(the provenance leaves its per-tile form).
"""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from examples import batched_small_gemm, gemm_bias, gemm_planted
from examples import gemm as gemm_mod
from tilesim.wave import sim as sim_mod


@ts.kernel
def _gemm_placed(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "P", "Q"], *,
                 mma="v_wmma_f32_16x16x16_f16", swap=False, rows=1, transpose=False):
    """Tile (tm, tn)'s product stored at tile (tn, tm) (``swap``: every tile, in another order than
    the waves'), transposed there (``transpose``: C = (A @ B) transposed), or only ``1 / rows`` of the
    tile rows computed and stored (some tiles unwritten). C is ``P x Q``."""
    op = ts.mma_op(mma)
    ts.grid(A.shape[0] // op.m // rows, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], op.k):
        acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")), acc)
    if transpose or swap:
        ts.store(C[tn * op.n:, tm * op.m:], acc, transpose=transpose)
    else:
        ts.store(C[tm * op.m:, tn * op.n:], acc)


def placed(target: str, mma: str, M: int, N: int, K: int, **kw: object) -> ts.Program:
    P, Q = (N, M) if kw.get("transpose") else (M, N)
    return _gemm_placed.specialize(target=target, M=M, N=N, K=K, P=P, Q=Q, mma=mma, **kw)


def _cases() -> list[tuple[str, ts.Program, dict[str, np.ndarray]]]:
    out = []
    for target, mma in gemm_mod.CONFIGS:
        p = placed(target, mma, 64, 32, 32, transpose=True)
        out.append((f"transposed store {target} {mma}", p, gemm_mod.inputs(p)))
    for target, mma in (("gfx1201", "v_wmma_f32_16x16x16_f16"), ("gfx942", "v_mfma_f32_32x32x8f16")):
        for kw in (dict(swap=True), dict(rows=2)):
            p = placed(target, mma, 64, 64, 32, **kw)
            out.append((f"placed {kw} {target}", p, gemm_mod.inputs(p)))
    for M, N, K in ((64, 64, 64), (96, 64, 32), (40, 48, 32)):
        for p in gemm_mod.programs(M, N, K):
            out.append((f"gemm {M}x{N}x{K} {p.target} {p.body.ops[2].out.dtype}", p, gemm_mod.inputs(p)))
    for mod in (gemm_planted, gemm_bias, batched_small_gemm):
        for p in mod.programs():
            out.append((f"{mod.__name__} {p.name} {p.target}", p, mod.inputs(p)))
    p = gemm_mod.programs(64, 64, 32)[2]
    arrays = gemm_mod.inputs(p)
    arrays["A"][3, :] = np.inf  # inf * 0 in a row: NaN results in that tile row
    arrays["B"][:, 5] = 0
    out.append(("gemm with NaN results", p, arrays))
    return out


def _state(prog: ts.Program, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    with np.errstate(all="ignore"):
        res = ts.simulate(prog, verify=False, **{k: v.copy() for k, v in arrays.items()})
    out = {}
    for t in prog.tensors:
        if t.output:
            out["out/" + t.name] = np.ascontiguousarray(res[t.name]).view(np.uint8)
    for k in res.provenance:
        out["prov/" + k] = res.provenance[k]
    for k in res.write_counts:
        out["writes/" + k] = res.write_counts[k]
    return out


def test_tile_store_leaves_the_element_store_state(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = _cases()
    real = sim_mod._Sim._tiles
    taken = []

    def spy(self, *a):
        taken.append(real(self, *a) is not None)
        return real(self, *a)

    monkeypatch.setattr(sim_mod._Sim, "_tiles", spy)
    fast = {name: _state(p, arrays) for name, p, arrays in cases}
    monkeypatch.setattr(sim_mod._Sim, "_tiles", lambda self, *a: None)
    slow = {name: _state(p, arrays) for name, p, arrays in cases}
    for name, _, _ in cases:
        assert fast[name].keys() == slow[name].keys(), name
        for k in fast[name]:
            assert fast[name][k].dtype == slow[name][k].dtype and np.array_equal(fast[name][k], slow[name][k]), (name, k)
    assert sum(taken) >= 15 and not all(taken), (sum(taken), len(taken))
    nan_case = fast["gemm with NaN results"]["out/C"].view(np.float32)
    assert np.isnan(nan_case).any()  # the NaN case does store NaNs (the element path's cast)


@ts.kernel
def _store_twice(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"], *, lay=None):
    ts.grid(X.shape[0] // 16, X.shape[1] // 16)
    r, c = ts.tile_id(0) * 16, ts.tile_id(1) * 16
    v = ts.load(X[r:, c:], lay)
    ts.store(Y[r:, c:], v)
    ts.store(Y[r:, c:], v)


def test_second_store_counts_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    from tilesim.matrix import lookup

    prog = _store_twice.specialize(target="gfx1201", M=32, N=48, lay=lookup("v_wmma_f32_16x16x16_f16", "gfx1201")
                                   .layout("C"))
    X = np.arange(32 * 48, dtype=np.float32).reshape(32, 48)
    res = ts.simulate(prog, X=X, verify=False)
    np.testing.assert_array_equal(res["Y"], X)
    np.testing.assert_array_equal(res.write_counts["Y"], np.full((32, 48), 2))  # every element, both stores
    monkeypatch.setattr(sim_mod._Sim, "_tiles", lambda self, *a: None)
    slow = ts.simulate(prog, X=X, verify=False)
    np.testing.assert_array_equal(slow.provenance["Y"], res.provenance["Y"])
