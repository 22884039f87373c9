"""Wrong programs `check` used to pass (0.7.0), one class each, and a right neighbour of each that
must stay accepted. The wrong ones are shown wrong without tilesim: what they compute depends on
memory no store wrote, on the order of two workgroups, or on which of two disagreeing copies the
hardware reads — each time two float64 numpy outcomes the hardware may produce, which differ.

For each: `check` reports an error, `run` without a GPU is CHECK_FAILED (exit 1) with and without a
reference, `tilesim simulate` exits 1.
"""

from __future__ import annotations

import textwrap
import warnings

import numpy as np
import pytest

import tilesim as ts
from tilesim.cli import main
from tilesim.diff import run

WMMA = "v_wmma_f32_16x16x16_f16"


@ts.kernel
def gemm(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"], *,
         bug=""):
    op = ts.mma_op(WMMA)
    gm = A.shape[0] // op.m
    ts.grid(gm, B.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    if bug == "read_neighbour":  # C of the next tile row as the initial accumulator: another workgroup's output
        acc = ts.load(C[((tm + 1) % gm) * op.m:, tn * op.n:], op.layout("C"))
    elif bug == "read_own":  # read-modify-write of its own tile: ordered, fine
        acc = ts.load(C[tm * op.m:, tn * op.n:], op.layout("C"))
    else:
        acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, A.shape[1], op.k):
        a = ts.load(A[tm * op.m:, k:], op.layout("A"))
        b = ts.load(B[k:, tn * op.n:], op.layout("B"))
        if bug in ("lds_unwritten_rows", "lds_written_rows"):
            s = ts.lds_alloc("f16", 2 * op.m, op.k)
            ts.lds_store(s, 0, 0, a)  # rows 0..15 written
            a = ts.lds_load(s, 8 if bug == "lds_unwritten_rows" else 0, 0, op.layout("A"))
        if bug == "shuffle_one_replica":  # RDNA3: lanes 16-31 hold copies of lanes 0-15; rotate only the copies
            a = ts.shuffle(a, [lane if lane < 16 else 16 + (lane - 15) % 16 for lane in range(32)])
        if bug == "shuffle_both_replicas":  # swap the halves: every copy still holds its element
            a = ts.shuffle(a, [lane ^ 16 for lane in range(32)])
        if bug == "mma_discarded":  # no `acc =`: the products are thrown away (test_trust_round3_dead_mma.py)
            ts.mma(op, a, b, acc)
        elif bug == "mma_not_carried":
            acc2 = ts.mma(op, a, b, acc)  # noqa: F841 - the bug under test
        else:
            acc = ts.mma(op, a, b, acc)
    if bug != "no_store":
        ts.store(C[tm * op.m:, tn * op.n:], acc)


def _prog(bug, target="gfx1201"):
    return gemm.specialize(target=target, M=32, N=32, K=32, bug=bug)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {"A": rng.standard_normal((32, 32)).astype(np.float16), "B": rng.standard_normal((32, 32)).astype(np.float16)}


def _product(A, B):
    return A.astype(np.float64) @ B.astype(np.float64)


def _fails_everywhere(bug, target, reference, tmp_path, capsys):
    prog, arrays = _prog(bug, target), _inputs()
    assert ts.check(prog).errors, "check passes a wrong program"
    v = run(prog, device="none", **arrays)
    assert v.status == "CHECK_FAILED" and not v.ok, v
    w = run(prog, device="none", reference=reference, **arrays)
    assert not w.ok and w.status in ("CHECK_FAILED", "SIM_MISMATCH"), w
    f = tmp_path / "prog.py"  # the CLI, from a file with no reference()
    f.write_text(textwrap.dedent(f"""
        from tests.test_trust_check import _prog, _inputs
        def programs():
            return [_prog({bug!r}, {target!r})]
        def inputs(prog, seed=0):
            return _inputs(seed)
    """))
    assert main(["simulate", str(f)]) == 1
    assert main(["check", str(f)]) == 1
    capsys.readouterr()


def _right(bug, target="gfx1201"):
    p = _prog(bug, target)
    arrays = _inputs()
    assert ts.check(p).ok, ts.check(p)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = ts.simulate(p, **arrays)["C"]
    assert np.allclose(got, _product(**arrays), rtol=1e-5, atol=1e-5)
    v = run(p, device="none", reference={"C": _product(**arrays)}, **arrays)
    assert v.ok, v


