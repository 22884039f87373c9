"""One source of truth: a fact added in one place reaches every consumer, and a second copy shows.

Three tables are exercised this way (a target row, an op row, a catalog row), each on a copy of the
package with that one edit, plus static scans (no list of targets, no name-prefix test, one list of
instruction kinds, op kinds = the dispatchers' methods).

*A target row.* A copy of the package gets one edit, rows appended to the target table
(``tests/_twin_targets.py``: ``gfxtwin942`` is gfx942 under a name no prefix test recognises, likewise
for RDNA3/4, CDNA2/4, gfx1250, sm_80 and sm_90). A fresh interpreter then asks every consumer of the
table about each twin and its original: the table's predicates and occupancy, the catalog, the CLI's
``targets`` and ``instructions``, the DSL, ``check``, the simulator, the HIP/CUDA generator, port, the
ISA emulator, the Gluon/TileLang arch checks, the compiler-truth case list and the testing strategies.
Every answer must be the same but for the name. A consumer that keeps its own list of targets or families, or tests a name
prefix (``startswith("gfx9")``), answers differently for the twin and fails here.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from _new_op_row import ROW_EDIT  # noqa: E402
from _twin_row import CONSUMERS as ROW_CONSUMERS  # noqa: E402
from _twin_row import ROW_EDIT as ROW_TWIN_EDIT  # noqa: E402
from _twin_targets import CONSUMERS, TABLE_EDIT, TWINS  # noqa: E402

_ANCHOR = "TARGETS: dict[str, Target] = {t.name: t for t in _ROWS}\n"


def run_on_copy(tmp: Path, table: str, anchor: str, added: str, worker: str, edit: dict[str, tuple[str, str]] | None,
                args: list[str] | None = None) -> dict:
    """Copy tilesim to ``tmp``, put ``added`` right after ``anchor`` in its ``table`` file (the one edit a
    new row is), apply ``edit`` (file -> (old, new): a deliberate second copy, for the tests that show the
    check fails), run ``tests/<worker>`` on the copy in a fresh interpreter, and return its JSON report."""
    shutil.copytree(ROOT / "tilesim", tmp / "tilesim", ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp / "tilesim" / table
    src = path.read_text()
    assert src.count(anchor) == 1, f"{table} changed where the new row goes: update the anchor {anchor!r}"
    path.write_text(src.replace(anchor, anchor + added))
    for rel, (old, new) in (edit or {}).items():
        path = tmp / "tilesim" / rel
        text = path.read_text()
        assert text.count(old) == 1, (rel, old)
        path.write_text(text.replace(old, new))
    env = {**os.environ, "PYTHONPATH": str(tmp)}
    out = subprocess.run([sys.executable, str(ROOT / "tests" / worker), *(args or [])], capture_output=True,
                         text=True, env=env, cwd=tmp, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout)
    assert Path(report.pop("tilesim")).is_relative_to(tmp), "the worker imported the real package, not the copy"
    return report


def twin_report(tmp: Path, edit: dict[str, tuple[str, str]] | None = None, twins: list[str] | None = None) -> dict:
    """The twin target rows appended to the target table; the worker asks about ``twins`` (default: all)."""
    return run_on_copy(tmp, "targets.py", _ANCHOR, TABLE_EDIT, "_twin_targets.py", edit, twins)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One run of the worker for the whole module (pytest removes its folder with the old base temps)."""
    return twin_report(tmp_path_factory.mktemp("twins"))


def differences(report: dict) -> list[str]:
    out = []
    for fake, entry in report.items():
        for consumer, (got, want) in entry["consumers"].items():
            if got != want:
                out.append(f"{consumer}: {fake} answers {str(got)[:300]!r}, its twin {entry['real']} "
                           f"{str(want)[:300]!r}")
    return out


def test_the_worker_asks_every_consumer(report: dict) -> None:
    asked = {c for entry in report.values() for c in entry["consumers"]}
    assert asked == set(CONSUMERS)


