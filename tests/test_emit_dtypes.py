"""Every element type and op the simulator takes is emitted (issue 16 item 5): casts between any two
types, elementwise and reduce on every type, convert of 4/6/64-bit elements, LDS of one type into a
buffer of another (64-bit included), packed 4- and 6-bit tensors, loads/stores that change type.

Three kinds of evidence, each independent of the code under test:

* the simulation against the format specifications (tests/_bitcodecs.py, written from IEEE 754 /
  OFP8 / MX) and the cast rule written out here (toward zero, saturate, NaN to 0; ints wrap);
* the emitted code *run*: compiled by the offline AMDGPU clang and executed by the ISA emulator on
  gfx1201 (RDNA4, wave32) and gfx942 (CDNA3, wave64), bit for bit against the simulator (f64
  arithmetic is absent from the emulator: f64 paths are compiled, and their C codecs run on the
  host in tests/test_emit_codecs.py);
* compiler truth: every program compiles for gfx942, gfx950, gfx1100 and gfx1201.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tilesim as ts
from tests import _bitcodecs
from tilesim.codegen.hip import emit_hip
from tilesim.ir import check
from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import DTYPES, decode, from_memory, to_memory

ALL = list(DTYPES)
NO_F64 = [n for n in ALL if n != "f64"]
INTS = {"i32": (-(2**31), 2**31 - 1), "i8": (-128, 127), "u8": (0, 255), "i4": (-8, 7), "u4": (0, 15)}
WAVE_MMA = {"gfx1201": "v_wmma_f32_16x16x16_f16", "gfx1100": "v_wmma_f32_16x16x16_f16",
            "gfx942": "v_mfma_f32_16x16x16f16", "gfx950": "v_mfma_f32_16x16x16f16",
            "sm_90": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"}


def _lay(target: str, operand: str = "C"):
    return lookup(WAVE_MMA[target], target).layout(operand)


def _other(target: str):
    """A second layout of the C tile's shape (convert and LDS targets): A (16x16) on AMD, B (16x8)
    for mma.sync m16n8k16, whose A is 16x16 and C 16x8."""
    return _lay(target, "B" if target.startswith("sm_") else "A")


def _rows(target: str) -> tuple[int, int]:
    d = dict(_lay(target).out_dims)
    return d["row"], d["col"]


def _kernel(fn, annotations: dict, name: str):
    """A kernel whose tensor parameters (names and types) come from ``annotations``; ``fn`` takes
    them positionally in that order."""
    import inspect

    P = inspect.Parameter
    fn.__signature__ = inspect.Signature([P(k, P.POSITIONAL_OR_KEYWORD, annotation=v) for k, v in annotations.items()])
    fn.__annotations__ = annotations
    fn.__name__ = fn.__qualname__ = name
    return ts.kernel(fn)


@functools.cache
def cast_program(src: str, dsts: tuple[str, ...], target: str = "gfx1201"):
    """Y_<dst> = cast(load X, dst) for each dst, and Z_<dst> = X stored into a <dst> tensor (the
    cast on the way out) for the first dst."""
    lay = _lay(target)

    def casts(X, *outs):
        x = ts.load(X[0:, 0:], lay)
        for dt, y in zip(dsts, outs):
            ts.store(y[0:, 0:], ts.cast(x, dt))
        ts.store(outs[-1][0:, 0:], x)

    ann = {"X": ts.Tensor[src, "M", "N"], **{f"Y_{dt}": ts.Tensor[dt, "M", "N"] for dt in dsts},
           "Z": ts.Tensor[dsts[0], "M", "N"]}
    m, n = _rows(target)
    return _kernel(casts, ann, f"casts_{src}").specialize(target=target, M=m, N=n)


def _source_values(src: str, rng: np.random.Generator, size: int) -> np.ndarray:
    """Values of ``src`` covering its patterns: every one for narrow types, specials and random
    ones for wide types."""
    d = DTYPES[src]
    if d.kind in ("int", "uint"):
        lo, hi = INTS[src]
        v = np.concatenate([[lo, hi, 0, 1, -1 if lo < 0 else 2], rng.integers(lo, hi + 1, size)])
        return v[:size].astype(np.float64)
    if d.reg_bits <= 16:
        codes = np.arange(2**d.reg_bits, dtype=np.uint64)
        v = decode(codes, src)
        if v.size > size:
            v = np.concatenate([v[:: max(1, v.size // size)]])
            v = np.concatenate([v, decode(np.array([0x7C00, 0xFC00, 0x7E00, 0x3C01, 0x0001], np.uint64), src)])
        return np.resize(v, size)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.5, 3e38, -3e-39, 2.0**-130, 448.0, 464.0, 57344.0,
               65504.0, 65520.0, 2.0**31, -(2.0**31) - 1, 2.0**31 - 1, 300.0, -129.5, 15.5, 7.75]
    v = np.concatenate([special, rng.standard_normal(size) * np.exp2(rng.integers(-20, 40, size))])[:size]
    if src == "f64":
        v[-8:] = [1 + 2.0**-30, 1 + 2.0**-8 + 2.0**-40, 2.0**200, -(2.0**-1074), 1e-310, 255.999, -7.5, 1e300]
    return v


# ---------------------------------------------------------------------------- the expected cast, from the specs
def _spec_value(v: np.ndarray, dst: str) -> np.ndarray:
    """``v`` (exact src values, float64) as ``dst`` holds them after a cast, from the format rules."""
    if dst in INTS:
        lo, hi = INTS[dst]
        return np.where(np.isnan(v), 0, np.clip(np.trunc(np.nan_to_num(v, posinf=hi, neginf=lo)), lo, hi)) + 0.0
    if dst == "f64":
        return v
    with np.errstate(over="ignore", invalid="ignore"):
        if dst == "f32":
            return v.astype(np.float32).astype(np.float64)
        if dst in ("xf32", "tf32"):  # f32, then the low 13 mantissa bits dropped (numerics.py)
            return (v.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    if dst == "e8m0":
        out = np.full(v.shape, np.nan)
        pos = np.isfinite(v) & (v >= 2.0**-127)
        m, e = np.frexp(v[pos])  # v = m * 2**e, m in [0.5, 1): 2**(e-1) * 2m, rounded half up on 2m
        out[pos] = np.ldexp(1.0, np.where(2 * m >= 1.5, e, e - 1))
        return np.where(out > 2.0**127, np.nan, out)
    pat = _bitcodecs.encode(v, dst)
    return np.where(pat < 0, np.nan, _bitcodecs.decode(np.maximum(pat, 0), dst))  # -1: no NaN pattern (FP6/FP4)


def _int_src(v: np.ndarray, src: str, dst: str) -> np.ndarray:
    if dst in INTS:  # integer to integer: the low bits, two's complement
        lo, hi = INTS[dst]
        return (v.astype(np.int64) - lo) % (hi - lo + 1) + lo
    return _spec_value(v, dst)


def _agree(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))


@pytest.mark.parametrize("src", ALL)
def test_every_cast_simulates_as_the_format_specifications_say(src):
    prog = cast_program(src, tuple(ALL))
    m, n = prog.tensor("X").shape
    x = _source_values(src, np.random.default_rng(3), m * n).reshape(m, n)
    out = ts.simulate(prog, X=x)
    if src not in INTS:
        x = _spec_value(x, src)  # what the src tensor holds
    for dst in ALL:
        want = _int_src(x, src, dst) if src in INTS else _spec_value(x, dst)
        ok = _agree(out[f"Y_{dst}"], want)
        if dst in ("fp6", "bf6", "fp4"):  # no NaN encoding (MX v1.0 §5.3.2 leaves it to the implementation)
            ok |= np.isnan(x)
        if dst == "e8m0":  # below 2**-126 (rounding into the subnormal code) is pinned in test_emit_codecs
            ok |= np.isfinite(x) & (x > 0) & (x < 2.0**-126)
        assert ok.all(), (src, dst, x[~ok][:4], np.asarray(out[f"Y_{dst}"])[~ok][:4], want[~ok][:4])
    assert _agree(out["Z"], out[f"Y_{ALL[0]}"]).all()  # a store into another type is the same cast


def _emulate_same(prog, arrays, names=None):
    from tilesim.isa import emulate_program

    sim = ts.simulate(prog, **arrays)
    emu = emulate_program(prog, arrays)
    for tp in prog.tensors:
        if tp.output and (names is None or tp.name in names):
            assert _agree(emu[tp.name], sim[tp.name]).all(), (prog.name, tp.name)
    return sim, emu


EMU_SOURCES = ["f32", "bf16", "f16", "fp8_ocp", "fp8_fnuz", "bf8_ocp", "fp6", "fp4", "e8m0", "i32", "i8", "u4"]
# Programs whose compiled code uses instructions the ISA emulator does not model yet (16-bit VALU
# results such as v_lshrrev_b16, SDWA compares, v_fma_f16, v_cmp_o_f16, v_rcp_iflag_f32, v_cls_i32,
# v_perm_b32): they are expected to stop with IsaError — and fail if they run and disagree
_GAPS = {("cast", s, t) for s in ("f16", "fp8_ocp", "fp8_fnuz", "bf8_ocp", "i8") for t in ("gfx1201", "gfx942")}
_GAPS |= {("cast", "e8m0", "gfx942"), ("cast", "u4", "gfx942")}
_GAPS |= {("arith", s, t) for s in ("f16", "fp8_ocp", "fp8_fnuz", "bf8_ocp", "bf8_fnuz", "e8m0", "i8", "u8", "i4", "u4")
          for t in ("gfx1201", "gfx942")}
_GAPS |= {("lds", "f16", "i8"), ("lds", "bf16", "fp6")}


def _emu_case(kind: str, a: str, b: str):
    """A parameter pair; wave64 CDNA3 runs and known emulator gaps are slow-only (``--full``)."""
    from tilesim.isa.asm import IsaError

    gap = (kind, a, b) in _GAPS
    marks = [pytest.mark.xfail(raises=IsaError, strict=False, reason="an instruction the ISA emulator does not model")]
    slow = gap or b == "gfx942"
    return pytest.param(a, b, marks=(marks if gap else []) + ([pytest.mark.slow] if slow else []))


@pytest.mark.compiler
@pytest.mark.parametrize(("src", "target"), [_emu_case("cast", s, t) for s in EMU_SOURCES for t in ("gfx1201", "gfx942")])
def test_every_cast_runs_bit_for_bit_in_the_isa_emulator(src, target):
    """The compiled casts, executed: every destination type but f64 (the emulator has no f64 ALU)."""
    prog = cast_program(src, tuple(NO_F64), target)
    m, n = prog.tensor("X").shape
    _emulate_same(prog, {"X": _source_values(src, np.random.default_rng(4), m * n).reshape(m, n)})


@pytest.mark.slow
@pytest.mark.compiler
@pytest.mark.parametrize("target", ["gfx1201", "gfx942"])
@pytest.mark.parametrize("src", [s for s in NO_F64 if s not in EMU_SOURCES])
def test_every_other_cast_runs_bit_for_bit_in_the_isa_emulator(src, target):
    from tilesim.isa.asm import IsaError

    try:
        test_every_cast_runs_bit_for_bit_in_the_isa_emulator(src, target)
    except IsaError as e:  # an emulator gap is no disagreement
        pytest.skip(f"the ISA emulator stops: {str(e)[:120]}")


# ---------------------------------------------------------------------------- elementwise, reduce, convert
@functools.cache
def arith_program(dt: str, target: str = "gfx1201", const: float | int = 2):
    """Y = max(x * x - x, const) and neg, R = reduce sums along rows/cols, V = convert to the A layout."""
    lay, lay_a = _lay(target), _other(target)

    def arith(X, Y, N, R, Q, V):
        x = ts.load(X[0:, 0:], lay)
        ts.store(Y[0:, 0:], ts.maximum(x * x - x, const))
        ts.store(N[0:, 0:], -x / x)
        ts.store(R[0:, 0:], ts.reduce(x, "sum", "col"))
        ts.store(Q[0:, 0:], ts.reduce(x, "max", "row"))
        ts.store(V[0:, 0:], ts.convert(x, lay_a))

    m, n = _rows(target)
    ann = {k: ts.Tensor[dt, "M", "N"] for k in ("X", "Y", "N", "R", "Q", "V")}
    return _kernel(arith, ann, f"arith_{dt}").specialize(target=target, M=m, N=n)


def _small(dt: str, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    d = DTYPES[dt]
    if dt == "e8m0":
        return np.exp2(rng.integers(-3, 4, shape)).astype(np.float64)
    lo, hi = (0, 3) if d.kind == "uint" else (-2, 3)
    v = rng.integers(lo, hi, shape).astype(np.float64)
    return np.where(v == 0, 1.0, v)  # x / x stays finite


def _to(dt: str, v: np.ndarray) -> np.ndarray:
    """A result as the element type holds it: integers wrap, floats round once (the specifications)."""
    return _int_src(np.asarray(v, np.float64), dt, dt) if dt in INTS else _spec_value(np.asarray(v, np.float64), dt)


def _ref_arith(dt: str, x: np.ndarray) -> dict[str, np.ndarray]:
    """Independent float64 reference, each op's result rounded to the type as the program does; max is
    IEEE 754-2008 maxNum (a NaN loses to a number: C fmaxf, v_max_f32 in IEEE mode)."""
    y = _to(dt, np.fmax(_to(dt, _to(dt, x * x) - x), 2))
    return {"Y": y, "N": _to(dt, _to(dt, -x) / x), "R": np.broadcast_to(_to(dt, x.sum(1, keepdims=True)), x.shape),
            "Q": np.broadcast_to(x.max(0, keepdims=True), x.shape), "V": x}


@pytest.mark.parametrize("dt", ALL)
def test_arithmetic_on_every_type_simulates_to_float64(dt):
    prog = arith_program(dt)
    x = _small(dt, prog.tensor("X").shape, np.random.default_rng(5))
    out = ts.simulate(prog, X=x)
    for k, want in _ref_arith(dt, x).items():
        np.testing.assert_array_equal(np.asarray(out[k], np.float64), want, err_msg=f"{dt} {k}")


def test_integer_arithmetic_wraps_and_float_results_saturate():
    """The integer rules written out: i8 127 * 2 wraps to -2 (int64 arithmetic, low bits), a division
    (true division: a float) truncates toward zero and saturates, x/0 is the type's max, 0/0 is 0."""
    lay = _lay("gfx1201")

    def ints(X, W, D, Z):
        x = ts.load(X[0:, 0:], lay)
        ts.store(W[0:, 0:], x * 2)
        ts.store(D[0:, 0:], x / 2)
        ts.store(Z[0:, 0:], x / (x - x))

    prog = _kernel(ints, {k: ts.Tensor["i8", "M", "N"] for k in "XWDZ"}, "ints").specialize(target="gfx1201", M=16, N=16)
    x = np.resize(np.array([127, -128, -7, 7, 0, 64, -65, 1], np.float64), (16, 16))
    out = ts.simulate(prog, X=x)
    np.testing.assert_array_equal(out["W"], (x.astype(np.int64) * 2 + 128) % 256 - 128)
    np.testing.assert_array_equal(out["D"], np.trunc(x / 2))
    np.testing.assert_array_equal(out["Z"], np.where(x > 0, 127, np.where(x < 0, -128, 0)))
    assert check(prog).paths["emit"].ok


