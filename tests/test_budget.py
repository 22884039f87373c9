"""Resource budget (issue 19 item 3): work that would exhaust memory is refused up front, with the
estimate, the limit and the knob — while real work (a 4096^3 GEMM, every example) still passes.

Each oversized case below passed ``check`` on e82022e and then died allocating (MemoryError, or a
multi-GiB table); the expected estimates are computed here from the sizes, not read from the code.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import tilesim as ts
from examples import gemm
from tilesim import budget
from tilesim.errors import BudgetError, InputError, TilesimError
from tilesim.frameworks.gluon import BlockedLayout
from tilesim.layouts.layout import Layout

WMMA = "v_wmma_f32_16x16x16_f16"


def _small() -> ts.Program:
    return gemm.gemm.specialize(target="gfx1201", M=64, N=64, K=64, mma=WMMA)


def _edit(fn) -> ts.Program:
    """The small gfx1201 GEMM through its JSON with one field changed (as a hostile file would)."""
    d = json.loads(_small().to_json())
    fn(d)
    return ts.Program.from_json(json.dumps(d))


def _set_loop(d: dict, stop: int, step: int) -> None:
    loop = next(op for op in d["body"] if op["kind"] == "loop")
    loop["args"][1:] = [stop, step]


OVERSIZED = {
    # 65536^2 f16 A and B and an f32 C: 3 * 2^32 elements, 96 GiB as float64
    "65536^2 tensors": (lambda: gemm.gemm.specialize(target="gfx1201", M=65536, N=65536, K=65536, mma=WMMA),
                        "elements", 3 * 2**32),
    # grid 2^20 x 2^20 of one wave32: 2^45 lanes
    "grid 2^40": (lambda: _edit(lambda d: d.__setitem__("grid", [2**20, 2**20])), "lanes", 2**40 * 32),
    # 16 workgroups x 32 lanes x ((2^31 - 1) trips x 5 loop-body ops + 7 ops outside, the loop op included);
    # loop bounds are 32-bit integers (the op table refuses a 2^36 bound at load)
    "2^31-trip loop": (lambda: _edit(lambda d: _set_loop(d, 2**31 - 1, 1)), "work",
                       16 * 32 * ((2**31 - 1) * 5 + 7)),
}


@pytest.mark.parametrize("case", sorted(OVERSIZED))
@pytest.mark.parametrize("entry", ["check", "simulate"])
def test_oversized_programs_are_refused_before_allocating(case, entry):
    make, name, estimate = OVERSIZED[case]
    prog = make()
    with pytest.raises(BudgetError) as ei:
        if entry == "check":
            ts.check(prog)
        else:
            ts.simulate(prog)  # refused before the (missing) arrays are looked at
    e = ei.value
    assert e.budget == name and e.estimate == estimate and e.limit == budget.limit(name)
    msg = str(e)
    assert str(estimate) in msg and str(e.limit) in msg and f"TILESIM_BUDGET_{name.upper()}" in msg
    assert "\n" not in msg


def test_a_4096_cubed_gemm_and_every_example_fit_the_defaults():
    for target, mma in gemm.CONFIGS:
        big = gemm.gemm.specialize(target=target, M=4096, N=4096, K=4096, mma=mma)
        est = budget.check_program(big)
        # independent arithmetic: tensors 3 * 4096^2; lanes = (4096/m)(4096/n) workgroups x wave size
        assert est["elements"] == 3 * 4096**2
        assert ts.check(big).ok
    import examples

    for mod in ("gemm", "gemm_abt", "fp8_gemm", "int8_gemm", "lds_gemm", "softmax", "port_cdna3", "gemm_planted",
                "sparse_gemm", "batched_small_gemm", "mxfp8_gemm", "mxfp4_gemm", "block_gemm"):
        m = __import__(f"examples.{mod}", fromlist=["programs"])
        for p in m.programs():
            budget.check_program(p)
    assert examples


def test_the_knob_raises_and_lowers_the_limit(monkeypatch):
    prog = _small()  # 3 * 64^2 = 12288 elements
    with budget.limits(elements=12287):
        with pytest.raises(BudgetError, match="12288"):
            ts.check(prog)
    assert ts.check(prog).ok  # the override ends with the block
    monkeypatch.setenv("TILESIM_BUDGET_ELEMENTS", "12287")
    with pytest.raises(BudgetError, match="budget is 12287"):
        ts.simulate(prog, **gemm.inputs(prog))
    monkeypatch.setenv("TILESIM_BUDGET_ELEMENTS", "2**14")
    assert ts.check(prog).ok
    big = OVERSIZED["2^31-trip loop"][0]()
    with budget.limits(work=2**43):
        budget.check_program(big)  # raised far enough, the same program passes the budget


@pytest.mark.parametrize("bad", ["lots", "-5", "0", "2**", "1e9"])
def test_a_malformed_knob_is_a_typed_error(monkeypatch, bad):
    monkeypatch.setenv("TILESIM_BUDGET_WORK", bad)
    with pytest.raises(BudgetError, match="TILESIM_BUDGET_WORK"):
        ts.check(_small())
    with pytest.raises(BudgetError, match="budgets: elements"):
        with budget.limits(wrok=5):
            pass


def test_layouts_of_2_30_positions_are_refused():
    with pytest.raises(BudgetError) as ei:
        Layout.from_function({"lane": 2**15, "slot": 2**15}, {"row": 2**15, "col": 2**15},
                             lambda lane, slot: {"row": lane, "col": slot})
    assert ei.value.estimate == 2**30 and "TILESIM_BUDGET_POSITIONS" in str(ei.value)
    with pytest.raises(BudgetError):  # the logical side alone
        Layout.from_logical({"lane": 32, "slot": 8}, {"row": 2**15, "col": 2**15},
                            lambda row, col: {"lane": row % 32, "slot": col % 8})
    # a Gluon BlockedLayout with 2^18 warps: 64 registers x 32 lanes x 2^18 warps = 2^29 positions
    blocked = BlockedLayout([1, 1], [32, 1], [2**18, 1], [0, 1])
    with pytest.raises(BudgetError) as ei:
        blocked.to_layout([64, 64])
    assert ei.value.estimate == 2**29


def test_a_4096_squared_layout_still_builds():
    lay = Layout.from_bases({"lane": 4096}, {"row": 4096}, {"lane": [[1 << b] for b in range(12)]})
    assert len(lay) == 4096
    assert budget.limit("positions") >= 4096 * 4096  # a whole 4096^2 tensor layout fits


@pytest.mark.parametrize("kwargs, err", [
    ({"random_runs": 2**70}, BudgetError),
    ({"random_runs": float("nan")}, InputError),
    ({"random_runs": -1}, InputError),
    ({"random_runs": True}, InputError),
    ({"max_lines": -5}, InputError),
    ({"max_lines": 0}, InputError),
    ({"max_lines": "16"}, InputError),
])
def test_port_validates_its_proof_arguments(kwargs, err):
    prog = gemm.gemm.specialize(target="gfx942", M=32, N=32, K=32, mma="v_mfma_f32_32x32x8f16")
    with pytest.raises(err) as ei:
        ts.port(prog, "gfx1201", **kwargs)
    (name, value), = kwargs.items()
    assert name in str(ei.value) and isinstance(ei.value, TilesimError)


def test_cli_check_on_an_oversized_program_is_one_line_exit_2(tmp_path):
    prog = OVERSIZED["grid 2^40"][0]()
    f = tmp_path / "big.json"
    f.write_text(prog.to_json())
    r = subprocess.run([sys.executable, "-m", "tilesim.cli", "check", str(f)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and "TILESIM_BUDGET_LANES" in r.stderr
    assert str(2**40 * 32) in r.stderr
