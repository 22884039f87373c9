"""Commands that take tile programs (``.py`` with ``programs()`` or a program ``.json``): check,
simulate, emit, compile, run, port; and emulate/audit of HIP files."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from tilesim.cli.parser import UsageError
from tilesim.codegen import emit_hip
from tilesim.diff import exit_status, judge_simulation, magnitude_inputs, rounded_inputs, run
from tilesim.diff.judge import combined_status
from tilesim.errors import CheckWarning, InputError, TilesimError
from tilesim.errors import choices as _choices
from tilesim import files  # its size limits read at use (tests lower them)
from tilesim.files import read_arrays, read_input, write_output
from tilesim.hw.offline import compile_hip
from tilesim.ir.core import Program
from tilesim.ir.verify import check
from tilesim.isa.audit import audit
from tilesim.isa import hipfile  # its emulate_hip looked up at use (tests replace it)
from tilesim.matrix.dtypes import dtype
from tilesim.port import PortError, port
from tilesim.targets import get_target
from tilesim.wave.inspect import inspect
from tilesim.wave.sim import simulate


def _load_programs(path: str, target: str | None) -> tuple[list, object]:
    p = Path(path)
    if not p.exists():
        raise TilesimError(f"no such file: {path}")
    module = None
    if p.suffix == ".json":
        progs = [Program.from_json(read_input(p, "program file", files.MAX_PROGRAM_BYTES, TilesimError))]
    elif p.suffix == ".py":
        if not p.is_file():  # a FIFO would block the import forever
            raise TilesimError(f"{path} is not a regular file (a FIFO, device or folder)")
        spec = importlib.util.spec_from_file_location(f"tilesim_user_{p.stem}", p)
        if spec is None or spec.loader is None:
            raise TilesimError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(p.resolve().parent.parent))
        try:
            spec.loader.exec_module(module)
            if not hasattr(module, "programs"):
                raise TilesimError(f"{path} has no programs() function returning specialised programs")
            progs = list(module.programs())
        except TilesimError:
            raise
        except (Exception, SystemExit) as e:  # noqa: BLE001 - the user's module: one line, no traceback
            raise TilesimError(f"{path}: {type(e).__name__}: {e}") from None
        finally:
            sys.path.pop(0)
        bad = [x for x in progs if not isinstance(x, Program)]
        if bad:
            raise TilesimError(f"{path}: programs() must return specialised programs, got {bad[0]!r}"[:300])
    else:
        raise TilesimError(f"{path}: expected a .py file with programs() or a program .json")
    if not progs:  # nothing checked, simulated or run is no pass: every command refuses it (exit 2)
        raise TilesimError(f"{path}: programs() returned no programs, so there is nothing to check, simulate or run")
    if target:

        name = get_target(target).name
        have = sorted({pr.target for pr in progs})
        progs = [pr for pr in progs if pr.target == name]
        if not progs:
            raise TilesimError(f"{path} has no program for {name}; its targets: {', '.join(have)}")
    return progs, module


def _user(module: object, fn: str, path: str, *args: object, **kwargs: object) -> object:
    """Call the user's ``module.fn``; its own exceptions become one-line errors, not tracebacks."""
    try:
        return getattr(module, fn)(*args, **kwargs)
    except TilesimError:
        raise
    except (Exception, SystemExit) as e:  # noqa: BLE001 - the user's code: one line, no traceback
        raise TilesimError(f"{path}: {fn}() raised {type(e).__name__}: {e}") from None


def _expand_paths(paths: list[str]) -> list[str]:
    """Files as given; a folder becomes its ``*.py`` and ``*.json`` files (sorted, none starting with ``_``)."""

    out = []
    for path in paths:
        p = Path(path)
        if p.is_dir():
            found = sorted(str(q) for q in p.iterdir() if q.suffix in (".py", ".json") and not q.name.startswith("_")
                           and q.is_file())
            if not found:
                raise TilesimError(f"{path}: a folder with no .py or .json program files")
            out += found
        else:
            out.append(path)
    return out


