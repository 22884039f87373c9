"""The verifier: operand layouts against the hardware's, shared K permutations, element types and
budgets. Expected patterns come from the ISA formulas (RDNA3 rows 2*v + lane/16, RDNA4 rows
8*(lane/16) + v), written here independently of the catalog code."""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from tilesim.layouts import Layout
from examples.gemm import gemm
from tilesim.matrix import lookup


def _relabel_k(lay: Layout, axis: int, perm: np.ndarray) -> Layout:
    hw, lg = lay.pairs()
    lg = lg.copy()
    lg[:, axis] = perm[lg[:, axis]]
    return Layout.from_pairs(lay.in_dims, lay.out_dims, hw, lg, elem_bits=lay.elem_bits)


def test_a_correct_program_is_ok_with_budgets():
    rep = ts.check(gemm.specialize(target="gfx1201", M=32, N=32, K=32))
    assert rep.ok and rep.findings == [] and rep.vgprs > 0 and rep.occupancy == 16


def test_gfx12_accumulator_rows_on_gfx11_are_blamed_with_both_formulas():
    # independent statement of the two ISA formulas, checked on the catalog layouts first
    g11 = lookup("v_wmma_f32_16x16x16_f16", "gfx1100").layout("C")
    g12 = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")
    for lane in range(32):
        for v in range(8):
            assert g11.apply(lane=lane, slot=v)["row"] == 2 * v + lane // 16
            assert g12.apply(lane=lane, slot=v)["row"] == 8 * (lane // 16) + v
    rep = ts.check(gemm.specialize(target="gfx1100", M=32, N=32, K=32, c_layout=g12))
    (err,) = rep.errors
    assert "operand C" in err.where
    assert "hardware i = lane / 16 + slot * 2, program i = slot + (lane / 16) * 8" in err.message
    # the first differing element, on both sides: C[1][0] is lane 16 v0 on RDNA3, lane 0 v1 in the program
    assert "C[1][0]" in err.message and "lane 0, VGPR 1" in err.message and "lane 16, VGPR 0" in err.message


def test_shared_k_permutation_is_a_warning_but_one_sided_is_an_error():
    row = lookup("v_wmma_f32_16x16x16_f16", "gfx1201")
    perm = np.random.default_rng(0).permutation(16)
    a = _relabel_k(row.layout("A"), 2, perm)  # A: col = k
    b = _relabel_k(row.layout("B"), 1, perm)  # B: row = k
    both = ts.check(gemm.specialize(target="gfx1201", M=16, N=16, K=16, a_layout=a, b_layout=b))
    assert both.ok and any("equivalent, but not the hardware layout" in f.message for f in both.findings)
    one = ts.check(gemm.specialize(target="gfx1201", M=16, N=16, K=16, a_layout=a))
    assert not one.ok and "k permuted on A only" in one.errors[0].message
    # and the simulator agrees: shared permutation -> same result, one-sided -> different
    rng = np.random.default_rng(1)
    A, B = rng.integers(-3, 4, (16, 16)).astype(np.float16), rng.integers(-3, 4, (16, 16)).astype(np.float16)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert np.array_equal(ts.simulate(gemm.specialize(target="gfx1201", M=16, N=16, K=16, a_layout=a, b_layout=b),
                                      A=A, B=B)["C"], ref)
    assert not np.array_equal(ts.simulate(gemm.specialize(target="gfx1201", M=16, N=16, K=16, a_layout=a),
                                          A=A, B=B)["C"], ref)


def test_element_type_and_lds_budget():
    @ts.kernel
    def wrong_type(A: ts.Tensor["f32", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"]):
        op = ts.mma_op("v_wmma_f32_16x16x16_f16")
        acc = ts.zeros(op.layout("C"), "f32")
        a = ts.load(A[0:, 0:], op.layout("A"))  # f32 fragment fed to an f16 operand
        b = ts.load(B[0:, 0:], op.layout("B"))
        ts.store(C[0:, 0:], ts.mma(op, a, b, acc))

    rep = ts.check(wrong_type.specialize(target="gfx1201", M=16, N=16, K=16))
    assert not rep.ok and "f32 fragment but v_wmma_f32_16x16x16_f16 reads f16" in rep.errors[0].message
    @ts.kernel
    def big_lds(A: ts.Tensor["f32", "M", "N"]):
        ts.lds_alloc("f32", 300, 64)  # 300 * 64 * 4 = 76800 bytes > 65536

    rep = ts.check(big_lds.specialize(target="gfx1201", M=16, N=16))
    assert any("LDS use 76800 bytes exceeds gfx1201's 65536" in f.message for f in rep.errors)


@pytest.mark.parametrize("target,mnemonic", [("gfx1100", "v_wmma_f32_16x16x16_f16"), ("gfx942", "v_mfma_f32_32x32x8f16")])
def test_a_json_program_for_a_target_without_the_instruction_fails_check(target, mnemonic):
    p = gemm.specialize(target=target, M=32, N=32, K=32, mma=mnemonic)
    moved = type(p).from_json(p.to_json().replace(f'"target":"{target}"', '"target":"gfx1030"')
                             .replace(f'"target": "{target}"', '"target": "gfx1030"'))
    assert moved.target == "gfx1030"
    rep = ts.check(moved)
    assert not rep.ok and "gfx1030" in rep.errors[0].message
