"""Fuzz tilesim's input boundaries with hypothesis: nothing may escape but a one-line ``TilesimError``.

Run: ``python tools/fuzz.py [--examples N] [--only NAME ...] [--seed S] [--json PATH]``
(``--examples`` is per target, 0.6x for the CLI; the default 1,700 gives 11,220 inputs). Exit 1 when
any input ends in an uncaught exception, a multi-line or empty error message, or (CLI) anything
but a documented exit status (0/1; 3 for run, emulate and audit; 4, NOT_JUDGED, for run and simulate:
its own bucket, never a pass) or one ``tilesim: error: …`` line with status 2.

Targets:

* ``layout_ctor`` — ``Layout.from_pairs`` / ``from_function`` / ``from_bases`` / ``identity`` with
  malformed, huge, negative, non-power-of-two, non-integer and mismatched dims, coordinates,
  bases and element widths;
* ``layout_query`` — ``apply``, ``owners_of``, ``elements_at``, ``restrict``, ``rename``,
  ``compose``, ``product``, ``render`` on real catalog layouts with random arguments;
* ``layout_json`` — ``from_json`` on garbled ``to_json`` documents of real layouts;
* ``program_json`` — ``Program.from_json`` on garbled JSON of the example programs, then ``check``
  on what loads;
* ``dsl`` — ``specialize`` of the example kernels with bad targets, sizes, wave sizes and options;
* ``catalog`` — ``lookup`` / ``row.layout`` / ``registers_for`` / ``explain`` / ``instructions`` /
  ``get_target`` / ``has`` with random mnemonics, archs, operands and modifiers;
* ``cli`` — ``tilesim.cli.main`` with argv drawn from the real subcommands and options, valid and
  garbage values, and files that are missing, garbled, not Python, or raise.

An exception raised by an example kernel's own Python (``examples/*.py``) is counted apart:
it is the user's code, which tilesim must let through unchanged.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hseed
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import tilesim as ts
from tilesim.errors import TilesimError
from tilesim.ir.core import Program
from tilesim.layouts import Layout, compose, product
from tilesim.layouts.render import from_json, render, to_json
from tilesim.matrix.catalog import instructions, lookup, rows

__all__ = ["TARGETS", "fuzz", "main"]

DEFAULT_JSON = ROOT / "tools" / "fuzz_results.json"


# ----------------------------------------------------------------------------- outcome bookkeeping
class Tally:
    def __init__(self) -> None:
        self.inputs = 0
        self.outcomes: Counter = Counter()
        self.failures: dict[str, dict[str, Any]] = {}
        self.reasons: Counter = Counter()  # rejection messages, digits folded, first 50 characters

    def fail(self, kind: str, target: str, exc: BaseException | None, detail: str, sample: str) -> None:
        where = ""
        if exc is not None:
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/tilesim/" in f.filename
                      or "/examples/" in f.filename]
            if frames:
                where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}"
        key = f"{target}|{kind}|{type(exc).__name__ if exc else ''}|{where}"
        self.outcomes[kind] += 1
        rec = self.failures.setdefault(key, {"target": target, "kind": kind, "where": where, "count": 0,
                                            "detail": detail[:300], "sample": sample[:400]})
        rec["count"] += 1


def _origin(exc: BaseException) -> str:
    """'examples' when the innermost tilesim-or-examples frame is an example's own code."""
    frames = [f.filename for f in traceback.extract_tb(exc.__traceback__)
              if "/tilesim/" in f.filename or "/examples/" in f.filename]
    return "examples" if frames and "/examples/" in frames[-1] else "tilesim"


