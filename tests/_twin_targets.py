"""Worker for tests/test_one_source.py, run in a fresh interpreter: ``python tests/_twin_targets.py``.

It adds one row per twin to the target table (a copy of an existing target under a new name that shares
no prefix test with it: ``gfxtwin942`` is a CDNA3 part, not a ``gfx9…`` name) *before anything else of
tilesim is imported*, exactly what an edit of ``tilesim/targets.py`` does, and then asks every consumer
of the table the same question about the twin and about the original. It prints, per consumer, both
answers with the target's name written ``@T``; the test compares them. Nothing else is edited: a
consumer that decides from a second list (or a name prefix) answers differently for the twin.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

TWINS = {"gfxtwin1100": "gfx1100", "gfxtwin1201": "gfx1201", "gfxtwin942": "gfx942", "gfxtwin950": "gfx950",
         "gfxtwin90a": "gfx90a", "gfxtwin1250": "gfx1250", "sm_twin90": "sm_90", "sm_twin80": "sm_80"}
# The one edit, appended to tilesim/targets.py of a copy of the package (tests/test_one_source.py does it).
TABLE_EDIT = "from dataclasses import replace\n" + "".join(
    f"TARGETS[{f!r}] = replace(TARGETS[{r!r}], name={f!r})\n" for f, r in TWINS.items())

import re  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path += [str(ROOT)]  # examples/, after the edited copy of tilesim on PYTHONPATH

import tilesim as ts  # noqa: E402
from tilesim.cli import main as cli_main  # noqa: E402
from tilesim.matrix import instructions, lookup  # noqa: E402
from tilesim.targets import FEATURES, get_target, has, occupancy  # noqa: E402
from tilesim.codegen.hip import emit_hip  # noqa: E402
from tilesim.frameworks import check_index_maps, check_layout  # noqa: E402
import tilesim.isa.api as _isa_api  # noqa: E402

sys.path.append(str(ROOT / "tests"))
import test_compiler_truth as compiler_truth  # noqa: E402



def _norm(value: object, name: str, real: str) -> object:
    """``value`` as JSON data, with the twin's name written as its original's and runs of spaces folded
    (a longer name pads a table column differently): the one difference a table row should make."""
    pattern = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")

    def walk(v: object) -> object:
        if isinstance(v, str):
            return re.sub(r" {2,}", " ", pattern.sub(real, v))
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(json.loads(json.dumps(value, sort_keys=True, default=repr)))


def _answer(fn, *args, **kw) -> object:
    """What ``fn`` returns, or the error it raises (a refusal is an answer too)."""
    try:
        return fn(*args, **kw)
    except Exception as e:  # noqa: BLE001 - compared, not handled
        return f"{type(e).__name__}: {e}"


def _cli(argv: list[str]) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli_main(argv)
    return f"exit {code}\n{out.getvalue()}"


def _f16_row(name: str) -> str | None:
    for mn in instructions(name):
        r = lookup(mn, name)
        if r.types == ("f16", "f16", "f32", "f32") and r.blocks == 1 and not r.sparse and not r.scale_operands:
            return mn
    return None


def _gemm(name: str):
    from examples import gemm

    mn = _f16_row(name)
    return None if mn is None else gemm.gemm.specialize(target=name, M=32, N=32, K=32, mma=mn)


# every consumer asked below (tests/test_one_source.py checks this list is what the worker answers)
CONSUMERS = ("table fields", "features (has)", "occupancy", "catalog instructions", "catalog rows", "cli targets",
             "cli targets json", "cli instructions", "cli instructions json", "gluon check_layout",
             "tilelang index maps", "compiler-truth cases", "dsl program", "check", "simulate", "emit",
             "port from gfx1201", "isa emulator", "testing strategies")


def consumers(name: str) -> dict[str, object]:
    """Every question the package answers from the target table, asked about ``name``."""
    t = get_target(name)
    waves = t.wave_sizes
    out: dict[str, object] = {
        "table fields": {k: v for k, v in dataclasses.asdict(t).items() if k not in ("name",)},
        "features (has)": {f: has(name, f) for f in sorted(FEATURES)},
        "occupancy": {w: [occupancy(name, v, w) for v in range(0, t.max_vgprs_per_wave + 1, 4)] for w in waves},
        "catalog instructions": instructions(name),
        "catalog rows": [lookup(mn, name).mnemonic for mn in instructions(name)],
        "cli targets": [line for line in _cli(["targets"]).splitlines() if line.split()[:1] == [name]],
        "cli targets json": [d for d in json.loads(_cli(["targets", "--format", "json"]).split("\n", 1)[1])
                             if d["name"] == name],
        "cli instructions": _cli(["instructions", name]),
        "cli instructions json": _cli(["instructions", name, "--format", "json"]),
    }
    out["gluon check_layout"] = {spec: _answer(lambda: str(check_layout(spec, name))) for spec in GLUON_SPECS}
    out["tilelang index maps"] = {mn: _answer(lambda: str(check_index_maps(
        lambda i, j: (0, 0), None, (16, 16), 32, 8, 16, instr=mn, arch=name))) for mn in instructions(name)[:3]}
    out["compiler-truth cases"] = [w for t_, w in compiler_truth.CASES if t_ == name]
    import tilesim.testing as strategies  # the hypothesis strategies draw from the table and the catalog

    out["testing strategies"] = {
        "targets()": name in [t.name for t in strategies.targets().elements],
        "instruction_targets()": sorted((p.instruction.mnemonic, p.wave_size)
                                        for p in strategies.instruction_targets().elements if p.target.name == name)}
    prog = _gemm(name)
    if prog is not None:
        rng = np.random.default_rng(0)
        A = rng.standard_normal((32, 32)).astype(np.float16)
        B = rng.standard_normal((32, 32)).astype(np.float16)
        out["dsl program"] = prog.to_json()
        out["check"] = repr(ts.check(prog))
        out["simulate"] = ts.simulate(prog, A=A, B=B)["C"].tobytes().hex()
        out["emit"] = _answer(lambda: emit_hip(prog).source)
        out["port from gfx1201"] = _answer(lambda: ts.port(_gemm("gfx1201"), name).program.to_json())
        if t.vendor == "amd":
            em = _answer(ts.emulate_program, prog, A=A, B=B)
            out["isa emulator"] = em if isinstance(em, str) else {
                "C": em["C"].tobytes().hex(), "hazards": list(em.hazards), "notes": list(em.notes),
                "races": [repr(r) for r in em.races], "instructions": em.instructions}
    return out


# a Gluon spec of each kind and version: which targets a version stands for comes from the table
GLUON_SPECS = [*(f"AMDMFMALayout(version={v}, instr_shape=[32, 32, 8], transposed=False, warps_per_cta=[1, 1])"
                 for v in (1, 2, 3, 4)),
               *(f"AMDWMMALayout(version={v}, transposed=False, warps_per_cta=[1, 1])" for v in (1, 2)),
               "AMDWMMALayout(version=3, transposed=False, warps_per_cta=[1, 1], instr_shape=[16, 16, 32])",
               "NVMMADistributedLayout(version=[2, 0], warps_per_cta=[1, 1], instr_shape=[16, 8])"]


def _compile_as_original(compile_hip):
    """The compiler knows real names only: build for the twin's original and rename the result, as clang
    would build for a new target it knew (the ISA emulator then runs it as the twin)."""
    def compile_for(source: str, target: str, **kw):
        real = TWINS.get(target, target)
        got = compile_hip(source, real, **kw)
        pattern = rf"(?<![\w]){re.escape(real)}(?![\w])"
        return dataclasses.replace(got, target=target, isa=re.sub(pattern, target, got.isa))
    return compile_for


def main(argv: list[str]) -> None:
    """``argv``: the twins to ask about (default: all of them)."""
    assert all(f in ts.targets.TARGETS for f in TWINS), "run on a copy of tilesim with TABLE_EDIT in targets.py"
    report: dict[str, object] = {"tilesim": ts.__file__}
    _isa_api.compile_hip = _compile_as_original(_isa_api.compile_hip)
    for fake in argv or TWINS:
        real = TWINS[fake]
        a, b = consumers(fake), consumers(real)
        report[fake] = {"real": real, "consumers": {k: [_norm(a.get(k), fake, real), _norm(b.get(k), real, real)]
                                                    for k in {**a, **b}}}
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:])
