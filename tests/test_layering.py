"""The layers point down: a test over every import in tilesim/, function-level ones included.

Every module under ``tilesim/`` is parsed with :mod:`ast` (nothing is imported) and every
``import``/``from … import`` is collected, wherever it sits: module level, inside functions,
under ``if TYPE_CHECKING:``. The documented order (docs/architecture.md), lowest first::

    errors < {budget, files} < targets < layouts < matrix < ir < {wave, codegen} < hw < isa < diff
        < {frameworks, port} < {cli, __main__, testing, demo, gallery, examples, the top-level tilesim/__init__}

A module may import its own package and any lower layer. It may not import a higher layer, nor a
peer package of its own layer (``wave`` and ``codegen`` do not know each other). Imports inside
functions may not cross packages: the one exception is the ``tilesim/cli`` package, whose sub-commands
import what they need lazily so that ``tilesim --help`` starts fast. And the modules form no
import cycle, inside a package or across packages, counting every import.

A new package must be placed in ``LAYERS`` here and in docs/architecture.md, or this test fails.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "tilesim"

# Lowest first; names in one tuple are peers.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("budget", "files"),  # both raise typed errors: errors sits below them
    ("targets",),
    ("layouts",),
    ("matrix",),
    ("ir",),
    ("wave", "codegen"),
    ("hw",),
    ("isa",),
    ("diff",),
    ("frameworks", "port"),
    ("cli", "__main__", "testing", "demo", "gallery", "examples", "__init__"),
)
LAZY_OK = {"cli"}  # layer units whose functions may import across packages: start-up time of the CLI

def _layer_of(part: str) -> int:
    for i, names in enumerate(LAYERS):
        if part in names:
            return i
    raise AssertionError(f"tilesim.{part} is in no layer: add it to LAYERS and docs/architecture.md")


def _unit(module: str) -> str:
    """The layer unit of a dotted module name: its first component under tilesim."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_pkg else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@cache
def imports(module: str) -> tuple[tuple[str, int, bool], ...]:
    """(imported tilesim module, line, inside a function) for every import in ``module``."""
    path = MODULES[module]
    return parse_imports(module, path.read_text(), path.name == "__init__.py")


# Calls that load a module by name: the first argument names it.
_LOADERS = {"import_module", "__import__", "find_spec", "reload", "run_module", "sys.modules.get",
            "sys.modules.pop", "sys.modules.setdefault"}
# Modules that load, by a name they are handed at run time, a function their caller chose: a
# callback across a process boundary, not a dependency of theirs (the caller's own import is checked).
DYNAMIC_OK = {"tilesim.hw._device_child": "imports the runner/probe the watchdog's caller passed by reference"}


def _longest_module(dotted: str) -> str:
    """The longest prefix of ``dotted`` that is a tilesim module (``tilesim.wave.sim.run`` -> ``tilesim.wave.sim``)."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        if name in MODULES:
            return name
    return dotted


def _chain(node: ast.AST) -> str | None:
    """``a.b.c`` for an attribute chain rooted at a plain name, else None."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(names)])