def _random_inputs(prog: object, seed: int) -> dict:
    """Standard normal inputs as the kernel reads them: float tensors rounded to their type
    (tilesim.diff.rounded_inputs; bf16 and fp8 as float64 values), integer tensors truncated."""

    rng = np.random.default_rng(seed)
    arrays = {}
    for t in prog.tensors:
        if not t.output:
            x = rng.standard_normal(t.shape)
            arrays[t.name] = x if dtype(t.dtype).kind == "float" else x.astype(dtype(t.dtype).np)
    return rounded_inputs(prog, arrays)


def _inputs(module: object, prog: object, args: object) -> dict:
    """The inputs ``simulate`` and ``run`` give a program: ``--inputs FILE.npz``, else the file's ``inputs()``,
    else random ones; rounded to what the kernel reads (``reference()`` sees the same)."""

    if getattr(args, "inputs", None):
        arrays = _arrays_for(_npz(args.inputs, "--inputs"), prog, f"--inputs {args.inputs}", output=False)
    elif module is not None and hasattr(module, "inputs"):
        arrays = _user(module, "inputs", args.file, prog, seed=args.seed)
    else:
        arrays = _random_inputs(prog, args.seed)
    return rounded_inputs(prog, arrays)


def _npz(path: str, what: str) -> dict:
    return read_arrays(path, what, files.MAX_ARRAY_BYTES, InputError)


def _expected(args: argparse.Namespace, progs: list, module: object) -> dict | None:
    """``--expect FILE.npz``: the expected outputs, as data (None without it). Refused beside a
    ``reference()`` (two references: say which one) and for several programs (one file, one program's
    outputs: choose with --target)."""
    if not getattr(args, "expect", None):
        return None
    if module is not None and hasattr(module, "reference"):
        raise InputError(f"{args.file} has reference(); --expect {args.expect} would be a second reference: "
                         "use one of them")
    if len(progs) != 1:
        names = ", ".join(f"{p.name} on {p.target}" for p in progs)
        raise InputError(f"--expect gives one program's outputs; {args.file} has {len(progs)} programs ({names}): "
                         "choose one with --target"[:400])
    return _npz(args.expect, "--expect")


def _references(module: object, prog: object, path: str, arrays: dict,
                expected: dict | None = None, expect_path: str = "") -> tuple[dict | None, dict | None]:
    """The expected outputs of ``--expect`` (no magnitude: the program on |inputs| gives the scale,
    tilesim.diff.program_magnitude),
    or the file's ``reference()`` on ``arrays`` and, where the program is monotone, on ``|arrays|`` (the
    per-element error scale); ``(None, None)`` without either."""

    if expected is not None:
        return _arrays_for(expected, prog, f"--expect {expect_path}", output=True), None
    if module is None or not hasattr(module, "reference"):
        return None, None
    ref = _reference(_user(module, "reference", path, **arrays), prog, path)
    absolute = magnitude_inputs(prog, arrays)  # type: ignore[arg-type]
    try:  # a reference that cannot take |inputs| leaves the tile's scale, which is still sound
        return ref, None if absolute is None else _reference(_user(module, "reference", path, **absolute), prog, path)
    except TilesimError:
        return ref, None


def _reference(ref: object, prog: object, path: str) -> dict:
    """The user's ``reference()`` result, checked: ``{output tensor: real array of its shape}``."""

    if not isinstance(ref, Mapping):
        outs = [t.name for t in prog.tensors if t.output]
        raise InputError(f"{path}: reference() must return a dict {{output tensor: array}}, got "
                         f"{type(ref).__name__}; outputs: {_choices(outs)}"[:300])
    return _arrays_for(ref, prog, f"{path}: reference()", output=True, complete=False)