def test_reading_lds_no_store_wrote(tmp_path, capsys):
    """Rows 8..23 of a buffer whose rows 0..15 were stored: A's rows 8..15 of each tile come from
    unwritten LDS. Two devices whose LDS held 0 or 1 there compute different C (numpy)."""
    arrays = _inputs()
    A, B = arrays["A"].astype(np.float64), arrays["B"].astype(np.float64)
    outcomes = []
    for stale in (0.0, 1.0):
        a = A.copy()
        for t in range(2):
            for k in range(2):
                blk = a[16 * t:16 * t + 16, 16 * k:16 * k + 16].copy()
                a[16 * t:16 * t + 8, 16 * k:16 * k + 16] = blk[8:16]
                a[16 * t + 8:16 * t + 16, 16 * k:16 * k + 16] = stale
        outcomes.append(a @ B)
    assert not np.allclose(*outcomes)
    _fails_everywhere("lds_unwritten_rows", "gfx1201", {"C": _product(**arrays)}, tmp_path, capsys)
    assert "no lds_store wrote" in str(ts.check(_prog("lds_unwritten_rows")))
    _right("lds_written_rows")


def test_reading_an_output_another_workgroup_writes(tmp_path, capsys):
    """Tile row 0 starts from C's tile row 1, which workgroup (1, n) stores: if that workgroup runs
    first, C[0:16] = A0 B + A1 B, else A0 B (+ the initial zeros). numpy says the two differ."""
    arrays = _inputs()
    A, B = arrays["A"].astype(np.float64), arrays["B"].astype(np.float64)
    first, second = A[:16] @ B, A[:16] @ B + A[16:] @ B
    assert not np.allclose(first, second)
    _fails_everywhere("read_neighbour", "gfx1201", {"C": _product(**arrays)}, tmp_path, capsys)
    assert "read/write race" in str(ts.check(_prog("read_neighbour")))
    _right("read_own")  # its own tile, zero-initialised: C = A @ B


def test_a_program_that_stores_nothing(tmp_path, capsys):
    p = _prog("no_store")
    assert not [t for t in p.tensors if t.output]  # C is then an input the kernel only declares
    errs = [e.message for e in ts.check(p).errors]  # no output, and C a parameter nothing loads or stores
    assert any("no output" in e for e in errs) and any("tensor C is a parameter" in e for e in errs), errs
    arrays = _inputs() | {"C": np.zeros((32, 32), np.float32)}
    v = run(p, device="none", **arrays)
    assert v.status == "CHECK_FAILED" and not v.ok


def test_a_shuffle_that_splits_replicas(tmp_path, capsys):
    """RDNA3 WMMA reads A from lanes 0-15 and keeps a copy in 16-31; rotating only the copies gives
    two A's: numpy's product with the rotated copy differs from A @ B."""
    arrays = _inputs()
    A, B = arrays["A"].astype(np.float64), arrays["B"].astype(np.float64)
    rotated = np.concatenate([np.roll(A[16 * t:16 * t + 16], -1, axis=0) for t in range(2)])  # lane i+1's row
    assert not np.allclose(rotated @ B, A @ B)
    _fails_everywhere("shuffle_one_replica", "gfx1100", {"C": _product(**arrays)}, tmp_path, capsys)
    assert "replicas disagree" in str(ts.check(_prog("shuffle_one_replica", "gfx1100")))
    _right("shuffle_both_replicas", "gfx1100")


@pytest.mark.parametrize("bug", ["lds_written_rows", "read_own", ""])
def test_right_neighbours_pass(bug):
    _right(bug)


