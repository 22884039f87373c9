"""``ts.port``: every example moved CDNA -> RDNA3/RDNA4 and RDNA -> CDNA, proven and checked.

For each port: ``ts.port`` must return a proof (``ts.equivalent`` on probes and random inputs),
the ported program must pass ``ts.check``, and — independently of tilesim's own comparison — its
simulated output must match a float64/int64 numpy reference computed here from the inputs, within
the catalog's accumulation tolerance (exactly for integers). Ports that cannot exist are refused
with the reason (fp8 FNUZ vs OCP, no such element type, a tiling that does not divide the
problem). Compiles check the ISA for the instruction spelled as LLVM prints it.

The default run ports a representative slice; ``--full`` runs every example in every direction.
"""

# No `from __future__ import annotations`: the small kernels below name their tensor types in
# annotations, evaluated when each kernel is defined.

import functools
import json
import re

import numpy as np
import pytest

import tilesim as ts
from examples import fp8_gemm, gemm, gemm_abt, gemm_planted, int8_gemm, lds_gemm, port_cdna3, softmax
from tilesim.cli import main
from tilesim.matrix.numerics import tolerance

# Small sizes keep each proof to ~100 simulations.
SMALL = {
    "gemm": lambda: gemm.programs(M=32, N=32, K=32),
    # gemm_abt ships RDNA programs only; its kernel specialised for CDNA3 is the CDNA source
    "gemm_abt": lambda: gemm_abt.programs(M=32, N=32, K=32) + [
        gemm_abt.gemm_abt.specialize(target="gfx942", M=32, N=32, K=32, mma="v_mfma_f32_32x32x8f16")],
    "lds_gemm": lambda: lds_gemm.programs(M=32, N=32, K=32),
    "softmax": lambda: softmax.programs(M=16, N=32),
    "int8_gemm": lambda: int8_gemm.programs(M=32, N=32, K=32),
    "fp8_gemm": lambda: fp8_gemm.programs(M=32, N=32, K=32),
}
MODULES = {"gemm": gemm, "gemm_abt": gemm_abt, "lds_gemm": lds_gemm, "softmax": softmax, "int8_gemm": int8_gemm,
           "fp8_gemm": fp8_gemm}
# GEMM-shaped examples: (output, A input, B input, B stored N x K, extra inputs added to the product)
GEMMS = {"gemm": ("C", "A", "B", False, ()), "gemm_abt": ("D", "A", "B", True, ("C",)),
         "lds_gemm": ("C", "A", "B", False, ()), "int8_gemm": ("C", "A", "B", False, ("Bias",)),
         "fp8_gemm": ("C", "A", "B", False, ())}

# Refusals, from the ISA documents: gfx942 reads fp8 as FNUZ, gfx950/gfx12 as OCP (CDNA3 ISA §7.1.3,
# CDNA4 ISA §7.2, RDNA4 ISA §7.9); RDNA3 has no fp8 WMMA at all (RDNA3 ISA §7.9).
REFUSED = {
    ("fp8_gemm", "gfx942", "gfx1100"): r"gfx1100 has no wave32 matrix instruction reading .*fp8_fnuz",
    ("fp8_gemm", "gfx942", "gfx1201"): r"FNUZ .*gfx1201 has only OCP .*0x40 is 1\.0 FNUZ but 2\.0 OCP",
    ("fp8_gemm", "gfx950", "gfx1100"): r"gfx1100 has no wave32 matrix instruction reading .*fp8_ocp",
    ("fp8_gemm", "gfx1201", "gfx942"): r"OCP .*gfx942 has only FNUZ",
}


@functools.lru_cache(maxsize=None)
def _source(name, i):
    return _make(name)[i]


@functools.lru_cache(maxsize=None)
def _make(name):
    return SMALL[name]()


def _directions(prog):
    fam = ts.get_target(prog.target).family
    if fam.startswith("cdna"):
        return ("gfx1100", "gfx1201")
    if fam.startswith("rdna"):
        return ("gfx942", "gfx950") if prog.tensors[0].dtype.startswith("fp8") else ("gfx942",)
    return ("gfx942", "gfx1201")  # NVIDIA sources


CASES = [pytest.param(name, i, to, id=f"{name}-{p.target}-{i}-to-{to}")
         for name in SMALL for i, p in enumerate(_make(name)) for to in _directions(p)]
