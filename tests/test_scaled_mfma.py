"""gfx950 scaled MFMA: the block-scale operands SA/SB, E8M0, and the scaled numerics.

Expected values are written here from the sources, not read from the code under test:

* scale placement (Triton ``chooseScaledMfmaScaleLayout`` lane bases; Modular's CDNA4
  ``BlockScaledMmaOp``): the scale of A's row ``i`` and k-block ``kb`` (k in ``[32kb, 32kb+32)``)
  is in lane ``i + M*kb``; B's column ``j``, k-block ``kb`` in lane ``j + N*kb``; the byte of the
  32-bit scale VGPR is the builtin's ``opsel`` (MLIR ``amdgpu.scaled_mfma`` scalesIdx);
* the op_sel encoding: clang's ISA text for the builtin (compiler truth, below);
* E8M0 values: the OCP MX table in tests/_bitcodecs.py (ml_dtypes only as a cross-check);
* numerics: a float64 reference ``(A*2^(sa-127)) @ (B*2^(sb-127)) + C`` from decoded values.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

from tests import _bitcodecs as spec
from tilesim.errors import ModifierError, ToolchainError
from tilesim.matrix.catalog import lookup
from tilesim.matrix.numerics import execute_scaled, format_types
from tilesim.matrix.scale import decode_scale

SCALED = [("v_mfma_scale_f32_16x16x128_f8f6f4", 16, 128), ("v_mfma_scale_f32_32x32x64_f8f6f4", 32, 64)]


def _scale_bits(row, op: str, regs: np.ndarray, sel: int) -> np.ndarray:
    """Gather the scale matrix through the row's layout records from a uint32[lane] register image."""
    lay = row.layout(op, **{"opsel_a" if op == "SA" else "opsel_b": sel})
    rec = lay.location_array()
    dims = dict(lay.out_dims)
    out = np.full((dims["row"], dims["col"]), -1, np.int64)
    out[rec[:, 1], rec[:, 2]] = (regs[rec[:, 4]] >> rec[:, 5].astype(np.uint32)) & 0xFF
    return out


@pytest.mark.parametrize(("mnemonic", "m", "k"), SCALED)
@pytest.mark.parametrize("sel", [0, 1, 2, 3])
def test_scale_lanes_and_bytes_match_the_formula_one_hot(mnemonic, m, k, sel) -> None:
    """Probe every (lane, byte) alone: exactly the (row, k-block) the formula names reads it."""
    row = lookup(mnemonic, "gfx950")
    for op in ("SA", "SB"):
        for lane in range(64):
            for byte in range(4):
                regs = np.zeros(64, np.uint32)
                regs[lane] = np.uint32(0x80) << np.uint32(8 * byte)
                got = _scale_bits(row, op, regs, sel)
                hot = np.argwhere(got == 0x80)
                if byte != sel:
                    assert hot.size == 0, (op, lane, byte)
                    continue
                r, kb = lane % m, lane // m  # the formula: lane = r + M*kb, byte = opsel
                want = [[r, kb]] if op == "SA" else [[kb, r]]
                assert hot.tolist() == want, (op, lane, byte)


