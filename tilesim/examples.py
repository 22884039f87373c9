"""Load the runnable examples of a source checkout from anywhere: ``tilesim.examples.load("gemm")``.

The examples (``examples/*.py`` at the top of the repository) are teaching material, not part of
the installed package: shipping them inside the wheel would put a top-level package named
``examples`` into site-packages, where it collides with every other project's. A notebook or
script whose working directory is not the repository root (Jupyter starts its kernel in the
notebook's folder) cannot ``import examples`` by name, so this helper finds the folder next to the
``tilesim`` package the interpreter imported (``<checkout>/tilesim`` -> ``<checkout>/examples``, or
the folder named by ``$TILESIM_EXAMPLES``) and imports it under its usual name through the import
system — no ``sys.path`` edits, no walking up from the caller's directory. The examples keep
importing each other as ``examples.gemm``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from tilesim.errors import TilesimError, choices

__all__ = ["ExamplesError", "folder", "load", "names"]


class ExamplesError(TilesimError, LookupError):
    """The examples folder is missing (an install without a source checkout) or has no such example."""


def folder() -> Path:
    """The examples folder: ``$TILESIM_EXAMPLES`` if set, else ``examples/`` beside the imported ``tilesim``."""
    env = os.environ.get("TILESIM_EXAMPLES")
    where = Path(env) if env else Path(__file__).resolve().parents[1] / "examples"
    if not (where / "__init__.py").is_file():
        raise ExamplesError(f"no examples folder at {where}: the examples ship with a source checkout of tilesim "
                            "(git clone), not with the wheel; set TILESIM_EXAMPLES to a checkout's examples/ folder")
    return where


def names() -> list[str]:
    """The example modules available (``gemm``, ``softmax``, ...)."""
    return sorted(p.stem for p in folder().glob("*.py") if not p.stem.startswith("_"))


def _package(where: Path) -> ModuleType:
    pkg = sys.modules.get("examples")
    if pkg is not None:
        paths = [Path(p).resolve() for p in getattr(pkg, "__path__", [])]
        if where.resolve() not in paths:  # someone else's `examples` package: never shadow it silently
            raise ExamplesError(f"a different module named 'examples' is already imported (from {paths or pkg}); "
                                f"tilesim's examples live in {where}")
        return pkg
    spec = importlib.util.spec_from_file_location("examples", where / "__init__.py",
                                                  submodule_search_locations=[str(where)])
    assert spec is not None and spec.loader is not None  # a file location always yields a loader
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["examples"] = pkg  # registered first, as the import system does, so submodules find it
    try:
        spec.loader.exec_module(pkg)
    except BaseException:
        del sys.modules["examples"]
        raise
    return pkg


def load(name: str) -> ModuleType:
    """Import ``examples.<name>`` from the examples folder, e.g. ``load("gemm").gemm``."""
    where = folder()
    valid = names()
    if name not in valid:
        raise ExamplesError(f"no example {name!r}; {choices(valid)}")
    _package(where)
    return importlib.import_module(f"examples.{name}")
