"""Run every proof obligation and print a report: ``python -m proofs [--format text|json|markdown]``.

Exit status 0 when everything is proved, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

from proofs.catalog import OBLIGATIONS, cases, prove
from proofs.targets import TARGET_OBLIGATIONS, matrix_targets, prove_targets


class _Progress:
    """One self-overwriting line on stderr per phase ("kernel sizes 12/40"), at most ~10 updates a
    second; nothing at all when stderr is not a terminal, so logs and pipes stay clean."""

    def __init__(self, enabled: bool) -> None:
        self.enabled, self.last, self.width = enabled, 0.0, 0

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if not self.enabled or (done < total and now - self.last < 0.1):
            return
        self.last = now
        text = f"  proofs: {phase} {done}/{total}"
        print("\r" + text.ljust(self.width), end="", file=sys.stderr, flush=True)
        self.width = len(text)

    def done(self) -> None:
        if self.enabled and self.width:
            print("\r" + " " * self.width + "\r", end="", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m proofs", description=__doc__.splitlines()[0])
    ap.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    ap.add_argument("--defaults-only", action="store_true", help="only the no-modifier layouts")
    ap.add_argument("--quiet", action="store_true", help="no progress line (it is shown only on a terminal anyway)")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    show = _Progress(enabled=args.format == "text" and sys.stderr.isatty() and not args.quiet)
    per_family: Counter[str] = Counter()
    failures: list[str] = []
    all_cases = list(cases(full=not args.defaults_only))
    for i, case in enumerate(all_cases):
        for msgs in prove(case).values():
            failures += msgs
        per_family[case.row.family] += 1
        show("catalog layouts", i + 1, len(all_cases))

    from proofs.kernels import (
        all_index_map_cases,
        emitted_index_maps,
        kernel_cases,
        prove_kernel,
        prove_kernel_static,
        static_kernel_cases,
    )

    idx_cases = all_index_map_cases()
    for i, case in enumerate(idx_cases):
        failures += emitted_index_maps(case)
        show("emitted index maps", i + 1, len(idx_cases))
    kern = list(kernel_cases())
    for i, (mod, k, spec) in enumerate(kern):
        failures += prove_kernel(mod, k, spec)
        show("kernel sizes", i + 1, len(kern))
    static = list(static_kernel_cases())
    for i, (mod, k, spec) in enumerate(static):
        failures += prove_kernel_static(mod, k, spec)
        show("static kernel proofs", i + 1, len(static))
    show.done()
    served = matrix_targets()
    failures += prove_targets()
    secs = time.perf_counter() - t0
    report = {
        "layouts": len(all_cases),
        "obligations": list(OBLIGATIONS),
        "checks": len(all_cases) * len(OBLIGATIONS),
        "per_family": dict(per_family),
        "emitted_index_maps": len(idx_cases),
        "kernel_size_cases": len(kern),
        "kernel_static_cases": len(static),
        "targets": len(served),
        "target_obligations": list(TARGET_OBLIGATIONS),
        "failures": failures,
        "seconds": round(secs, 2),
    }
    if args.format == "json":
        print(json.dumps(report, indent=1))
    else:
        md = args.format == "markdown"
        lines = [("## " if md else "") + "tilesim proofs: catalog layouts", ""]
        lines.append(f"{len(all_cases)} layouts (rows x operands x wave sizes x legal layout-moving modifiers), "
                     f"{len(OBLIGATIONS)} obligations each ({', '.join(OBLIGATIONS)}), {secs:.1f} s.")
        lines.append(f"Emitted index expressions checked on every slot of {len(idx_cases)} catalog layouts; "
                     f"{len(kern)} (example, target, size) kernels write each output once and stay in bounds; "
                     f"{len(static)} more, statically (store layouts x grid x loop trips, no LDS race).")
        lines.append(f"{len(served)} targets with a matrix path are served by the catalog "
                     f"({', '.join(TARGET_OBLIGATIONS)}; proofs/targets.py).")
        lines.append("")
        lines += ["| family | layouts |", "|---|---|"] if md else []
        for fam, n in sorted(per_family.items()):
            lines.append(f"| {fam} | {n} |" if md else f"  {fam:8} {n:6} layouts")
        lines.append("")
        lines.append("All obligations proved." if not failures else f"{len(failures)} FAILURES:")
        lines += [f"  {f}" for f in failures[:50]]
        print("\n".join(lines))
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
