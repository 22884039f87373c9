"""One row of the benchmark table (:func:`_figure`: a figure, its baseline measured in the same run, the
ratio of their mins and of their medians, the goal) and the load average it is read with."""

from __future__ import annotations

import os
import statistics
from typing import Any

__all__ = ["_figure", "_load"]


def _load() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def _figure(fid: str, what: str, value: float | list[float], unit: str, baseline_what: str,
            baseline: float | list[float] | None, *, load_start: float | None, target: dict[str, float] | None = None,
            **extra: Any) -> dict[str, Any]:
    """One row. ``value``/``baseline`` are a measurement or a list of repeats: ``value`` is the min,
    ``median`` the median; ``ratio`` divides the mins, ``ratio_median`` the medians. The load
    average at the row's end is read here."""
    vals = value if isinstance(value, list) else [value]
    bases = baseline if isinstance(baseline, list) else None if baseline is None else [baseline]
    v, vm = min(vals), statistics.median(vals)
    b, bm = (min(bases), statistics.median(bases)) if bases else (None, None)
    ratio = v / b if b else None
    met = None
    if target:
        met = all((ratio is not None and ratio <= t) if k == "max_ratio" else v <= t for k, t in target.items())
    return {"id": fid, "what": what, "value": v, "median": vm, "repeats": len(vals), "unit": unit,
            "baseline": {"what": baseline_what, "value": b, "median": bm, "repeats": len(bases or [])},
            "ratio": ratio, "ratio_median": vm / bm if bm else None, "target": target, "met": met,
            "load_average_1min": {"start": load_start, "end": _load()}, "extra": extra}
