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
        assert f"#define {row.macro.head} {row.macro.amd}" in src and f"#define {row.macro.head} {row.macro.cuda}" in src


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
        Program.from_json(_json_with(prog, kind, attr, "exp2"))
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
        assert len(lines) == len({e.macro.head for e in ELEMENTWISE.values() if e.macro})
    for e in ELEMENTWISE.values():
        if e.macro is not None:
            fn = e.macro.cuda.split("(")[0]
            assert fn in RESERVED, fn  # a tensor named `expf` would shadow the math function


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
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {sorted(strings & (named | set(OP_KINDS)))}")
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
    text = _json_with(prog, "elementwise", "op", "exp2")
    with pytest.raises(TilesimError) as e:
        Program.from_json(text)
    assert isinstance(e.value, OpError) and "exp2" in str(e.value) and "exp" in str(e.value).split("one of:")[1]