OK_CASES = [c for c in CASES if (c.values[0], _source(c.values[0], c.values[1]).target, c.values[2]) not in REFUSED]
REFUSED_CASES = [c for c in CASES if c not in OK_CASES]
# The default run: a 32x32x8 CDNA3 GEMM to both RDNA generations, and signed int8 both ways (NEG bits on
# RDNA; an RDNA4 program back to CDNA3) — the rest with --full (f16 proofs cost seconds each).
SLICE = {"gemm-gfx942-2-to-gfx1201", "gemm-gfx942-2-to-gfx1100", "int8_gemm-gfx1201-1-to-gfx942",
         "int8_gemm-gfx942-0-to-gfx1201"}


def _sliced(cases):
    return [c if c.id in SLICE else pytest.param(*c.values, id=c.id, marks=pytest.mark.slow) for c in cases]


@functools.lru_cache(maxsize=None)
def _port(name, i, to):
    src = _source(name, i)
    if src == port_cdna3.source(32, 32, 32) and to in port_cdna3.TARGETS:  # the worked example's ports: reuse
        return port_cdna3.ports(32, 32, 32)[port_cdna3.TARGETS.index(to)]
    return ts.port(src, to)


def _f64(x):
    return np.asarray(x).astype(np.float64)


def _assert_matches_float64(name, prog, row):
    """Simulate ``prog`` on the example's inputs and compare with a numpy reference computed here."""
    mod = MODULES[name]
    for seed in (0, 1):
        arrays = mod.inputs(prog, seed)
        res = ts.simulate(prog, **arrays)
        assert res.report.oob_count == 0 and res.report.race_count == 0
        if name == "softmax":
            x = _f64(arrays["X"])
            e = np.exp(x - x.max(axis=1, keepdims=True))
            ref = e / e.sum(axis=1, keepdims=True)
            rel = np.abs(_f64(res["Y"]) - ref) / ref
            # rounding of x - max (turned into relative error by exp), exp, sums and the division
            assert (rel <= 2.0**-24 * (np.abs(x - x.max(axis=1, keepdims=True)) + 16)).all(), rel.max()
            continue
        o, a, b, bt, extra = GEMMS[name]
        A, B = _f64(arrays[a]), _f64(arrays[b])
        if name == "gemm_abt":
            A = _f64(arrays[a].astype(np.float16))  # the kernel converts the activations to f16
        Bm = B.T if bt else B
        ref = A @ Bm + sum(_f64(arrays[e]) for e in extra)
        got = res[o]
        if np.issubdtype(np.asarray(got).dtype, np.integer):
            np.testing.assert_array_equal(_f64(got), (ref + 2**31) % 2**32 - 2**31)  # i32 wraps
            continue
        mag = np.abs(A) @ np.abs(Bm) + sum(np.abs(_f64(arrays[e])) for e in extra)
        rtol, atol = tolerance(row, k_terms=A.shape[1])
        err = np.abs(_f64(got) - ref)
        assert (err <= rtol * mag + atol).all(), f"{prog.target}: max error {err.max():.3e}"


# ------------------------------------------------------------------------ every example, every direction
@pytest.mark.parametrize(("name", "i", "to"), _sliced(OK_CASES))
def test_example_ports_with_proof_and_matches_float64(name, i, to):
    src = _source(name, i)
    r = _port(name, i, to)
    new = r.program
    t = ts.get_target(to)
    assert new.target == t.name and new.wave_size == t.default_wave
    assert r.evidence.equal and r.evidence.runs > 10
    assert ts.check(new).ok, str(ts.check(new))
    assert r.target_instr.mnemonic in ts.instructions(to)
    used = {op.attr("instr") for op in new.walk() if op.kind == "mma"}
    assert used <= {r.target_instr.mnemonic}
    assert [(x.name, x.dtype, x.shape) for x in new.tensors] == [(x.name, x.dtype, x.shape) for x in src.tensors]
    if src.wave_size != new.wave_size:
        assert any(c.what == "wave size" for c in r.changes)
    for c in r.changes:  # a listed map reads differently on the two sides (past the target's name)
        if c.what in ("A", "B", "C"):
            assert c.source.split(" ", 1)[1] != c.target.split(" ", 1)[1], c
    _assert_matches_float64(name, new, r.target_instr)


@pytest.mark.parametrize(("name", "i", "to"), REFUSED_CASES)
def test_impossible_example_ports_are_refused_with_the_reason(name, i, to):
    src = _source(name, i)
    with pytest.raises(ts.PortError, match=REFUSED[(name, src.target, to)]):
        ts.port(src, to)


