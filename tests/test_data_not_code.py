"""Data never becomes code, markup or a crash: hostile inputs a reviewer would hand-craft.

tests/test_injection.py puts payloads into the leaves of every example program. This file closes
the classes found beyond it (each test here failed on 0.7.0's main before its fix):

* program JSON read loosely: a duplicate key (the last one won, so a reviewer reading the first
  saw another program), an unknown key (ignored, so a misspelt or planted field passed silently),
  ``"output": "false"`` read as True (``bool()`` of any non-empty text), dims ``"MK"`` read as
  ("M", "K"), a scalar value carrying a ``dtype``/``layout``/``lds`` no scalar has (free text kept
  and written back out);
* the structure of the emitted source: for hostile mutations anywhere in any example program,
  layouts included, an accepted program's source is made of the generator's own vocabulary (every
  word, number, string literal and punctuation character the unmodified examples' sources use),
  the program's names that are already safe identifiers, and sanitised identifiers — nothing else;
* SVG pictures with a title holding characters XML forbids (NUL, ESC, U+FFFE, lone surrogates):
  the document stopped being well-formed XML (or could not be written); ``<script>``/``]]>``/
  ``</svg>`` names stay text;
* ``tilesim emulate --arg``: a by-value scalar that is not an integer, does not fit its type, or a
  buffer too large to allocate ended in a traceback, not a typed error (exit 2).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilesim.codegen import emit_hip
from tilesim.errors import TilesimError
from tilesim.ir.core import Program

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ["gemm", "gemm_abt", "lds_gemm", "softmax", "int8_gemm", "fp8_gemm", "sparse_gemm", "batched_small_gemm",
            "lds_tr_gemm", "mxfp8_gemm", "block_gemm", "gemm_bias", "mxfp4_gemm", "gfx1250_gemm"]


@lru_cache(maxsize=None)
def _texts() -> tuple[str, ...]:
    import importlib

    out = []
    for m in EXAMPLES:
        mod = importlib.import_module(f"examples.{m}")
        out += [p.to_json() for p in mod.programs()[:2]]
    return tuple(out)


def _doc(i: int = 0) -> dict:
    return json.loads(_texts()[i])


def _ops(ops: list):
    for o in ops:
        yield o
        if "body" in o["attrs"]:
            yield from _ops(o["attrs"]["body"]["block"])


def _first(doc: dict, pred) -> dict:
    return next(o for o in _ops(doc["body"]) if pred(o))


def _scalar_out(doc):
    return _first(doc, lambda o: o["out"] is not None and o["out"]["kind"] == "scalar")["out"]


def _frag_out(doc):
    return _first(doc, lambda o: o["out"] is not None and o["out"]["kind"] == "frag")["out"]


def _refused(text: str, *needles: str) -> str:
    with pytest.raises(TilesimError) as e:
        Program.from_json(text)
    msg = str(e.value)
    for n in needles:
        assert n in msg, (n, msg)
    return msg


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tilesim", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


# ------------------------------------------------------------------ program JSON read strictly
def test_every_example_program_still_round_trips():
    for text in _texts():
        assert Program.from_json(text).to_json() == text


@pytest.mark.parametrize("where", ["top", "op", "value", "layout", "ref", "tuple", "body", "layout_attr"])
def test_unknown_keys_are_refused_naming_the_key_and_the_valid_ones(where):
    doc = _doc()
    if where == "top":
        doc["kernel_prelude"] = "asm"
        needles = ("kernel_prelude", "tensors")
    elif where == "op":
        _first(doc, lambda o: o["kind"] == "load")["source"] = "asm"
        needles = ("source", "attrs")
    elif where == "value":
        _frag_out(doc)["c_type"] = "int"
        needles = ("c_type", "dtype")
    elif where == "layout":
        _frag_out(doc)["layout"]["expr"] = "lane * 2"
        needles = ("expr", "pairs")
    elif where == "ref":
        op = _first(doc, lambda o: any(isinstance(a, dict) for a in o["args"]))
        next(a for a in op["args"] if isinstance(a, dict))["raw"] = "x"
        needles = ("raw", "ref")
    elif where == "tuple":
        doc = json.loads(_texts()[2 * EXAMPLES.index("lds_gemm")])  # has loop-carried values and bodies
        op = _first(doc, lambda o: o["kind"] == "loop")
        op["args"][0] = {"tuple": [], "extra": 1}
        needles = ("extra",)
    elif where == "body":
        doc = json.loads(_texts()[2 * EXAMPLES.index("lds_gemm")])
        _first(doc, lambda o: o["kind"] == "loop")["attrs"]["body"]["else"] = []
        needles = ("else", "block")
    else:
        doc = json.loads(_texts()[2 * EXAMPLES.index("lds_gemm")])
        op = _first(doc, lambda o: o["kind"] == "loop")
        op["attrs"]["body"] = {"block": op["attrs"]["body"]["block"], "layout": 1}
        needles = ("layout", "block")
    _refused(json.dumps(doc), *needles)


@pytest.mark.parametrize("where", ["top", "attrs", "value", "layout"])
def test_duplicate_keys_are_refused(where):
    text = _texts()[0]
    if where == "top":
        bad = text.replace('"name": ', '"name": "decoy", "name": ', 1)
    elif where == "attrs":
        bad = text.replace('"attrs": {"tensor": ', '"attrs": {"tensor": "X", "tensor": ', 1)
    elif where == "value":
        bad = text.replace('"kind": "frag", ', '"kind": "frag", "kind": "frag", ', 1)
    else:
        bad = text.replace('"elem_bits": ', '"elem_bits": 8, "elem_bits": ', 1)
    assert bad != text
    _refused(bad, "twice")


@pytest.mark.parametrize("flag", ["false", "true", 0, 1, None, [], "no"])
def test_the_output_flag_is_a_json_boolean(flag):
    doc = _doc()
    doc["tensors"][0][4] = flag
    _refused(json.dumps(doc), "output", "true or false")


@pytest.mark.parametrize("field,value", [(2, "MK"), (3, "11"), (2, {"M": 1, "K": 2}), (3, {"a": 1, "b": 2})])
def test_tensor_dims_and_shape_are_lists(field, value):
    doc = _doc()
    doc["tensors"][0][field] = value
    _refused(json.dumps(doc), "list")


@pytest.mark.parametrize("entry", [[], ["A", "f16", ["M", "K"], [16, 16]], ["A", "f16", ["M", "K"], [16, 16], False, 1],
                                   "A", {"name": "A"}])
def test_a_tensor_entry_is_five_fields(entry):
    doc = _doc()
    doc["tensors"][0] = entry
    _refused(json.dumps(doc), "tensor")


@pytest.mark.parametrize("field,value,needle", [("dtype", 'int); asm("s_trap 2"); //', "element types"),
                                                ("dtype", "f32", "scalar"), ("lds", [16, 16, 2, 0, 1, 1, 1], "scalar")])
def test_a_scalar_carries_no_element_type_or_buffer(field, value, needle):
    doc = _doc()
    _scalar_out(doc)[field] = value
    _refused(json.dumps(doc), needle)


def test_a_scalar_carries_no_layout():
    doc = _doc()
    _scalar_out(doc)["layout"] = _frag_out(doc)["layout"]
    _refused(json.dumps(doc), "scalar")


def test_derived_layout_fields_must_agree_with_the_pairs():
    doc = _doc()
    lay = _frag_out(doc)["layout"]
    assert "locations" in lay  # operand layouts carry their location table (what a reader sees)
    lay["locations"][0] = [7] * len(lay["locations"][0])
    _refused(json.dumps(doc), "locations")


@pytest.mark.parametrize("mutation", ["dup", "unknown", "flag"])
def test_the_cli_exits_2_with_one_line(tmp_path, mutation):
    text = _texts()[0]
    if mutation == "dup":
        text = text.replace('"name": ', '"name": "decoy", "name": ', 1)
    elif mutation == "unknown":
        doc = json.loads(text)
        doc["evil"] = 1
        text = json.dumps(doc)
    else:
        doc = json.loads(text)
        doc["tensors"][0][4] = "false"
        text = json.dumps(doc)
    p = tmp_path / "prog.json"
    p.write_text(text)
    for cmd in ("emit", "check"):
        r = _cli(cmd, str(p))
        assert r.returncode == 2, (cmd, r.stdout[-300:], r.stderr[-300:])
        assert "Traceback" not in r.stderr and r.stderr.startswith("tilesim: error:"), r.stderr


# ------------------------------------------------------------------ the emitted source's vocabulary
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[uUlLfF]*")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
# what the sanitiser makes of a name that is not kept as written (tilesim/codegen/idents.py)
_MANGLED = re.compile(r"[a-z]+_(?:[A-Za-z0-9_]*_)?[0-9a-f]{8}")


def _tokens(src: str) -> tuple[set, set, set, set]:
    """(words, numbers, string literals, punctuation characters) of the source outside // comments."""
    code = "\n".join(ln.split("//", 1)[0] if '"' not in ln.split("//", 1)[0] else ln for ln in src.splitlines())
    strings = set(_STRING.findall(code))
    code = _STRING.sub(" ", code)
    code = re.sub(r"//[^\n]*", " ", code)
    words, numbers, punct = set(), set(), set()
    i = 0
    while i < len(code):
        ch = code[i]
        if ch.isspace():
            i += 1
            continue
        m = _WORD.match(code, i)
        if m:
            words.add(m.group())
            i = m.end()
            continue
        m = _NUMBER.match(code, i)
        if m:
            numbers.add(m.group())
            i = m.end()
            continue
        punct.add(ch)
        i += 1
    return words, numbers, strings, punct


