"""pytest plugin (entry point ``pytest11: tilesim``): ``--tilesim-device`` and the ``tilesim_gpu`` marker.

* ``@pytest.mark.tilesim_gpu`` — the test needs a GPU; ``@pytest.mark.tilesim_gpu("cuda")`` or
  ``("amd")`` one of that vendor. Without one the test is skipped and the reason says why
  (CuPy missing, no driver, hip-python missing …).
* ``--tilesim-device auto`` (default) finds a device (CUDA through CuPy, AMD through hip-python);
  ``none`` skips every marked test; ``cuda`` / ``amd`` use only that vendor, and a marked test
  *errors* when it is absent — asking for a device by name and silently running nothing is how
  a GPU job goes green without a GPU.
* the ``tilesim_device`` fixture gives the chosen :class:`GpuDevice` (and skips as the marker does).

Devices are probed once per session, and only when marked tests are collected (after ``-k``/``-m``
deselection) or a test asks for the fixture. This module imports neither hypothesis nor a GPU
runtime at load time. With the entry point installed, do not also pass ``-p
tilesim.testing.plugin``: pytest refuses to register one module twice.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from tilesim.hw import amd, nvidia  # looked up at call time: tests replace the probes

__all__ = ["DEVICE_CHOICES", "MARKER", "GpuDevice"]

DEVICE_CHOICES = ("auto", "none", "cuda", "amd")
MARKER = "tilesim_gpu"
_VENDORS = ("cuda", "amd")


class GpuDevice(NamedTuple):
    """The device a GPU test runs on."""

    vendor: str  # "cuda" | "amd"
    description: str


_FOUND = pytest.StashKey[dict[str, tuple[bool, str]]]()
_CHOSEN = pytest.StashKey[GpuDevice]()
_FAIL = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tilesim")
    group.addoption("--tilesim-device", action="store", default="auto", choices=DEVICE_CHOICES,
                    help="GPU for tests marked tilesim_gpu: auto (find one, else skip), none (skip them), "
                         "cuda or amd (that vendor only; error when it is absent). Default: auto.")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(vendor=None): the test needs a GPU (vendor 'cuda' or 'amd', or "
                                       "any); skipped with the reason when none is usable (see --tilesim-device)")


def _probe(config: pytest.Config, vendor: str) -> tuple[bool, str]:
    found = config.stash.setdefault(_FOUND, {})
    if vendor not in found:
        if vendor == "cuda":
            cc, desc = nvidia.cuda_device()
            found[vendor] = (cc is not None, f"{desc} (sm_{cc})" if cc is not None else desc)
        else:
            found[vendor] = amd.amd_device()
    return found[vendor]


class _Refuse(Exception):
    def __init__(self, how: str, why: str) -> None:
        super().__init__(why)
        self.how, self.why = how, why  # how: "skip" | "fail"


def _wanted(marker: pytest.Mark) -> str | None:
    vendor = marker.kwargs.get("vendor", marker.args[0] if marker.args else None)
    if vendor is not None and vendor not in _VENDORS:
        raise _Refuse("fail", f"@pytest.mark.{MARKER}({vendor!r}): vendor must be one of {', '.join(_VENDORS)}")
    return vendor


def _choose(config: pytest.Config, wanted: str | None) -> GpuDevice:
    """The device a GPU test runs on; raises ``_Refuse`` saying to skip or fail, and why."""
    choice = config.getoption("tilesim_device")
    if choice == "none":
        raise _Refuse("skip", "GPU test skipped: --tilesim-device none")
    if choice in _VENDORS:
        if wanted is not None and wanted != choice:
            raise _Refuse("skip", f"needs a {wanted} GPU; --tilesim-device {choice}")
        ok, desc = _probe(config, choice)
        if not ok:
            raise _Refuse("fail", f"--tilesim-device {choice} was given, but no {choice} device is usable: {desc}")
        return GpuDevice(choice, desc)
    reasons = []
    for vendor in (wanted,) if wanted else _VENDORS:
        ok, desc = _probe(config, vendor)
        if ok:
            return GpuDevice(vendor, desc)
        reasons.append(f"{vendor}: {desc}")
    raise _Refuse("skip", f"no {wanted + ' ' if wanted else ''}GPU usable ({'; '.join(reasons)})")


@pytest.hookimpl(trylast=True)  # after -k/-m deselection: probe only for tests that will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker(MARKER)
        if marker is None:
            continue
        try:
            item.stash[_CHOSEN] = _choose(config, _wanted(marker))
        except _Refuse as r:
            if r.how == "skip":  # a skip mark, so the report points at the test, not at this plugin
                item.add_marker(pytest.mark.skip(reason=r.why))
            else:
                item.stash[_FAIL] = r.why


def pytest_runtest_setup(item: pytest.Item) -> None:
    why = item.stash.get(_FAIL, None)
    if why is not None:
        pytest.fail(why, pytrace=False)


@pytest.fixture
def tilesim_device(request: pytest.FixtureRequest) -> GpuDevice:
    """The GPU a ``tilesim_gpu`` test runs on (``vendor``, ``description``); skips as the marker does."""
    chosen = request.node.stash.get(_CHOSEN, None)
    if chosen is not None:
        return chosen
    try:
        return _choose(request.config, None)
    except _Refuse as r:
        refused = r
    if refused.how == "skip":
        pytest.skip(refused.why)
    pytest.fail(refused.why, pytrace=False)