def test_the_default_slice_names_real_cases():
    assert SLICE <= {c.id for c in OK_CASES}


# ------------------------------------------------------------------------ to NVIDIA mma.sync
NV_CASES = [pytest.param("int8_gemm", 0, "sm_90", id="int8_gemm-gfx942-to-sm_90")] + [
    pytest.param(n, i, to, id=f"{n}-{i}-to-{to}", marks=pytest.mark.slow)
    for n, i, to in [("gemm", 2, "sm_80"), ("gemm", 2, "sm_90"), ("gemm", 1, "sm_90"), ("lds_gemm", 1, "sm_90"),
                     ("fp8_gemm", 1, "sm_90"), ("gemm_abt", 1, "sm_90")]]


@pytest.mark.parametrize(("name", "i", "to"), NV_CASES)
def test_ports_to_nvidia_mma_sync(name, i, to):
    from tilesim.codegen import emit_hip

    r = _port(name, i, to)
    assert r.evidence.equal and ts.check(r.program).ok
    assert r.target_instr.mnemonic.startswith("mma.sync.aligned.") and r.program.wave_size == 32
    _assert_matches_float64(name, r.program, r.target_instr)
    assert 'asm volatile("mma.sync' in emit_hip(r.program).source  # no CUDA compiler here: the source only


def test_softmax_to_nvidia_is_refused_because_the_sums_round_differently():
    # mma.sync's accumulator tile is 8 columns wide, so a row is reduced in other pieces and the f32
    # sums round differently: close, but not the same program, and port does not pretend it is.
    with pytest.raises(ts.PortError, match="not bit-identical"):
        ts.port(_source("softmax", 1), "sm_90")


# ------------------------------------------------------------------------ what the ports say
def test_cdna3_to_rdna_index_maps_that_changed():
    r4, r3 = port_cdna3.ports(32, 32, 32)
    for r, target in ((r4, "gfx1201"), (r3, "gfx1100")):
        assert r.source_instr.mnemonic == "v_mfma_f32_32x32x8_f16"
        assert r.target_instr.mnemonic == "v_wmma_f32_16x16x16_f16"
        what = {c.what: c for c in r.changes}
        assert {"wave size", "instruction", "A", "B", "C", "grid"} <= set(what)
        assert (what["wave size"].source, what["wave size"].target) == ("wave64", "wave32")
        assert (what["grid"].source, what["grid"].target) == ("(1, 1)", "(2, 2)")  # 32x32 tiles -> 16x16
        # CDNA3 32x32x8 (CDNA3 ISA §7.1): A row = lane % 32, k = slot + 4 * (lane / 32)
        assert "i = lane % 32, k = slot + (lane / 32) * 4" in what["A"].source
        # A: 4 f16 per lane on CDNA3 32x32x8 (2 VGPRs); 16 on RDNA3, 8 on RDNA4 (RDNA3/RDNA4 ISA §7.9)
        assert what["A"].source.startswith("gfx942 (32x8 in 64 lanes x 4 slots): ")
        slots = {"gfx1100": 16, "gfx1201": 8}[target]
        assert what["A"].target.startswith(f"{target} (16x16 in 32 lanes x {slots} slots): ")
        assert str(r).startswith(f"port gemm: gfx942 (wave64, v_mfma_f32_32x32x8_f16) -> {target} (wave32, ")
        d = json.loads(json.dumps(r.to_dict()))
        assert d["proof"]["equivalent"] and d["target"]["wave_size"] == 32
        assert ts.Program.from_json(json.dumps(d["ported_program"])) == r.program
    # RDNA4 keeps one copy of each A element; RDNA3 repeats lanes 0-15 in lanes 16-31 (RDNA3 ISA §7.9)
    a4 = next(c for c in r4.changes if c.what == "A").target
    a3 = next(c for c in r3.changes if c.what == "A").target
    assert "in 2 lanes" not in a4 and "each element in 2 lanes (e.g. [0][0] in lanes 0, 16)" in a3
    # C rows: RDNA4 v + 8 * (lane / 16), RDNA3 2 * v + lane / 16
    c4 = next(c for c in r4.changes if c.what == "C").target
    c3 = next(c for c in r3.changes if c.what == "C").target
    assert "i = slot + (lane / 16) * 8" in c4 and "i = lane / 16 + slot * 2" in c3


