"""Docs execute: every ```python block of README.md and the docs pages listed in DOCS runs (in order, one
namespace per file) and every `$ tilesim ...` console line exits 0."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tilesim.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "docs" / "guide.md", ROOT / "docs" / "testing.md", ROOT / "docs" / "getting-started.md",
        ROOT / "docs" / "porting.md"]


def _blocks(path: Path, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", path.read_text(), re.S)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_python_blocks_run(path: Path) -> None:
    blocks = _blocks(path, "python")
    assert blocks, f"{path.name} has no python examples"
    ns: dict[str, object] = {}
    for code in blocks:
        exec(compile(code, str(path), "exec"), ns)  # noqa: S102 - our own documentation


COMMANDS = [
    (p.name, line[2:].strip())
    for p in DOCS
    for block in _blocks(p, "console")
    for line in block.splitlines()
    if line.startswith("$ tilesim ")
]


@pytest.mark.parametrize(("doc", "cmd"), COMMANDS, ids=[c for _, c in COMMANDS])
def test_console_examples_run(doc: str, cmd: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(shlex.split(cmd)[1:]) == 0
    assert capsys.readouterr().out.strip()
