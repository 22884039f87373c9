"""The simulator's asynchronous global -> LDS copies (``ts.lds_copy_async``; tilesim/ir/async_copy.py).

At issue the source elements are read (as a load through the copy layout reads them: 0 outside the
tensor, reported) and the destination is checked as a write of the current epoch; its bytes are
then *in flight* (``Lds.flight``): any LDS access to them, by any wave, is counted as a race until
the data lands. The data lands — is written to LDS, and checked again as a write of that epoch —
at the ``async_wait`` that completes the copy's commit group in the issuing wave, as on the device
the wait is the first point the data is known to be there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tilesim.ir.core import Op
from tilesim.wave.codec import codec

__all__ = ["issue_copy", "land_copies"]


def issue_copy(sim: Any, op: Op) -> None:
    buf, lay, name = op.args[0], op.attr("layout"), op.attr("tensor")
    c = codec(lay, buf.dtype)
    regs = sim.gather(name, c, sim.scalar(op.args[3]), sim.scalar(op.args[4]), lazy=False)
    acc = sim.lds.access(buf, c, sim.scalar(op.args[1]), sim.scalar(op.args[2]))
    sim.lds.banks(acc, sim.active)
    eb = buf.lds.elem_bytes
    sim.lds.races(acc, eb, True, f"lds_copy_async to %{buf.id}", sim.active)
    index = sim.memo.setdefault("op_index", {id(o): i for i, o in enumerate(sim.p.walk())})  # for messages
    sim.lds.flight.issue(index.get(id(op), -1), acc.addr, eb, sim.active, (op, c, regs, acc))


def land_copies(sim: Any, op: Op) -> None:
    for p, land in sim.lds.flight.wait(op.attr("pending"), sim.active):
        copy, c, regs, acc = p.payload
        buf = copy.args[0]
        sim.lds.races(acc, p.eb, True, f"lds_copy_async to %{buf.id} (landing at an async_wait)", land)
        sim.lds.store(buf, c, regs, acc, land, buf.dtype)
