"""gfx1250 f8f6f4 fp6/bf6 formats, run against float64 with decoders written from the format specs.

The oracle decodes bit patterns here, from the OCP Microscaling Formats v1.0 spec (§5.3: FP6 E2M3
bias 1, E3M2 bias 3, no Inf/NaN; FP8 E4M3 bias 7, S.1111.111 NaN), not through ml_dtypes or
tilesim. Register images are packed from the sources' formula (comgr + AMD rocjitsu's block-scaled
layout: 32 k per lane group for 6-bit, elements packed densely), not from tilesim's layouts.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from examples import gfx1250_gemm
from tilesim.matrix.catalog import lookup
from tilesim.matrix.registers import execute_registers

T = "gfx1250"


def dec_e2m3(c: int) -> float:
    c = int(c)
    s, e, m = (c >> 5) & 1, (c >> 3) & 3, c & 7
    v = m / 8 if e == 0 else (1 + m / 8) * 2.0 ** (e - 1)
    return -v if s else v


def dec_e3m2(c: int) -> float:
    c = int(c)
    s, e, m = (c >> 5) & 1, (c >> 2) & 7, c & 3
    v = m / 4 * 2.0**-2 if e == 0 else (1 + m / 4) * 2.0 ** (e - 3)
    return -v if s else v


def dec_e4m3(c: int) -> float:
    c = int(c)
    s, e, m = (c >> 7) & 1, (c >> 3) & 15, c & 7
    if e == 15 and m == 7:
        return float("nan")
    v = m / 8 * 2.0**-6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
    return -v if s else v


DEC = {2: (dec_e2m3, 6), 3: (dec_e3m2, 6), 0: (dec_e4m3, 8)}


def test_the_decoders_match_the_spec_tables():
    """OCP MX v1.0 Table: E2M3 max 7.5, min subnormal 0.125; E3M2 max 28, min subnormal 0.0625;
    E4M3 max 448, 0x7F NaN."""
    assert dec_e2m3(0b011111) == 7.5 and dec_e2m3(0b000001) == 0.125 and dec_e2m3(0b101000) == -1.0
    assert dec_e3m2(0b011111) == 28.0 and dec_e3m2(0b000001) == 0.0625 and dec_e3m2(0b001100) == 1.0
    assert dec_e4m3(0x7E) == 448.0 and np.isnan(dec_e4m3(0x7F)) and dec_e4m3(0x38) == 1.0
    # E5M2 max 57344, min subnormal 2**-16; E2M1 max 6, min subnormal 0.5, 0b1010 = -1
    assert dec_e5m2(0x7B) == 57344.0 and dec_e5m2(0x01) == 2.0**-16 and dec_e5m2(0x3C) == 1.0
    assert dec_e2m1(0b0111) == 6.0 and dec_e2m1(0b0001) == 0.5 and dec_e2m1(0b1010) == -1.0


def _pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """codes[r][k] (row r of A, or column r of B) -> (32 lanes, VGPRs) by the sources' formula."""
    block = 16 if bits == 8 else 32
    regs = np.zeros((32, 16 * bits // 8 + 1), np.uint64)
    for r in range(codes.shape[0]):
        for k in range(codes.shape[1]):
            lane, bit = r + 16 * ((k // block) % 2), bits * ((k // (2 * block)) * block + k % block)
            v = int(codes[r, k]) << (bit % 32)  # may cross into the next VGPR (6-bit elements)
            regs[lane, bit // 32] |= np.uint64(v & 0xFFFFFFFF)
            regs[lane, bit // 32 + 1] |= np.uint64(v >> 32)
    return regs[:, :-1].astype(np.uint32)


def _codes(rng, code: int, shape) -> np.ndarray:
    if code == 0:  # fp8: values of magnitude <= 4, no NaN (keeps the float64 sum exact)
        ok = [b for b in range(256) if abs(dec_e4m3(b)) <= 4.0]
        return rng.choice(np.array(ok, np.uint8), shape)
    return rng.integers(0, 64, shape).astype(np.uint8)  # every 6-bit pattern is a number


@pytest.mark.parametrize(("fa", "fb"), [(2, 3), (3, 2), (2, 0), (0, 3)], ids=["fp6xbf6", "bf6xfp6", "fp6xfp8", "fp8xbf6"])
def test_fp6_registers_run_against_a_float64_reference(fa, fb):
    """Hand-packed registers -> the row's execute -> D (lane j + 16*(i//8), VGPR i%8) == float64."""
    row = lookup("v_wmma_f32_16x16x128_f8f6f4", T)
    rng = np.random.default_rng(10 * fa + fb)
    ca, cb = _codes(rng, fa, (16, 128)), _codes(rng, fb, (128, 16))
    (da, ba), (db, bb) = DEC[fa], DEC[fb]
    A = np.vectorize(da)(ca).astype(np.float64)
    B = np.vectorize(db)(cb).astype(np.float64)
    C = rng.integers(-8, 9, (16, 16)).astype(np.float64)
    c_regs = np.zeros((32, 8), np.uint32)
    for i in range(16):
        for j in range(16):
            c_regs[j + 16 * (i // 8), i % 8] = np.float32(C[i, j]).view(np.uint32)
    a_regs, b_regs = _pack(ca, ba), _pack(cb.T, bb)
    assert a_regs.shape[1] == {6: 12, 8: 16}[ba]
    d_regs = execute_registers(row, a_regs, b_regs, c_regs, cbsz=fa, blgp=fb)
    D = np.array([[d_regs[j + 16 * (i // 8), i % 8].view(np.float32) for j in range(16)] for i in range(16)],
                 np.float64)
    np.testing.assert_array_equal(D, (A @ B + C).astype(np.float32).astype(np.float64))


def test_the_fp6_tile_program_matches_float64():
    prog = gfx1250_gemm.fp6_programs()[0]
    assert ts.check(prog).ok, str(ts.check(prog))
    rng = np.random.default_rng(7)
    (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
    A = np.vectorize(dec_e2m3)(rng.integers(0, 64, (M, K))).astype(np.float32)
    B = np.vectorize(dec_e3m2)(rng.integers(0, 64, (K, N))).astype(np.float32)
    got = np.asarray(ts.simulate(prog, A=A, B=B)["C"], np.float64)
    want = A.astype(np.float64) @ B.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2.0**-22, atol=2.0**-22 * np.abs(want).max())
    # one-hot rows of A: row i reads k = (7*i + 5) % K, so D's row i is B's row k — which k each lane read
    A1 = (np.arange(K)[None, :] == (7 * np.arange(M)[:, None] + 5) % K).astype(np.float32)
    got = np.asarray(ts.simulate(prog, A=A1, B=B)["C"], np.float64)
    np.testing.assert_array_equal(got, A1.astype(np.float64) @ B.astype(np.float64))


def _isa_lines(prog, mnemonic: str) -> tuple[str, list[str]]:
    """(the program's gfx1250 ISA from the offline clang, its lines that hold ``mnemonic``)."""
    from tilesim.codegen.hip import emit_hip
    from tilesim.errors import ToolchainError
    from tilesim.hw.offline import compile_hip

    try:
        isa = compile_hip(emit_hip(prog).source, T, wave_size=32).isa
    except ToolchainError as e:  # pragma: no cover - the dev extra installs ziglang
        pytest.skip(f"no AMDGPU clang: {e}")
    return isa, [ln for ln in isa.splitlines() if mnemonic in ln]


@pytest.mark.compiler
def test_the_fp6_tile_program_compiles_to_the_fp6_formats():
    _, lines = _isa_lines(gfx1250_gemm.fp6_programs()[0], "v_wmma_f32_16x16x128_f8f6f4")
    assert lines and all("matrix_a_fmt:MATRIX_FMT_FP6 matrix_b_fmt:MATRIX_FMT_BF6" in ln for ln in lines), lines


# ------------------------------------------------------------------ scale formats E5M3 / E4M3
def dec_e5m3(c: int) -> float:
    """AMD rocjitsu ``fp8_e5m3_to_f32`` (gfx1250's unsigned scale format), restated: 5 exponent bits
    (bias 15), 3 mantissa bits, no sign; exponent 0 is subnormal (m * 2**-17); 0xFF is NaN."""
    c = int(c)
    e, m = (c >> 3) & 31, c & 7
    if c == 0xFF:
        return float("nan")
    return m * 2.0**-17 if e == 0 else (1 + m / 8) * 2.0 ** (e - 15)


def test_scale_decoders_are_bit_exact_for_every_byte():
    from tilesim.matrix.scale import decode_scale

    # rocjitsu's Fp8E5M3.KeyValues: 0x01 = 2**-17, 0x07 = 0.875 * 2**-14, 0x08 = 2**-14, 0x38 = 2**-8, 0xFE = 114688
    assert [dec_e5m3(c) for c in (0x01, 0x07, 0x08, 0x38, 0xFE)] == [2.0**-17, 0.875 * 2.0**-14, 2.0**-14,
                                                                     2.0**-8, 114688.0]
    codes = np.arange(256)
    for fmt, dec in (("e5m3", dec_e5m3), ("e4m3", dec_e4m3)):
        want = np.array([dec(c) for c in codes])
        np.testing.assert_array_equal(decode_scale(codes, fmt), want)  # NaN == NaN here


SCALED16 = ["v_wmma_scale_f32_16x16x128_f8f6f4", "v_wmma_scale16_f32_16x16x128_f8f6f4"]


@pytest.mark.parametrize("name", SCALED16 + ["v_wmma_scale16_f32_32x16x128_f4"])
@pytest.mark.parametrize(("sfa", "sfb"), [(1, 2), (2, 1), (1, 0)], ids=["e5m3xe4m3", "e4m3xe5m3", "e5m3xe8m0"])
def test_e5m3_and_e4m3_scales_against_float64(name, sfa, sfb):
    """matrix_a_scale_fmt / matrix_b_scale_fmt = 1 (E5M3) or 2 (E4M3): each block of k times its
    decoded scale, exact, one rounding to f32 — with the scales decoded by this file's decoders."""
    from tilesim.matrix.numerics import execute_scaled

    row = lookup(name, T)
    rng = np.random.default_rng(sfa * 3 + sfb)
    block = 16 if "scale16" in name else 32
    code = 0  # fp8 A/B on the 16-row forms; the M=32 form is fp4 (no format field)
    ca = _codes(rng, 0, (row.m, 128)) if row.m == 16 else rng.integers(0, 16, (row.m, 128))
    cb = _codes(rng, 0, (128, 16)) if row.m == 16 else rng.integers(0, 16, (128, 16))
    if row.m == 16:
        A, B = np.vectorize(dec_e4m3)(ca), np.vectorize(dec_e4m3)(cb)
    else:
        A, B = np.vectorize(dec_e2m1)(ca), np.vectorize(dec_e2m1)(cb)

    def scale_bytes(fmt_code, shape):  # finite, moderate scales of the format
        dec = {0: lambda c: 2.0 ** (int(c) - 127), 1: dec_e5m3, 2: dec_e4m3}[fmt_code]
        ok = [c for c in range(256) if np.isfinite(dec(c)) and 2.0**-8 <= abs(dec(c)) <= 2.0**8]
        return rng.choice(np.array(ok), shape)

    sa, sb = scale_bytes(sfa, (row.m, 128 // block)), scale_bytes(sfb, (128 // block, 16))
    dec = {0: lambda c: 2.0 ** (int(c) - 127), 1: dec_e5m3, 2: dec_e4m3}
    kb = np.arange(128) // block
    FA, FB = np.vectorize(dec[sfa])(sa)[:, kb], np.vectorize(dec[sfb])(sb)[kb, :]
    C = rng.integers(-8, 9, (row.m, 16)).astype(np.float64)
    want = ((A * FA) @ (B * FB) + C).astype(np.float32).astype(np.float64)
    got = execute_scaled(row, A, B, C, sa, sb, cbsz=code, blgp=code, a_scale_fmt=sfa, b_scale_fmt=sfb)
    np.testing.assert_array_equal(np.asarray(got, np.float64), want)
    # the format field matters: reading the same bytes as E8M0 gives another D
    if sfa:
        other = execute_scaled(row, A, B, C, sa, sb, cbsz=code, blgp=code, a_scale_fmt=0, b_scale_fmt=sfb)
        assert not np.array_equal(np.asarray(other, np.float64), want)


def test_scale_format_codes_are_checked():
    from tilesim.errors import ModifierError
    from tilesim.matrix.numerics import execute_scaled

    row = lookup("v_wmma_scale_f32_16x16x128_f8f6f4", T)
    z = np.zeros((16, 128)), np.zeros((128, 16)), None, np.full((16, 4), 127), np.full((4, 16), 127)
    with pytest.raises(ModifierError, match="legal: 0 e8m0, 1 e5m3, 2 e4m3"):
        execute_scaled(row, *z, a_scale_fmt=3)
    mfma = lookup("v_mfma_scale_f32_16x16x128_f8f6f4", "gfx950")  # gfx950 scales are E8M0 only
    with pytest.raises(ModifierError, match="legal: 0 e8m0"):
        execute_scaled(mfma, *z, b_scale_fmt=1)


@pytest.mark.parametrize("fmt", [2, 1], ids=["e4m3", "e5m3"])
def test_the_nvfp4_example_matches_its_float64_reference(fmt):
    got, want = gfx1250_gemm.nvfp4_tile(3, fmt)
    np.testing.assert_allclose(got, want, rtol=2.0**-23, atol=2.0**-23 * np.abs(want).max())


# ------------------------------------------------------------------ E4M3 / E5M3 scales in tile programs
def _minifloat(c: int, ebits: int, mbits: int, bias: int) -> float:
    """A sign bit above ``ebits`` exponent bits and ``mbits`` mantissa bits; exponent 0 subnormal
    (``m / 2**mbits * 2**(1 - bias)``); no Inf/NaN (the inputs hold none)."""
    c = int(c)
    s, e, m = (c >> (ebits + mbits)) & 1, (c >> mbits) & ((1 << ebits) - 1), c & ((1 << mbits) - 1)
    v = m / 2**mbits * 2.0 ** (1 - bias) if e == 0 else (1 + m / 2**mbits) * 2.0 ** (e - bias)
    return -v if s else v


def dec_e5m2(c: int) -> float:  # OCP FP8 E5M2: bias 15
    return _minifloat(c, 5, 2, 15)


def dec_e2m1(c: int) -> float:  # OCP FP4 E2M1 (MX v1.0 §5.3.3): bias 1
    return _minifloat(c, 2, 1, 1)


VALUE_DEC = {"fp4": (dec_e2m1, range(16)), "fp8_ocp": (dec_e4m3, [c for c in range(256) if (c & 0x7F) != 0x7F]),
             "bf8_ocp": (dec_e5m2, [c for c in range(256) if (c >> 2) & 31 != 31])}
SCALE_DEC = {"e4m3": (dec_e4m3, range(0x20, 0x59)), "e5m3": (dec_e5m3, range(0x58, 0x99))}  # 2**-4 .. 2**4


def _scalefmt_arrays(prog, seed, formats):
    """Arrays for a scale-format program and the float64 reference, every value decoded from its bits
    by this file's decoders: A/B from their formats' codes, the scales from bytes of ``formats``
    (a u8 tensor gets the bytes, an fp8_ocp tensor the E4M3 values)."""
    rng = np.random.default_rng(seed)
    arrays, vals = {}, {}
    for name in ("A", "B", "SA", "SB"):
        t = prog.tensor(name)
        dec, codes = VALUE_DEC[t.dtype] if name in "AB" else SCALE_DEC[formats[name]]
        raw = rng.choice(np.array(list(codes)), t.shape)
        vals[name] = np.vectorize(dec)(raw).astype(np.float64)
        arrays[name] = raw.astype(np.uint8) if t.dtype == "u8" else vals[name].astype(np.float32)
    kb = np.arange(vals["A"].shape[1]) // 16
    want = (vals["A"] * vals["SA"][:, kb]) @ (vals["B"] * vals["SB"][kb, :])
    return arrays, want


SCALEFMT = [("e4m3", "e4m3"), ("e4m3", "e5m3"), ("e4m3", "e5m3"), ("e4m3", "e4m3")]  # of nvfp4_programs()


@pytest.mark.parametrize("i", range(4), ids=["fp4-e4m3-typed", "fp4-u8-e4m3xe5m3", "fp8xbf8-e4m3xe5m3", "fp4-m32"])
def test_scale_format_tile_programs_match_float64(i):
    prog = gfx1250_gemm.nvfp4_programs()[i]
    assert ts.check(prog).ok, str(ts.check(prog))
    fa, fb = SCALEFMT[i]
    assert gfx1250_gemm.scale_formats(prog) == {"SA": fa, "SB": fb}
    for seed in (0, 1):
        arrays, want = _scalefmt_arrays(prog, 10 * i + seed, {"SA": fa, "SB": fb})
        got = np.asarray(ts.simulate(prog, **arrays)["C"], np.float64)
        np.testing.assert_allclose(got, want, rtol=2.0**-22, atol=2.0**-22 * np.abs(want).max())


def _planted(i, **formats):
    """nvfp4_programs()[i] with ``sfa``/``sfb`` changed: the scales read in another format."""
    mma, ta, tb, sta, stb, fa, fb = gfx1250_gemm.SCALE_FMT_CONFIGS[i]
    return gfx1250_gemm.scale_fmt_program(mma, ta, tb, sta, stb, **{"sfa": fa, "sfb": fb, **formats})


@pytest.mark.parametrize(("i", "field"), [(1, "sfa"), (2, "sfb")], ids=["fp4-SA", "fp8xbf8-SB"])
def test_e4m3_or_e5m3_scales_read_as_e8m0_fail_the_verdict(i, field):
    """The planted bug: u8 scale bytes that hold E4M3 (SA) or E5M3 (SB), read as E8M0 (the format
    field left out, as every tile program read them before it was modelled). check cannot see it
    (u8 holds any format); the simulation against the float64 reference does."""
    from tilesim.diff.verdict import run

    right = gfx1250_gemm.nvfp4_programs()[i]
    arrays, want = _scalefmt_arrays(right, 5, {"SA": "e4m3", "SB": "e5m3"})
    v = run(right, device="none", reference={"C": want}, **arrays)
    assert v.ok and v.status in ("COMPILE_ONLY", "SIMULATED_ONLY"), v
    bug = _planted(i, **{field: "e8m0"})
    assert right.tensor("S" + field[-1].upper()).dtype == "u8" and ts.check(bug).ok, str(ts.check(bug))
    v = run(bug, device="none", reference={"C": want}, **arrays)
    assert v.status == "SIM_MISMATCH", v


def test_an_e4m3_typed_scale_read_as_e8m0_is_a_check_error():
    """An fp8_ocp (E4M3) scale tensor under the E8M0 format field: check names both and the fix."""
    from tilesim.diff.verdict import run

    bug = _planted(0, sfa="e8m0")
    rep = ts.check(bug)
    assert not rep.ok and "fp8_ocp fragment but v_wmma_scale16_f32_16x16x128_f8f6f4 reads SA as E8M0 " \
        "(a_scale_fmt=0)" in str(rep) and "a_scale_fmt=" in str(rep), str(rep)
    arrays, want = _scalefmt_arrays(gfx1250_gemm.nvfp4_programs()[0], 1, {"SA": "e4m3", "SB": "e4m3"})
    assert run(bug, device="none", reference={"C": want}, **arrays).status in ("CHECK_FAILED", "SIM_MISMATCH")


def test_scale_formats_are_validated_modifiers_that_round_trip():
    """Traced as the format field's code (E8M0 adds nothing, so E8M0 programs trace as before),
    kept through JSON; names outside the vocabulary, rows without the field, unscaled mma and a
    code the row does not take are refused with the valid formats named."""
    from tilesim.errors import ModifierError
    from tilesim.ir.core import Program

    prog = gfx1250_gemm.nvfp4_programs()[2]
    (op,) = [o for o in prog.walk() if o.kind == "mma_scaled"]
    assert ("a_scale_fmt", 2) in op.attr("modifiers") and ("b_scale_fmt", 1) in op.attr("modifiers")
    again = Program.from_json(prog.to_json())
    assert again == prog and gfx1250_gemm.scale_formats(again) == {"SA": "e4m3", "SB": "e5m3"}
    (e8,) = [o for o in gfx1250_gemm.mx_programs()[0].walk() if o.kind == "mma_scaled"]
    assert not any(k.endswith("_scale_fmt") for k, _ in e8.attr("modifiers"))
    with pytest.raises(ModifierError, match=r"'e3m4'.*e8m0, e5m3, e4m3"):
        _planted(2, sfa="e3m4")
    mx = gfx1250_gemm.MX_KERNELS["fp8_ocp", "bf8_ocp"]  # gfx950: the scale builtin reads E8M0 only
    with pytest.raises(ModifierError, match=r"v_mfma_scale_f32_16x16x128_f8f6f4 \(cdna4\).*'e4m3'.*legal: 'e8m0'"):
        mx.specialize(target="gfx950", M=64, N=32, K=256, KB=8, mma="v_mfma_scale_f32_16x16x128_f8f6f4",
                      sfa="e4m3")
    assert mx.specialize(target="gfx950", M=64, N=32, K=256, KB=8, mma="v_mfma_scale_f32_16x16x128_f8f6f4",
                         sfb="e8m0") is not None

    @ts.kernel
    def unscaled(A: ts.Tensor["fp8_ocp", "M", "K"], B: ts.Tensor["fp8_ocp", "K", "N"], C: ts.Tensor["f32", "M", "N"]):
        op = ts.mma_op("v_wmma_f32_16x16x128_f8f6f4")
        a, b = ts.load(A[0:, 0:], op.layout("A")), ts.load(B[0:, 0:], op.layout("B"))
        ts.store(C[0:, 0:], ts.mma(op, a, b, ts.zeros(op.layout("C"), "f32"), a_scale_fmt="e4m3"))

    with pytest.raises(ModifierError, match="needs block scales"):
        unscaled.specialize(target=T, M=16, N=16, K=128)
    text = prog.to_json()
    assert text.count('["a_scale_fmt", 2]') == 1
    bad = Program.from_json(text.replace('["a_scale_fmt", 2]', '["a_scale_fmt", 3]'))
    rep = ts.check(bad)
    assert not rep.ok and "SA scale format 3 is not legal; legal: 0 e8m0, 1 e5m3, 2 e4m3" in str(rep), str(rep)


@pytest.mark.compiler
def test_the_scale_format_program_compiles_to_the_scale_format_fields():
    """clang prints the builtin's scale-format immediates as matrix_*_scale_fmt (compiler truth)."""
    _, lines = _isa_lines(gfx1250_gemm.nvfp4_programs()[2], "v_wmma_scale16_f32_16x16x128_f8f6f4")
    assert lines and all("matrix_a_scale_fmt:MATRIX_SCALE_FMT_E4M3 matrix_b_scale_fmt:MATRIX_SCALE_FMT_E5M3" in ln
                         for ln in lines), lines
    e8, lines = _isa_lines(gfx1250_gemm.mx_programs()[1], "v_wmma_scale16")
    assert lines and "scale_fmt" not in e8  # E8M0 = 0, the default clang leaves out