@pytest.mark.parametrize("consumer", CONSUMERS)
def test_a_new_target_row_reaches_every_consumer(consumer: str, report: dict) -> None:
    """Each twin row, the only edit, gets the same answer as its original from ``consumer``."""
    bad = differences({f: {"real": e["real"], "consumers": {consumer: e["consumers"][consumer]}}
                       for f, e in report.items() if consumer in e["consumers"]})
    assert not bad, "\n".join(bad)
    assert any(consumer in e["consumers"] for e in report.values())


# --- the check notices a second copy: each edit re-declares one fact the table holds --------------
# (file in tilesim/, text there, text put in its place, the twin to ask about, the consumer that must differ)
SECOND_COPIES = {
    # the ISA emulator's wait counters chosen by a name prefix, as 0.7.0 did
    "isa: counters by name prefix": (
        "isa/hazards.py", "        isa = get_target(target).isa\n",
        '        isa = "gfx12" if target.startswith("gfx12") else "gfx11" if target.startswith("gfx11") else "gfx9"\n',
        "gfxtwin1201", "isa emulator"),
    # a Gluon WMMA version's targets listed by hand instead of read from the table's family
    "gluon: a list of targets": (
        "frameworks/gluon.py", "        return _family_targets(_WMMA_FAMILY[self.version])\n",
        '        return {1: ("gfx1100", "gfx1101", "gfx1102", "gfx1103"), 2: ("gfx1200", "gfx1201"), '
        '3: ("gfx1250",)}[self.version]\n',
        "gfxtwin1201", "gluon check_layout"),
    # the generator deciding AMD vs NVIDIA from a name instead of the row's vendor
    "codegen: vendor by name": (
        "codegen/hip.py", '        self.amd = self.t.vendor == "amd"\n',
        '        self.amd = self.t.name.startswith(("gfx9", "gfx10", "gfx11", "gfx12"))\n',
        "gfxtwin942", "emit"),
    # occupancy keyed by a hand list of RDNA names
    "targets: occupancy by name": (
        "targets.py", "    if t.occupancy_buckets:\n",
        '    if t.name in ("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1200", "gfx1201"):\n',
        "gfxtwin1201", "occupancy"),
}


@pytest.mark.slow  # a copy of the package and a fresh interpreter per edit (~10 s each)
@pytest.mark.parametrize("name", list(SECOND_COPIES))
def test_a_second_copy_of_a_fact_fails_the_check(name: str, tmp_path: Path) -> None:
    rel, old, new, twin, consumer = SECOND_COPIES[name]
    report = twin_report(tmp_path, {rel: (old, new)}, twins=[twin])
    bad = [d for d in differences(report) if d.startswith(f"{consumer}:")]
    assert bad, f"{name}: the twin {twin} still answers {consumer} like {TWINS[twin]}"


# --- an op row ------------------------------------------------------------------------------------
# the last line of ELEMENTWISE's last row (min)
_OPS_LAST = '                c_double="TS_FMIN64({a}, {b})", macro64=_FMIN64, c_int="({a} < {b} ? {a} : {b})"),\n'
OP_CONSUMERS = ("dsl function", "dsl elementwise", "ir json round trip", "verifier (check)", "simulator",
                "generator source", "generator compiled and emulated", "testing strategies")


def op_report(tmp: Path, edit: dict[str, tuple[str, str]] | None = None) -> dict:
    """``square`` added at the end of ELEMENTWISE in the op table; tests/_new_op_row.py asks the consumers."""
    return run_on_copy(tmp, "ir/ops.py", _OPS_LAST, ROW_EDIT, "_new_op_row.py", edit)


