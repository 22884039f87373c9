"""Repository-wide pytest options: ``--full`` runs the slow sweeps that CI samples; tests marked
``compiler`` skip, saying why, where the offline AMDGPU clang (the ``ziglang`` extra) is not installed
(e.g. a GPU machine that runs only the device tests). ``scripts/test.sh`` sets
``TILESIM_REQUIRE_COMPILER=1``: there a missing clang fails those tests instead of skipping them."""

import importlib.util
import os

import pytest

# the simulator's compiled kernels from the first call (tests compare them with the numpy
# fallbacks; tilesim.wave.kernels.JIT_AFTER defers them for small programs otherwise)
os.environ.setdefault("TILESIM_JIT_AFTER", "0")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true", help="run slow sweeps (every target, every modifier)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if importlib.util.find_spec("ziglang") is None and not os.environ.get("TILESIM_REQUIRE_COMPILER"):
        no_clang = pytest.mark.skip(reason="needs the offline AMDGPU clang: pip install 'tilesim[compiler]'")
        for item in items:
            if "compiler" in item.keywords:
                item.add_marker(no_clang)
    if config.getoption("--full"):
        return
    skip = pytest.mark.skip(reason="slow sweep; CI runs a representative slice, `scripts/test.sh --full` runs all")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