def _arrays_for(given: object, prog: object, where: str, *, output: bool, complete: bool = True) -> dict:
    """``given`` checked against ``prog``'s output tensors (``output``) or input tensors: every name one of
    them, each a real numeric array of the tensor's shape, and (``complete``) every tensor given."""

    kind = "output" if output else "input"
    want = {t.name: tuple(t.shape) for t in prog.tensors if t.output == output}
    valid = f"{kind}s: {_choices(want)}"
    checked = {}
    for k, v in given.items():
        if k not in want:
            raise InputError(f"{where} gives {k!r}, not an {kind} of {prog.name}; {valid}"[:300])
        try:
            if np.asarray(v).dtype.kind in "cUS":  # complex; text, which float64 would parse
                raise TypeError(np.asarray(v).dtype.name)
            a = np.asarray(v, np.float64)
        except (TypeError, ValueError):
            raise InputError(f"{where}: {k!r} is not a real numeric array ({str(v)[:40]!r}); {valid}"[:300]) from None
        if a.shape != want[k]:
            raise InputError(f"{where}: {k!r} has shape {a.shape}; {kind} {k} has shape {want[k]}; {valid}")
        checked[k] = np.asarray(v)  # as given: the verdict decides how to compare
    missing = [k for k in want if k not in checked]
    if complete and missing:
        raise InputError(f"{where}: no array for {kind} {missing[0]} of {prog.name}; {valid}")
    return checked


def cmd_check(args: argparse.Namespace) -> tuple[str, int]:
    progs, paths = [], _expand_paths(args.file)
    for path in paths:
        try:
            progs += _load_programs(path, args.target)[0]
        except TilesimError as e:  # several files: one without a program for --target is not an error
            if not (args.target and len(paths) > 1 and " has no program for " in str(e)):
                raise
    if not progs:
        raise TilesimError(f"no program for {args.target} in {', '.join(args.file)}")
    reports = [check(p) for p in progs]
    code = 0 if all(r.ok for r in reports) else 1
    if args.format == "json":
        return json.dumps([{"program": r.program.name, "target": r.program.target, "ok": r.ok, "vgprs": r.vgprs,
                            "lds_bytes": r.lds_bytes, "occupancy": r.occupancy,
                            "findings": [vars(f) for f in r.findings],
                            "paths": {k: {"ok": v.ok, "reason": v.reason} for k, v in r.paths.items()}} for r in reports], indent=1), code
    return "\n".join(str(r) for r in reports), code


def cmd_simulate(args: argparse.Namespace) -> tuple[str, int]:
    progs, module = _load_programs(args.file, args.target)
    expected = _expected(args, progs, module)
    out, docs, codes = [], [], []
    for prog in progs:
        arrays = _inputs(module, prog, args)
        ref, mag = _references(module, prog, args.file, arrays, expected, args.expect)  # bad data: before the work
        with warnings.catch_warnings():  # the check errors are reported below, as the verdict
            warnings.simplefilter("ignore", CheckWarning)
            res = simulate(prog, **arrays)
        j = judge_simulation(prog, res, ref, arrays, magnitude=mag)
        codes.append(j.exit_status)
        errs = {} if j.reference is None else dict(j.reference.max_abs)
        doc = {"program": prog.name, "target": prog.target, "status": j.status, "ok": j.ok, "reason": j.reason,
               "check_errors": j.errors, "max_abs_error_vs_reference": errs,
               "reference_ok": None if j.reference is None else j.reference.ok, "report": res.report.summary()}
        # per output, the least uniform relative error the comparison rejects (None: no nonzero reference value)
        finest = {} if j.reference is None else {k: None if v == float("inf") else v for k, v in j.reference.resolution}
        doc["resolution"] = finest
        text = [f"{j.status}: {prog.name} on {prog.target} — {j.reason}"]
        if errs:
            text.append("  simulator vs float64 reference: " + ", ".join(f"max |{k} - reference| = {v:.3g}"
                                                                         for k, v in errs.items()))
        if any(v is not None for v in finest.values()):
            text.append("  resolution: the comparison fails " + ", ".join(
                f"{k} scaled by 1 ± {v:.2g}" for k, v in finest.items() if v is not None) + " (or more)")
        text += [f"  check: {e}" for e in j.errors[:3]] + [str(res.report)]
        if args.inspect is not None:
            text.append(inspect(res, args.inspect, workgroup=args.workgroup, wave=args.wave))
            doc["inspect"] = inspect(res, args.inspect, workgroup=args.workgroup, wave=args.wave, as_dict=True)
        out.append("\n".join(text))
        docs.append(doc)
    code = combined_status(codes)
    if args.format == "json":
        return json.dumps(docs, indent=1), code
    return "\n\n".join(out), code


