"""The op table (tilesim/ir/ops.py) is the one place the op vocabulary lives.

* Each row's numpy semantics equals values written here from mathematics (``math``), not from
  tilesim: a new op needs its expected values below (the second of the two files it takes).
* Every consumer's set equals the table: the DSL's functions, ``reduce``, JSON round trips, the
  simulator, the code generator (and the compiler, where clang is installed), the testing
  strategies, the identifier reserve list.
* No other module re-declares an op list: an AST scan of tilesim/ for literal tuples, lists, sets
  and dict keys holding two or more op names.
"""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import tilesim
import tilesim.ir
import tilesim.ir.dsl as ts
from tilesim.codegen import emit_hip
from tilesim.codegen.idents import RESERVED
from tilesim.errors import TilesimError, VerifyError
from tilesim.ir.core import Program
from tilesim.ir.ops import BINOPS, ELEMENTWISE, KINDS, OP_KINDS, REDUCE, REDUCE_AXES, OpError, prelude_macros
from tilesim.matrix import lookup
from tilesim.testing._programs import EPILOGUE_OPS
from tilesim.wave import simulate

ROOT = Path(__file__).resolve().parents[1]
# issue 13's unknown op, until the table has it (adding exp2 must not need an edit here)
_UNKNOWN = next(n for n in ("exp2", "exp10", "cbrt") if n not in ELEMENTWISE)

# (x, y, f(x, y)) from the definitions; y None for unary ops
ELEMENTWISE_EXPECTED = {
    "add": [(2.0, 3.0, 5.0), (-1.5, 0.25, -1.25)],
    "sub": [(2.0, 3.0, -1.0), (0.5, -0.25, 0.75)],
    "mul": [(2.0, -3.0, -6.0), (0.5, 0.5, 0.25)],
    "div": [(3.0, 2.0, 1.5), (-1.0, 4.0, -0.25)],
    "neg": [(2.0, None, -2.0), (-0.5, None, 0.5)],
    "exp": [(0.0, None, 1.0), (1.0, None, math.e), (-2.0, None, math.exp(-2.0))],
    "max": [(2.0, -3.0, 2.0), (-1.0, 0.0, 0.0)],
    "min": [(2.0, -3.0, -3.0), (-1.0, 0.0, -1.0)],
}
# Python's integer semantics (floor division, the modulo's sign follows the divisor)
BINOP_EXPECTED = {
    "+": [(7, 3, 10)], "-": [(7, 3, 4), (3, 7, -4)], "*": [(7, -3, -21)],
    "//": [(7, 2, 3), (-7, 2, -4), (7, -2, -4)], "%": [(7, 2, 1), (-7, 2, 1), (7, -2, -1)],
    "min": [(7, 3, 3), (-1, 2, -1)], "max": [(7, 3, 7), (-1, 2, 2)],
    "<": [(3, 7, 1), (7, 3, 0), (3, 3, 0)], ">=": [(3, 7, 0), (7, 3, 1), (3, 3, 1)], "==": [(3, 3, 1), (3, 4, 0)],
}
REDUCE_EXPECTED = {"sum": ([1.0, -2.0, 4.5], 3.5), "max": ([1.0, -2.0, 4.5], 4.5), "min": ([1.0, -2.0, 4.5], -2.0)}


def test_every_op_has_independent_expected_values():
    assert set(ELEMENTWISE_EXPECTED) == set(ELEMENTWISE), "add the new op's expected values here"
    assert set(BINOP_EXPECTED) == set(BINOPS)
    assert set(REDUCE_EXPECTED) == set(REDUCE)


@pytest.mark.parametrize("name", sorted(BINOPS))
def test_binop_semantics(name):
    for a, b, want in BINOP_EXPECTED[name]:
        assert int(BINOPS[name].numpy(np.int64(a), np.int64(b))) == want, (name, a, b)


@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduce_semantics(name):
    xs, want = REDUCE_EXPECTED[name]
    assert float(REDUCE[name].numpy(np.array(xs))) == want


_LAY = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")