def _call(tally: Tally, target: str, fn, sample: Any) -> None:
    tally.inputs += 1
    try:
        tag = fn()
    except TilesimError as e:
        msg = str(e)
        if not msg.strip() or "\n" in msg:
            tally.fail("bad_message", target, e, repr(msg), repr(sample))
        else:
            tally.outcomes["rejected"] += 1
            tally.reasons[f"{type(e).__name__}: " + "".join("#" if c.isdigit() else c for c in msg[:50])] += 1
    except Exception as e:  # noqa: BLE001 - the point is to see anything that escapes
        if _origin(e) == "examples" and target != "cli":  # the CLI must report even the user's errors
            tally.outcomes["example_code_raised"] += 1
            return
        tally.fail("uncaught", target, e, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                   repr(sample))
    else:
        tally.outcomes[tag if target == "cli" else "accepted"] += 1


# ----------------------------------------------------------------------------- strategies
DIM_NAMES = ["lane", "slot", "row", "col", "block", "wave", "tile"]
junk = st.one_of(st.none(), st.text(max_size=4), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                 st.lists(st.integers(-2, 3), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=1))
big = st.sampled_from([2**31, 2**32 + 1, 2**62, 2**63 - 1, 2**63, 2**64, 2**100, -(2**63), -(2**70)])
small_int = st.integers(-3, 70)
any_int = st.one_of(small_int, small_int, big, st.just(np.int64(4)), st.just(np.uint8(3)))
value = st.one_of(any_int, any_int, junk)
size = st.one_of(st.sampled_from([1, 2, 3, 4, 5, 8, 16, 32, 64, 0, -1, -16]), big, junk)
name = st.one_of(st.sampled_from(DIM_NAMES), st.sampled_from(DIM_NAMES), st.text(max_size=4), st.integers(), st.none())
valid_dims = st.dictionaries(st.sampled_from(DIM_NAMES), st.sampled_from([1, 2, 4, 8, 3, 5, 6]), min_size=1,
                             max_size=2)
dims = st.one_of(valid_dims, valid_dims, valid_dims, valid_dims, valid_dims, st.dictionaries(name, size, max_size=3), st.lists(st.tuples(name, size), max_size=3),
                 st.lists(st.lists(value, max_size=3), max_size=2), junk)
coords = st.one_of(st.integers(1, 2).flatmap(lambda w: st.lists(st.lists(st.integers(-1, 8), min_size=w, max_size=w),
                                                                  max_size=12)),
                   st.lists(st.lists(value, max_size=4), max_size=6), st.lists(value, max_size=6), junk,
                   st.builds(lambda n, w: np.arange(n * w).reshape(n, w) % 7 - 1, st.integers(0, 6), st.integers(0, 4)))


def _ok_layouts() -> list[Layout]:
    out = []
    for mn, arch, op in (("v_wmma_f32_16x16x16_f16", "gfx1100", "A"), ("v_wmma_f32_16x16x16_f16", "gfx1201", "D"),
                         ("v_mfma_f32_32x32x8f16", "gfx942", "B"), ("v_mfma_f32_16x16x1f32", "gfx908", "A"),
                         ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "sm_90", "C")):
        out.append(lookup(mn, arch).layout(op))
    out.append(Layout.identity({"lane": 4, "slot": 3}, out_names=["row", "col"]))
    return out


LAYOUTS = _ok_layouts()


# ----------------------------------------------------------------------------- targets
def t_layout_ctor(tally: Tally, n: int) -> None:
    fn_result = st.one_of(st.dictionaries(st.sampled_from([*DIM_NAMES, "valid"]),
                                          st.one_of(value, st.lists(value, max_size=5)), max_size=4), junk)
    bases = st.one_of(st.dictionaries(name, st.one_of(st.lists(st.lists(value, max_size=3), max_size=7), junk),
                                      max_size=3), junk)
    which = st.sampled_from(["pairs", "function", "bases", "identity", "logical"])

    @given(which, dims, dims, coords, coords, fn_result, bases, value)
    def go(kind, ind, outd, hw, lg, res, bs, eb):
        calls = {
            "pairs": lambda: Layout.from_pairs(ind, outd, hw, lg, elem_bits=eb),
            "function": lambda: Layout.from_function(ind, outd, lambda **g: res, elem_bits=eb),
            "logical": lambda: Layout.from_logical(ind, outd, lambda **g: res, elem_bits=eb),
            "bases": lambda: Layout.from_bases(ind, outd, bs, elem_bits=eb),
            "identity": lambda: Layout.identity(ind, out_names=outd if isinstance(outd, list) else None),
        }
        _call(tally, "layout_ctor", calls[kind], (kind, ind, outd, hw, lg, res, bs, eb))

    _run(go, n)


