"""Every simulator change keeps results bit for bit: the recorded simulations of
``tests/_recorded_sims.py`` (hashes written on main at 4697e2b, before the issue-17 performance
work) are recomputed and compared, with the fast paths on, with fusion off (``TILESIM_NO_FUSE=1``)
and with the compiled kernels off (the pure-numpy fallbacks of a base install without numba)."""

from __future__ import annotations

import json

import pytest

import tilesim.wave.kernels as kernels
from tests._recorded_sims import GOLDEN, cases, digest

WANT = json.loads(GOLDEN.read_text())
CASES = list(cases())


def _check(slow_too: bool) -> list[str]:
    bad = []
    for name, slow, run in CASES:
        if slow and not slow_too:
            continue
        if digest(run()) != WANT[name]:
            bad.append(name)
    return bad


def test_every_case_is_recorded() -> None:
    assert sorted(WANT) == sorted(name for name, _, _ in CASES)


def test_recorded_simulations_are_bit_identical() -> None:
    assert _check(False) == []


def test_recorded_simulations_step_by_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILESIM_NO_FUSE", "1")
    assert _check(False) == []


def test_recorded_simulations_without_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "HAVE_NUMBA", False)
    assert not kernels.available()
    assert _check(False) == []


@pytest.mark.slow
def test_recorded_large_simulations_are_bit_identical() -> None:
    assert _check(True) == []


def test_recorded_lds_and_gemm_simulations_on_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The threaded mma step and fused chain (numba's pool, used from 2**23 / 2**26 MACs) on small
    programs: each wave's result is its own, so the bits are the one-thread kernels'."""
    monkeypatch.setattr(kernels, "_PARALLEL_STEP_MACS", 0)
    monkeypatch.setattr(kernels, "_PARALLEL_MACS", 0)
    cases = [(name, run) for name, slow, run in CASES if not slow and name.startswith(("lds", "gemm/"))]
    assert len(cases) > 20
    assert [name for name, run in cases if digest(run()) != WANT[name]] == []
