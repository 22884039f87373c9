"""Input coverage and dead output writes (tilesim/ir/footprint.py ``input_coverage``, ``_dead_writes``).

Planted bugs a red-team found passing ``check`` (0.8.0): a K loop one step short, a loop from
``op.k`` instead of 0, a loop that never runs, the scales of a scaled MFMA loaded from the wrong
k-block, and a wave storing one output tile twice with different data. Each must now be a ``check``
error whose unread (or overwritten) elements are the ones worked out by hand below from the loop
bounds and the instructions' tile sizes (WMMA 16x16x16: A tile 16x16 at (16 tm, k), B at (k, 16 tn);
MFMA scale 16x16x128: SA tile 16 rows x 128/32 = 4 scale columns at (16 tm, k // 32)). Right
programs (every example, a program that accumulates through its output) must draw no such error.
"""

from __future__ import annotations

import importlib
import json
import pkgutil

import pytest

import examples
import tilesim as ts
from examples.mxfp8_gemm import mxfp8_gemm
from tilesim.ir.core import Program

WMMA = "v_wmma_f32_16x16x16_f16"


@ts.kernel
def _gemm(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"],
          *, k0=0, short=0, again=None):
    """C = A @ B with the K loop from ``k0`` and ``short`` steps before K; ``again``: then stored a second
    time, ``"double"`` twice the product, ``"readback"`` C loaded back plus the product; ``"every trip"``:
    the partial sums stored in every trip of the K loop too."""
    op = ts.mma_op(WMMA)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(k0, A.shape[1] - short * op.k, op.k):
        a = ts.load(A[tm * op.m:, k:], op.layout("A"))
        b = ts.load(B[k:, tn * op.n:], op.layout("B"))
        acc = ts.mma(op, a, b, acc)
        if again == "every trip":
            ts.store(C[tm * op.m:, tn * op.n:], acc)
    ts.store(C[tm * op.m:, tn * op.n:], acc)
    if again in ("double", "readback"):
        prev = ts.load(C[tm * op.m:, tn * op.n:], op.layout("C")) if again == "readback" else acc
        ts.store(C[tm * op.m:, tn * op.n:], prev + acc)


def _scales_per_instruction() -> ts.Program:
    """examples/mxfp8_gemm.py with the scales' k-block taken per instruction (k // 128), not per 32 k:
    its two ``k // 32`` origins rewritten in the program's JSON."""
    doc = json.loads(mxfp8_gemm.specialize(target="gfx950", M=32, N=32, K=256, KB=8,
                                           mma="v_mfma_scale_f32_16x16x128_f8f6f4").to_json())
    hits = []

    def visit(ops: list) -> None:
        for o in ops:
            if o["kind"] == "binop" and o["attrs"]["op"] == "//" and o["args"][1] == 32:
                o["args"][1] = 128
                hits.append(o)
            visit((o["attrs"].get("body") or {}).get("block", []))

    visit(doc["body"])
    assert len(hits) == 2  # SA's and SB's k-block
    return Program.from_json(json.dumps(doc))


def planted() -> dict[str, ts.Program]:
    """The red-team's programs (64 x 64 x 64 GEMM, four K steps of 16; the scaled one 32 x 32 x 256)."""
    g = dict(target="gfx1201", M=64, N=64, K=64)
    return {
        "one step short": _gemm.specialize(short=1, **g),
        "from op.k": _gemm.specialize(k0=16, **g),
        "never runs": _gemm.specialize(k0=64, **g),
        "scales of the wrong k-block": _scales_per_instruction(),
        "stored twice": _gemm.specialize(again="double", **g),
    }


# (tensor, first unread element, count, extent), worked from the loop bounds above
UNREAD = {
    "one step short": [("A", (0, 48), 64 * 16, "A[0:64, 48:64]"), ("B", (48, 0), 16 * 64, "B[48:64, 0:64]")],
    "from op.k": [("A", (0, 0), 64 * 16, "A[0:64, 0:16]"), ("B", (0, 0), 16 * 64, "B[0:16, 0:64]")],
    # k = 0, 128 read scale columns 0..3 and 1..4 (4 per instruction): 5, 6, 7 of 8 are never read
    "scales of the wrong k-block": [("SA", (0, 5), 32 * 3, "SA[0:32, 5:8]"), ("SB", (5, 0), 3 * 32, "SB[5:8, 0:32]")],
}


