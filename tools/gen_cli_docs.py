"""Generate docs/cli.md from the argparse help of every subcommand (run after changing the CLI:
python tools/gen_cli_docs.py). tests/test_cli_docs.py fails when the file is stale."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tilesim.cli import build_parser

OUT = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def render() -> str:
    os.environ["COLUMNS"] = "100"  # stable wrapping
    parser = build_parser()
    parser.prog = "tilesim"
    parts = ["# tilesim command line\n", "Generated from `--help` by `tools/gen_cli_docs.py`; do not edit by hand.\n",
             "```text", parser.format_help().rstrip(), "```\n"]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        parts += [f"## tilesim {name}\n", "```text", p.format_help().rstrip(), "```\n"]
    return "\n".join(parts)


if __name__ == "__main__":
    OUT.write_text(render())
    print("wrote", OUT)
