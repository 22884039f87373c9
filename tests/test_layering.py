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


def parse_imports(module: str, source: str, is_pkg: bool = False) -> tuple[tuple[str, int, bool], ...]:
    tree = ast.parse(source)
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                src = _resolve(module, is_pkg, child)
                for a in child.names:  # `from tilesim.x import y` is module tilesim.x.y when that is a module
                    sub = f"{src}.{a.name}"
                    found.append((sub if sub in MODULES else src, child.lineno, in_function))
            visit(child, inner)

    visit(tree, False)
    return tuple((name, line, fn) for name, line, fn in found if name == "tilesim" or name.startswith("tilesim."))


def violations(module: str, found: tuple[tuple[str, int, bool], ...] | None = None) -> list[str]:
    here = _unit(module)
    lo = _layer_of(here)
    out = []
    for target, line, in_function in imports(module) if found is None else found:
        there = _unit(target)
        where = f"{module.replace('.', '/')}.py:{line} imports {target}"
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