def test_signed_int8_gets_the_neg_bits_on_rdna_and_loses_them_on_cdna():
    to_rdna = _port("int8_gemm", 0, "gfx1201")
    assert dict(to_rdna.modifiers) == {"neg": 3}  # bit 0: A signed, bit 1: B signed (RDNA4 ISA §7.9)
    assert all(dict(op.attr("modifiers")) == {"neg": 3} for op in to_rdna.program.walk() if op.kind == "mma")
    back = ts.port(to_rdna.program, "gfx942")
    assert back.modifiers == () and back.target_instr.mnemonic == "v_mfma_i32_16x16x32_i8"
    assert all(not op.attr("modifiers") for op in back.program.walk() if op.kind == "mma")


def test_instr_forces_the_instruction():
    src = _source("int8_gemm", 1)
    assert src.target == "gfx1201"
    r = ts.port(src, "gfx942", instr="V_MFMA_I32_32X32X16I8")  # spellings are normalised
    assert r.target_instr.mnemonic == "v_mfma_i32_32x32x16_i8" and r.program.grid == (1, 1)
    assert _port("int8_gemm", 1, "gfx942").target_instr.mnemonic == "v_mfma_i32_16x16x32_i8"  # same tile by default


# ------------------------------------------------------------------------ refusals
def test_unknown_target_and_instruction_are_errors_naming_the_choices():
    src = _source("gemm", 1)
    with pytest.raises(ts.TargetError, match="unknown target 'gfx9999'.*gfx1201"):
        ts.port(src, "gfx9999")
    with pytest.raises(ts.InstructionError, match="v_wmma_f32_16x16x16_f16"):
        ts.port(src, "gfx1201", instr="v_nope")
    with pytest.raises(ts.PortError, match="reads A x B \\+ C = u8 x u8 \\+ i32 but .* f16 x f16 \\+ f32"):
        ts.port(src, "gfx1201", instr="v_wmma_i32_16x16x16_iu8")
    with pytest.raises(ts.PortError, match="gfx1201 has no wave48"):
        ts.port(src, "gfx1201", wave_size=48)
    with pytest.raises(ts.PortError, match="takes a specialised Program"):
        ts.port(gemm.gemm, "gfx1201")


def test_element_type_with_no_instruction_is_refused():
    @ts.kernel
    def f64_gemm(A: ts.Tensor["f64", "M", "K"], B: ts.Tensor["f64", "K", "N"], C: ts.Tensor["f64", "M", "N"],
                 *, mma="v_mfma_f64_16x16x4_f64"):
        op = ts.mma_op(mma)
        ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        acc = ts.zeros(op.layout("C"), "f64")
        for k in ts.range(0, A.shape[1], op.k):
            a, b = ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B"))
            acc = ts.mma(op, a, b, acc)
        ts.store(C[tm * op.m:, tn * op.n:], acc)

    src = f64_gemm.specialize(target="gfx942", M=16, N=16, K=16)
    with pytest.raises(ts.PortError, match=r"gfx1201 has no wave32 matrix instruction reading A x B \+ C = f64 x f64"):
        ts.port(src, "gfx1201")