@ts.kernel
def _blocks(A: ts.Tensor["f16", "BM", "K"], B: ts.Tensor["f16", "BK", "N"], C: ts.Tensor["f32", "BM", "N"], *,
            mma="v_mfma_f32_4x4x4f16", a_layout=None, b_layout=None):
    op = ts.mma_op(mma)
    ts.grid(C.shape[0] // (op.blocks * op.m))
    g = ts.tile_id(0)
    a = ts.load(A[g * (op.blocks * op.m):, 0:], a_layout or op.layout("A"))
    b = ts.load(B[g * (op.blocks * op.k):, 0:], b_layout or op.layout("B"))
    ts.store(C[g * (op.blocks * op.m):, 0:], ts.mma(op, a, b, ts.zeros(op.layout("C"), "f32")))


@pytest.mark.parametrize("target,mma", [("gfx90a", "v_mfma_f32_4x4x4f16"), ("gfx942", "v_mfma_f32_16x16x4_4b_f16")])
def test_a_and_b_with_the_same_blocks_rotated_are_not_equivalent(target, mma):
    """0.7.0 took A and B declared with block b+1's elements in block b's lanes for "the same k order"
    (a warning): block b then multiplies batch b+1 and lands in C's block b. numpy: the batched
    products of the rotated batches differ from the batched products."""
    from tests.test_sparse_blocks import _rotated_blocks
    from tilesim.matrix import lookup

    row = lookup(mma, target)
    rot = {n: _rotated_blocks(row.layout(n, wave_size=64)) for n in "AB"}
    nb, m, k, n = row.blocks, row.m, row.k, row.n
    p = _blocks.specialize(target=target, mma=mma, a_layout=rot["A"], b_layout=rot["B"], BM=2 * nb * m,
                           BK=2 * nb * k, K=k, N=n)
    rng = np.random.default_rng(1)
    A = rng.standard_normal((2 * nb * m, k)).astype(np.float16)
    B = rng.standard_normal((2 * nb * k, n)).astype(np.float16)
    a, b = A.astype(np.float64).reshape(-1, nb, m, k), B.astype(np.float64).reshape(-1, nb, k, n)
    right = np.einsum("gbmk,gbkn->gbmn", a, b).reshape(-1, n)
    rolled = np.einsum("gbmk,gbkn->gbmn", np.roll(a, -1, 1), np.roll(b, -1, 1)).reshape(-1, n)
    assert not np.allclose(right, rolled)
    errors = ts.check(p).errors
    assert {e.where.rsplit(" ", 1)[-1] for e in errors} == {"A", "B"}, ts.check(p)
    assert run(p, device="none", A=A, B=B).status == "CHECK_FAILED"


@ts.kernel
def _rotate(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"], *, nw=2, barrier="all", lay=None):
    """Each wave stores its 16 rows to LDS and reads the next wave's back: Y's block w = X's block w+1."""
    ts.waves(nw)
    w = ts.wave_id()
    buf = ts.lds_alloc("f32", 16 * nw, 16)
    ts.lds_store(buf, w * 16, 0, ts.load(X[w * 16:, 0:], lay))
    if barrier == "all":
        ts.barrier()
    else:
        with ts.when(w < 1):  # only wave 0 reaches it
            ts.barrier()
    ts.store(Y[w * 16:, 0:], ts.lds_load(buf, ((w + 1) % nw) * 16, 0, lay))


def test_a_barrier_only_some_waves_reach(tmp_path):
    """CUDA C Programming Guide (__syncthreads): allowed in conditional code only where the condition
    is the same in the whole block; on AMD the waves that skip s_barrier run on. Wave 1 then reads
    wave 0's rows with nothing ordering the read after the write: numpy's two outcomes (the rows
    written, or the buffer's old contents, 0 here) differ."""
    from tilesim.matrix import lookup

    lay = lookup(WMMA, "gfx1201").layout("C")
    X = np.random.default_rng(2).standard_normal((32, 16)).astype(np.float32)
    after, before = X[:16].astype(np.float64), np.zeros((16, 16))
    assert not np.allclose(after, before)
    bad = _rotate.specialize(target="gfx1201", M=32, N=16, barrier="wave0", lay=lay)
    errs = ts.check(bad).errors
    assert errs and "only some waves" in str(errs[0])
    assert run(bad, device="none", X=X).status == "CHECK_FAILED"
    good = _rotate.specialize(target="gfx1201", M=32, N=16, lay=lay)
    assert ts.check(good).ok
    assert np.array_equal(ts.simulate(good, X=X)["Y"], np.concatenate([X[16:], X[:16]]))


def test_a_workgroup_larger_than_the_launch_limit():
    """1024 work-items per workgroup at most: LLVM AMDGPUUsage (max flat workgroup size) and the CUDA
    C Programming Guide (threads per block). 32 waves of 64 lanes is 2048; 16 is 1024, the limit."""
    from tilesim.matrix import lookup

    lay = lookup("v_mfma_f32_16x16x16_f16", "gfx942").layout("C")
    big = _rotate.specialize(target="gfx942", M=16 * 32, N=16, nw=32, lay=lay)
    (err,) = ts.check(big).errors
    assert "2048 work-items" in err.message and "at most 1024" in err.message
    X = np.zeros((16 * 32, 16), np.float32)
    assert run(big, device="none", X=X).status == "CHECK_FAILED"
    assert ts.check(_rotate.specialize(target="gfx942", M=16 * 16, N=16, nw=16, lay=lay)).ok


def test_a_tensor_parameter_nothing_reads_or_writes_is_an_error():
    """0.8.0 before this fix: a GEMM declaring a second f32 M x N tensor D and never storing it passed
    check, and `run` without a reference gave COMPILE_ONLY (exit 0): a device leaves D as the buffer
    held it. The op table's `tensor` attribute says which ops touch a tensor."""
    import tilesim as ts

    @ts.kernel
    def two_outputs(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"],
                    D: ts.Tensor["f32", "M", "N"], *, store_d=False):
        op = ts.mma_op("v_wmma_f32_16x16x16_f16")
        ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        acc = ts.zeros(op.layout("C"), "f32")
        for k in ts.range(0, A.shape[1], op.k):
            acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")),
                         acc)
        ts.store(C[tm * op.m:, tn * op.n:], acc)
        if store_d:
            ts.store(D[tm * op.m:, tn * op.n:], acc)

    bad = ts.check(two_outputs.specialize(target="gfx1201", M=32, N=32, K=32))
    assert not bad.ok and "tensor D is a parameter that no op loads or stores" in str(bad.errors[0])
    assert ts.check(two_outputs.specialize(target="gfx1201", M=32, N=32, K=32, store_d=True)).ok