def _refuse_quietly(progs: list) -> tuple[dict[str, list[str]], int, dict[str, object]]:
    """Each program's check errors, told on stderr: emit and compile still write their output
    (it is what the program says), but exit 1, so a wrong program is never an "OK" (fail closed).
    Also each program's check report (None where the check could not finish), for compile's estimates."""

    errs, reports = {}, {}
    for p in progs:
        who = p.name + " on " + p.target
        try:  # as check_errors: a check that cannot finish is a failed check, not a pass
            reports[who] = check(p)
            errs[who] = [str(f) for f in reports[who].errors]
        except TilesimError as e:
            reports[who], errs[who] = None, [f"check stopped: {type(e).__name__}: {e}"]
        for e in errs[who][:3]:
            print(f"tilesim: check: {who}: {e}", file=sys.stderr)
    return errs, 1 if any(errs.values()) else 0, reports


def cmd_emit(args: argparse.Namespace) -> tuple[str, int]:
    prog, _ = _load_programs(args.file, args.target)
    emitted = [emit_hip(p) for p in prog]
    errs, code, _ = _refuse_quietly(prog)
    if args.format == "json":
        return json.dumps([{"program": e.program.name, "target": e.program.target, "kernel": e.kernel,
                            "grid": list(e.grid), "block": list(e.block), "parameters": list(e.tensors),
                            "lds_bytes": e.lds_bytes, "builtins": list(e.builtins),
                            "check_errors": errs[e.program.name + " on " + e.program.target], "source": e.source}
                           for e in emitted], indent=1), code
    return "\n".join(e.source for e in emitted), code


def cmd_compile(args: argparse.Namespace) -> tuple[str, int]:
    progs, _ = _load_programs(args.file, args.target)
    docs, lines = [], []
    errs, code, reports = _refuse_quietly(progs)
    for p in progs:
        c = compile_hip(emit_hip(p).source, p.target, wave_size=p.wave_size)
        est = reports[p.name + " on " + p.target]
        vgprs, occ = (None, None) if est is None else (est.vgprs, est.occupancy)  # type: ignore[attr-defined]
        docs.append({"program": p.name, "target": p.target, "metadata": c.metadata, "vgprs_estimate": vgprs,
                     "occupancy_estimate": occ, "mnemonics": c.mnemonics(),
                     "check_errors": errs[p.name + " on " + p.target], **({"asm": c.isa} if args.asm else {})})
        lines.append(f"{p.name} on {p.target}: {c.metadata.get('vgpr_count')} VGPRs (estimate {vgprs}), "
                     f"{c.metadata.get('sgpr_count')} SGPRs, LDS {c.metadata.get('lds_bytes')} B, "
                     f"scratch {c.metadata.get('scratch_bytes')} B, wave{c.metadata.get('wavefront_size')}")
        if args.isa:
            lines += [f"  {m}" for m in c.mnemonics()]
        if args.asm:
            lines.append(c.isa)
    return (json.dumps(docs, indent=1) if args.format == "json" else "\n".join(lines)), code


def cmd_run(args: argparse.Namespace) -> tuple[str, int]:
    progs, module = _load_programs(args.file, args.target)
    expected = _expected(args, progs, module)
    verdicts = []
    for prog in progs:
        arrays = _inputs(module, prog, args)
        ref, mag = _references(module, prog, args.file, arrays, expected, args.expect)
        verdicts.append(run(prog, device=args.device, reference=ref, device_timeout=args.device_timeout,
                            reference_magnitude=mag, **arrays))
    code = exit_status(verdicts)
    bad = [v for v in verdicts if v.mismatch_counts is not None]
    if args.heatmap and bad:

        write_output(args.heatmap, bad[0].heatmap_svg(), "--heatmap")
    if args.format == "json":
        return json.dumps([v.to_dict() for v in verdicts], indent=1), code
    return "\n\n".join(str(v) for v in verdicts), code