@pytest.mark.compiler
@pytest.mark.parametrize(("dt", "target"), [_emu_case("arith", s, t) for s in NO_F64 for t in ("gfx1201", "gfx942")])
def test_arithmetic_on_every_type_runs_bit_for_bit_in_the_isa_emulator(dt, target):
    prog = arith_program(dt, target)
    x = _small(dt, prog.tensor("X").shape, np.random.default_rng(6))
    _emulate_same(prog, {"X": x})


# ---------------------------------------------------------------------------- LDS of one type into a buffer of another
@functools.cache
def lds_program(frag_t: str, buf_t: str, target: str = "gfx1201"):
    lay, lay_a = _lay(target), _other(target)
    m, n = _rows(target)

    def lds(X, Y):
        x = ts.load(X[0:, 0:], lay)
        buf = ts.lds_alloc(buf_t, m, n)
        ts.lds_store(buf, 0, 0, x)
        ts.barrier()
        ts.store(Y[0:, 0:], ts.lds_load(buf, 0, 0, lay_a))

    return _kernel(lds, {"X": ts.Tensor[frag_t, "M", "N"], "Y": ts.Tensor[frag_t, "M", "N"]},
                   f"lds_{frag_t}_{buf_t}").specialize(target=target, M=m, N=n)


LDS_PAIRS = [("f64", "f64"), ("f32", "f64"), ("f64", "f32"), ("f32", "bf16"), ("f32", "fp8_ocp"), ("f16", "i8"),
             ("f32", "fp4"), ("i32", "i4"), ("bf16", "fp6"), ("fp8_fnuz", "f16"), ("i8", "f32"), ("e8m0", "f32")]


