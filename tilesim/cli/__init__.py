"""The ``tilesim`` command line.

Every subcommand prints text by default and JSON with ``--format json``. A bad argument is
one line on stderr (``tilesim: error: …`` naming the valid choices) and exit status 2 — never
a traceback.
"""


from __future__ import annotations

import re
import signal
import sys
import threading
from collections.abc import Sequence

from tilesim.cli import catalog as _catalog
from tilesim.cli import programs as _programs
from tilesim.cli.parser import UsageError, build_parser
from tilesim.errors import TilesimError

__all__ = ["main", "build_parser"]

_COMMANDS = {
    "targets": _catalog.cmd_targets,
    "instructions": _catalog.cmd_instructions,
    "explain": _catalog.cmd_explain,
    "layout": _catalog.cmd_layout,
    "demo": _catalog.cmd_demo,
    "check": _programs.cmd_check,
    "simulate": _programs.cmd_simulate,
    "emit": _programs.cmd_emit,
    "compile": _programs.cmd_compile,
    "run": _programs.cmd_run,
    "devices": _catalog.cmd_devices,
    "gallery": _catalog.cmd_gallery,
    "port": _programs.cmd_port,
    "check-layout": _catalog.cmd_check_layout,
    "emulate": _programs.cmd_emulate,
    "audit": _programs.cmd_emulate,
}


# C0 controls but tab and newline, DEL, C1 controls (0x9b is CSI on its own), and the bidirectional
# overrides and isolates: printed raw, a name holding them could set the terminal's title, clear the
# screen, move the cursor over a finding or reorder what a reader sees ("Trojan Source")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _terminal_text(text: str) -> str:
    """``text`` with every terminal control character shown as its escape (``\\x1b``), for stdout and stderr."""
    return _CONTROL.sub(lambda m: ascii(m.group())[1:-1], text)


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that ``finally`` blocks run (temporary folders removed,
    compiler process groups killed); a BaseException so the user's ``except Exception`` cannot keep it."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    in_main = threading.current_thread() is threading.main_thread()
    old_term = signal.signal(signal.SIGTERM, _on_sigterm) if in_main else None
    try:
        return _main(argv)
    except KeyboardInterrupt:  # SIGINT: one line, the shell's 128 + 2
        print("tilesim: interrupted", file=sys.stderr)
        return 130
    except _Terminated:  # 128 + SIGTERM (15)
        print("tilesim: terminated", file=sys.stderr)
        return 143
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, old_term if old_term is not None else signal.SIG_DFL)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as done:  # --help and --version print, then argparse exits 0
            if done.code in (0, None):
                return 0
            raise
        if not args.command:
            parser.print_help()
            return 0
        out = _COMMANDS[args.command](args)
        code = 0
        if isinstance(out, tuple):
            out, code = out
    except (TilesimError, UsageError, OSError) as e:  # OSError: an --out/OUTDIR that cannot be written
        print("tilesim: error: " + _terminal_text(str(e).replace("\r", " ").replace("\n", " ")), file=sys.stderr)
        return 2
    try:
        print(_terminal_text(str(out)))
    except BrokenPipeError:  # `tilesim layout … | head`
        sys.stderr.close()
    return code


