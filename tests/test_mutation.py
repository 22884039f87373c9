"""The mutation campaign's CI slice (``python tools/mutation.py --quick``) and its program surgery.

The slice plants real single-point layout bugs (lanes swapped, a VGPR off by one, packed halves
swapped, RDNA3 replicas dropped, the gfx11/gfx12 accumulator formula swapped, K permutations,
barriers removed) into one program per example and requires every bug to be found and blamed. A bug
is judged without the simulator (a float64 register model over independent hardware layouts), and
catalog rows are mutated too, which only independent golden data can catch.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

import tilesim as ts
from examples import gemm, lds_gemm
from tilesim.matrix import lookup

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("tilesim_tools_mutation", ROOT / "tools" / "mutation.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


mutation = _tool()


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("mutation") / "results.json"
    rc = mutation.main(["--quick", "--json", str(out)])
    return rc, json.loads(out.read_text())


def test_quick_slice_detects_and_blames_every_bug(quick):
    rc, doc = quick
    s = doc["summary"]
    assert rc == 0
    assert s["mode"] == "quick" and s["programs"] >= 6
    assert s["baselines_clean"] == s["programs"]  # the unmutated programs raise no alarm
    assert s["bugs"] >= 50 and s["result_changing"] >= 40 and s["hazards"] >= 2
    assert s["detected"] == s["bugs"] and s["detection_rate"] == 1.0
    assert s["exact_blame"] == s["detected"] and not doc["inexact"] and not doc["failures"]
    assert not doc["escaped"]
    # most bugs are judged by the register model over AMD-calculator layouts, not by the simulator
    assert s["truth_sources"].get("register model (golden)", 0) >= 50
    assert s["model_disagrees_with_simulator"] == 0
    ops = doc["by_operator"]
    for op in ("lane_swap", "vgpr_off_by_one", "slot_swap", "replication_drop", "formula_swap", "k_perm_one",
               "k_perm_shared", "barrier_drop"):
        assert ops[op]["mutants"] > 0, op
    assert ops["barrier_drop"]["detected"] == ops["barrier_drop"]["mutants"]


def test_quick_slice_shared_k_permutations_are_equivalent_and_warned(quick):
    _, doc = quick
    shared = [r for r in doc["mutants"] if r["operator"] == "k_perm_shared"]
    assert shared
    for r in shared:
        assert not r["result_changing"] and not r["check_errors"], r["mutant"]
        assert r["equivalent_warning"], r["mutant"]
    assert doc["summary"]["k_perm_shared_warned"] == len(shared)


def test_report_has_the_fields(quick):
    _, doc = quick
    assert set(doc) >= {"summary", "by_operator", "baselines", "escaped", "inexact", "mutants"}
    assert set(doc["summary"]) >= {"mutants", "bugs", "detected", "detection_rate", "exact_blame",
                                   "exact_blame_rate", "result_preserving", "k_perm_shared_warned", "seconds"}
    r = doc["mutants"][0]
    assert set(r) >= {"mutant", "operator", "operand", "how", "result_changing", "bug", "detected", "exact_blame",
                      "blame", "check_errors", "caught_by_diff"}
    assert {r["how"] for r in doc["mutants"]} == {"respecialised", "direct"}


def test_replace_layouts_equals_respecialising_with_the_layout():
    mma = "v_wmma_f32_16x16x16_f16"
    prog = gemm.gemm.specialize(target="gfx1100", M=32, N=32, K=32, mma=mma)
    a = lookup(mma, "gfx1100").layout("A")
    bad = mutation._lane_swap(a, 5, 6)
    fam = next(f for f in mutation.layout_families(prog) if f["feeds"] == [("A", mma)])
    direct = mutation.replace_layouts(prog, {m: bad for m in fam["members"]})
    assert direct == gemm.gemm.specialize(target="gfx1100", M=32, N=32, K=32, mma=mma, a_layout=bad)
    assert direct != prog
    # the C family reaches the mma result and the loop-carried accumulator
    fam_c = next(f for f in mutation.layout_families(prog) if f["feeds"] == [("C", mma)])
    mma_out = next(op.out.id for op in prog.walk() if op.kind == "mma")
    assert mma_out in fam_c["members"] and len(fam_c["members"]) == 2


def test_drop_op_of_the_loop_barrier_equals_drop_barrier_option():
    prog = lds_gemm.programs()[0]
    loop = next(op for op in prog.walk() if op.kind == "loop")
    inner = next(o for o in loop.attr("body").ops if o.kind == "barrier")
    i = next(i for i, op in enumerate(prog.walk()) if op is inner)
    assert mutation.drop_op(prog, i) == lds_gemm.programs(drop_barrier=True)[0]


def test_mutated_positions_of_a_lane_swap():
    d = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("D")
    pos = mutation.mutated_positions(d, mutation._lane_swap(d, 5, 6))
    assert pos == {(lane, v) for lane in (5, 6) for v in range(8)}
    assert mutation.mutated_positions(d, d) == set()


def test_an_ill_formed_elementwise_program_is_rejected_by_check():
    # A softmax whose second fragment is declared with lanes 5 and 6 exchanged: the DSL refuses this
    # when tracing, a program mutated or loaded from JSON must be refused by check.
    from examples import softmax

    prog = softmax.programs()[0]
    fams = mutation.layout_families(prog)
    fam = fams[1]
    bad = mutation._lane_swap(fam["root"].layout, 5, 6)
    rep = ts.check(mutation.replace_layouts(prog, {m: bad for m in fam["members"]}))
    assert rep.errors  # x1 meets m (x0's layout) in maximum and in x1 - m
    for err in rep.errors:
        assert "different layouts" in err.message and "lanes involved: 5-6" in err.message, err
    assert ts.check(prog).ok


def test_quick_slice_catalog_mutants_are_caught_by_golden_data_only(quick):
    _, doc = quick
    s = doc["summary"]
    assert s["catalog_mutants"] >= 200 and s["catalog_caught_by_golden"] == s["catalog_mutants"]
    assert s["catalog_exact_blame"] == s["catalog_mutants"] and s["catalog_baseline_mismatches"] == 0
    ops = doc["catalog"]["by_operator"]
    assert {"lane_swap", "vgpr_off_by_one", "slot_swap", "k_perm_one", "formula_swap"} <= set(ops)
    # the issue-19 plant: tilesim's own check says OK under it, the calculator's layouts do not
    plant = doc["catalog_plant"]
    assert plant["golden_catches_C"] and plant["golden_catches_D"] and plant["check_ok_under_the_plant"]


def test_register_model_is_independent_of_the_simulator():
    mma = "v_wmma_f32_16x16x16_f16"
    prog = gemm.gemm.specialize(target="gfx1201", M=16, N=16, K=16, mma=mma)
    row = lookup(mma, "gfx1201")
    lay = {x: row.layout(x) for x in "ABC"}
    assert mutation.model_truth(prog, mma, lay, c_loaded=False) == (False, "register model (golden hardware layouts)")
    for x in "ABC":
        bad = dict(lay, **{x: mutation._lane_swap(lay[x], 5, 6)})
        assert mutation.model_truth(prog, mma, bad, c_loaded=False)[0], x
    perm = mutation._k_swap(16)  # the same K permutation on A and B: the product is unchanged
    shared = dict(lay, A=mutation._k_perm(lay["A"], "col", perm), B=mutation._k_perm(lay["B"], "row", perm))
    assert not mutation.model_truth(prog, mma, shared, c_loaded=False)[0]
    # the model reads the calculator's layouts: a catalog bug does not fool it
    from tools._catalog_mutants import installed

    with installed(row, "D", 32, mutation._lane_swap(row.layout("D"), 5, 6)):
        assert not mutation.model_truth(prog, mma, lay, c_loaded=False)[0]  # golden D, declared = true C


def test_wrong_blame_fails_the_campaign(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(mutation, "QUICK", {("gemm", 1)})
    monkeypatch.setattr(mutation, "_check_blame", lambda m, errors: (False, "planted: wrong place"))
    monkeypatch.setattr(mutation, "run_catalog_mutants", lambda ops, quick: _tiny_catalog(ops))
    assert mutation.main(["--quick", "--json", str(tmp_path / "r.json")]) == 1
    doc = json.loads((tmp_path / "r.json").read_text())
    assert any("blamed the wrong place" in f for f in doc["failures"])


def test_catalog_mutants_judged_by_the_catalog_itself_fail_the_campaign(monkeypatch):
    """If the 'golden' data were the catalog's own layouts, no catalog mutant could be caught."""
    import tools._catalog_mutants as cm
    from tests import _golden

    def self_records(spellings, target, operand, wave, **mods):
        row = lookup(spellings[0], target)
        return row.layout(operand, wave_size=wave).location_array(), "the catalog itself"

    monkeypatch.setattr(_golden, "records", self_records)
    doc = cm.run_catalog_mutants(mutation.CATALOG_OPS, quick=True)
    assert doc["summary"]["mutants"] > 0 and doc["summary"]["caught_by_golden"] == 0


def test_zero_over_zero_is_reported_as_such():
    assert mutation._rate(0, 0) is None and mutation._rate(3, 4) == 0.75
    assert mutation._frac(0, 0) == "0/0"
    doc = {"summary": {"bugs": 0, "catalog_mutants": 0, "detected": 0, "exact_blame": 0, "k_perm_shared_warned": 0,
                       "k_perm_shared": 0, "baselines_clean": 0, "programs": 0, "model_disagrees_with_simulator": 0,
                       "catalog_caught_by_golden": 0, "catalog_exact_blame": 0, "catalog_baseline_mismatches": 0}}
    assert mutation.verdict(doc) == ["nothing to judge: 0 program bugs, 0 catalog mutants"]


def _tiny_catalog(ops):
    import tools._catalog_mutants as cm

    real = cm.instructions
    try:
        cm.instructions = lambda target: real(target)[:1]
        return cm.run_catalog_mutants(ops, quick=True)
    finally:
        cm.instructions = real