@pytest.mark.parametrize(("mnemonic", "m", "k"), SCALED)
def test_scale_operands_are_rows_operands_with_one_vgpr(mnemonic, m, k) -> None:
    row = lookup(mnemonic, "gfx950")
    assert row.scale_operands == ("SA", "SB") and row.operands[-2:] == ("SA", "SB")
    assert row.registers_for()["SA"] == row.registers_for()["SB"] == 1
    sa = row.layout("SA")
    assert dict(sa.out_dims) == {"block": 1, "row": m, "col": k // 32} and sa.is_injective() and sa.covers()
    assert dict(row.layout("SB").out_dims) == {"block": 1, "row": k // 32, "col": m}
    # the unscaled mnemonic has no scale operands
    assert lookup(mnemonic.replace("scale_", ""), "gfx950").scale_operands == ()


def test_scale_select_is_checked() -> None:
    row = lookup("v_mfma_scale_f32_16x16x128_f8f6f4", "gfx950")
    with pytest.raises(ModifierError, match="opsel_a=4"):
        row.layout("SA", opsel_a=4)
    with pytest.raises(ModifierError, match="no OPSEL_A"):
        lookup("v_mfma_f32_16x16x128_f8f6f4", "gfx950").layout("A", opsel_a=1)
    with pytest.raises(ModifierError, match="scale operands: none"):
        lookup("v_mfma_f32_16x16x128_f8f6f4", "gfx950").scale("SA")


# ------------------------------------------------------------------------------------ E8M0
def test_e8m0_decoder_matches_the_spec_table_and_ml_dtypes() -> None:
    pats = np.arange(256)
    got = decode_scale(pats)
    want = spec.decode(pats, "e8m0")
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.isnan(got[255]) and np.isnan(got).sum() == 1
    assert np.array_equal(got[:255], want[:255])
    assert got[0] == 2.0**-127 and got[127] == 1.0 and got[254] == 2.0**127  # 0 is 2^-127, not zero
    cross = pats.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
    assert np.array_equal(cross[:255], got[:255])


def test_e8m0_refuses_non_bytes() -> None:
    with pytest.raises(ModifierError, match="bytes"):
        decode_scale(np.array([256]))


# ------------------------------------------------------------------------------------ numerics
FORMATS = {0: "fp8_ocp", 1: "bf8_ocp", 2: "fp6", 3: "bf6", 4: "fp4"}  # CBSZ/BLGP codes (LLVM test header)


def _random_patterns(rng, fmt: str, shape) -> np.ndarray:
    f = spec.FORMATS[fmt]
    pats = rng.integers(0, 1 << f.bits, shape)
    return np.where(np.isfinite(spec.decode(pats, fmt)), pats, 0)  # finite values only


@pytest.mark.parametrize(("mnemonic", "m", "k"), SCALED)
@pytest.mark.parametrize(("cbsz", "blgp"), [(0, 0), (4, 4), (0, 4), (1, 2), (3, 0)])
def test_scaled_dot_matches_a_float64_reference(mnemonic, m, k, cbsz, blgp) -> None:
    row = lookup(mnemonic, "gfx950")
    rng = np.random.default_rng(cbsz * 8 + blgp + m)
    a = spec.decode(_random_patterns(rng, FORMATS[cbsz], (m, k)), FORMATS[cbsz])
    b = spec.decode(_random_patterns(rng, FORMATS[blgp], (k, m)), FORMATS[blgp])
    c = rng.normal(size=(m, m)).astype(np.float32).astype(np.float64)
    sa, sb = rng.integers(118, 136, (m, k // 32)), rng.integers(118, 136, (k // 32, m))
    got = execute_scaled(row, a, b, c, sa, sb, cbsz=cbsz, blgp=blgp)
    # the reference: each 32-k block of row i of A times 2^(sa[i][kb]-127), of column j of B times 2^(sb[kb][j]-127)
    kb = np.arange(k) // 32
    ref = (a * 2.0 ** (sa[:, kb] - 127)) @ (b * 2.0 ** (sb[kb, :].astype(np.float64) - 127)) + c
    assert np.allclose(got, ref, rtol=2**-22, atol=0)
    assert got.dtype == np.float64 and np.array_equal(got, got.astype(np.float32).astype(np.float64))  # f32 values
    assert format_types(row, cbsz, blgp)[:2] == (row.recipe("A").dtype(cbsz), row.recipe("B").dtype(blgp))


def test_one_scale_moves_exactly_its_32_k_block() -> None:
    """A one-hot scale probe in value space: doubling SA[i][kb] doubles only row i's k-block kb."""
    row = lookup("v_mfma_scale_f32_16x16x128_f8f6f4", "gfx950")
    a = np.zeros((16, 128))
    b = np.ones((128, 16))
    a[3, :] = 1.0  # row 3: every k contributes 1
    sa, sb = np.full((16, 4), 127), np.full((4, 16), 127)
    base = execute_scaled(row, a, b, None, sa, sb, cbsz=4, blgp=4)
    assert np.all(base[3] == 128.0)
    sa[3, 2] = 128  # 2.0 for k in [64, 96)
    moved = execute_scaled(row, a, b, None, sa, sb, cbsz=4, blgp=4)
    assert np.all(moved[3] == 128.0 + 32.0) and np.array_equal(np.delete(moved, 3, 0), np.delete(base, 3, 0))


def test_nan_scale_and_minimum_scale() -> None:
    row = lookup("v_mfma_scale_f32_32x32x64_f8f6f4", "gfx950")
    a, b = np.ones((32, 64)), np.ones((64, 32))
    sa, sb = np.full((32, 2), 127), np.full((2, 32), 127)
    sa[5, 1] = 255  # NaN scale: the block's products are NaN, so row 5 is NaN
    d = execute_scaled(row, a, b, None, sa, sb)
    assert np.isnan(d[5]).all() and not np.isnan(np.delete(d, 5, 0)).any()
    zero_scale = execute_scaled(row, a, b, None, np.zeros((32, 2), int), np.zeros((2, 32), int))
    assert np.all(zero_scale == 0.0)  # 64 * 2^-254 underflows f32 to 0 after one rounding


def test_scaled_inputs_are_checked() -> None:
    row = lookup("v_mfma_scale_f32_16x16x128_f8f6f4", "gfx950")
    a, b = np.zeros((16, 128)), np.zeros((128, 16))
    with pytest.raises(ModifierError, match=r"SA .*shape \(16, 3\).*expected \(16, 4\)"):
        execute_scaled(row, a, b, None, np.zeros((16, 3), int), np.zeros((4, 16), int))
    with pytest.raises(ModifierError, match="bit patterns"):
        execute_scaled(row, a, b, None, np.ones((16, 4)), np.zeros((4, 16), int))
    with pytest.raises(ModifierError, match="cbsz=5"):
        execute_scaled(row, a, b, None, np.zeros((16, 4), int), np.zeros((4, 16), int), cbsz=5)


# ------------------------------------------------------------------------------------ compiler truth
_TYPEDEFS = ("typedef int v8i __attribute__((ext_vector_type(8)));\n"
             "typedef float v4f __attribute__((ext_vector_type(4)));\n"
             "typedef float v16f __attribute__((ext_vector_type(16)));\n")


def _kernel(name: str, acc: str, builtin_call: str) -> str:
    return (f'extern "C" __attribute__((global)) void {name}(v8i* a, v8i* b, {acc}* c, int* s) {{\n'
            f"  int t = __builtin_amdgcn_workitem_id_x();\n  c[t] = {builtin_call};\n}}\n")


@pytest.mark.compiler
@pytest.mark.parametrize(("mnemonic", "m", "k"), SCALED)
def test_the_compiler_encodes_the_scale_byte_as_op_sel_and_op_sel_hi(mnemonic, m, k) -> None:
    offline = pytest.importorskip("tilesim.hw.offline")
    row = lookup(mnemonic, "gfx950")
    acc = "v4f" if m == 16 else "v16f"
    src = _TYPEDEFS + "".join(
        _kernel(f"k{4 * sa + sb}", acc, row.builtin_for(64).call(["a[t]", "b[t]", "c[t]", "s[t]", "s[t + 64]"],
                                                                  {"opsel_a": sa, "opsel_b": sb}))
        for sa in range(4) for sb in range(4))
    try:
        isa = offline.compile_hip(src, "gfx950", wave_size=64).isa
    except ToolchainError as e:  # pragma: no cover - the dev extra installs ziglang
        pytest.skip(f"no AMDGPU clang: {e}")
    lines = [ln.strip() for ln in isa.splitlines() if re.match(r"\s*v_mfma", ln)]
    assert len(lines) == 16 and all(ln.startswith(mnemonic) for ln in lines), lines
    for i, ln in enumerate(lines):
        sa, sb = divmod(i, 4)
        lo = re.search(r"op_sel:\[(\d),(\d),0\]", ln)
        hi = re.search(r"op_sel_hi:\[(\d),(\d),0\]", ln)
        lo_bits = tuple(map(int, lo.groups())) if lo else (0, 0)
        hi_bits = tuple(map(int, hi.groups()))
        # ISA syntax: op_sel[0]/op_sel_hi[0] carry scale_src0's byte, [1] scale_src1's: byte = op_sel + 2*op_sel_hi
        assert lo_bits[0] + 2 * hi_bits[0] == sa and lo_bits[1] + 2 * hi_bits[1] == sb, (i, ln)


@pytest.mark.compiler
def test_literal_zero_scales_select_the_unscaled_instruction() -> None:
    """clang folds the scale builtin with constant 0 scales (and byte 0) into the unscaled mnemonic,
    which applies no scale: a program must not expect 2^-127 from literal-zero scales."""
    offline = pytest.importorskip("tilesim.hw.offline")
    row = lookup("v_mfma_scale_f32_16x16x128_f8f6f4", "gfx950")
    call = row.builtin_for(64).call(["a[t]", "b[t]", "c[t]", "0", "0"], {})
    try:
        isa = offline.compile_hip(_TYPEDEFS + _kernel("k", "v4f", call), "gfx950", wave_size=64).isa
    except ToolchainError as e:  # pragma: no cover
        pytest.skip(f"no AMDGPU clang: {e}")
    lines = [ln.strip() for ln in isa.splitlines() if re.match(r"\s*v_mfma", ln)]
    assert len(lines) == 1 and lines[0].startswith("v_mfma_f32_16x16x128_f8f6f4 "), lines