def _named(arg: ast.AST) -> str | None:
    """The module a loader's argument names: a string, or the constant head of an f-string or a ``+``
    (``f"tilesim.testing.{m}"`` names the package ``tilesim.testing``); None when nothing constant leads."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    head = arg.values[0] if isinstance(arg, ast.JoinedStr) and arg.values else (
        arg.left if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add) else None)
    if isinstance(head, ast.Constant) and isinstance(head.value, str):
        return head.value.rsplit(".", 1)[0] if "." in head.value else head.value
    return None


def parse_imports(module: str, source: str, is_pkg: bool = False) -> tuple[tuple[str, int, bool], ...]:
    """(tilesim module, line, inside a function) for every way ``source`` reaches a tilesim module.

    That is ``import``/``from … import`` (relative ones resolved) anywhere: module level, class bodies,
    functions, lambdas, decorators, default arguments, under ``TYPE_CHECKING`` or ``try``. Loading by
    name (``importlib.import_module``, ``__import__``, ``find_spec``, ``runpy.run_module``,
    ``sys.modules[…]``) with a constant name or a constant head (``f"tilesim.x.{m}"`` counts as
    ``tilesim.x``). An attribute chain through a name bound to a tilesim module (``tilesim.x.y`` after
    ``import tilesim.a``, or ``ts.x`` after ``import tilesim as ts``) or ``getattr`` on one, annotations
    (string ones too) included. Code handed to ``exec``/``eval``/``compile`` as a string. A loader
    whose name is not constant yields the pseudo-module ``?dynamic``, which the layer check refuses
    outside ``DYNAMIC_OK``.
    """
    tree = ast.parse(source)
    found: list[tuple[str, int, bool]] = []
    alias: dict[str, str] = {"tilesim": "tilesim"}  # a name bound to a tilesim module, module-wide

    def named(dotted: str, line: int, fn: bool) -> None:
        if dotted == "tilesim" or dotted.startswith("tilesim."):
            found.append((_longest_module(dotted), line, fn))

    def through_alias(chain: str | None) -> str | None:
        if chain is None:
            return None
        root, _, rest = chain.partition(".")
        return None if root not in alias else alias[root] + ("." + rest if rest else "")

    def annotation(node: ast.AST | None, fn: bool) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                parsed = ast.parse(node.value, mode="eval")
            except SyntaxError:
                return
            node = ast.increment_lineno(parsed, node.lineno - 1).body  # the string's lines are the annotation's
        if node is not None:
            visit(node, fn)

    def visit(node: ast.AST, fn: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # decorators, defaults and annotations run (or are read) where the def stands; the body later
            for part in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
                if part is not None:
                    visit(part, fn)
            annotation(node.returns, fn)
            for a in ast.walk(node.args):
                if isinstance(a, ast.arg):
                    annotation(a.annotation, fn)
            for stmt in node.body:
                visit(stmt, True)
            return
        if isinstance(node, ast.Lambda):
            for d in [*node.args.defaults, *node.args.kw_defaults]:
                if d is not None:
                    visit(d, fn)
            visit(node.body, True)
            return
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.AnnAssign):
            annotation(node.annotation, fn)
            for child in (node.target, node.value):
                if child is not None:
                    visit(child, fn)
            return
        if isinstance(node, ast.Import):
            for a in node.names:
                named(a.name, line, fn)
        elif isinstance(node, ast.ImportFrom):
            src = _resolve(module, is_pkg, node)
            for a in node.names:  # `from tilesim.x import y` is module tilesim.x.y when that is a module
                sub = f"{src}.{a.name}"
                named(sub if sub in MODULES else src, line, fn)
        elif isinstance(node, ast.Call):
            callee = _chain(node.func) or ""
            last = callee if callee.startswith("sys.modules.") else callee.rsplit(".", 1)[-1]
            last = loader_alias.get(last, last)
            if last in _LOADERS and node.args:
                name = _named(node.args[0])
                if name is None:
                    found.append(("?dynamic", line, fn))
                else:
                    named(name, line, fn)
            elif callee in {"exec", "eval", "compile", "builtins.exec", "builtins.eval"} and node.args:
                code = node.args[0]
                if isinstance(code, ast.Constant) and isinstance(code.value, str):
                    try:
                        inner = parse_imports(module, code.value, is_pkg)
                    except SyntaxError:  # not Python: nothing it could import
                        inner = ()
                    found.extend((t, line, fn) for t, _, _ in inner)
            elif last == "getattr" and len(node.args) >= 2:
                base, attr = through_alias(_chain(node.args[0])), node.args[1]
                if base is not None and isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                    named(f"{base}.{attr.value}", line, False)  # a use of what is imported: direction only
        elif isinstance(node, ast.Subscript) and _chain(node.value) == "sys.modules":
            name = _named(node.slice)
            if name is not None:
                named(name, line, fn)
        elif isinstance(node, (ast.Name, ast.Attribute)) and loaders_called.get(id(node)) is None and (
                (_chain(node) or "").rsplit(".", 1)[-1] in _LOADERS | set(loader_alias)) and not isinstance(
                getattr(node, "ctx", None), ast.Store):
            found.append(("?dynamic", line, fn))  # a loader passed around as a value: its name is not known here
            return
        if isinstance(node, ast.Attribute):
            chain = through_alias(_chain(node))
            if chain is not None:
                named(chain, line, False)  # a use of what is imported: its direction counts, not where it stands
                return  # the inner links of the chain name less
        for child in ast.iter_child_nodes(node):
            visit(child, fn)

    # aliases first, wherever they are bound, so a use above its import statement still resolves
    loader_alias: dict[str, str] = {}  # `from importlib import import_module as im`: im -> import_module
    loaders_called = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in {"importlib", "importlib.util", "runpy", "builtins"}:
            for a in node.names:
                if a.name in _LOADERS:
                    loader_alias[a.asname or a.name] = a.name
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("tilesim"):
                    alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            src = _resolve(module, is_pkg, node)
            for a in node.names:
                if f"{src}.{a.name}" in MODULES:
                    alias[a.asname or a.name] = f"{src}.{a.name}"
    visit(tree, False)
    return tuple(found)


def violations(module: str, found: tuple[tuple[str, int, bool], ...] | None = None) -> list[str]:
    here = _unit(module)
    lo = _layer_of(here)
    out = []
    for target, line, in_function in imports(module) if found is None else found:
        where = f"{module.replace('.', '/')}.py:{line} imports {target}"
        if target == "?dynamic":
            if module not in DYNAMIC_OK:
                out.append(f"{module.replace('.', '/')}.py:{line} loads a module whose name is not constant: "
                           "import it by name, or pass the function in")
            continue
        there = _unit(target)
        if there == here:
            continue
        hi = _layer_of(there)
        if hi > lo:
            out.append(f"{where}: {there} is above {here}")
        elif hi == lo and hi < len(LAYERS) - 1:  # the top layer's modules (cli, demo, …) may use each other
            out.append(f"{where}: {there} and {here} are peers of one layer")
        elif in_function and here not in LAZY_OK:
            out.append(f"{where} inside a function: import it at module level")
    return out


@pytest.mark.parametrize("module", list(MODULES))
def test_imports_point_down(module: str) -> None:
    bad = violations(module)
    assert not bad, "\n".join(bad)


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def module_graph() -> dict[str, list[str]]:
    return {m: sorted({t for t, _, _ in imports(m) if t in MODULES and t != m}) for m in MODULES}


def test_no_import_cycle() -> None:
    """No two modules import each other, directly or through others, by any import at all."""
    found = cycles(module_graph())
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def test_cycles_are_found() -> None:
    assert cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert cycles({"a": ["b"], "b": []}) == []


def test_the_checker_sees_function_level_and_type_checking_imports() -> None:
    src = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tilesim.wave.sim import _Sim\n"
           "def f():\n    from tilesim import ir\n    import tilesim.hw.amd\n"
           "def g():\n    from tilesim.targets import get_target\n"
           "from tilesim.matrix.dtypes import dtype\nfrom . import geometry\nfrom ..layouts import Layout\n")
    found = parse_imports("tilesim.matrix.probe_x", src)
    assert [t for t, _, _ in found] == ["tilesim.wave.sim", "tilesim.ir", "tilesim.hw.amd", "tilesim.targets",
                                        "tilesim.matrix.dtypes", "tilesim.matrix.geometry", "tilesim.layouts"]
    bad = violations("tilesim.matrix.probe_x", found)
    assert [b.split(":")[1].split()[0] for b in bad] == ["3", "5", "6", "8"], bad
    assert "inside a function" in bad[3] and all("is above matrix" in b for b in bad[:3])
    assert not violations("tilesim.cli", parse_imports("tilesim.cli", "def f():\n    from tilesim.hw import amd\n"))


# Every way a module in tilesim.matrix could reach tilesim.wave (a higher layer) without a plain import.
EVASIONS = {
    "importlib": "import importlib\nimportlib.import_module('tilesim.wave.sim')\n",
    "import_module name": "from importlib import import_module as im\ndef f():\n    return im('tilesim.wave')\n",
    "loader as a value": "import importlib\nload = importlib.import_module\ndef f():\n    return load('tilesim.x')\n",
    "__import__": "def f():\n    return __import__('tilesim.wave.sim', fromlist=['x'])\n",
    "f-string": "import importlib\ndef f(m):\n    return importlib.import_module(f'tilesim.wave.{m}')\n",
    "concatenation": "import importlib\ndef f(m):\n    return importlib.import_module('tilesim.wave.' + m)\n",
    "non-constant name": "import importlib\ndef f(m):\n    return importlib.import_module(m)\n",
    "sys.modules": "import sys\ndef f():\n    return sys.modules['tilesim.wave.sim']\n",
    "sys.modules.get": "import sys\ndef f():\n    return sys.modules.get('tilesim.wave')\n",
    "find_spec": "import importlib.util\nimportlib.util.find_spec('tilesim.wave.sim')\n",
    "runpy": "import runpy\ndef f():\n    runpy.run_module('tilesim.wave.sim')\n",
    "class body": "class C:\n    from tilesim.wave import sim\n",
    "lambda": "f = lambda: __import__('tilesim.wave')\n",
    "default argument": "def f(x=__import__('tilesim.wave')):\n    return x\n",
    "decorator": "import importlib\n@importlib.import_module('tilesim.wave').kernel\ndef f():\n    pass\n",
    "relative": "from .. import wave\n",
    "relative module": "from ..wave.sim import simulate\n",
    "try/except": "try:\n    import tilesim.wave.sim\nexcept ImportError:\n    pass\n",
    "type checking": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tilesim.wave.sim import _Sim\n",
    "attribute chain": "import tilesim.targets\ndef f():\n    return tilesim.wave.sim.simulate\n",
    "package alias": "import tilesim as t\ndef f():\n    return t.wave.simulate\n",
    "getattr": "import tilesim\ndef f():\n    return getattr(tilesim, 'wave')\n",
    "annotation": "import tilesim.targets\ndef f(s: tilesim.wave.sim.Sim) -> None:\n    pass\n",
    "string annotation": "def f(s: 'tilesim.wave.sim.Sim') -> None:\n    pass\n",
    "variable annotation": "import tilesim.targets\nx: 'tilesim.wave.sim.Sim'\n",
    "exec": "exec('import tilesim.wave')\n",
}


@pytest.mark.parametrize("form", list(EVASIONS))
def test_the_checker_sees_every_way_to_reach_a_module(form: str) -> None:
    """Each form, written in tilesim/matrix, is refused: an upward reach, or a name that is not constant."""
    bad = violations("tilesim.matrix.probe_x", parse_imports("tilesim.matrix.probe_x", EVASIONS[form]))
    assert bad and all("is above matrix" in b or "not constant" in b for b in bad), (form, bad)


def test_the_checker_leaves_downward_and_foreign_loads_alone() -> None:
    src = ("import importlib, sys\nimport tilesim.layouts as L\nfrom tilesim.matrix import geometry\n"
           "importlib.import_module(f'tilesim.matrix.{1}')\nimportlib.import_module('numpy')\n"
           "sys.modules.get('examples')\nimport re\nre.compile('(?P<a>x)')\nL.layout.Layout\n"
           "def f(g: 'geometry.InputGeometry'):\n    return getattr(L, 'Layout')\n")
    found = parse_imports("tilesim.matrix.probe_x", src)
    assert {t for t, _, _ in found} == {"tilesim.layouts", "tilesim.layouts.layout", "tilesim.matrix.geometry",
                                        "tilesim.matrix"}, found
    assert not violations("tilesim.matrix.probe_x", found)


def test_every_package_has_a_layer() -> None:
    for m in MODULES:
        _layer_of(_unit(m))


# --- docs/architecture.md shows these layers and the import graph ---------------------------------
DOC = ROOT / "docs" / "architecture.md"


def _doc_layers() -> tuple[tuple[str, ...], ...]:
    text = DOC.read_text()
    line = text.split("```layers\n", 1)[1].split("```", 1)[0].strip()
    return tuple(tuple(n.strip() for n in part.strip().strip("{}").split(",")) for part in line.split("<"))


def _doc_table() -> dict[str, set[str] | None]:
    """unit -> the packages its row says it imports (None: "below …", not enumerated)."""
    out: dict[str, set[str] | None] = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[1].startswith("`tilesim"):
            continue
        names = [n.strip("` ") for n in cells[1].split(",")]
        listed = cells[3]
        deps = None if "below" in listed else (set() if listed == "—" else {d.strip() for d in listed.split(",")})
        for n in names:
            out[_unit(n.split(" ")[0])] = deps
    return out


def _allowed_graph() -> dict[str, set[str]]:
    """Package-level edges of the imports that respect the order (a violation fails the tests above)."""
    graph: dict[str, set[str]] = {}
    for m in MODULES:
        here = _unit(m)
        graph.setdefault(here, set())
        for target, _, _ in imports(m):
            there = _unit(target)
            if there != here and _layer_of(there) < _layer_of(here):
                graph[here].add(there)
    return graph


def test_architecture_doc_states_the_layers_of_this_test() -> None:
    assert _doc_layers() == LAYERS


def test_architecture_doc_table_matches_the_import_graph() -> None:
    table = _doc_table()
    graph = _allowed_graph()
    missing = sorted(set(graph) - set(table))
    assert not missing, f"docs/architecture.md has no row for {missing}"
    wrong = {u: (sorted(table[u] or ()), sorted(graph[u])) for u in graph if table[u] is not None and table[u] != graph[u]}
    assert not wrong, f"docs/architecture.md rows (documented, actual imports): {wrong}"
