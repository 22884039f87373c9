"""ISA-emulator figures of issue 15: ``python -m benchmarks.isa [--sizes 64,256] [--out PATH]``.

For the GEMM example as WMMA on gfx1201 and as MFMA 32x32x8 on gfx942, at each size: wave-instructions
executed, seconds of emulation (the compile is cached and not counted; the median of ``--reps``
runs), wave-instructions per second, and whether the output equals ``tilesim.simulate``'s bit for
bit. Without the offline AMDGPU clang it says why and exits 0.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

CASES = (("gfx1201", "v_wmma_f32_16x16x16_f16"), ("gfx942", "v_mfma_f32_32x32x8f16"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.isa")
    ap.add_argument("--sizes", default="64,256")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import tilesim as ts
    from examples.gemm import gemm, inputs
    from tilesim.errors import ToolchainError
    from tilesim.isa import emulate_program

    rows = []
    try:
        for target, mma in CASES:
            for n in (int(x) for x in args.sizes.split(",")):
                prog = gemm.specialize(target=target, M=n, N=n, K=n, mma=mma)
                arrays = inputs(prog)
                runs = [emulate_program(prog, arrays) for _ in range(max(1, args.reps))]
                sec = statistics.median(r.seconds for r in runs)
                same = bool(np.array_equal(runs[0]["C"], ts.simulate(prog, **arrays)["C"]))
                rows.append({"target": target, "instruction": mma, "size": n,
                             "wave_instructions": runs[0].instructions, "seconds": round(sec, 3), "wave_instructions_per_s": round(runs[0].instructions / sec),
                             "bit_exact_to_simulator": same})
                print(f"{target:8} {mma:26} {n}^3: {runs[0].instructions:>9,} wave-instr  {sec:6.2f} s  "
                      f"{runs[0].instructions / sec:>10,.0f}/s  bit-exact={same}")
    except ToolchainError as e:
        print(f"skipped: {e}")
        rows = [{"skipped": str(e)}]
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
