"""Cold start: a small simulation runs on the numpy fallbacks without importing numba (about 1 s
of import and kernel loading saved on every short ``tilesim run``), a large one loads the
compiled kernels; both give the bits the compiled kernels give (this process loads them from the
first call: conftest sets ``TILESIM_JIT_AFTER=0``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tilesim as ts
from examples import gemm as G
from tests._recorded_sims import digest
from tilesim.wave.kernels import HAVE_NUMBA

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys
import tilesim as ts
from examples import gemm as G
from tests._recorded_sims import digest
out = {}
for n in (64, 256):
    p = G.gemm.specialize(target="gfx942", M=n, N=n, K=n, mma="v_mfma_f32_32x32x8f16")
    out[n] = [digest(ts.simulate(p, **G.inputs(p))), "numba" in sys.modules]
print(json.dumps(out))
"""


@pytest.mark.skipif(not HAVE_NUMBA, reason="the tiers only matter with numba installed")
def test_small_programs_do_not_load_numba_and_large_ones_do() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TILESIM_JIT_AFTER"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    p = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["64"][1] is False and got["256"][1] is True
    for n in (64, 256):
        prog = G.gemm.specialize(target="gfx942", M=n, N=n, K=n, mma="v_mfma_f32_32x32x8f16")
        assert got[str(n)][0] == digest(ts.simulate(prog, **G.inputs(prog)))
