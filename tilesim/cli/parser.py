"""The ``tilesim`` argument parser: every subcommand, its options and its ``--help`` text."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import NoReturn

from tilesim.isa.launch import SUPPORTED_FAMILIES

__all__ = ["build_parser", "UsageError"]

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
  tilesim run prog.json --inputs inputs.npz --expect outputs.npz --device none
  tilesim demo

exit statuses of run, simulate and check (2: a usage or input error, for every command):
  run       0  MATCH, EMULATED_MATCH, COMPILE_ONLY, SIMULATED_ONLY (each with a reference that judged it)
            1  MISMATCH, SIM_MISMATCH, CHECK_FAILED, EMULATED_MISMATCH
            3  DEVICE_ERROR
            4  NOT_JUDGED (no reference() or --expect, or one whose bound would pass a result off by
               a quarter: tilesim cannot tell what the program should compute, even where a device or the
               emulator ran the compiled code and agreed with the simulation)
            (over several programs: 1 if any verdict is 1, else 3 if any is 3, else 4 if any is 4, else 0)
  simulate  0  REFERENCE_OK
            1  REFERENCE_MISMATCH, CHECK_FAILED (check reports an error: with or without a reference)
            4  NOT_JUDGED (no reference() or --expect, or one whose bound would pass a result off by
               a quarter: nothing judged the outputs)
  check     0  no errors (warnings allowed)
            1  at least one error
  emit      1  check reports an error (the source is still written; the errors on stderr); compile too
  port      1  refused (a source program that check rejects is refused)
  emulate   1  an LDS race, a missing s_waitcnt (a register used while its load may be in flight),
               replicated operand copies that differ (which one the hardware reads is unknown), or a
               read of LDS bytes no store wrote (the hardware's hold leftovers)
  audit     1  a layout finding, or anything emulate exits 1 on (its emulation's race, hazard, ...)
            3  undecided: no matrix instruction ran, an A/B operand or the stored D could not be traced
"""


class UsageError(Exception):
    """A command line argparse rejects (missing option, bad choice, non-integer)."""


class _Parser(argparse.ArgumentParser):
    # argparse prints the usage block and "tilesim layout: error: …" and exits; the contract
    # here is one "tilesim: error: …" line and status 2, so the error is raised to main().
    # Subparsers inherit this class (add_subparsers defaults parser_class to type(self)).
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("tilesim")
    except PackageNotFoundError:  # a source tree on sys.path without an install
        try:
            text = (Path(__file__).parents[2] / "pyproject.toml").read_text()
        except OSError:  # a copied package with neither an install nor the project file
            return "unknown"
        found = re.search(r'^version = "([^"]+)"', text, re.M)
        return found.group(1) if found else "unknown"


class _Version(argparse.Action):
    """``--version``, with the version looked up only when asked: importlib.metadata costs ~50 ms,
    which every command paid when the string was built with the parser."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kw: object) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, nargs=0,
                         help="show program's version number and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: object, values: object,
                 option_string: str | None = None) -> NoReturn:
        print(f"tilesim {_version()}")  # on stdout, as argparse's own version action prints it
        parser.exit()


def _emulated_targets() -> str:
    """The emulator's families, from the emulator itself (a new family there needs no edit here)."""
    return (f"an AMD target of a family the emulator models ({', '.join(f.upper() for f in SUPPORTED_FAMILIES)}; "
            "`tilesim targets` lists each family's targets), e.g. gfx1201")