def t_layout_query(tally: Tally, n: int) -> None:
    kw = st.dictionaries(name.map(str), st.one_of(value, st.lists(value, max_size=3)), max_size=3)
    meth = st.sampled_from(["apply", "owners_of", "elements_at", "restrict", "rename", "compose", "product",
                            "render", "with_elem_bits", "covers", "locations", "registers_per_lane", "bases"])

    @given(st.sampled_from(range(len(LAYOUTS))), st.sampled_from(range(len(LAYOUTS))), meth, kw, value)
    def go(i, j, m, args, v):
        a, b = LAYOUTS[i], LAYOUTS[j]
        calls = {
            "apply": lambda: a.apply(**args), "owners_of": lambda: a.owners_of(**args),
            "elements_at": lambda: a.elements_at(**args), "restrict": lambda: a.restrict(**args),
            "rename": lambda: a.rename(**{k: v for k, v in args.items()}), "compose": lambda: compose(a, b),
            "product": lambda: product(a, b), "render": lambda: render(a, v),
            "with_elem_bits": lambda: a.with_elem_bits(v).locations(), "covers": lambda: a.covers(args),
            "locations": lambda: a.with_elem_bits(None).locations(),
            "registers_per_lane": lambda: a.with_elem_bits(v).registers_per_lane(),
            "bases": lambda: a.restrict(lane=0).bases,
        }
        _call(tally, "layout_query", calls[m], (i, j, m, args, v))

    _run(go, n)


def _garble(doc: Any, draw) -> Any:
    """Replace, delete or retype one node of a JSON tree."""
    paths: list[tuple] = []

    def walk(x: Any, p: tuple) -> None:
        paths.append(p)
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, (*p, k))
        elif isinstance(x, list) and len(x) < 64:
            for k, v in enumerate(x):
                walk(v, (*p, k))
        elif isinstance(x, list):
            for k in (0, len(x) - 1):
                walk(x[k], (*p, k))

    walk(doc, ())
    p = draw(st.sampled_from(paths))
    new = draw(st.one_of(st.none(), st.integers(-5, 70), big, st.text(max_size=5), st.floats(allow_nan=False),
                         st.booleans(), st.lists(st.integers(-2, 40), max_size=4), st.just({}), st.just([]),
                         st.just({"ref": 99999}), st.just({"tuple": [1, {"ref": 1}]})))
    action = draw(st.sampled_from(["replace", "delete", "replace", "duplicate"]))
    if not p:
        return new
    parent = doc
    for k in p[:-1]:
        parent = parent[k]
    k = p[-1]
    if action == "delete":
        del parent[k]
    elif action == "duplicate" and isinstance(parent, list):
        parent.insert(k, json.loads(json.dumps(parent[k])))
    else:
        parent[k] = new
    return doc


def _text_variants(base_text: str, draw) -> str:
    how = draw(st.sampled_from(["garble", "garble", "garble", "truncate", "noise"]))
    if how == "truncate":
        return base_text[: draw(st.integers(0, len(base_text)))]
    if how == "noise":
        return draw(st.text(max_size=40))
    doc = json.loads(base_text)
    for _ in range(draw(st.integers(1, 3))):
        doc = _garble(doc, draw)
    return json.dumps(doc)


