"""tilesim.testing: its strategies draw valid values, its assertions fail readably, its plugin skips.

Invariants are checked with the library's own predicates *and* from first principles where the
predicate is what a strategy promises (bijective: every position one element, every element one
owner, counted from the pairs).
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import tilesim as ts
from examples.gemm import gemm
from tilesim.errors import InstructionError, LayoutError, TargetError
from tilesim.targets import TARGETS, Target, has
from tilesim.layouts import Layout
from tilesim.matrix import MatrixInstruction, lookup
from tilesim.matrix.numerics import quantize
from tilesim.testing import (
    assert_equivalent,
    assert_layout_equal,
    edge_values_of,
    instruction_targets,
    instructions,
    invalid_layout_specs,
    layouts,
    matrices,
    operand_layouts,
    targets,
    tile_cases,
    tile_programs,
)

pytest_plugins = ["pytester"]

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _counts(lay: Layout) -> tuple[np.ndarray, np.ndarray]:
    hw, lg = lay.pairs()
    hflat = np.ravel_multi_index(hw.T[::-1], [s for _, s in lay.in_dims][::-1]) if len(hw) else np.zeros(0, int)
    gflat = np.ravel_multi_index(lg.T[::-1], [s for _, s in lay.out_dims][::-1]) if len(lg) else np.zeros(0, int)
    return np.bincount(hflat, minlength=lay.in_size), np.bincount(gflat, minlength=lay.out_size)


def _bijective(lay: Layout) -> bool:
    per_pos, per_elem = _counts(lay)
    return bool((per_pos == 1).all() and (per_elem == 1).all())


# ----------------------------------------------------------------------------------- catalog strategies
@FAST
@given(st.data())
def test_targets_honour_vendor_and_features(data: st.DataObject) -> None:
    t = data.draw(targets())
    assert isinstance(t, Target) and TARGETS[t.name] is t
    nv = data.draw(targets(vendor="nvidia"))
    assert nv.vendor == "nvidia"
    w = data.draw(targets(vendor="amd", feature=["wmma", "wave32"]))
    assert w.vendor == "amd" and has(w, "wmma") and has(w, "wave32")


def test_targets_reject_bad_arguments() -> None:
    with pytest.raises(InvalidArgument, match="vendor 'intel'"):
        targets(vendor="intel")
    with pytest.raises(TargetError, match="unknown feature 'wmmma'"):
        targets(feature="wmmma")
    with pytest.raises(TargetError, match="no target"):
        targets(vendor="nvidia", feature="mfma")


@FAST
@given(st.data())
def test_instructions_are_catalog_rows_of_the_asked_arch_and_kind(data: st.DataObject) -> None:
    row = data.draw(instructions(arch="gfx942", kind=["mfma", "smfmac"]))
    assert isinstance(row, MatrixInstruction) and "gfx942" in row.targets and row.kind in ("mfma", "smfmac")
    assert lookup(row.mnemonic, "gfx942") is row
    dense = data.draw(instructions(kind="wmma", sparse=False, blocks=1))
    assert dense.kind == "wmma" and not dense.sparse and dense.blocks == 1


@FAST
@given(instruction_targets())
def test_instruction_targets_place_rows_where_the_catalog_allows(p) -> None:
    row, target, wave = p
    assert target.name in row.targets and wave in row.wave_sizes and wave in target.wave_sizes
    assert lookup(row.mnemonic, target.name) is row


def test_instruction_strategies_reject_empty_selections() -> None:
    with pytest.raises(InstructionError, match="no catalog instruction"):
        instructions(arch="gfx1030")  # dp4a only
    with pytest.raises(InstructionError):
        instruction_targets(arch="sm_90", kind="mfma")
    with pytest.raises(InvalidArgument, match="kind 'mfmaa'"):
        instructions(kind="mfmaa")
    with pytest.raises(TargetError, match="unknown target"):
        instructions(arch="gfx9000")
    with pytest.raises(InstructionError):
        operand_layouts(arch="gfx1201", operand="K", kind="wmma")  # K belongs to sparse rows


@settings(max_examples=60, deadline=None)
@given(operand_layouts(modifiers=True))
def test_operand_layouts_are_the_rows_layouts_with_legal_modifiers(ol) -> None:
    row = ol.instruction
    assert ol.operand in row.operands and ol.target.name in row.targets
    for name, value in ol.modifiers.items():
        assert value in row.modifier(name).values
    if "abid" in ol.modifiers and row.modifier("abid").kind == "broadcast":
        assert ol.modifiers["abid"] < 2 ** ol.modifiers.get("cbsz", 0)
    assert ol.layout == row.layout(ol.operand, wave_size=ol.wave_size, **ol.modifiers)
    assert ol.layout.covers() and ol.layout.inverse().inverse() == ol.layout
    assert dict(ol.layout.in_dims)["lane"] == ol.wave_size


@FAST
@given(operand_layouts(arch="gfx1100", operand="A"))
def test_operand_layouts_filter(ol) -> None:
    assert ol.operand == "A" and ol.target.name == "gfx1100" and ol.modifiers == {}
    copies = ol.wave_size // 16  # RDNA3 keeps A in lanes i and i+16 (and i+32, i+48 in wave64)
    assert ol.layout.replication()["copies"] == {copies: ol.layout.out_size}


# ----------------------------------------------------------------------------------- layouts
@pytest.mark.parametrize("bijective", [None, True, False])
@pytest.mark.parametrize("linear", [None, True, False])
def test_layouts_honour_bijective_and_linear(bijective: bool | None, linear: bool | None) -> None:
    @settings(max_examples=25, deadline=None)
    @given(layouts(bijective=bijective, linear=linear, max_in=32, max_out=48))
    def check(lay: Layout) -> None:
        assert lay.in_size <= 32 and lay.out_size <= 48
        if bijective is not None:
            assert _bijective(lay) == bijective
        if linear is not None:
            assert lay.is_linear() == linear
        if linear:  # the bases reproduce the map (XOR of the set bits' images)
            assert Layout.from_bases(lay.in_dims, lay.out_dims, lay.bases) == lay
        if bijective:
            assert lay.in_size == lay.out_size and lay.inverse().is_function()

    check()


@FAST
@given(layouts(in_dims={"lane": 8, "slot": 4}, out_dims={"row": 4, "col": 8}, bijective=True, elem_bits=16))
def test_layouts_with_fixed_dims_are_fragment_permutations(lay: Layout) -> None:
    assert lay.in_dims == (("lane", 8), ("slot", 4)) and lay.out_dims == (("row", 4), ("col", 8))
    assert len(lay.locations()) == 32 and lay.elem_bits == 16


def test_layouts_reach_every_kind() -> None:
    seen: set[str] = set()

    @settings(max_examples=50, deadline=None, derandomize=True)  # a coverage claim: the same draws every run
    @given(layouts(max_in=16, max_out=16))
    def collect(lay: Layout) -> None:
        kind = ("bijection" if _bijective(lay) else "linear" if lay.is_linear() else
                "function" if lay.is_function() and lay.is_total() else "relation")
        seen.add(kind)

    collect()
    assert seen == {"linear", "bijection", "function", "relation"}


def test_layouts_reject_impossible_requests() -> None:
    with pytest.raises(InvalidArgument, match="power-of-two"):
        layouts(linear=True, in_dims={"lane": 6})
    with pytest.raises(InvalidArgument, match="as many hardware positions"):
        layouts(bijective=True, in_dims={"lane": 4}, out_dims={"row": 8})
    with pytest.raises(InvalidArgument, match="max_in"):
        layouts(max_in=0)


@FAST
@given(invalid_layout_specs())
def test_invalid_layout_specs_raise_layout_error(spec) -> None:
    with pytest.raises(LayoutError) as e:
        spec.build()
    assert str(e.value), spec.problem


# ----------------------------------------------------------------------------------- matrices
@pytest.mark.parametrize("name", ["f32", "xf32", "f16", "bf16", "fp8_fnuz", "fp8_ocp", "bf8_ocp", "fp6", "fp4",
                                  "i8", "u4", "e8m0"])
def test_matrices_hold_representable_values(name: str) -> None:
    from tilesim.matrix.dtypes import dtype

    d = dtype(name)

    @settings(max_examples=15, deadline=None)
    @given(matrices(name, st.tuples(st.integers(1, 4), st.integers(1, 5)), edge_values=True))
    def check(a: np.ndarray) -> None:
        assert a.dtype == d.np and a.ndim == 2
        x = a.astype(np.float64)
        q = quantize(x, name)
        same = (q == x) | (np.isnan(q) & np.isnan(x))
        assert same.all(), x[~same]

    check()

    @settings(max_examples=15, deadline=None)
    @given(matrices(name, (3, 3), max_abs=4))
    def regular(a: np.ndarray) -> None:
        x = a.astype(np.float64)
        assert np.isfinite(x).all() and (np.abs(x) <= 4).all() and not np.signbit(x[x == 0]).any()

    regular()


def test_matrices_edge_values_include_the_formats_specials() -> None:
    assert np.isnan(edge_values_of("fp8_fnuz")[-1]) and -0.0 not in [v for v in edge_values_of("fp8_fnuz")
                                                                        if np.signbit(v)]
    assert float("inf") in edge_values_of("bf8_ocp") and float("inf") not in edge_values_of("fp8_ocp")
    assert not any(np.isnan(v) or np.isinf(v) for v in edge_values_of("fp4"))
    assert edge_values_of("i4") == (-8.0, -1.0, 0.0, 1.0, 7.0)
    seen: set[str] = set()

    @settings(max_examples=40, deadline=None, derandomize=True)
    @given(matrices("bf8_ocp", (4, 4), edge_values=True))
    def collect(a: np.ndarray) -> None:
        x = a.astype(np.float64)
        seen.update(k for k, hit in (("nan", np.isnan(x).any()), ("inf", np.isinf(x).any()),
                                     ("-0", (np.signbit(x) & (x == 0)).any())) if hit)

    collect()
    assert seen == {"nan", "inf", "-0"}


# ----------------------------------------------------------------------------------- tile programs
@settings(max_examples=15, deadline=None)
@given(tile_programs())
def test_tile_programs_are_valid(prog: ts.Program) -> None:
    rep = ts.check(prog)
    assert rep.ok, rep
    (mma,) = [op for op in prog.walk() if op.kind == "mma"]
    row = lookup(mma.attr("instr"), prog.target)
    assert row.blocks == 1 and not row.sparse and prog.wave_size in row.wave_sizes
    M, K = prog.tensor("A").shape
    assert M % row.m == 0 and K % row.k == 0 and prog.tensor("C").output
    assert ts.Program.from_json(prog.to_json()) == prog


@settings(max_examples=20, deadline=None)
@given(tile_cases())
def test_tile_cases_simulate_to_their_expected_output(case) -> None:
    out = ts.simulate(case.program, **case.inputs)
    np.testing.assert_array_equal(np.asarray(out["C"], np.float64), case.expected["C"])


@settings(max_examples=10, deadline=None)
@given(tile_programs(arch="gfx1201", epilogue=True, max_tiles=1))
def test_tile_programs_filters_and_epilogue(prog: ts.Program) -> None:
    assert prog.target == "gfx1201" and prog.grid == (1, 1)
    assert any(op.kind == "elementwise" for op in prog.walk())


# ----------------------------------------------------------------------------------- assertions
RDNA3_D = lookup("v_wmma_f32_16x16x16_f16", "gfx1100").layout("D", wave_size=32)
RDNA4_D = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("D")


def test_assert_layout_equal_passes_for_equal_layouts() -> None:
    assert_layout_equal(RDNA3_D, lookup("v_wmma_f32_16x16x16_f16", "gfx1101").layout("D", wave_size=32))
    assert_layout_equal(RDNA3_D, RDNA3_D.inverse().inverse())


def test_assert_layout_equal_names_lane_vgpr_and_bits() -> None:
    with pytest.raises(AssertionError) as e:
        assert_layout_equal(RDNA4_D, RDNA3_D)
    msg = str(e.value)
    # (row 1, col 0): RDNA4 keeps rows 0-7 in lanes 0-15, VGPR = row; RDNA3 interleaves row = 2*v + lane/16
    assert "(block 0, row 1, col 0): actual at lane 0, VGPR 1, bits 0-31 | expected at lane 16, VGPR 0, bits 0-31" in msg
    assert "hardware i = lane / 16 + slot * 2, program i = slot + (lane / 16) * 8" in msg  # compare_layouts' pattern
    assert "elements have different owners" in msg


def test_assert_layout_equal_reports_replicas_widths_and_dims() -> None:
    a = lookup("v_wmma_f32_16x16x16_f16", "gfx1100").layout("A", wave_size=32)
    half = Layout.from_pairs(a.in_dims, a.out_dims, *(x[a.pairs()[0][:, 0] < 16] for x in a.pairs()),
                             elem_bits=a.elem_bits)
    with pytest.raises(AssertionError, match=r"expected at lane 0, VGPR 0, bits 0-15; lane 16, VGPR 0, bits 0-15"):
        assert_layout_equal(half, a, operand="A")
    with pytest.raises(AssertionError, match="elem_bits differ: 16 vs 32"):
        assert_layout_equal(RDNA3_D.with_elem_bits(16), RDNA3_D)
    with pytest.raises(AssertionError, match="dims differ"):
        assert_layout_equal(RDNA3_D, RDNA3_D.rename(slot="vgpr"))


def test_assert_layout_equal_survives_elements_the_expected_layout_lacks() -> None:
    """An actual layout over a bigger tile: compare_layouts has no hardware element to blame."""
    hw, lg = RDNA3_D.pairs()
    big = Layout.from_pairs(RDNA3_D.in_dims, (("block", 1), ("row", 32), ("col", 16)),
                            np.concatenate([hw, [[0, 0]]]), np.concatenate([lg, [[0, 20, 0]]]), elem_bits=32)
    small = Layout.from_pairs(big.in_dims, big.out_dims, hw, lg, elem_bits=32)
    with pytest.raises(AssertionError, match=r"\(block 0, row 20, col 0\): actual at lane 0, VGPR 0, bits 0-31 \| "
                                             r"expected at nowhere"):
        assert_layout_equal(big, small)


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_assert_layout_equal_on_random_layouts(data: st.DataObject) -> None:
    dims = {"in_dims": {"lane": 4, "slot": 2}, "out_dims": {"row": 2, "col": 4}, "elem_bits": 16}
    a, b = data.draw(layouts(**dims)), data.draw(layouts(**dims))
    assert_layout_equal(a, a)
    if a == b:
        assert_layout_equal(a, b)
        return
    with pytest.raises(AssertionError, match=r"elements have different owners; first:\n    \((row|col) "):
        assert_layout_equal(a, b)


def test_assert_equivalent_passes_across_targets() -> None:
    rdna3 = gemm.specialize(target="gfx1100", M=16, N=32, K=32)
    rdna4 = gemm.specialize(target="gfx1201", M=16, N=32, K=32)
    res = assert_equivalent(rdna3, rdna4, max_lines=4)
    assert res.equal and res.runs == 4 * 4 + 3 + 2  # 4 rows and 4 columns of A and of B, 3 random, 2 wide


def test_assert_equivalent_fails_with_the_differing_element() -> None:
    good = gemm.specialize(target="gfx1100", M=16, N=32, K=32)
    planted = gemm.specialize(target="gfx1100", M=16, N=32, K=32, c_layout=RDNA4_D)  # an RDNA3 port bug
    with pytest.raises(AssertionError) as e:
        assert_equivalent(good, planted, max_lines=4)
    msg = str(e.value)
    assert "gemm on gfx1100 (wave32) and gemm on gfx1100 (wave32) are not equivalent" in msg
    assert "C[" in msg and "elements differ" in msg


# ----------------------------------------------------------------------------------- plugin
GPU_TESTS = textwrap.dedent("""
    import pytest

    @pytest.mark.tilesim_gpu
    def test_any_gpu(tilesim_device):
        assert tilesim_device.vendor in ("cuda", "amd")

    @pytest.mark.tilesim_gpu("amd")
    def test_amd_only(tilesim_device):
        assert tilesim_device.vendor == "amd"

    def test_plain():
        pass