@pytest.mark.parametrize(("frag_t", "buf_t"), LDS_PAIRS)
def test_lds_through_a_buffer_of_another_type_is_a_cast_there_and_back(frag_t, buf_t):
    prog = lds_program(frag_t, buf_t)
    x = _source_values(frag_t, np.random.default_rng(7), 256).reshape(16, 16)
    out = ts.simulate(prog, X=x)
    xv = ts.simulate(cast_program(frag_t, (frag_t,)), X=x)["Y_" + frag_t]  # x as the fragment holds it
    there = _int_src(xv, frag_t, buf_t) if frag_t in INTS else _spec_value(xv, buf_t)
    back = _int_src(there, buf_t, frag_t) if buf_t in INTS else _spec_value(there, frag_t)
    ok = _agree(out["Y"], back) | (np.isnan(xv) & (buf_t in ("fp6", "bf6", "fp4")))
    assert ok.all(), (frag_t, buf_t, xv[~ok][:4], np.asarray(out["Y"])[~ok][:4], back[~ok][:4])


@pytest.mark.compiler
@pytest.mark.parametrize(("frag_t", "buf_t"), [_emu_case("lds", a, b) for a, b in LDS_PAIRS if "f64" not in (a, b)])
def test_lds_of_another_type_runs_bit_for_bit_in_the_isa_emulator(frag_t, buf_t):
    x = _source_values(frag_t, np.random.default_rng(8), 256).reshape(16, 16)
    _emulate_same(lds_program(frag_t, buf_t), {"X": x})