def t_layout_json(tally: Tally, n: int) -> None:
    bases = [to_json(lay) for lay in LAYOUTS]

    @given(st.data())
    def go(data):
        text = _text_variants(data.draw(st.sampled_from(bases)), data.draw)
        _call(tally, "layout_json", lambda: from_json(text), text)

    _run(go, n)


def _example_programs() -> list[Program]:
    from examples import gemm, int8_gemm, lds_gemm, softmax

    return [gemm.gemm.specialize(target="gfx1100", M=16, N=16, K=32), int8_gemm.programs(32, 32, 32)[1],
            lds_gemm.programs(M=32, N=32, K=32)[0], softmax.programs(M=16, N=32)[1]]


def t_program_json(tally: Tally, n: int) -> None:
    bases = [p.to_json() for p in _example_programs()]

    @given(st.data())
    def go(data):
        text = _text_variants(data.draw(st.sampled_from(bases)), data.draw)

        def load_and_check() -> None:
            prog = Program.from_json(text)
            ts.check(prog)

        _call(tally, "program_json", load_and_check, text)

    _run(go, n)


def t_dsl(tally: Tally, n: int) -> None:
    from examples import gemm, gemm_abt, int8_gemm, lds_gemm, softmax

    kernels = {"gemm": gemm.gemm, "lds_gemm": lds_gemm.lds_gemm, "softmax": softmax.softmax,
               "int8_gemm": int8_gemm.int8_gemm, "gemm_abt": gemm_abt.gemm_abt}
    ok_t = st.sampled_from(["gfx1100", "gfx1201", "gfx942"])
    targets = st.one_of(ok_t, ok_t, ok_t, ok_t, st.sampled_from(["gfx1100", "gfx1201", "gfx942", "gfx950", "gfx908", "gfx90a", "gfx1030",
                                         "sm_90", "sm_80", "MI300X", "rdna3", "GFX942"]), st.text(max_size=6), junk)
    mnems = st.one_of(st.sampled_from(["v_wmma_f32_16x16x16_f16", "v_mfma_f32_16x16x16f16", "v_mfma_f32_32x32x8f16",
                                       "v_wmma_i32_16x16x16_iu8", "v_mfma_i32_32x32x16_i8"]),
                      st.sampled_from(sorted({r.mnemonic for r in rows()})), st.text(max_size=8), junk)
    size_v = st.one_of(st.sampled_from([16, 32, 48, 64, 8, 24, 1, 0, -16]), any_int, junk)
    good = st.sampled_from([32, 64])
    lay_v = st.one_of(st.none(), st.none(), st.sampled_from(LAYOUTS), junk)
    opts = st.fixed_dictionaries({}, optional={
        "mma": mnems, "a_layout": lay_v, "b_layout": lay_v, "c_layout": lay_v, "neg": value, "waves_m": size_v,
        "waves_n": size_v, "pad": size_v, "vec": size_v, "per_phase": size_v, "max_phase": size_v,
        "drop_barrier": st.booleans(), "bogus": value})

    @given(st.sampled_from(sorted(kernels)), targets, st.one_of(st.none(), st.none(), st.sampled_from([32, 64]), value),
           st.one_of(st.fixed_dictionaries({"M": good, "N": good, "K": good}),
                     st.fixed_dictionaries({"M": size_v, "N": size_v, "K": good}),
                     st.dictionaries(st.sampled_from(["M", "N", "K", "Q"]), size_v, max_size=4)), opts)
    def go(kname, target, wave, sizes, options):
        k = kernels[kname]
        ok_opts = {o: v for o, v in options.items() if o in k.options or o == "bogus"}
        _call(tally, "dsl", lambda: k.specialize(target=target, wave_size=wave, **sizes, **ok_opts),
              (kname, target, wave, sizes, ok_opts))

    _run(go, n)