@lru_cache(maxsize=None)
def _vocabulary() -> tuple[frozenset, frozenset, frozenset]:
    """What the generator writes by itself: every word, string literal and punctuation character of
    the unmodified examples' sources (AMD and NVIDIA), minus the programs' own names."""
    words, strings, punct = set(), set(), set()
    for text in _texts():
        prog = Program.from_json(text)
        w, _, s, p = _tokens(emit_hip(prog).source)
        words |= w - _names(prog)
        strings |= s
        punct |= p
    return frozenset(words), frozenset(strings), frozenset(punct)


def _names(prog: Program) -> set[str]:
    out = {prog.name, *(t.name for t in prog.tensors), *(d for t in prog.tensors for d in t.dims),
           *(k for k, _ in prog.sizes)}
    out |= {op.out.name for op in prog.walk() if op.out is not None and op.out.name}
    return out


def _assert_closed_vocabulary(prog: Program, src: str) -> None:
    words, strings, punct = _vocabulary()
    w, numbers, s, p = _tokens(src)
    names = {n for n in _names(prog) if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", n)}
    for word in w - words:
        assert word in names or _MANGLED.fullmatch(word), f"word {word!r} is neither the generator's nor a name"
    assert s <= strings, s - strings
    assert p <= punct, p - punct
    for n in numbers:  # integers the generator prints are C ints (range-checked)
        if re.fullmatch(r"\d+", n):
            assert int(n) <= 2**32, n


_HOSTILE = ['"); asm volatile("s_trap 2"); //', "*/ #include <x> /*", "a\\\nb", "\x00", "</script>", "0x1p3",
            "1e400", "-0.0", "NaN", "lane", "__global__", "int", "threadIdx", "s_trap 2", "x\u2028y", "ts_lds"]
_LEAF_VALUES = st.one_of(st.sampled_from(_HOSTILE), st.text(max_size=10), st.integers(-2**70, 2**70),
                         st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
                         st.lists(st.integers(-3, 70), max_size=3), st.dictionaries(st.sampled_from(["ref", "tuple", "x"]),
                                                                                 st.integers(0, 5), max_size=2))


def _same_type(old):
    if isinstance(old, bool):
        return st.booleans()
    if isinstance(old, int):
        return st.one_of(st.integers(-2, 2 * old + 2), st.integers(-2**31 - 2, 2**31 + 2))
    if isinstance(old, float):
        return st.floats(allow_nan=True, allow_infinity=True)
    return st.one_of(st.sampled_from(_HOSTILE), st.text(max_size=10))


def _all_paths(x, path=()):
    yield path
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _all_paths(v, (*path, k))
    elif isinstance(x, list):
        for i, v in enumerate(x[:70]):
            yield from _all_paths(v, (*path, i))


@lru_cache(maxsize=None)
def _paths(i: int, layout: bool) -> tuple:
    return tuple(p for p in _all_paths(_doc(i)) if p and ("layout" in p) == layout)


def _mutate(data) -> tuple[dict, str]:
    i = data.draw(st.integers(0, len(_texts()) - 1), label="program")
    doc = _doc(i)
    for _ in range(data.draw(st.integers(1, 2), label="edits")):
        # layout tables hold most leaves: half the edits go elsewhere (names, sizes, attributes, ids)
        paths = _paths(i, data.draw(st.booleans(), label="inside a layout"))
        path = paths[data.draw(st.integers(0, len(paths) - 1), label="path")]
        node = doc
        try:
            for p in path[:-1]:
                node = node[p]
            how = data.draw(st.sampled_from(["key", "any", *["same type"] * 4]), label="edit")
            old = node[path[-1]]
            if how == "key" and isinstance(node, dict):
                node[data.draw(st.sampled_from(_HOSTILE + ["name", "dtype", "layout"]), label="key")] = 1
            elif how == "same type" and isinstance(old, (str, int, float)):  # often accepted: names, sizes
                node[path[-1]] = data.draw(_same_type(old), label="value")
            else:
                node[path[-1]] = data.draw(_LEAF_VALUES, label="value")
        except (KeyError, IndexError, TypeError):  # an earlier edit changed the shape under this path
            pass
    return doc, json.dumps(doc)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_hostile_mutations_are_refused_or_emit_only_the_closed_vocabulary(data):
    _, text = _mutate(data)
    try:
        prog = Program.from_json(text)
        src = emit_hip(prog).source
    except TilesimError:
        return  # refused with a typed error: nothing was generated
    _assert_closed_vocabulary(prog, src)


def test_the_vocabulary_check_sees_an_injected_word_and_string():
    """The check above can fail: a word, a string literal or a character the generator never writes."""
    prog = Program.from_json(_texts()[0])
    src = emit_hip(prog).source
    _assert_closed_vocabulary(prog, src)
    for bad in ['asm volatile("s_trap 2");', "#include", "system(x);", "`"]:
        with pytest.raises(AssertionError):
            _assert_closed_vocabulary(prog, src.replace("{", "{ " + bad, 1))


# ------------------------------------------------------------------ markup
_MARKUP = ["<script>alert(1)</script>", '"onload="alert(1)', "]]>", "</svg><script>x</script>", "&amp;",
           "<![CDATA[x]]>", "a\x00b", "a\x1b[31mb", "a\x0cb", "a\ufffeb", "a\udc80b"]
# characters XML 1.0 forbids are shown as their escapes, written out here by hand
_SHOWN = {"a\x00b": "a\\x00b", "a\x1b[31mb": "a\\x1b[31mb", "a\x0cb": "a\\x0cb", "a\ufffeb": "a\\ufffeb",
          "a\udc80b": "a\\udc80b"}


def _well_formed_svg(text: str) -> ET.Element:
    text.encode("utf-8")  # it can be written as UTF-8
    root = ET.fromstring(text)
    assert root.tag.endswith("svg")
    assert not [e for e in root.iter() if e.tag.rsplit("}", 1)[-1] in ("script", "foreignObject")]
    assert not [k for e in root.iter() for k in e.attrib if k.lower().startswith("on")]
    return root


@pytest.mark.parametrize("title", _MARKUP)
def test_svg_pictures_keep_any_title_as_text(title):
    from tilesim.layouts.pictures import svg, svg_compare, svg_heatmap
    from tilesim.matrix import lookup

    lay = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")
    for text in (svg(lay, title), svg_compare(lay, lay, title, title), svg_heatmap(np.ones((2, 2)), title)):
        root = _well_formed_svg(text)
        titles = ["".join(e.itertext()) for e in root.iter() if e.tag.endswith("title")]
        assert any(_SHOWN.get(title, title) in t for t in titles), (titles[:2], title)  # markup read back as text


@pytest.mark.parametrize("title", _MARKUP)
def test_gluon_pictures_keep_any_title_as_text(title):
    from tilesim.frameworks.gluon import BlockedLayout
    from tilesim.frameworks.gluon_picture import svg

    _well_formed_svg(svg(BlockedLayout([1, 4], [8, 4], [1, 1], [1, 0]), [8, 16], title=title))


def test_a_verdict_heatmap_of_a_hostile_program_name_is_well_formed():
    from tilesim.layouts.pictures import svg_heatmap

    for name in _MARKUP:
        _well_formed_svg(svg_heatmap(np.zeros((4, 2)), f"{name} on gfx1201: wrong elements"))


# ------------------------------------------------------------------ emulate --arg
@pytest.mark.parametrize("spec", ["n=i32:1.5", "n=i32:99999999999", "n=u8:-1", "n=i8:128", "n=u64:1e3", "x=f16:1e10",
                                  "x=f32:1..2",
                                  "a=f32[99999999999999]", "a=f16[4294967296,4294967296]"])
def test_emulate_arguments_out_of_range_are_typed_errors(spec):
    from tilesim.isa.hipfile import materialise

    with pytest.raises(TilesimError) as e:
        materialise([spec])
    assert (spec in str(e.value)) if ":" in spec else ("budget" in str(e.value))


def test_emulate_arguments_in_range_are_kept():
    from tilesim.isa.hipfile import materialise

    vals = materialise(["n=i32:-2147483648", "m=u8:255", "x=f32:1e3", "a=i8[4]"])
    assert int(vals[0]) == -2**31 and vals[0].dtype == np.int32
    assert int(vals[1]) == 255 and float(vals[2]) == 1000.0
    assert vals[3][1].shape == (4,)


def test_emulate_cli_bad_argument_exits_2(tmp_path):
    src = tmp_path / "k.hip"
    src.write_text('extern "C" __attribute__((amdgpu_kernel)) void k(float* a, int n) { a[0] = n; }\n')
    r = _cli("emulate", str(src), "--target", "gfx1100", "--kernel", "k", "--arg", "a=f32[64]", "--arg", "n=i32:1.5")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-400:]
    assert "n=i32:1.5" in r.stderr


