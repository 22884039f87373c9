"""The device process: ``python -m tilesim.hw._device_child FOLDER`` (started by :mod:`tilesim.hw.watchdog`).

Reads ``FOLDER/request.json`` and the input ``.npy`` files, probes for a device when asked (once,
here: the caller's process never initialises a device runtime), runs the runner, and writes
``FOLDER/result.json`` with the outputs as ``.npy`` files. It imports tilesim and the runner's
module, never the caller's ``__main__``. Every exception becomes a message in the result, never
a traceback; a crash or a kill leaves no result, which the watchdog reports.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from tilesim.codegen.hip import Emitted
from tilesim.errors import DeviceError
from tilesim.hw.watchdog import load_arrays, save_arrays
from tilesim.ir.core import Program


def _is_oom(e: BaseException) -> bool:
    text = (type(e).__name__ + " " + str(e)).lower()
    return isinstance(e, MemoryError) or "outofmemory" in text or "out of memory" in text or "out_of_memory" in text


def _resolve(ref: str) -> Any:
    mod, _, qual = ref.partition(":")
    obj: Any = importlib.import_module(mod)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def _emitted(doc: dict[str, Any] | None) -> Any:
    if doc is None:
        return None
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in doc.items() if k != "program"}
    return Emitted(program=Program.from_json(doc["program"]), **fields)


def _error(e: BaseException) -> dict[str, Any]:
    kind = e.kind if isinstance(e, DeviceError) else ("oom" if _is_oom(e) else "launch")
    first = (str(e).strip().splitlines() or [""])[0][:300]
    where = traceback.extract_tb(e.__traceback__)[-1:] if e.__traceback__ else []
    at = f" (at {os.path.basename(where[0].filename)}:{where[0].lineno})" if where else ""
    msg = first if isinstance(e, DeviceError) else f"{type(e).__name__}: {first}{at}"
    return {"status": "error", "kind": kind, "message": msg or type(e).__name__}


def serve(folder: Path) -> dict[str, Any]:
    req = json.loads((folder / "request.json").read_text())
    for p in reversed(req.get("sys_path", [])):
        if p not in sys.path:
            sys.path.insert(1, p)
    device, cc = None, None
    try:
        if req.get("probe"):
            cc, device = _resolve(req["probe"])()
            if cc is None:
                return {"status": "unavailable", "why": str(device)}
            if cc < req.get("min_cc", 0):
                return {"status": "unavailable",
                        "why": f"the device ({device}) is sm_{cc}, older than {req.get('target', '')}"}
        runner = _resolve(req["runner"])
        result = runner(_emitted(req.get("emitted")), load_arrays(folder, req.get("arrays", {})))
    except BaseException as e:  # everything goes back to the parent as a message, never a traceback
        return {**_error(e), "device": device}
    try:
        body = ({"outputs": save_arrays(folder, "out_", {str(k): v for k, v in result.items()})}
                if isinstance(result, dict) else {"type": type(result).__name__})
    except BaseException as e:  # e.g. a disk that is full: still a message, not a traceback
        return {**_error(e), "device": device}
    return {"status": "ok", "device": device, "cc": cc, "result": body}


def main(argv: list[str]) -> int:
    folder = Path(argv[1])
    msg = serve(folder)
    tmp = folder / "result.json.tmp"
    tmp.write_text(json.dumps(msg))
    os.replace(tmp, folder / "result.json")  # a kill mid-write leaves no half result
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
