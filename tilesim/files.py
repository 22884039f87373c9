"""Files tilesim writes where the user says (``--out``, ``--heatmap``, the gallery folder).

Never through a symbolic link — a link planted where the output goes would make tilesim overwrite
whatever it points to — and always whole: the bytes go to a temporary file in the same folder,
then ``os.replace`` puts it in place, so a reader (or an interrupted run) never sees half a file.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from tilesim.errors import OutputError

__all__ = ["refuse_link", "write_output"]


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
