"""The ``tilesim`` command line.

Every subcommand prints text by default and JSON with ``--format json``. A bad argument is
one line on stderr (``tilesim: error: …`` naming the valid choices) and exit status 2 — never
a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import NoReturn

from tilesim.errors import TilesimError

__all__ = ["main", "build_parser"]

_EPILOG = """examples:
  tilesim targets
  tilesim instructions gfx942
  tilesim explain v_mfma_f32_32x32x8f16 --arch gfx942
  tilesim layout --arch gfx1201 --instr v_wmma_f32_16x16x16_f16 --operand C
  tilesim layout --arch gfx90a --instr v_mfma_f32_32x32x1f32 --operand A --cbsz 1 --abid 1 --format csv
  tilesim check examples/gemm.py
  tilesim run examples/gemm.py --target sm_90
  tilesim compile examples/gemm.py --target gfx1201 --isa
  tilesim port examples/gemm.py --target gfx942 --to gfx1201
  tilesim check-layout "AMDMFMALayout(3, [32, 32, 8], False, [1, 1])" --arch gfx942
  tilesim simulate examples/gemm.py --target gfx1201 --inspect acc
  tilesim demo

exit statuses of run, simulate and check (2: a usage or input error, for every command):
  run       0  MATCH, COMPILE_ONLY, SIMULATED_ONLY, EMULATED_MATCH
            1  MISMATCH, SIM_MISMATCH, CHECK_FAILED, EMULATED_MISMATCH
            3  DEVICE_ERROR
            (over several programs: 1 if any verdict is 1, else 3 if any is 3, else 0)
  simulate  0  every program simulated, within the tolerance of the file's reference() (or it has none)
            1  a simulated output differs from reference() beyond the numerics model's tolerance
  check     0  no errors (warnings allowed)
            1  at least one error
