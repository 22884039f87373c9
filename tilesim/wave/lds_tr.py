"""Simulation of ``lds_load_tr``: each lane reads its contiguous bytes of LDS at the address the
plan (:func:`tilesim.ir.lds_tr.tr_plan`) gives it, then the elements move between lanes by the
catalog's lane map — the same two steps the hardware takes, vectorised over every (workgroup,
wave, instruction, lane) at once. Bank conflicts of transpose reads are not modelled (the CDNA4
guide does not describe their bank schedule)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tilesim.errors import VerifyError
from tilesim.ir.core import Op
from tilesim.ir.lds_tr import op_plan, tr_addresses
from tilesim.matrix.dtypes import decode

__all__ = ["run_lds_load_tr"]


def run_lds_load_tr(sim: Any, op: Op) -> None:
    buf, out = op.args[0], op.out
    plan = op_plan(op, sim.p.target)
    row = plan.row
    addr, why = tr_addresses(plan, buf.lds, sim.scalar(op.args[1]), sim.scalar(op.args[2]))
    if why:
        raise VerifyError(f"lds_load_tr from %{buf.id}: {why}")
    addr = addr + sim.lds.offset[buf.id]  # [G, instruction, lane]
    eb, E, nb = buf.lds.elem_bytes, row.elems, row.read_bits // 8
    G = addr.shape[0]
    sim.lds.races_at((addr[..., None] + np.arange(E) * eb).reshape(G, -1), eb, False, f"lds_load_tr from %{buf.id}",
                     sim.active)
    raw = sim.lds.mem[sim.wg_of[:, None, None, None], addr[..., None] + np.arange(nb)]  # [G, instruction, lane, bytes]
    unwritten = sim.lds.written[sim.wg_of[:, None, None, None], addr[..., None] + np.arange(nb)].min(-1) == 0
    sim.lds.unwritten_at(unwritten.reshape(G, -1), addr.reshape(G, -1), f"lds_load_tr from %{buf.id}", sim.active)
    elems = np.ascontiguousarray(raw).view(f"<u{eb}")  # [G, instruction, lane, E]
    slots = plan.slot_src.shape[1]
    j = np.arange(slots) // E
    got = elems[:, j[None, :], plan.slot_src[..., 0], plan.slot_src[..., 1]]  # [G, dest lane, slot]
    c = sim.codec_of(out)
    rec_slot = (c.rec[:, 3] * 32 + c.rec[:, 5]) // row.elem_bits
    bits = got[:, c.rec[:, 4], rec_slot].astype(np.uint64)
    sim.set_frag(out, c.encode(decode(bits, buf.dtype)))
