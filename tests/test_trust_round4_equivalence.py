"""Round four: ``equivalent`` (and ``assert_equivalent``, and ``port``'s proof) must not call two
programs equal because every input it tried was a small integer.

Its inputs were integers in -3..3: exact in bf16 and in fp8, with sums far below 256, so a GEMM that
rounds A through bf8, or its accumulator through bf16 at every k-step, computed the same bits as the
f32 GEMM and was "equivalent on 67 probe and random inputs". Random runs now also use wide integers
(as many significant bits as the input types hold while every sum the instructions form stays exact).
The wrong programs are shown to differ from the f32 GEMM on general data by float64 numpy
(tests/test_trust_round4_casts.py) and here on the wide integers by numpy too.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from tests.test_trust_round4_casts import gemm
from tilesim.testing import assert_equivalent
from tilesim.wave.equivalence import equivalent


def _prog(bug: str, K: int = 64):
    return gemm.specialize(target="gfx1100", M=32, N=32, K=K, bug=bug)


@pytest.mark.parametrize("bug", ["bf8_inputs", "bf16_accumulator"])
def test_a_program_that_rounds_through_a_narrow_type_is_not_equivalent(bug):
    base, wrong = _prog(""), _prog(bug)
    rng = np.random.default_rng(0)
    A, B = rng.integers(-300, 301, (32, 64)), rng.integers(-300, 301, (64, 32))  # exact in f16 (11 bits)
    want = A.astype(np.float64) @ B.astype(np.float64)  # |sums| < 2**24: exact in f32 too
    assert np.array_equal(ts.simulate(base, A=A, B=B)["C"], want)
    assert not np.array_equal(ts.simulate(wrong, A=A, B=B)["C"], want)
    ev = equivalent(base, wrong)
    assert not ev, str(ev)
    assert "wide" in ev.differences[0]
    with pytest.raises(AssertionError):
        assert_equivalent(base, wrong)


@pytest.mark.parametrize("mmas", [("v_mfma_f32_32x32x8f16", "v_mfma_f32_16x16x16f16")])
def test_programs_that_only_group_k_differently_stay_equivalent(mmas):
    from examples.gemm import gemm as plain
    p1, p2 = (plain.specialize(target="gfx942", M=64, N=64, K=256, mma=m) for m in mmas)
    assert equivalent(p1, p2)


def test_the_right_program_is_still_equivalent_to_itself():
    assert equivalent(_prog(""), _prog(""))