"""


class _UsageError(Exception):
    """A command line argparse rejects (missing option, bad choice, non-integer)."""


class _Parser(argparse.ArgumentParser):
    # argparse prints the usage block and "tilesim layout: error: …" and exits; the contract
    # here is one "tilesim: error: …" line and status 2, so the error is raised to main().
    # Subparsers inherit this class (add_subparsers defaults parser_class to type(self)).
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see `{self.prog} --help`)")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("tilesim")
    except PackageNotFoundError:  # a source tree on sys.path without an install
        import re
        from pathlib import Path
        found = re.search(r'^version = "([^"]+)"', (Path(__file__).parents[1] / "pyproject.toml").read_text(), re.M)
        return found.group(1) if found else "unknown"


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="tilesim",
        description="Which lane, VGPR and bits hold which matrix element — for AMD MFMA/WMMA "
        "and NVIDIA mma.sync, exactly as the hardware does it.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"tilesim {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    t = sub.add_parser("targets", help="list GPU targets with wave sizes, VGPRs, LDS and matrix path")
    t.add_argument("--format", choices=("table", "json"), default="table")

    i = sub.add_parser("instructions", help="list the matrix instructions a target has")
    i.add_argument("arch", help="target name, e.g. gfx942, gfx1201, sm_90 (see `tilesim targets`)")
    i.add_argument("--format", choices=("table", "json"), default="table")

    e = sub.add_parser("explain", help="shapes, registers, cycles, modifiers and layout formulas of one instruction")
    e.add_argument("mnemonic", help="e.g. v_mfma_f32_32x32x8f16 (either LLVM spelling)")
    e.add_argument("--arch", required=True, help="target name, e.g. gfx90a")
    e.add_argument("--wave", type=int, default=None, help="wave size (RDNA: 32 or 64)")
    e.add_argument("--format", choices=("text", "json"), default="text")

    lay = sub.add_parser(
        "layout",
        help="print an operand's register layout",
        description="Print where each element of an operand lives: lane, VGPR and bits. "
        "The table view shows the matrix with L<lane>.v<vgpr>[bits] per element; "
        "--view registers shows lanes x VGPRs instead.",
    )
    lay.add_argument("--arch", required=True, help="target name, e.g. gfx942")
    lay.add_argument("--instr", required=True, help="instruction mnemonic")
    lay.add_argument("--operand", required=True, help="A, B, C, D, or K (sparse indices)")
    lay.add_argument("--wave", type=int, default=None, help="wave size (RDNA: 32 or 64)")
    for name, text in (("cbsz", "A broadcast size (CDNA)"), ("abid", "A broadcast block id (CDNA)"),
                       ("blgp", "B lane group pattern (CDNA)"), ("opsel", "raw 3-bit OPSEL field (RDNA3)")):
        lay.add_argument(f"--{name}", type=int, default=0, help=text)
    lay.add_argument("--format", choices=("table", "csv", "markdown", "json", "svg", "png"), default="table")
    lay.add_argument("--view", choices=("matrix", "registers"), default="matrix")
    lay.add_argument("--out", default=None, help="file for --format svg/png (svg prints to stdout without it)")
    lay.add_argument("--compare", default=None, metavar="ARCH",
                     help="picture the same instruction's operand on another target beside this one (svg/png)")
    q = lay.add_argument_group("single-element queries (as AMD's matrix instruction calculator asks them)")
    q.add_argument("-g", "--get-register", action="store_true",
                   help="which lane, VGPR and bits hold the entry given by -I/-J/-K (A is IxK, B is KxJ, C/D are IxJ)")
    q.add_argument("-m", "--matrix-entry", action="store_true",
                   help="which matrix entries the register -r of lane -l holds")
    for flag, text in (("I", "row index of A, C, D"), ("J", "column index of B, C, D"), ("K", "k index of A and B")):
        q.add_argument(f"-{flag}", dest=flag.lower(), type=int, default=None, metavar=flag, help=text)
    q.add_argument("-b", "--block", type=int, default=0, help="block of a multi-block instruction (default 0)")
    q.add_argument("-r", "--register", type=int, default=None, help="VGPR of the operand, counting from its first")
    q.add_argument("-l", "--lane", type=int, default=None, help="lane")
    q.add_argument("-o", "--output-calculation", action="store_true", help="also print the formula behind the answer")

    ck = sub.add_parser("check", help="verify tile programs (operand layouts, replication, targets, budgets)",
                        description="FILE is a program JSON (Program.to_json()) or a Python file whose "
                        "programs() returns specialised programs (see examples/); several files and folders may "
                        "be given (a folder: its *.py and *.json files, not those starting with _). Exit 1 when "
                        "a check fails.")
    ck.add_argument("file", nargs="+", help="program files (.py with programs(), or .json) and folders of them")
    ck.add_argument("--target", default=None, help="only the programs for this target")
    ck.add_argument("--format", choices=("text", "json"), default="text")

    sm = sub.add_parser("simulate", help="simulate tile programs lane-accurately and report",
                        description="Simulate the programs of FILE (as for `check`) on the module's inputs() "
                        "(or random inputs), compare with its reference() when it has one, and report LDS "
                        "conflicts, races, out-of-bounds lanes and replication violations. Exit 1 when a simulated "
                        "output differs from reference() beyond the numerics model's tolerance.")
    sm.add_argument("file")
    sm.add_argument("--target", default=None, help="only the programs for this target")
    sm.add_argument("--inspect", default=None, metavar="VALUE", help="print a fragment's registers: the kernel's variable name (acc), %%ID or id")
    sm.add_argument("--wave", type=int, default=0, help="wave to inspect (default 0)")
    sm.add_argument("--workgroup", type=int, default=0, help="workgroup to inspect (default 0)")
    sm.add_argument("--seed", type=int, default=0)
    sm.add_argument("--format", choices=("text", "json"), default="text")

    em = sub.add_parser("emit", help="print the HIP/CUDA source generated for a program")
    em.add_argument("file")
    em.add_argument("--target", required=True, help="which of FILE's programs (e.g. gfx1201, sm_90)")
    em.add_argument("--format", choices=("text", "json"), default="text",
                    help="json: program, target, kernel name, grid, block, parameter order, LDS bytes, builtins, source")

    cp_ = sub.add_parser("compile", help="compile offline (AMDGPU clang) and print the metadata beside the estimate")
    cp_.add_argument("file")
    cp_.add_argument("--target", required=True)
    cp_.add_argument("--isa", action="store_true", help="print the matrix instructions of the ISA")
    cp_.add_argument("--asm", action="store_true", help="print the whole assembly clang produced")
    cp_.add_argument("--format", choices=("text", "json"), default="text")

    rn = sub.add_parser("run", help="simulate, emit, compile, run on a device if present, and give a verdict",
                        description="Verdicts: MATCH / MISMATCH (device ran; with blame) / SIM_MISMATCH (the "
                        "simulation differs from the file's reference(), with blame) / CHECK_FAILED (`tilesim check` "
                        "errors) / COMPILE_ONLY / SIMULATED_ONLY (simulation right; the reason says why it went no "
                        "further) / DEVICE_ERROR (launch failure, out of memory, crash, or a hang past the watchdog). "
                        "Never MATCH without a device run; a wrong program never exits 0. Exit 1 on MISMATCH, "
                        "SIM_MISMATCH or CHECK_FAILED, else 3 on DEVICE_ERROR, else 0 (table: `tilesim --help`).")
    rn.add_argument("file")
    rn.add_argument("--target", default=None)
    rn.add_argument("--device", choices=("auto", "none", "emulator"), default="auto",
                    help="auto: a GPU if one is usable; none: no device step; emulator: run the compiled AMDGPU code "
                    "in tilesim's ISA emulator (EMULATED_MATCH / EMULATED_MISMATCH; never MATCH)")
    rn.add_argument("--seed", type=int, default=0)
    rn.add_argument("--device-timeout", type=float, default=None, metavar="SECONDS",
                    help="watchdog for the device step (default: TILESIM_DEVICE_TIMEOUT, else 300)")
    rn.add_argument("--format", choices=("text", "json"), default="text")
    rn.add_argument("--heatmap", default=None, metavar="FILE.svg",
                    help="on MISMATCH or SIM_MISMATCH, write a lane x VGPR heatmap of the wrong elements")

    po = sub.add_parser("port", help="port tile programs to another target's instructions, proving equivalence",
                        description="Re-specialise each program of FILE (a Python file whose programs() returns "
                        "programs built by @ts.kernel, or program JSON, which has no kernel: rewritten in place to a "
                        "same-m x n x k instruction or refused) "
                        "for TARGET: choose the instruction, layouts, wave size and tiling, and prove the result "
                        "equivalent with probes and random inputs. Prints the index maps that changed, the proof, "
                        "or why no equivalent exists. Exit 1 if any port was refused.")
    po.add_argument("file")
    po.add_argument("--to", required=True, metavar="TARGET", help="the target to port to, e.g. gfx1201, gfx942, sm_90")
    po.add_argument("--target", default=None, metavar="SOURCE", help="only FILE's programs for this source target")
    po.add_argument("--instr", default=None, help="the target instruction to use (default: chosen by element types "
                    "and shape)")
    po.add_argument("--emit", action="store_true", help="also print the ported program's HIP/CUDA source")
    po.add_argument("--format", choices=("text", "json"), default="text")

    cl = sub.add_parser("check-layout", help="check a Gluon/Triton layout against an instruction's operand layout",
                        description="Say whether SPEC, a Gluon/Triton layout (a constructor string such as "
                        "\"AMDMFMALayout(version=3, instr_shape=[32,32,8], transposed=False, warps_per_cta=[1,1])\", "
                        "or a .json file), used as an mma operand or result, holds what the instruction reads or "
                        "writes on ARCH: warp 0's registers for one instruction tile, lane by lane. Prints the "
                        "first differing lane/VGPR and the pattern. Exit 0 on a match, 1 on a mismatch or "
                        "rejection, 2 on a usage error.")
    cl.add_argument("spec", metavar="SPEC")
    cl.add_argument("--arch", required=True, help="target, e.g. gfx942, gfx1100, gfx1201")
    cl.add_argument("--operand", choices=("A", "B", "C", "D"), default=None,
                    help="operand the layout is used as (default: A/B from a DotOperandLayout, else C)")
    cl.add_argument("--instr", default=None, help="instruction (default: from the layout's kind, instr_shape "
                    "and --dtype)")
    cl.add_argument("--dtype", default="f16", help="A/B element type used to pick the instruction (default f16)")
    cl.add_argument("--format", choices=("text", "json"), default="text")

    gl = sub.add_parser("gallery", help="write a static HTML gallery of every instruction's layouts")
    gl.add_argument("outdir")
    gl.add_argument("--family", action="append", default=None, help="only these families (repeatable), e.g. rdna3")
    gl.add_argument("--format", choices=("text", "json"), default="text",
                    help="json: the pages written, their sizes and the total (progress goes to stderr only on a terminal)")

    for cmd in ("emulate", "audit"):
        audit = cmd == "audit"
        eu = sub.add_parser(cmd, help="layout audit of one compiled HIP kernel: which element each matrix-instruction "
                            "operand slot holds and where D is stored, by emulating it (exit 1 on findings)" if audit else
                            "compile a HIP file and run one kernel in tilesim's AMDGPU ISA emulator",
                            description="Arguments in the kernel's parameter order: NAME=DTYPE[D0,D1] (random), "
                            "NAME=zeros:DTYPE[...], NAME=FILE.npy, NAME=DTYPE:VALUE (by-value scalar). "
                            + ("`tilesim audit` is `tilesim emulate --audit`. " if audit else "")
                            + "Not run on AMD hardware: see docs/emulator.md.")
        eu.add_argument("file", help="HIP source (device code, compiled with -nogpuinc)")
        eu.add_argument("--target", required=True, help="gfx1100, gfx1201, gfx942 or gfx950")
        eu.add_argument("--kernel", required=True, help="the kernel's (extern \"C\") name")
        eu.add_argument("--grid", default="1", help="workgroups, e.g. 4,4 (default 1)")
        eu.add_argument("--block", default="64", help="work-items per workgroup, e.g. 256 or 16,16 (default 64)")
        eu.add_argument("--arg", action="append", default=[], metavar="SPEC",
                        help="a kernel argument (repeat, in order)")
        eu.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
        eu.add_argument("--out", default=None, metavar="DIR", help="write every buffer after the run as DIR/NAME.npy")
        if audit:
            eu.set_defaults(audit=True)
        else:
            eu.add_argument("--audit", action="store_true",
                            help="layout audit: which element each matrix-instruction operand slot holds, where D is "
                            "stored (exit 1 on findings)")
        eu.add_argument("--format", choices=("text", "json"), default="text")

    dv = sub.add_parser("devices", help="which GPUs tilesim can run on here, and why not when none")
    dv.add_argument("--format", choices=("text", "json"), default="text")

    d = sub.add_parser("demo", help="a short tour: a target, an instruction, layouts on CDNA and RDNA")
    d.add_argument("--format", choices=("text", "json"), default="text")
    return p


def _cmd_targets(args: argparse.Namespace) -> str:
    from tilesim.targets import TARGETS

    if args.format == "json":
        return json.dumps([_target_json(t) for t in TARGETS.values()], indent=1)
    hdr = f"{'target':8} {'family':8} {'waves':7} {'VGPRs':>5} {'LDS':>7} {'banks':>5}  {'matrix path':11} {'fp8':5} product"
    lines = [hdr, "-" * len(hdr)]
    for t in TARGETS.values():
        waves = "/".join(map(str, t.wave_sizes))
        lines.append(
            f"{t.name:8} {t.family:8} {waves:7} {t.vgprs_per_simd:>5} {t.lds_bytes // 1024:>5}Ki {t.lds_banks:>5}  "
            f"{t.matrix_path:11} {t.fp8 or '-':5} {t.marketing}"
        )
    return "\n".join(lines)


def _target_json(t: object) -> dict[str, object]:
    from dataclasses import asdict

    d = asdict(t)  # type: ignore[call-overload]
    d["features"] = sorted(d["features"])
    return d


def _cmd_instructions(args: argparse.Namespace) -> str:
    from tilesim.targets import get_target
    from tilesim.matrix.catalog import instructions, lookup
    from tilesim.matrix.explain import row_summary

    t = get_target(args.arch)
    names = instructions(t.name)
    if args.format == "json":
        return json.dumps([row_summary(lookup(n, t.name)) for n in names], indent=1)
    if not names:
        return f"{t.name} ({t.family}) has no matrix instructions (matrix path: {t.matrix_path})"
    lines = [f"{t.name} ({t.family}): {len(names)} matrix instructions", ""]
    for n in names:
        r = lookup(n, t.name)
        shape = f"{r.m}x{r.n}x{r.k}" + (f" x{r.blocks}b" if r.blocks > 1 else "")
        waves = "/".join(f"w{w}" for w in r.wave_sizes)
        lines.append(f"  {n:44} {shape:14} {r.types[0]:>8} -> {r.types[3]:<4} {waves}")
    return "\n".join(lines)


def _cmd_explain(args: argparse.Namespace) -> str:
    from tilesim.matrix.catalog import lookup
    from tilesim.matrix.explain import explain

    row = lookup(args.mnemonic, args.arch)
    if args.format == "json":
        return json.dumps(explain(row, wave_size=args.wave, as_dict=True), indent=1)
    return str(explain(row, wave_size=args.wave))


def _cmd_layout(args: argparse.Namespace) -> str:
    from pathlib import Path

    from tilesim.layouts.render import render, render_registers
    from tilesim.matrix.catalog import lookup

    row = lookup(args.instr, args.arch)
    lay = row.layout(args.operand, wave_size=args.wave, cbsz=args.cbsz, abid=args.abid, blgp=args.blgp,
                     opsel=args.opsel)
    if args.format == "table" and args.out and Path(args.out).suffix.lower() in (".svg", ".png"):
        args.format = Path(args.out).suffix.lower()[1:]  # `--out x.svg` says the format
    _refuse_ignored_layout_flags(args)
    if args.get_register or args.matrix_entry:
        return _layout_query(args, lay)
    if args.format in ("svg", "png"):
        from tilesim.errors import TilesimError
        from tilesim.layouts.pictures import png, svg, svg_compare

        title = f"{row.mnemonic} {args.operand.upper()} on {args.arch} (wave{args.wave or row.wave_sizes[0]})"
        if args.compare:
            other = lookup(args.instr, args.compare).layout(args.operand, wave_size=args.wave)
            text = svg_compare(lay, other, f"{args.arch}", f"{args.compare}")
        else:
            text = svg(lay, title)
        if args.format == "png":
            if not args.out:
                raise TilesimError("--format png needs --out FILE")
            import io

            from tilesim.files import refuse_link, write_output

            refuse_link(args.out, "--out")  # before rendering
            buf = io.BytesIO()
            png(text, buf)
            write_output(args.out, buf.getvalue(), "--out")
            return f"wrote {args.out}"
        if args.out:
            from tilesim.files import write_output

            write_output(args.out, text, "--out")
            return f"wrote {args.out}"
        return text
    if args.view == "registers" and args.format in ("table", "markdown"):
        return render_registers(lay, args.format)
    from tilesim.targets import get_target

    meta = {"arch": get_target(args.arch).name, "instruction": row.mnemonic, "operand": args.operand.upper(),
            "wave": args.wave or row.wave_sizes[0], "cbsz": args.cbsz, "abid": args.abid, "blgp": args.blgp,
            "opsel": args.opsel}
    return render(lay, args.format, **meta) if args.format == "json" else render(lay, args.format)


def _refuse_ignored_layout_flags(args: argparse.Namespace) -> None:
    """A flag the chosen output would silently ignore is a usage error, not a surprise."""
    from tilesim.errors import TilesimError

    query = args.get_register or args.matrix_entry
    bad = []
    if args.get_register and args.matrix_entry:
        bad.append("--get-register and --matrix-entry together (ask one question at a time)")
    if args.compare and args.format not in ("svg", "png"):
        bad.append("--compare needs --format svg or png (or --out FILE.svg/.png)")
    if args.view == "registers" and args.format not in ("table", "markdown"):
        bad.append(f"--view registers has no {args.format} form (use --format table or markdown)")
    if args.out and args.format not in ("svg", "png"):
        bad.append(f"--out writes pictures only (svg/png); for {args.format}, redirect stdout")
    if query and args.format not in ("table", "json"):
        bad.append("a single-element query prints text (--format table) or json")
    if not query and (args.i, args.j, args.k, args.register, args.lane) != (None,) * 5:
        bad.append("-I/-J/-K/-r/-l need --get-register or --matrix-entry")
    if not query and args.output_calculation:
        bad.append("--output-calculation goes with --get-register or --matrix-entry")
    if bad:
        raise TilesimError("; ".join(bad))


def _layout_query(args: argparse.Namespace, lay: object) -> str:
    import json

    from tilesim.errors import TilesimError
    from tilesim.matrix.query import INDEX_NAMES, element_owners, formulas, register_contents

    op = args.operand.upper()
    if args.get_register:
        names = INDEX_NAMES.get(op, ("i", "k"))
        given = {"i": args.i, "j": args.j, "k": args.k}
        missing = [n.upper() for n in names if given[n] is None]
        extra = [n.upper() for n in given if given[n] is not None and n not in names]
        if missing or extra:
            raise TilesimError(f"--get-register on {op} takes -{' -'.join(n.upper() for n in names)}"
                               + (f"; missing {', '.join('-' + m for m in missing)}" if missing else "")
                               + (f"; {', '.join('-' + x for x in extra)} is not an index of {op}" if extra else ""))
        answers = element_owners(lay, op, row=given[names[0]], col=given[names[1]], block=args.block)
    else:
        if args.register is None or args.lane is None:
            raise TilesimError("--matrix-entry needs -r REGISTER and -l LANE")
        answers = register_contents(lay, op, lane=args.lane, vgpr=args.register)
    calc = formulas(lay, op) if args.output_calculation else {}
    if args.format == "json":
        return json.dumps({"answers": [a.as_dict() for a in answers], **({"calculation": calc} if calc else {})},
                          indent=2)
    lines = [a.text() for a in answers] or [f"lane {args.lane}, v{args.register} holds no element of {op}"]
    lines += [f"  {k.replace('_', ' ')}: {v}" for k, v in calc.items()]
    return "\n".join(lines)


def _load_programs(path: str, target: str | None) -> tuple[list, object]:
    import importlib.util
    from pathlib import Path

    from tilesim.errors import TilesimError
    from tilesim.ir.core import Program

    p = Path(path)
    if not p.exists():
        raise TilesimError(f"no such file: {path}")
    if not p.is_file():
        raise TilesimError(f"{path} is not a file")
    module = None
    if p.suffix == ".json":
        try:
            text = p.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise TilesimError(f"cannot read {path}: {e}") from None
        progs = [Program.from_json(text)]
    elif p.suffix == ".py":
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
    if target:
        from tilesim.targets import get_target

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
    from pathlib import Path

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


def _reference(ref: object, prog: object, path: str) -> dict:
    """The user's ``reference()`` result, checked: ``{output tensor: real array of its shape}``."""
    import numpy as np

    from tilesim.errors import InputError
    from tilesim.errors import choices as _choices

    from collections.abc import Mapping

    outs = {t.name: t.shape for t in prog.tensors if t.output}
    if not isinstance(ref, Mapping):
        raise InputError(f"{path}: reference() must return a dict {{output tensor: array}}, got "
                         f"{type(ref).__name__}; outputs: {_choices(outs)}"[:300])
    checked = {}
    for k, v in ref.items():
        if k not in outs:
            raise InputError(f"{path}: reference() returned {k!r}, not an output of {prog.name}; outputs: "
                             f"{_choices(outs)}"[:300])
        try:
            if np.asarray(v).dtype.kind == "c":
                raise TypeError("complex")
            a = np.asarray(v, np.float64)
        except (TypeError, ValueError):
            raise InputError(f"{path}: reference()[{k!r}] is not a real numeric array: {str(v)[:60]!r}") from None
        if a.shape != tuple(outs[k]):
            raise InputError(f"{path}: reference()[{k!r}] has shape {a.shape}; output {k} has shape {tuple(outs[k])}")
        checked[k] = np.asarray(v)  # as given: the verdict decides how to compare
    return checked