def _errors(p: ts.Program) -> list[str]:
    return [f.message for f in ts.check(p).findings if f.severity == "error"]


@pytest.mark.parametrize("name", sorted(UNREAD))
def test_unread_input_is_an_error(name: str) -> None:
    errs = _errors(planted()[name])
    for tensor, (r, c), n, box in UNREAD[name]:
        total = planted()[name].tensor(tensor).shape[0] * planted()[name].tensor(tensor).shape[1]
        want = f"{tensor}[{r}][{c}] is never read ({n} of {total} elements of {tensor} unread, within {box})"
        assert any(e.startswith(want) for e in errs), (want, errs)


def test_loop_that_never_runs_reads_nothing() -> None:
    errs = _errors(planted()["never runs"])
    assert any(e.startswith("A[0][0] is never read (4096 of 4096 elements") for e in errs), errs
    assert any(e.startswith("B[0][0] is never read (4096 of 4096 elements") for e in errs), errs


def test_a_tile_stored_twice_with_other_data_is_an_error() -> None:
    errs = _errors(planted()["stored twice"])
    assert any(e.startswith("C[0][0] is written 2 times by workgroup 0, wave 0") and "dead" in e for e in errs), errs


def test_partial_sums_stored_every_trip_are_dead_writes() -> None:
    """One store op in the K loop (4 trips) and one after it: each tile written 5 times, 4 of them dead."""
    errs = _errors(_gemm.specialize(target="gfx1201", M=64, N=64, K=64, again="every trip"))
    assert any(e.startswith("C[0][0] is written 5 times by workgroup 0, wave 0") and "dead" in e for e in errs), errs


def test_accumulating_through_the_output_is_no_error() -> None:
    rep = ts.check(_gemm.specialize(target="gfx1201", M=64, N=64, K=64, again="readback"))
    assert not rep.errors, [str(f) for f in rep.errors]
    assert any("loads them back" in f.message for f in rep.findings), [str(f) for f in rep.findings]


def test_the_right_programs_pass() -> None:
    """Every example program, and the corrected versions of the planted ones, draw no coverage error."""
    progs = [_gemm.specialize(target="gfx1201", M=64, N=64, K=64),
             mxfp8_gemm.specialize(target="gfx950", M=32, N=32, K=256, KB=8, mma="v_mfma_scale_f32_16x16x128_f8f6f4")]
    for m in sorted(x.name for x in pkgutil.iter_modules(examples.__path__)):
        progs += importlib.import_module(f"examples.{m}").programs()
    assert len(progs) >= 50
    for p in progs:
        bad = [e for e in _errors(p) if "never read" in e or "written" in e]
        assert not bad, (p.name, p.target, bad)


@ts.kernel
def _lds_staged(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"],
                *, short=0):
    """One wave per tile staging A and B through LDS, the K loop ``short`` steps before K."""
    op = ts.mma_op(WMMA)
    ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    sA, sB = ts.lds_alloc("f16", op.m, op.k), ts.lds_alloc("f16", op.k, op.n)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1] - short * op.k, op.k):
        ts.lds_store(sA, 0, 0, ts.load(A[tm * op.m:, k:], op.layout("A")))
        ts.lds_store(sB, 0, 0, ts.load(B[k:, tn * op.n:], op.layout("B")))
        acc = ts.mma(op, ts.lds_load(sA, 0, 0, op.layout("A")), ts.lds_load(sB, 0, 0, op.layout("B")), acc)
    ts.store(C[tm * op.m:, tn * op.n:], acc)


