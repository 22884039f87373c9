"""Worker for tests/test_one_source.py: one new elementwise row, ``square``, in a copy of the op table.

Run in a fresh interpreter on a copy of tilesim whose ``tilesim/ir/ops.py`` has ``ROW_EDIT`` added to
``ELEMENTWISE`` (the only edit). It asks each consumer of the op table to handle the new op: the DSL
(``ts.square`` and ``ts.elementwise("square", …)``), the IR's JSON round trip and the verifier
(``check``), the simulator, the generator (its source, compiled with the offline clang and run in the
ISA emulator), and the testing strategies. Expected values are float64 numpy of ``x * x``, written
here, not read from the row. It prints one JSON object: consumer -> [ok, what it saw].
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np

# the one edit, inserted before the closing ")" of ELEMENTWISE in tilesim/ir/ops.py
ROW_EDIT = ('    Elementwise("square", 1, lambda a, b: a * a, "{a} * {a}", dsl="square", test_constants=(0,),\n'
            '                doc="x*x, element by element.", c_int="(long long)((ts_u64){a} * (ts_u64){a})"),\n')


def _answer(fn) -> object:
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - reported, compared by the test
        return f"{type(e).__name__}: {e}"


def main() -> None:
    import tilesim as ts
    from tilesim.codegen.hip import emit_hip
    from tilesim.ir.core import Program
    from tilesim.matrix import lookup

    lay = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")
    x = np.linspace(-3.5, 3.5, 256).reshape(16, 16).astype(np.float32)
    want = (x.astype(np.float64) * x.astype(np.float64)).astype(np.float32)

    def program(through_dsl: bool):
        @ts.kernel
        def sq(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
            f = ts.load(X[0:, 0:], lay)
            ts.store(Y[0:, 0:], ts.square(f) if through_dsl else ts.elementwise("square", f))

        return sq.specialize(target="gfx1201", M=16, N=16)

    out: dict[str, object] = {"tilesim": ts.__file__}
    prog = _answer(lambda: program(True))
    out["dsl function"] = [not isinstance(prog, str) and "square" in ts.__all__, str(prog)[:200]]
    other = _answer(lambda: program(False))
    out["dsl elementwise"] = [not isinstance(other, str) and other.to_json() == prog.to_json(), str(other)[:200]]
    if isinstance(prog, str):
        print(json.dumps(out))
        return
    back = _answer(lambda: Program.from_json(prog.to_json()))
    out["ir json round trip"] = [not isinstance(back, str) and back.to_json() == prog.to_json(), str(back)[:200]]
    report = ts.check(prog)
    out["verifier (check)"] = [not report.errors, repr(report.errors)[:300]]
    sim = _answer(lambda: ts.simulate(prog, X=x)["Y"])
    out["simulator"] = [not isinstance(sim, str) and bool(np.array_equal(sim, want)), str(sim)[:200]]
    src = _answer(lambda: emit_hip(prog).source)
    # the row's template over the fragment's register: "ts_f32(f.r[i]) * ts_f32(f.r[i])"
    squared = re.search(r"ts_f32\((\w+)\.r\[i\]\) \* ts_f32\(\1\.r\[i\]\)", src) if isinstance(src, str) else None
    out["generator source"] = [squared is not None, src[-400:] if isinstance(src, str) else src]
    emu = _answer(lambda: ts.emulate_program(prog, X=x)["Y"])
    out["generator compiled and emulated"] = [not isinstance(emu, str) and bool(np.array_equal(emu, want)),
                                              str(emu)[:200]]
    from tilesim.testing._programs import EPILOGUE_OPS

    out["testing strategies"] = [EPILOGUE_OPS.get("square") == (0,), repr(sorted(EPILOGUE_OPS))]
    print(json.dumps(out))


if __name__ == "__main__":
    sys.path.append(str(Path(__file__).resolve().parents[1]))
    main()
