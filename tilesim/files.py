"""Files tilesim writes where the user says (``--out``, ``--heatmap``, the gallery folder), the one
reader of the files it is given (program JSON, HIP sources, layout specs: :func:`read_input`; arrays
as ``.npz``: :func:`read_arrays`, one ``.npy``: :func:`read_array`), and the one strict reader of the JSON documents it reads
(programs, layouts, Gluon specs).

Never through a symbolic link — a link planted where the output goes would make tilesim overwrite
whatever it points to — and always whole: the bytes go to a temporary file in the same folder,
then ``os.replace`` puts it in place, so a reader (or an interrupted run) never sees half a file.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import stat
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from tilesim.errors import OutputError, TilesimError, choices

__all__ = ["refuse_link", "write_output", "read_input", "read_array", "read_arrays", "strict_json", "check_keys",
           "MAX_PROGRAM_BYTES", "MAX_SOURCE_BYTES", "MAX_ARRAY_BYTES"]

MAX_PROGRAM_BYTES = 32 << 20  # the largest example program (block_gemm, its layouts inline) is ~1 MB
MAX_SOURCE_BYTES = 8 << 20  # a HIP file for emulate/audit: one kernel and its helpers
MAX_ARRAY_BYTES = 1 << 30  # --inputs / --expect: a 8192 x 8192 float64 matrix is 512 MiB


def read_input(path: str | os.PathLike[str], what: str, limit: int, error: type[TilesimError]) -> str:
    """The UTF-8 text of the file ``path``, or ``error`` naming why not: not a regular file (a FIFO
    or a device would block the read forever, a folder cannot be read), over ``limit`` bytes (read
    whole, a sparse file of a few GiB is a MemoryError), unreadable, or not UTF-8."""
    data = _read_bytes(path, what, limit, error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{what} {ascii(str(path))[1:-1]} is not UTF-8 text: {e.reason} at byte {e.start}") from None


def read_arrays(path: str | os.PathLike[str], what: str, limit: int, error: type[TilesimError]) -> dict[str, Any]:
    """The arrays of the ``.npz`` file ``path`` (``np.savez``), by name, or ``error`` naming why not:
    as :func:`read_input`, and not an ``.npz`` archive, a member over ``limit`` bytes once inflated
    (a small archive can inflate to any size), or a pickled object array (data, never code:
    ``allow_pickle=False``)."""
    where = f"{what} {ascii(str(path))[1:-1]}"
    data = _read_bytes(path, what, limit, error)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members = z.infolist()
    except (zipfile.BadZipFile, ValueError):
        raise error(f"{where} is not an .npz archive (numpy.savez writes one); a single .npy is not read") from None
    if sum(m.file_size for m in members) > limit:
        raise error(f"{where} inflates to {sum(m.file_size for m in members)} bytes; at most {limit} are read")
    names = [m.filename for m in members]
    twice = [n for n in names if names.count(n) > 1]
    if twice:  # zip allows it; which copy is read is up to the reader (as a JSON key twice: strict_json)
        raise error(f"{where}: member {ascii(twice[0])[:60]} appears twice")
    bad = [n for n in names if not n.endswith(".npy")]
    if bad:
        raise error(f"{where}: member {ascii(bad[0])[:60]} is not an array (.npy); not an .npz from numpy.savez")
    out = {}
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            for name in z.files:
                out[name] = z[name]
    except ValueError as e:  # numpy: "Object arrays cannot be loaded when allow_pickle=False", bad headers
        if "allow_pickle" in str(e):
            raise error(f"{where}: array holds pickled Python objects; only numeric arrays are read") from None
        raise error(f"{where}: not a readable array: {e}"[:300]) from None
    except (OSError, EOFError, zipfile.BadZipFile) as e:
        raise error(f"{where}: not a readable .npz archive: {e}"[:300]) from None
    return out


def read_array(path: str | os.PathLike[str], what: str, limit: int, error: type[TilesimError]) -> Any:
    """The array of the ``.npy`` file ``path`` (``np.save``), or ``error`` naming why not: as
    :func:`read_input` (a regular file of at most ``limit`` bytes: a FIFO blocked ``np.load`` forever), and
    data only (``allow_pickle=False``)."""
    where = f"{what} {ascii(str(path))[1:-1]}"
    data = _read_bytes(path, what, limit, error)
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except ValueError as e:
        if "allow_pickle" in str(e):
            raise error(f"{where}: array holds pickled Python objects; only numeric arrays are read") from None
        raise error(f"{where}: not a readable .npy array: {e}"[:300]) from None
    except (OSError, EOFError) as e:
        raise error(f"{where}: not a readable .npy array: {e}"[:300]) from None


def _read_bytes(path: str | os.PathLike[str], what: str, limit: int, error: type[TilesimError]) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them, or ``error`` naming why not."""
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
    return data


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
