"""Tile IR and DSL: tracing, loops and loop-carried values, branches, printing, JSON round trip,
re-specialisation across targets, and clear errors for what cannot be traced."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilesim as ts
from tilesim.errors import InstructionError, TilesimError, VerifyError
from tilesim.ir import Program
from examples.gemm import gemm
from tilesim.matrix import lookup


def test_trace_records_a_loop_with_the_accumulator_carried():
    p = gemm.specialize(target="gfx1201", M=32, N=32, K=64)
    loops = [op for op in p.walk() if op.kind == "loop"]
    assert len(loops) == 1
    (init, nxt), = loops[0].attr("carried")
    mma = [op for op in p.walk() if op.kind == "mma"][0]
    assert init.id == mma.args[2].id and nxt.id == mma.out.id  # acc = mma(..., acc)
    assert loops[0].args == (0, 64, 16)
    assert p.grid == (2, 2) and p.wave_size == 32
    assert [t.name for t in p.tensors if t.output] == ["C"]
    text = str(p)
    assert "for %" in text and "carry" in text and "mma(" in text


def test_one_kernel_re_specialises_for_other_targets_and_waves():
    for target, mnemonic, wave in [("gfx1100", "v_wmma_f32_16x16x16_f16", 64), ("gfx942", "v_mfma_f32_32x32x8f16", 64),
                                   ("sm_80", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 32)]:
        p = gemm.specialize(target=target, wave_size=wave, M=64, N=64, K=32, mma=mnemonic)
        mma = [op for op in p.walk() if op.kind == "mma"][0]
        assert mma.attr("instr") == lookup(mnemonic, target).mnemonic and p.wave_size == wave


def test_json_round_trip_is_equal_and_simulates_the_same():
    p = gemm.specialize(target="gfx1100", M=32, N=32, K=32)
    q = Program.from_json(p.to_json())
    assert q == p and str(q) == str(p)
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((32, 32)).astype(np.float16), rng.standard_normal((32, 32)).astype(np.float16)
    assert np.array_equal(ts.simulate(p, A=A, B=B)["C"], ts.simulate(q, A=A, B=B)["C"])


def test_a_target_without_the_instruction_is_rejected_at_specialise():
    with pytest.raises(InstructionError, match="gfx1030"):
        gemm.specialize(target="gfx1030", M=32, N=32, K=32)
    with pytest.raises(InstructionError, match="exists on"):
        gemm.specialize(target="gfx1201", M=32, N=32, K=32, mma="v_mfma_f32_32x32x8f16")
    with pytest.raises(VerifyError, match="wave"):
        gemm.specialize(target="gfx942", wave_size=32, M=32, N=32, K=32, mma="v_mfma_f32_32x32x8f16")


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [({"M": 32, "N": 32}, "missing \\['K'\\]"), ({"M": 32, "N": 32, "K": 32, "Q": 1}, "unknown \\['Q'\\]"),
     ({"M": 0, "N": 32, "K": 32}, "positive integer")],
)
def test_bad_sizes_name_what_is_wrong(kwargs, pattern):
    with pytest.raises(VerifyError, match=pattern):
        gemm.specialize(target="gfx1201", **kwargs)


def test_untraceable_python_is_a_clear_error():
    @ts.kernel
    def branchy(A: ts.Tensor["f32", "M", "N"]):
        ts.grid(2)
        if ts.tile_id(0) == 1:  # Python `if` on a traced value
            pass

    with pytest.raises(VerifyError, match="ts.when"):
        branchy.specialize(target="gfx1201", M=16, N=16)

    @ts.kernel
    def breaks(A: ts.Tensor["f32", "M", "N"]):
        for _k in ts.range(0, 4):
            break

    with pytest.raises(VerifyError, match="break"):
        breaks.specialize(target="gfx1201", M=16, N=16)
    with pytest.raises(TilesimError, match="specialize"):
        gemm(None, None, None)
    with pytest.raises(TilesimError, match="inside a @ts.kernel"):
        ts.tile_id(0)


def test_uniform_branch_only_writes_where_the_condition_holds():
    lay = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")

    @ts.kernel
    def copy_odd(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.grid(X.shape[0] // 16)
        t = ts.tile_id(0)
        x = ts.load(X[t * 16:, 0:], lay)
        with ts.when(t % 2):
            ts.store(Y[t * 16:, 0:], x)

    p = copy_odd.specialize(target="gfx1201", M=64, N=16)
    X = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    Y = ts.simulate(p, X=X)["Y"]
    want = np.zeros_like(X)
    want[16:32], want[48:64] = X[16:32], X[48:64]
    assert np.array_equal(Y, want)


def test_scalar_arithmetic_matches_python():
    lay = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")

    @ts.kernel
    def shifted(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.grid(3)
        t = ts.tile_id(0)
        src = ((t + 1) * 7 // 2 - 1) % 3 * 16  # exercised on every tile id
        ts.store(Y[t * 16:, 0:], ts.load(X[src:, 0:], lay))

    p = shifted.specialize(target="gfx1201", M=48, N=16)
    X = np.arange(48 * 16, dtype=np.float32).reshape(48, 16)
    Y = ts.simulate(p, X=X)["Y"]
    for t in range(3):
        src = ((t + 1) * 7 // 2 - 1) % 3 * 16
        assert np.array_equal(Y[t * 16:(t + 1) * 16], X[src:src + 16])


# ---------------------------------------------------------------------------- attributes validated at construction
# (issue 19 item 2, issue 13 "one op vocabulary": each was a raw traceback, or silently accepted, on 0.5.0)
def _ops_json(prog):
    import json

    d = json.loads(prog.to_json())

    def walk(ops):
        for o in ops:
            yield o
            if "body" in o["attrs"]:
                yield from walk(o["attrs"]["body"]["block"])

    return d, list(walk(d["body"]))


def _mutated(prog, kind, fn):
    import json

    d, ops = _ops_json(prog)
    fn(next(o for o in ops if o["kind"] == kind))
    return json.dumps(d)


def _shuffle_program():
    lay = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")

    @ts.kernel
    def shuf(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.store(Y[0:, 0:], ts.shuffle(ts.load(X[0:, 0:], lay), [(i + 1) % 32 for i in range(32)]))

    return shuf.specialize(target="gfx1201", M=16, N=16)


def _attr(name, value):
    def f(o):
        o["attrs"][name] = value
    return f


def _drop(name):
    def f(o):
        del o["attrs"][name]
    return f


def _src_lane(i, value):
    def f(o):
        o["attrs"]["src_lane"]["tuple"][i] = value
    return f


BAD_ATTRS = [
    ("mma", _attr("modifiers", {"tuple": [[]]}), "modifiers"),
    ("mma", _attr("modifiers", 5), "modifiers"),
    ("mma", _attr("modifiers", {"tuple": [{"tuple": ["neg", 256]}]}), "modifiers"),
    ("mma", _attr("modifiers", {"tuple": [{"tuple": ["neg); s_trap", 1]}]}), "modifiers"),
    ("mma", _attr("instr", 'x"); asm("s_trap 2'), "catalog name"),
    ("loop", _drop("carried"), "carried"),
    ("loop", _attr("carried", 3), "carried must be a JSON list"),
    ("tile_id", _attr("axis", 7), "axis"),
    ("tile_id", _attr("axis", "x"), "axis"),
    ("tile_id", _attr("axis", -1), "axis"),
    ("tile_id", _attr("axis", 2), "grid"),  # gemm's grid has 2 dims: axis 2 would read TS_WG_Z() = 0
    ("tile_id", _attr("axis", True), "axis"),
    ("binop", _attr("op", "**"), "one of"),
    ("binop", _attr("op", "+ 0); asm volatile(\"s_trap 2\"); s5 = (s1 +"), "one of"),
    ("load", _attr("tensor", "Z"), "unknown tensor"),
    ("load", _attr("transpose", "yes"), "transpose"),
    ("load", _attr("colour", 1), "no attribute 'colour'"),
    ("const", _attr("value", 2**40), "value"),
]


@pytest.mark.parametrize(("kind", "mutate", "says"), BAD_ATTRS, ids=[f"{k}-{s}" for k, _, s in BAD_ATTRS])
def test_bad_attributes_are_typed_errors_at_construction(kind, mutate, says):
    base = gemm.specialize(target="gfx1201", M=32, N=32, K=32)
    if kind == "const":  # gemm has no const op: put one first
        import json

        d = json.loads(base.to_json())
        d["body"].insert(0, {"kind": "const", "out": {"id": 9999, "kind": "scalar"}, "args": [],
                             "attrs": {"value": 2**40}})
        text = json.dumps(d)
    else:
        text = _mutated(base, kind, mutate)
    with pytest.raises(TilesimError, match=re.escape(says)):
        Program.from_json(text)


@pytest.mark.parametrize("entry", [-1, 32, 1.5, "3", None, True, 2**70])
def test_shuffle_source_lanes_must_be_lanes_of_the_wave(entry):
    prog = _shuffle_program()
    Program.from_json(_mutated(prog, "shuffle", _src_lane(0, 5)))  # a lane of the wave: fine
    with pytest.raises(TilesimError, match="source lane"):
        Program.from_json(_mutated(prog, "shuffle", _src_lane(0, entry)))


def test_shuffle_with_a_short_lane_list_is_refused():
    def short(o):
        o["attrs"]["src_lane"]["tuple"] = o["attrs"]["src_lane"]["tuple"][:16]

    with pytest.raises(TilesimError, match="source lane"):
        Program.from_json(_mutated(_shuffle_program(), "shuffle", short))


@pytest.mark.parametrize("where", ["program", "tensor", "value"])
def test_lone_surrogate_names_are_refused(where):
    import json

    d, ops = _ops_json(gemm.specialize(target="gfx1201", M=32, N=32, K=32))
    if where == "program":
        d["name"] = "gemm\udc80"
    elif where == "tensor":
        d["tensors"][0][0] = "A\ud800"
        for o in ops:
            if o["attrs"].get("tensor") == "A":
                o["attrs"]["tensor"] = "A\ud800"
    else:
        next(o for o in ops if o["kind"] == "tile_id")["out"]["name"] = "\udfff"
    with pytest.raises(TilesimError, match="surrogate"):
        Program.from_json(json.dumps(d))


@pytest.mark.parametrize("axis", [-1, 7, "x", 1.0])
def test_dsl_tile_id_axis_is_checked(axis):
    @ts.kernel
    def k(X: ts.Tensor["f32", "M", "N"]):
        ts.grid(1, 1)
        ts.tile_id(axis)

    with pytest.raises(VerifyError, match="tile_id"):
        k.specialize(target="gfx1201", M=16, N=16)


def test_ops_made_in_python_are_checked_too():
    """Not only JSON: an Op or Program built directly (as port and tools do) meets the same table."""
    from tilesim.ir.core import Op, Value
    from tilesim.ir.ops import OpError

    s = Value(1, "scalar")
    with pytest.raises(OpError, match="one of"):
        Op("binop", Value(2, "scalar"), (s, 1), (("op", "<<"),))
    with pytest.raises(OpError, match="unknown op kind"):
        Op("exp2", None)
    with pytest.raises(OpError, match="needs attribute 'carried'"):
        Op("loop", Value(3, "scalar"), (0, 1, 1), (("body", ts.ir.Block()),))
    with pytest.raises(OpError, match="value kinds"):
        Value(4, "vector")


def test_typed_errors_reach_the_cli_as_one_line(tmp_path, capsys):
    from tilesim import cli

    text = _mutated(gemm.specialize(target="gfx1201", M=32, N=32, K=32), "tile_id", _attr("axis", -1))
    f = tmp_path / "bad.json"
    f.write_text(text)
    for cmd in (["check", str(f)], ["simulate", str(f)], ["emit", str(f), "--target", "gfx1201"], ["run", str(f)]):
        code = cli.main(cmd)
        err = capsys.readouterr().err
        assert code != 0 and "Traceback" not in err and "axis" in err, (cmd, code, err)
