"""Resource budget: refuse work that would exhaust memory or run for hours, before allocating.

Checked by ``check`` and ``simulate`` (a program's tensors, lanes, LDS and loop work), by the
``Layout`` constructors (positions on each side) and by ``port`` (random runs and probe lines).
Each estimate is compared with a limit; over it, :class:`~tilesim.errors.BudgetError` states the
estimate, the limit and the knob that raises it::

    TILESIM_BUDGET_WORK=2**38 tilesim simulate big.py       # environment, any process
    with tilesim.budget.limits(work=2**38): ts.simulate(p, **arrays)   # Python, this thread

The defaults leave room for real work — a 4096 x 4096 x 4096 f16 GEMM (2^25.6 tensor elements,
2^20-2^22 lanes, 2^31.3-2^32.3 lane-steps, 1.4 GB resident) simulates in 15-40 s and is well inside
every limit — and stop what would die in a ``MemoryError`` (a 65536^2 tensor is 32 GiB as float64) or not
finish today. This module sits on the ground floor: it reads a program's fields by name and
imports nothing above :mod:`tilesim.errors`.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import threading
from collections.abc import Iterator
from typing import Any

from tilesim.errors import BudgetError, InputError, choices

__all__ = ["LIMITS", "limit", "limits", "check_program", "check_positions", "check_elements", "check_runs",
           "program_estimate"]

# name -> (default, what it counts). Powers of two, so messages and knobs read as 2**N.
LIMITS: dict[str, tuple[int, str]] = {
    "elements": (2**28, "tensor elements (all tensors; 8 bytes each as float64)"),
    "lanes": (2**25, "lanes (workgroups x waves x wave size; a fragment is lanes x VGPRs x 4 bytes)"),
    "lds": (2**30, "bytes of LDS over all workgroups"),
    "work": (2**36, "lane-steps (lanes x ops run per wave, loops counted by their trips)"),
    "positions": (2**24, "layout positions"),
    "runs": (10_000, "runs"),
}

_local = threading.local()


def _env_name(name: str) -> str:
    return f"TILESIM_BUDGET_{name.upper()}"


def _parse(text: str, where: str) -> int:
    s = text.strip().replace("_", "")
    m = re.fullmatch(r"2\s*\*\*\s*(\d{1,3})", s)
    try:
        v = 2 ** int(m.group(1)) if m else int(s, 0)
    except ValueError:
        v = -1
    if v < 1:
        raise BudgetError(f"{where}={text!r} is not a positive integer (write e.g. 268435456 or 2**28)"[:300])
    return v


def limit(name: str) -> int:
    """The limit in force for ``name``: a :func:`limits` override, else ``TILESIM_BUDGET_<NAME>``, else the default."""
    if name not in LIMITS:
        raise BudgetError(f"unknown budget {name!r}; budgets: {choices(LIMITS)}")
    over = getattr(_local, "over", {})
    if name in over:
        return over[name]
    env = os.environ.get(_env_name(name))
    return _parse(env, _env_name(name)) if env else LIMITS[name][0]


@contextlib.contextmanager
def limits(**new: int) -> Iterator[None]:
    """Raise (or lower) budgets for the code inside the ``with`` block, on this thread."""
    for k, v in new.items():
        if k not in LIMITS:
            raise BudgetError(f"unknown budget {k!r}; budgets: {choices(LIMITS)}")
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise BudgetError(f"budget {k}={v!r} must be a positive integer"[:300])
    old = getattr(_local, "over", {})
    _local.over = {**old, **new}
    try:
        yield
    finally:
        _local.over = old


def _pow2(n: int) -> str:
    return f"2**{math.log2(n):.1f}" if n > 0 else "0"


def _over(name: str, estimate: int, what: str) -> None:
    lim = limit(name)
    if estimate > lim:
        raise BudgetError(
            f"{what} needs about {estimate} ({_pow2(estimate)}) {LIMITS[name][1]}; the budget is {lim} "
            f"({_pow2(lim)}); raise it with {_env_name(name)}=<n> or tilesim.budget.limits({name}=<n>)",
            budget=name, estimate=estimate, limit=lim)


# ---------------------------------------------------------------------------- programs
def _trips(args: tuple[Any, ...], consts: dict[int, int]) -> int:
    """A loop's trip count when its bounds are constants; 1 when a bound is only known at run time."""
    vals = []
    for a in args:
        if isinstance(a, int) and not isinstance(a, bool):
            vals.append(a)
        elif getattr(a, "id", None) in consts:
            vals.append(consts[a.id])
        else:
            return 1
    start, stop, step = vals
    return len(range(start, stop, step)) if step > 0 else 0


def program_estimate(prog: Any) -> dict[str, int]:
    """Estimates of ``elements``, ``lanes``, ``lds`` and ``work`` for a specialised program."""
    elements = sum(math.prod(int(s) for s in t.shape) for t in prog.tensors)
    workgroups = math.prod(int(g) for g in prog.grid)
    lanes = workgroups * int(prog.waves_per_workgroup) * int(prog.wave_size)
    consts: dict[int, int] = {}
    lds = 0
    steps = 0

    def visit(block: Any, mult: int) -> None:
        nonlocal lds, steps
        for op in block.ops:
            steps += mult
            if op.kind == "const" and op.out is not None:
                v = dict(op.attrs).get("value")
                if isinstance(v, int) and not isinstance(v, bool):
                    consts[op.out.id] = v
            elif op.kind == "lds_alloc" and op.out is not None and op.out.lds is not None:
                lds += int(op.out.lds.bytes)
            elif op.kind == "loop":
                visit(dict(op.attrs)["body"], mult * _trips(op.args, consts))
            elif op.kind == "branch":
                visit(dict(op.attrs)["body"], mult)

    visit(prog.body, 1)
    return {"elements": elements, "lanes": lanes, "lds": workgroups * lds, "work": lanes * steps}


def check_program(prog: Any) -> dict[str, int]:
    """Raise :class:`BudgetError` when simulating ``prog`` would exceed a budget; returns the estimates."""
    est = program_estimate(prog)
    for name in ("elements", "lanes", "lds", "work"):
        _over(name, est[name], f"program {prog.name} on {prog.target}")
    return est


# ---------------------------------------------------------------------------- layouts and proofs
def check_positions(n: int, what: str) -> None:
    """Refuse a layout side of ``n`` positions over the ``positions`` budget."""
    _over("positions", n, what)


def check_elements(n: int, what: str) -> None:
    """Refuse buffers of ``n`` elements in all over the ``elements`` budget (before allocating them)."""
    _over("elements", n, what)


def check_runs(random_runs: Any, max_lines: Any) -> None:
    """Validate ``port``/``equivalent``'s ``random_runs`` (0 or more) and ``max_lines`` (1 or more)."""
    for name, v, lo in (("random_runs", random_runs, 0), ("max_lines", max_lines, 1)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise InputError(f"{name} must be an integer, got {v!r} ({type(v).__name__})"[:300])
        if v < lo:
            raise InputError(f"{name} must be {lo} or more, got {v}")
        _over("runs", v, name)
