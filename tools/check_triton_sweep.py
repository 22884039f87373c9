#!/usr/bin/env python3
"""Compare tilesim with Triton's recorded answers for the random layout sweep (no Triton needed).

    PYTHONPATH=. python tools/check_triton_sweep.py                 # both sweeps, every spec
    PYTHONPATH=. python tools/check_triton_sweep.py --every 20      # a slice (what CI runs)
    PYTHONPATH=. python tools/check_triton_sweep.py --json

``tests/golden/triton_layouts/sweep-<version>.jsonl.gz`` (written by ``tools/sweep_triton_layouts.py``
with the real Triton wheel) holds, per spec, Triton's bases for each tensor shape or its
rejection, and the MLIR type Triton printed. For each case tilesim must

* give the same bases, basis for basis, in the same order (``to_linear`` / ``shared_bases`` with
  ``triton_version`` set to the sweep's version) — **matched**;
* reject what Triton rejects — **rejected by both**;
* and, once per spec, parse the printed type back (``tilesim.frameworks.ttg_text``) to a spec that
  gives the same bases as the spec built from the JSON — **printed forms parsed**.

Anything else is a **disagreement**, except a *documented tilesim refusal*: a ``LayoutError``
whose message says "not modelled by tilesim" (the spec is refused, never guessed).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tilesim.errors import TilesimError
from tilesim.frameworks.gluon import SPECS
from tilesim.frameworks.ttg_text import parse_ttg

GOLDEN = Path(os.environ.get("TILESIM_SWEEP_DIR")
              or Path(__file__).resolve().parent.parent / "tests" / "golden" / "triton_layouts")
VERSIONS = ("3.9", "3.6")
REFUSAL = "not modelled by tilesim"
REFUSAL_KINDS = ("fp4_padded", "transposed True: at rank", "Hopper layout", "rank-2 instr_shape",
                 "multi-CTA (cga_layout) AMDWMMALayout operand", "slice of explicit bases", "explicit bases")
# Triton 3.6's Python binding wraps every answer in a distributed layout and aborts on a shared one
NO_ANSWER = "Expected input dimension 0 to be 'register'"


def load(version: str) -> tuple[dict, list[dict]]:
    with gzip.open(GOLDEN / f"sweep-{version}.jsonl.gz", "rt") as f:
        head = json.loads(f.readline())
        return head, [json.loads(line) for line in f if line.strip()]


def build(spec: dict, version: str) -> Any:
    args = {k: (build(v, version) if k == "parent" else v) for k, v in spec.items() if k != "layout"}
    if spec["layout"] == "AMDWMMALayout":
        args["triton_version"] = version  # the sweep's spelling is that version's
    return SPECS[spec["layout"]](**args)


def bases(obj: Any, shape: list[int], version: str) -> dict:
    if hasattr(obj, "shared_bases"):
        return obj.shared_bases(shape)
    return obj.to_linear(shape, triton_version=version).bases_dict()


def check_entry(entry: dict, version: str) -> tuple[Counter, list[str]]:
    """Counts (matched, rejected_both, refused, disagree, printed_parsed, printed_bad) and problems for one spec."""
    n: Counter = Counter()
    problems: list[str] = []
    where = json.dumps(entry["spec"], separators=(",", ":"))
    obj = err = None
    try:
        obj = build(entry["spec"], version)
    except TilesimError as e:
        err = e
    for case in entry["cases"]:
        shape = case["shape"]
        got = None
        e2 = err
        if obj is not None:
            try:
                got = bases(obj, shape, version)
            except TilesimError as e:
                e2 = e
        if "rejected" in case and NO_ANSWER in case["rejected"]:
            n["unanswered"] += 1  # Triton 3.6's to_linear_layout cannot return a shared layout at all
            continue
        if "rejected" in case:
            if e2 is not None:
                n["rejected_both"] += 1
            else:
                n["disagree"] += 1
                problems.append(f"{where} {shape}: tilesim accepts, Triton rejects ({case['rejected'][:120]})")
        elif e2 is not None:
            if REFUSAL in str(e2):
                n["refused"] += 1
                n["refused: " + next((k for k in REFUSAL_KINDS if k in str(e2)), "other")] += 1
            else:
                n["disagree"] += 1
                problems.append(f"{where} {shape}: tilesim rejects ({str(e2)[:160]}), Triton accepts")
        elif got != case["bases"]:
            n["disagree"] += 1
            diff = next((f"{k}[{i}]: tilesim {g}, Triton {w}" for k in case["bases"]
                         for i, (g, w) in enumerate(zip(got.get(k, []) + [None] * 64, case["bases"][k] + [None] * 64))
                         if g != w), "?")
            problems.append(f"{where} {shape}: first difference {diff}")
        else:
            n["matched"] += 1
    if entry.get("type"):
        # The printed form must read back as the spec it was printed from: an equal spec, or one with
        # the same bases for the first shape; a spec tilesim refuses must be refused when read back too.
        try:
            parsed = parse_ttg(entry["type"]).layout
        except TilesimError as e:
            parsed, perr = None, str(e)
        if obj is None:
            key = "printed_rejected_both" if parsed is None or _refuses(parsed, entry, version) else "printed_bad"
            if REFUSAL in str(err) and key == "printed_bad":
                key = "printed_refused"
        elif parsed is None:
            key = "printed_bad"
        else:
            key = "printed_parsed" if parsed == obj or _same_bases(parsed, obj, entry, version) else "printed_bad"
        n[key] += 1
        if key == "printed_bad":
            why = perr if parsed is None else f"read back as {parsed}"
            problems.append(f"{where}: printed form {entry['type'][:160]} -> {why}"[:500])
    return n, problems


def _refuses(spec: Any, entry: dict, version: str) -> bool:
    try:
        bases(spec, entry["cases"][0]["shape"], version)
    except TilesimError:
        return True
    return False


def _same_bases(a: Any, b: Any, entry: dict, version: str) -> bool:
    shape = entry["cases"][0]["shape"]
    try:
        return bases(a, shape, version) == bases(b, shape, version)
    except TilesimError:
        return False


def run(version: str, every: int = 1) -> tuple[dict, Counter, list[str]]:
    head, entries = load(version)
    total: Counter = Counter()
    problems: list[str] = []
    for entry in entries[::every]:
        n, p = check_entry(entry, version)
        total.update(n)
        total["specs"] += 1
        total["cases"] += len(entry["cases"])
        total["printed"] += bool(entry.get("type"))
        problems += p
    return head, total, problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=int, default=1, help="check every N-th spec only")
    ap.add_argument("--version", choices=VERSIONS, action="append")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--show", type=int, default=10, help="disagreements to print")
    args = ap.parse_args(argv)
    report, bad = {}, 0
    for v in args.version or VERSIONS:
        head, total, problems = run(v, args.every)
        report[v] = {"triton": head["triton_version"], "seed": head["seed"], **dict(total)}
        bad += total["disagree"] + total["printed_bad"]
        if not args.json:
            print(f"Triton {head['triton_version']}: {total['specs']} specs, {total['cases']} cases: "
                  f"{total['matched']} matched, {total['rejected_both']} rejected by both, {total['refused']} "
                  f"refused by tilesim (not modelled), {total['disagree']} disagreements, {total['unanswered']} not "
                  f"answerable by this Triton (shared layouts in 3.6); printed forms: "
                  f"{total['printed']}, {total['printed_parsed']} read back to the same layout, "
                  f"{total['printed_rejected_both']} refused on reading as the spec is, {total['printed_refused']} "
                  f"not modelled, {total['printed_bad']} wrong")
            kinds = {k[len("refused: "):]: v for k, v in total.items() if k.startswith("refused: ")}
            if kinds:
                print("  tilesim refusals (documented, not modelled): "
                      + ", ".join(f"{k} {v}" for k, v in kinds.items()))
            for p in problems[:args.show]:
                print("  " + p)
    if args.json:
        print(json.dumps(report, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