# ------------------------------------------------------------------ terminal control sequences
_TERMINAL = ["\x1b]0;pwned\x07", "\x1b[2J\x1b[H", "a\rb", "\u202egnp.exe", "\x9b31m", "x\x08\x08y"]


@pytest.mark.parametrize("cmd", ["check", "emit", "simulate"])
def test_cli_output_carries_no_terminal_control_from_names(tmp_path, cmd):
    """A program's name and tensor names are free text (sanitised in code); printed to a terminal,
    ESC/CSI/OSC sequences, carriage returns, backspaces and bidi overrides could rewrite what the
    reader sees (set the title, clear the screen, hide a finding): the CLI prints them as escapes."""
    doc = _doc()
    doc["name"] = "".join(_TERMINAL)
    old = doc["tensors"][0][0]
    doc["tensors"][0][0] = _TERMINAL[1]
    for o in _ops(doc["body"]):
        if o["attrs"].get("tensor") == old:
            o["attrs"]["tensor"] = _TERMINAL[1]
    p = tmp_path / "prog.json"
    p.write_text(json.dumps(doc))
    extra = ["--target", doc["target"]] if cmd == "emit" else []
    r = _cli(cmd, str(p), *extra)
    assert r.returncode in ((0, 1) if cmd != "simulate" else (1, 4)), r.stderr[-300:]  # a .json: no reference
    for out in (r.stdout, r.stderr):
        bad = [c for c in out if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0
               or 0x202a <= ord(c) <= 0x202e or 0x2066 <= ord(c) <= 0x2069]
        assert not bad, (cmd, bad[:5])
    if cmd == "check":
        assert "\\x1b]0;pwned" in r.stdout  # still shown, as an escape


