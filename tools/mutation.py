"""Mutation campaign: plant single-point layout bugs in every example and check that tilesim finds them.

Run: ``python tools/mutation.py [--quick] [--json PATH]`` (writes ``tools/mutation_results.json``
unless ``--json`` says otherwise, prints a table, exits 1 when a result-changing mutant escapes).

For every example program (``examples/*.py`` ``programs()``, every target) the campaign finds the
fragment layouts the program declares — the layouts of its ``load``, ``zeros`` and ``lds_load``
values, each with everything that inherits it (the ``mma`` result from its C operand, ``cast``,
``elementwise``, ``reduce``, ``shuffle`` results, loop-carried pairs) — and derives mutants:

=================  ==========================================================================
operator           what changes
=================  ==========================================================================
lane_swap          two neighbouring lanes exchange everything they hold
vgpr_off_by_one    in one lane, every element moves one VGPR up (slot + slots-per-VGPR, mod)
slot_swap          in one lane, the two lowest packed elements of VGPR 0 exchange bits
replication_drop   gfx1100 A/B: the copies in lanes 16-31 are not loaded
formula_swap       gfx1100/gfx1201 C: the other generation's accumulator layout is declared
k_perm_one         A or B alone: logical k 1 and K-2 exchange (a K permutation on one operand)
k_perm_shared      the same k exchange on A and B (the product is unchanged)
barrier_drop       one LDS barrier removed (``examples/lds_gemm.py``: ``drop_barrier=True``
                   for the loop barrier, direct removal for the others)
=================  ==========================================================================

``examples/gemm.py`` takes ``a_layout``/``b_layout``/``c_layout`` options, so its mutants are
re-specialised with the mutated layout; the other examples' programs are mutated directly
(:func:`replace_layouts` rewrites one value's layout everywhere it occurs, by id).

Each mutant is classified by ground truth — its simulated outputs against the original
program's on random inputs *and* structured probes (one-hot "select k" operands for GEMMs,
row-distinct ramps for softmax), compared exactly — as **result-changing** or
**result-preserving**, and judged:

* *detected*: ``ts.check`` reports an error, or the simulated outputs on the example's random
  inputs differ from its float64/int reference beyond ``run()``'s tolerance, or the simulator
  reports a race or a replication violation;
* *exact blame* (definitions in ``docs/reliability.md``): the first report that catches the
  mutant points at a mutated (lane, VGPR) — see :func:`_check_blame` and :func:`_diff_blame`;
* result-preserving ``k_perm_shared`` mutants must draw ``check``'s warning "equivalent, but not
  the hardware layout" and no error.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import tilesim as ts
from examples import fp8_gemm, gemm, gemm_abt, int8_gemm, lds_gemm, softmax
from tilesim.diff.reference import beyond, result_tolerance
from tilesim.diff.verdict import blame
from tilesim.errors import TilesimError
from tilesim.ir.core import Program, Value
from tilesim.layouts import Layout
from tilesim.matrix import lookup
from tools._catalog_mutants import run_catalog_mutants, self_consistency_demo, wmma_sibling  # noqa: E402
from tools._layout_mutants import (  # noqa: E402
    replace_layouts,
    drop_op,
    layout_families,
    _lane_swap,
    _vgpr_off_by_one,
    _slot_swap,
    _drop_upper_lanes,
    _k_perm,
    _k_swap,
    mutated_positions,
    _moved_lanes,
    _mma_row,
    model_truth,
)

__all__ = ["drop_op", "layout_families", "main", "mutants", "replace_layouts", "run_campaign"]

# example -> (output, A input, B input, B stored N x K, extra inputs zeroed in probes); None: not a GEMM
EXAMPLES: dict[str, tuple[Any, tuple | None]] = {
    "gemm": (gemm, ("C", "A", "B", False, ())),
    "gemm_abt": (gemm_abt, ("D", "A", "B", True, ("C",))),
    "lds_gemm": (lds_gemm, ("C", "A", "B", False, ())),
    "int8_gemm": (int8_gemm, ("C", "A", "B", False, ("Bias",))),
    "fp8_gemm": (fp8_gemm, ("C", "A", "B", False, ())),
    "softmax": (softmax, None),
}
# examples/gemm_planted.py is not a source of mutants: its programs are mutants already.

DEFAULT_JSON = ROOT / "tools" / "mutation_results.json"


# ----------------------------------------------------------------------------- mutant generation
@dataclasses.dataclass
class Mutant:
    example: str
    program: Program  # the original
    index: int  # which of the example's programs
    operator: str
    operand: str  # A / B / C / A+B / free:<tensor> / barrier
    how: str  # respecialised | direct
    mutant: Program
    changes: dict[int, tuple[Layout, Layout]]  # family root id -> (original, mutated) layout
    dropped: int | None = None  # walk index of a dropped barrier

    @property
    def name(self) -> str:
        return f"{self.example}/{self.program.target}#{self.index}/{self.operand}/{self.operator}"




def _operand_mutations(prog: Program, fam: dict[str, Any]) -> list[tuple[str, Layout]]:
    """(operator, mutated layout) for one declared layout family."""
    root: Value = fam["root"]
    lay = root.layout
    roles = {r for r, _ in fam["feeds"]}
    role = next(iter(roles)) if len(roles) == 1 else None
    instr = fam["feeds"][0][1] if fam["feeds"] else None
    if role is not None:  # mutate in the instruction's element width (the layout the user passes in)
        hwl = _mma_row(prog, instr).layout(role, wave_size=prog.wave_size)
        lay = lay.with_elem_bits(hwl.elem_bits)
    lanes = dict(lay.in_dims)["lane"]
    out = [("lane_swap", _lane_swap(lay, 5, 6)), ("vgpr_off_by_one", _vgpr_off_by_one(lay, 9))]
    if lay.elem_bits < 32:
        out.append(("slot_swap", _slot_swap(lay, 3)))
    if role in ("A", "B") and lanes == 32 and not hwl.is_injective():  # RDNA3: lanes 16-31 repeat 0-15
        out.append(("replication_drop", _drop_upper_lanes(lay)))
    # RDNA3 and RDNA4 WMMA place C differently: plant the other generation's C (a target of the table
    # with the other feature, so a new target of either family is planted too)
    other = wmma_sibling(prog.target)
    if role == "C" and other is not None:
        try:
            alt = lookup(instr, other).layout("C", wave_size=prog.wave_size)
            out.append(("formula_swap", alt.with_elem_bits(lay.elem_bits)))
        except TilesimError:
            pass  # the other generation lacks the instruction (fp8 WMMA is gfx12 only)
    if role in ("A", "B"):
        row = _mma_row(prog, instr)
        out.append(("k_perm_one", _k_perm(lay, "col" if role == "A" else "row", _k_swap(row.k))))
    return [(op, m) for op, m in out if m != lay]  # a no-op is not a mutant


def _respecialise(example: str, prog: Program, **opts: Any) -> Program:
    kern = {"gemm": gemm.gemm, "lds_gemm": lds_gemm.lds_gemm}[example]
    mma = next(op.attr("instr") for op in prog.walk() if op.kind == "mma")
    extra = dict(lds_gemm.SMEM["swizzled"]) if example == "lds_gemm" else {}
    return kern.specialize(target=prog.target, wave_size=prog.wave_size, mma=mma, **dict(prog.sizes), **extra, **opts)


def mutants(example: str, index: int, prog: Program) -> list[Mutant]:
    fams = layout_families(prog)
    out: list[Mutant] = []
    by_role: dict[str, dict] = {}
    for fam in fams:
        roles = {r for r, _ in fam["feeds"]}
        label = next(iter(roles)) if len(roles) == 1 else f"free:{fam['tensor'] or fam['op']}%{fam['root'].id}"
        if len(roles) == 1:
            by_role[label] = fam
        for opname, mut in _operand_mutations(prog, fam):
            new = {m: mut for m in fam["members"]}
            how = "direct"
            mp = replace_layouts(prog, new)
            if example == "gemm" and label in ("A", "B", "C"):
                mp = _respecialise(example, prog, **{f"{label.lower()}_layout": mut})
                how = "respecialised"
            out.append(Mutant(example, prog, index, opname, label, how, mp,
                              {fam["root"].id: (fam["root"].layout, mut)}))
    if "A" in by_role and "B" in by_role:
        fa, fb = by_role["A"], by_role["B"]
        instr = fa["feeds"][0][1]
        row = _mma_row(prog, instr)
        la = fa["root"].layout.with_elem_bits(row.layout("A", wave_size=prog.wave_size).elem_bits)
        lb = fb["root"].layout.with_elem_bits(row.layout("B", wave_size=prog.wave_size).elem_bits)
        perm = _k_swap(row.k)
        ma, mb = _k_perm(la, "col", perm), _k_perm(lb, "row", perm)
        if example == "gemm":
            mp, how = _respecialise(example, prog, a_layout=ma, b_layout=mb), "respecialised"
        else:
            mp, how = replace_layouts(prog, {**{m: ma for m in fa["members"]}, **{m: mb for m in fb["members"]}}), "direct"
        out.append(Mutant(example, prog, index, "k_perm_shared", "A+B", how, mp,
                          {fa["root"].id: (fa["root"].layout, ma), fb["root"].id: (fb["root"].layout, mb)}))
    barriers = [i for i, op in enumerate(prog.walk()) if op.kind == "barrier"]
    loop_barriers = set()
    for op in prog.walk():
        if op.kind == "loop":
            inner = [o for o in op.attr("body").ops if o.kind == "barrier"]
            loop_barriers |= {id(o) for o in inner}
    walk = prog.walk()
    for i in barriers:
        if example == "lds_gemm" and id(walk[i]) in loop_barriers:
            mp, how = _respecialise(example, prog, drop_barrier=True), "respecialised"
        else:
            mp, how = drop_op(prog, i), "direct"
        out.append(Mutant(example, prog, index, "barrier_drop", "barrier", how, mp, {}, dropped=i))
    return out


# ----------------------------------------------------------------------------- inputs and judging
def _probe_sets(example: str, prog: Program) -> list[dict[str, np.ndarray]]:
    """Structured inputs whose outputs are exact small integers (GEMMs) or row-separable (softmax)."""
    spec = EXAMPLES[example][1]
    np_of = {t.name: _np_dtype(t.dtype) for t in prog.tensors}
    if spec is None:
        M, N = prog.tensor("X").shape
        r, c = np.arange(M)[:, None], np.arange(N)[None, :]
        return [{"X": (40.0 * (r % 5) - 0.5 * ((7 * c + 3 * r) % N)).astype(np.float32)}]
    _, a, b, bt, extra = spec
    M, K = prog.tensor(a).shape
    N = prog.tensor(b).shape[0 if bt else 1]
    i, j, k = np.arange(M)[:, None], np.arange(N)[None, :], np.arange(K)
    sets = []
    for enc in (k % 16 + 1, k // 16 + 1):
        code = enc.astype(np.float64)
        for s in range(0, K, min(M, N)):
            for A, B in (((k[None, :] == (i + s) % K).astype(np.float64), code[:, None] * (1 + j % 2)),
                         (code[None, :] * (1 + i % 2), (k[:, None] == (j + s) % K).astype(np.float64))):
                arr = {a: A.astype(np_of[a]), b: (B.T if bt else B).astype(np_of[b])}
                arr.update({e: np.zeros(prog.tensor(e).shape, np_of[e]) for e in extra})
                sets.append(arr)
    return sets


def _np_dtype(dt: str):
    return {"f16": np.float16, "f32": np.float32, "i8": np.int8, "i32": np.int32}.get(dt, np.float32)


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    for k, v in a.items():
        x, y = np.asarray(v, np.float64), np.asarray(b[k], np.float64)
        if not ((x == y) | (np.isnan(x) & np.isnan(y))).all():
            return False
    return True


_POS = re.compile(r"lane (\d+), VGPR (\d+)")
_LANESET = re.compile(r"(?:lanes involved|replicas missing in lanes|program differs on lanes): ?([0-9, \-]+)")


def _parse_ranges(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def _check_blame(m: Mutant, findings: list) -> tuple[bool, str]:
    """Exact when an error names the mutated operand, at least one (lane, VGPR) it names is a mutated
    position, and any lane list it gives holds every mutated lane and only lanes holding a moved element."""
    want_ops = {"A+B": ("A", "B")}.get(m.operand, (m.operand,))
    for f in findings:
        if f.severity != "error":
            continue
        for orig, mut in m.changes.values():
            hw_bits = None  # the instruction's element width for the mutated operand (free layouts: their own)
            for op in (_op for _op in m.program.walk() if _op.kind == "mma"):
                for name in "ABC"[: len(op.args)]:
                    if name in want_ops:
                        hw_bits = _mma_row(m.program, op.attr("instr")).layout(name, wave_size=m.program.wave_size).elem_bits
            o = orig.with_elem_bits(hw_bits or orig.elem_bits)
            u = mut.with_elem_bits(hw_bits or orig.elem_bits)
            M = mutated_positions(o, u)
            named = {(int(a), int(b)) for a, b in _POS.findall(f.message)}
            if m.operand in ("A", "B", "C") and f"operand {m.operand}" not in f.where:
                continue
            if not named & M:
                continue
            sets = [_parse_ranges(s) for s in _LANESET.findall(f.message)]
            lanes_m = {lane for lane, _ in M}
            allowed = _moved_lanes(o, u) | lanes_m
            if all(lanes_m <= s <= allowed for s in sets):
                return True, f"check: {f.where}"
    return False, "check error does not name a mutated (lane, VGPR)"


def _diff_blame(m: Mutant, res, out_name: str, bad: np.ndarray, got: np.ndarray, ref: np.ndarray) -> tuple[bool, str]:
    lines, _ = blame(res, out_name, bad, got, expected=ref, limit=1)
    if not lines:
        return False, "no blame line"
    first = lines[0]
    pos = _POS.search(first)
    for orig, mut in m.changes.values():
        M = mutated_positions(orig, mut)
        if m.operand in ("A", "B"):
            lm = re.search(rf"{m.operand} lanes ([0-9, \-]+)", first)
            if lm and _parse_ranges(lm.group(1)) & {lane for lane, _ in M}:
                return True, "diff: operand lanes"
        elif pos and (int(pos.group(1)), int(pos.group(2))) in M:
            return True, "diff: store lane/VGPR"
    return False, f"diff blame elsewhere: {first[:120]}"


def _truth(m: Mutant, post: Any = None) -> tuple[bool | None, str]:
    """(bug, how judged) without the simulator, or (None, ...) when the model does not apply."""
    if m.operator in HAZARDS:
        return True, "hazard by construction (data race / RDNA3 replica not written)"
    fams = {f["root"].id: f for f in layout_families(m.program)}
    roles: dict[str, dict] = {}
    for f in fams.values():
        rs = {r for r, _ in f["feeds"]}
        if len(rs) == 1:
            roles[next(iter(rs))] = f
    changed = [fams[i] for i in m.changes]
    if not all(len({r for r, _ in f["feeds"]}) == 1 for f in changed) or set(roles) != {"A", "B", "C"}:
        return None, "free layout: not modelled"
    instr = roles["A"]["feeds"][0][1]
    row = _mma_row(m.program, instr)
    if row.blocks != 1:
        return None, "multi-block instruction: not modelled"
    declared = {}
    for x, f in roles.items():
        lay = m.changes[f["root"].id][1] if f["root"].id in m.changes else f["root"].layout
        declared[x] = lay.with_elem_bits(row.layout(x, wave_size=m.program.wave_size).elem_bits)
    return model_truth(m.program, instr, declared, c_loaded=roles["C"]["op"] != "zeros", post=post)


class _Baseline:
    def __init__(self, example: str, prog: Program) -> None:
        mod = EXAMPLES[example][0]
        self.example, self.prog = example, prog
        self.random = mod.inputs(prog, seed=0)
        self.ref = mod.reference(**self.random)
        self.probes = _probe_sets(example, prog)
        self.sets = [self.random, *self.probes]
        self.refs = [mod.reference(**a) for a in self.sets]
        self.outs = [ts.simulate(prog, verify=False, **a).outputs for a in self.sets]
        self.tol = result_tolerance(prog)


def judge(m: Mutant, base: _Baseline) -> dict[str, Any]:
    rec: dict[str, Any] = {"mutant": m.name, "example": m.example, "target": m.program.target,
                           "operand": m.operand, "operator": m.operator, "how": m.how}
    try:
        rep = ts.check(m.mutant)
        findings = rep.findings
    except TilesimError as e:  # a check that refuses the program counts as an error report
        findings = [type("F", (), {"severity": "error", "where": "check", "message": str(e)})()]
    errors = [f for f in findings if f.severity == "error"]
    warnings = [f for f in findings if f.severity == "warning"]
    rec["check_errors"] = [f"{f.where}: {f.message}" for f in errors][:3]
    rec["check_warnings"] = [f"{f.where}: {f.message}" for f in warnings][:3]
    changed, sim_err = False, None
    res0 = None
    for arrays, want in zip(base.sets, base.outs):
        try:
            res = ts.simulate(m.mutant, verify=False, **arrays)  # mutants are wrong on purpose: no warning each
        except TilesimError as e:
            sim_err = str(e)
            changed = True
            break
        if res0 is None:
            res0 = res
        if not _same(res.outputs, want):
            changed = True
    rec["sim_changed"] = changed  # the simulator's outputs differ from the unmutated program's
    # Bugs by construction whose values the hardware does not define (the simulator orders waves and
    # reads one RDNA3 copy, so its values may not change): a data race, a missing replica.
    rec["hazard"] = m.operator in HAZARDS
    truth, how = _truth(m)
    if truth is None:  # free layouts (softmax, LDS staging): simulated outputs against the float64 reference
        truth = sim_err is not None
        for arrays, ref in zip(base.sets, base.refs):
            try:
                out = ts.simulate(m.mutant, verify=False, **arrays).outputs
            except TilesimError:
                truth = True
                break
            if any(beyond(out[n], r, *base.tol).any() for n, r in ref.items()):
                truth = True
                break
        how = "simulated vs float64 reference (" + how + ")"
    rec["bug"], rec["truth"] = bool(truth), how
    rec["result_changing"] = bool(truth) and not rec["hazard"]
    rec["model_disagrees_with_simulator"] = how.startswith("register model") and bool(truth) != changed \
        and not rec["hazard"]
    diff_bad = None
    if res0 is not None:
        for name, ref in base.ref.items():
            got = np.asarray(res0.outputs[name], np.float64)
            ref = np.asarray(ref, np.float64)
            bad = beyond(got, ref, *base.tol)
            if bad.any():
                diff_bad = (name, bad, got, ref)
                break
    races = res0.report.race_count if res0 is not None else 0
    repl = res0.report.replication_count if res0 is not None else 0
    rec.update(caught_by_check=bool(errors), caught_by_diff=diff_bad is not None, races=races,
               replication_violations=repl, simulate_error=sim_err)
    rec["detected"] = bool(errors) or diff_bad is not None or races > 0 or repl > 0 or sim_err is not None
    exact, why = False, ""
    if m.operator == "barrier_drop":
        first = res0.report.races[0] if res0 is not None and res0.report.races else ""
        mm = re.search(r"workgroup (\d+), wave (\d+) at LDS byte (\d+) conflicts with a \w+ by wave (\d+)", first)
        exact = bool(mm) and mm.group(2) != mm.group(4)
        why = f"race: {first[:140]}" if first else "no race reported"
    elif errors:
        exact, why = _check_blame(m, errors)
    elif diff_bad is not None:
        exact, why = _diff_blame(m, res0, *diff_bad)
    if diff_bad is not None and m.operator not in HAZARDS:  # the simulator's own blame, as run() gives it
        rec["diff_blame_exact"], rec["diff_blame"] = _diff_blame(m, res0, *diff_bad)
    rec["exact_blame"] = exact if rec["detected"] else False
    rec["blame"] = why
    if m.operator == "k_perm_shared":
        rec["equivalent_warning"] = any("equivalent, but not the hardware layout" in f.message for f in warnings)
    return rec


# ----------------------------------------------------------------------------- campaign
HAZARDS = ("barrier_drop", "replication_drop")
CATALOG_OPS = {"lane_swap": _lane_swap, "vgpr_off_by_one": _vgpr_off_by_one, "slot_swap": _slot_swap, "k_perm": _k_perm,
               "k_swap": _k_swap, "mutated_positions": lambda a, b: mutated_positions(a, b)}

QUICK = {  # (example, program index): one program per example family, the RDNA3/RDNA4 ports first
    ("gemm", 0), ("gemm", 1), ("gemm", 2), ("lds_gemm", 0), ("softmax", 0), ("int8_gemm", 1), ("fp8_gemm", 0),
}


def _rate(num: int, den: int) -> float | None:
    """num/den, or None for 0/0 (reported as "0/0", never as 100%)."""
    return num / den if den else None


def _baseline_truth(prog: Program) -> bool | None:
    """The register model on the unmutated program (None where it does not apply): must be no bug."""
    m = Mutant("", prog, 0, "none", "", "direct", prog, {})
    bug, _ = _truth(m)
    return bug


def run_campaign(quick: bool = False) -> dict[str, Any]:
    t0 = time.perf_counter()
    records, baselines = [], []
    for example, (mod, _) in EXAMPLES.items():
        for index, prog in enumerate(mod.programs()):
            if quick and (example, index) not in QUICK:
                continue
            base = _Baseline(example, prog)
            rep0 = ts.check(prog)
            ok0 = rep0.ok and not any(beyond(base.outs[0][n], r, *base.tol).any() for n, r in base.ref.items())
            model0 = _baseline_truth(prog)
            baselines.append({"program": f"{example}/{prog.target}#{index}", "check_ok": rep0.ok,
                              "clean": bool(ok0) and model0 is not True, "model_says_bug": model0})
            for m in mutants(example, index, prog):
                records.append(judge(m, base))
    changing = [r for r in records if r["bug"]]
    preserving = [r for r in records if not r["bug"]]
    detected = [r for r in changing if r["detected"]]
    exact = [r for r in detected if r["exact_blame"]]
    shared = [r for r in records if r["operator"] == "k_perm_shared"]
    by_op: dict[str, Counter] = defaultdict(Counter)
    for r in records:
        c = by_op[r["operator"]]
        c["mutants"] += 1
        c["bugs"] += r["bug"]
        c["result_changing"] += r["result_changing"]
        c["detected"] += r["bug"] and r["detected"]
        c["exact_blame"] += r["bug"] and r["detected"] and r["exact_blame"]
        c["by_check"] += r["caught_by_check"]
    truth_by: Counter = Counter(r["truth"].split(" (")[0] + (" (golden)" if "golden hardware" in r["truth"] else
                                                           " (catalog)" if "catalog hardware" in r["truth"] else "")
                                for r in records)
    catalog = run_catalog_mutants(CATALOG_OPS, quick=quick)
    cs = catalog["summary"]
    summary = {
        "mode": "quick" if quick else "full",
        "programs": len(baselines),
        "mutants": len(records),
        "bugs": len(changing),
        "result_changing": sum(r["result_changing"] for r in records),
        "hazards": sum(r["hazard"] for r in records),
        "truth_sources": dict(truth_by),
        "detected": len(detected),
        "detection_rate": _rate(len(detected), len(changing)),
        "exact_blame": len(exact),
        "exact_blame_rate": _rate(len(exact), len(detected)),
        "caught_by_diff": sum(r["caught_by_diff"] for r in changing),
        "caught_by_check": sum(r["caught_by_check"] for r in changing),
        "diff_blame_exact": sum(bool(r.get("diff_blame_exact")) for r in changing),
        "model_disagrees_with_simulator": sum(r["model_disagrees_with_simulator"] for r in records),
        "result_preserving": len(preserving),
        "k_perm_shared": len(shared),
        "k_perm_shared_warned": sum(bool(r.get("equivalent_warning")) and not r["check_errors"] for r in shared),
        "preserving_with_check_error": sum(bool(r["check_errors"]) for r in preserving),
        "baselines_clean": sum(b["clean"] for b in baselines),
        "catalog_mutants": cs["mutants"],
        "catalog_caught_by_golden": cs["caught_by_golden"],
        "catalog_detection_rate": _rate(cs["caught_by_golden"], cs["mutants"]),
        "catalog_exact_blame": cs["exact_blame"],
        "catalog_baseline_mismatches": cs["baseline_mismatches"],
        "catalog_operands_without_independent_golden": cs["operands_without_independent_golden"],
    }
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    return {"summary": summary, "by_operator": {k: dict(v) for k, v in sorted(by_op.items())},
            "baselines": baselines, "escaped": [r for r in changing if not r["detected"]],
            "inexact": [r for r in detected if not r["exact_blame"]],
            "disagreements": [r for r in records if r["model_disagrees_with_simulator"]],
            "catalog": {k: v for k, v in catalog.items() if k != "mutants"},
            "catalog_plant": self_consistency_demo(CATALOG_OPS),
            "mutants": records, "catalog_mutants": catalog["mutants"]}


def verdict(doc: dict[str, Any]) -> list[str]:
    """Why the campaign fails (empty: it passes)."""
    s, why = doc["summary"], []
    if s["bugs"] == 0 or s["catalog_mutants"] == 0:
        why.append(f"nothing to judge: {s['bugs']} program bugs, {s['catalog_mutants']} catalog mutants")
    if s["detected"] != s["bugs"]:
        why.append(f"{s['bugs'] - s['detected']} bugs escaped")
    if s["exact_blame"] != s["detected"]:
        why.append(f"{s['detected'] - s['exact_blame']} detected bugs blamed the wrong place")
    if s["k_perm_shared_warned"] != s["k_perm_shared"]:
        why.append("a shared K permutation was not warned about (or drew an error)")
    if s["baselines_clean"] != s["programs"]:
        why.append("an unmutated program raised an alarm")
    if s["model_disagrees_with_simulator"]:
        why.append(f"{s['model_disagrees_with_simulator']} mutants: the simulator and the register model disagree")
    if s["catalog_caught_by_golden"] != s["catalog_mutants"]:
        why.append(f"{s['catalog_mutants'] - s['catalog_caught_by_golden']} catalog mutants escaped the golden data")
    if s["catalog_exact_blame"] != s["catalog_caught_by_golden"]:
        why.append("a catalog mutant's golden diff named the wrong positions")
    if s["catalog_baseline_mismatches"]:
        why.append(f"{s['catalog_baseline_mismatches']} unmutated catalog layouts differ from the golden data")
    return why


def _frac(num: int, den: int) -> str:
    return f"{num}/{den}" + (f" ({100 * num / den:.1f}%)" if den else "")


def table(doc: dict[str, Any]) -> str:
    s = doc["summary"]
    lines = [f"{'operator':18} {'mutants':>7} {'bugs':>5} {'changing':>8} {'detected':>8} {'by check':>8} {'exact':>6}"]
    for op, c in doc["by_operator"].items():
        lines.append(f"{op:18} {c['mutants']:>7} {c['bugs']:>5} {c['result_changing']:>8} {c['detected']:>8} "
                     f"{c['by_check']:>8} {c['exact_blame']:>6}")
    lines.append("")
    lines.append(f"{s['mode']} run: {s['programs']} programs, {s['mutants']} program mutants in {s['seconds']} s; "
                 f"baselines clean {s['baselines_clean']}/{s['programs']}")
    lines.append(f"bugs judged by: {s['truth_sources']}")
    lines.append(f"bugs {s['bugs']} ({s['result_changing']} result-changing, {s['hazards']} races/missing replicas): "
                 f"detected {_frac(s['detected'], s['bugs'])}, exact blame {_frac(s['exact_blame'], s['detected'])}")
    lines.append(f"caught by check {s['caught_by_check']}, by the simulated diff {s['caught_by_diff']} (its store-side "
                 f"blame exact for {s['diff_blame_exact']}); register model vs simulator disagreements: "
                 f"{s['model_disagrees_with_simulator']}")
    lines.append(f"result-preserving {s['result_preserving']}: k_perm_shared {s['k_perm_shared']} "
                 f"(warned 'equivalent, but not the hardware layout' with no error: {s['k_perm_shared_warned']}); "
                 f"with a check error: {s['preserving_with_check_error']}")
    lines.append(f"catalog mutants: caught by independent golden data {_frac(s['catalog_caught_by_golden'], s['catalog_mutants'])}"
                 f", exact blame {_frac(s['catalog_exact_blame'], s['catalog_caught_by_golden'])}; unmutated rows "
                 f"differing from golden: {s['catalog_baseline_mismatches']}; operands with no independent golden "
                 f"(not mutated): {s['catalog_operands_without_independent_golden']}")
    p = doc.get("catalog_plant", {})
    if p:
        lines.append(f"planted catalog bug ({p['plant']}): golden catches C {p['golden_catches_C']}, D "
                     f"{p['golden_catches_D']}; tilesim's own check OK under it: {p['check_ok_under_the_plant']}")
    for r in doc["escaped"][:10]:
        lines.append(f"ESCAPED: {r['mutant']}")
    for r in doc["inexact"][:10]:
        lines.append(f"inexact blame: {r['mutant']}: {r['blame']}")
    for r in doc["disagreements"][:10]:
        lines.append(f"model/simulator disagree: {r['mutant']}: model bug={r['bug']}, simulator changed={r['sim_changed']}")
    for r in doc["catalog"]["escaped"][:10] + doc["catalog"]["inexact"][:10]:
        lines.append(f"catalog mutant not caught exactly: {r['mutant']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one program per example (the CI slice)")
    ap.add_argument("--json", default=str(DEFAULT_JSON), help="where to write the results")
    args = ap.parse_args(argv)
    doc = run_campaign(quick=args.quick)
    doc["failures"] = verdict(doc)
    Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(table(doc))
    for why in doc["failures"]:
        print(f"FAIL: {why}")
    return 1 if doc["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
