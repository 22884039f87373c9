"""The examples, checked against numpy float64/int64 references computed here.

* every example program: simulated outputs match the reference within the catalog's tolerance for
  random inputs, and exactly for structured probes (one-hot "select k" operands: a k permutation on
  one operand, a lane or VGPR mix-up shows at once);
* planted bugs — one lane off, a VGPR swap, RDNA3 replicas dropped, the gfx12 accumulator formula
  on gfx11, a missing barrier — are each reported by ``ts.check`` (operand, lane, VGPR) or by the
  simulator's diff, blamed through the store layout to the lane/VGPR that wrote the wrong element;
* the fp8 flavours (FNUZ on gfx942, OCP on gfx950/gfx12), iu8 signedness (NEG bits), LDS bank
  conflicts and races;
* every catalog instruction in a one-mma program: tests/test_every_instruction.py.

No expected value is copied from tilesim's own output.
"""

# No `from __future__ import annotations`: the one-mma kernels name their tensor types through
# closure variables, evaluated when each kernel is defined.

import contextlib
import functools
import io
import re
import runpy

import ml_dtypes
import numpy as np
import pytest

import tilesim as ts
from examples import block_gemm, fp8_gemm, gemm, gemm_abt, int8_gemm, lds_gemm, softmax
from tilesim.layouts import Layout
from tilesim.matrix import lookup
from tilesim.matrix.numerics import tolerance

MODULES = {"gemm": gemm, "gemm_abt": gemm_abt, "lds_gemm": lds_gemm, "softmax": softmax, "int8_gemm": int8_gemm,
           "fp8_gemm": fp8_gemm, "block_gemm": block_gemm}
# GEMM-shaped examples: (output, A input, B input, B stored N x K, extra zero inputs)
GEMMS = {"gemm": ("C", "A", "B", False, ()), "gemm_abt": ("D", "A", "B", True, ("C",)),
         "lds_gemm": ("C", "A", "B", False, ()), "int8_gemm": ("C", "A", "B", False, ("Bias",)),
         "fp8_gemm": ("C", "A", "B", False, ()), "block_gemm": ("C", "A", "B", False, ())}


def _programs(name):
    mod = MODULES[name]
    progs = mod.programs()
    if name == "lds_gemm":  # every shared layout, not only the default
        progs += [p for smem in ("plain", "padded") for p in mod.programs(smem=smem)]
    return progs


CASES = [pytest.param(name, i, id=f"{name}-{p.target}-{i}") for name in MODULES for i, p in enumerate(_programs(name))]


@functools.lru_cache(maxsize=None)
def _program(name, i):
    return _programs(name)[i]


def _row(prog):
    mma = next(op for op in prog.walk() if op.kind == "mma")
    return lookup(mma.attr("instr"), prog.target)


def _f64(x):
    return np.asarray(x).astype(np.float64)


# ------------------------------------------------------------------------ comparisons
def _assert_gemm_close(name, prog, arrays, out):
    """|D - D64| <= rtol * (|A|·|B| + |C|) + atol: the recursive-summation bound with the catalog's
    per-rounding tolerance over K terms (the simulator rounds to the accumulator once per mma)."""
    o, a, b, bt, extra = GEMMS[name]
    ref = MODULES[name].reference(**arrays)[o]
    got = out[o]
    if np.issubdtype(got.dtype, np.integer):
        np.testing.assert_array_equal(got.astype(np.int64), ref)
        return 0.0
    A, B = _f64(arrays[a]), _f64(arrays[b])
    if name == "gemm_abt":
        A = _f64(arrays[a].astype(np.float16))  # the kernel converts the activations to f16
    mag = np.abs(A) @ np.abs(B.T if bt else B) + sum(np.abs(_f64(arrays[e])) for e in extra)
    rtol, atol = tolerance(_row(prog), k_terms=A.shape[1])
    err = np.abs(_f64(got) - ref)
    assert (err <= rtol * mag + atol).all(), f"{prog.target}: max error {err.max():.3e}, bound {rtol:.2e}*|A||B|"
    return float(err.max())