def _cmd_check(args: argparse.Namespace) -> tuple[str, int]:
    from tilesim.ir.verify import check

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


def _cmd_simulate(args: argparse.Namespace) -> tuple[str, int]:
    import numpy as np

    from tilesim.diff import check_reference
    from tilesim.matrix.dtypes import dtype
    from tilesim.wave.inspect import inspect
    from tilesim.wave.sim import simulate

    progs, module = _load_programs(args.file, args.target)
    out, docs, code = [], [], 0
    for prog in progs:
        if module is not None and hasattr(module, "inputs"):
            arrays = _user(module, "inputs", args.file, prog, seed=args.seed)
        else:
            rng = np.random.default_rng(args.seed)
            arrays = {t.name: rng.standard_normal(t.shape).astype(dtype(t.dtype).np)
                      for t in prog.tensors if not t.output}
        res = simulate(prog, **arrays)
        errs, verdict = {}, "simulated"
        if module is not None and hasattr(module, "reference"):
            ref = check_reference(prog, res.outputs, _reference(_user(module, "reference", args.file, **arrays), prog,
                                                                 args.file), arrays)
            errs = dict(ref.max_abs)
            verdict = "reference OK" if ref.ok else "REFERENCE MISMATCH: " + ref.describe()
            code = code if ref.ok else 1
        doc = {"program": prog.name, "target": prog.target, "max_abs_error_vs_reference": errs,
               "reference_ok": None if not errs else verdict == "reference OK", "report": res.report.summary()}
        text = [f"{prog.name} on {prog.target}: " + (", ".join(f"max |{k} - reference| = {v:.3g}" for k, v in errs.items())
                                                      or "simulated") + ("" if not errs else f" — {verdict}"),
                str(res.report)]
        if args.inspect is not None:
            text.append(inspect(res, args.inspect, workgroup=args.workgroup, wave=args.wave))
            doc["inspect"] = inspect(res, args.inspect, workgroup=args.workgroup, wave=args.wave, as_dict=True)
        out.append("\n".join(text))
        docs.append(doc)
    if args.format == "json":
        return json.dumps(docs, indent=1), code
    return "\n\n".join(out), code


