"""``equivalent(p1, p2)``: do two tile programs compute the same outputs?

Both run on structured probes and on random inputs. Probes set one line of one input tensor to
distinct small integers and everything else of that tensor to zero (other inputs random small
integers): a one-hot along K for each operand on its own, so a K permutation that A and B share
— invisible to random data — still changes an output. Integer-valued inputs keep every product
and sum exact, so outputs are compared exactly.

Small integers alone are exact in every narrow type too: a program that rounds A through bf8, or its
accumulator through bf16 at each k-step, computed the same bits as the f32 one and was called
equivalent. So ``min(random_runs, 2)`` more runs draw *wide* integers (:func:`_wide_limits`): per
input, as many significant bits as its type holds, bounded so that the longest sum a matrix
instruction forms (the largest input dim times the largest product) stays exact in the narrowest
accumulator either program uses; two programs that only group k differently still agree bit for bit.
Programs whose matrix instruction reads another's result (a chained product), and inputs no wider
than the small ones, have none.

A program whose run reports an LDS race is never equivalent to anything: the simulator resolves a
race in one fixed order, the device in any order, so equal simulated outputs prove nothing. The
same holds for replicas that disagree (:func:`tilesim.wave.undefined.undefined`). Output elements
must be written by both programs or by neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from tilesim.budget import check_runs
from tilesim.errors import TilesimError
from tilesim.ir.core import Program
from tilesim.ir.ops import MMA_KINDS
from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import dtype
from tilesim.wave.sim import simulate
from tilesim.wave.undefined import undefined, unwritten

__all__ = ["equivalent", "Equivalence"]


@dataclass
class Equivalence:
    equal: bool
    runs: int
    differences: list[str] = field(default_factory=list)
    source_races: int = 0  # racing LDS accesses of the first program, over every run
    races: int = 0  # of the second

    def __bool__(self) -> bool:
        return self.equal

    def __str__(self) -> str:
        if self.equal:
            return f"equivalent on {self.runs} probe and random inputs"
        return f"NOT equivalent ({len(self.differences)} differing runs of {self.runs}):\n  " + "\n  ".join(
            self.differences[:10])


def _inputs(p: Program) -> list[tuple[str, str, tuple[int, ...]]]:
    return [(t.name, t.dtype, t.shape) for t in p.tensors if not t.output]


def _small(rng: np.random.Generator, dt: str, shape: tuple[int, ...]) -> np.ndarray:
    d = dtype(dt)
    lo, hi = (0, 4) if d.kind == "uint" else (-3, 4)
    if d.bits <= 4 and d.kind == "float":
        lo, hi = -2, 3
    return rng.integers(lo, hi, shape).astype(np.float64)


def _exact_integers(dt: str) -> int:
    """The largest n such that every integer in -n..n (0..n unsigned) is exact in ``dt``."""
    d = dtype(dt)
    if d.kind != "float":
        return (1 << (d.bits - (1 if d.kind == "int" else 0))) - 1 if d.bits < 32 else 1 << 30
    info = ml_dtypes.finfo(np.dtype(d.np_name))
    p = 11 if d.truncated_f32 else info.nmant + 1  # xf32/tf32: the instruction reads 10 explicit bits
    return int(min(2 ** p, float(info.max)))


def _chained(p: Program) -> bool:
    """Whether a matrix instruction's A or B is computed from another matrix instruction's result."""
    derived: set[int] = set()
    for _ in range(2):  # twice: a value carried round a loop reaches its readers on the second pass
        for op in p.walk():
            ids = [a.id for a in op.args if hasattr(a, "id")]
            if op.kind in MMA_KINDS and any(i in derived for i in ids[:2]):
                return True
            if op.out is not None and (op.kind in MMA_KINDS or any(i in derived for i in ids)):
                derived.add(op.out.id)
    return False


def _wide_limits(p1: Program, p2: Program) -> dict[str, int]:
    """Per input tensor, the bound of the wide runs' integers; empty when they would add nothing."""
    if _chained(p1) or _chained(p2):
        return {}
    acc = min([_exact_integers(lookup(op.attr("instr"), p.target).types[3])
               for p in (p1, p2) for op in p.walk() if op.kind in MMA_KINDS] or [_exact_integers("f32")])
    terms = max(max(t.shape) for t in p1.tensors)
    v_acc = int(np.sqrt(acc / (2 * terms)))  # every partial sum of terms products (and an addend) stays exact
    out = {name: min(_exact_integers(dt), v_acc) for name, dt, _ in _inputs(p1)}
    return out if any(v > 4 for v in out.values()) else {}


