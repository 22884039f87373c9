"""Teaching notebooks execute: every code cell of docs/notebooks/*.ipynb runs, in order, in one
namespace per notebook; the cells assert what they teach."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "docs" / "notebooks").glob("*.ipynb"))


def test_there_are_six_notebooks():
    assert len(NOTEBOOKS) == 6


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path: Path, capsys):
    nb = json.loads(path.read_text())
    code = [("".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all("assert" in c or "print" in c for c in code)
    ns: dict[str, object] = {"__name__": "__notebook__"}
    for i, cell in enumerate(code):
        try:
            exec(compile(cell, f"{path.name}[cell {i}]", "exec"), ns)  # noqa: S102 - our own notebooks
        except Exception as e:  # name the cell that failed
            raise AssertionError(f"{path.name} cell {i} failed: {e!r}\n{cell}") from e
