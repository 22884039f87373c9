"""Malformed inputs (issue 19 item 4) meet a typed error naming the bad value and the valid choices:
through the API a ``TilesimError``, through the CLI exit 2 with one ``tilesim: error:`` line and no
traceback. On e82022e each case below was a raw ValueError/TypeError/KeyError, or — worse — silently
accepted (``restrict(lane=-1)`` returned an empty layout, ``trace=(99,)`` traced nothing).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tilesim as ts
from examples import gemm
from tilesim.errors import InputError, LayoutError, TilesimError

WMMA = "v_wmma_f32_16x16x16_f16"


def _prog() -> ts.Program:
    return gemm.gemm.specialize(target="gfx1201", M=32, N=32, K=32, mma=WMMA)


def _arrays(**over):
    rng = np.random.default_rng(0)
    a = {"A": rng.standard_normal((32, 32)).astype(np.float16), "B": rng.standard_normal((32, 32)).astype(np.float16)}
    a.update(over)
    return a


# ------------------------------------------------------------------ Layout.restrict
@pytest.mark.parametrize("value", [[1, 2], -1, 2**70, float("nan"), "3", 1.0, True, 32, None, np.array([0])],
                         ids=repr)
def test_restrict_refuses_anything_but_one_index_in_range(value):
    lay = _prog().body.ops[2].out.layout  # the accumulator: lane 0..31, slot 0..7
    assert dict(lay.in_dims)["lane"] == 32
    with pytest.raises(LayoutError) as ei:
        lay.restrict(lane=value)
    msg = str(ei.value)
    assert "lane=" in msg and "0..31" in msg and "\n" not in msg


def test_restrict_still_keeps_one_lane():
    lay = _prog().body.ops[2].out.layout
    for lane in (0, 17, np.int64(31)):
        r = lay.restrict(lane=lane)
        hw, lg = r.pairs()
        # RDNA4 wave32 C/D: lane l holds column l % 16, rows 8*(l // 16) + slot (one row per slot)
        assert sorted(map(tuple, lg[:, 1:].tolist())) == [(8 * (int(lane) // 16) + s, int(lane) % 16) for s in range(8)]


# ------------------------------------------------------------------ simulate
SIM_CASES = {
    "object array of text": (_arrays(A=np.full((32, 32), "x", object)), (), "tensor A"),
    "text array": (_arrays(A=np.full((32, 32), "x")), (), "tensor A"),
    "bytes array": (_arrays(B=np.full((32, 32), b"x")), (), "tensor B"),
    "complex array": (_arrays(A=np.ones((32, 32), complex)), (), "complex"),
    "a string for an array": (_arrays(A="1.0"), (), "tensor A"),
    "unknown tensor": (_arrays(Z=np.zeros(3)), (), "tensors: A, B, C"),
    "trace of a name": (_arrays(), ("x",), "fragment ids"),
    "trace of no fragment": (_arrays(), (99,), "fragment ids"),
    "trace of a bool": (_arrays(), (True,), "fragment ids"),
    "trace not a tuple": (_arrays(), 3, "trace must be"),
    "trace a string": (_arrays(), "3", "trace must be"),
}


@pytest.mark.parametrize("case", sorted(SIM_CASES))
def test_simulate_refuses_malformed_inputs(case):
    arrays, trace, names = SIM_CASES[case]
    with pytest.raises(InputError) as ei:
        ts.simulate(_prog(), trace=trace, **arrays)
    assert names in str(ei.value) and "\n" not in str(ei.value)


def test_simulate_still_takes_lists_and_object_arrays_of_numbers_and_traces_a_fragment():
    prog = _prog()
    good = _arrays()
    acc = next(op for op in prog.walk() if op.kind == "mma").out.id
    res = ts.simulate(prog, trace=[acc], A=good["A"].tolist(), B=good["B"].astype(object))
    want = good["A"].astype(np.float64) @ good["B"].astype(np.float64)
    assert np.allclose(res["C"], want, atol=1e-2) and len(res.trace[acc]) == 2  # two k-steps of 16


# ------------------------------------------------------------------ port
@pytest.mark.parametrize("kwargs", [{"random_runs": float("nan")}, {"max_lines": -5}, {"random_runs": "3"}],
                         ids=repr)
def test_port_refuses_malformed_proof_arguments(kwargs):
    prog = gemm.gemm.specialize(target="gfx942", M=32, N=32, K=32, mma="v_mfma_f32_32x32x8f16")
    with pytest.raises(TilesimError) as ei:
        ts.port(prog, "gfx1201", **kwargs)
    assert next(iter(kwargs)) in str(ei.value)


# ------------------------------------------------------------------ CLI: the user's reference()
_MODULE = '''
import numpy as np
import tilesim as ts
from examples.gemm import gemm

def programs():
    return [gemm.specialize(target="gfx1201", M=32, N=32, K=32, mma="v_wmma_f32_16x16x16_f16")]

def reference(A, B):
    C = A.astype(np.float64) @ B.astype(np.float64)
    return {BODY}
'''

REFERENCES = {
    "a list": ("[C]", "must return a dict"),
    "a number": ("3.0", "must return a dict"),
    "wrong shape": ('{"C": C[:16]}', "has shape (16, 32)"),
    "transposed 1-D": ('{"C": C.ravel()}', "has shape (1024,)"),
    "unknown output": ('{"D": C}', "outputs: C"),
    "an input name": ('{"A": A}', "outputs: C"),
    "text": ('{"C": np.full((32, 32), "x")}', "not a real numeric array"),
    "complex": ('{"C": C + 1j}', "not a real numeric array"),
}


@pytest.mark.parametrize("command", [["simulate"], ["run", "--device", "none"]])
@pytest.mark.parametrize("case", sorted(REFERENCES))
def test_cli_refuses_a_malformed_reference(tmp_path, command, case):
    body, words = REFERENCES[case]
    pkg = tmp_path / "user"
    pkg.mkdir()
    f = pkg / "kern.py"
    f.write_text(textwrap.dedent(_MODULE.replace("{BODY}", body)))
    import os

    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "tilesim.cli", *command[:1], str(f), *command[1:]],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    assert r.stderr.startswith("tilesim: error: ") and words in r.stderr and "reference()" in r.stderr


@pytest.mark.parametrize("kwargs", [{"random_runs": float("nan")}, {"max_lines": -5}, {"random_runs": 2**70}],
                         ids=repr)
def test_equivalent_refuses_malformed_proof_arguments(kwargs):
    prog = _prog()
    with pytest.raises(TilesimError) as ei:
        ts.equivalent(prog, prog, **kwargs)
    assert next(iter(kwargs)) in str(ei.value)