def _cmd_emit(args: argparse.Namespace) -> str:
    from tilesim.codegen import emit_hip

    prog, _ = _load_programs(args.file, args.target)
    emitted = [emit_hip(p) for p in prog]
    if args.format == "json":
        return json.dumps([{"program": e.program.name, "target": e.program.target, "kernel": e.kernel,
                            "grid": list(e.grid), "block": list(e.block), "parameters": list(e.tensors),
                            "lds_bytes": e.lds_bytes, "builtins": list(e.builtins), "source": e.source}
                           for e in emitted], indent=1)
    return "\n".join(e.source for e in emitted)


def _cmd_compile(args: argparse.Namespace) -> str:
    from tilesim.codegen import emit_hip
    from tilesim.hw.offline import compile_hip
    from tilesim.ir.verify import check

    progs, _ = _load_programs(args.file, args.target)
    docs, lines = [], []
    for p in progs:
        c = compile_hip(emit_hip(p).source, p.target, wave_size=p.wave_size)
        est = check(p)
        docs.append({"program": p.name, "target": p.target, "metadata": c.metadata, "vgprs_estimate": est.vgprs,
                     "occupancy_estimate": est.occupancy, "mnemonics": c.mnemonics(),
                     **({"asm": c.isa} if args.asm else {})})
        lines.append(f"{p.name} on {p.target}: {c.metadata.get('vgpr_count')} VGPRs (estimate {est.vgprs}), "
                     f"{c.metadata.get('sgpr_count')} SGPRs, LDS {c.metadata.get('lds_bytes')} B, "
                     f"scratch {c.metadata.get('scratch_bytes')} B, wave{c.metadata.get('wavefront_size')}")
        if args.isa:
            lines += [f"  {m}" for m in c.mnemonics()]
        if args.asm:
            lines.append(c.isa)
    return json.dumps(docs, indent=1) if args.format == "json" else "\n".join(lines)