def test_cli_error_messages_carry_no_terminal_control(tmp_path):
    p = tmp_path / "prog.json"
    doc = _doc()
    doc["target"] = "\x1b[2Jgfx1201"
    p.write_text(json.dumps(doc))
    r = _cli("check", str(p))
    assert r.returncode == 2 and "\x1b" not in r.stderr, r.stderr[-300:]
    q = tmp_path / "\x1b[2J-missing.json"  # a path named in the error as it is
    r = _cli("check", str(q))
    assert r.returncode == 2 and "\x1b" not in r.stderr, r.stderr[-300:]


# ------------------------------------------------------------------ nesting depth
def _nested(depth: int) -> str:
    """The gemm program with ``depth`` branches nested inside each other (built as text: json.dumps
    itself recurses), around one barrier."""
    base = _doc()
    cond = next(o["out"]["id"] for o in base["body"] if o["kind"] == "tile_id")
    pre = '[{"kind": "branch", "out": null, "args": [{"ref": %d}], "attrs": {"body": {"block": ' % cond
    nested = pre * depth + '[{"kind": "barrier", "out": null, "args": [], "attrs": {}}]' + "}}}]" * depth
    head = json.dumps(base)
    return head[:-2] + ", " + nested[1:-1] + "]}"


def test_nesting_past_the_limit_is_refused_when_read():
    """0.7.0 read 200 nested branches, then `tilesim port` died with a RecursionError traceback (each
    pass that walks the program recurses): the nesting limit is checked once, when a program is made."""
    from tilesim.ir.core import MAX_NESTING

    _refused(_nested(MAX_NESTING + 1), "nest", str(MAX_NESTING))
    _refused(_nested(200), "nest")


