"""gfx1250 GEMMs on the two new WMMA forms: ``C = A @ B``, f32 accumulate, wave32.

* ``v_wmma_f32_16x16x128_f8f6f4`` reads A and B in the format its ``matrix_a_fmt`` /
  ``matrix_b_fmt`` fields name (tilesim: ``cbsz`` / ``blgp``, codes 0 fp8, 1 bf8, 2 fp6, 3 bf6,
  4 fp4). In fp8 the
  lanes 0-15 hold the low 16 k of every 32-k block and lanes 16-31 the high 16 (the same registers
  as the dense ``v_wmma_f32_16x16x128_fp8_fp8``); a program loads A and B with the layout of the
  format it selects (``op.layout("A", cbsz=fmt)``). fp6 (e2m3) and bf6 (e3m2) take 12 VGPRs: a
  32-k block per lane half, its two 16-k halves in 3-VGPR groups (``fp6_programs()``).
* ``v_wmma_f32_32x16x128_f4`` (fp4 e2m1) is M=32: A and D are two 16-row halves stacked in the
  VGPRs (A rows 16-31 in VGPRs 8-15, D rows 16-31 in VGPRs 8-15), B is shared.

* Block scales: ``mx_programs()`` (E8M0, block 32 and 16) in tile programs; ``nvfp4_programs()``:
  block-16 scales in E4M3 / E5M3 (``ts.mma(..., a_scale_fmt="e4m3", b_scale_fmt="e5m3")``, the
  ``matrix_*_scale_fmt`` fields 2 / 1), NVFP4-style fp4 GEMMs and an fp8 x bf8 one that compiles;
  ``nvfp4_tile()`` runs one such WMMA at the instruction level.

Sources and confidence: docs/catalog.md (gfx1250 rows). ``programs()`` check, simulate and compile;
``f4_programs()`` check and simulate (4-bit tensors are not emitted yet).
Run: ``python -m examples.gfx1250_gemm``.
"""

# No `from __future__ import annotations`: the kernels' tensor annotations name their formats through
# closure variables, evaluated when each kernel is defined.

import ml_dtypes
import numpy as np

import tilesim as ts

_NP = {"fp8_ocp": ml_dtypes.float8_e4m3fn, "bf8_ocp": ml_dtypes.float8_e5m2, "fp4": ml_dtypes.float4_e2m1fn,
       "fp6": ml_dtypes.float6_e2m3fn, "bf6": ml_dtypes.float6_e3m2fn}
_CODE = {"fp8_ocp": 0, "bf8_ocp": 1, "fp6": 2, "bf6": 3, "fp4": 4}  # matrix_a_fmt / matrix_b_fmt codes


def _make(ta: str, tb: str) -> ts.ir.Kernel:
    def gfx1250_gemm(A: ts.Tensor[ta, "M", "K"], B: ts.Tensor[tb, "K", "N"], C: ts.Tensor["f32", "M", "N"],
                     *, mma="v_wmma_f32_16x16x128_f8f6f4", fa=0, fb=0):
        op = ts.mma_op(mma)
        fmt = {"cbsz": fa, "blgp": fb} if fa or fb else {}  # the formats the instruction reads A and B in
        ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        acc = ts.zeros(op.layout("C"), "f32")
        for k in ts.range(0, A.shape[1], op.k):
            a = ts.load(A[tm * op.m:, k:], op.layout("A", cbsz=fa) if fa else op.layout("A"))
            b = ts.load(B[k:, tn * op.n:], op.layout("B", blgp=fb) if fb else op.layout("B"))
            acc = ts.mma(op, a, b, acc, **fmt)
        ts.store(C[tm * op.m:, tn * op.n:], acc)

    gfx1250_gemm.__name__ = f"gfx1250_gemm_{ta.split('_')[0]}_{tb.split('_')[0]}"
    return ts.kernel(gfx1250_gemm)


