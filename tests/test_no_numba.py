"""A base install without numba (issue 18: numba is the ``fast`` extra): the lookup commands and
the simulator work in a process where importing numba fails, and the simulator gives the bits it
gives with numba. The child blocks ``numba`` and ``llvmlite`` with a ``sys.meta_path`` finder
before importing tilesim, as an environment without the packages would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import tilesim as ts
from examples import gemm as G
from examples import lds_gemm as LG
from tests._recorded_sims import digest

ROOT = Path(__file__).resolve().parents[1]

BLOCK = """
import sys
class _NoNumba:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numba", "llvmlite"):
            raise ImportError("blocked for the test: " + name)
        return None
sys.meta_path.insert(0, _NoNumba())
"""

CHILD = BLOCK + """
import contextlib, io, json
from tilesim.cli import main
codes = {}
for argv in (["targets"], ["instructions", "gfx942"], ["explain", "--arch", "gfx942", "v_mfma_f32_32x32x8f16"],
             ["layout", "--arch", "gfx1201", "--instr", "v_wmma_f32_16x16x16_f16", "--operand", "A"]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    codes[argv[0]] = (code or 0, len(out.getvalue()))
import tilesim as ts
from examples import gemm as G, lds_gemm as LG
from tests._recorded_sims import digest
from tilesim.wave import kernels
p = G.gemm.specialize(target="gfx942", M=64, N=64, K=96, mma="v_mfma_f32_32x32x8f16")
q = LG.programs(64, 64, 96)[0]
sims = {"gemm": digest(ts.simulate(p, **G.inputs(p))), "lds": digest(ts.simulate(q, **LG.inputs(q)))}
print(json.dumps({"codes": codes, "sims": sims, "numba_loaded": "numba" in sys.modules,
                  "kernels": kernels.available()}))
"""


def test_lookups_and_simulate_without_numba() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    p = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert not got["numba_loaded"] and not got["kernels"]
    assert all(code == 0 and size > 100 for code, size in got["codes"].values()), got["codes"]
    prog = G.gemm.specialize(target="gfx942", M=64, N=64, K=96, mma="v_mfma_f32_32x32x8f16")
    lds = LG.programs(64, 64, 96)[0]
    assert got["sims"] == {"gemm": digest(ts.simulate(prog, **G.inputs(prog))),
                           "lds": digest(ts.simulate(lds, **LG.inputs(lds)))}  # this process: numba's kernels