""")


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import tilesim.hw.amd
    import tilesim.hw.nvidia

    monkeypatch.setattr(tilesim.hw.nvidia, "cuda_device", lambda: (None, "no CUDA runtime: CuPy is not installed"))
    monkeypatch.setattr(tilesim.hw.amd, "amd_device", lambda: (False, "no AMD runtime: hip-python is not installed"))


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_gpu=GPU_TESTS)
    return pytester.runpytest("-rs", *args)  # in-process: the entry point loads tilesim.testing.plugin


def test_plugin_skips_gpu_tests_without_a_device(pytester: pytest.Pytester, no_gpu: None) -> None:
    res = _run(pytester)
    res.assert_outcomes(passed=1, skipped=2)
    res.stdout.fnmatch_lines(["*no GPU usable (cuda: no CUDA runtime: CuPy is not installed; amd: no AMD runtime*",
                              "*no amd GPU usable (amd: no AMD runtime: hip-python is not installed)*"])


def test_plugin_device_none_always_skips(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    import tilesim.hw.nvidia

    monkeypatch.setattr(tilesim.hw.nvidia, "cuda_device", lambda: (90, "NVIDIA H200"))  # present, but not asked for
    res = _run(pytester, "--tilesim-device", "none")
    res.assert_outcomes(passed=1, skipped=2)
    res.stdout.fnmatch_lines(["*GPU test skipped: --tilesim-device none*"])


def test_plugin_runs_gpu_tests_on_a_found_device(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                 no_gpu: None) -> None:
    import tilesim.hw.nvidia

    monkeypatch.setattr(tilesim.hw.nvidia, "cuda_device", lambda: (90, "NVIDIA H200"))
    _run(pytester).assert_outcomes(passed=2, skipped=1)  # the AMD-only test still skips


def test_plugin_named_device_that_is_absent_is_an_error(pytester: pytest.Pytester, no_gpu: None) -> None:
    res = _run(pytester, "--tilesim-device", "cuda")
    res.assert_outcomes(passed=1, skipped=1, errors=1)  # amd-only: skipped, "needs a amd GPU"
    res.stdout.fnmatch_lines(["*--tilesim-device cuda was given, but no cuda device is usable*"])


def test_plugin_registers_option_and_marker(pytester: pytest.Pytester) -> None:
    pytester.runpytest("--help").stdout.fnmatch_lines(["*--tilesim-device={auto,none,cuda,amd}*"])
    pytester.runpytest("--markers").stdout.fnmatch_lines(["@pytest.mark.tilesim_gpu(vendor=None)*"])


def test_public_names_resolve_and_the_plugin_needs_no_hypothesis() -> None:
    import subprocess
    import sys

    import tilesim.testing

    for name in tilesim.testing.__all__:
        assert getattr(tilesim.testing, name) is not None
    code = ("import sys, tilesim.testing.plugin, tilesim.testing; "
            "assert 'hypothesis' not in sys.modules, 'the plugin imported hypothesis'")
    subprocess.run([sys.executable, "-c", code], check=True)
