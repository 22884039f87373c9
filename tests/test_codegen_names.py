"""Generated-source safety: any kernel or tensor name becomes a valid, non-reserved, one-to-one
C/HIP identifier; user text reaches the source only inside printable-ASCII comments; toolchains
run from argument lists, never a shell; compiles leave no temporary files behind."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from examples import gemm
from tilesim.codegen.hip import CodegenError, emit_hip
from tilesim.errors import ToolchainError
from tilesim.ir.core import Program

# ISO C++20 [lex.key] keywords and [lex.digraph] alternative tokens, plus C's restrict: written
# out here from the standard, independently of tilesim/codegen/idents.py
CPP_KEYWORDS = set("""
alignas alignof asm auto bool break case catch char char8_t char16_t char32_t class concept const consteval
constexpr constinit const_cast continue co_await co_return co_yield decltype default delete do double
dynamic_cast else enum explicit export extern false float for friend goto if inline int long mutable
namespace new noexcept nullptr operator private protected public register reinterpret_cast requires return
short signed sizeof static static_assert static_cast struct switch template this thread_local throw true try
typedef typeid typename union unsigned using virtual void volatile wchar_t while
and and_eq bitand bitor compl not not_eq or or_eq xor xor_eq restrict
""".split())
CUDA_BUILTINS = {"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"}
# Macros a C/HIP translation unit may already define (C17 7.19 NULL, 7.2 assert; GCC/clang's
# predefined unix, linux, i386) and the C library functions the prelude may call: a generator may
# rename these rather than keep them as written (Hypothesis found NULL kept-or-renamed ambiguous).
MAY_RENAME = {"NULL", "assert", "offsetof", "unix", "linux", "i386", "printf", "malloc", "free"}

NASTY = ["int", "new", "class", "template", "lane", "wave", "x", "s", "s3", "f12", "gr", "gr0", "ok1", "i0", "ts_lds",
         "ts_u32",
         "TS_AMD", "threadIdx", "main", "__x", "_X", "_", "a__b", "9lives", "", " ", "数据", "é", "è", "a-b", "a_b",
         "a b", "A", "x" * 5000, "back\\", "line\nbreak", "*/", "//", "\u2028", "\x00"]
# (a lone surrogate such as "\udc80" is no name: Program refuses it, tests/test_ir.py)


SHORT = st.from_regex(r"[a-z]{1,3}[0-9]?", fullmatch=True)  # the shape of a generated local's name


def _renamed(prog: Program, kernel: str, names: list[str]) -> Program:
    d = json.loads(prog.to_json())
    old = [t[0] for t in d["tensors"]]
    new = dict(zip(old, names))
    d["name"] = kernel
    for t in d["tensors"]:
        t[0] = new[t[0]]

    def walk(x):
        if isinstance(x, dict):
            if isinstance(x.get("attrs"), dict) and "tensor" in x["attrs"]:
                x["attrs"]["tensor"] = new[x["attrs"]["tensor"]]
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(d["body"])
    return Program.from_json(json.dumps(d))


@pytest.fixture(scope="module")
def base():
    return {t: gemm.gemm.specialize(target=t, M=32, N=32, K=32, **({"mma": m} if m else {}))
            for t, m in [("gfx1201", None), ("sm_90", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")]}


def _is_c_identifier(s: str) -> bool:
    return (re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", s) is not None and "__" not in s and len(s) <= 63
            and s not in CPP_KEYWORDS and s not in CUDA_BUILTINS)


def _check_source(em, kernel: str, names: list[str]) -> None:
    src = em.source
    idents = [em.kernel, *em.tensors]
    assert all(_is_c_identifier(i) for i in idents), idents
    assert len(set(idents)) == len(idents)  # one-to-one, and no tensor shadows the kernel
    assert src.isascii()
    for ln in src.splitlines():  # a comment cannot end early or continue onto the next line
        if ln.lstrip().startswith("//"):
            assert ln.isprintable() and not ln.endswith("\\"), ln
    body = src[src.index(f"void {em.kernel}("):]
    sig = body[: body.index(") {")]
    assert [p.split()[-1] for p in sig[sig.index("(") + 1:].split(", ")] == list(em.tensors)
    # every tensor is used through its parameter, and no local declaration reuses a parameter name
    # (declarations read from the emitted text: every declarator of `type a = .., b = ..;` lines)
    inner = body[body.index(") {"):]
    assert all(re.search(rf"\b{t}\b", inner) for t in em.tensors), em.tensors
    types = r"(?:const\s+)?(?:int|bool|float|short|unsigned char|unsigned short|ts_u8|ts_u16|ts_u32|ts_u64|ts_r\d+)"
    declared = set(re.findall(rf"\b{types}\s+(\w+)", inner))  # the first declarator of each declaration
    for ln in inner.splitlines():  # and the next ones: `const int gr = .., gc = ..;`
        if re.match(rf"\s*(?:for \()?{types}\s", ln):
            declared |= set(re.findall(r",\s*(\w+)\s*=", ln))
    assert {"lane"} <= declared  # the scan does see the generator's locals
    assert not declared & set(idents), declared & set(idents)
    # names that are already fine, and no other word of the kernel's code, are kept as written
    words = set(re.findall(r"\b[A-Za-z_]\w*", inner)) - set(idents)
    given = [kernel, *names]
    for j, (n, i) in enumerate(zip(given, idents)):
        if _is_c_identifier(n) and n not in words and not re.fullmatch(r"ts_\w*|TS_\w*", n) and n != "main" \
                and n not in MAY_RENAME and not re.fullmatch(r"(?:lane|wave|s|v|lo|x|gr|gc|r|c|off|a|b|t|i|ok|f|q)\d*", n):
            assert i == n or n in given[:j]  # renamed only when the kernel or an earlier tensor took it


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(target="gfx1201", kernel="a_b", names=["int", "new", "a_b"])  # a tensor named as the kernel
@example(target="gfx1201", kernel="int", names=["int", "new", "NULL"])  # a predefined macro's name
@given(target=st.sampled_from(["gfx1201", "sm_90"]),
       kernel=st.one_of(st.sampled_from(NASTY), st.text(max_size=80), SHORT),
       names=st.lists(st.one_of(st.sampled_from(NASTY), st.text(max_size=40), SHORT), min_size=3, max_size=3,
                      unique=True))
def test_any_names_give_safe_one_to_one_identifiers(base, target, kernel, names):
    em = emit_hip(_renamed(base[target], kernel, names))
    _check_source(em, kernel, names)


@pytest.mark.parametrize("kernel,names", [
    ("new", ["int", "lane", "x"]),
    ("数据", ["a-b", "a_b", "a b"]),              # three names that sanitise alike
    ("x" * 5000, ["é", "è", "__x"]),            # very long; non-ASCII that has no ASCII part
    ("main", ["s3", "ts_lds", "threadIdx"]),
    ("i0", ["i1", "ok0", "gc1"]),                 # the paired 16-bit loads' locals
    ("line\nbreak", ["back\\", "*/", "\x00"]),
])
def test_listed_nasty_names(base, kernel, names):
    for prog in base.values():
        em = emit_hip(_renamed(prog, kernel, names))
        _check_source(em, kernel, names)
        assert len(em.kernel) <= 63


def _locals(src: str) -> list[str]:
    inner = src[src.index('extern "C"'):]  # the kernel, not the prelude's helper functions
    return sorted(set(re.findall(r"\b(?:int|bool|float|short|ts_u32|ts_u64|ts_r\d+)\s+(\w+)", inner))
                  | set(re.findall(r"(?m)^\s*(?:const )?int .*?,\s*(\w+)\s*=", inner)))


def test_names_equal_to_the_generators_own_locals(base):
    """Whatever the generator calls its locals today (read from its output, not from a list), a
    kernel or tensor with that name cannot shadow or be shadowed by one."""
    for prog in base.values():
        own = [n for n in _locals(emit_hip(prog).source) if not n.startswith(("ts_", "TS_"))]
        assert len(own) >= 4, own
        for i in range(0, len(own) - 3, 3):
            em = emit_hip(_renamed(prog, own[i + 3], own[i:i + 3]))
            _check_source(em, own[i + 3], own[i:i + 3])


def test_the_body_scan_alone_protects_new_locals(base, monkeypatch):
    """A local the generator adds tomorrow is in no list: with the list of known local names
    emptied, scanning the generated body alone must still keep every parameter distinct."""
    from tilesim.codegen import idents

    monkeypatch.setattr(idents, "_GENERATED_PATTERN", re.compile(r"ts_.*|TS_.*", re.S))
    test_names_equal_to_the_generators_own_locals(base)


def test_plain_names_are_kept_and_duplicates_refused(base):
    em = emit_hip(base["gfx1201"])
    assert em.kernel == "gemm" and em.tensors == ("A", "B", "C")
    with pytest.raises(CodegenError, match="tensor names must be distinct; 'A' names 2"):
        emit_hip(_renamed(base["gfx1201"], "k", ["A", "A", "C"]))


def test_non_finite_constants_are_emitted_as_bits():
    from tilesim.codegen.common import _f32_literal

    assert _f32_literal(0.5) == "0.5f"
    assert _f32_literal(float("inf")) == "ts_f32(0x7f800000u)" and _f32_literal(-1e39) == "ts_f32(0xff800000u)"
    assert _f32_literal(float("nan")).startswith("ts_f32(0x7fc")


@pytest.mark.compiler
@pytest.mark.parametrize("kernel,names", [("new", ["int", "lane", "x"]), ("数据", ["a-b", "a_b", "__x"]),
                                          ("x" * 300, ["s3", "threadIdx", "line\nbreak"])])
def test_renamed_programs_compile_with_clang(base, kernel, names, monkeypatch):
    from tilesim.hw.offline import compile_hip

    monkeypatch.setenv("TILESIM_NO_CACHE", "1")
    em = emit_hip(_renamed(base["gfx1201"], kernel, names))
    comp = compile_hip(em.source, "gfx1201")
    assert f".name:           {em.kernel}" in comp.isa and comp.mnemonics()


# ---------------------------------------------------------------- toolchains and temporary files

_SHELL_CALLS = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"), ("subprocess", "getstatusoutput")}


def test_no_shell_anywhere_in_tilesim():
    root = Path(__file__).resolve().parents[1] / "tilesim"
    bad = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = (f.value.id, f.attr) if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else None
            if name in _SHELL_CALLS:
                bad.append(f"{path.name}:{node.lineno} {name[0]}.{name[1]}")
            for kw in node.keywords:
                if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                    bad.append(f"{path.name}:{node.lineno} shell=")
            if name and name[0] == "subprocess" and node.args and isinstance(node.args[0], (ast.JoinedStr, ast.Constant)):
                bad.append(f"{path.name}:{node.lineno} subprocess.{name[1]} with a string command")
    assert not bad, bad
    assert len(list(root.rglob("*.py"))) > 20  # the scan saw the package


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """TMPDIR for tilesim and for the compilers it runs, so anything left behind is seen."""
    import tempfile

    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile caches gettempdir(); recompute from TMPDIR
    monkeypatch.setenv("TILESIM_NO_CACHE", "1")
    return d


@pytest.mark.compiler
def test_compiles_leave_no_temporary_files(base, private_tmp):
    from tilesim.hw.amd import build_code_object
    from tilesim.hw.offline import compile_hip

    em = emit_hip(base["gfx1201"])
    compile_hip(em.source, "gfx1201")
    assert build_code_object(em).binary[:4] == b"\x7fELF"
    with pytest.raises(ToolchainError, match="clang failed"):
        compile_hip(em.source.replace("(void)lane;", "ts_no_such_function(); (void)lane;"), "gfx1201")
    with pytest.raises(ToolchainError, match="clang failed"):
        compile_hip("this is not C++", "gfx942")
    assert sorted(p.name for p in private_tmp.iterdir()) == []