def _assert_softmax_close(prog, arrays, out):
    """f32 softmax: the subtraction x - max rounds (2**-24 |x - m| absolute, which exp turns into
    relative error), then exp, the per-fragment sums, the adds across fragments and the division
    round once each; 16 half-ulps covers them for these widths."""
    x = _f64(arrays["X"])
    ref = softmax.reference(**arrays)["Y"]
    rel = np.abs(_f64(out["Y"]) - ref) / ref
    bound = 2.0**-24 * (np.abs(x - x.max(axis=1, keepdims=True)) + 16)
    assert (rel <= bound).all(), f"{prog.target}: max relative error {rel.max():.3e}"
    return float(rel.max())


# ------------------------------------------------------------------------ random inputs
@pytest.mark.parametrize(("name", "i"), CASES)
def test_example_matches_float64_reference_on_random_inputs(name, i):
    prog = _program(name, i)
    assert ts.check(prog).ok, str(ts.check(prog))
    for seed in (0, 1):
        arrays = MODULES[name].inputs(prog, seed)
        res = ts.simulate(prog, **arrays)
        assert res.report.race_count == 0 and res.report.oob_count == 0 and res.report.replication_count == 0
        if name == "softmax":
            _assert_softmax_close(prog, arrays, res.outputs)
        else:
            _assert_gemm_close(name, prog, arrays, res.outputs)


