"""gfx1250 f8f6f4, 32x16x128_f4 and scaled WMMA (block scales SA/SB); the SWMMAC gap.

Expected locations are transcribed per element from sources that do not read tilesim's recipes:

* ROCm comgr's hotswap rewrites, exact decompositions that run gfx1250 code on steppings without
  these opcodes (``patch-wmma-scale16.cpp``, ``patch-wmma-split.cpp``):
  - fp8/bf8: "a K=32 block's low-16 K-subblock lives in lanes 0-15 and the high-16 in lanes 16-31";
  - fp4: "a whole K=32 block sits in one lane group and the low-16/high-16 split runs along the VGPR
    index ... Subblocks are SubW consecutive VGPRs (FP4=2); even-indexed ones are the low halves";
  - ``v_wmma_f32_32x16x128_f4`` = two ``16x16x128_f8f6f4`` with MATRIX_FMT_FP4: dst, src0 and src2
    sliced into lower/upper halves (M rows 0-15, 16-31), src1 (B) shared;
  - the scaled forms are an LD_SCALE uop followed by the base WMMA uop.
* Triton's gfx1250 scaled dot: A and B in ``dot_op<{kWidth = 16}>`` over ``amd_wmma<{version = 3}>``
  (test/TritonGPU/amd/accelerate-amd-matmul-wmma-gfx1250.mlir): a lane holds 16 consecutive bytes
  of K, lanes 16-31 the next 16 bytes, then the pattern repeats in the following registers.
* clang 22: the register tuples the ISA shows for each format (compiler tests below).
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import tilesim as ts
from examples import gfx1250_gemm
from tilesim.codegen.hip import CodegenError, emit_hip
from tilesim.errors import InstructionError, ModifierError, ToolchainError
from tilesim.matrix.catalog import lookup, rows
from tilesim.matrix.probe import c_type
from tilesim.matrix.registers import execute_registers

offline = pytest.importorskip("tilesim.hw.offline")

T = "gfx1250"
F8F6F4 = ["v_wmma_f32_16x16x128_f8f6f4", "v_wmma_scale_f32_16x16x128_f8f6f4", "v_wmma_scale16_f32_16x16x128_f8f6f4"]
F4 = ["v_wmma_f32_32x16x128_f4", "v_wmma_scale_f32_32x16x128_f4", "v_wmma_scale16_f32_32x16x128_f4"]


def _records(shape, width, where):
    """Sorted (block, row, col, vgpr, lane, bit_lo, bit_hi) from ``where(r, k) -> (lane, bit offset in the tuple)``."""
    recs = []
    for r in range(shape[0]):
        for k in range(shape[1]):
            lane, bit = where(r, k)
            recs.append((0, r, k, bit // 32, lane, bit % 32, bit % 32 + width - 1))
    rec = np.array(recs, np.int64)
    return rec[np.lexsort(rec.T[::-1])]


def _transpose(rec):
    out = rec.copy()
    out[:, [1, 2]] = rec[:, [2, 1]]
    return out[np.lexsort(out.T[::-1])]


def _triton_kwidth16(i, k, bits):
    """Triton v3 dot operand, kWidth = 16 bytes: byte q of row i's K is in lane i + 16*((q//16) % 2),
    at byte 16*(q//32) + q%16 of the lane's tuple; 4-bit elements take the low nibble first."""
    q, nib = divmod(k * bits, 8)
    return i + 16 * ((q // 16) % 2), 8 * (16 * (q // 32) + q % 16) + nib


# ------------------------------------------------------------------------------------ layouts
@pytest.mark.parametrize("name", F8F6F4)
@pytest.mark.parametrize(("code", "bits"), [(0, 8), (1, 8), (4, 4)], ids=["fp8", "bf8", "fp4"])
def test_f8f6f4_formats_follow_triton_kwidth16(name, code, bits):
    row = lookup(name, T)
    want = _records((16, 128), bits, lambda i, k: _triton_kwidth16(i, k, bits))
    assert np.array_equal(row.layout("A", cbsz=code).location_array(), want)
    assert np.array_equal(row.layout("B", blgp=code).location_array(), _transpose(want))
    assert row.layout("A", cbsz=code).registers_per_lane() == {8: 16, 4: 8}[bits]


def test_f8f6f4_fp8_subblocks_split_by_lane_and_fp4_by_vgpr_as_comgr_states():
    row = lookup("v_wmma_f32_16x16x128_f8f6f4", T)
    for code in (0, 1):  # fp8/bf8: low 16 k of each 32-k block in lanes 0-15, high 16 in lanes 16-31
        assert all((r.lane < 16) == (r.col % 32 < 16) for r in row.layout("A", cbsz=code).locations())
    locs = row.layout("A", cbsz=4).locations()
    lane_group = {}
    for r in locs:  # fp4: a 32-k block in one lane group; 2-VGPR subblocks, even ones the low 16 k
        lane_group.setdefault((r.row, r.col // 32), set()).add(r.lane // 16)
        assert ((r.vgpr // 2) % 2 == 0) == (r.col % 32 < 16), r
    assert all(len(g) == 1 for g in lane_group.values())


def test_f8f6f4_fp8_is_the_dense_fp8_rows_layout():
    """Issue 16 (d): the dense 16x16x128 fp8 rows once kept Composable Kernel's 8-k chunks while the
    f8f6f4 fp8 format used 16-k runs. A third source (AMD rocjitsu's wmma_input_loc: "CDNA5 K=128
    dense WMMA uses 16-element K blocks") sides with the 16-k runs: the two now agree, element for
    element, and both equal the Triton kWidth-16 formula."""
    fmt = lookup("v_wmma_f32_16x16x128_f8f6f4", T).layout("A", cbsz=0)
    want = _records((16, 128), 8, lambda i, k: _triton_kwidth16(i, k, 8))
    for name in ("v_wmma_f32_16x16x128_fp8_fp8", "v_wmma_f16_16x16x128_bf8_fp8"):
        dense = lookup(name, T)
        assert dense.layout("A") == fmt and np.array_equal(dense.layout("A").location_array(), want), name
        assert dense.layout("B") == lookup("v_wmma_f32_16x16x128_f8f6f4", T).layout("B", blgp=0), name


def _rocjitsu_block_scaled(i, k, bits):
    """AMD rocjitsu ``wmma_block_scaled_input_loc`` (mma_exec.h), transcribed: block = 16 k for 8-bit,
    32 k for 4/6-bit inputs; lane = i + 16*((k/block) & 1), element (k/2block)*block + k%block of the
    lane's tuple, elements packed densely (a 6-bit one may straddle two VGPRs)."""
    block = 16 if bits == 8 else 32
    return i + 16 * ((k // block) % 2), bits * ((k // (2 * block)) * block + k % block)


@pytest.mark.parametrize("name", F8F6F4)
@pytest.mark.parametrize("code", [2, 3], ids=["fp6", "bf6"])
def test_f8f6f4_fp6_bf6_follow_rocjitsu_and_comgr(name, code):
    """fp6/bf6: 12 VGPRs; a 32-k block in one lane group (comgr, rocjitsu), its low 16 k in an
    even-indexed group of 3 VGPRs, the high 16 in the next (comgr: "Subblocks are SubW consecutive
    VGPRs (FP4=2, FP6=3); even-indexed ones are the low halves")."""
    row = lookup(name, T)
    want = _records((16, 128), 6, lambda i, k: _rocjitsu_block_scaled(i, k, 6))
    lay = row.layout("A", cbsz=code)
    assert np.array_equal(lay.location_array(), want)
    assert np.array_equal(row.layout("B", blgp=code).location_array(), _transpose(want))
    assert lay.registers_per_lane() == 12 and lay.elem_bits == 6
    groups = {}
    for r in lay.locations():
        groups.setdefault((r.row, r.col // 32), set()).add(r.lane // 16)
        assert ((r.vgpr // 3) % 2 == 0) == (r.col % 32 < 16), r
    assert all(len(g) == 1 for g in groups.values())
    for bits in (8, 4):  # the other formats are rocjitsu's block-scaled layout too
        code8 = 0 if bits == 8 else 4
        want = _records((16, 128), bits, lambda i, k: _rocjitsu_block_scaled(i, k, bits))
        assert np.array_equal(row.layout("A", cbsz=code8).location_array(), want)


def test_unmodelled_formats_and_fields_are_refused():
    row = lookup("v_wmma_f32_16x16x128_f8f6f4", T)
    for code in (5, 7):  # no such formats
        with pytest.raises(ModifierError, match="legal: 0, 1, 2, 3, 4"):
            row.layout("A", cbsz=code)
    with pytest.raises(ModifierError, match="has no CBSZ"):
        lookup("v_wmma_f32_32x16x128_f4", T).layout("A", cbsz=4)


@pytest.mark.parametrize("name", F4)
def test_32x16_f4_is_two_f8f6f4_fp4_halves_sharing_b(name):
    """comgr's M-split: rows 16-31 of A and D sit 8 VGPRs above rows 0-15; B is the 16x16 fp4 B."""
    row, half = lookup(name, T), lookup("v_wmma_f32_16x16x128_f8f6f4", T)
    assert (row.m, row.n, row.k, row.types) == (32, 16, 128, ("fp4", "fp4", "f32", "f32"))
    a = {(r.row, r.col): r for r in row.layout("A").locations()}
    a16 = {(r.row, r.col): r for r in half.layout("A", cbsz=4).locations()}
    assert len(a) == 32 * 128
    for (i, k), r in a16.items():
        assert (a[i, k].lane, a[i, k].vgpr, a[i, k].bit_lo) == (r.lane, r.vgpr, r.bit_lo)
        assert (a[i + 16, k].lane, a[i + 16, k].vgpr, a[i + 16, k].bit_lo) == (r.lane, r.vgpr + 8, r.bit_lo)
    assert row.layout("B") == half.layout("B", blgp=4)
    d = {(r.row, r.col): r for r in row.layout("D").locations()}
    for r in half.layout("D").locations():
        assert (d[r.row, r.col].lane, d[r.row, r.col].vgpr) == (r.lane, r.vgpr)
        assert (d[r.row + 16, r.col].lane, d[r.row + 16, r.col].vgpr) == (r.lane, r.vgpr + 8)
    assert {op: n for op, n in row.registers_for().items() if op in "ABCD"} == {"A": 16, "B": 8, "C": 16, "D": 16}


def test_scaled_forms_read_a_b_c_d_like_the_base_wmma():
    """comgr: a scaled WMMA is an LD_SCALE uop followed by the base WMMA uop."""
    for names in (F8F6F4, F4):
        base = lookup(names[0], T)
        for name in names[1:]:
            row = lookup(name, T)
            for op, mods in (("A", ()), ("B", ()), ("C", ()), ("D", ())):
                assert row.layout(op) == base.layout(op), (name, op)
            if row.m == 16:
                assert all(row.layout("A", cbsz=c) == base.layout("A", cbsz=c) for c in (0, 1, 2, 3, 4))


def test_every_new_row_cites_its_sources_and_confidence():
    new = [r for r in rows() if r.family == "gfx1250" and (r.mnemonic in F8F6F4 + F4)]
    assert len(new) == 6
    for r in new:
        assert "comgr" in r.citation and "Triton" in r.citation, r.mnemonic
        assert "medium confidence" in r.notes, r.mnemonic
        if "scale" in r.mnemonic:
            assert r.scale_operands == ("SA", "SB") and "E8M0" in r.notes, r.mnemonic


# ------------------------------------------------------------------------------------ numerics
_NP = {"fp8_ocp": ml_dtypes.float8_e4m3fn, "bf8_ocp": ml_dtypes.float8_e5m2, "fp4": ml_dtypes.float4_e2m1fn}


def _hand_pack(values_codes, bits, transpose):
    """Register image from the Triton/comgr formula (not from tilesim): codes[r][k] (B: codes[k][j])."""
    regs = np.zeros((32, 16 * bits // 8), np.uint32)
    codes = values_codes.T if transpose else values_codes
    for r in range(codes.shape[0]):
        for k in range(codes.shape[1]):
            lane, bit = _triton_kwidth16(r, k, bits)
            regs[lane, bit // 32] |= np.uint32(int(codes[r, k]) << (bit % 32))
    return regs


@pytest.mark.parametrize(("fa", "fb"), [(0, 4), (1, 0), (4, 4)], ids=["fp8xfp4", "bf8xfp8", "fp4xfp4"])
def test_f8f6f4_registers_run_against_a_float64_reference(fa, fb):
    """Hand-packed registers (source formula) -> the row's execute -> D read by the RDNA4-style
    accumulator formula (lane j + 16*(i//8), VGPR i%8), against float64 of ml_dtypes-decoded values."""
    row = lookup("v_wmma_f32_16x16x128_f8f6f4", T)
    ta, tb = ({0: "fp8_ocp", 1: "bf8_ocp", 4: "fp4"}[c] for c in (fa, fb))
    rng = np.random.default_rng(fa * 8 + fb)

    def codes(t, shape):
        if t == "fp4":
            return rng.integers(0, 16, shape).astype(np.uint8)
        ok = [b for b in range(256) if abs(float(np.uint8(b).view(_NP[t]))) <= 4.0]  # no NaN; keeps sums exact
        return rng.choice(np.array(ok, np.uint8), shape)

    ca, cb = codes(ta, (16, 128)), codes(tb, (128, 16))
    A, B = (c.view(_NP[t]).astype(np.float64) for c, t in ((ca, ta), (cb, tb)))
    if ta == "fp4":
        A = (ca & 0xF).view(_NP[ta]).astype(np.float64)
    C = rng.integers(-8, 9, (16, 16)).astype(np.float64)
    a_regs, b_regs = _hand_pack(ca, 8 if fa < 4 else 4, False), _hand_pack(cb, 8 if fb < 4 else 4, True)
    c_regs = np.zeros((32, 8), np.uint32)
    for i in range(16):
        for j in range(16):
            c_regs[j + 16 * (i // 8), i % 8] = np.float32(C[i, j]).view(np.uint32)
    d_regs = execute_registers(row, a_regs, b_regs, c_regs, cbsz=fa, blgp=fb)
    D = np.array([[d_regs[j + 16 * (i // 8), i % 8].view(np.float32) for j in range(16)] for i in range(16)],
                 np.float64)
    want = (A @ B + C).astype(np.float32).astype(np.float64)  # exact products and sum, one rounding to f32
    np.testing.assert_array_equal(D, want)


def test_32x16_f4_tile_program_matches_float64_on_random_and_one_hot_inputs():
    prog = gfx1250_gemm.f4_programs()[0]
    assert ts.check(prog).ok, str(ts.check(prog))
    arrays = gfx1250_gemm.inputs(prog, 1)
    got = ts.simulate(prog, **arrays)["C"]
    np.testing.assert_array_equal(np.asarray(got, np.float64), gfx1250_gemm.reference(**arrays)["C"])
    # one-hot: row i of A selects k = (5*i + 3) % K, B encodes k -> D says which k each row read
    (M, K), (_, N) = prog.tensor("A").shape, prog.tensor("B").shape
    A = (np.arange(K)[None, :] == (5 * np.arange(M)[:, None] + 3) % K).astype(np.float32)
    e2m1 = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)  # the 16 values
    kk, jj = np.arange(K)[:, None], np.arange(N)[None, :]
    for code in ((kk + 3 * jj) % 16, (kk // 16 + 5 * jj) % 16):  # across the N columns, the pair names k
        B = e2m1[code]
        got = np.asarray(ts.simulate(prog, A=A, B=B)["C"], np.float64)
        np.testing.assert_array_equal(got, A.astype(np.float64) @ B.astype(np.float64))


def test_f8f6f4_tile_program_matches_float64_and_compiles():
    prog = gfx1250_gemm.programs()[0]
    assert ts.check(prog).ok, str(ts.check(prog))
    for seed in (0, 1):
        arrays = gfx1250_gemm.inputs(prog, seed)
        got = np.asarray(ts.simulate(prog, **arrays)["C"], np.float64)
        want = gfx1250_gemm.reference(**arrays)["C"]
        # f32 accumulation over K=256 in two instructions: one rounding per instruction
        np.testing.assert_allclose(got, want, rtol=2.0**-22, atol=2.0**-22 * np.abs(want).max())


def _one_tile(a_layout):
    @ts.kernel
    def one(A: ts.Tensor["fp8_ocp", "M", "K"], B: ts.Tensor["fp8_ocp", "K", "N"], C: ts.Tensor["f32", "M", "N"]):
        op = ts.mma_op("v_wmma_f32_16x16x128_f8f6f4")
        acc = ts.zeros(op.layout("C"), "f32")
        acc = ts.mma(op, ts.load(A[0:, 0:], a_layout(op)), ts.load(B[0:, 0:], op.layout("B")), acc)
        ts.store(C[0:, 0:], acc)

    return one.specialize(target=T, M=16, N=16, K=128)


def test_check_accepts_the_dense_fp8_layout_for_f8f6f4_and_refuses_a_foreign_one():
    dense = lookup("v_wmma_f32_16x16x128_fp8_fp8", T)
    assert ts.check(_one_tile(lambda op: dense.layout("A"))).ok  # same registers (issue 16 (d))
    rep = ts.check(_one_tile(lambda op: op.layout("B")))  # B's layout fed as A: wrong lanes
    assert not rep.ok and "operand A" in str(rep), str(rep)


def test_scaled_rows_need_their_scales_in_tile_programs():
    """A scaled WMMA without scale fragments is refused by check (not run with silent 1.0 scales)."""
    for name in ("v_wmma_scale_f32_16x16x128_f8f6f4", "v_wmma_scale16_f32_16x16x128_f8f6f4"):
        prog = gfx1250_gemm.KERNELS["fp8_ocp", "fp8_ocp"].specialize(target=T, M=16, N=16, K=128, mma=name)
        rep = ts.check(prog)
        assert not rep.ok and "scale_a=" in str(rep), str(rep)


# ------------------------------------------------------------------------------------ block scales
SCALED = [n for n in F8F6F4 + F4 if "scale" in n]


@pytest.mark.parametrize("name", SCALED)
def test_scales_sit_in_lane_r_byte_kb_and_row1_moves_them_to_lanes_16_31(name):
    """Triton chooseScaledWmmaScaleLayout: lanes 0-15 along M/N, consecutive k-blocks in a lane's
    scale register (the second 16 lanes duplicate or, with the ROW1 select, hold them: Triton's
    "1: use scales in 16..31 lanes"); comgr: block-32 "[byte0..3] = k-block 0..3", block-16 "Vn
    bytes 0-3, Vn+1 bytes 4-7"; the M=32 form's rows 16-31 read lanes 16-31."""
    row = lookup(name, T)
    block = 16 if "scale16" in name else 32
    nkb = 128 // block
    assert row.registers_for()["SA"] == row.registers_for()["SB"] == nkb * 8 // 32
    sels = (0, 1) if row.m == 16 else (0,)
    for sel in sels:
        want_a = _records((row.m, nkb), 8, lambda r, kb: (r + 16 * sel, 8 * kb))
        assert np.array_equal(row.layout("SA", opsel_a=sel).location_array(), want_a), (name, sel)
        want_b = _records((16, nkb), 8, lambda j, kb: (j + 16 * sel, 8 * kb))
        assert np.array_equal(row.layout("SB", opsel_b=sel).location_array(), _transpose(want_b)), (name, sel)
    if row.m == 32:
        with pytest.raises(ModifierError):
            row.layout("SA", opsel_a=1)


@pytest.mark.parametrize("i", range(3))
def test_mx_tile_programs_match_a_float64_reference(i):
    """E8M0 scales decoded by ml_dtypes (float8_e8m0fnu), values by ml_dtypes: independent of tilesim."""
    prog = gfx1250_gemm.mx_programs()[i]
    assert ts.check(prog).ok, str(ts.check(prog))
    for seed in (0, 1):
        arrays = gfx1250_gemm.mx_inputs(prog, seed)
        got = np.asarray(ts.simulate(prog, **arrays)["C"], np.float64)
        want = gfx1250_gemm.mx_reference(**arrays)["C"]
        np.testing.assert_allclose(got, want, rtol=2.0**-22, atol=2.0**-22 * np.abs(want).max())


def test_a_scale_in_the_wrong_byte_or_lane_half_changes_one_block():
    """Probe: one k-block's scale of one row doubled; only that row's products over those k move —
    and feeding lanes 0-15 when the instruction reads ROW1 (lanes 16-31) is a check error."""
    prog = gfx1250_gemm.mx_programs()[1]  # scale16, A's scales in lanes 16-31
    arrays = gfx1250_gemm.mx_inputs(prog, 3)
    base = np.asarray(ts.simulate(prog, **arrays)["C"], np.float64)
    bumped = dict(arrays, SA=arrays["SA"].copy())
    bumped["SA"][5, 3] *= 2  # row 5, k 48..63
    got = np.asarray(ts.simulate(prog, **bumped)["C"], np.float64)
    delta = arrays["A"][5, 48:64].astype(np.float64) @ (arrays["B"][48:64].astype(np.float64)
                                                        * arrays["SB"][3].astype(np.float64)) * arrays["SA"][5, 3]
    np.testing.assert_allclose(got[5] - base[5], delta, rtol=1e-6, atol=1e-6 * np.abs(base).max())
    assert np.array_equal(np.delete(got, 5, 0), np.delete(base, 5, 0))


def test_scaled_tile_programs_compile_with_the_scale_operands():
    for prog in gfx1250_gemm.mx_programs()[:2]:
        try:
            isa = offline.compile_hip(emit_hip(prog).source, T, wave_size=32).isa
        except ToolchainError as e:  # pragma: no cover - the dev extra installs ziglang
            pytest.skip(f"no AMDGPU clang: {e}")
        name = lookup(next(op.attr("instr") for op in prog.walk() if op.kind == "mma_scaled"), T).mnemonic
        sizes, line = _tuples(isa, name)
        # the scale operands are the last two register operands (C may be an inline constant: a zero C is `0`)
        assert sizes[-2:] == ([2, 2] if "scale16" in name else [1, 1]), line
        assert "matrix_b_fmt:MATRIX_FMT_BF8" in line, line
        assert ("matrix_a_scale:MATRIX_SCALE_ROW1" in line) == ("scale16" in name), line


# ------------------------------------------------------------------------------------ compiler truth


def _compile(src: str) -> str:
    try:
        return offline.compile_hip(src, T, wave_size=32).isa
    except ToolchainError as e:  # pragma: no cover - the dev extra installs ziglang
        pytest.skip(f"no AMDGPU clang: {e}")


def _call_source(builtin, mods) -> str:
    typedefs, params, args = set(), [], []
    ret, td = c_type(builtin.ret)
    typedefs.add(td)
    for i, tok in enumerate(builtin.operand_types):
        name, td = c_type(tok)
        typedefs.add(td)
        params.append(f"const {name}* p{i}")
        args.append(f"p{i}[t]")
    return ("\n".join(sorted(t for t in typedefs if t)) + f'\nextern "C" __attribute__((global)) void k({ret}* out, '
            f'{", ".join(params)}) {{ int t = __builtin_amdgcn_workitem_id_x(); '
            f'out[t] = {builtin.call(args, mods)}; }}\n')


def _tuples(isa: str, mnemonic: str) -> tuple[list[int], str]:
    line = next(ln.strip() for ln in isa.splitlines() if ln.strip().startswith(mnemonic + " "))
    sizes = [int(b) - int(a) + 1 if a else 1 for a, b in re.findall(r"v(?:\[(\d+):)?(\d+)\]?", line.split(" ", 1)[1])]
    return sizes, line


FORMAT_TEXT = {0: "", 1: "MATRIX_FMT_BF8", 2: "MATRIX_FMT_FP6", 3: "MATRIX_FMT_BF6", 4: "MATRIX_FMT_FP4"}


@pytest.mark.compiler
@pytest.mark.parametrize("name", F8F6F4)
@pytest.mark.parametrize(("fa", "fb"), [(0, 0), (1, 4), (4, 1), (4, 4), (2, 3), (3, 0), (4, 2)])
def test_the_isa_shows_the_format_and_the_tuple_sizes_the_row_declares(name, fa, fb):
    row = lookup(name, T)
    sizes, line = _tuples(_compile(_call_source(row.builtin_for(32), {"cbsz": fa, "blgp": fb})), name)
    want = [row.registers_for()["D"], row.layout("A", cbsz=fa).registers_per_lane(),
            row.layout("B", blgp=fb).registers_per_lane(), row.registers_for()["C"]]
    assert sizes[:4] == want, line
    assert ("matrix_a_fmt:" + FORMAT_TEXT[fa] in line) == bool(fa), line
    assert ("matrix_b_fmt:" + FORMAT_TEXT[fb] in line) == bool(fb), line
    if "scale16" in name:
        assert sizes[4:] == [2, 2], line  # block-16 scales: a VGPR pair each (i64 builtin operands)
    elif "scale" in name:
        assert sizes[4:] == [1, 1], line  # block-32 scales: one VGPR each
    if "scale" in name:  # the row selects feed matrix_a_scale / matrix_b_scale (ROW1 = lanes 16-31)
        line = _tuples(_compile(_call_source(row.builtin_for(32), {"opsel_a": 1, "opsel_b": 1})), name)[1]
        assert "matrix_a_scale:MATRIX_SCALE_ROW1 matrix_b_scale:MATRIX_SCALE_ROW1" in line, line


@pytest.mark.compiler
@pytest.mark.parametrize("name", F4)
def test_the_isa_shows_the_32x16_f4_tuple_sizes(name):
    row = lookup(name, T)
    sizes, line = _tuples(_compile(_call_source(row.builtin_for(32), {})), name)
    regs = row.registers_for()
    assert sizes[:4] == [regs["D"], regs["A"], regs["B"], regs["C"]] == [16, 16, 8, 16], line


@pytest.mark.compiler
def test_the_scaled_encoding_is_a_prefix_plus_the_unscaled_wmma():
    """Compiler truth (clang 22's assembler): v_wmma_scale_f32_16x16x128_f8f6f4 is 8 bytes of
    LD_SCALE followed by the 8 bytes of v_wmma_f32_16x16x128_f8f6f4 itself, formats included. One
    base instruction reads A and B for both, so the unscaled form's layouts are the scaled form's,
    which the block scales pin (comgr, rocjitsu's block-scaled layout)."""
    from tilesim.hw.offline import clang_command, run_tool

    def assemble(src):
        try:
            return run_tool([*clang_command(), "-cc1as", "-triple", "amdgcn-amd-amdhsa", "-target-cpu", T,
                             "-show-encoding", "-filetype", "asm", "-", "-o", "-"], input=src, timeout=120)
        except ToolchainError as e:  # pragma: no cover - the dev extra installs ziglang
            pytest.skip(f"no AMDGPU clang: {e}")

    fmt = " matrix_a_fmt:MATRIX_FMT_FP6 matrix_b_fmt:MATRIX_FMT_BF6"
    regs = "v[0:7], v[8:19], v[24:35], v[40:47]"  # fp6/bf6 A and B: 12 VGPRs
    res = assemble(f"v_wmma_f32_16x16x128_f8f6f4 {regs}{fmt}\nv_wmma_scale_f32_16x16x128_f8f6f4 {regs}, v2, v3{fmt}\n")
    enc = re.findall(r"encoding: \[([^\]]*)\]", res.stdout)
    assert len(enc) == 2, res.stdout + res.stderr
    plain, scaled = ([int(b, 16) for b in e.split(",")] for e in enc)
    assert len(plain) == 8 and len(scaled) == 16 and scaled[8:] == plain, res.stdout
    # and the assembler holds fp6 to 12 VGPRs: the fp8 tuple size is refused
    bad = assemble(f"v_wmma_f32_16x16x128_f8f6f4 v[0:7], v[8:23], v[24:39], v[40:47]{fmt}\n")
    assert bad.returncode != 0 and "wrong register tuple size for MATRIX_FMT_FP6" in bad.stderr, bad.stderr


# SWMMAC: not in the catalog (the one source with lane maps, AMD's rocjitsu emulator, says its K=128
# maps depart from the CDNA5 ISA; docs/catalog.md "Known gaps" says what is missing). What the compiler
# does fix, recorded so the gap stays honest: K=128 8-bit forms read a 64-bit index (a VGPR pair),
# and their sparse A is half the dense 16x16x128 A — they are not dense WMMA.
SWMMAC = [
    ("v_swmmac_f32_16x16x64_f16", "typedef _Float16 h16 __attribute__((ext_vector_type(16)));"
     "typedef _Float16 h32 __attribute__((ext_vector_type(32)));",
     "const h16* a, const h32* b", "__builtin_amdgcn_swmmac_f32_16x16x64_f16(0, a[t], 0, b[t], c[t], s[t], 0, 0)",
     [8, 8, 16, 1]),
    ("v_swmmac_f32_16x16x128_fp8_fp8", "typedef int i8v __attribute__((ext_vector_type(8)));"
     "typedef int i16v __attribute__((ext_vector_type(16)));",
     "const i8v* a, const i16v* b", "__builtin_amdgcn_swmmac_f32_16x16x128_fp8_fp8(a[t], b[t], c[t], s[t], 0, 0)",
     [8, 8, 16, 2]),
]


@pytest.mark.compiler
@pytest.mark.parametrize(("mnemonic", "types", "params", "call", "want"), SWMMAC, ids=[s[0] for s in SWMMAC])
def test_swmmac_is_a_stated_gap_with_compiler_facts(mnemonic, types, params, call, want):
    src = (types + "typedef float f8v __attribute__((ext_vector_type(8)));\n"
           f'extern "C" __attribute__((global)) void k(f8v* o, {params}, const f8v* c, const int* s) '
           f"{{ int t = __builtin_amdgcn_workitem_id_x(); o[t] = {call}; }}\n")
    sizes, line = _tuples(_compile(src), mnemonic)
    assert sizes == want, line  # D, sparse A, B, index
    with pytest.raises(InstructionError):
        lookup(mnemonic, T)
    dense_a = lookup("v_wmma_f32_16x16x128_fp8_fp8", T).registers_for()["A"]
    assert want[1] < dense_a