def t_catalog(tally: Tally, n: int) -> None:
    from tilesim.targets import TARGETS, get_target, has
    from tilesim.matrix.explain import explain

    spellings = sorted({s for r in rows() for s in r.spellings} | {r.mnemonic for r in rows()})
    mn = st.one_of(st.sampled_from(spellings), st.sampled_from(spellings).map(str.upper),
                   st.sampled_from(spellings).map(lambda s: s + "_x"), st.text(max_size=10), junk)
    arch = st.one_of(st.sampled_from(sorted(TARGETS)), st.sampled_from(["MI300X", "cdna3", "rdna4", " gfx942 ",
                                                                         "sm90", "gfx"]), st.text(max_size=6), junk)
    operand = st.one_of(st.sampled_from(["A", "B", "C", "D", "K", "a", "d", "E", ""]), junk)
    mod = st.one_of(st.integers(-2, 9), big, junk)
    what = st.sampled_from(["lookup", "layout", "layout", "registers", "explain", "instructions", "target", "has"])

    @given(what, mn, arch, operand, st.one_of(st.none(), st.sampled_from([32, 64]), value), mod, mod, mod, mod)
    def go(w, m, a, op, wave, cbsz, abid, blgp, opsel):
        def layout() -> None:
            row = lookup(m, a)
            row.layout(op, wave_size=wave, cbsz=cbsz, abid=abid, blgp=blgp, opsel=opsel).locations()

        calls = {"lookup": lambda: lookup(m, a), "layout": layout,
                 "registers": lambda: lookup(m, a).registers_for(wave),
                 "explain": lambda: str(explain(lookup(m, a), wave_size=wave)),
                 "instructions": lambda: instructions(a), "target": lambda: get_target(a),
                 "has": lambda: has(a, m)}
        _call(tally, "catalog", calls[w], (w, m, a, op, wave, cbsz, abid, blgp, opsel))

    _run(go, n)