def _cmd_run(args: argparse.Namespace) -> tuple[str, int]:
    import numpy as np

    from tilesim.diff import exit_status, run
    from tilesim.matrix.dtypes import dtype

    progs, module = _load_programs(args.file, args.target)
    verdicts = []
    for prog in progs:
        if module is not None and hasattr(module, "inputs"):
            arrays = _user(module, "inputs", args.file, prog, seed=args.seed)
        else:
            rng = np.random.default_rng(args.seed)
            arrays = {t.name: rng.standard_normal(t.shape).astype(dtype(t.dtype).np) for t in prog.tensors
                      if not t.output}
        ref = _reference(_user(module, "reference", args.file, **arrays), prog, args.file) \
            if module is not None and hasattr(module, "reference") else None
        verdicts.append(run(prog, device=args.device, reference=ref, device_timeout=args.device_timeout, **arrays))
    code = exit_status(verdicts)
    bad = [v for v in verdicts if v.mismatch_counts is not None]
    if args.heatmap and bad:
        from tilesim.files import write_output

        write_output(args.heatmap, bad[0].heatmap_svg(), "--heatmap")
    if args.format == "json":
        return json.dumps([v.to_dict() for v in verdicts], indent=1), code
    return "\n\n".join(str(v) for v in verdicts), code


