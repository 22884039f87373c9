"""Scaled MFMA in tile programs: the MXFP8/MXFP4 examples, checked, simulated, emitted, compiled.

References are float64 numpy products of values decoded here from the OCP spec tables
(tests/_bitcodecs.py: e4m3, e2m1, E8M0); the examples' own ml_dtypes decoding is only cross-checked
against them. The scale placement a program must use is the formula from docs/catalog.md (lane
``r + M*kb``, byte ``opsel``), written here as a hand-built layout.
"""

import re

import numpy as np
import pytest

import tilesim as ts
from examples import mxfp4_gemm, mxfp8_gemm
from tests import _bitcodecs as spec
from tilesim.codegen import emit_hip
from tilesim.errors import ToolchainError, VerifyError
from tilesim.layouts import Layout
from tilesim.matrix import lookup
from tilesim.matrix.numerics import tolerance

MODULES = {"mxfp8_gemm": (mxfp8_gemm, "fp8_ocp"), "mxfp4_gemm": (mxfp4_gemm, "fp4")}
CASES = [pytest.param(name, i, id=f"{name}-{i}") for name, (mod, _) in MODULES.items()
         for i in range(len(mod.programs()))]


def _raw(prog, fmt: str, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
    codes = np.arange(1 << spec.FORMATS[fmt].bits)
    ok = codes[np.isfinite(spec.decode(codes, fmt))]
    return {"A": rng.choice(ok, (M, K)), "B": rng.choice(ok, (K, N)),
            "SA": rng.integers(120, 135, (M, K // 32)), "SB": rng.integers(120, 135, (K // 32, N))}


def _spec_values(raw: dict[str, np.ndarray], fmt: str) -> dict[str, np.ndarray]:
    return {n: spec.decode(v, "e8m0" if n.startswith("S") else fmt) for n, v in raw.items()}


def _reference(v: dict[str, np.ndarray]) -> np.ndarray:
    kb = np.arange(v["A"].shape[1]) // 32  # k-block of each k
    return (v["A"] * v["SA"][:, kb]) @ (v["B"] * v["SB"][kb, :])


@pytest.mark.parametrize(("name", "i"), CASES)
def test_mx_example_matches_a_float64_reference_from_the_spec_decoders(name, i) -> None:
    mod, fmt = MODULES[name]
    prog = mod.programs()[i]
    rep = ts.check(prog)
    assert rep.ok, str(rep)
    raw = _raw(prog, fmt, seed=i)
    vals = _spec_values(raw, fmt)
    # the example's ml_dtypes decoding agrees with the spec decoders (a cross-check, not the oracle)
    ex = mod.decode({n: r.astype(np.uint8) for n, r in raw.items()})
    assert all(np.array_equal(ex[n], vals[n]) for n in vals)
    got = ts.simulate(prog, **vals)["C"]
    ref = _reference(vals)
    row = lookup(next(op.attr("instr") for op in prog.walk() if op.kind == "mma_scaled"), prog.target)
    rtol, atol = tolerance(row, k_terms=ref.shape[0])
    mag = _reference({n: np.abs(v) for n, v in vals.items()})
    assert (np.abs(got - ref) <= rtol * mag + atol).all()
    # and the examples' own inputs/reference agree with each other the same way
    arrays = mod.inputs(prog, seed=1)
    np.testing.assert_allclose(ts.simulate(prog, **arrays)["C"], mod.reference(**arrays)["C"], rtol=1e-5, atol=1e-6)


def test_one_scale_probe_moves_one_row_block() -> None:
    """Everything 1.0, then one scale of A doubled: only its row, by exactly its 32 k."""
    prog = mxfp8_gemm.programs()[0]
    (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
    ones = {"A": np.ones((M, K)), "B": np.ones((K, N)), "SA": np.ones((M, K // 32)), "SB": np.ones((K // 32, N))}
    base = ts.simulate(prog, **ones)["C"]
    assert np.all(base == K)
    probe = dict(ones, SA=ones["SA"].copy())
    probe["SA"][5, 3] = 2.0
    moved = ts.simulate(prog, **probe)["C"]
    assert np.all(moved[5] == K + 32) and np.array_equal(np.delete(moved, 5, 0), np.delete(base, 5, 0))


def _scale_program(sa_layout: str, sel: int = 0):
    @ts.kernel
    def k(A: ts.Tensor["fp8_ocp", "M", "K"], SA: ts.Tensor["e8m0", "M", "KB"], B: ts.Tensor["fp8_ocp", "K", "N"],
          SB: ts.Tensor["e8m0", "KB", "N"], C: ts.Tensor["f32", "M", "N"], *, mma="v_mfma_scale_f32_16x16x128_f8f6f4"):
        op = ts.mma_op(mma)
        acc = ts.zeros(op.layout("C"), "f32")
        a, b = ts.load(A[0:, 0:], op.layout("A")), ts.load(B[0:, 0:], op.layout("B"))
        if sa_layout == "transposed":  # lane = kb + 4*i: the scale tile read row-major across lanes (wrong)
            lay = Layout.from_logical({"lane": 64, "slot": 4}, {"row": 16, "col": 4},
                                      lambda row, col: {"lane": 4 * row + col, "slot": 0 * row}, elem_bits=8)
        else:
            lay = op.layout("SA", opsel_a=sel)
        sa = ts.load(SA[0:, 0:], lay)
        sb = ts.load(SB[0:, 0:], op.layout("SB"))
        ts.store(C[0:, 0:], ts.mma(op, a, b, acc, scale_a=sa, scale_b=sb))

    return k.specialize(target="gfx950", M=16, N=16, K=128, KB=4)


def test_check_names_a_wrong_scale_layout_and_the_simulator_shows_its_answer() -> None:
    good, bad = _scale_program("hw"), _scale_program("transposed")
    assert ts.check(good).ok
    rep = ts.check(bad)
    assert not rep.ok and any("SA" in f.where for f in rep.findings), str(rep)
    rng = np.random.default_rng(3)
    vals = {"A": np.ones((16, 128)), "B": np.ones((128, 16)), "SB": np.ones((4, 16)),
            "SA": 2.0 ** rng.integers(-3, 4, (16, 4))}
    ref = _reference(vals)
    assert np.array_equal(ts.simulate(good, **vals)["C"], ref)
    assert not np.array_equal(ts.simulate(bad, **vals)["C"], ref)  # the hardware reads other lanes' scales


def test_a_scale_byte_the_mma_does_not_read_is_a_check_error() -> None:
    prog = _scale_program("hw", sel=2)  # loaded into byte 2, the mma reads byte 0 (opsel_a=0)
    rep = ts.check(prog)
    assert not rep.ok and any("SA" in f.where for f in rep.findings), str(rep)


def test_scaled_instruction_needs_scales_and_scales_need_a_scaled_instruction() -> None:
    @ts.kernel
    def plain(A: ts.Tensor["fp8_ocp", "M", "K"], B: ts.Tensor["fp8_ocp", "K", "N"], C: ts.Tensor["f32", "M", "N"],
              *, mma="v_mfma_scale_f32_16x16x128_f8f6f4"):
        op = ts.mma_op(mma)
        acc = ts.zeros(op.layout("C"), "f32")
        a, b = ts.load(A[0:, 0:], op.layout("A")), ts.load(B[0:, 0:], op.layout("B"))
        ts.store(C[0:, 0:], ts.mma(op, a, b, acc))

    rep = ts.check(plain.specialize(target="gfx950", M=16, N=16, K=128))
    assert not rep.ok and any("scale_a=" in f.message for f in rep.findings), str(rep)
    with pytest.raises(VerifyError, match="together"):
        @ts.kernel
        def half(A: ts.Tensor["fp8_ocp", "M", "K"], C: ts.Tensor["f32", "M", "N"],
                 *, mma="v_mfma_scale_f32_16x16x128_f8f6f4"):
            op = ts.mma_op(mma)
            acc = ts.zeros(op.layout("C"), "f32")
            a = ts.load(A[0:, 0:], op.layout("A"))
            ts.mma(op, a, a, acc, scale_a=a)

        half.specialize(target="gfx950", M=16, N=16, K=128)


@pytest.mark.compiler
def test_mxfp8_compiles_to_the_scaled_instruction_with_the_byte_selects() -> None:
    offline = pytest.importorskip("tilesim.hw.offline")
    progs = mxfp8_gemm.programs()
    want = {0: ("v_mfma_scale_f32_16x16x128_f8f6f4", (0, 0)), 1: ("v_mfma_scale_f32_32x32x64_f8f6f4", (0, 0)),
            2: ("v_mfma_scale_f32_16x16x128_f8f6f4", (3, 1))}
    for i, prog in enumerate(progs):
        try:
            isa = offline.compile_hip(emit_hip(prog).source, prog.target, wave_size=prog.wave_size).isa
        except ToolchainError as e:  # pragma: no cover
            pytest.skip(str(e))
        lines = [ln.strip() for ln in isa.splitlines() if re.match(r"\s*v_mfma", ln)]
        mnemonic, (sa, sb) = want[i]
        assert lines and all(ln.startswith(mnemonic + " ") for ln in lines), lines
        lo = re.search(r"op_sel:\[(\d),(\d),0\]", lines[0])
        hi = re.search(r"op_sel_hi:\[(\d),(\d),0\]", lines[0])
        lo_b = tuple(map(int, lo.groups())) if lo else (0, 0)
        hi_b = tuple(map(int, hi.groups())) if hi else (0, 0)
        assert (lo_b[0] + 2 * hi_b[0], lo_b[1] + 2 * hi_b[1]) == (sa, sb), lines[0]


@pytest.mark.compiler
def test_mxfp8_runs_in_the_emulator_and_matches() -> None:
    pytest.importorskip("tilesim.hw.offline")
    prog = mxfp8_gemm.programs()[2]  # the byte-3 / byte-1 program
    arrays = mxfp8_gemm.inputs(prog)
    try:
        res = ts.run(prog, device="emulator", reference=mxfp8_gemm.reference(**arrays), **arrays)
    except ToolchainError as e:  # pragma: no cover
        pytest.skip(str(e))
    assert res.status == "EMULATED_MATCH", res.reason