# ------------------------------------------------------------------------ probes
def _encodings(k):
    # Two small-integer codes that together identify k (exact in every input type, fp8 included).
    return (k % 16 + 1, k // 16 + 1)


def _gemm_probes(name, prog):
    """One-hot "select k" operands: row i of A (or column j of B) is 1 at a single k, the other
    operand encodes k, so D names the k each output read. Entries and sums are small integers."""
    o, a, b, bt, extra = GEMMS[name]
    (M, K) = prog.tensor(a).shape
    N = prog.tensor(b).shape[0 if bt else 1]
    i, j, k = np.arange(M)[:, None], np.arange(N)[None, :], np.arange(K)
    for enc in range(2):
        code = np.array([_encodings(kk)[enc] for kk in k], np.float64)
        for s in range(0, K, min(M, N)):
            A = (k[None, :] == (i + s) % K).astype(np.float64)  # row i selects k = (i + s) % K
            B = code[:, None] * (1 + j % 2)
            yield A, B
            A = code[None, :] * (1 + i % 2)
            B = (k[:, None] == (j + s) % K).astype(np.float64)  # column j selects k = (j + s) % K
            yield A, B


def _as_input(prog, tensor, values):
    dt = prog.tensor(tensor).dtype
    np_dt = {"f16": np.float16, "f32": np.float32, "i8": np.int8, "i32": np.int32, "fp8_fnuz": np.float32,
             "fp8_ocp": np.float32}[dt]
    return values.astype(np_dt)


@pytest.mark.parametrize(("name", "i"), [c for c in CASES if c.values[0] in GEMMS])
def test_gemm_examples_are_exact_on_one_hot_probes(name, i):
    prog = _program(name, i)
    o, a, b, bt, extra = GEMMS[name]
    for A, B in _gemm_probes(name, prog):
        arrays = {a: _as_input(prog, a, A), b: _as_input(prog, b, B.T if bt else B)}
        arrays.update({e: np.zeros(prog.tensor(e).shape, np.float32 if e == "C" else np.int32) for e in extra})
        want = A @ B  # exact: entries are small integers
        got = ts.simulate(prog, **arrays)[o]
        np.testing.assert_array_equal(_f64(got), want, err_msg=f"{prog.target} probe")


@pytest.mark.parametrize(("name", "i"), [c for c in CASES if c.values[0] == "softmax"])
def test_softmax_probe_rows_do_not_mix(name, i):
    """Rows with very different offsets and a distinct ramp per row: any exchange of elements
    between rows or columns (a wrong reduction axis, a wrong lane map) moves probability mass."""
    prog = _program(name, i)
    M, N = prog.tensor("X").shape
    r, c = np.arange(M)[:, None], np.arange(N)[None, :]
    X = (40.0 * (r % 5) - 0.5 * ((7 * c + 3 * r) % N)).astype(np.float32)  # exact in f32
    res = ts.simulate(prog, X=X)
    _assert_softmax_close(prog, {"X": X}, res.outputs)
    assert np.allclose(res["Y"].sum(axis=1), 1.0, rtol=1e-6)


def test_examples_run_as_scripts():
    for name, mod in MODULES.items():
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            runpy.run_path(mod.__file__, run_name="__main__")  # what `python -m examples.NAME` runs
        assert buf.getvalue().strip(), name


# ------------------------------------------------------------------------ gemm_abt
def test_abt_cast_keeps_the_a_layout_and_feeds_the_instruction_its_a_operand():
    for prog in gemm_abt.programs():
        row = _row(prog)
        ops = prog.walk()
        load_a = next(op for op in ops if op.kind == "load" and op.attr("tensor") == "A")
        cast = next(op for op in ops if op.kind == "cast")
        mma = next(op for op in ops if op.kind == "mma")
        hw_a = row.layout("A", wave_size=prog.wave_size)
        assert load_a.out.dtype == "f32" and load_a.out.layout == hw_a.with_elem_bits(32)
        assert cast.out.dtype == "f16" and cast.out.layout == hw_a  # same lane/slot map, 16-bit slots
        assert mma.args[0].id == cast.out.id
        assert load_a.out.layout.registers_per_lane() == 2 * cast.out.layout.registers_per_lane()
        # registers of the converted fragment: each location of the hardware A layout holds f16(A[i][k])
        arrays = gemm_abt.inputs(prog)
        res = ts.simulate(prog, **arrays)
        regs = res.registers[cast.out.id][-1, 0]  # last workgroup, last k-step
        last_k = prog.tensor("A").shape[1] - row.k
        tm = (prog.workgroups - 1) % prog.grid[0]
        for loc in hw_a.locations():
            bits = (int(regs[loc.lane, loc.vgpr]) >> loc.bit_lo) & 0xFFFF
            want = arrays["A"][tm * row.m + loc.row, last_k + loc.col].astype(np.float16)
            assert bits == int(want.view(np.uint16)), loc


# ------------------------------------------------------------------------ int8
def test_iu8_wmma_is_unsigned_unless_neg_bits_say_signed():
    signed, unsigned = int8_gemm.programs(), int8_gemm.programs(signed=False)
    for prog in signed + unsigned:
        arrays = int8_gemm.inputs(prog, seed=3)
        got = ts.simulate(prog, **arrays)["C"].astype(np.int64)
        row = _row(prog)
        neg_kind = row.modifier("neg").kind if row.modifier("neg") else None
        as_unsigned = neg_kind == "signedness" and prog in unsigned  # iu8 with NEG = 0 reads 0..255
        A, B = ((arrays[n].view(np.uint8) if as_unsigned else arrays[n]).astype(np.int64) for n in "AB")
        exact = A @ B + arrays["Bias"].astype(np.int64)
        wrapped = (exact + 2**31) % 2**32 - 2**31
        np.testing.assert_array_equal(got, wrapped, err_msg=f"{prog.target} neg_kind={neg_kind}")
        assert (wrapped != exact).any()  # the bias drives some sums past the int32 range
    # the unsigned reading of negative bytes really is wrong for a signed GEMM
    p = unsigned[1]
    arrays = int8_gemm.inputs(p)
    assert (ts.simulate(p, **arrays)["C"] != int8_gemm.reference(**arrays)["C"]).all()


# ------------------------------------------------------------------------ fp8
def test_same_fp8_bytes_mean_twice_as_much_under_ocp():
    fnuz_p, ocp_p, rdna_p = fp8_gemm.programs()
    assert [p.tensor("A").dtype for p in (fnuz_p, ocp_p, rdna_p)] == ["fp8_fnuz", "fp8_ocp", "fp8_ocp"]
    raw = fp8_gemm.raw_bytes(fnuz_p)
    out = {p.target: ts.simulate(p, **fp8_gemm.decode_bytes(p, raw))["C"] for p in (fnuz_p, ocp_p, rdna_p)}
    # e4m3 with exponent bias 7 (OCP) vs 8 (FNUZ): each finite byte is worth 2x, each product 4x,
    # and the f32 roundings scale with it — the same instruction on gfx950 gives exactly 4x gfx942.
    np.testing.assert_array_equal(out["gfx950"], 4 * out["gfx942"])
    # RDNA4 rounds after every 16 k (its instruction is 16x16x16), CDNA after 32, so gfx1201 is
    # 4x gfx942 only up to f32 rounding: it matches the float64 product of the OCP values, which
    # is exactly 4x that of the FNUZ values.
    ocp_arrays, fnuz_arrays = fp8_gemm.decode_bytes(rdna_p, raw), fp8_gemm.decode_bytes(fnuz_p, raw)
    ref_ocp, ref_fnuz = fp8_gemm.reference(**ocp_arrays)["C"], fp8_gemm.reference(**fnuz_arrays)["C"]
    np.testing.assert_array_equal(ref_ocp, 4 * ref_fnuz)
    _assert_gemm_close("fp8_gemm", rdna_p, ocp_arrays, {"C": out["gfx1201"]})
    _assert_gemm_close("fp8_gemm", fnuz_p, fnuz_arrays, {"C": out["gfx942"]})

    # one byte pattern by hand: 0x40 is 1.0 in FNUZ e4m3 and 2.0 in OCP e4m3
    K = fnuz_p.tensor("A").shape[1]
    ones = {n: np.full(fnuz_p.tensor(n).shape, 0x40, np.uint8) for n in "AB"}
    assert (ts.simulate(fnuz_p, **fp8_gemm.decode_bytes(fnuz_p, ones))["C"] == K * 1.0 * 1.0).all()
    assert (ts.simulate(ocp_p, **fp8_gemm.decode_bytes(ocp_p, ones))["C"] == K * 2.0 * 2.0).all()
    assert (ts.simulate(rdna_p, **fp8_gemm.decode_bytes(rdna_p, ones))["C"] == K * 2.0 * 2.0).all()

    # 0x80 is FNUZ's only NaN and OCP's -0: one such byte poisons a row on gfx942 only
    raw["A"][3, 5] = 0x80
    fnuz = ts.simulate(fnuz_p, **fp8_gemm.decode_bytes(fnuz_p, raw))["C"]
    ocp = ts.simulate(ocp_p, **fp8_gemm.decode_bytes(ocp_p, raw))["C"]
    assert np.isnan(fnuz[3]).all() and not np.isnan(np.delete(fnuz, 3, axis=0)).any()
    assert np.isfinite(ocp).all()


def test_same_reals_quantised_to_fnuz_and_ocp_differ_slightly():
    fnuz_p, ocp_p, _ = fp8_gemm.programs()
    reals = fp8_gemm.real_values(fnuz_p)
    qf, qo = fp8_gemm.quantized_inputs(fnuz_p), fp8_gemm.quantized_inputs(ocp_p)
    # host quantisation by ml_dtypes directly (round to nearest even from float32)
    for n in "AB":
        np.testing.assert_array_equal(qf[n], reals[n].astype(ml_dtypes.float8_e4m3fnuz).astype(np.float32))
        np.testing.assert_array_equal(qo[n], reals[n].astype(ml_dtypes.float8_e4m3fn).astype(np.float32))
    small = np.abs(reals["A"]) < 2.0**-6  # below OCP's smallest normal, FNUZ still has 3 mantissa bits
    differ = qf["A"] != qo["A"]
    assert differ.any() and (differ <= small | (np.abs(reals["A"]) > 240)).all()
    cf = ts.simulate(fnuz_p, **qf)["C"]
    co = ts.simulate(ocp_p, **qo)["C"]
    _assert_gemm_close("fp8_gemm", fnuz_p, qf, {"C": cf})
    _assert_gemm_close("fp8_gemm", ocp_p, qo, {"C": co})
    assert (cf != co).mean() > 0.5  # slightly different almost everywhere
    exact = _f64(reals["A"]) @ _f64(reals["B"])
    scale = np.abs(exact).max()
    assert np.abs(cf - co).max() < 0.1 * scale  # ... but only slightly
    # FNUZ's extra low binade makes it the more accurate format for these small values
    assert np.abs(cf - exact).mean() < np.abs(co - exact).mean()


# ------------------------------------------------------------------------ LDS: races, bank conflicts
_RACE = re.compile(r"workgroup (\d+), wave (\d+) at LDS byte (\d+) conflicts with a (read|write) by wave (\d+)")


def test_lds_gemm_barrier_removes_races_and_dropping_it_is_reported():
    for smem in ("plain", "swizzled"):
        for ok, racy in zip(lds_gemm.programs(smem=smem), lds_gemm.programs(smem=smem, drop_barrier=True)):
            arrays = lds_gemm.inputs(ok)
            assert ts.simulate(ok, **arrays).report.race_count == 0
            rep = ts.simulate(racy, **arrays).report
            assert rep.race_count > 0 and rep.races, racy.target
            m = _RACE.search(rep.races[0])
            assert m, rep.races[0]
            wg, wave, byte, _, other = (int(x) if x.isdigit() else x for x in m.groups())
            assert wg < racy.workgroups and byte < rep.lds_bytes and wave != other
            assert {wave, other} <= set(range(racy.waves_per_workgroup))


def test_lds_gemm_swizzle_and_padding_cut_bank_conflicts():
    # Measured (the simulator counts, per LDS instruction = per VGPR, the extra cycles of the
    # busiest of the 32 banks): gfx1201 plain 640, padded (+1 dword per row) 384, swizzled 320;
    # gfx942 plain 448, padded 384, swizzled 320 — over 384 / 192 LDS instructions. A 16-element
    # f16 slab row is 8 dwords, so rows r, r+4, r+8, r+12 start on one bank and an operand read
    # (16 rows x 1 dword a lane) is 4-way on gfx1201's A; padding to 9 dwords or XORing the dword
    # with (row // 4) % 4 spreads the rows. (Half-dword padding, pad=1, *raises* gfx942's count to
    # 576: odd rows straddle dwords.) The rest is B, read 2 k-rows per VGPR from a K x N slab.
    cycles = {}
    for smem in ("plain", "padded", "swizzled"):
        for prog in lds_gemm.programs(smem=smem):
            arrays = lds_gemm.inputs(prog)
            res = ts.simulate(prog, **arrays)
            cycles[prog.target, smem] = res.report.lds_bank_conflict_cycles
            if smem != "plain":  # the shared layout changes timing, never values
                base = [p for p in lds_gemm.programs(smem="plain") if p.target == prog.target][0]
                np.testing.assert_array_equal(res["C"], ts.simulate(base, **arrays)["C"])
    for target in ("gfx1201", "gfx942"):
        assert cycles[target, "plain"] > cycles[target, "padded"] >= cycles[target, "swizzled"], cycles


# ------------------------------------------------------------------------ planted bugs
def _moved(layout, select, **change):
    """The layout with the hardware dims of the selected pairs changed (``lane=fn`` / ``slot=fn``)."""
    hw, lg = layout.pairs()
    hw = hw.copy()
    cols = {n: hw[:, d] for d, n in enumerate(layout.in_names)}
    sel = select(**cols)
    for dim, fn in change.items():
        d = layout.in_names.index(dim)
        hw[sel, d] = fn(hw[sel, d])
    return Layout.from_pairs(layout.in_dims, layout.out_dims, hw, lg, elem_bits=layout.elem_bits)


def _blame(prog, tensor, got, want, rtol=1e-5):
    """First wrong output element (row-major) and the (lane, VGPR)s that stored it, through the
    program's store layout."""
    bad = np.argwhere(~np.isclose(_f64(got), want, rtol=rtol, atol=1e-5))
    assert bad.size, "no wrong element"
    r, c = (int(x) for x in bad[0])
    store = next(op for op in prog.walk() if op.kind == "store" and op.attr("tensor") == tensor)
    lay = store.args[0].layout
    dims = dict(lay.out_dims)
    logical = {"row": r % dims["row"], "col": c % dims["col"], **({"block": 0} if "block" in dims else {})}
    owners = [(o["lane"], o["slot"] * lay.elem_bits // 32) for o in lay.owners_of(**logical)]
    return (r, c), owners


def _gemm_data(prog, seed=0):
    arrays = gemm.inputs(prog, seed)
    return arrays, gemm.reference(**arrays)["C"]


_LANE_VGPR = re.compile(r"lane \d+, VGPR \d+")


def test_planted_one_lane_off_is_named_by_check_and_blamed_by_the_diff():
    mma = "v_mfma_f32_16x16x16f16"
    hw_a = lookup(mma, "gfx942").layout("A")
    # A[5][0] and A[6][0] declared one lane off (slot 0 of lanes 5 and 6 exchanged)
    bad = _moved(hw_a, lambda lane, slot: ((lane == 5) | (lane == 6)) & (slot == 0), lane=lambda x: 11 - x)
    prog = gemm.gemm.specialize(target="gfx942", M=16, N=16, K=32, mma=mma, a_layout=bad)
    errors = ts.check(prog).errors
    assert len(errors) == 1 and "operand A" in errors[0].where
    assert "A[5][0]" in errors[0].message and "declared at lane 6, VGPR 0" in errors[0].message
    assert "reads it from lane 5, VGPR 0" in errors[0].message and "lanes involved: 5-6" in errors[0].message
    arrays, want = _gemm_data(prog)
    got = ts.simulate(prog, **arrays)["C"]
    (r, c), owners = _blame(prog, "C", got, want)
    assert r in (5, 6)  # only rows 5 and 6 of D use the swapped elements
    wrong_rows = np.unique(np.argwhere(~np.isclose(got, want, rtol=1e-5))[:, 0])
    assert set(wrong_rows) == {5, 6}
    # the D layout of 16x16x16 MFMA: D[i][j] in lane j + 16*(i//4), VGPR i % 4
    assert owners == [(c + 16 * (r // 4), r % 4)]


def test_planted_vgpr_swap_is_named_by_check_and_changes_the_product():
    mma = "v_wmma_f32_16x16x16_f16"
    hw_a = lookup(mma, "gfx1201").layout("A")
    # VGPR 0 (slots 0-1) and VGPR 1 (slots 2-3) exchanged in every lane
    bad = _moved(hw_a, lambda lane, slot: slot < 4, slot=lambda s: s ^ 2)
    prog = gemm.gemm.specialize(target="gfx1201", M=16, N=16, K=32, a_layout=bad)
    errors = ts.check(prog).errors
    assert len(errors) == 1 and "operand A" in errors[0].where
    assert "k permuted on A only" in errors[0].message and "declared at lane 0, VGPR 1" in errors[0].message
    assert "reads it from lane 0, VGPR 0" in errors[0].message
    arrays, want = _gemm_data(prog)
    got = ts.simulate(prog, **arrays)["C"]
    (r, c), owners = _blame(prog, "C", got, want)
    assert (r, c) == (0, 0) and owners == [(0, 0)]  # gfx12 D: D[i][j] in lane j + 16*(i//8), VGPR i % 8
    # the hardware multiplied A with k 0-1 <-> 2-3 and 4-5 <-> 6-7 exchanged (per k-step of 16)
    k = np.arange(32)
    swapped = np.where(k % 16 < 8, k ^ 2, k)
    np.testing.assert_allclose(got, _f64(arrays["A"])[:, swapped] @ _f64(arrays["B"]), rtol=1e-5, atol=1e-5)


def test_planted_rdna3_replicas_dropped():
    mma = "v_wmma_f32_16x16x16_f16"
    hw_a = lookup(mma, "gfx1100").layout("A")
    hw, lg = hw_a.pairs()
    keep = hw[:, hw_a.in_names.index("lane")] < 16  # only lanes 0-15 loaded
    bad = Layout.from_pairs(hw_a.in_dims, hw_a.out_dims, hw[keep], lg[keep], elem_bits=hw_a.elem_bits)
    prog = gemm.gemm.specialize(target="gfx1100", M=16, N=16, K=32, a_layout=bad)
    errors = ts.check(prog).errors
    assert len(errors) == 1 and "operand A" in errors[0].where
    assert "replicas missing in lanes 16-31" in errors[0].message
    assert "reads it from lane 0, VGPR 0, bits 0-15; lane 16, VGPR 0, bits 0-15" in errors[0].message
    arrays, _ = _gemm_data(prog)
    rep = ts.simulate(prog, **arrays).report
    assert rep.replication_count > 0 and "copies in lanes [0, 16] differ" in rep.replication[0]


def test_planted_gfx12_accumulator_on_gfx11():
    c12 = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")
    d11 = lookup("v_wmma_f32_16x16x16_f16", "gfx1100").layout("D")
    prog = gemm.gemm.specialize(target="gfx1100", M=16, N=16, K=32, c_layout=c12)
    errors = ts.check(prog).errors
    assert len(errors) == 1 and "operand C" in errors[0].where
    assert "hardware i = lane / 16 + slot * 2, program i = slot + (lane / 16) * 8" in errors[0].message
    assert _LANE_VGPR.search(errors[0].message)
    arrays, want = _gemm_data(prog)
    got = ts.simulate(prog, **arrays)["C"]
    (r, c), owners = _blame(prog, "C", got, want)
    assert (r, c) == (1, 0) and owners == [(0, 1)]  # the program believes D[1][0] is lane 0, VGPR 1 ...
    assert d11.elements_at(lane=0, slot=1) == [{"block": 0, "row": 2, "col": 0}]  # the hardware put D[2][0] there
    # ... and the hardware wrote there the element its own formula puts there: every stored
    # D[i][j] is the true D at the hardware position of the declared owner.
    for i in range(16):
        for j in range(16):
            (lane, slot), = [(o["lane"], o["slot"]) for o in c12.owners_of(block=0, row=i, col=j)]
            (held,) = d11.elements_at(lane=lane, slot=slot)
            assert np.isclose(got[i, j], want[held["row"], held["col"]], rtol=1e-5, atol=1e-6)
    assert not np.allclose(got, want)


def test_planted_missing_barrier_is_a_race():
    prog = lds_gemm.lds_gemm.specialize(target="gfx1201", M=32, N=32, K=48, drop_barrier=True)
    found = ts.check(prog)  # the race is seen statically too (issue 13, item 7)
    assert not found.ok and "missing ts.barrier()" in found.errors[0].message
    assert ts.check(lds_gemm.lds_gemm.specialize(target="gfx1201", M=32, N=32, K=48)).ok
    rep = ts.simulate(prog, **lds_gemm.inputs(prog)).report
    assert rep.race_count > 0 and "no barrier between" in rep.races[0]