def _cmd_port(args: argparse.Namespace) -> tuple[str, int]:
    from tilesim.codegen import emit_hip
    from tilesim.targets import get_target
    from tilesim.port import PortError, port

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
    code = 1 if refused else 0
    if args.format == "json":
        return json.dumps(docs, indent=1), code
    return "\n\n".join(text), code


def _cmd_check_layout(args: argparse.Namespace) -> tuple[str, int]:
    from tilesim.frameworks.check import check_layout

    res = check_layout(args.spec, args.arch, operand=args.operand, instr=args.instr, dtype=args.dtype)
    out = json.dumps(res.to_dict(), indent=1) if args.format == "json" else str(res)
    return out, 0 if res.ok else 1


def _cmd_gallery(args: argparse.Namespace) -> str:
    from tilesim.errors import TilesimError
    from tilesim.gallery import build_gallery
    from tilesim.matrix.catalog import rows

    fams = sorted({r.family for r in rows()})
    bad = [f for f in (args.family or []) if f not in fams]
    if bad:
        raise TilesimError(f"unknown family {bad[0]!r}; families: {', '.join(fams)}")
    from pathlib import Path

    def progress(done: int, total: int) -> None:  # a terminal sees it; pipes and logs stay clean
        print(f"\r  gallery: {done}/{total} instruction pages", end="" if done < total else "\n", file=sys.stderr,
              flush=True)

    pages = build_gallery(args.outdir, args.family, progress=progress if sys.stderr.isatty() else None)
    if args.format == "json":
        files = sorted(p for p in Path(args.outdir).iterdir() if p.is_file())
        return json.dumps({"outdir": str(args.outdir), "index": str(pages[0]), "pages": [str(p) for p in pages],
                           "bytes": sum(p.stat().st_size for p in files), "files": len(files)}, indent=1)
    return f"wrote {len(pages)} pages to {args.outdir} (open {pages[0]})"