@ts.kernel
def _slice(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], Bias: ts.Tensor["f32", "R", "N"],
           C: ts.Tensor["f32", 16, "N"]):
    """C = A[16:32] @ B + Bias[0]: rows 0-15 of A and rows 1.. of Bias are never read, as meant."""
    op = ts.mma_op(WMMA)
    ts.grid(1, B.shape[1] // op.n)
    tn = ts.tile_id(1)
    acc = ts.mma(op, ts.load(A[16:, 0:], op.layout("A")), ts.load(B[0:, tn * op.n:], op.layout("B")),
                 ts.load_row(Bias[0:, tn * op.n:], op.layout("C")))
    ts.store(C[0:, tn * op.n:], acc)


def test_unread_through_lds_is_an_error() -> None:
    """The reduced axis followed through lds_store / lds_load: A's columns 48-63, B's rows 48-63."""
    assert not [e for e in _errors(_lds_staged.specialize(target="gfx1201", M=32, N=32, K=64)) if "never read" in e]
    errs = _errors(_lds_staged.specialize(target="gfx1201", M=32, N=32, K=64, short=1))
    assert any(e.startswith("A[0][48] is never read (512 of 2048 elements of A unread, within A[0:32, 48:64]), "
                            "along the axis a matrix instruction sums over (A's columns)") for e in errs), errs
    assert any(e.startswith("B[48][0] is never read (512 of 2048 elements of B unread, within B[48:64, 0:32]), "
                            "along the axis a matrix instruction sums over (B's rows)") for e in errs), errs


def test_a_slice_is_a_warning_not_an_error() -> None:
    """Whole rows of A (not along K) and rows of a bias that only feeds the addend: warnings."""
    rep = ts.check(_slice.specialize(target="gfx1201", M=32, N=32, K=16, R=4))
    assert rep.ok, [str(f) for f in rep.errors]
    warned = sorted(f.message.split("): ")[0] + ")" for f in rep.findings if "never read" in f.message)
    assert warned == ["A[0][0] is never read (256 of 512 elements of A unread, within A[0:16, 0:16])",
                      "Bias[1][0] is never read (96 of 128 elements of Bias unread, within Bias[1:4, 0:32])"], warned


def test_over_the_budget_says_not_analysed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A load with more origins than the budget: input coverage says it is not analysed, no verdict."""
    from tilesim.ir import accesses  # noqa: PLC0415

    monkeypatch.setattr(accesses, "origins", lambda *a, **k: None)
    rep = ts.check(planted()["one step short"])
    assert not [f for f in rep.errors if "never read" in f.message]
    assert any(f.severity == "warning" and f.message.startswith("input coverage of A not analysed")
               for f in rep.findings), [str(f) for f in rep.findings]


def test_the_same_fragment_stored_twice_is_only_a_warning() -> None:
    """Two store ops writing one fragment value at one origin write the same data: the copies agree."""
    from tests.test_coverage_tiles import _c_layout, _stored_twice  # noqa: PLC0415

    rep = ts.check(_stored_twice.specialize(target="gfx1201", M=16, N=16, lay=_c_layout()))
    assert not rep.errors, [str(f) for f in rep.errors]
    assert any(f.severity == "warning" and "is written 2 times by one wave" in f.message for f in rep.findings)


@pytest.mark.parametrize("seed", range(6))
def test_distinct_origins_are_the_set_of_active_pairs(seed: int) -> None:
    """footprint.origins against a Python set of the active (row0, col0) pairs: negative and sparse
    origins (the sort path), dense ones (the bitmap path), partly active instances (a branch)."""
    import numpy as np

    from tilesim.ir.footprint import origins

    rng = np.random.default_rng(seed)
    trips, waves = 7, 40
    spread = (1 << 40) if seed % 2 else 50  # sparse keys take the sort, dense ones the bitmap
    r0 = rng.integers(-spread, spread, waves)
    c0 = rng.integers(-30, 30, (trips, 1)) * 16
    active = rng.random((trips, waves)) < 0.6
    got = origins(r0, c0, active, (trips, waves), 1 << 20)
    assert got is not None
    want = sorted({(int(r0[w]), int(c0[t, 0])) for t in range(trips) for w in range(waves) if active[t, w]})
    assert list(zip(got[0].tolist(), got[1].tolist())) == want
