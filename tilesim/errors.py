"""Typed errors. Every failure tilesim reports on bad input is a ``TilesimError``.

Messages name the bad value and, where there is a closed set, the valid choices, so a
command-line user sees one line that says what to type instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "TilesimError",
    "TargetError",
    "LayoutError",
    "InstructionError",
    "ModifierError",
    "VerifyError",
    "ToolchainError",
    "DeviceError",
    "BudgetError",
    "InputError",
    "OutputError",
    "CheckWarning",
    "choices",
    "did_you_mean",
]


class TilesimError(Exception):
    """Base of every error tilesim raises on purpose."""


class TargetError(TilesimError, KeyError):
    """Unknown target name or a feature the target lacks."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class LayoutError(TilesimError, ValueError):
    """A layout that is malformed or used where it does not fit."""


class InstructionError(TilesimError, KeyError):
    """Unknown instruction, or one the target does not have."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ModifierError(TilesimError, ValueError):
    """An operand, wave size or modifier value the instruction does not accept."""


class VerifyError(TilesimError):
    """A tile program that the verifier rejects."""


class ToolchainError(TilesimError):
    """A compiler that is missing or failed."""


class DeviceError(TilesimError):
    """A device runtime that is missing or failed.

    ``kind`` says how (``launch``, ``oom``, ``watchdog``, ``crash``; ``unavailable`` when there is
    no usable device); ``exit_status`` is the device process's exit status when it ran in one
    (negative: killed by that signal); ``timeout_s`` the watchdog limit that fired.
    """

    def __init__(self, message: str = "", *, kind: str = "unavailable", exit_status: int | None = None,
                 timeout_s: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.exit_status = exit_status
        self.timeout_s = timeout_s


class BudgetError(TilesimError):
    """Work over a resource budget (``tilesim.budget``): the message names the estimate, the limit and
    the knob; ``budget``, ``estimate`` and ``limit`` carry them for code."""

    def __init__(self, message: str = "", *, budget: str = "", estimate: int | None = None,
                 limit: int | None = None) -> None:
        super().__init__(message)
        self.budget = budget
        self.estimate = estimate
        self.limit = limit


class InputError(TilesimError, ValueError):
    """A malformed argument or input value (wrong type, out of range, unknown name)."""


class OutputError(TilesimError):
    """An output path tilesim will not write: a symbolic link, a file where a folder belongs, or the reverse."""


class CheckWarning(UserWarning):
    """``simulate`` ran a program that ``check`` reports errors in: the outputs are what the hardware
    computes, not what the program says it computes (``SimResult.check_errors`` lists why)."""


def choices(values: Iterable[object], limit: int = 40) -> str:
    """Render a closed set of valid values for an error message."""
    vals = [str(v) for v in values]
    if len(vals) > limit:
        return ", ".join(vals[:limit]) + f", … ({len(vals)} in all)"
    return ", ".join(vals)


def did_you_mean(value: object, candidates: Iterable[object], n: int = 3) -> str:
    """`` did you mean X, Y?`` for the closest ``candidates`` to ``value`` (empty when none is close)."""
    names = [str(c) for c in candidates]
    close = difflib.get_close_matches(str(value).strip().lower(), [c.lower() for c in names], n=n, cutoff=0.6)
    if not close:
        return ""
    by_lower = {c.lower(): c for c in names}
    return " did you mean " + " or ".join(by_lower[c] for c in close) + "?"
