"""Every catalog instruction in a one-mma tile program: the registers the program loads agree with
``row.layout("A").locations()`` bit for bit, and the product matches numpy float64/int64 computed here;
NEG modifiers on packed f16; element-wise ops on two element types are refused.

No expected value is copied from tilesim's own output.
"""

# No `from __future__ import annotations`: the one-mma kernels name their tensor types through
# closure variables, evaluated when each kernel is defined.

import functools

import ml_dtypes
import numpy as np
import pytest

import tilesim as ts
from tilesim.matrix import lookup
from tilesim.matrix.catalog import rows
from tilesim.matrix.sparse import compress


def _f64(x):
    return np.asarray(x).astype(np.float64)


# ------------------------------------------------------------------------ every catalog instruction
_NP = {"f64": np.float64, "f32": np.float32, "xf32": np.float32, "tf32": np.float32, "f16": np.float16,
       "bf16": ml_dtypes.bfloat16, "fp8_fnuz": ml_dtypes.float8_e4m3fnuz, "bf8_fnuz": ml_dtypes.float8_e5m2fnuz,
       "fp8_ocp": ml_dtypes.float8_e4m3fn, "bf8_ocp": ml_dtypes.float8_e5m2, "i8": np.int8, "u8": np.uint8,
       "i32": np.int32, "fp4": ml_dtypes.float4_e2m1fn}
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _decode_bits(bits, t):
    """Raw element bits -> value, with numpy/ml_dtypes views (independent of tilesim's codec)."""
    if t in ("i4", "u4"):
        return bits - 16 if t == "i4" and bits >= 8 else bits
    width = 32 if t in ("xf32", "tf32") else np.dtype(_NP[t]).itemsize * 8
    return np.array([bits], _UINT[width]).view(_NP[t])[0].item()


@functools.lru_cache(maxsize=None)
def _one_mma(ta, tb, tc, td):
    def one_mma(A: ts.Tensor[ta, "M", "K"], B: ts.Tensor[tb, "KB", "N"], C: ts.Tensor[tc, "M", "N"],
                D: ts.Tensor[td, "M", "N"], *, mma="", mods=()):
        op = ts.mma_op(mma)
        a = ts.load(A[0:, 0:], op.layout("A"))
        b = ts.load(B[0:, 0:], op.layout("B"))
        c = ts.load(C[0:, 0:], op.layout("C"))
        ts.store(D[0:, 0:], ts.mma(op, a, b, c, **dict(mods)))

    return ts.kernel(one_mma)


@functools.lru_cache(maxsize=None)
def _one_sparse_mma(ta, tb, tc, td):
    def one_sparse_mma(Av: ts.Tensor[ta, "M", "KC"], Am: ts.Tensor["u8", "M", "KM"], B: ts.Tensor[tb, "K", "N"],
                       C: ts.Tensor[tc, "M", "N"], D: ts.Tensor[td, "M", "N"], *, mma=""):
        op = ts.mma_op(mma)
        a, meta = ts.load(Av[0:, 0:], op.layout("A")), ts.load(Am[0:, 0:], op.layout("index"))
        b, c = ts.load(B[0:, 0:], op.layout("B")), ts.load(C[0:, 0:], op.layout("C"))
        ts.store(D[0:, 0:], ts.mma(op, a, b, c, index=meta))

    return ts.kernel(one_sparse_mma)


def _skip_reason(row):
    if "_scale_" in row.mnemonic or "_scale16_" in row.mnemonic:
        return "scaled MFMA/WMMA: the DSL has no per-block scale operands (e8m0)"
    return None