def _one_op(name: str, y: float | None):
    @ts.kernel
    def one(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        x = ts.load(X[0:, 0:], _LAY)
        ts.store(Y[0:, 0:], ts.elementwise(name, x, y))

    return one.specialize(target="gfx1201", M=16, N=16)


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_simulates_to_the_expected_values(name):
    """The simulator applies each row; the result is the float64 value rounded once to f32."""
    for x, y, want in ELEMENTWISE_EXPECTED[name]:
        prog = _one_op(name, y)
        out = simulate(prog, X=np.full((16, 16), x, np.float32)).outputs["Y"]
        assert np.all(out == np.float32(want)), (name, x, y, out[0, 0], want)


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_is_emitted_from_its_template(name):
    src = emit_hip(_one_op(name, None if ELEMENTWISE[name].arity == 1 else 2.0)).source
    row = ELEMENTWISE[name]
    if row.macro is not None:
        head = row.macro.head.split("(")[0]
        assert f"{head}(" in src[src.index('extern "C"'):]  # the kernel calls the macro
        for body in (row.macro.amd, row.macro.cuda):
            assert f"#define {row.macro.head} {body}" in src


@pytest.mark.compiler
def test_every_elementwise_and_reduce_template_compiles():
    """One kernel using every elementwise and reduce row, compiled for gfx1201 (offline clang)."""
    from tilesim.hw import offline

    @ts.kernel
    def every(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        x = ts.load(X[0:, 0:], _LAY)
        for name, row in ELEMENTWISE.items():
            x = ts.elementwise(name, x, None if row.arity == 1 else x)
        for name in REDUCE:
            x = ts.reduce(x, name, "col")
        ts.store(Y[0:, 0:], x)

    comp = offline.compile_hip(emit_hip(every.specialize(target="gfx1201", M=16, N=16)).source, "gfx1201")
    assert comp.metadata["wavefront_size"] == 32 and comp.metadata["vgpr_count"] > 0
    assert "v_exp_f32" in comp.isa  # exp reached the hardware's exp2 instruction


def test_dsl_functions_are_the_tables_rows():
    want = {e.dsl for e in ELEMENTWISE.values() if e.dsl}
    assert set(ts.FUNCTIONS) == want and want >= {"exp", "maximum", "minimum"}
    for name in want:
        assert getattr(tilesim, name) is ts.FUNCTIONS[name] and getattr(tilesim.ir, name) is ts.FUNCTIONS[name]
        assert name in tilesim.__all__ and name in tilesim.ir.__all__


def test_reduce_takes_exactly_the_tables_ops():
    for op in REDUCE:
        for axis in REDUCE_AXES:
            @ts.kernel
            def r(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
                ts.store(Y[0:, 0:], ts.reduce(ts.load(X[0:, 0:], _LAY), op, axis))

            r.specialize(target="gfx1201", M=16, N=16)

    @ts.kernel
    def bad(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.store(Y[0:, 0:], ts.reduce(ts.load(X[0:, 0:], _LAY), "prod"))

    with pytest.raises(VerifyError, match="sum/max/min"):
        bad.specialize(target="gfx1201", M=16, N=16)


def _json_with(prog: Program, kind: str, attr: str, value) -> str:
    d = json.loads(prog.to_json())

    def walk(ops):
        for o in ops:
            if o["kind"] == kind:
                o["attrs"][attr] = value
            if "body" in o["attrs"]:
                walk(o["attrs"]["body"]["block"])

    walk(d["body"])
    return json.dumps(d)


@pytest.mark.parametrize(("table", "kind", "attr", "base"), [
    (ELEMENTWISE, "elementwise", "op", lambda: _one_op("max", 1.0)),
    (REDUCE, "reduce", "op", None),
])
def test_json_accepts_the_table_and_names_it_when_refusing(table, kind, attr, base):
    if base is None:
        @ts.kernel
        def r(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
            ts.store(Y[0:, 0:], ts.reduce(ts.load(X[0:, 0:], _LAY), "sum"))

        prog = r.specialize(target="gfx1201", M=16, N=16)
    else:
        prog = base()
    for name, row in table.items():
        if kind == "elementwise" and row.arity == 1:
            continue  # unary rows take no y; the program above passes one
        assert Program.from_json(_json_with(prog, kind, attr, name)).walk()
    with pytest.raises(OpError) as e:
        Program.from_json(_json_with(prog, kind, attr, _UNKNOWN))
    for name in table:
        assert name in str(e.value)


def test_binops_round_trip_through_json_and_refuse_others():
    from examples.gemm import gemm

    prog = gemm.specialize(target="gfx1201", M=32, N=32, K=32)
    for name in BINOPS:
        assert Program.from_json(_json_with(prog, "binop", "op", name)).walk()
    with pytest.raises(OpError, match=r"one of: \+, -, \*, //, %"):
        Program.from_json(_json_with(prog, "binop", "op", "<<"))


def test_strategies_draw_every_row_with_test_constants():
    assert EPILOGUE_OPS == {e.name: e.test_constants for e in ELEMENTWISE.values() if e.test_constants}
    assert set(EPILOGUE_OPS) >= {"add", "sub", "mul", "max", "neg"}  # what 0.5.0 drew


def test_prelude_defines_every_macro_and_idents_reserve_their_functions():
    for vendor in ("amd", "nvidia"):
        lines = prelude_macros(vendor)
        assert len(lines) == len({m.head for e in ELEMENTWISE.values() for m in (e.macro, e.macro64) if m})
    for e in ELEMENTWISE.values():
        for m in (e.macro, e.macro64):
            if m is not None:
                fn = m.cuda.split("(")[0]
                assert fn in RESERVED, fn  # a tensor named `expf` (or `exp`) would shadow the math function


def test_every_kind_is_simulated_and_emitted_or_says_why():
    from tilesim.codegen.hip import _Gen
    from tilesim.wave.sim import _Sim

    for kind in OP_KINDS:
        assert hasattr(_Sim, "op_" + kind), kind
        assert hasattr(_Gen, "op_" + kind), kind
    assert set(KINDS) == set(OP_KINDS) == set(tilesim.ir.OP_KINDS)


# ---------------------------------------------------------------------------- no second list
def _literal_collections(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elts = node.elts
        elif isinstance(node, ast.Dict):
            elts = [k for k in node.keys if k is not None]
        else:
            continue
        yield node, {e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _all_assignments(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                ids |= {id(n) for n in ast.walk(node.value)}
    return ids


def _redeclarations(root: Path) -> list[str]:
    named = set(ELEMENTWISE) | set(BINOPS) | set(REDUCE)
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "ir" / "ops.py":
            continue
        tree = ast.parse(path.read_text())
        skip = _all_assignments(tree)  # export lists name DSL functions, some spelled like op kinds
        for node, strings in _literal_collections(tree):
            if id(node) in skip:
                continue
            if len(strings & named) >= 2 or len(strings & set(OP_KINDS)) >= 5:
                names = sorted(strings & (named | set(OP_KINDS)))
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {names}")
    return found


def test_no_module_redeclares_an_op_list():
    found = _redeclarations(ROOT / "tilesim")
    assert not found, "op names listed outside tilesim/ir/ops.py (derive them from the table):\n" + "\n".join(found)


def test_the_scan_sees_a_redeclaration(tmp_path):
    """The scan itself: a module with the 0.5.0 simulator's dict is found."""
    pkg = tmp_path / "tilesim"
    (pkg / "ir").mkdir(parents=True)
    (pkg / "ir" / "ops.py").write_text("X = ('add', 'sub')\n")  # the table itself is allowed
    (pkg / "sim.py").write_text('f = {"add": 1, "sub": 2}[op]\nk = ("const", "binop", "load", "store", "mma")\n')
    found = _redeclarations(pkg)
    assert len(found) == 2 and all("sim.py" in f for f in found)


def test_unknown_op_is_a_typed_error_naming_the_choices_not_a_keyerror():
    """0.5.0: `exp2` in JSON passed from_json and check, then simulate/emit raised a bare KeyError."""
    prog = _one_op("exp", None)
    text = _json_with(prog, "elementwise", "op", _UNKNOWN)
    with pytest.raises(TilesimError) as e:
        Program.from_json(text)
    assert isinstance(e.value, OpError) and _UNKNOWN in str(e.value) and "exp" in str(e.value).split("one of:")[1]


# ---------------------------------------------------------------------------- check says which paths a program takes
# (issue 13 item 5: these simulated fine, check said OK, and only emit said "not emitted yet")
_A16 = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("A")


def _cast_store(src: str, dst: str, target: str = "gfx1201"):
    def cast_store(X, Y):
        ts.store(Y[0:, 0:], ts.cast(ts.load(X[0:, 0:], _LAY), dst))

    # the element types come from the arguments (annotations are strings in this module)
    cast_store.__annotations__ = {"X": ts.Tensor[src, "M", "N"], "Y": ts.Tensor[dst, "M", "N"]}
    return ts.kernel(cast_store).specialize(target=target, M=16, N=16)


def _four_bit():
    @ts.kernel
    def four(X: ts.Tensor["i4", "M", "N"], Y: ts.Tensor["i4", "M", "N"]):
        ts.store(Y[0:, 0:], ts.load(X[0:, 0:], _LAY))

    return four.specialize(target="gfx1201", M=16, N=16)


def _f64_add():
    @ts.kernel
    def add64(X: ts.Tensor["f64", "M", "N"], Y: ts.Tensor["f64", "M", "N"]):
        x = ts.load(X[0:, 0:], _LAY)
        ts.store(Y[0:, 0:], x + x)

    return add64.specialize(target="gfx1201", M=16, N=16)


def _convert16():
    @ts.kernel
    def conv(X: ts.Tensor["f16", "M", "N"], Y: ts.Tensor["f16", "M", "N"]):
        ts.store(Y[0:, 0:], ts.convert(ts.load(X[0:, 0:], _LAY), _A16))

    return conv.specialize(target="gfx1201", M=16, N=16)


def _convert64():
    @ts.kernel
    def conv64(X: ts.Tensor["f64", "M", "N"], Y: ts.Tensor["f64", "M", "N"]):
        ts.store(Y[0:, 0:], ts.convert(ts.load(X[0:, 0:], _LAY), _A16))

    return conv64.specialize(target="gfx1201", M=16, N=16)


def _half(dt: str, what: str):
    def half(X, Y):
        x = ts.load(X[0:, 0:], _LAY)
        if what == "elementwise":
            y = ts.maximum(x * x - x, -1.0)
        elif what == "reduce":
            y = ts.reduce(x, "sum", "col")
        else:
            y = ts.convert(x, _A16)
        ts.store(Y[0:, 0:], y)

    half.__annotations__ = {"X": ts.Tensor[dt, "M", "N"], "Y": ts.Tensor[dt, "M", "N"]}
    return ts.kernel(half).specialize(target="gfx1201", M=16, N=16)


# issue 16 item 5: every one of these was refused ("not emitted yet") although check accepted it
EMITTED_NOW = {
    "4-bit tensor": _four_bit,
    "f64 elementwise": _f64_add,
    "64-bit convert": _convert64,
    "i8 cast": lambda: _cast_store("f32", "i8"),
    "bf16 cast to fp8": lambda: _cast_store("bf16", "fp8_ocp"),
    "fp4 cast": lambda: _cast_store("fp4", "f16"),
}


@pytest.mark.compiler
@pytest.mark.parametrize("case", sorted(EMITTED_NOW))
def test_what_check_accepts_is_emitted_and_compiles(case):
    from tilesim.hw.offline import compile_hip
    from tilesim.ir import check

    prog = EMITTED_NOW[case]()
    rep = check(prog)
    assert rep.ok and rep.paths["simulate"].ok and rep.paths["emit"].ok and rep.paths["compile"].ok
    assert "paths: simulate yes; emit yes; compile yes" in str(rep)
    assert compile_hip(emit_hip(prog).source, prog.target).metadata["vgpr_count"] > 0


def _broadcast_layout():
    """A (lane, slot) -> (row, col) layout whose slot 0 holds two elements (a CBSZ-style broadcast)."""
    from tilesim.layouts.layout import Layout

    hw = [(lane, 0) for lane in range(32) for _ in range(2)]
    logical = [(lane % 16, 2 * (lane // 16) + j) for lane in range(32) for j in range(2)]
    return Layout.from_pairs({"lane": 32, "slot": 1}, {"row": 16, "col": 4}, hw, logical)


def test_check_says_up_front_what_emit_refuses():
    """What stays refused is a layout fact, not a type: a slot holding two elements cannot be
    stored (which of its elements would the register hold?)."""
    from tilesim.codegen import CodegenError
    from tilesim.ir import check

    lay = _broadcast_layout()

    @ts.kernel
    def bcast(Y: ts.Tensor["f32", "M", "N"]):
        ts.store(Y[0:, 0:], ts.zeros(lay, "f32"))

    prog = bcast.specialize(target="gfx1201", M=16, N=4)
    rep = check(prog)
    says = "several elements (a broadcast) cannot be loaded or stored"
    assert not rep.paths["emit"].ok and says in rep.paths["emit"].reason
    assert not rep.paths["compile"].ok and "not emitted" in rep.paths["compile"].reason
    with pytest.raises(CodegenError, match=re.escape("(a broadcast) cannot be loaded or stored")):
        emit_hip(prog)
    assert "paths: simulate yes; emit no (" in str(rep)


def test_paths_agree_with_emit_on_every_example_and_target():
    import importlib

    from tilesim.codegen import CodegenError
    from tilesim.ir import check

    progs = [p for m in ("gemm", "gemm_abt", "lds_gemm", "softmax", "int8_gemm", "fp8_gemm", "sparse_gemm", "batched_small_gemm")
             for p in importlib.import_module(f"examples.{m}").programs()]
    progs += [make() for make in EMITTED_NOW.values()]
    progs += [_half(dt, w) for dt in ("f16", "bf16") for w in ("elementwise", "reduce", "convert")] + [_convert16()]
    seen = set()
    for p in progs:
        paths = check(p).paths
        try:
            emit_hip(p)
            emitted = True
        except CodegenError:
            emitted = False
        assert paths["emit"].ok == emitted, (p.name, p.target, paths["emit"])
        amd = p.target.startswith("gfx")
        assert paths["compile"].ok == (emitted and amd), (p.name, p.target)
        if not amd:
            assert "NVRTC" in paths["compile"].reason
        seen.add((emitted, amd))
    assert seen >= {(True, True), (True, False)}


def test_check_cli_reports_paths_as_text_and_json(tmp_path):
    import contextlib
    import io

    from tilesim import cli

    lay = _broadcast_layout()

    @ts.kernel
    def bcast(Y: ts.Tensor["f32", "M", "N"]):
        ts.store(Y[0:, 0:], ts.zeros(lay, "f32"))

    from tilesim.ir import check

    prog = bcast.specialize(target="gfx1201", M=16, N=4)
    status = 0 if check(prog).ok else 1  # (check also reports the two elements one slot claims)
    f = tmp_path / "bcast.json"
    f.write_text(prog.to_json())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["check", str(f)]) == status
    assert "paths: simulate yes; emit no (op " in out.getvalue() and "broadcast" in out.getvalue()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["check", str(f), "--format", "json"]) == status
    (doc,) = json.loads(out.getvalue())
    assert doc["paths"]["simulate"] == {"ok": True, "reason": ""}
    assert doc["paths"]["emit"]["ok"] is False and "broadcast" in doc["paths"]["emit"]["reason"]
    assert doc["paths"]["compile"]["ok"] is False
    f.write_text(_f64_add().to_json())  # f64 arithmetic: emitted (issue 16 item 5)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["check", str(f), "--format", "json"]) == 0
    assert json.loads(out.getvalue())[0]["paths"]["emit"] == {"ok": True, "reason": ""}


@pytest.mark.compiler
def test_bf16_codec_helpers_round_like_ml_dtypes(tmp_path):
    """The C helpers for bf16 (tilesim.codegen.elements), compiled for the host with the same zig clang and
    run over edge cases and random bit patterns, against ml_dtypes' bfloat16 (an independent
    implementation of the format): round to nearest even, overflow to inf, NaN stays NaN."""
    import subprocess
    import sys

    import ml_dtypes

    from tilesim.codegen.elements import HELPERS

    src = tmp_path / "bf16.c"
    src.write_text("#include <stdio.h>\n#include <string.h>\ntypedef unsigned int ts_u32;\n#define TS_DEV\n"
                   "static float ts_f32(ts_u32 x) { float f; memcpy(&f, &x, 4); return f; }\n"
                   "static ts_u32 ts_bits(float f) { ts_u32 x; memcpy(&x, &f, 4); return x; }\n"
                   + HELPERS["ts_f32_to_bf16"] + "\nint main(void) { unsigned x; while (scanf(\"%x\", &x) == 1) "
                   "printf(\"%x %x\\n\", ts_f32_to_bf16(ts_f32(x)), ts_bits(ts_bf16_to_f32(x & 0xffffu))); "
                   "return 0; }\n")
    exe = tmp_path / "bf16"
    try:
        subprocess.run([sys.executable, "-m", "ziglang", "cc", "-O1", "-o", str(exe), str(src)], check=True,
                       capture_output=True, timeout=300)
    except (subprocess.CalledProcessError, FileNotFoundError) as e:
        pytest.skip(f"no host C compiler: {e}")
    rng = np.random.default_rng(0)
    edge = [0x00000000, 0x80000000, 0x3f808000, 0x3f818000, 0x3f807fff, 0x3f808001, 0x7f7fffff, 0x7f7f8000,
            0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffffffff, 0x00000001, 0x00008000]
    xs = np.array(edge + rng.integers(0, 2**32, 20000, dtype=np.uint64).tolist(), np.uint32)
    out = subprocess.run([str(exe)], input="\n".join(f"{x:x}" for x in xs), capture_output=True, text=True,
                         timeout=120).stdout.split()
    got_bf16 = np.array([int(v, 16) for v in out[0::2]], np.uint16)
    got_f32 = np.array([int(v, 16) for v in out[1::2]], np.uint32)
    f = xs.view(np.float32)
    with np.errstate(invalid="ignore"):
        want = f.astype(ml_dtypes.bfloat16)
    nan = np.isnan(f)
    assert np.array_equal(got_bf16[~nan], want.view(np.uint16)[~nan])
    assert np.all(np.isnan(got_bf16[nan].view(ml_dtypes.bfloat16).astype(np.float32)))
    assert np.array_equal(got_bf16[nan] >> 15, (xs[nan] >> 31).astype(np.uint16))  # sign kept
    lo = (xs & 0xFFFF).astype(np.uint16)
    dec = lo.view(ml_dtypes.bfloat16).astype(np.float32)
    same = np.isnan(dec) | (got_f32.view(np.float32) == dec)
    assert np.all(same) and np.array_equal(np.isnan(dec), np.isnan(got_f32.view(np.float32)))


@pytest.mark.compiler
@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("what", ["elementwise", "reduce", "convert"])
def test_16_bit_float_arithmetic_and_convert_are_emitted_and_compile(dt, what):
    """f16/bf16 elementwise, reduce and 16-bit convert (issue 13 item 5) are emitted now."""
    from tilesim.hw import offline
    from tilesim.ir import check

    prog = _half(dt, what)
    assert check(prog).paths["emit"].ok
    comp = offline.compile_hip(emit_hip(prog).source, prog.target)
    assert comp.metadata["vgpr_count"] > 0


@pytest.mark.compiler
@pytest.mark.parametrize(("src", "dst"), [("f32", "bf16"), ("bf16", "f32"), ("f16", "bf16"), ("bf16", "f16"),
                                          ("f32", "f16"), ("f16", "f32")])
def test_float_casts_are_emitted_and_compile(src, dst):
    """bf16 casts and stores (issue 13 item 5) are emitted now: check's paths say so and clang agrees."""
    from tilesim.hw import offline
    from tilesim.ir import check

    prog = _cast_store(src, dst)
    assert check(prog).paths["emit"].ok and check(prog).paths["compile"].ok
    comp = offline.compile_hip(emit_hip(prog).source, prog.target)
    assert comp.metadata["vgpr_count"] > 0 and comp.metadata["scratch_bytes"] == 0
    nv = _cast_store(src, dst, target="sm_90")
    assert "cast_store" in emit_hip(nv).source
