"""Worker for tests/test_one_source.py: one new catalog row, a twin of an RDNA4 WMMA row.

Run on a copy of tilesim whose ``tilesim/matrix/catalog_amd.py`` has ``ROW_EDIT`` added to the RDNA4
dense list (the only edit): ``v_wmma_twin_f32_16x16x16_f16`` is ``v_wmma_f32_16x16x16_f16`` under
another mnemonic (its builtin name follows: ``__builtin_amdgcn_wmma_twin_…``, which clang does not
know, so nothing here compiles it). Every consumer is asked about the twin and its original on each
RDNA4 target; it prints, per consumer, both answers with the twin's names written as the original's.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

ORIGINAL, TWIN = "v_wmma_f32_16x16x16_f16", "v_wmma_twin_f32_16x16x16_f16"
ROW_EDIT = f'        ("{TWIN}", 16, "f16", "f32", 16, "V8fV8xV8xV8f", "V4fV4xV4xV4f"),\n'
CONSUMERS = ("listed", "row summary", "layouts", "cli explain", "cli explain json", "dsl program", "check",
             "simulate", "emit", "gluon check_layout", "tilelang index maps", "port from gfx1100")


def _answer(fn) -> object:
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - compared, not handled
        return f"{type(e).__name__}: {e}"


def _norm(value: object) -> object:
    text = json.dumps(value, sort_keys=True, default=repr)
    return json.loads(re.sub(r"wmma_twin_", "wmma_", text))  # the mnemonic and the builtin derived from it


def main() -> None:
    import contextlib
    import io

    import numpy as np

    import tilesim as ts
    from tilesim.cli import main as cli_main
    from tilesim.codegen.hip import emit_hip
    from tilesim.frameworks import check_index_maps, check_layout
    from tilesim.matrix import instructions, lookup
    from tilesim.matrix.explain import row_summary
    from tilesim.targets import family_targets

    sys.path.append(str(Path(__file__).resolve().parents[1]))
    from examples import gemm

    def cli(argv: list[str]) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = cli_main(argv)
        return f"exit {code}\n{out.getvalue()}"

    def consumers(mn: str, target: str) -> dict[str, object]:
        row = lookup(mn, target)
        prog = gemm.gemm.specialize(target=target, M=32, N=32, K=32, mma=mn)
        rng = np.random.default_rng(0)
        A = rng.standard_normal((32, 32)).astype(np.float16)
        B = rng.standard_normal((32, 32)).astype(np.float16)
        lay = {f"{op}/w{w}": hashlib.sha256(repr([x.tolist() for x in row.layout(op, wave_size=w).pairs()])
                                            .encode()).hexdigest() for w in row.wave_sizes for op in row.operands}
        return {
            "listed": mn in instructions(target),
            "row summary": row_summary(row),
            "layouts": lay,
            "cli explain": cli(["explain", mn, "--arch", target]),
            "cli explain json": cli(["explain", mn, "--arch", target, "--format", "json"]),
            "dsl program": prog.to_json(),
            "check": repr(ts.check(prog)),
            "simulate": ts.simulate(prog, A=A, B=B)["C"].tobytes().hex(),
            "emit": _answer(lambda: emit_hip(prog).source),
            "gluon check_layout": _answer(lambda: str(check_layout(
                "AMDWMMALayout(version=2, transposed=False, warps_per_cta=[1, 1])", target, instr=mn))),
            "tilelang index maps": _answer(lambda: str(check_index_maps(
                lambda i, j: (i % 16 + 16 * (j // 8 % 2), j % 8), None, (16, 16), 32, 8, 32, instr=mn, arch=target,
                operand="C"))),
            "port from gfx1100": _answer(lambda: ts.port(gemm.gemm.specialize(target="gfx1100", M=32, N=32, K=32),
                                                         target, instr=mn).program.to_json()),
        }

    assert TWIN in instructions("gfx1201"), "run on a copy of tilesim with ROW_EDIT in catalog_amd.py"
    report: dict[str, object] = {"tilesim": ts.__file__}
    for target in family_targets("rdna4"):
        a, b = consumers(TWIN, target), consumers(ORIGINAL, target)
        report[target] = {"real": ORIGINAL, "consumers": {k: [_norm(a.get(k)), _norm(b.get(k))] for k in {**a, **b}}}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