# ---------------------------------------------------------------------------- packed tensors
def test_packed_memory_layout_is_a_little_endian_bit_stream():
    """Hand-computed bytes: 4-bit elements two a byte, the first in the low nibble; 6-bit elements
    at bit 6i; padded to whole 32-bit words."""
    assert to_memory(np.array([1, 2, 3, 15, 0, 7]), "i4").tolist() == [0x21, 0xF3, 0x70, 0x00]
    b = to_memory(np.array([0x3F, 0x01, 0x20, 0x15]), "fp6")  # bits: 111111 100000 000001 101010
    assert b.tolist() == [0x7F, 0x00, 0x56, 0x00]
    for dt, w in (("i4", 4), ("fp4", 4), ("fp6", 6), ("bf6", 6), ("u4", 4)):
        bits = np.random.default_rng(w).integers(0, 2**w, (5, 7)).astype(np.uint64)
        mem = to_memory(bits, dt)
        assert mem.dtype == np.uint8 and mem.size % 4 == 0 and mem.size * 8 >= 35 * w
        np.testing.assert_array_equal(from_memory(mem, dt, (5, 7)), bits)


@pytest.mark.compiler
@pytest.mark.parametrize("target", ["gfx1201", pytest.param("gfx942", marks=pytest.mark.slow)])
@pytest.mark.parametrize("dt", ["i4", "u4", "fp4", "fp6", "bf6"])
def test_packed_tensors_load_and_store_in_the_isa_emulator(dt, target):
    """A packed tensor read, cast to f32 and back (so the bits pass through registers), and stored
    packed again by lanes that share bytes and words (atomic and/or)."""
    prog = cast_program(dt, (dt, "f32"), target)
    m, n = prog.tensor("X").shape
    x = _source_values(dt, np.random.default_rng(9), m * n).reshape(m, n)
    sim, _ = _emulate_same(prog, {"X": x})
    assert _agree(sim[f"Y_{dt}"], np.asarray(ts.simulate(cast_program(dt, (dt,)), X=x.astype(np.float64))["Y_" + dt])
                  if target == "gfx1201" else sim[f"Y_{dt}"]).all()
    assert _agree(sim["Z"], sim[f"Y_{dt}"]).all() and not np.isnan(np.asarray(sim["Z"], np.float64)).all()