@pytest.mark.parametrize("cmd", [["port", "--to", "gfx1201"], ["check"]])
def test_the_deepest_program_allowed_runs_every_pass(tmp_path, cmd):
    from tilesim.ir.core import MAX_NESTING

    p = tmp_path / "deep.json"
    p.write_text(_nested(MAX_NESTING))
    r = _cli(cmd[0], str(p), *cmd[1:])
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stderr[-500:]
    p.write_text(_nested(200))
    r = _cli(cmd[0], str(p), *cmd[1:])
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-500:]


# ------------------------------------------------------------------ sizes that overflow the emitted index
def test_a_tensor_over_2_31_elements_is_not_emitted_with_a_32_bit_index():
    """Each size in a program is a C int, but the emitted `C[gr * 65536 + gc]` multiplies two of them in
    int: a 65536 x 65536 tensor (2**32 elements) overflowed (undefined; on hardware a wrapped, negative
    index: a write outside the tensor). 0.7.0 emitted it; now emit refuses it and check's paths say why."""
    from tilesim.codegen import CodegenError
    from tilesim.ir.ops import program_paths

    doc = _doc()
    doc["tensors"][2][2:4] = [["65536", "65536"], [65536, 65536]]  # fixed dims: sizes name M, N of A and B
    prog = Program.from_json(json.dumps(doc))
    with pytest.raises(CodegenError, match="2147483647"):
        emit_hip(prog)
    paths = program_paths(prog)
    assert not paths["emit"].ok and "32-bit" in paths["emit"].reason
    doc["tensors"][2][2:4] = [["32768", "65535"], [32768, 65535]]  # 2**31 - 32768 elements: every index fits
    emit_hip(Program.from_json(json.dumps(doc)))


def test_a_workgroup_over_the_targets_limit_is_not_emitted():
    """0.7.0 emitted `TS_BOUNDS(68719476704)` (32 lanes x 2**31-1 waves: no C int, no workgroup) for a
    program JSON's waves_per_workgroup; the workgroup size is range-checked against the target now."""
    from tilesim.codegen import CodegenError
    from tilesim.targets import get_target

    doc = _doc()
    limit = get_target(doc["target"]).max_workgroup_size
    for waves in (2**31 - 1, limit // doc["wave_size"] + 1):
        doc["waves_per_workgroup"] = waves
        with pytest.raises(CodegenError, match=str(limit)):
            emit_hip(Program.from_json(json.dumps(doc)))
    doc["waves_per_workgroup"] = limit // doc["wave_size"]
    assert f"TS_BOUNDS({limit})" in emit_hip(Program.from_json(json.dumps(doc))).source