def _wide(rng: np.random.Generator, dt: str, shape: tuple[int, ...], limit: int) -> np.ndarray:
    if limit <= 4:
        return _small(rng, dt, shape)
    lo = 0 if dtype(dt).kind == "uint" else -limit
    return rng.integers(lo, limit + 1, shape).astype(np.float64)


def equivalent(p1: Program, p2: Program, *, random_runs: int = 3, max_lines: int = 16, seed: int = 0) -> Equivalence:
    """Compare two programs with the same tensor signature on probes and random inputs."""
    check_runs(random_runs, max_lines)
    s1, s2 = _inputs(p1), _inputs(p2)
    if s1 != s2 or [t.name for t in p1.tensors if t.output] != [t.name for t in p2.tensors if t.output]:
        raise TilesimError(f"programs differ in their tensors: {s1} vs {s2}")
    rng = np.random.default_rng(seed)
    runs: list[tuple[str, dict[str, np.ndarray]]] = []
    for name, dt, shape in s1:
        for axis in (0, 1):
            n = shape[axis]
            for line in sorted(set(np.linspace(0, n - 1, min(n, max_lines)).astype(int).tolist())):
                arrays = {nm: _small(rng, d, sh) for nm, d, sh in s1}
                x = np.zeros(shape)
                vals = (np.arange(shape[1 - axis]) % 3 + 1).astype(np.float64)
                if axis == 0:
                    x[line, :] = vals
                else:
                    x[:, line] = vals
                arrays[name] = x
                runs.append((f"probe: {name} {'row' if axis == 0 else 'column'} {line} only", arrays))
    for r in range(random_runs):
        runs.append((f"random #{r}", {nm: _small(rng, d, sh) for nm, d, sh in s1}))
    limits = _wide_limits(p1, p2)
    for r in range(min(random_runs, 2) if limits else 0):
        runs.append((f"wide integers #{r} (|x| <= {max(limits.values())})",
                     {nm: _wide(rng, d, sh, limits[nm]) for nm, d, sh in s1}))
    out = Equivalence(True, len(runs))
    for label, arrays in runs:
        r1, r2 = simulate(p1, verify=False, **arrays), simulate(p2, verify=False, **arrays)
        o1, o2 = r1.outputs, r2.outputs
        for which, r in (("first", r1), ("second", r2)):
            if r.report.race_count:
                if which == "first":
                    out.source_races += r.report.race_count
                else:
                    out.races += r.report.race_count
                out.differences.append(f"{label}: the {which} program races in LDS ({r.report.race_count} racing "
                                       f"accesses, e.g. {r.report.races[0]})")
                out.equal = False
            others = undefined(r, races=False, unwritten_outputs=False)
            if others:
                out.differences.append(f"{label}: the {which} program's result is undefined: {others[0]}")
                out.equal = False
        for name in o1:
            # an element one program leaves unwritten holds whatever the buffer held: the simulator's 0
            # equals a written 0 only by accident (one-hot probes are mostly zeros)
            gap = unwritten(r1, name) != unwritten(r2, name)
            if gap.any():
                i, j = (int(x) for x in np.argwhere(gap)[0])
                out.equal = False
                out.differences.append(f"{label}: {name}[{i}][{j}] is written by only one of the programs "
                                       f"({int(gap.sum())} elements)")
                continue
            a, b = np.asarray(o1[name], np.float64), np.asarray(o2[name], np.float64)
            bad = ~((a == b) | (np.isnan(a) & np.isnan(b)))
            if bad.any():
                i, j = (int(x) for x in np.argwhere(bad)[0])
                out.equal = False
                out.differences.append(f"{label}: {name}[{i}][{j}] = {a[i, j]:g} vs {b[i, j]:g} "
                                       f"({int(bad.sum())} elements differ)")
    return out
