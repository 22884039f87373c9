"""Soundness campaign (issue 13): does ``check`` OK mean the program simulates and is right, and does
every wrong program draw a ``check`` error or a failing verdict?

Run: ``python tools/soundness.py [--random N] [--seed S] [--cli-sample K] [--json PATH]``
(default: 4,900 random GEMMs from ``tilesim.testing.tile_cases``, each with one mutant, plus every
example program, every layout mutant of every example (tools/mutation.py) and structural mutants
of every example: more than 10,000 programs). Exit 1 on any invariant violation.

Invariants, per program (a mutant is the original program with one change; its *intent* is the
original's float64 reference):

* **I1** ``check`` OK ⇒ ``simulate`` raises nothing but a ``TilesimError`` (and ``check`` itself
  raises nothing untyped);
* **I2** ``check`` OK and no mutation ⇒ the simulated outputs equal the float64 reference within the
  numerics model's tolerance (``tilesim.matrix.numerics.tolerance`` over the K terms);
* **I3** a mutation that changes the result ⇒ a ``check`` error or a failing verdict
  (``tilesim.diff.run``; failing: ``Verdict.ok`` false, or MISMATCH/DEVICE_ERROR where the verdict
  has no ``ok``; NOT_JUDGED, exit 4, is neither a pass nor a catch: every reference here names every
  output, so it is counted apart and recorded as a violation). *Changes the result* is judged without the simulator where possible: layout
  mutants of a GEMM's A/B/C by the float64 register model over AMD-calculator layouts
  (tools/mutation.py ``model_truth``); other mutants by the simulated outputs against the float64
  reference (said so in each record);
* **I4** exit statuses agree with verdicts, on a sample through ``tilesim.cli.main``: ``check`` exits
  0 iff ``check`` is OK; ``run --device none`` exits 0 iff the verdict passes; ``simulate`` exits 0
  iff ``tilesim.diff.check_reference`` accepts the simulation;
* correct programs (I2 holds) must not get a failing verdict (a false alarm is a violation too).

Verdicts are computed with the compiler switched off (``compile_hip`` raises ``ToolchainError``),
a real configuration (CI without clang) that keeps 10,000 programs off the compiler; the verdict
must be right whatever the device and compiler situation (issue 13).

Each violation is recorded with its invariant, what was done, the seed and the program's JSON (a
reproducer: ``Program.from_json``), in ``tools/soundness_results.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
import traceback
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import seed as hseed  # noqa: E402

import tilesim as ts  # noqa: E402
import tilesim.hw.offline as _offline  # noqa: E402
from tests import _bitcodecs as bc  # noqa: E402
from tilesim.diff import run as diff_run  # noqa: E402
from tilesim.errors import TilesimError, ToolchainError  # noqa: E402
from tilesim.ir.core import Program  # noqa: E402
from tilesim.matrix import lookup  # noqa: E402
from tilesim.matrix.numerics import tolerance  # noqa: E402
from tools import _soundness_mutants as sm  # noqa: E402
from tools import mutation as mut  # noqa: E402

__all__ = ["Campaign", "main", "run_campaign"]

DEFAULT_JSON = ROOT / "tools" / "soundness_results.json"
INVARIANTS = ("I1 check OK => simulate raises no untyped exception", "I2 check OK and no mutation => simulate equals "
              "the float64 reference", "I3 result-changing mutation => check error or failing verdict",
              "I4 exit statuses agree with verdicts", "no false alarm: a correct program gets a passing verdict")


# ----------------------------------------------------------------------------- references and verdicts
def tol_of(prog: Program) -> tuple[float, float]:
    """(rtol, atol): the numerics model's tolerance over the program's K terms (f32 rounding otherwise)."""
    rtol = atol = 0.0
    k_total = max([s for d, s in prog.sizes if d == "K"] or [1])
    for op in prog.walk():
        if op.kind == "mma":
            r, a = tolerance(lookup(op.attr("instr"), prog.target), k_terms=k_total)
            rtol, atol = max(rtol, r), max(atol, a)
    return (rtol or 2.0 ** -20), atol


def off(got: Any, ref: Any, tol: tuple[float, float]) -> bool:
    """Out of tolerance: |got - ref| > atol + rtol (max|ref| + 1) anywhere (NaN equal to NaN)."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    if got.shape != ref.shape:
        return True
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(got - ref) <= tol[1] + tol[0] * (np.nanmax(np.abs(ref), initial=0.0) + 1.0))
    return bool((bad & ~(np.isnan(got) & np.isnan(ref))).any())