def cmd_port(args: argparse.Namespace) -> tuple[str, int]:
    to = get_target(args.to).name  # an unknown target is a usage error (exit 2), not a refusal
    progs, _ = _load_programs(args.file, args.target)
    docs, text, refused = [], [], 0
    for p in progs:
        try:
            r = port(p, to, instr=args.instr)
        except PortError as e:
            refused += 1
            docs.append({"program": p.name, "ported": False, "source": {"target": p.target}, "target": {"target": to},
                         "reason": str(e)})
            text.append(f"port {p.name}: {p.target} -> {to}: REFUSED\n  {e}")
            continue
        d = r.to_dict()
        if args.emit:
            d["source_code"] = emit_hip(r.program).source
        docs.append(d)
        text.append(str(r) + (f"\n\n{d['source_code']}" if args.emit else ""))
    code = 1 if refused else 0  # port refuses a source that check rejects (tilesim/port.py)
    if args.format == "json":
        return json.dumps(docs, indent=1), code
    return "\n\n".join(text), code


def cmd_emulate(args: argparse.Namespace) -> tuple[str, int]:
    def dims(text: str, what: str) -> tuple[int, ...]:
        try:
            return tuple(int(x) for x in text.split(","))
        except ValueError:
            raise UsageError(f"--{what} {text!r}: expected integers like 4,4") from None


    source = read_input(args.file, "HIP file", files.MAX_SOURCE_BYTES, TilesimError)
    if args.audit:

        rep = audit(compile_hip(source, args.target, wave_size=args.wave), args.target, args.kernel,
                    grid=dims(args.grid, "grid"), block=dims(args.block, "block"), args=hipfile.materialise(args.arg, args.seed))
        if args.format == "json":
            return json.dumps({"ok": rep.ok, "matrix_calls": rep.matrix_calls, "checked": rep.checked,
                               "untraced": rep.untraced, "counts": rep.counts, "notes": list(rep.notes),
                               "undecided": list(rep.undecided), "findings": [f.text for f in rep.findings],
                               "hazards": list(rep.hazards)},
                              indent=1), rep.exit_status
        return str(rep), rep.exit_status
    res, inputs = hipfile.emulate_hip(source, args.target, args.kernel, grid=dims(args.grid, "grid"),
                              block=dims(args.block, "block"), args=args.arg, seed=args.seed, wave_size=args.wave)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for name, arr in res.buffers.items():
            np.save(os.path.join(args.out, f"{name}.npy"), arr)
    # a race, a missing s_waitcnt, or replicated operand copies that differ (res.notes: which copy the
    # hardware reads no source states): the hardware may differ from what the emulator wrote
    bad = 1 if res.races or res.hazards or res.notes or res.unwritten else 0
    doc = {"target": res.target, "kernel": res.kernel, "wave_instructions": res.instructions,
           "seconds": round(res.seconds, 3), "races": [str(r) for r in res.races], "hazards": list(res.hazards),
           "notes": list(res.notes), "unwritten_lds_reads": list(res.unwritten),
           "buffers": {n: {"dtype": str(a.dtype), "shape": list(a.shape), "changed": not np.array_equal(
               a, inputs[n], equal_nan=a.dtype.kind == "f") if n in inputs else True} for n, a in res.buffers.items()}}
    if args.format == "json":
        return json.dumps(doc, indent=1), bad
    lines = [f"{res.kernel} on {res.target} (emulated, not run on AMD hardware): {res.instructions} wave-instructions "
             f"in {res.seconds:.2f} s"]
    lines += [f"  {n}: {d['dtype']}{d['shape']}{' written' if d['changed'] else ''}" for n, d in doc["buffers"].items()]
    lines += [f"  race: {r}" for r in doc["races"]] + [f"  hazard: {h}" for h in res.hazards]
    lines += [f"  note: {x}" for x in res.notes] + [f"  unwritten LDS read: {x}" for x in res.unwritten]
    if args.out:
        lines.append(f"  buffers saved to {args.out}/NAME.npy")
    return "\n".join(lines), bad


