"""Sweep: every example × every AMD target the ISA emulator models, through ``tilesim run --device emulator``.

For each ``examples/*.py`` and each of its programs (``programs()`` at its default, small sizes, plus the
arguments in ``VARIANTS``) whose target is one the emulator models, this does what ``tilesim run FILE
--target T --device emulator`` does (the file's ``inputs()`` and ``reference()``, seed 0) and tabulates
the outcome: EMULATED_MATCH, EMULATED_MISMATCH, or the refusal (the first mnemonic the emulator does
not model, else the error's first line).

    PYTHONPATH=. python tools/emulator_sweep.py [--only NAME ...] [--targets T[:WAVE] ...] [--markdown] [--json FILE]

Exit status 0 always (the table is the result); tests/test_isa_sweep_ops.py runs a CI-sized slice
and, marked slow, the whole sweep.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201")  # what tilesim.isa models (docs/emulator.md)
# programs() arguments besides the defaults: other small sizes (loop trip counts and address arithmetic
# compile differently) and the examples' options; a size an example refuses is listed as SKIPPED
_MNK = [{"M": 32, "N": 32, "K": 32}, {"M": 64, "N": 32, "K": 96}, {"M": 96, "N": 64, "K": 160}]
VARIANTS = {
    "gemm": _MNK, "gemm_abt": _MNK, "gemm_bias": _MNK, "port_cdna3": _MNK,
    # signed=False reads the file's signed inputs as u8: the program check rejects it and the
    # reference disagrees, so EMULATED_MISMATCH is the truthful verdict there (kept as a control)
    "int8_gemm": _MNK + [{"signed": False}],
    "fp8_gemm": _MNK,
    "lds_gemm": [{"smem": "plain"}, {"smem": "padded"}, {"M": 64, "N": 64, "K": 96}],
    "block_gemm": [{"K": 96}, {"K": 32}, {"M": 256, "N": 128, "K": 64}],
    "block_gemm_async": [{"K": 96}, {"K": 32}],
    # broadcast=True is left out: the file's reference() needs the CBSZ/ABID that `tilesim run`
    # does not pass (it never builds those programs: they are not in programs())
    "batched_small_gemm": [{"groups": 1}, {"groups": 3}],
    "softmax": [{"M": 16, "N": 16}, {"M": 64, "N": 96}],
    "sparse_gemm": [{"M": 32, "N": 32, "K": 64}],
    "lds_tr_gemm": [{"M": 64, "N": 32, "K": 96}],
    "mxfp8_gemm": [{"K": 128}], "mxfp4_gemm": [{"K": 128}],
}


# gfx90a's own spelling of a gfx942 MFMA the examples pick (the CDNA3 i8 forms doubled K; the catalog has both)
CDNA2_MMA = {"v_mfma_i32_32x32x16_i8": "v_mfma_i32_32x32x8i8", "v_mfma_i32_16x16x32_i8": "v_mfma_i32_16x16x16i8"}
TWIN_SKIPPED = "no twin: "  # a SKIPPED row's reason when a program has no wave64 / gfx90a form


def _examples() -> list[str]:
    return sorted(p.stem for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))


def cases(only: list[str] | None = None) -> list[tuple[str, dict, object, object]]:
    """``(example, sizes, program, module)`` for every program on a modelled target; each RDNA wave32
    program again in wave64 and each gfx942 program again on gfx90a (:func:`_twin`)."""
    from tilesim.errors import TilesimError

    out = []
    for name in only or _examples():
        module = importlib.import_module(f"examples.{name}")
        if not hasattr(module, "programs"):
            continue
        for sizes in [{}] + VARIANTS.get(name, []):
            try:
                progs = module.programs(**sizes)
            except TilesimError as e:  # a size this example does not take
                out.append((name, sizes, None, f"{type(e).__name__}: {e}"))
                continue
            for prog in progs:
                if prog.target not in TARGETS:
                    continue
                out.append((name, sizes, prog, module))
                if prog.target.startswith("gfx1") and prog.wave_size == 32:
                    out.append(_twin(name, sizes, prog, module, prog.target, 64))
                if prog.target == "gfx942":  # CDNA2: the CDNA3 programs on gfx90a
                    out.append(_twin(name, sizes, prog, module, "gfx90a", 64))
    return out


def _twin(name: str, sizes: dict, prog: object, module: object, target: str, wave: int) -> tuple[str, dict, object, object]:
    """The same kernel, options and sizes re-specialised for ``target`` in ``wave`` (as ``tilesim.port``
    does); a program with no such form (an instruction or a layout the target lacks) is SKIPPED."""
    from tilesim.errors import TilesimError

    o = prog.origin
    opts = dict(o.options)
    if target == "gfx90a" and opts.get("mma") in CDNA2_MMA:
        opts["mma"] = CDNA2_MMA[opts["mma"]]
    try:
        return name, sizes, o.kernel.specialize(target=target, wave_size=wave, **dict(o.sizes), **opts), module
    except (TilesimError, ValueError) as e:  # e.g. a layout written for 32 lanes, an MFMA gfx90a lacks
        return name, sizes, None, f"{TWIN_SKIPPED}{target} wave{wave}: {type(e).__name__}: {str(e).splitlines()[0][:200]}"


def outcome(name: str, prog: object, module: object) -> dict:
    """What ``tilesim run examples/NAME.py --target T --device emulator`` says about ``prog``."""
    from tilesim.cli.programs import _inputs, _references
    from tilesim.diff import run
    from tilesim.errors import TilesimError

    path = str(ROOT / "examples" / f"{name}.py")
    ns = argparse.Namespace(file=path, seed=0)
    t0 = time.perf_counter()
    try:
        arrays = _inputs(module, prog, ns)
        ref, mag = _references(module, prog, path, arrays)
        v = run(prog, device="emulator", reference=ref, reference_magnitude=mag, **arrays)
        status, reason = v.status, v.reason
    except TilesimError as e:
        status, reason = "ERROR", f"{type(e).__name__}: {e}"
    missing = ""
    if status not in ("EMULATED_MATCH", "EMULATED_MISMATCH"):
        # IsaError text: "<mnemonic> (<target>, line N): <why>", wrapped by the verdict's reason
        m = re.search(r"cannot run this kernel: ([a-z][a-z0-9_]+) \(", reason)
        missing = m.group(1) if m else ""
    return {"example": name, "program": prog.name, "target": prog.target, "wave": prog.wave_size,
            "status": status, "missing": missing, "reason": reason.splitlines()[0][:300] if reason else "",
            "seconds": round(time.perf_counter() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="example names (default: all)")
    ap.add_argument("--targets", nargs="*", help="only these targets, each TARGET or TARGET:WAVE (gfx1100:64)")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    ap.add_argument("--json", help="write the rows to this file")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    rows = []
    for name, sizes, prog, module in cases(a.only):
        if a.targets and (prog is None or not {prog.target, f"{prog.target}:{prog.wave_size}"} & set(a.targets)):
            continue
        if prog is None:
            r = {"example": name, "program": "", "target": "", "status": "SKIPPED", "missing": "", "reason": module}
        else:
            r = outcome(name, prog, module)
        r["sizes"] = sizes
        rows.append(r)
        print(f"{name:20s} {str(sizes):32s} {r['target']:8s} {r['status']:18s} {r['missing'] or r['reason'][:110]}", file=sys.stderr,
              flush=True)
    counts = collections.Counter(r["status"] for r in rows)
    blockers = collections.Counter(r["missing"] for r in rows if r["missing"])
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    if a.markdown:
        print("| example | program | target | outcome |\n|---|---|---|---|")
        for r in rows:
            what = r["status"] + (f" (`{r['missing']}`)" if r["missing"] else "")
            print(f"| {r['example']} | {r['program']} | {r['target']} | {what} |")
    print(f"{len(rows)} cases: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if blockers:
        print("blocking mnemonics: " + ", ".join(f"{k} {v}" for k, v in blockers.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