def _cli_files(tmp: Path) -> list[str]:
    prog = _example_programs()[0]
    (tmp / "prog.json").write_text(prog.to_json())
    (tmp / "garbled.json").write_text(prog.to_json()[:300])
    (tmp / "syntax.py").write_text("def programs(:\n")
    (tmp / "noprogs.py").write_text("x = 1\n")
    (tmp / "raises.py").write_text("def programs():\n    raise ValueError('user bug')\n")
    (tmp / "import_fails.py").write_text("import no_such_module_xyz\n")
    (tmp / "notprogs.py").write_text("def programs():\n    return [1, 'x']\n")
    (tmp / "notiter.py").write_text("def programs():\n    return 5\n")
    (tmp / "exits.py").write_text("import sys\nsys.exit(3)\n")
    (tmp / "notes.txt").write_text("hello\n")
    (tmp / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    (tmp / "adir.py").mkdir(exist_ok=True)
    # --inputs / --expect: right names (prog.json's tensors), wrong names, pickled objects, not an archive
    np.savez(tmp / "arrays.npz", **{t.name: np.ones(t.shape) for t in prog.tensors})
    np.savez(tmp / "outputs.npz", **{t.name: np.ones(t.shape) for t in prog.tensors if t.output})
    np.savez(tmp / "inputs.npz", **{t.name: np.ones(t.shape) for t in prog.tensors if not t.output})
    np.savez(tmp / "wrong.npz", X=np.ones(3))
    np.savez(tmp / "pickled.npz", C=np.array([{"x": 1}], dtype=object))
    ex = ROOT / "examples"
    return [str(ex / "gemm.py"), str(ex / "softmax.py"), str(ex / "int8_gemm.py"), str(ex / "lds_gemm.py"),
            *(str(tmp / f) for f in ("prog.json", "garbled.json", "syntax.py", "noprogs.py", "raises.py",
                                     "import_fails.py", "notprogs.py", "notiter.py", "exits.py", "notes.txt",
                                     "binary.json", "adir.py", "missing.py")), "", "-"]


def t_cli(tally: Tally, n: int) -> None:
    from tilesim.cli import build_parser, main

    tmp = Path(tempfile.mkdtemp(prefix="tilesim-fuzz-"))
    files = _cli_files(tmp)
    parser = build_parser()
    subs = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    spec: dict[str, list[tuple[str, list[str] | None]]] = {}
    positional: dict[str, list[str]] = {}
    for cmd, p in subs.items():
        spec[cmd] = [(a.option_strings[-1], [str(c) for c in a.choices] if a.choices else (None if a.nargs == 0 else []))
                     for a in p._actions if a.option_strings and a.option_strings[-1] != "--help"]
        positional[cmd] = [a.dest for a in p._actions if not a.option_strings]
    archs = ["gfx942", "gfx1100", "gfx1201", "gfx90a", "gfx908", "gfx950", "gfx1030", "sm_90", "MI300X", "gfx0"]
    mnems = ["v_wmma_f32_16x16x16_f16", "v_mfma_f32_32x32x8f16", "v_mfma_f32_32x32x1f32", "v_mfma_f32_16x16x1f32",
             "v_smfmac_f32_16x16x32_f16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "v_nope"]
    garbage = st.one_of(st.sampled_from(["", "-1", "99999999999999999999", "1e3", "nan", "--", "-x", "%9", "%0",
                                         "9", "0", "A", "D", "K", "z"]), st.text(max_size=6))
    pools = {"--arch": archs, "--target": archs, "--compare": archs, "--instr": mnems, "--operand": list("ABCDKE"),
             "--wave": ["32", "64", "16", "0", "-32"], "--inspect": ["%9", "9", "%1", "%999", "x"],
             "--out": [str(tmp / "o.svg"), str(tmp / "o.png"), "/nonexistent/dir/o.svg", str(tmp)],
             "--family": ["rdna3", "cdna3", "nope"]}
    pools["--inputs"] = pools["--expect"] = [str(tmp / f) for f in ("arrays.npz", "inputs.npz", "outputs.npz", "wrong.npz",
                                                                    "pickled.npz", "notes.txt", "missing.npz")]

    @given(st.data())
    def go(data):
        draw = data.draw
        cmd = draw(st.sampled_from([*sorted(spec), "nope", "--help" if draw(st.integers(0, 50)) == 0 else "targets"]))
        argv = [cmd]
        for dest in positional.get(cmd, []):
            if draw(st.integers(0, 9)):
                if dest == "file":
                    argv.append(draw(st.sampled_from(files)))
                elif dest == "outdir":
                    argv.append(draw(st.sampled_from([str(tmp / "gallery"), "/nonexistent/x/y", str(tmp / "prog.json")])))
                elif dest == "arch":
                    argv.append(draw(st.sampled_from(archs)))
                elif dest == "mnemonic":
                    argv.append(draw(st.sampled_from(mnems)))
                else:
                    argv.append(draw(garbage))
        for _ in range(draw(st.integers(0, 6))):
            if cmd not in spec or not spec[cmd] or draw(st.integers(0, 7)) == 0:
                argv.append(draw(garbage))
                continue
            opt, choices = draw(st.sampled_from(spec[cmd]))
            argv.append(opt)
            if choices is None:
                continue
            vals = choices or pools.get(opt, ["0", "1", "2", "3", "7", "-1", "16"])
            argv.append(draw(st.one_of(st.sampled_from(vals), st.sampled_from(vals), garbage)))
        if cmd == "gallery" and "--family" not in argv:  # the full gallery takes seconds; one family is enough
            argv += ["--family", draw(st.sampled_from(["rdna3", "cdna1", "nope"]))]
        if cmd == "run" and "--device" not in argv:
            argv += ["--device", "none"]
        _call(tally, "cli", lambda: _cli_once(main, argv, _EXITS.get(cmd, (0, 1))), argv)

    cwd = os.getcwd()
    os.chdir(tmp)  # an OUTDIR of "" or "." writes here, not into the checkout
    try:
        _run(go, n)
    finally:
        os.chdir(cwd)


class _CliContract(Exception):
    pass


# the documented exit statuses besides 2 (README): 3 a device error / an undecided audit, 4 NOT_JUDGED
_EXITS = {"run": (0, 1, 3, 4), "simulate": (0, 1, 4), "emulate": (0, 1, 3), "audit": (0, 1, 3)}


def _cli_once(main, argv: list[str], exits: tuple[int, ...] = (0, 1)) -> str:
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    except SystemExit as e:  # argparse's --help exits 0 after printing; anything else is a contract breach
        if e.code not in (0, None):
            raise _CliContract(f"SystemExit({e.code!r}) escaped main()") from None
        return "exit 0 (help)"
    lines = err.getvalue().rstrip("\n").split("\n")  # a line ends at \n (splitlines() also splits at \x1e …)
    if "Traceback" in err.getvalue():
        raise _CliContract("traceback on stderr")
    if rc == 2:
        if len(lines) != 1 or not lines[0].startswith("tilesim: error: "):
            raise _CliContract(f"status 2 with stderr {err.getvalue()[:200]!r}")
    elif rc not in exits:
        raise _CliContract(f"exit status {rc!r}")
    return f"exit {rc}"


TARGETS = {"layout_ctor": t_layout_ctor, "layout_query": t_layout_query, "layout_json": t_layout_json,
           "program_json": t_program_json, "dsl": t_dsl, "catalog": t_catalog, "cli": t_cli}
_SEED = [0]


def _run(test, n: int) -> None:
    settings(max_examples=n, deadline=None, database=None, derandomize=False,
             suppress_health_check=list(HealthCheck))(hseed(_SEED[0])(test))()


def fuzz(examples: int = 1700, only: list[str] | None = None, seed: int = 0,
         scale: dict[str, float] | None = None) -> dict[str, Any]:
    """Run the targets; returns per-target inputs, outcomes, distinct failures and seconds."""
    _SEED[0] = seed
    scale = scale or {"cli": 0.6}
    doc: dict[str, Any] = {"examples_per_target": examples, "seed": seed, "targets": {}}
    t_all = time.perf_counter()
    failures = []
    total = 0
    for name, fn in TARGETS.items():
        if only and name not in only:
            continue
        tally = Tally()
        t0 = time.perf_counter()
        fn(tally, max(1, math.ceil(examples * scale.get(name, 1.0))))
        doc["targets"][name] = {"inputs": tally.inputs, "outcomes": dict(tally.outcomes),
                                "top_rejections": dict(tally.reasons.most_common(8)),
                                "seconds": round(time.perf_counter() - t0, 2)}
        failures += list(tally.failures.values())
        total += tally.inputs
    doc["inputs"] = total
    doc["uncaught"] = sum(f["count"] for f in failures)
    doc["distinct_failures"] = failures
    doc["seconds"] = round(time.perf_counter() - t_all, 2)
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=1700, help="generated inputs per target (CLI: 0.6x)")
    ap.add_argument("--only", nargs="*", choices=sorted(TARGETS), default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=str(DEFAULT_JSON))
    args = ap.parse_args(argv)
    doc = fuzz(args.examples, args.only, args.seed)
    Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    for name, t in doc["targets"].items():
        print(f"{name:14} {t['inputs']:>6} inputs {t['seconds']:>7.1f} s  {t['outcomes']}")
    print(f"total: {doc['inputs']} inputs in {doc['seconds']} s; failures (uncaught / bad message / CLI "
          f"contract): {doc['uncaught']} ({len(doc['distinct_failures'])} distinct)")
    for f in doc["distinct_failures"]:
        print(f"  {f['target']} {f['kind']} x{f['count']} at {f['where']}: {f['detail']}\n    sample: {f['sample'][:200]}")
    return 0 if doc["uncaught"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