# ---------------------------------------------------------------------------- nothing is refused, everything compiles
def _programs(target: str, full: bool) -> list:
    if not full:  # one of each kind of new emission: f64 math, 64-bit LDS, a narrow-float and an int path
        return [cast_program("f64", tuple(ALL), target), arith_program("fp8_ocp", target), arith_program("i8", target),
                lds_program("f32", "f64", target)]
    out = [cast_program(src, tuple(ALL), target) for src in ("f32", "f64", "bf16", "fp8_fnuz", "fp6", "i4", "i32")]
    out += [arith_program(dt, target) for dt in ("f64", "f16", "bf16", "fp8_ocp", "fp4", "fp6", "e8m0", "i8", "u4", "i32")]
    out += [lds_program(a, b, target) for a, b in LDS_PAIRS[:6]]
    return out


@pytest.mark.compiler
@pytest.mark.parametrize("full", [False, pytest.param(True, marks=pytest.mark.slow)])
@pytest.mark.parametrize("target", ["gfx942", "gfx950", "gfx1100", "gfx1201"])
def test_every_typed_program_is_emitted_and_compiles(target, full):
    from tilesim.hw.offline import compile_hip

    for prog in _programs(target, full):
        rep = check(prog)
        assert rep.paths["emit"].ok and rep.paths["compile"].ok, (prog.name, rep.paths["emit"])
        comp = compile_hip(emit_hip(prog).source, target)
        assert comp.metadata["vgpr_count"] > 0, prog.name


