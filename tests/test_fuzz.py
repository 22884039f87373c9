"""A small slice of the fuzz campaign (``python tools/fuzz.py``) and the bugs it found, pinned.

The slice runs every fuzz target with a few dozen hypothesis inputs each and requires that nothing
escapes but a one-line ``TilesimError`` (CLI: one ``tilesim: error:`` line, status 2). The tests
below it pin the concrete inputs that used to escape as ``TypeError``/``AttributeError``/
``SyntaxError``/… before the fixes listed in docs/reliability.md.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import tilesim as ts
from tilesim.cli import main
from tilesim.errors import BudgetError, LayoutError, VerifyError
from tilesim.ir.core import Program
from tilesim.layouts import Layout
from tilesim.layouts.render import from_json, to_json
from tilesim.matrix import lookup

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("tilesim_tools_fuzz", ROOT / "tools" / "fuzz.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_fuzz_slice_has_no_escapes(tmp_path, monkeypatch):
    fuzz = _tool()
    doc = fuzz.fuzz(examples=40, seed=1, scale={"cli": 1.0, "program_json": 1.0})
    assert not doc["distinct_failures"], doc["distinct_failures"]
    assert set(doc["targets"]) == set(fuzz.TARGETS)
    assert doc["inputs"] >= 40 * len(fuzz.TARGETS)
    for name, t in doc["targets"].items():
        assert t["inputs"] >= 40, name
        assert t["outcomes"].get("rejected", 0) + t["outcomes"].get("exit 2", 0) > 0, name  # bad input was made


def test_restrict_refuses_what_is_not_one_index_of_the_dim():
    """Fuzz seed 0 (issue 19): ``restrict(lane=[70, '', False])`` escaped as a numpy broadcasting
    ValueError; -1, 2**70, NaN and '3' silently gave an empty layout."""
    d = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("A")
    for bad in ([1, 2], [70, "", False], -1, 32, 2**70, float("nan"), "3", True, None):
        with pytest.raises(LayoutError, match="not an index of lane; valid: an integer 0..31"):
            d.restrict(lane=bad)
    r = d.restrict(lane=np.int64(3))
    assert r.pairs()[0].shape[0] == 8 and r == d.restrict(lane=3)  # lane 3 holds 8 slots; numpy ints work


def test_check_reports_malformed_mma_modifiers_instead_of_raising():
    """Fuzz seed 0 (issue 19): a program JSON whose mma ``modifiers`` became ``{"tuple": [[]]}``
    passed from_json, then check raised ValueError (not enough values to unpack)."""
    import json

    from examples import gemm

    doc = json.loads(gemm.gemm.specialize(target="gfx1201", M=16, N=16, K=16).to_json())
    mma = next(o for o in doc["body"][3]["attrs"]["body"]["block"] if o["kind"] == "mma")
    for bad in ({"tuple": [[]]}, 5, {"tuple": [{"tuple": ["neg", "x"]}]}):
        mma["attrs"]["modifiers"] = bad
        try:
            prog = Program.from_json(json.dumps(doc))
        except VerifyError:
            continue  # refused at load is as good
        (err,) = ts.check(prog).errors
        assert "modifiers must be (name, integer) pairs" in err.message


def test_layout_constructors_reject_garbage_with_layout_error():
    bad_calls = [
        lambda: Layout.from_pairs(0.0, {}, [], []),                        # TypeError: not iterable
        lambda: Layout.from_pairs({}, {}, [], []),                         # ValueError: reshape to 0 columns
        lambda: Layout.identity({}),                                       # StopIteration
        lambda: Layout.from_pairs([[3, {}, 1.0]], {"row": 2}, [], []),     # unpacking
        lambda: Layout.from_pairs({"lane": 2}, {"row": 2}, [[2**64]], [[0]]),  # OverflowError
        lambda: Layout.from_pairs({"lane": 2}, {"row": 2}, [["a"]], [[0]]),
        lambda: Layout.from_function({"lane": 4}, {"row": 4}, lambda lane: 0.5),
        lambda: Layout.from_function({"lane": 4}, {"row": 4}, lambda lane: {"row": [1, 2, 3]}),
        lambda: Layout.from_logical({"lane": 4}, {"row": 4}, lambda row: 7),
        lambda: Layout.from_bases({"lane": 4}, {"row": 4}, {"lane": [[1], "x"]}),
        lambda: Layout.from_bases({"lane": 4}, {"row": 4}, 3),
        lambda: Layout.identity({"lane": 4}).with_elem_bits(2**64),
    ]
    for call in bad_calls:
        with pytest.raises(LayoutError) as e:
            call()
        assert "\n" not in str(e.value) and str(e.value)


def test_layout_queries_reject_garbage_with_layout_error():
    d = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("D")
    with pytest.raises(LayoutError):
        d.apply(lane=[1, [], 2], slot=0)
    with pytest.raises(LayoutError):
        d.apply(lane=2**70, slot=0)
    with pytest.raises(LayoutError):
        d.rename(lane={})
    assert d.apply(lane=17, slot=3) == {"block": 0, "row": 11, "col": 1}  # the good path is unchanged


def test_layout_and_program_json_reject_non_objects():
    good = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("D")
    assert from_json(to_json(good)) == good
    huge = ('{"format": "tilesim.layout/1", "in_dims": [["lane", 2]], "out_dims": [["row", 2]], "elem_bits": 32, '
            '"pairs": [[0, 99999999999999999999999]]}')
    for text in ("null", "[1, 2]", huge):
        with pytest.raises(LayoutError):
            from_json(text)
    for text in ("null", "[]", '"x"'):
        with pytest.raises(VerifyError):
            Program.from_json(text)


def test_program_json_structure_is_validated():
    from examples import gemm

    prog = gemm.gemm.specialize(target="gfx1100", M=16, N=16, K=32)
    assert Program.from_json(prog.to_json()) == prog
    text = prog.to_json()
    # the mma's A operand replaced by a Python int: check used to fail an assert
    import json

    doc = json.loads(text)
    loop = next(o for o in doc["body"] if o["kind"] == "loop")
    mma = next(o for o in loop["attrs"]["body"]["block"] if o["kind"] == "mma")
    mma["args"][0] = 3
    with pytest.raises(VerifyError, match="mma op takes"):
        Program.from_json(json.dumps(doc))
    doc = json.loads(text)
    doc["grid"] = [0, 1]
    with pytest.raises(VerifyError, match="positive"):
        Program.from_json(json.dumps(doc))


@pytest.mark.parametrize(("source", "needle"), [
    ("def programs(:\n", "SyntaxError"),
    ("def programs():\n    raise ValueError('user bug')\n", "ValueError: user bug"),
    ("import sys\nsys.exit(3)\n", "SystemExit"),
    ("def programs():\n    return [1]\n", "must return specialised programs"),
])
def test_cli_reports_a_broken_user_file_in_one_line(tmp_path, capsys, source, needle):
    f = tmp_path / "user.py"
    f.write_text(source)
    rc = main(["check", str(f)])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    (line,) = err.splitlines()
    assert line.startswith("tilesim: error: ") and needle in line


def test_cli_reports_a_directory_and_undecodable_json(tmp_path, capsys):
    (tmp_path / "d.py").mkdir()
    (tmp_path / "b.json").write_bytes(b"\xff\xfe\x00")
    for path in (tmp_path / "d.py", tmp_path / "b.json"):
        assert main(["emit", str(path), "--target", "gfx942"]) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith("tilesim: error: ")


def test_check_flags_an_operand_that_is_not_a_fragment_instead_of_asserting():
    from examples import gemm
    from tilesim.ir.core import Value

    spec = importlib.util.spec_from_file_location("tilesim_tools_mutation_f", ROOT / "tools" / "mutation.py")
    mutation = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mutation
    spec.loader.exec_module(mutation)
    prog = gemm.gemm.specialize(target="gfx1201", M=16, N=16, K=16)
    a_id = next(op for op in prog.walk() if op.kind == "mma").args[0].id
    # used to be a bare `assert` (AssertionError) in check; since the op table validates programs
    # when they are made (tilesim/ir/ops.py), the broken program is a typed error before check runs
    with pytest.raises(ts.VerifyError, match="load op must define a frag value"):
        sys.modules["tools._layout_mutants"]._map_values(prog, lambda v: Value(v.id, "scalar") if v.id == a_id else v)


def test_from_json_refuses_a_loop_without_carried_pairs():
    """Fuzz seed 2 (issue 19 item 2): a program JSON whose loop lost its ``carried`` attribute passed
    from_json, then check raised TypeError ('NoneType' object is not iterable) in the VGPR estimate."""
    import json

    from examples import gemm, softmax

    doc = json.loads(gemm.gemm.specialize(target="gfx1201", M=16, N=16, K=32).to_json())
    loop = doc["body"][3]
    assert loop["kind"] == "loop"
    del loop["attrs"]["carried"]
    with pytest.raises(VerifyError, match="carried"):
        Program.from_json(json.dumps(doc))
    loop["attrs"]["carried"] = []  # no carried values is a valid loop
    Program.from_json(json.dumps(doc))
    for prog in softmax.programs():
        assert Program.from_json(prog.to_json()) == prog


def test_check_survives_garbled_binop_and_huge_outputs():
    """Fuzz seed 2 on the static coverage analysis (tilesim/ir/accesses.py): a binop whose ``op`` is a
    list raised TypeError (unhashable), a 2**36-element output made the coverage count allocate
    512 GiB (MemoryError)."""
    import json

    from examples import gemm

    base = gemm.gemm.specialize(target="gfx1201", M=32, N=32, K=32).to_json()
    doc = json.loads(base)
    next(o for o in doc["body"] if o["kind"] == "binop")["attrs"]["op"] = ["*"]
    with pytest.raises(VerifyError, match="binop op"):  # refused when made, by the op table
        Program.from_json(json.dumps(doc))
    doc = json.loads(base)
    next(t for t in doc["tensors"] if t[0] == "C")[3] = [1 << 18, 1 << 18]
    try:
        rep = ts.check(Program.from_json(json.dumps(doc)))
    except (VerifyError, BudgetError):
        return  # refused at load or by the resource budget (a size limit) is as good
    assert any("over the analysis budget" in f.message or "budget" in f.message for f in rep.findings)