def _cmd_emulate(args: argparse.Namespace) -> tuple[str, int]:
    import os

    import numpy as np

    from tilesim.isa.hipfile import emulate_hip

    def dims(text: str, what: str) -> tuple[int, ...]:
        try:
            return tuple(int(x) for x in text.split(","))
        except ValueError:
            raise _UsageError(f"--{what} {text!r}: expected integers like 4,4") from None

    with open(args.file) as f:
        source = f.read()
    if args.audit:
        from tilesim.hw.offline import compile_hip
        from tilesim.isa.audit import audit
        from tilesim.isa.hipfile import materialise

        rep = audit(compile_hip(source, args.target), args.target, args.kernel, grid=dims(args.grid, "grid"),
                    block=dims(args.block, "block"), args=materialise(args.arg, args.seed))
        if args.format == "json":
            return json.dumps({"ok": rep.ok, "matrix_calls": rep.matrix_calls, "checked": rep.checked,
                               "untraced": rep.untraced, "counts": rep.counts, "notes": list(rep.notes),
                               "findings": [f.text for f in rep.findings]}, indent=1), 0 if rep.ok else 1
        return str(rep), 0 if rep.ok else 1
    res, inputs = emulate_hip(source, args.target, args.kernel, grid=dims(args.grid, "grid"),
                              block=dims(args.block, "block"), args=args.arg, seed=args.seed)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for name, arr in res.buffers.items():
            np.save(os.path.join(args.out, f"{name}.npy"), arr)
    doc = {"target": res.target, "kernel": res.kernel, "wave_instructions": res.instructions,
           "seconds": round(res.seconds, 3), "races": [str(r) for r in res.races], "notes": list(res.notes),
           "buffers": {n: {"dtype": str(a.dtype), "shape": list(a.shape), "changed": not np.array_equal(
               a, inputs[n], equal_nan=a.dtype.kind == "f") if n in inputs else True} for n, a in res.buffers.items()}}
    if args.format == "json":
        return json.dumps(doc, indent=1), 1 if res.races else 0
    lines = [f"{res.kernel} on {res.target} (emulated, not run on AMD hardware): {res.instructions} wave-instructions "
             f"in {res.seconds:.2f} s"]
    lines += [f"  {n}: {d['dtype']}{d['shape']}{' written' if d['changed'] else ''}" for n, d in doc["buffers"].items()]
    lines += [f"  race: {r}" for r in doc["races"]] + [f"  note: {x}" for x in res.notes]
    if args.out:
        lines.append(f"  buffers saved to {args.out}/NAME.npy")
    return "\n".join(lines), 1 if res.races else 0