@pytest.mark.slow
@pytest.mark.compiler
@pytest.mark.parametrize("target", ["gfx942", "gfx950", "gfx1100", "gfx1201"])
@pytest.mark.parametrize("src", ALL)
def test_every_cast_source_compiles(target, src):
    from tilesim.hw.offline import compile_hip

    compile_hip(emit_hip(cast_program(src, tuple(ALL), target)).source, target)


def test_nvidia_sources_are_emitted_for_every_type():
    """sm_90: the same typed code (NVRTC compiles it on the device, tests/test_nvidia_hardware.py)."""
    for prog in [cast_program("f32", tuple(ALL), "sm_90"), arith_program("f64", "sm_90"), arith_program("i8", "sm_90")]:
        src = emit_hip(prog).source
        assert check(prog).paths["emit"].ok and "atomicAnd" in src or "ts_st_bits" not in src


# ---------------------------------------------------------------------------- vectors onto fragments (bias)
def test_gemm_bias_example_matches_float64_on_every_target():
    from examples import gemm_bias

    for prog in gemm_bias.programs():
        arrays = gemm_bias.inputs(prog)
        rep = check(prog)
        assert rep.ok and rep.paths["emit"].ok, (prog.target, rep)
        got = np.asarray(ts.simulate(prog, **arrays)["C"], np.float64)
        want = gemm_bias.reference(**arrays)["C"]
        # f32 accumulation differs from float64 by far less than half a bf16 ulp here, so the one bf16
        # rounding gives the same value except at a rounding boundary: allow one bf16 ulp
        assert np.all(np.abs(got - want) <= np.abs(want) * 2.0**-7 + 1e-30), prog.target
        assert (got > 0).any() and (got == 0).any()  # the ReLU clipped some values and kept others


@pytest.mark.compiler
@pytest.mark.parametrize("target", ["gfx1201", "gfx942"])
def test_gemm_bias_runs_bit_for_bit_in_the_isa_emulator(target):
    from examples import gemm_bias

    prog = next(p for p in gemm_bias.programs() if p.target == target)
    _emulate_same(prog, gemm_bias.inputs(prog))


@functools.cache
def _vector_program(axis: str, vec_shape: tuple[int, int], target: str = "gfx1201"):
    lay = _lay(target)
    load = ts.load_row if axis == "row" else ts.load_col

    def vec(X, V, Y):
        x = ts.load(X[0:, 0:], lay)
        ts.store(Y[0:, 0:], x * load(V[0:, 0:], lay))

    return _kernel(vec, {"X": ts.Tensor["f32", "M", "N"], "V": ts.Tensor["f32", vec_shape[0], vec_shape[1]],
                         "Y": ts.Tensor["f32", "M", "N"]}, f"vec_{axis}").specialize(target=target, M=16, N=16)


@pytest.mark.parametrize("axis", ["row", "col"])
def test_load_row_and_load_col_broadcast_a_vector(axis):
    shape = (1, 16) if axis == "row" else (16, 1)
    prog = _vector_program(axis, shape)
    rng = np.random.default_rng(10)
    x, v = rng.integers(-4, 5, (16, 16)).astype(np.float64), rng.integers(-4, 5, shape).astype(np.float64)
    np.testing.assert_array_equal(ts.simulate(prog, X=x, V=v)["Y"], x * v)  # numpy broadcasting is the intent
    op = next(o for o in prog.walk() if o.kind == "load" and o.attr("tensor") == "V")
    assert op.attr("broadcast") == axis
    again = type(prog).from_json(prog.to_json())
    assert next(o for o in again.walk() if o.kind == "load" and o.attr("tensor") == "V").attr("broadcast") == axis


@pytest.mark.parametrize(("axis", "shape", "where"), [("row", (1, 8), "V[0][8]"), ("col", (8, 1), "V[8][0]")])
def test_a_vector_shorter_than_the_tile_is_reported_by_check(axis, shape, where):
    """The vector load's reads are analysed like any load's: 16 elements read from an 8-element
    vector, 8 per row (or column) of the 16 the broadcast repeats them in: 128 masked reads."""
    rep = check(_vector_program(axis, shape))
    found = [str(f) for f in rep.findings]
    assert any("128 element loads outside V" in f and f"load from {where} (shape {shape[0]}x{shape[1]})" in f
               for f in found), found