def test_unsigned_int8_and_fnuz_fp8_have_no_counterpart():
    # RDNA4 iu8 WMMA without NEG bits reads u8 x u8 (RDNA4 ISA §7.9); CDNA3 MFMA reads signed i8 only
    @ts.kernel
    def u8_gemm(A: ts.Tensor["u8", "M", "K"], B: ts.Tensor["u8", "K", "N"], C: ts.Tensor["i32", "M", "N"],
                *, mma="v_wmma_i32_16x16x16_iu8"):
        op = ts.mma_op(mma)
        ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        acc = ts.zeros(op.layout("C"), "i32")
        for k in ts.range(0, A.shape[1], op.k):
            acc = ts.mma(op, ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B")), acc)
        ts.store(C[tm * op.m:, tn * op.n:], acc)

    unsigned = u8_gemm.specialize(target="gfx1201", M=32, N=32, K=32)
    assert ts.check(unsigned).ok
    with pytest.raises(ts.PortError, match=r"gfx942 has no wave64 matrix instruction reading A x B \+ C = u8 x u8 "
                                           r"\+ i32 .*reads: .*i8 x i8 \+ i32"):
        ts.port(unsigned, "gfx942")
    # sm_90 mma.sync reads OCP e4m3/e5m2 (PTX ISA); gfx942 bytes are FNUZ
    with pytest.raises(ts.PortError, match="FNUZ .*sm_90 has only OCP"):
        ts.port(_source("fp8_gemm", 0), "sm_90")


def test_tiling_that_does_not_divide_the_problem_is_refused():
    # A 16x16x16 RDNA4 fp8 problem: gfx950's fp8 MFMAs need k = 32 (16x16x32) or 32x32 tiles
    src = fp8_gemm.KERNELS["fp8_ocp"].specialize(target="gfx1201", M=16, N=16, K=16, mma="v_wmma_f32_16x16x16_fp8_fp8")
    with pytest.raises(ts.PortError, match="v_mfma_f32_16x16x32_fp8_fp8: the tiling does not divide the problem"
                                           ".*v_mfma_f32_32x32x16_fp8_fp8: the kernel does not specialise"):
        ts.port(src, "gfx950")
    small = gemm.gemm.specialize(target="gfx1201", M=16, N=16, K=16)
    with pytest.raises(ts.PortError, match="32x32x8 tile may not fit the problem"):
        ts.port(small, "gfx942", instr="v_mfma_f32_32x32x8_f16")


def test_programs_that_fail_check_or_have_no_kernel_are_refused():
    for prog in gemm_planted.programs():
        with pytest.raises(ts.PortError, match="does not pass check"):
            ts.port(prog, "gfx942")
    src = _source("gemm", 1)
    loaded = ts.Program.from_json(src.to_json())
    assert loaded == src and loaded.origin is None and src.origin is not None  # origin is not part of the value
    # without the kernel, a port keeps the tiling: a 32x32x8 CDNA3 program has no 32x32x8 WMMA to go to
    cdna = ts.Program.from_json(_source("gemm", 2).to_json())
    with pytest.raises(ts.PortError, match="no kernel origin .* keeping its 32x32x8 tiling, and gfx1201 has no such"):
        ts.port(cdna, "gfx1201")
    # an LDS copy layout is written for one wave size; softmax names no instruction (no mma op)
    with pytest.raises(ts.PortError, match="no kernel origin and fragment %\\d+(<\\w+>)? is in a layout that is none of"):
        ts.port(ts.Program.from_json(_source("lds_gemm", 0).to_json()), "gfx942")
    with pytest.raises(ts.PortError, match="no kernel origin .* and no mma op"):
        ts.port(ts.Program.from_json(_source("softmax", 0).to_json()), "gfx942")


@functools.lru_cache(maxsize=None)
def _rewritten(name, i, to):
    src = ts.Program.from_json(_source(name, i).to_json())  # as `tilesim port prog.json` reads it
    return src, ts.port(src, to)


@pytest.mark.parametrize(("name", "i", "to"), [pytest.param("int8_gemm", 1, "gfx1100")] + [
    pytest.param(*c, marks=pytest.mark.slow) for c in [("gemm", 1, "gfx942"), ("gemm", 3, "gfx1100"),
                                                       ("gemm_abt", 0, "gfx942")]])
def test_programs_without_kernel_origin_are_rewritten_in_place_with_proof(name, i, to):
    src, r = _rewritten(name, i, to)
    assert r.method == "rewritten" and "rewritten in place" in str(r) and r.to_dict()["method"] == "rewritten"
    assert r.evidence.equal and ts.check(r.program).ok
    assert r.program.grid == src.grid and r.program.wave_size == ts.get_target(to).default_wave
    assert (r.target_instr.m, r.target_instr.n, r.target_instr.k) == (r.source_instr.m, r.source_instr.n,
                                                                       r.source_instr.k)
    # the same program the kernel gives when specialised for the new target and instruction
    again = _source(name, i).origin.kernel.specialize(target=to, **dict(_source(name, i).origin.sizes),
                                                      **{**dict(_source(name, i).origin.options),
                                                         "mma": r.target_instr.mnemonic})
    assert [x.out.layout for x in r.program.walk() if x.out is not None and x.out.kind == "frag"] == \
        [x.out.layout for x in again.walk() if x.out is not None and x.out.kind == "frag"]
    _assert_matches_float64(name, r.program, r.target_instr)


def test_modifiers_without_a_translation_are_refused():
    @ts.kernel
    def neg_gemm(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"],
                 *, mma="v_wmma_f32_16x16x16_f16"):
        op = ts.mma_op(mma)
        ts.grid(A.shape[0] // op.m, B.shape[1] // op.n)
        tm, tn = ts.tile_id(0), ts.tile_id(1)
        acc = ts.zeros(op.layout("C"), "f32")
        for k in ts.range(0, A.shape[1], op.k):
            a, b = ts.load(A[tm * op.m:, k:], op.layout("A")), ts.load(B[k:, tn * op.n:], op.layout("B"))
            acc = ts.mma(op, a, b, acc, neg=1)  # -A on the low halves
        ts.store(C[tm * op.m:, tn * op.n:], acc)

    with pytest.raises(ts.PortError, match="modifier neg=1 \\(negate\\) .* has no translation"):
        ts.port(neg_gemm.specialize(target="gfx1201", M=16, N=16, K=16), "gfx942")


# ------------------------------------------------------------------------ CLI
def test_cli_port_json_text_refusal_and_errors(capsys, tmp_path):
    path = tmp_path / "small.py"
    path.write_text("from examples.int8_gemm import int8_gemm\n\n"
                    "def programs():\n"
                    "    return [int8_gemm.specialize(target='gfx942', M=32, N=32, K=32)]\n")
    assert main(["port", str(path), "--to", "gfx1201", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc[0]["ported"] and doc[0]["target"]["instruction"] == "v_wmma_i32_16x16x16_iu8"
    assert doc[0]["modifiers"] == {"neg": 3}
    assert doc[0]["proof"]["equivalent"]
    assert main(["port", "examples/fp8_gemm.py", "--target", "gfx942", "--to", "gfx1201"]) == 1
    out = capsys.readouterr().out
    assert "REFUSED" in out and "FNUZ" in out
    assert main(["port", str(path), "--to", "gfx9999"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tilesim: error: unknown target 'gfx9999'") and "\n" not in err
    js = tmp_path / "p.json"
    js.write_text(_source("gemm", 2).to_json())  # gfx942, 32x32x8
    assert main(["port", str(js), "--to", "gfx1201", "--format", "json"]) == 1
    assert "no kernel origin" in json.loads(capsys.readouterr().out)[0]["reason"]
    js.write_text(_source("int8_gemm", 1).to_json())  # gfx1201, 16x16x16 iu8: rewritten in place
    assert main(["port", str(js), "--to", "gfx1100", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)[0]
    assert doc["method"] == "rewritten" and doc["proof"]["equivalent"]


# ------------------------------------------------------------------------ compiles
ISA = {"gfx942": "v_mfma_f32_32x32x8_f16", "gfx1201": "v_wmma_f32_16x16x16_f16", "gfx1100": "v_wmma_f32_16x16x16_f16"}


@pytest.mark.compiler
def test_worked_example_compiles_for_all_three_targets():
    progs = port_cdna3.programs(32, 32, 32)
    assert [p.target for p in progs] == ["gfx942", "gfx1201", "gfx1100"]
    for prog, comp in port_cdna3.compile_all(progs):
        assert comp.metadata["wavefront_size"] == prog.wave_size
        assert ISA[prog.target] in comp.mnemonics(), (prog.target, comp.mnemonics())
        assert comp.metadata["scratch_bytes"] == 0


def _spelled(mnemonic):
    return mnemonic.replace("_", "")


@pytest.mark.compiler
@pytest.mark.parametrize(("name", "i", "to"), _sliced(OK_CASES))
def test_ported_examples_compile_for_the_new_target(name, i, to):
    from tilesim.codegen import emit_hip
    from tilesim.hw.offline import compile_hip

    r = _port(name, i, to)
    comp = compile_hip(emit_hip(r.program).source, r.program.target, wave_size=r.program.wave_size)
    assert comp.metadata["wavefront_size"] == r.program.wave_size
    if name != "softmax":  # softmax has no mma
        assert _spelled(r.target_instr.mnemonic) in {_spelled(m) for m in comp.mnemonics()}, comp.mnemonics()


@pytest.mark.compiler
def test_a_program_rewritten_in_place_compiles_for_the_new_target():
    from tilesim.codegen import emit_hip
    from tilesim.hw.offline import compile_hip

    _, r = _rewritten("int8_gemm", 1, "gfx1100")  # gfx1201 JSON -> RDNA3
    comp = compile_hip(emit_hip(r.program).source, "gfx1100", wave_size=32)
    assert comp.metadata["wavefront_size"] == 32 and "v_wmma_i32_16x16x16_iu8" in comp.mnemonics()


@pytest.mark.slow
def test_worked_example_runs_as_a_script(capsys):
    import runpy

    runpy.run_path(port_cdna3.__file__, run_name="__main__")
    out = capsys.readouterr().out
    assert out.count("proof: equivalent on") == 2 and "MISSING" not in out
    assert re.search(r"gfx1100 +compiled: \d+ x v_wmma_f32_16x16x16_f16", out) or "compile skipped" in out
