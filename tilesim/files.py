"""Files tilesim writes where the user says (``--out``, ``--heatmap``, the gallery folder), the one
reader of the files it is given (program JSON, HIP sources, layout specs: :func:`read_input`), and
the one strict reader of the JSON documents it reads (programs, layouts, Gluon specs).

Never through a symbolic link — a link planted where the output goes would make tilesim overwrite
whatever it points to — and always whole: the bytes go to a temporary file in the same folder,
then ``os.replace`` puts it in place, so a reader (or an interrupted run) never sees half a file.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tilesim.errors import OutputError, TilesimError, choices

__all__ = ["refuse_link", "write_output", "read_input", "strict_json", "check_keys", "MAX_PROGRAM_BYTES",
           "MAX_SOURCE_BYTES"]

MAX_PROGRAM_BYTES = 32 << 20  # the largest example program (block_gemm, its layouts inline) is ~1 MB
MAX_SOURCE_BYTES = 8 << 20  # a HIP file for emulate/audit: one kernel and its helpers


def read_input(path: str | os.PathLike[str], what: str, limit: int, error: type[TilesimError]) -> str:
    """The UTF-8 text of the file ``path``, or ``error`` naming why not: not a regular file (a FIFO
    or a device would block the read forever, a folder cannot be read), over ``limit`` bytes (read
    whole, a sparse file of a few GiB is a MemoryError), unreadable, or not UTF-8."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as e:
        raise error(f"cannot read {what} {ascii(str(p))[1:-1]}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{what} {ascii(str(p))[1:-1]} is not a regular file (a FIFO, device or folder)")
    if st.st_size > limit:
        raise error(f"{what} {ascii(str(p))[1:-1]} has {st.st_size} bytes; at most {limit} are read")
    try:
        # O_NONBLOCK: a FIFO swapped in between the stat and the open does not block the open
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise error(f"{what} {ascii(str(p))[1:-1]} is not a regular file (a FIFO, device or folder)")
            data = f.read(limit + 1)  # stat and open are two steps: read at most the limit, whatever is there now
    except OSError as e:
        raise error(f"cannot read {what} {ascii(str(p))[1:-1]}: {e.strerror}") from None
    if len(data) > limit:
        raise error(f"{what} {ascii(str(p))[1:-1]} has more than {limit} bytes; at most {limit} are read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{what} {ascii(str(p))[1:-1]} is not UTF-8 text: {e.reason} at byte {e.start}") from None


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