# The reference's own epilogue ops, written here and not read from the op table (an oracle independent of
# the code it judges); a drawn case using an op it lacks is not judged (random_gemms), so a row added to the
# table needs no edit here, only its expected values in tests/test_ops.py.
_APPLY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "neg": lambda x, _: -x}


def gemm_reference(row: Any, epi: tuple, k_steps: int, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Float64 reference of a tile_cases GEMM: per K step the exact sum rounded once to D (ties to even,
    by the spec encoder for f16/bf16; f32 by numpy), then the epilogue, each result rounded to D."""
    d = row.types[3]

    def rnd(x: np.ndarray) -> np.ndarray:
        if d in ("f16", "bf16"):
            return bc.decode(bc.encode(x, d), d)
        return x.astype(np.float32).astype(np.float64) if d == "f32" else x

    acc = np.zeros((A.shape[0], B.shape[1]))
    for s in range(k_steps):
        ks = slice(s * row.k, (s + 1) * row.k)
        acc = rnd(A[:, ks] @ B[ks, :] + acc)
    for name, const in epi:
        acc = rnd(_APPLY[name](acc, const))
    return acc


@contextlib.contextmanager
def no_compiler():
    real = _offline.compile_hip

    def refuse(*a: Any, **k: Any) -> Any:
        raise ToolchainError("compiler switched off by the soundness campaign")

    _offline.compile_hip = refuse
    try:
        yield
    finally:
        _offline.compile_hip = real


def passing(v: Any) -> bool:
    ok = getattr(v, "ok", None)
    return bool(ok) if ok is not None else v.status not in ("MISMATCH", "DEVICE_ERROR")


# ----------------------------------------------------------------------------- the campaign
class Campaign:
    def __init__(self, seed: int, verdict_every: int = 25) -> None:
        self.seed = seed
        self.verdict_every = verdict_every
        self.counts: Counter = Counter()
        self.by_kind: dict[str, Counter] = {}
        self.violations: list[dict[str, Any]] = []
        self.classes: Counter = Counter()
        self.cli_pool: list[tuple[Program, dict, dict, str]] = []

    def violate(self, inv: int, cls: str, what: str, prog: Program | None, detail: str) -> None:
        """Record a violation of invariant ``inv``; ``cls`` (the mutation kind, or what went wrong)
        groups them: every one is counted, five reproducers per (invariant, class) are kept."""
        key = f"{INVARIANTS[inv].split()[0]} {cls}"
        self.classes[key] += 1
        self.counts[f"violations {INVARIANTS[inv].split()[0]}"] += 1
        if self.classes[key] > 5:
            return
        self.violations.append({"invariant": INVARIANTS[inv], "class": cls, "what": what, "seed": self.seed,
                                "detail": detail[:500], "program_json": None if prog is None else prog.to_json()})

    def judge(self, what: str, kind: str, prog: Program, inputs: dict[str, np.ndarray],
              ref: dict[str, np.ndarray], truth: bool | None = None, truth_how: str = "") -> None:
        """One program: ``kind`` "original" (``ref`` is its intent) or a mutation kind (``ref`` is the
        original's intent; ``truth``: whether the mutation changes the result, None = judge by simulation)."""
        c = self.by_kind.setdefault(kind, Counter())
        c["programs"] += 1
        self.counts["programs"] += 1
        try:
            rep = ts.check(prog)
            check_ok = rep.ok
        except TilesimError:
            check_ok = False
        except Exception as e:  # noqa: BLE001
            self.violate(0, f"check raised {type(e).__name__}", what, prog, _tb(e))
            return
        c["check_ok"] += check_ok
        sim_out, sim_err = None, None
        try:
            sim_out = ts.simulate(prog, verify=False, **inputs).outputs  # check ran just above
        except TilesimError as e:
            sim_err = f"{type(e).__name__}: {e}"
        except Exception as e:  # noqa: BLE001
            if check_ok:
                self.violate(0, f"{kind}: simulate raised {type(e).__name__}", what, prog, _tb(e))
                return
            sim_err = f"untyped {type(e).__name__} (check had refused the program)"
        tol = tol_of(prog) if kind == "original" else tol_of_or(prog, self.base_tol)
        sim_off = sim_out is None or any(off(sim_out[k], r, tol) for k, r in ref.items())
        if truth is None and sim_out is None:  # nothing to judge by: the simulator refused (a typed error)
            c["refused_by_simulate"] += 1
            return
        if truth is None:
            truth, truth_how = sim_off, "simulated vs float64 reference"
        c[f"truth: {truth_how.split(' (')[0]}"] += 1
        if kind == "original":
            if check_ok and sim_out is not None and sim_off:
                self.violate(1, "simulated output differs from the float64 reference", what, prog,
                             _worst(sim_out, ref))
            correct = check_ok and sim_out is not None and not sim_off
            if correct and (self.counts["programs"] % self.verdict_every == 0 or "example" in what):
                v = self.verdict(prog, inputs, ref)
                c["verdicts"] += 1
                if v is not None and not passing(v):
                    self.violate(4, f"failing verdict {v.status}", what, prog, str(v)[:500])
            self.maybe_cli(prog, inputs, ref, what)
            return
        c["result_changing"] += bool(truth)
        if not truth:
            return
        if not check_ok:
            c["caught_by_check"] += 1
            return
        if sim_err is not None:
            c["refused_by_simulate"] += 1  # a typed error: the user is told, nothing passes
            return
        v = self.verdict(prog, inputs, ref)
        c["verdicts"] += 1
        if v is None:
            c["refused_by_run"] += 1
        elif v.status == "NOT_JUDGED":  # exit 4, never a pass; nor a catch: this campaign's reference is complete
            c["not_judged_by_run"] += 1
            self.violate(2, kind, f"{what}: NOT_JUDGED on a result-changing mutation: the campaign's reference "
                         "left an output out", prog, str(v)[:500])
        elif passing(v):
            self.violate(2, kind, f"{what}: check OK and a passing verdict ({v.status}) on a result-changing "
                         f"mutation ({truth_how})", prog, str(v)[:500])
        else:
            c["caught_by_verdict"] += 1
        self.maybe_cli(prog, inputs, ref, what)

    base_tol: tuple[float, float] | None = None

    def verdict(self, prog: Program, inputs: dict, ref: dict) -> Any:
        self.counts["verdicts"] += 1
        try:
            with no_compiler():
                return diff_run(prog, device="none", reference=ref, **inputs)
        except TilesimError:
            return None
        except Exception as e:  # noqa: BLE001
            self.violate(0, f"run raised {type(e).__name__}", prog.name, prog, _tb(e))
            return None

    def maybe_cli(self, prog: Program, inputs: dict, ref: dict, what: str) -> None:
        if len(self.cli_pool) < 400 and zlib.crc32(f"{what}|{self.seed}".encode()) % 7 == 0:
            self.cli_pool.append((prog, inputs, ref, what))


def tol_of_or(prog: Program, fallback: tuple[float, float] | None) -> tuple[float, float]:
    try:
        return tol_of(prog)
    except TilesimError:
        return fallback or (2.0 ** -20, 0.0)


def _tb(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(e).__name__} at {where}: {str(e)[:300]}"


def _worst(out: dict, ref: dict) -> str:
    parts = []
    for k, r in ref.items():
        with np.errstate(invalid="ignore"):
            d = np.abs(np.asarray(out[k], np.float64) - np.asarray(r, np.float64))
        parts.append(f"{k}: max |sim - ref| = {np.nanmax(d):.4g} in {int((d > 0).sum())} elements")
    return "; ".join(parts)


# ----------------------------------------------------------------------------- sources
def random_gemms(camp: Campaign, n: int) -> None:
    """``n`` drawn tile_cases, each judged as drawn and with one mutant."""
    from tilesim.testing import tile_cases

    rng = np.random.default_rng(camp.seed)

    @given(tile_cases(max_tiles=2, max_k_steps=2))
    def go(case):
        assume(all(name in _APPLY for name, _ in case.epilogue))
        k_steps = case.program.tensor("A").shape[1] // case.instruction.k
        ref = {"C": gemm_reference(case.instruction, case.epilogue, k_steps, case.inputs["A"], case.inputs["B"])}
        what = f"random {case!r}"
        camp.base_tol = tol_of(case.program)
        camp.judge(what, "original", case.program, case.inputs, ref)
        post = (lambda x: _epilogue(x, case.epilogue)) if case.epilogue else None
        for kind, mp, truth, how in sm.pick(case.program, rng, post=post):
            camp.judge(f"{what} {kind}", kind, mp, case.inputs, ref, truth, how)

    settings(max_examples=n, deadline=None, database=None, derandomize=False,
             suppress_health_check=list(HealthCheck))(hseed(camp.seed)(go))()


def _epilogue(x: np.ndarray, epi: tuple) -> np.ndarray:
    for name, const in epi:
        x = _APPLY[name](x, const)
    return x


def examples(camp: Campaign, limit: int | None = None) -> None:
    """Every example program (the first ``limit`` of each), every layout mutant of it
    (tools/mutation.py) and its structural mutants."""
    from examples import gemm_planted

    for example, (mod, _) in mut.EXAMPLES.items():
        for index, prog in enumerate(mod.programs()[:limit]):
            inputs = mod.inputs(prog, seed=camp.seed)
            ref = {k: np.asarray(v, np.float64) for k, v in mod.reference(**inputs).items()}
            what = f"example {example}/{prog.target}#{index}"
            camp.base_tol = tol_of(prog)
            camp.judge(what, "original", prog, inputs, ref)
            for m in mut.mutants(example, index, prog):
                truth, how = mut._truth(m)
                if m.operator in mut.HAZARDS:
                    truth, how = None, "simulated vs float64 reference (hazard)"
                camp.judge(f"{what} {m.operand}/{m.operator}", "layout:" + m.operator, m.mutant, inputs, ref, truth,
                           how)
            for kind, mp in sm.structural(prog):
                camp.judge(f"{what} {kind}", kind, mp, inputs, ref)
    for index, prog in enumerate(gemm_planted.programs()):  # planted bugs: their intent is the plain GEMM
        inputs = gemm_planted.inputs(prog, seed=camp.seed) if hasattr(gemm_planted, "inputs") else None
        if inputs is None or not hasattr(gemm_planted, "reference"):
            continue
        ref = {k: np.asarray(v, np.float64) for k, v in gemm_planted.reference(**inputs).items()}
        camp.judge(f"example gemm_planted#{index}", "planted", prog, inputs, ref)


# ----------------------------------------------------------------------------- the CLI sample
_MODULE = '''import json
from pathlib import Path
import numpy as np
from tilesim.ir.core import Program
_HERE = Path(__file__).parent
def programs():
    return [Program.from_json((_HERE / "prog.json").read_text())]
def inputs(prog, seed=0):
    return dict(np.load(_HERE / "inputs.npz"))
def reference(**arrays):
    return dict(np.load(_HERE / "ref.npz"))
'''


def cli_sample(camp: Campaign, k: int) -> None:
    from tilesim.cli import main as cli

    rng = np.random.default_rng(camp.seed)
    pool = camp.cli_pool
    picks = rng.choice(len(pool), size=min(k, len(pool)), replace=False) if pool else []
    for i in picks:
        prog, inputs, ref, what = pool[int(i)]
        try:
            _cli_one(camp, cli, int(i), prog, inputs, ref, what)
        except CliRaised as e:
            camp.violate(3, "the CLI raised", what, prog, str(e))


def _cli_one(camp: Campaign, cli: Any, i: int, prog: Program, inputs: dict, ref: dict, what: str) -> None:
    with tempfile.TemporaryDirectory(prefix="tilesim-soundness-") as tmp:
        d = Path(tmp)
        (d / "prog.json").write_text(prog.to_json())
        np.savez(d / "inputs.npz", **inputs)
        np.savez(d / "ref.npz", **ref)
        f = d / f"case_{int(i)}.py"
        f.write_text(_MODULE)
        camp.counts["cli programs"] += 1
        try:
            ok = ts.check(prog).ok
        except TilesimError:
            ok = False
        rc = _cli(cli, ["check", str(f)])
        if rc != (0 if ok else 1) and not (rc == 2 and not ok):
            camp.violate(3, "check exit status", f"{what}: `tilesim check` exited {rc}, check says "
                         f"{'OK' if ok else 'errors'}", prog, "")
        try:  # the simulate command's verdict: the reference check of the Python API
            sim = ts.simulate(prog, verify=False, **inputs).outputs
            sim_good = _reference_ok(prog, sim, ref, inputs)
        except TilesimError:
            sim_good = None
        rc = _cli(cli, ["simulate", str(f)])
        if sim_good is not None and (rc == 0) != (sim_good and ok):  # 0.7.1: a check error fails simulate too
            camp.violate(3, "simulate exit status", f"{what}: `tilesim simulate` exited {rc}; the simulation is "
                         f"{'within' if sim_good else 'outside'} tolerance of reference(), check says "
                         f"{'OK' if ok else 'errors'}", prog, "")
        v = camp.verdict(prog, inputs, ref)
        with no_compiler():
            rc = _cli(cli, ["run", str(f), "--device", "none"])
        if v is not None and (rc == 0) != passing(v):
            camp.violate(3, "run exit status", f"{what}: `tilesim run` exited {rc}, the verdict is {v.status}",
                         prog, "")


def _reference_ok(prog: Program, outputs: dict, ref: dict, inputs: dict) -> bool:
    """``tilesim.diff.check_reference`` where tilesim has it (the judgement ``simulate`` and ``run``
    use), else the numerics model's tolerance as above."""
    try:
        from tilesim.diff import check_reference
    except ImportError:
        return not any(off(outputs[n], r, tol_of(prog)) for n, r in ref.items())
    return bool(check_reference(prog, outputs, ref, inputs).ok)


class CliRaised(Exception):
    pass


def _cli(cli: Any, argv: list[str]) -> int:
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return int(cli(argv))
    except SystemExit as e:
        return int(e.code or 0)
    except Exception as e:  # noqa: BLE001 - a traceback out of the CLI is itself a violation
        raise CliRaised(f"`tilesim {argv[0]}` raised {_tb(e)}") from None


# ----------------------------------------------------------------------------- driver
def run_campaign(random: int = 4900, seed: int = 0, cli: int = 40, with_examples: bool = True,
                 example_limit: int | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    camp = Campaign(seed)
    if with_examples:
        examples(camp, example_limit)
    random_gemms(camp, random)
    cli_sample(camp, cli)
    commit = _commit()
    return {"seed": seed, "commit": commit, "random_gemms": random, "programs": camp.counts["programs"],
            "violations": sum(v for k, v in camp.counts.items() if k.startswith("violations I") or
                              k.startswith("violations no")),
            "counts": dict(camp.counts), "violation_classes": dict(camp.classes.most_common()), "by_kind": {k: dict(v) for k, v in sorted(camp.by_kind.items())},
            "invariants": list(INVARIANTS), "seconds": round(time.perf_counter() - t0, 1),
            "violation_records": camp.violations}


def _commit() -> str:
    import subprocess

    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=False).stdout.strip()
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--random", type=int, default=4900, help="random GEMMs drawn (each also mutated once)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cli-sample", type=int, default=40)
    ap.add_argument("--no-examples", action="store_true")
    ap.add_argument("--json", default=str(DEFAULT_JSON))
    args = ap.parse_args(argv)
    doc = run_campaign(args.random, args.seed, args.cli_sample, not args.no_examples)
    Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(f"{doc['programs']} programs (seed {doc['seed']}, commit {doc['commit'][:10]}) in {doc['seconds']} s; "
          f"{doc['violations']} invariant violations")
    for k, v in sorted(doc["counts"].items()):
        print(f"  {k}: {v}")
    for kind, c in doc["by_kind"].items():
        print(f"  {kind:28} " + ", ".join(f"{a} {b}" for a, b in sorted(c.items())))
    for cls, n in doc.get("violation_classes", {}).items():
        print(f"  violations {cls}: {n}")
    for v in doc["violation_records"][:40]:
        print(f"VIOLATION [{v['invariant'].split()[0]}] {v['what'][:200]}\n    {v['detail'].splitlines()[0][:200]}")
    return 1 if doc["violations"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
