"""Repository-wide pytest options: ``--full`` runs the slow sweeps that CI samples."""

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true", help="run slow sweeps (every target, every modifier)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--full"):
        return
    skip = pytest.mark.skip(reason="slow sweep; CI runs a representative slice, `scripts/test.sh --full` runs all")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