def _cmd_devices(args: argparse.Namespace) -> str:
    from tilesim.hw.amd import amd_device
    from tilesim.hw.nvidia import cuda_device

    cc, nv = cuda_device()
    ok, amd = amd_device()
    doc = {"nvidia": {"usable": cc is not None, "compute_capability": cc, "detail": nv},
           "amd": {"usable": ok, "detail": amd}}
    if args.format == "json":
        return json.dumps(doc, indent=1)
    return "\n".join([f"NVIDIA: {'sm_%d, ' % cc + nv if cc is not None else 'none — ' + nv}",
                      f"AMD:    {amd if ok else 'none — ' + amd}",
                      "Without a device, `tilesim run` compiles (AMD, offline) or simulates, and says so."])


def _cmd_demo(args: argparse.Namespace) -> str:
    from tilesim.demo import tour

    return tour(fmt=args.format)


_COMMANDS = {
    "targets": _cmd_targets,
    "instructions": _cmd_instructions,
    "explain": _cmd_explain,
    "layout": _cmd_layout,
    "demo": _cmd_demo,
    "check": _cmd_check,
    "simulate": _cmd_simulate,
    "emit": _cmd_emit,
    "compile": _cmd_compile,
    "run": _cmd_run,
    "devices": _cmd_devices,
    "gallery": _cmd_gallery,
    "port": _cmd_port,
    "check-layout": _cmd_check_layout,
    "emulate": _cmd_emulate,
    "audit": _cmd_emulate,
}


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that ``finally`` blocks run (temporary folders removed,
    compiler process groups killed); a BaseException so the user's ``except Exception`` cannot keep it."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    import signal
    import threading

    in_main = threading.current_thread() is threading.main_thread()
    old_term = signal.signal(signal.SIGTERM, _on_sigterm) if in_main else None
    try:
        return _main(argv)
    except KeyboardInterrupt:  # SIGINT: one line, the shell's 128 + 2
        print("tilesim: interrupted", file=sys.stderr)
        return 130
    except _Terminated:  # 128 + SIGTERM (15)
        print("tilesim: terminated", file=sys.stderr)
        return 143
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, old_term if old_term is not None else signal.SIG_DFL)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as done:  # --help and --version print, then argparse exits 0
            if done.code in (0, None):
                return 0
            raise
        if not args.command:
            parser.print_help()
            return 0
        out = _COMMANDS[args.command](args)
        code = 0
        if isinstance(out, tuple):
            out, code = out
    except (TilesimError, _UsageError, OSError) as e:  # OSError: an --out/OUTDIR that cannot be written
        print("tilesim: error: " + str(e).replace("\r", " ").replace("\n", " "), file=sys.stderr)
        return 2
    try:
        print(out)
    except BrokenPipeError:  # `tilesim layout … | head`
        sys.stderr.close()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