SLICE = {  # one row per family runs always; --full runs every row and wave size
    ("cdna1", "v_mfma_i32_32x32x8i8"), ("cdna2", "v_mfma_f64_16x16x4f64"), ("cdna3", "v_mfma_f32_16x16x32_fp8_fp8"),
    ("cdna4", "v_mfma_f32_32x32x64_f8f6f4"), ("rdna3", "v_wmma_f32_16x16x16_f16"), ("rdna4", "v_wmma_i32_16x16x16_iu8"),
    ("gfx1250", "v_wmma_f32_16x16x4_f32"), ("sm80", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("cdna3", "v_smfmac_f32_16x16x32_f16"), ("rdna4", "v_swmmac_i32_16x16x32_iu8"), ("cdna2", "v_mfma_f32_4x4x4f16"),
    ("sm89", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"),
}
ROW_CASES = [
    pytest.param(r, w, id=f"{r.family}:{r.mnemonic}:w{w}",
                 marks=() if (r.family, r.mnemonic) in SLICE and w == r.wave_sizes[0] else pytest.mark.slow)
    for r in rows() if _skip_reason(r) is None for w in r.wave_sizes
]


def test_the_slice_has_one_row_per_family_and_skips_are_explained():
    assert {f for f, _ in SLICE} == {r.family for r in rows()}
    assert any(r.sparse for r in rows() if (r.family, r.mnemonic) in SLICE)
    assert any(r.blocks > 1 for r in rows() if (r.family, r.mnemonic) in SLICE)
    assert all(any(p.values[0].mnemonic == m and p.values[0].family == f for p in ROW_CASES) for f, m in SLICE)
    skipped = [r for r in rows() if _skip_reason(r)]
    assert all("_scale_" in r.mnemonic or "_scale16_" in r.mnemonic for r in skipped)


@pytest.mark.parametrize(("row", "wave"), ROW_CASES)
def test_every_instruction_in_a_tile_program(row, wave):
    """Multi-block rows: the blocks stacked as rows (A (blocks*M) x K, B (blocks*K) x N), one product
    per block. Sparse rows: A pruned to 2 of 4, loaded compressed with its metadata bytes."""
    ta, tb, tc, td = row.types
    target = row.targets[0]
    nb = row.blocks
    rng = np.random.default_rng(hash((row.mnemonic, wave)) % 2**32)
    lo = 0 if ta.startswith("u") else -2  # small integers: exact in every type, sums exact in D
    A = rng.integers(lo, 3, (nb * row.m, row.k)).astype(np.float64)
    B = rng.integers(0 if tb.startswith("u") else -2, 3, (nb * row.k, row.n)).astype(np.float64)
    C = rng.integers(-2, 3, (nb * row.m, row.n)).astype(np.float64)
    if row.sparse:
        pairs = np.array([(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)])  # every 2:4 pattern
        keep = pairs[(np.arange(row.m)[:, None] + np.arange(row.k // 4)[None, :]) % 6]
        mask = np.zeros((row.m, row.k // 4, 4), bool)
        np.put_along_axis(mask, keep, True, -1)
        A = np.where(mask.reshape(row.m, row.k), A, 0)
        values, meta = compress(A)
        prog = _one_sparse_mma(ta, tb, tc, td).specialize(target=target, wave_size=wave, M=row.m, N=row.n, K=row.k,
                                                          KC=row.k // 2, KM=row.k // 8, mma=row.mnemonic)
        res = ts.simulate(prog, Av=values, Am=meta, B=B, C=C)
    else:
        prog = _one_mma(ta, tb, tc, td).specialize(target=target, wave_size=wave, M=nb * row.m, N=row.n, K=row.k,
                                                     KB=nb * row.k, mma=row.mnemonic)
        res = ts.simulate(prog, A=A, B=B, C=C)
    assert ts.check(prog).ok, str(ts.check(prog))
    want = np.einsum("bmk,bkn->bmn", A.reshape(nb, row.m, row.k), B.reshape(nb, row.k, row.n)).reshape(C.shape) + C
    np.testing.assert_array_equal(_f64(res["D"]), want)
    assert res.report.replication_count == 0
    if row.sparse:  # the A fields as the catalog (= AMD's calculator) places each group: kept values in order
        load_a = next(op for op in prog.walk() if op.kind == "load" and op.attr("tensor") == "Av")
        regs = res.registers[load_a.out.id][0, 0].astype(np.uint64)
        half = ts.lookup(row.mnemonic, target).dtypes[0].reg_bits
        for loc in row.layout("A", wave_size=wave).locations():
            if loc.col % 4 == 0:
                field = int(regs[loc.lane, loc.vgpr]) >> loc.bit_lo
                for p in (0, 1):
                    bits = (field >> (p * half)) & ((1 << half) - 1)
                    assert _decode_bits(bits, ta) == values[loc.row, loc.col // 2 + p], (loc, p)
        return
    # the loaded A fragment, bit for bit, where the catalog says the instruction reads A[i][k]
    load_a = next(op for op in prog.walk() if op.kind == "load" and op.attr("tensor") == "A")
    regs = res.registers[load_a.out.id][0, 0].astype(np.uint64)
    nregs = regs.shape[1]
    locs = row.layout("A", wave_size=wave).locations()
    assert len(locs) >= row.m * row.k
    for loc in locs:
        word = int(regs[loc.lane, loc.vgpr]) | (int(regs[loc.lane, loc.vgpr + 1]) << 32 if loc.vgpr + 1 < nregs else 0)
        bits = (word >> loc.bit_lo) & ((1 << (loc.bit_hi - loc.bit_lo + 1)) - 1)
        assert _decode_bits(bits, ta) == A[loc.block * row.m + loc.row, loc.col], loc


@pytest.mark.parametrize(("neg", "neg_hi"), [(1, 0), (0, 1), (3, 3), (2, 0), (4, 0), (0, 4), (7, 7)])
def test_mma_neg_modifiers_on_packed_f16(neg, neg_hi):
    """RDNA4 f16 WMMA: NEG[0]/NEG[1] negate the A/B elements in the low 16 bits of their VGPRs,
    NEG_HI those in the high bits (both: the whole operand); NEG[2] negates C, NEG_HI[2] takes
    |C| (RDNA4 ISA §7.9). Which elements sit high is read from the catalog's locations."""
    row = lookup("v_wmma_f32_16x16x16_f16", "gfx1201")
    prog = _one_mma(*row.types).specialize(target="gfx1201", M=16, N=16, K=16, KB=16, mma=row.mnemonic,
                                           mods=(("neg", neg), ("neg_hi", neg_hi)))
    rng = np.random.default_rng(neg * 8 + neg_hi)
    A, B, C = (rng.integers(-3, 4, (16, 16)).astype(np.float64) for _ in range(3))
    ops = {}
    for bit, (name, X) in enumerate((("A", A), ("B", B))):
        high = np.zeros(X.shape, bool)
        for loc in row.layout(name).locations():
            high[loc.row, loc.col] = loc.bit_lo >= 16
        flip = (high & bool(neg_hi >> bit & 1)) | (~high & bool(neg >> bit & 1))
        ops[name] = np.where(flip, -X, X)
    Cw = np.abs(C) if neg_hi & 4 else C
    Cw = -Cw if neg & 4 else Cw
    got = ts.simulate(prog, A=A, B=B, C=C)["D"]
    np.testing.assert_array_equal(_f64(got), ops["A"] @ ops["B"] + Cw)


def test_elementwise_on_fragments_of_two_element_types_is_rejected():
    # Same layout and width (f32, i32): the simulator would read the i32 bits as f32; the DSL refuses.
    lay = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")

    @ts.kernel
    def mixed(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        x = ts.load(X[0:, 0:], lay)
        ts.store(Y[0:, 0:], x + x.to("i32"))

    with pytest.raises(ts.VerifyError, match="f32 and a i32 fragment; ts.cast one first"):
        mixed.specialize(target="gfx1201", M=16, N=16)