def _data_options(sp: argparse.ArgumentParser) -> None:
    """``--inputs`` and ``--expect`` of simulate and run: inputs and expected outputs as data (any program file)."""
    sp.add_argument("--inputs", default=None, metavar="FILE.npz",
                    help="the inputs (numpy.savez: one array per input tensor, named as the tensors) instead of the "
                    "file's inputs() or --seed's random ones; rounded to the tensor types as the kernel reads them")
    sp.add_argument("--expect", default=None, metavar="FILE.npz",
                    help="the expected outputs (numpy.savez: one array per output tensor, named as the outputs), "
                    "judged as reference() is; for a file with one program (--target) and no reference()")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="tilesim",
        description="Which lane, VGPR and bits hold which matrix element — for AMD MFMA/WMMA "
        "and NVIDIA mma.sync, exactly as the hardware does it.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action=_Version)
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
    lay.add_argument("--operand", required=True, help="A, B, C, D, or K (sparse indices); for SMFMAC/SWMMAC also "
                     "values / index (the compressed A and metadata bytes a tile program loads)")
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
                        "(or random inputs, or --inputs), compare with its reference() or --expect, and report LDS "
                        "conflicts, races, out-of-bounds lanes and replication violations. Exit 1 when a simulated "
                        "output differs from the reference beyond the numerics model's tolerance or check reports "
                        "an error; exit 4 (NOT_JUDGED) when there is no reference to compare with.")
    sm.add_argument("file")
    sm.add_argument("--target", default=None, help="only the programs for this target")
    sm.add_argument("--inspect", default=None, metavar="VALUE", help="print a fragment's registers: the kernel's variable name (acc), %%ID or id")
    sm.add_argument("--wave", type=int, default=0, help="wave to inspect (default 0)")
    sm.add_argument("--workgroup", type=int, default=0, help="workgroup to inspect (default 0)")
    sm.add_argument("--seed", type=int, default=0)
    _data_options(sm)
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
                        "errors) / COMPILE_ONLY / SIMULATED_ONLY (simulation right by the reference; the reason says "
                        "why it went no further) / NOT_JUDGED (no reference and no device or emulator run: nothing "
                        "judged the outputs; exit 4; also where a device or the emulator agreed with the simulation but no reference "
                        "said what the program should compute) / EMULATED_MATCH / EMULATED_MISMATCH (--device emulator: tilesim's ISA emulator "
                        "ran the compiled code) / DEVICE_ERROR (launch failure, out of memory, crash, or a hang past "
                        "the watchdog). Never MATCH without a device run; a program check rejects or whose simulation "
                        "differs from its reference never exits 0, and without a reference nothing exits 0. Each verdict's exit status: the table of `tilesim --help`.")
    rn.add_argument("file")
    rn.add_argument("--target", default=None)
    rn.add_argument("--device", choices=("auto", "none", "emulator"), default="auto",
                    help="auto: a GPU if one is usable (NVIDIA through CuPy; AMD through hip-python, the device's "
                    "gcnArchName must be the target, else DEVICE_ERROR; never run on AMD hardware by this project); "
                    "none: no device step; emulator: run the compiled AMDGPU code "
                    "in tilesim's ISA emulator (EMULATED_MATCH / EMULATED_MISMATCH; never MATCH)")
    rn.add_argument("--seed", type=int, default=0)
    _data_options(rn)
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
                        "a layout as Triton prints it, \"#ttg.amd_mfma<{...}>\" or \"tensor<64x64xf16, #ttg...>\", "
                        "or a .json file), used as an mma operand or result, holds what the instruction reads or "
                        "writes on ARCH: warp 0's registers for one instruction tile, lane by lane. Prints the "
                        "first differing lane/VGPR and the pattern. Exit 0 on a match, 1 on a mismatch or "
                        "rejection, 2 on a usage error.")
    cl.add_argument("spec", metavar="SPEC")
    cl.add_argument("--arch", default=None, help="target, e.g. gfx942, gfx1100, gfx1201 (required unless only "
                    "--picture is wanted)")
    cl.add_argument("--operand", choices=("A", "B", "C", "D"), default=None,
                    help="operand the layout is used as (default: A/B from a DotOperandLayout, else C)")
    cl.add_argument("--instr", default=None, help="instruction (default: from the layout's kind, instr_shape "
                    "and --dtype)")
    cl.add_argument("--dtype", default=None, help="A/B element type used to pick the instruction (default: a dot "
                    "operand tensor<...>'s element type, else f16)")
    cl.add_argument("--format", choices=("text", "json"), default="text")
    cl.add_argument("--picture", metavar="OUT.svg", default=None,
                    help="also write the layout's thread-value picture (warp, lane, register per element) as SVG")
    cl.add_argument("--shape", default=None, metavar="D0,D1[,D2]",
                    help="tensor shape to lay out (default: one instruction tile; for --picture alone, the "
                    "printed type's shape or 16,16)")
    cl.add_argument("--triton-version", choices=("3.6", "3.9"), default=None,
                    help="whose register numbering to use where Triton 3.6 and 3.9 differ (WMMA tiles_per_warp)")

    gl = sub.add_parser("gallery", help="write a static HTML gallery of every instruction's layouts")
    gl.add_argument("outdir")
    gl.add_argument("--family", action="append", default=None, help="only these families (repeatable), e.g. rdna3")
    gl.add_argument("--format", choices=("text", "json"), default="text",
                    help="json: the pages written, their sizes and the total (progress goes to stderr only on a terminal)")

    for cmd in ("emulate", "audit"):
        audit = cmd == "audit"
        eu = sub.add_parser(cmd, help="layout audit of one compiled HIP kernel: which element each matrix-instruction "
                            "operand slot holds and where D is stored, by emulating it (exit 1 on findings)" if audit else
                            "compile a HIP file and run one kernel in tilesim's AMDGPU ISA emulator (exit 1 on an LDS "
                            "race or a register used while its load may be in flight)",
                            description="Arguments in the kernel's parameter order: NAME=DTYPE[D0,D1] (random), "
                            "NAME=zeros:DTYPE[...], NAME=FILE.npy, NAME=DTYPE:VALUE (by-value scalar). "
                            + ("`tilesim audit` is `tilesim emulate --audit`. " if audit else "")
                            + "Not run on AMD hardware: see docs/emulator.md.")
        eu.add_argument("file", help="HIP source (device code, compiled with -nogpuinc)")
        eu.add_argument("--target", required=True, help=_emulated_targets())
        eu.add_argument("--kernel", required=True, help="the kernel's (extern \"C\") name")
        eu.add_argument("--grid", default="1", help="workgroups, e.g. 4,4 (default 1)")
        eu.add_argument("--block", default="64", help="work-items per workgroup, e.g. 256 or 16,16 (default 64)")
        eu.add_argument("--arg", action="append", default=[], metavar="SPEC",
                        help="a kernel argument (repeat, in order)")
        eu.add_argument("--wave", type=int, choices=(32, 64), default=None,
                        help="wave size to compile for (default: the target's; RDNA also runs wave64)")
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