@pytest.fixture(scope="module")
def op_report_(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One run of the worker for the whole module (pytest removes its folder with the old base temps)."""
    return op_report(tmp_path_factory.mktemp("op_row"))


@pytest.mark.compiler
@pytest.mark.parametrize("consumer", OP_CONSUMERS)
def test_a_new_op_row_reaches_every_consumer(consumer: str, op_report_: dict) -> None:
    """``square`` added to ELEMENTWISE, nothing else: each consumer handles it, with float64's values."""
    ok, seen = op_report_[consumer]
    assert ok, f"{consumer}: {seen}"


# a consumer that lists the ops it knows: the new row is refused or computed wrong
OP_SECOND_COPIES = {
    "simulator: its own dict of functions": (
        "wave/sim.py", '        f = ELEMENTWISE[op.attr("op")].numpy\n',
        '        f = {"add": np.add, "neg": lambda a, b: -a, "exp": lambda a, b: np.exp(a)}.get(op.attr("op"), '
        'lambda a, b: a)\n', "simulator"),
    "generator: its own templates": (
        "codegen/compute.py", '        row = _row(ELEMENTWISE, op.attr("op"), "elementwise")\n',
        '        row = _row({k: ELEMENTWISE[k] for k in ("add", "sub", "mul", "div", "neg", "exp", "max", "min")}, '
        'op.attr("op"), "elementwise")\n', "generator compiled and emulated"),
}


@pytest.mark.slow  # a copy of the package and a fresh interpreter
@pytest.mark.parametrize("name", list(OP_SECOND_COPIES))
def test_a_second_op_list_fails_the_check(name: str, tmp_path: Path) -> None:
    rel, old, new, consumer = OP_SECOND_COPIES[name]
    ok, seen = op_report(tmp_path, {rel: (old, new)})[consumer]
    assert not ok, f"{name}: {consumer} still handles the new op: {seen}"


# --- op kinds: the table's kinds are the simulator's and the generator's methods, no more, no fewer ----
def dispatch_gaps(kinds: object, *handlers: type) -> list[str]:
    """What differs between the op table's kinds and each handler's ``op_<kind>`` methods (the
    simulator and the generator dispatch on ``"op_" + op.kind``): a kind nobody runs, or a method for
    a kind the table does not have (a second list of kinds)."""
    out = []
    for h in handlers:
        methods = {m[3:] for m in dir(h) if m.startswith("op_") and callable(getattr(h, m))}
        out += [f"{h.__module__}.{h.__name__} has no op_{k}" for k in sorted(set(kinds) - methods)]
        out += [f"{h.__module__}.{h.__name__}.op_{k}: {k!r} is no op kind of tilesim/ir/ops.py"
                for k in sorted(methods - set(kinds))]
    return out


def _handlers() -> tuple[type, ...]:
    from tilesim.codegen.hip import _Gen
    from tilesim.wave.sim import _Sim

    return _Sim, _Gen


def test_every_op_kind_is_simulated_and_emitted() -> None:
    """``check`` answers "simulate yes; emit yes" for every kind the table admits: true only while
    both dispatchers have a method for exactly the table's kinds."""
    from tilesim.ir.ops import KINDS

    assert not dispatch_gaps(KINDS, *_handlers())


def test_a_kind_row_without_methods_or_a_method_without_a_row_is_found() -> None:
    from tilesim.ir.ops import KINDS

    sim, gen = _handlers()
    gaps = dispatch_gaps({**KINDS, "twirl": None}, sim, gen)
    assert gaps == [f"{h.__module__}.{h.__name__} has no op_twirl" for h in (sim, gen)]
    gaps = dispatch_gaps({k: v for k, v in KINDS.items() if k != "zeros"}, sim)
    assert gaps == [f"{sim.__module__}.{sim.__name__}.op_zeros: 'zeros' is no op kind of tilesim/ir/ops.py"]


def test_a_kind_the_simulator_lacks_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed: were a kind ever without its method, simulate names it instead of an AttributeError."""
    import numpy as np

    import tilesim as ts
    from tilesim.errors import TilesimError
    from tilesim.matrix import lookup
    from tilesim.wave.sim import _Sim

    lay = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")

    @ts.kernel
    def one(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.store(Y[0:, 0:], ts.exp(ts.load(X[0:, 0:], lay)))

    prog = one.specialize(target="gfx1201", M=16, N=16)
    monkeypatch.delattr(_Sim, "op_elementwise")
    with pytest.raises(TilesimError, match="op kind 'elementwise' is not simulated; simulated kinds: .*load"):
        ts.simulate(prog, X=np.ones((16, 16), np.float32))


# --- static: no second list of targets, no name-prefix test, one list of instruction kinds ------------
# A tour shows targets it chose, it decides nothing from them.
_SHOWS_TARGETS = {"tilesim/demo.py"}


def target_lists(root: Path) -> list[str]:
    """Literal collections naming two or more targets, and ``startswith``/``endswith`` tests against a
    prefix of a target name, in the modules under ``root`` (``tilesim/targets.py`` itself excepted)."""
    import ast

    from tilesim.targets import TARGETS

    names = set(TARGETS)
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        if rel in ("tilesim/targets.py", *_SHOWS_TARGETS):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
                elts = [*node.keys, *node.values] if isinstance(node, ast.Dict) else node.elts
                found = {e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)} & names
                if len(found) >= 2:
                    out.append(f"{rel}:{node.lineno}: a list of targets {sorted(found)}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "startswith", "endswith"):
                for c in ast.walk(node):
                    if isinstance(c, ast.Constant) and isinstance(c.value, str) and len(c.value) >= 3 and any(
                            t.startswith(c.value) for t in names):
                        out.append(f"{rel}:{node.lineno}: tests a target name's prefix {c.value!r}")
    return out


def test_no_module_keeps_a_list_of_targets_or_tests_a_name_prefix() -> None:
    """Code asks the table (``has``, ``family_targets``, a row's field), never a name."""
    found = target_lists(ROOT / "tilesim")
    assert not found, "derive these from tilesim/targets.py:\n" + "\n".join(found)


def test_the_scan_sees_a_target_list_and_a_prefix_test(tmp_path: Path) -> None:
    (tmp_path / "tilesim").mkdir()
    (tmp_path / "tilesim" / "targets.py").write_text('ROWS = ("gfx942", "gfx950")\n')  # the table itself
    (tmp_path / "tilesim" / "x.py").write_text('WAVE64 = {"gfx942": 64, "gfx950": 64}\n'
                                               'def f(t):\n    return t.startswith(("gfx9", "x"))\n')
    found = target_lists(tmp_path / "tilesim")
    assert [f.split(":")[0:2] for f in found] == [["tilesim/x.py", "1"], ["tilesim/x.py", "3"]], found


def test_instruction_kinds_are_one_list_and_each_is_a_target_feature() -> None:
    from dataclasses import replace

    from tilesim.matrix.catalog import rows
    from tilesim.matrix.instruction import INSTRUCTION_KINDS
    from tilesim.targets import FEATURES
    from tilesim.testing._catalog import KINDS

    assert set(INSTRUCTION_KINDS) <= FEATURES and KINDS is INSTRUCTION_KINDS
    assert {r.kind for r in rows()} == set(INSTRUCTION_KINDS)  # every kind has rows; rows have no other kind
    with pytest.raises(ValueError, match="instruction kind 'wgmma'"):
        replace(rows()[0], kind="wgmma")


# --- a catalog row ----------------------------------------------------------------------------------
_DENSE_RDNA4 = '        ("v_wmma_f32_16x16x16_f16", 16, "f16", "f32", 16, "V8fV8xV8xV8f", "V4fV4xV4xV4f"),\n'


def row_report(tmp: Path, edit: dict[str, tuple[str, str]] | None = None) -> dict:
    """The twin WMMA row added after its original in catalog_amd.py; tests/_twin_row.py asks the consumers."""
    return run_on_copy(tmp, "matrix/catalog_amd.py", _DENSE_RDNA4, ROW_TWIN_EDIT, "_twin_row.py", edit)


@pytest.fixture(scope="module")
def row_report_(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One run of the worker for the whole module (pytest removes its folder with the old base temps)."""
    return row_report(tmp_path_factory.mktemp("catalog_row"))


@pytest.mark.parametrize("consumer", ROW_CONSUMERS)
def test_a_new_catalog_row_reaches_every_consumer(consumer: str, row_report_: dict) -> None:
    """A twin of an RDNA4 WMMA row, the only edit, is answered like the original by ``consumer``."""
    report = row_report_
    bad = differences({t: {"real": e["real"], "consumers": {consumer: e["consumers"][consumer]}}
                       for t, e in report.items()})
    assert not bad, "\n".join(bad)
    assert report and all(e["consumers"]["listed"][0] is True for e in report.values())


@pytest.mark.slow  # a copy of the package and a fresh interpreter
def test_a_second_copy_of_a_row_fact_fails_the_check(tmp_path: Path) -> None:
    """The generator keeping its own list of the instructions it calls: the twin is refused there."""
    old = "        bi = row.builtin_for(self.p.wave_size)\n"
    new = ("        bi = row.builtin_for(self.p.wave_size) if row.mnemonic in (\"v_wmma_f32_16x16x16_f16\", "
           "\"v_mfma_f32_32x32x8f16\") else None\n")
    report = row_report(tmp_path, {"codegen/compute.py": (old, new)})
    assert [d for d in differences(report) if d.startswith("emit:")]


# --- op-kind sets: read off the op table's rows, never listed again --------------------------------
# Which kinds run a catalog row, name a tensor, or hold a nested block is the op table's fact
# (tilesim/ir/ops.py: MMA_KINDS, TENSOR_KINDS, BLOCK_KINDS; Op.blocks()/Op.with_blocks() walk a body).
# A module that spells one of these sets out again misses a kind added to the table.
_KIND_SET_SCAN = ("tilesim", "tools", "benchmarks")
# Restatements in modules other helpers own this session (reported to the lead, folded after): the scan
# must find exactly these, so a new one fails and a folded one must leave this list.
_KIND_SETS_PENDING: set[str] = set()


def scanned(root: Path, dirs: tuple[str, ...], skip: tuple[str, ...] = ()) -> Iterator[tuple[str, ast.AST]]:
    """(path relative to ``root``, node) for every syntax node of the modules under ``root/dirs``, but
    those matching a pattern of ``skip`` (the places that state the fact)."""
    for d in dirs:
        for path in sorted((root / d).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if not any(PurePosixPath(rel).match(pat) for pat in skip):
                yield from ((rel, node) for node in ast.walk(ast.parse(path.read_text())))


def literal_strings(node: ast.AST, dict_values: bool = False) -> set[str]:
    """The string constants of a literal tuple, list or set (a dict's keys, and values if asked); empty
    for any other node."""
    if isinstance(node, ast.Dict):
        elts = [*node.keys, *(node.values if dict_values else ())]
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        elts = node.elts
    else:
        return set()
    return {e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def kind_set_restatements(root: Path, dirs: tuple[str, ...] = _KIND_SET_SCAN) -> set[str]:
    """``file: SET`` for each literal collection (outside the op table) whose strings are exactly one
    of the op table's derived kind sets."""
    from tilesim.ir import ops

    sets = {name: getattr(ops, name) for name in ("MMA_KINDS", "TENSOR_KINDS", "BLOCK_KINDS")}
    return {f"{rel}: {name}" for rel, node in scanned(root, dirs, ("tilesim/ir/ops.py",))
            if not isinstance(node, ast.Dict) for name, kinds in sets.items() if literal_strings(node) == kinds}


def test_op_kind_sets_are_read_off_the_table() -> None:
    from tilesim.ir.ops import BLOCK_KINDS, MMA_KINDS, TENSOR_KINDS

    # independent expectations: the three forms ts.mma traces to, the ops that take a tensor window,
    # the two ops with a body (docs/guide.md's op list)
    assert MMA_KINDS == {"mma", "mma_sparse", "mma_scaled"}
    assert TENSOR_KINDS == {"load", "store", "lds_copy_async"}
    assert BLOCK_KINDS == {"loop", "branch"}
    assert kind_set_restatements(ROOT) == _KIND_SETS_PENDING


def test_the_scan_sees_a_restated_kind_set(tmp_path: Path) -> None:
    (tmp_path / "tilesim" / "ir").mkdir(parents=True)
    (tmp_path / "tilesim" / "ir" / "ops.py").write_text('K = ("loop", "branch")\n')  # the table itself
    (tmp_path / "tilesim" / "x.py").write_text('def f(op):\n    return op.kind in ("mma", "mma_scaled", "mma_sparse")'
                                              '\nB = ["branch", "loop"]\nS = ("load", "store")\n')
    assert kind_set_restatements(tmp_path, ("tilesim",)) == {"tilesim/x.py: MMA_KINDS", "tilesim/x.py: BLOCK_KINDS"}


# --- instruction kinds and their mnemonic prefixes: read off the catalog ---------------------------
# where the kinds are stated: their list, the target table (each kind is also a target feature) and the
# catalog's rows (whose mnemonics are spelled with the prefixes). tools/ is not scanned: its Triton
# sweeps name Triton's layout families ("mfma", "wmma", "nvmma", "blocked"), another vocabulary.
_KINDS_STATED = ("tilesim/matrix/instruction.py", "tilesim/targets.py", "tilesim/matrix/catalog_*.py")


def instruction_kind_lists(root: Path, dirs: tuple[str, ...] = ("tilesim", "benchmarks")) -> list[str]:
    """Literal collections naming two or more instruction kinds, and string constants that are a kind's
    mnemonic prefix (``"v_mfma_"``), outside the places that state them (``_KINDS_STATED``)."""
    from tilesim.matrix.instruction import INSTRUCTION_KINDS

    kinds, prefixes = set(INSTRUCTION_KINDS), {f"v_{k}_" for k in INSTRUCTION_KINDS}
    out = []
    for rel, node in scanned(root, dirs, _KINDS_STATED):
        found = literal_strings(node, dict_values=True) & kinds
        if len(found) >= 2:
            out.append(f"{rel}:{node.lineno}: a list of instruction kinds {sorted(found)}")
        elif isinstance(node, ast.Constant) and node.value in prefixes:
            out.append(f"{rel}:{node.lineno}: a mnemonic prefix {node.value!r}")
    return out


def test_instruction_kinds_and_prefixes_are_listed_once() -> None:
    """The ISA emulator tells a matrix instruction by ``v_<kind>_`` for the catalog's AMD kinds (derived,
    tilesim/isa/matrix.py), the Gluon check names each class's kind once; nobody lists the kinds again."""
    from tilesim.isa.matrix import AMD_KINDS, MATRIX_PREFIXES
    from tilesim.matrix.catalog import rows
    from tilesim.targets import get_target

    # independent expectation: the AMD ISA guides' four matrix-instruction families
    assert sorted(MATRIX_PREFIXES) == ["v_mfma_", "v_smfmac_", "v_swmmac_", "v_wmma_"]
    for r in rows():  # every spelling clang may print is recognised by its own kind's prefix, and only AMD's
        amd = any(get_target(t).vendor == "amd" for t in r.targets)
        assert (r.kind in AMD_KINDS) == amd, r.mnemonic
        assert all(s.startswith(f"v_{r.kind}_") == amd for s in (r.mnemonic, *r.spellings)), r.mnemonic
    found = instruction_kind_lists(ROOT)
    assert not found, "read these off tilesim/matrix/instruction.py or the catalog:\n" + "\n".join(found)


def test_the_scan_sees_a_list_of_instruction_kinds(tmp_path: Path) -> None:
    (tmp_path / "tilesim" / "isa").mkdir(parents=True)
    (tmp_path / "tilesim" / "isa" / "m.py").write_text('P = ("v_wmma_", "v_mfma_")\nif k not in ("wmma", "mfma"):\n'
                                                      '    pass\nW = {"mfma": 64}\n')
    assert [f.split(": ")[1] for f in instruction_kind_lists(tmp_path, ("tilesim",))] == [
        "a mnemonic prefix 'v_wmma_'", "a mnemonic prefix 'v_mfma_'", "a list of instruction kinds ['mfma', 'wmma']"]


# --- the DSL's names: listed in tilesim/ir/dsl.py only; the Gluon classes: in tilesim/frameworks/gluon.py ---
_REEXPORTS = ("tilesim/__init__.py", "tilesim/ir/__init__.py")


def reexported_names(root: Path, names: set[str], files: tuple[str, ...] = _REEXPORTS) -> list[str]:
    """``names`` written again, as an imported name or a string, in the modules that re-export them
    (they star-import the defining module and add its list to their ``__all__``)."""
    out = []
    for rel in files:
        for node in ast.walk(ast.parse((root / rel).read_text())):
            if isinstance(node, ast.ImportFrom):
                out += [f"{rel}:{node.lineno}: imports {a.name}" for a in node.names if a.name in names]
            elif isinstance(node, ast.Constant) and node.value in names:
                out.append(f"{rel}:{node.lineno}: names {node.value!r}")
    return out


def dsl_name_restatements(root: Path, files: tuple[str, ...] = _REEXPORTS) -> list[str]:
    from tilesim.ir import dsl

    return reexported_names(root, set(dsl.__all__) - {"Program"}, files)


def test_the_gluon_classes_are_listed_once() -> None:
    """A Gluon layout class registered in tilesim/frameworks/gluon.py (SPECS) is exported by
    tilesim.frameworks with no second edit (0.8.0 imported and listed all eleven there again)."""
    import tilesim.frameworks as fw
    from tilesim.frameworks.gluon import SPECS

    assert not reexported_names(ROOT, set(SPECS), ("tilesim/frameworks/__init__.py",))
    # independent: the Gluon classes docs/frameworks.md documents
    assert {"BlockedLayout", "SliceLayout", "AMDMFMALayout", "AMDWMMALayout", "NVMMADistributedLayout",
            "DotOperandLayout", "DistributedLinearLayout"} <= set(fw.__all__)
    assert all(getattr(fw, n) is c for n, c in SPECS.items()) and set(SPECS) <= set(fw.__all__)


def test_the_dsl_names_are_listed_once() -> None:
    """A DSL function added to tilesim/ir/dsl.py's ``__all__`` is ``ts.<name>`` and ``tilesim.ir.<name>``
    with no second edit: the package and tilesim.ir re-export the DSL's list."""
    import tilesim
    import tilesim.ir
    from tilesim.ir import dsl

    assert not dsl_name_restatements(ROOT)
    # independent expectation: the DSL calls the examples and docs/guide.md use, and ts.exp from the op table
    public = {"kernel", "Tensor", "load", "store", "mma", "mma_op", "zeros", "range", "when", "lds_alloc", "exp"}
    assert public <= set(tilesim.__all__) and public <= set(tilesim.ir.__all__)
    assert set(dsl.__all__) <= set(tilesim.ir.__all__)
    assert set(dsl.__all__) - set(tilesim.__all__) == set(dsl.TYPES) == {"Kernel", "MmaOp", "Frag", "Scalar"}
    assert all(getattr(tilesim, n) is getattr(dsl, n) for n in tilesim.__all__ if n in dsl.__all__)


def test_the_scan_sees_a_relisted_dsl_name(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text('from tilesim.ir.dsl import load, mma_op as m\n__all__ = ["zeros", "Layout"]\n')
    assert dsl_name_restatements(tmp_path, ("m.py",)) == ["m.py:1: imports load", "m.py:1: imports mma_op",
                                                          "m.py:2: names 'zeros'"]


# --- fp8 flavours: what each means is said once (tilesim/matrix/dtypes.py) -----------------------------
def fp8_flavour_texts(root: Path) -> list[str]:
    """String constants (f-string parts too) outside tilesim/matrix/dtypes.py that describe an fp8
    flavour's format (an exponent bias of e4m3/e5m2): check and port each kept one until 0.8.0."""
    return [f"{rel}:{node.lineno}: {node.value[:60]!r}"
            for rel, node in scanned(root, ("tilesim",), ("tilesim/matrix/dtypes.py",))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and re.search(r"e[45]m[23] bias \d", node.value)]


def test_fp8_flavours_are_described_once(tmp_path: Path) -> None:
    import tilesim as ts
    from tilesim.matrix.dtypes import FP8_FLAVOURS, fp8_clash

    sys.path.append(str(ROOT))
    from examples import fp8_gemm

    assert not fp8_flavour_texts(ROOT)
    # independent: e4m3 0x40 is 2^(8 - bias) = 2.0 with OCP's bias 7, 1.0 with FNUZ's 8; 0x80 is FNUZ's only
    # NaN and OCP's -0 (CDNA3 ISA §7.1.3, OCP 8-bit FP spec v1.0)
    assert fp8_clash("fnuz", "ocp") == "0x40 is 1.0 FNUZ but 2.0 OCP; 0x80 is NaN FNUZ but -0 OCP"
    prog = fp8_gemm.KERNELS["fp8_ocp"].specialize(target="gfx942", M=16, N=16, K=32, mma="v_mfma_f32_16x16x32_fp8_fp8")
    errs = [str(f) for f in ts.check(prog).errors]
    assert any(FP8_FLAVOURS["ocp"] in e and FP8_FLAVOURS["fnuz"] in e and fp8_clash("ocp", "fnuz") in e for e in errs)
    with pytest.raises(ts.PortError) as e:
        ts.port(fp8_gemm.KERNELS["fp8_fnuz"].specialize(target="gfx942", M=16, N=16, K=32), "gfx1201")
    assert FP8_FLAVOURS["fnuz"] in str(e.value) and fp8_clash("fnuz", "ocp") in str(e.value)
    (tmp_path / "tilesim").mkdir()
    (tmp_path / "tilesim" / "p.py").write_text('M = {"ocp": f"OCP (e4m3 bias 7, {x})"}\n')
    assert fp8_flavour_texts(tmp_path) == ["tilesim/p.py:1: 'OCP (e4m3 bias 7, '"]


# --- the f32-held narrow types: a property of their dtype rows ------------------------------------------
def truncated_f32_lists(root: Path) -> list[str]:
    """Literal collections naming xf32 and tf32 together (the types an f32 register holds with 10
    mantissa bits of math) outside tilesim/matrix/dtypes.py: each reads ``DType.truncated_f32`` now."""
    from tilesim.matrix.dtypes import DTYPES

    both = {n for n, d in DTYPES.items() if d.truncated_f32}
    return [f"{rel}:{node.lineno}: {sorted(literal_strings(node))}"
            for rel, node in scanned(root, ("tilesim", "tools", "benchmarks"), ("tilesim/matrix/dtypes.py",))
            if not isinstance(node, ast.Dict) and both <= literal_strings(node)]


def test_truncated_f32_types_are_one_property(tmp_path: Path) -> None:
    from tilesim.matrix.dtypes import DTYPES

    # independent: CDNA3 xf32 and NVIDIA tf32 are the f32-stored types with 10 explicit mantissa bits
    assert {n for n, d in DTYPES.items() if d.truncated_f32} == {"xf32", "tf32"}
    assert not truncated_f32_lists(ROOT)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "t.py").write_text('if name in ("f32", "xf32", "tf32"):\n    pass\n')
    assert truncated_f32_lists(tmp_path) == ["tools/t.py:1: ['f32', 'tf32', 'xf32']"]


# --- docs/catalog.md: sources and confidence per family, no second list of targets or rows ---------------
def catalog_page_restatements(text: str) -> tuple[set[str], list[str]]:
    """(the families docs/catalog.md's table describes, what its rows column restates: target names or
    row counts, which `tilesim targets` / `tilesim instructions` derive from the code)."""
    from tilesim.targets import TARGETS

    table = re.search(r"^(\| family \|.*)\n((?:\|.*\n)+)", text, re.M)
    assert table, "docs/catalog.md: the family table (| family | ... |) is gone"
    head = [c.strip() for c in table.group(1).strip("|").split("|")]
    families, found = set(), []
    for line in table.group(2).splitlines()[1:]:
        cells = dict(zip(head, (c.strip() for c in line.strip("|").split("|"))))
        family = cells["family"]
        families |= {f.split(" (")[0].strip() for f in family.split(",")}
        listed = " ".join(cells.get(c, "") for c in ("targets", "rows"))  # the sources' columns may name a target
        found += [f"{family}: target {t}" for t in TARGETS if re.search(rf"\b{t}\b", listed)]
        found += [f"{family}: count {m}" for m in re.findall(r"\b\d+ (?:dense )?(?:MFMA|WMMA|SMFMAC|SWMMAC|mma\.sync)",
                                                             listed)]
    return families, found


def test_the_catalog_page_repeats_no_target_list_or_row_count() -> None:
    """0.8.0's page listed each family's targets and row counts by hand, and two counts had drifted
    (cdna3 "30 MFMA + 16 SMFMAC", rdna4 "12 WMMA + 10 SWMMAC"). It says where each comes from now."""
    from tilesim.matrix.catalog import rows

    families, found = catalog_page_restatements((ROOT / "docs" / "catalog.md").read_text())
    assert families == {r.family for r in rows()}
    assert not found, found
    planted = "| family | rows | from | confidence |\n|---|---|---|---|\n| cdna3 | 30 MFMA on gfx942 | calc | high |\n"
    assert catalog_page_restatements(planted) == ({"cdna3"}, ["cdna3: target gfx942", "cdna3: count 30 MFMA"])
