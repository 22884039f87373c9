"""``check`` OK means the program simulates and is hardware-true (issue 13, items 2, 3, 4, 7, 9).

Each test states its expectation by hand (element indices from the tile arithmetic, the ISA's
C/D formula for RDNA4 ``row = 8*(lane//16) + v, col = lane % 16``) or against a float64 numpy
reference; none copies tilesim's own output.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import pathlib
import types

import numpy as np
import pytest

import tilesim as ts
from examples import fp8_gemm, int8_gemm, lds_gemm
from examples.gemm import gemm
from tilesim.codegen.hip import emit_hip
from tilesim.errors import TilesimError, VerifyError
from tilesim.layouts import Layout
from tilesim.matrix import lookup

WMMA = "v_wmma_f32_16x16x16_f16"


def _errors(prog):
    return [str(f) for f in ts.check(prog).errors]


def _gemm_inputs(M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)


# ------------------------------------------------------------------ item 2: coverage
def test_rows_no_tile_writes_are_an_error_naming_element_tile_and_lane():
    # M = 40 with 16-row tiles: grid (40 // 16, 64 // 16) = (2, 4) covers rows 0-31 only
    prog = gemm.specialize(target="gfx1201", M=40, N=64, K=32)
    assert prog.grid == (2, 4)
    (err,) = _errors(prog)
    assert "C[32][0] is never written" in err
    assert f"{8 * 64} of {40 * 64} elements unwritten" in err and "rows 32-39" in err
    # C[32][0] is element (0, 0) of the tile at row 32: RDNA4 C has it in lane 0, VGPR 0; that tile is
    # tile_id (32 // 16, 0) = (2, 0), outside the grid
    assert "tile_id (2, 0)" in err and "lane 0, VGPR 0" in err and "outside the grid (2, 4)" in err
    # the same program at M = 48 is covered
    assert ts.check(gemm.specialize(target="gfx1201", M=48, N=64, K=32)).ok


def test_unwritten_element_inside_a_tile_names_its_lane():
    # a store of a 16x16 tile that skips column 5 (a hand-made C layout without lanes 5 and 21)
    c = lookup(WMMA, "gfx1201").layout("C")
    hw, lg = c.pairs()
    keep = lg[:, c.out_names.index("col")] != 5
    partial = Layout.from_pairs(c.in_dims, c.out_dims, hw[keep], lg[keep], elem_bits=c.elem_bits)

    @ts.kernel
    def copy(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.store(Y[0:, 0:], ts.load(X[0:, 0:], partial))

    (err,) = _errors(copy.specialize(target="gfx1201", M=16, N=16))
    assert "Y[0][5] is never written (16 of 256" in err


def test_two_tiles_writing_one_element_is_a_write_race():
    lay = lookup(WMMA, "gfx1201").layout("C")

    @ts.kernel
    def twice(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.grid(2)
        ts.store(Y[0:, 0:], ts.load(X[0:, 0:], lay))  # both workgroups store the same tile

    (err,) = _errors(twice.specialize(target="gfx1201", M=16, N=16))
    assert "Y[0][0] is written by workgroup 0, wave 0 and by workgroup 1, wave 0" in err
    assert "256 elements written by more than one wave" in err


def test_masked_edge_tiles_cover_the_output_and_are_reported():
    # grid 3 over M = 40: the third row of tiles reads rows 40-47 as 0 and drops their stores
    @ts.kernel
    def edge(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"]):
        op = ts.mma_op(WMMA)
        ts.grid(-(-A.shape[0] // op.m), B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        acc = ts.zeros(op.layout("C"), "f32")
        for k in ts.range(0, A.shape[1], op.k):
            acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")), acc)
        ts.store(C[tm * op.m:, tn * op.n:], acc)

    prog = edge.specialize(target="gfx1201", M=40, N=32, K=32)
    rep = ts.check(prog)
    assert rep.ok, rep
    # 8 rows x 16 columns dropped per tile of the last tile row, 2 tile columns
    assert any(f"{8 * 16 * 2} element stores outside C" in f.message for f in rep.findings)
    A, B = _gemm_inputs(40, 32, 32)
    got = ts.simulate(prog, A=A, B=B)["C"]
    np.testing.assert_allclose(got, A.astype(np.float64) @ B.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_lds_access_outside_its_buffer_is_an_error():
    lay = lookup(WMMA, "gfx1201").layout("C")

    @ts.kernel
    def spill(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        buf = ts.lds_alloc("f32", 16, 16)
        ts.lds_store(buf, 8, 0, ts.load(X[0:, 0:], lay))  # rows 8..23 of a 16-row buffer
        ts.barrier()
        ts.store(Y[0:, 0:], ts.lds_load(buf, 0, 0, lay))

    prog = spill.specialize(target="gfx1201", M=16, N=16)
    err, unwritten = _errors(prog)  # and rows 0..7, which the load reads, were never stored (0.7.1)
    assert "leaves its 16x16 buffer: rows 8..23" in err and "no lds_store wrote" in unwritten


# ------------------------------------------------------------------ item 3: loop-carried Python state
@ts.kernel
def two_acc_list(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"]):
    op = ts.mma_op(WMMA)
    ts.grid(A.shape[0] // op.m, B.shape[1] // (2 * op.n))
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    accs = [ts.zeros(op.layout("C"), "f32") for _ in range(2)]
    for k in ts.range(0, A.shape[1], op.k):
        a = ts.load(A[tm * op.m:, k:], op.layout("A"))
        for j in range(2):
            b = ts.load(B[k:, tn * 2 * op.n + j * op.n:], op.layout("B"))
            accs[j] = ts.mma(op, a, b, accs[j])
    for j in range(2):
        ts.store(C[tm * op.m:, tn * 2 * op.n + j * op.n:], accs[j])


@ts.kernel
def two_acc_dict_attr(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"]):
    op = ts.mma_op(WMMA)
    ts.grid(A.shape[0] // op.m, B.shape[1] // (2 * op.n))
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    accs = {"left": ts.zeros(op.layout("C"), "f32")}
    st = types.SimpleNamespace(right=ts.zeros(op.layout("C"), "f32"))
    for k in ts.range(0, A.shape[1], op.k):
        a = ts.load(A[tm * op.m:, k:], op.layout("A"))
        accs["left"] = ts.mma(op, a, ts.load(B[k:, tn * 2 * op.n:], op.layout("B")), accs["left"])
        st.right = ts.mma(op, a, ts.load(B[k:, tn * 2 * op.n + op.n:], op.layout("B")), st.right)
    ts.store(C[tm * op.m:, tn * 2 * op.n:], accs["left"])
    ts.store(C[tm * op.m:, tn * 2 * op.n + op.n:], st.right)


@pytest.mark.parametrize("kern", [two_acc_list, two_acc_dict_attr], ids=["list", "dict+attribute"])
def test_accumulators_in_python_containers_are_carried(kern):
    prog = kern.specialize(target="gfx1201", M=32, N=64, K=64)
    (loop,) = [op for op in prog.walk() if op.kind == "loop"]
    assert len(loop.attr("carried")) == 2
    assert ts.check(prog).ok
    A, B = _gemm_inputs(32, 64, 64)
    got = ts.simulate(prog, A=A, B=B)["C"]
    ref = A.astype(np.float64) @ B.astype(np.float64)
    # f16 inputs, f32 accumulation over K = 64: well inside 1e-4 relative to the row norm
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_emitted_hip_carries_list_accumulators():
    prog = two_acc_list.specialize(target="gfx1201", M=32, N=64, K=64)
    (loop,) = [op for op in prog.walk() if op.kind == "loop"]
    src = emit_hip(prog).source
    carried = loop.attr("carried")
    assert len(carried) == 2
    for init, nxt in carried:  # each trip's mma result becomes the register the next trip's mma reads
        assert f"f{init.id} = f{nxt.id};  // loop-carried" in src
        assert f"__builtin_bit_cast(f32x8_t, f{init.id})));" in src
    # the two accumulators are stored after the loop, each from its own final register
    stores = [op for op in prog.walk() if op.kind == "store"]
    assert sorted(op.args[0].id for op in stores) == sorted(n.id for _, n in carried)


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


def test_trip_dependent_python_state_is_refused_at_the_users_line():
    @ts.kernel
    def counter(A: ts.Tensor["f32", "M", "N"], C: ts.Tensor["f32", "M", "N"]):
        lay = lookup(WMMA, "gfx1201").layout("C")
        acc = ts.zeros(lay, "f32")
        off = 0
        for _k in ts.range(0, 2, 1):
            acc = acc + ts.load(A[0:, off:], lay)  # a Python counter as an offset: different every trip
            off += 16
        ts.store(C[0:, 0:], acc)

    with pytest.raises(VerifyError) as e:
        counter.specialize(target="gfx1201", M=16, N=32)
    assert f"{__file__}:{_line_of(counter.fn, 'A[0:, off:]')}" in str(e.value)


def test_per_trip_values_kept_in_a_growing_list_are_refused():
    @ts.kernel
    def grow(A: ts.Tensor["f32", "M", "N"], C: ts.Tensor["f32", "M", "N"]):
        lay = lookup(WMMA, "gfx1201").layout("C")
        outs = []
        for k in ts.range(0, 2, 1):
            outs.append(ts.load(A[0:, k * 16:], lay))
        ts.store(C[0:, 0:], outs[0])

    with pytest.raises(VerifyError, match="first trace of the ts.range loop"):
        grow.specialize(target="gfx1201", M=16, N=32)


def test_value_defined_in_a_branch_and_read_after_it_is_refused():
    @ts.kernel
    def escape(A: ts.Tensor["f32", "M", "N"], C: ts.Tensor["f32", "M", "N"]):
        lay = lookup(WMMA, "gfx1201").layout("C")
        acc = ts.zeros(lay, "f32")
        with ts.when(ts.tile_id(0) == 0):
            acc = acc + ts.load(A[0:, 0:], lay)
        ts.store(C[0:, 0:], acc)

    with pytest.raises(VerifyError) as e:
        escape.specialize(target="gfx1201", M=16, N=16)
    assert "ts.when" in str(e.value) and f"{__file__}:{_line_of(escape.fn, 'ts.store(C')}" in str(e.value)


def test_rebinding_to_an_earlier_value_inside_a_branch_is_refused():
    @ts.kernel
    def pick(A: ts.Tensor["f32", "M", "N"], C: ts.Tensor["f32", "M", "N"]):
        lay = lookup(WMMA, "gfx1201").layout("C")
        zero, x = ts.zeros(lay, "f32"), ts.load(A[0:, 0:], lay)
        outs = [x]
        with ts.when(ts.tile_id(0) == 1):
            outs[0] = zero  # Python runs this on every wave: it cannot be conditional
        ts.store(C[0:, 0:], outs[0])

    with pytest.raises(VerifyError) as e:
        pick.specialize(target="gfx1201", M=16, N=16)
    assert "outs[0] is rebound" in str(e.value) and f"{__file__}:" in str(e.value)


def test_values_made_and_stored_inside_a_branch_with_a_loop_are_fine():
    @ts.kernel
    def inner(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"]):
        op = ts.mma_op(WMMA)
        ts.grid(2)
        with ts.when(ts.tile_id(0) < 1):
            acc = ts.zeros(op.layout("C"), "f32")
            for k in ts.range(0, A.shape[1], op.k):
                acc = ts.mma(op, ts.load(A[0:, k:], op.layout("A")), ts.load(B[k:, 0:], op.layout("B")), acc)
            ts.store(C[0:, 0:], acc)

    prog = inner.specialize(target="gfx1201", M=16, N=16, K=32)
    A, B = _gemm_inputs(16, 16, 32, seed=5)
    np.testing.assert_allclose(ts.simulate(prog, A=A, B=B)["C"], A.astype(np.float64) @ B.astype(np.float64),
                               rtol=1e-4, atol=1e-4)


def test_nested_loops_carry_through_both_levels():
    @ts.kernel
    def nested(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"]):
        op = ts.mma_op(WMMA)
        accs = [ts.zeros(op.layout("C"), "f32")]
        for k0 in ts.range(0, A.shape[1], 2 * op.k):
            for k1 in ts.range(0, 2 * op.k, op.k):
                accs[0] = ts.mma(op, ts.load(A[0:, k0 + k1:], op.layout("A")),
                                 ts.load(B[k0 + k1:, 0:], op.layout("B")), accs[0])
        ts.store(C[0:, 0:], accs[0])

    prog = nested.specialize(target="gfx1201", M=16, N=16, K=64)
    A, B = _gemm_inputs(16, 16, 64, seed=3)
    np.testing.assert_allclose(ts.simulate(prog, A=A, B=B)["C"], A.astype(np.float64) @ B.astype(np.float64),
                               rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ item 4: check OK => simulate runs
def _copy_kernel(lay, convert_to=None):
    @ts.kernel
    def copy(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        x = ts.load(X[0:, 0:], lay)
        if convert_to is not None:
            x = ts.convert(x, convert_to)
        ts.store(Y[0:, 0:], x)

    return copy


def test_slot_holding_several_elements_is_refused_by_check_and_simulate():
    c = lookup(WMMA, "gfx1201").layout("C")
    hw, lg = c.pairs()
    # lane 0 slot 0 also holds element (0, 1): one 32-bit register slot, two f32 elements
    lane, slot = c.in_names.index("lane"), c.in_names.index("slot")
    extra_hw = np.zeros((1, 2), np.int64)
    extra_lg = np.zeros((1, len(c.out_names)), np.int64)
    extra_lg[0, c.out_names.index("col")] = 1
    assert hw[(hw[:, lane] == 0) & (hw[:, slot] == 0)].shape[0] == 1
    lay = Layout.from_pairs(c.in_dims, c.out_dims, np.vstack([hw, extra_hw]), np.vstack([lg, extra_lg]),
                            elem_bits=32)
    prog = _copy_kernel(lay).specialize(target="gfx1201", M=16, N=16)
    errs = _errors(prog)
    assert any("one register slot holds several elements (e.g. lane 0, slot 0 holds 2)" in e for e in errs)
    with pytest.raises(VerifyError, match="one register slot holds several elements"):
        ts.simulate(prog, X=np.ones((16, 16), np.float32))


def test_multi_block_mfma_is_checked_and_simulated_per_block():
    """Multi-block MFMA (was refused): the 16 blocks of v_mfma_f32_4x4x4f16 are stacked as rows of
    the tiles, each block its own product; a tile of the wrong height is an unwritten output."""
    row = lookup("v_mfma_f32_4x4x4f16", "gfx942")
    assert row.blocks == 16

    @ts.kernel
    def mb(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "KB", "N"], C: ts.Tensor["f32", "M", "N"]):
        op = ts.mma_op("v_mfma_f32_4x4x4f16")
        acc = ts.zeros(op.row.layout("C", wave_size=64), "f32")
        a = ts.load(A[0:, 0:], op.row.layout("A", wave_size=64))
        b = ts.load(B[0:, 0:], op.row.layout("B", wave_size=64))
        ts.store(C[0:, 0:], ts.mma(op, a, b, acc))

    prog = mb.specialize(target="gfx942", M=64, K=4, KB=64, N=4)
    assert _errors(prog) == []
    rng = np.random.default_rng(0)
    A, B = rng.integers(-3, 4, (64, 4)), rng.integers(-3, 4, (64, 4))
    out = ts.simulate(prog, A=A.astype(np.float16), B=B.astype(np.float16))["C"]
    np.testing.assert_array_equal(out, np.einsum("bmk,bkn->bmn", A.reshape(16, 4, 4), B.reshape(16, 4, 4)).reshape(64, 4))
    tall = mb.specialize(target="gfx942", M=128, K=4, KB=64, N=4)  # one tile for 128 rows: half never written
    assert any("never written" in e or "not written" in e for e in _errors(tall)), _errors(tall)


def test_convert_between_tile_shapes_is_refused():
    a = lookup(WMMA, "gfx1201").layout("A")  # 16x16
    c32 = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")
    small = Layout.from_function({"lane": 32, "slot": 4}, {"row": 8, "col": 16},
                                 lambda lane, slot: {"row": slot * 2 + lane // 16, "col": lane % 16})
    prog = _copy_kernel(c32.with_elem_bits(32), convert_to=small).specialize(target="gfx1201", M=16, N=16)
    assert any("convert from a 16x16 tile to a 8x16 tile" in e for e in _errors(prog))
    with pytest.raises(VerifyError, match="convert from a 16x16 tile"):
        ts.simulate(prog, X=np.ones((16, 16), np.float32))
    assert a is not None


def test_wave32_program_on_a_wave64_target_is_a_finding_not_a_crash():
    prog = dataclasses.replace(gemm.specialize(target="gfx1201", M=16, N=16, K=16), target="gfx90a")
    rep = ts.check(prog)  # used to raise TargetError from occupancy()
    assert not rep.ok and rep.occupancy is None
    assert any("gfx90a runs wave64; the program is wave32" in str(f) for f in rep.errors)
    with pytest.raises(TilesimError):
        ts.simulate(prog, A=np.ones((16, 16), np.float16), B=np.ones((16, 16), np.float16))


def test_program_reading_an_undefined_value_is_refused_not_a_keyerror():
    # hand-built IR (as a JSON file or a tool could produce it): the store reads a value nobody defines
    from tilesim.ir.core import Block, Op

    prog = gemm.specialize(target="gfx1201", M=16, N=16, K=16)
    store = prog.body.ops[-1]
    ghost = dataclasses.replace(store.args[0], id=999)
    broken = dataclasses.replace(prog, body=Block(prog.body.ops[:-1] + (Op("store", None, (ghost, *store.args[1:]),
                                                                            store.attrs),)))
    assert any("reads %999" in e for e in _errors(broken))
    with pytest.raises(VerifyError, match="reads %999"):
        ts.simulate(broken, A=np.ones((16, 16), np.float16), B=np.ones((16, 16), np.float16))


def test_loop_whose_carried_initial_value_is_gone_is_refused():
    # the accumulator's zeros op removed (a mutation a tool or a hand edit could make): the loop
    # still carries it; simulate used to fail with a bare KeyError in the fused loop
    from tilesim.ir.core import Block

    prog = gemm.specialize(target="gfx1100", M=16, N=16, K=32)
    broken = dataclasses.replace(prog, body=Block(tuple(op for op in prog.body.ops if op.kind != "zeros")))
    assert any("is not defined before this op" in e for e in _errors(broken))
    with pytest.raises(VerifyError):
        ts.simulate(broken, A=np.ones((16, 32), np.float16), B=np.ones((32, 16), np.float16))


def test_loop_body_value_read_after_a_loop_that_never_runs_is_refused():
    lay = lookup(WMMA, "gfx1201").layout("C")

    @ts.kernel
    def last(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "M"]):
        x = None
        for k in ts.range(0, X.shape[1] - 16, 16):  # no trip when N = 16
            x = ts.load(X[0:, k:], lay)
        ts.store(Y[0:, 0:], x)

    assert ts.check(last.specialize(target="gfx1201", M=16, N=32)).ok
    prog = last.specialize(target="gfx1201", M=16, N=16)
    assert any("may not run" in e or "not defined before this op" in e for e in _errors(prog))
    with pytest.raises(VerifyError):  # a typed refusal, not a KeyError from the register file
        ts.simulate(prog, X=np.ones((16, 16), np.float32))


# ------------------------------------------------------------------ item 7: races
def test_missing_barrier_is_a_check_error_and_port_refuses():
    racy = lds_gemm.lds_gemm.specialize(target="gfx1201", M=32, N=32, K=48, drop_barrier=True)
    (err,) = _errors(racy)[:1]
    assert "LDS race" in err and "missing ts.barrier()" in err
    with pytest.raises(ts.PortError, match="LDS race"):
        ts.port(racy, "gfx942")
    # equivalence is never claimed between racy runs, even of a program with itself
    ev = ts.equivalent(racy, racy, random_runs=1, max_lines=1)
    assert not ev.equal and ev.source_races > 0 and "races in LDS" in ev.differences[0]


# ------------------------------------------------------------------ item 9: numerics traps
def test_signed_int8_tensor_read_unsigned_by_iu8_wmma_is_an_error():
    unsigned_read = int8_gemm.programs(M=32, N=32, K=32, signed=False)[1]
    assert unsigned_read.target == "gfx1201"
    errs = _errors(unsigned_read)
    assert any("tensor A (i8) is read as u8" in e and "neg=1" in e for e in errs)
    assert any("tensor B (i8) is read as u8" in e and "neg=2" in e for e in errs)
    assert ts.check(int8_gemm.programs(M=32, N=32, K=32)[1]).ok  # neg=3: both signed


def test_unsigned_tensor_read_signed_is_an_error():
    @ts.kernel
    def u8_gemm(A: ts.Tensor["u8", "M", "K"], B: ts.Tensor["u8", "K", "N"], C: ts.Tensor["i32", "M", "N"]):
        op = ts.mma_op("v_wmma_i32_16x16x16_iu8")
        acc = ts.mma(op, ts.load(A[0:, 0:], op.layout("A")), ts.load(B[0:, 0:], op.layout("B")),
                     ts.zeros(op.layout("C"), "i32"), neg=1)
        ts.store(C[0:, 0:], acc)

    errs = _errors(u8_gemm.specialize(target="gfx1201", M=16, N=16, K=16))
    assert len(errs) == 1 and "tensor A (u8) is read as i8" in errs[0] and "neg=0" in errs[0]


@pytest.mark.parametrize(("declared", "target", "mma", "wants"), [
    ("fp8_ocp", "gfx942", "v_mfma_f32_16x16x32_fp8_fp8", "fp8_fnuz"),
    ("fp8_fnuz", "gfx950", "v_mfma_f32_16x16x32_fp8_fp8", "fp8_ocp"),
])
def test_fp8_of_the_other_flavour_is_an_error(declared, target, mma, wants):
    assert lookup(mma, target).types[0] == wants  # the row's own type, as the ISA names it
    prog = fp8_gemm.KERNELS[declared].specialize(target=target, M=16, N=16, K=32, mma=mma)
    errs = _errors(prog)
    assert any(f"tensor A ({declared}) is fp8" in e and f"reads {wants}" in e for e in errs), errs
    ok = fp8_gemm.KERNELS[wants].specialize(target=target, M=16, N=16, K=32, mma=mma)
    assert ts.check(ok).ok


def test_load_as_another_type_of_the_same_width_is_an_error():
    lay = lookup(WMMA, "gfx1201").layout("A")

    @ts.kernel
    def reinterpret(X: ts.Tensor["i8", "M", "N"], Y: ts.Tensor["u8", "M", "N"]):
        ts.store(Y[0:, 0:], ts.load(X[0:, 0:], lay, "u8"))

    errs = _errors(reinterpret.specialize(target="gfx1201", M=16, N=16))
    assert any("loads tensor X (i8) as a u8 fragment" in e for e in errs)


# ------------------------------------------------------------------ layering (issue 14)
def test_the_ir_layer_imports_nothing_from_the_simulator():
    root = pathlib.Path(ts.__file__).parent / "ir"
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.startswith(("tilesim.wave", "tilesim.codegen", "tilesim.hw")) for n in names), path