KERNELS = {(ta, tb): _make(ta, tb) for ta, tb in (("fp8_ocp", "fp8_ocp"), ("fp4", "fp4"), ("fp6", "bf6"))}


def programs(M: int = 64, N: int = 32, K: int = 256) -> list[ts.Program]:
    """fp8 x fp8 on the format-selected f8f6f4 form (formats 0/0): checked, simulated and compiled."""
    return [KERNELS["fp8_ocp", "fp8_ocp"].specialize(target="gfx1250", M=M, N=N, K=K,
                                                       mma="v_wmma_f32_16x16x128_f8f6f4")]


def f4_programs(M: int = 64, N: int = 32, K: int = 256) -> list[ts.Program]:
    """fp4 x fp4 on the M=32 form: checked and simulated (the code generator does not emit 4-bit tensors yet)."""
    return [KERNELS["fp4", "fp4"].specialize(target="gfx1250", M=M, N=N, K=K, mma="v_wmma_f32_32x16x128_f4")]


def fp6_programs(M: int = 64, N: int = 32, K: int = 256) -> list[ts.Program]:
    """fp6 (e2m3) x bf6 (e3m2) on the f8f6f4 form (formats 2/3): checked and simulated."""
    return [KERNELS["fp6", "bf6"].specialize(target="gfx1250", M=M, N=N, K=K, mma="v_wmma_f32_16x16x128_f8f6f4",
                                               fa=2, fb=3)]


def inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    """Random values of the tensors' formats (no NaN), as float32 the host can hold."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in ("A", "B"):
        t = prog.tensor(name)
        np_t = _NP[t.dtype]
        if t.dtype in ("fp4", "fp6", "bf6"):  # every e2m1 / e2m3 / e3m2 pattern is a number
            codes = rng.integers(0, 16 if t.dtype == "fp4" else 64, t.shape).astype(np.uint8)
        else:
            ok = np.array([b for b in range(256) if np.isfinite(np.uint8(b).view(np_t).astype(np.float32))], np.uint8)
            codes = rng.choice(ok, t.shape)
        out[name] = codes.view(np_t).astype(np.float32)
    return out


def reference(A: np.ndarray, B: np.ndarray) -> dict[str, np.ndarray]:
    return {"C": A.astype(np.float64) @ B.astype(np.float64)}


# ------------------------------------------------------------------ block-scaled (MX) forms
MX_CONFIGS = [  # (instruction, A type, B type, k per scale, A's scale row select, B's)
    ("v_wmma_scale_f32_16x16x128_f8f6f4", "fp8_ocp", "bf8_ocp", 32, 0, 0),
    ("v_wmma_scale16_f32_16x16x128_f8f6f4", "fp8_ocp", "bf8_ocp", 16, 1, 0),  # A's scales in lanes 16-31
    ("v_wmma_scale_f32_32x16x128_f4", "fp4", "fp4", 32, 0, 0),
]


def _make_mx(ta: str, tb: str, sta: str = "e8m0", stb: str = "e8m0") -> ts.ir.Kernel:
    """``sta``/``stb``: the scale tensors' element types (e8m0; fp8_ocp holds E4M3 values; u8 the raw
    scale bytes of any format); ``sfa``/``sfb`` the formats the instruction reads them in."""
    def gfx1250_mx_gemm(A: ts.Tensor[ta, "M", "K"], SA: ts.Tensor[sta, "M", "KB"], B: ts.Tensor[tb, "K", "N"],
                        SB: ts.Tensor[stb, "KB", "N"], C: ts.Tensor["f32", "M", "N"],
                        *, mma="v_wmma_scale_f32_16x16x128_f8f6f4", block=32, row_a=0, row_b=0,
                        sfa="e8m0", sfb="e8m0"):
        op = ts.mma_op(mma)
        fa, fb = _CODE[ta] if op.m == 16 else 0, _CODE[tb] if op.m == 16 else 0  # the M=32 form is fp4 only
        mods = {k: v for k, v in (("cbsz", fa), ("blgp", fb), ("opsel_a", row_a), ("opsel_b", row_b)) if v}
        ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        acc = ts.zeros(op.layout("C"), "f32")
        for k in ts.range(0, A.shape[1], op.k):
            a = ts.load(A[tm * op.m:, k:], op.layout("A", cbsz=fa))
            b = ts.load(B[k:, tn * op.n:], op.layout("B", blgp=fb))
            # the scales of k-blocks k/block ... in bytes 0.. of lane r (+16 with the ROW1 select)
            sa = ts.load(SA[tm * op.m:, k // block:], op.layout("SA", opsel_a=row_a))
            sb = ts.load(SB[k // block:, tn * op.n:], op.layout("SB", opsel_b=row_b))
            acc = ts.mma(op, a, b, acc, scale_a=sa, scale_b=sb, a_scale_fmt=sfa, b_scale_fmt=sfb, **mods)
        ts.store(C[tm * op.m:, tn * op.n:], acc)

    scales = "" if (sta, stb) == ("e8m0", "e8m0") else f"_{sta.split('_')[0]}_{stb.split('_')[0]}"
    gfx1250_mx_gemm.__name__ = f"gfx1250_mx_gemm_{ta.split('_')[0]}_{tb.split('_')[0]}{scales}"
    return ts.kernel(gfx1250_mx_gemm)


MX_KERNELS = {(ta, tb): _make_mx(ta, tb) for _, ta, tb, _, _, _ in MX_CONFIGS}


def mx_programs(M: int = 64, N: int = 32, K: int = 256) -> list[ts.Program]:
    """Block-scaled GEMMs: fp8 x bf8 with block-32 and block-16 (A's scales in lanes 16-31) scales,
    checked, simulated and compiled; fp4 x fp4 on the M=32 form, checked and simulated."""
    return [MX_KERNELS[ta, tb].specialize(target="gfx1250", M=M, N=N, K=K, KB=K // blk, mma=m, block=blk,
                                          row_a=ra, row_b=rb) for m, ta, tb, blk, ra, rb in MX_CONFIGS]


def mx_inputs(prog: ts.Program, seed: int = 0) -> dict[str, np.ndarray]:
    """``inputs`` plus E8M0 scale bytes 121..133 (2**-6 .. 2**6), decoded by ml_dtypes."""
    out = inputs(prog, seed)
    rng = np.random.default_rng(seed + 1000)
    for name in ("SA", "SB"):
        raw = rng.integers(121, 134, prog.tensor(name).shape).astype(np.uint8)
        out[name] = raw.view(ml_dtypes.float8_e8m0fnu).astype(np.float32)
    return out


def mx_reference(A: np.ndarray, SA: np.ndarray, B: np.ndarray, SB: np.ndarray) -> dict[str, np.ndarray]:
    """float64: each block of k of A's rows and B's columns times its scale, then the product."""
    block = np.shape(A)[1] // np.shape(SA)[1]
    kb = np.arange(np.shape(A)[1]) // block
    return {"C": (np.asarray(A, np.float64) * np.asarray(SA, np.float64)[:, kb])
            @ (np.asarray(B, np.float64) * np.asarray(SB, np.float64)[kb, :])}


# ------------------------------------------------------------------ E4M3 / E5M3 scales (NVFP4-style)
# (instruction, A type, B type, SA tensor type, SB tensor type, SA format, SB format), 16 k per scale
SCALE_FMT_CONFIGS = [
    ("v_wmma_scale16_f32_16x16x128_f8f6f4", "fp4", "fp4", "fp8_ocp", "fp8_ocp", "e4m3", "e4m3"),  # NVFP4
    ("v_wmma_scale16_f32_16x16x128_f8f6f4", "fp4", "fp4", "u8", "u8", "e4m3", "e5m3"),  # raw scale bytes
    ("v_wmma_scale16_f32_16x16x128_f8f6f4", "fp8_ocp", "bf8_ocp", "fp8_ocp", "u8", "e4m3", "e5m3"),  # compiles
    ("v_wmma_scale16_f32_32x16x128_f4", "fp4", "fp4", "fp8_ocp", "fp8_ocp", "e4m3", "e4m3"),  # NVFP4, M=32
]
SCALE_FMT_KERNELS = {c[1:5]: _make_mx(*c[1:5]) for c in SCALE_FMT_CONFIGS}


def scale_fmt_program(mma: str, ta: str, tb: str, sta: str, stb: str, sfa: str, sfb: str,
                      M: int = 64, N: int = 32, K: int = 256) -> ts.Program:
    """One block-16 GEMM of :data:`SCALE_FMT_CONFIGS`' shape (any formats: a test plants wrong ones)."""
    return SCALE_FMT_KERNELS[ta, tb, sta, stb].specialize(target="gfx1250", M=M, N=N, K=K, KB=K // 16, mma=mma,
                                                          block=16, sfa=sfa, sfb=sfb)


def nvfp4_programs(M: int = 64, N: int = 32, K: int = 256) -> list[ts.Program]:
    """Block-16 scaled GEMMs whose scales are E4M3 / E5M3 (``a_scale_fmt``/``b_scale_fmt`` =
    ``matrix_*_scale_fmt`` 2 / 1), per :data:`SCALE_FMT_CONFIGS`: all checked and simulated; the
    fp8 x bf8 one also emitted and compiled (4-bit tensors are not emitted yet)."""
    return [scale_fmt_program(*c, M=M, N=N, K=K) for c in SCALE_FMT_CONFIGS]


def _e4m3(c: np.ndarray) -> np.ndarray:
    """OCP FP8 E4M3 bytes -> float64 (sign, bias 7, subnormals m * 2**-9; the inputs hold no NaN)."""
    e, m = (c >> 3) & 15, c & 7
    v = np.where(e == 0, m * 2.0**-9, (1 + m / 8) * np.exp2(e.astype(np.float64) - 7))
    return np.where(c & 0x80, -v, v)


def _e5m3(c: np.ndarray) -> np.ndarray:
    """E5M3 bytes (unsigned, bias 15, subnormals m * 2**-17; AMD rocjitsu fp8_e5m3_to_f32) -> float64."""
    e, m = (c >> 3) & 31, c & 7
    return np.where(e == 0, m * 2.0**-17, (1 + m / 8) * np.exp2(e.astype(np.float64) - 15))


SCALE_BYTES = {"e4m3": ((0x20, 0x58), _e4m3), "e5m3": ((0x58, 0x98), _e5m3)}  # 2**-3..2**4 / 2**-4..2**4


def scale_formats(prog: ts.Program) -> dict[str, str]:
    """The formats the program's scaled mma reads SA and SB in (its a_scale_fmt/b_scale_fmt codes)."""
    from tilesim.matrix.catalog import lookup

    op = next(o for o in prog.walk() if o.kind == "mma_scaled")
    row, mods = lookup(op.attr("instr"), prog.target), dict(op.attr("modifiers") or ())
    return {x: row.scale(x).formats[mods.get(f"{x[1].lower()}_scale_fmt", 0)] for x in ("SA", "SB")}


def nvfp4_inputs(prog: ts.Program, seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(the arrays to run ``prog`` on, the scales as float64 factors): ``inputs`` plus positive scale
    bytes of each format; a u8 tensor gets the bytes, an fp8_ocp tensor the E4M3 values they encode."""
    out, factors = inputs(prog, seed), {}
    rng = np.random.default_rng(seed + 2000)
    for name, fmt in scale_formats(prog).items():
        (lo, hi), dec = SCALE_BYTES[fmt]
        raw = rng.integers(lo, hi + 1, prog.tensor(name).shape).astype(np.int64)
        factors[name] = dec(raw)
        out[name] = raw.astype(np.uint8) if prog.tensor(name).dtype == "u8" else factors[name].astype(np.float32)
    return out, factors


def nvfp4_tile(seed: int = 0, scale_fmt: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """One ``v_wmma_scale16_f32_16x16x128_f8f6f4`` on fp4 (e2m1) A and B with one E4M3 scale per 16 k
    (``matrix_a_scale_fmt = matrix_b_scale_fmt = 2``; 1 reads the bytes as E5M3): the NVFP4 block
    format, at the instruction level (``numerics.execute_scaled``); :func:`nvfp4_programs` are the
    tile programs. Returns (D, the float64 reference)."""
    from tilesim.matrix.catalog import lookup
    from tilesim.matrix.numerics import execute_scaled

    row = lookup("v_wmma_scale16_f32_16x16x128_f8f6f4", "gfx1250")
    rng = np.random.default_rng(seed)
    e2m1 = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    A, B = e2m1[rng.integers(0, 16, (16, 128))], e2m1[rng.integers(0, 16, (128, 16))]
    # positive scale bytes, E4M3 0x20..0x58 = 2**-3..2**4, E5M3 0x58..0x98 = 2**-4..2**4
    lo, hi = (0x20, 0x58) if scale_fmt == 2 else (0x58, 0x98)
    sa, sb = rng.integers(lo, hi + 1, (16, 8)), rng.integers(lo, hi + 1, (8, 16))
    if scale_fmt == 2:
        dec = sa.astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64), \
              sb.astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    else:  # E5M3 (unsigned, bias 15): 2**(e-15) * (1 + m/8)
        dec = tuple(np.ldexp(1 + (x & 7) / 8, (x >> 3) - 15) for x in (sa, sb))
    kb = np.arange(128) // 16
    want = (A * dec[0][:, kb]) @ (B * dec[1][kb, :])
    got = execute_scaled(row, A, B, None, sa, sb, cbsz=4, blgp=4, a_scale_fmt=scale_fmt, b_scale_fmt=scale_fmt)
    return np.asarray(got, np.float64), want


if __name__ == "__main__":
    for prog in programs() + f4_programs() + fp6_programs() + mx_programs():
        mx = "SA" in {t.name for t in prog.tensors}
        arrays = mx_inputs(prog) if mx else inputs(prog)
        got = np.asarray(ts.simulate(prog, **arrays)["C"], np.float64)
        want = (mx_reference if mx else reference)(**arrays)["C"]
        err = np.abs(got - want).max() / max(np.abs(want).max(), 1.0)
        print(f"{prog.name:28} {ts.check(prog).ok and 'check OK':9} max |C - float64| / max|C| = {err:.2e}")
    for prog in nvfp4_programs():
        arrays, factors = nvfp4_inputs(prog)
        got = np.asarray(ts.simulate(prog, **arrays)["C"], np.float64)
        want = mx_reference(arrays["A"], factors["SA"], arrays["B"], factors["SB"])["C"]
        err = np.abs(got - want).max() / max(np.abs(want).max(), 1.0)
        shape = next(o.attr("instr") for o in prog.walk() if o.kind == "mma_scaled").split("_")[4]
        print(f"{prog.name[16:23] + ' ' + shape + ' ' + '/'.join(scale_formats(prog).values()):28} "
              f"{ts.check(prog).ok and 'check OK':9} max |C - float64| / max|C| = {err:.2e}")
    for fmt, name in ((2, "E4M3"), (1, "E5M3")):
        got, want = nvfp4_tile(0, fmt)
        err = np.abs(got - want).max() / max(np.abs(want).max(), 1.0)
        print(f"{'scale16 fp4, ' + name + ' scales':28} {'(instr.)':9} max |D - float64| / max|D| = {err:.2e}")
