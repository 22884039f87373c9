"""Files tilesim writes where the user says (``--out``, ``--heatmap``, the gallery folder), and the
one strict reader of the JSON documents it reads (programs, layouts, Gluon specs).

Never through a symbolic link — a link planted where the output goes would make tilesim overwrite
whatever it points to — and always whole: the bytes go to a temporary file in the same folder,
then ``os.replace`` puts it in place, so a reader (or an interrupted run) never sees half a file.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tilesim.errors import OutputError, TilesimError, choices

__all__ = ["refuse_link", "write_output", "strict_json", "check_keys"]


def strict_json(text: str | bytes, what: str, error: type[TilesimError]) -> Any:
    """``json.loads(text)``, refusing an object that names a key twice with ``error``.

    Python's reader keeps the last of two equal keys, other readers the first: a document with
    ``"name"`` twice shows a reviewer one program and runs another. (Other malformed JSON raises
    what ``json.loads`` raises; the callers turn it into their typed error.)"""
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                raise error(f"{what}: key {ascii(k)[:60]} appears twice in one object")
            out[k] = v
        return out

    return json.loads(text, object_pairs_hook=pairs)


def check_keys(doc: Any, where: str, required: Iterable[str], optional: Iterable[str],
               error: type[TilesimError]) -> dict[str, Any]:
    """``doc`` when it is an object whose keys are all ``required`` and some ``optional`` ones;
    ``error`` naming the unknown or missing key and the valid keys otherwise. (An unknown key was
    ignored: a misspelt or planted field passed silently.)"""
    required, optional = tuple(required), tuple(optional)
    if not isinstance(doc, dict):
        raise error(f"{where}: expected a JSON object with keys {choices(required + optional)}; "
                    f"got {ascii(doc)[:60]}")
    for k in doc:
        if k not in required and k not in optional:
            raise error(f"{where}: unknown key {ascii(k)[:60]}; keys: {choices(required + optional)}")
    for k in required:
        if k not in doc:
            raise error(f"{where}: missing key {k!r}; keys: {choices(required + optional)}")
    return doc


def refuse_link(path: str | os.PathLike[str], what: str = "output") -> Path:
    """``path`` as a Path, or :class:`OutputError` when it is a symbolic link (dangling or not)."""
    p = Path(path)
    if p.is_symlink():
        raise OutputError(f"{what} {p} is a symbolic link (to {os.readlink(p)}); tilesim does not write through "
                          "links: remove it or choose another path")
    return p


def write_output(path: str | os.PathLike[str], data: str | bytes, what: str = "output") -> Path:
    """Write ``data`` to ``path`` atomically, refusing links, folders and missing parent folders."""
    p = refuse_link(path, what)
    if p.is_dir():
        raise OutputError(f"{what} {p} is a folder; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"{what} {p}: folder {parent} does not exist")
    tmp: Path | None = parent / f".{p.name}.{secrets.token_hex(6)}.part"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)  # umask applies
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, p)  # replaces the name itself: a link appearing meanwhile is replaced, not followed
        tmp = None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return p
