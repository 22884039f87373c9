"""Asynchronous global -> LDS copies (``ts.lds_copy_async`` / ``ts.async_commit`` / ``ts.async_wait``).

Expected values come from outside the code under test: the data a copy moves is the numpy slice
of the input; when data lands follows the PTX ISA's ``cp.async`` rules (a wave's copies join a
group at ``cp.async.commit_group``; ``cp.async.wait_group N`` completes all but the N most recent
groups — the ISA's example: three groups committed, ``wait_group 1`` completes groups 1 and 2 —
and does not wait for uncommitted copies); the alignment rule is the ISA's (both addresses aligned
to cp-size, 4/8/16 bytes; ``.cg`` takes 16 only). Each check is shown failing on the planted bug
it targets next to the correct program passing.
"""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest

import tilesim as ts
from examples import block_gemm
from examples.block_gemm import copy_layout
from tilesim.codegen import emit_hip
from tilesim.diff import run
from tilesim.hw import offline
from tilesim.errors import CheckWarning, VerifyError
from tilesim.ir.core import Program

RNG = np.random.default_rng(7)
A32 = RNG.standard_normal((32, 32)).astype(np.float16)


@ts.kernel
def swap(A: ts.Tensor["f16", "M", "K"], C: ts.Tensor["f16", "M", "K"], *, wait=0, commit=True, bar=True,
         col=0, tcol=0, nbytes=None, rows=16, cols=32, vec=1, max_phase=1):
    """Two waves: wave w copies rows 16w.. of A into LDS, then reads the other wave's rows back."""
    ts.waves(2)
    ts.grid(1)
    w = ts.wave_id()
    s = ts.lds_alloc("f16", 32, 48, vec=vec, per_phase=1, max_phase=max_phase)
    lay = copy_layout(rows, cols, 32, vec=8 if nbytes is None else max(1, nbytes // 2))
    ts.lds_copy_async(s, w * 16, col, A[w * 16:, tcol:], lay, bytes=nbytes)
    if commit:
        ts.async_commit()
    if wait is not None:
        ts.async_wait(wait)
    if bar:
        ts.barrier()
    x = ts.lds_load(s, (1 - w) * 16, col, copy_layout(16, 32, 32))
    ts.store(C[(1 - w) * 16:, 0:], x)


def _errors(prog: Program) -> list[str]:
    return [str(f) for f in ts.check(prog).errors]


def test_the_copy_is_traced_checked_and_lands_at_the_wait():
    p = swap.specialize(target="sm_90", M=32, K=32)
    ops = [op.kind for op in p.walk()]
    assert ops.count("lds_copy_async") == 1 and "async_commit" in ops and "async_wait" in ops
    copy = next(op for op in p.walk() if op.kind == "lds_copy_async")
    assert copy.attr("bytes") == 16  # 8 consecutive f16 a lane: the widest the layout allows
    assert Program.from_json(p.to_json()) == p
    assert ts.check(p).ok
    r = ts.simulate(p, A=A32)
    assert np.array_equal(r["C"], A32) and r.report.race_count == 0  # numpy: the tile, moved unchanged


def test_a_read_before_the_wait_is_an_error_and_a_simulated_race():
    p = swap.specialize(target="sm_90", M=32, K=32, wait=None)
    errs = _errors(p)
    assert errs and "asynchronous copy" in errs[0] and "async_wait" in errs[0], errs
    with pytest.warns(CheckWarning, match="asynchronous copy"):  # simulate says check failed
        r = ts.simulate(p, A=A32)
    assert r.report.race_count > 0 and "asynchronous copy" in r.report.races[0]
    assert not np.array_equal(r["C"], A32)  # the data had not landed when it was read


def test_other_waves_need_a_barrier_after_the_wait():
    p = swap.specialize(target="sm_90", M=32, K=32, bar=False)
    errs = _errors(p)
    assert errs and "LDS race" in errs[0] and "barrier" in errs[0], errs
    with pytest.warns(CheckWarning, match="LDS race"):
        assert ts.simulate(p, A=A32).report.race_count > 0


def test_uncommitted_copies_are_not_waited_for():
    """PTX: cp.async.wait_group waits for committed groups only."""
    p = swap.specialize(target="sm_90", M=32, K=32, commit=False)
    assert any("asynchronous copy" in e for e in _errors(p))
    with pytest.warns(CheckWarning, match="asynchronous copy"):
        assert ts.simulate(p, A=A32).report.race_count > 0


@ts.kernel
def three_groups(A: ts.Tensor["f16", "M", "K"], C: ts.Tensor["f16", 16, "K"], *, read=0, pending=1):
    """One wave commits three groups (rows 0-15, 16-31, 32-47) and waits with ``pending``."""
    ts.grid(1)
    s = ts.lds_alloc("f16", 48, 32)
    lay = copy_layout(16, 32, 32)
    for g in range(3):
        ts.lds_copy_async(s, 16 * g, 0, A[16 * g:, 0:], lay)
        ts.async_commit()
    ts.async_wait(pending)
    ts.store(C[0:, 0:], ts.lds_load(s, 16 * read, 0, lay))


@pytest.mark.parametrize("read,pending,landed", [(0, 1, True), (1, 1, True), (2, 1, False), (2, 0, True),
                                                 (0, 2, True), (1, 2, False)])
def test_wait_group_completes_all_but_the_newest_n_groups(read, pending, landed):
    A = RNG.standard_normal((48, 32)).astype(np.float16)
    p = three_groups.specialize(target="sm_80", M=48, K=32, read=read, pending=pending)
    errs = _errors(p)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        r = ts.simulate(p, A=A)
    assert (not errs) == landed, errs
    assert any(issubclass(w.category, CheckWarning) for w in said) == (not landed)
    assert (r.report.race_count == 0) == landed
    if landed:
        assert np.array_equal(r["C"], A[16 * read:16 * read + 16])


def test_alignment_of_both_addresses():
    ok = swap.specialize(target="sm_90", M=32, K=32, col=8, nbytes=16)
    assert ts.check(ok).ok
    dst = swap.specialize(target="sm_90", M=32, K=32, col=4, nbytes=16)  # LDS column 4: byte 8 of a 16-byte copy
    errs = _errors(dst)
    assert errs and "LDS byte" in errs[0] and "not a multiple of 16" in errs[0], errs
    assert ts.check(swap.specialize(target="sm_90", M=32, K=32, col=4, nbytes=8)).ok  # 8 bytes: aligned
    src = swap.specialize(target="sm_90", M=32, K=32, tcol=4, nbytes=16, cols=16)  # A column 4: byte 8
    errs = _errors(src)
    assert errs and "global byte" in errs[0] and "not a multiple of 16" in errs[0], errs
    split = swap.specialize(target="sm_90", M=32, K=32, vec=4, max_phase=4)  # the swizzle moves 4-element units
    errs = _errors(split)
    assert errs and "not contiguous" in errs[0], errs


def test_a_copy_outside_the_tensor_is_an_error():
    p = swap.specialize(target="sm_90", M=32, K=32, tcol=8, nbytes=16)  # columns 8..39 of a 32-column tensor
    errs = _errors(p)
    assert errs and "A[0][32]" in errs[0] and "no mask" in errs[0], errs


def test_the_dsl_refuses_what_a_copy_cannot_do():
    @ts.kernel
    def cast_copy(A: ts.Tensor["f16", "M", "K"], C: ts.Tensor["f32", "M", "K"]):
        ts.grid(1)
        s = ts.lds_alloc("f32", 16, 32)
        ts.lds_copy_async(s, 0, 0, A[0:, 0:], copy_layout(16, 32, 32))
    with pytest.raises(VerifyError, match="moves bytes unchanged"):
        cast_copy.specialize(target="sm_90", M=16, K=32)
    with pytest.raises(VerifyError, match="bytes=9"):
        swap.specialize(target="sm_90", M=32, K=32, nbytes=9)
    d = json.loads(swap.specialize(target="sm_90", M=32, K=32).to_json())
    for o in d["body"]:
        if o["kind"] == "async_wait":
            o["attrs"]["pending"] = 8  # wait_group takes an immediate; tilesim writes 0..7
    with pytest.raises(VerifyError, match="pending=8"):
        Program.from_json(json.dumps(d))


# ---------------------------------------------------------------------------- block_gemm
@pytest.mark.parametrize("target", list(block_gemm.CONFIGS))
def test_block_gemm_with_async_copies_is_bit_identical_to_the_synchronous_one(target):
    sync, asyn = block_gemm.program(target, 256, 128, 96), block_gemm.program(target, 256, 128, 96, async_copy=True)
    arrays = block_gemm.inputs(sync)
    rep = ts.check(asyn)
    assert rep.ok and not rep.findings, str(rep)
    a, b = ts.simulate(sync, **arrays), ts.simulate(asyn, **arrays)
    assert np.array_equal(a["C"], b["C"]) and b.report.race_count == 0
    ref = block_gemm.reference(**arrays)["C"]
    assert np.abs(b["C"] - ref).max() < 1e-3 * np.abs(ref).max()


def _without(prog: Program, kind: str) -> Program:
    """The program with the k-loop's first op of ``kind`` removed (a planted bug)."""
    d = json.loads(prog.to_json())
    loop = next(o for o in d["body"] if o["kind"] == "loop")
    body = loop["attrs"]["body"]["block"]
    body.remove(next(o for o in body if o["kind"] == kind))
    return Program.from_json(json.dumps(d))


@pytest.mark.parametrize("kind,text", [("async_wait", "asynchronous copy"), ("barrier", "LDS race")])
def test_block_gemm_planted_bugs_are_refused(kind, text):
    prog = block_gemm.program("sm_90", 256, 128, 64, async_copy=True)
    errs = _errors(_without(prog, kind))
    assert errs and any(text in e for e in errs), errs


def test_emitted_sources():
    nv = emit_hip(block_gemm.program("sm_90", async_copy=True)).source
    assert nv.count('cp.async.cg.shared.global [%0], [%1], 16;') == 4  # A and B slab copies, prologue and loop
    assert "cp.async.commit_group;" in nv and "cp.async.wait_group 0;" in nv
    small = emit_hip(swap.specialize(target="sm_90", M=32, K=32, col=4, nbytes=8)).source
    assert 'cp.async.ca.shared.global [%0], [%1], 8;' in small  # .cg takes only 16 bytes
    for target in ("gfx942", "gfx950", "gfx1201"):
        amd = emit_hip(block_gemm.program(target, async_copy=True)).source
        assert "cp.async" not in amd
        # CDNA3/CDNA4: direct global -> LDS loads (tests/test_amd_async_copy.py); RDNA4: synchronous
        assert ("__builtin_amdgcn_global_load_lds" in amd) == (target != "gfx1201")
        assert ("no asynchronous copy emitted" in amd) == (target == "gfx1201")


@pytest.mark.compiler
@pytest.mark.parametrize(("target", "want"), [("gfx942", {"global_load_lds_dword"}),
                                              ("gfx950", {"global_load_lds_dwordx4"}),
                                              ("gfx1201", {"global_load_b128", "ds_store_b128"})])
def test_amd_block_gemm_with_async_copies_compiles_to_128_bit_copies_without_spills(target, want):
    """CDNA3/CDNA4: direct global -> LDS loads; RDNA4 has none: the synchronous 128-bit load + LDS store."""
    prog = block_gemm.program(target, async_copy=True)
    comp = offline.compile_hip(emit_hip(prog).source, target, wave_size=prog.wave_size)
    used = set(re.findall(r"^\s*([a-z_0-9]+)\s", comp.isa, re.M))
    assert want <= used, sorted(m for m in used if "load" in m or "store" in m or "write" in m)
    assert comp.metadata["scratch_bytes"] == 0


@pytest.mark.compiler
def test_amd_block_gemm_with_async_copies_runs_in_the_isa_emulator():
    prog = block_gemm.program("gfx942", async_copy=True)
    arrays = block_gemm.inputs(prog)
    v = run(prog, reference=block_gemm.reference(**arrays), device="emulator", **arrays)
    assert v.status == "EMULATED_MATCH", str(v)


def test_three_stages_keep_two_copies_in_flight_and_need_wait_group_1():
    prog = block_gemm.program("sm_90", 256, 128, 128, async_copy=True, stages=3)
    arrays = block_gemm.inputs(prog)
    assert ts.check(prog).ok
    assert np.array_equal(ts.simulate(prog, **arrays)["C"], ts.simulate(block_gemm.program("sm_90", 256, 128, 128),
                                                                         **arrays)["C"])
    assert "cp.async.wait_group 1;" in emit_hip(prog).source
    d = json.loads(prog.to_json())
    body = next(o for o in d["body"] if o["kind"] == "loop")["attrs"]["body"]["block"]
    next(o for o in body if o["kind"] == "async_wait")["attrs"]["pending"] = 2  # waits for one slab too few
    errs = _errors(Program.from_json(json.dumps(d)))
    assert errs and "asynchronous copy" in errs[0], errs
