"""Direct global -> LDS loads (``global_load_lds_dword``, gfx950's ``global_load_lds_dwordx4``).

Semantics, from the CDNA3 / CDNA4 ISA guides ("global load LDS"; CDNA4 §9.1.9 "Memory Buffer Load
to LDS") and LLVM's AMDGPU backend:

* each active lane loads ``bytes`` from its global address (``vaddr`` 64-bit, or ``saddr`` SGPR pair
  + 32-bit ``vaddr``, + the instruction offset), exactly like ``global_load_*``;
* no VGPR is written: the data goes to LDS at ``M0 + offset + lane * stride``, one address for the
  wave from M0 (bits 15:0 on CDNA3, 17:0 on CDNA4), the same instruction offset, and ``stride`` =
  4 for a dword, 16 for dwordx3/dwordx4 (the guides: ``TIDinWave * 16`` for 3- and 4-dword loads;
  dwordx3 skips the fourth dword) — lanes write consecutive LDS places in lane order;
* it counts on ``vmcnt`` like any vector-memory load (LLVM's SIInsertWaitcnts tracks these "LDS
  DMA" writes on vmcnt: llvm/test/CodeGen/AMDGPU/lds-dma-waits.ll): the LDS bytes may be read only
  after an ``s_waitcnt vmcnt`` of the issuing wave retires the load, and another wave only after
  that wait and a barrier.

Here the bytes land in LDS at once (as loads complete at once elsewhere in the emulator), are
recorded as writes for the race detector, and stay *in flight* per LDS byte until the issuing
wave's vmcnt retires the load: an LDS access of such a byte is reported in ``result.hazards``
(:class:`tilesim.isa.hazards.Hazards`). Refused: the 1- and 2-byte forms (how they fill LDS is not
modelled), a size the target lacks, M0 bits above the offset field, LDS places past the allocation.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tilesim.isa.asm import Instr, IsaError, Reg
from tilesim.isa.state import M0, Ctx, Machine
from tilesim.targets import get_target, lds_dma_bytes

__all__ = ["compile_lds_dma", "is_lds_dma"]

# size suffix -> (bytes a lane loads, LDS stride between lanes)
_SIZES = {"dword": (4, 4), "dwordx3": (12, 16), "dwordx4": (16, 16)}
_M0_BITS = {"cdna3": 16, "cdna4": 18}  # width of M0's LDS offset field


def is_lds_dma(mnemonic: str) -> bool:
    return mnemonic.startswith("global_load_lds_")


def compile_lds_dma(ins: Instr, ctx: Ctx, st: Machine, imm_mod: Callable, check_mods: Callable,
                    vreg: Callable) -> Callable[[np.ndarray], None]:
    check_mods(ins, ctx, ("offset", "sc0", "sc1", "nt"))
    size = ins.mnemonic[len("global_load_lds_"):]
    fam = get_target(st.target).family
    if size not in _SIZES:
        raise ctx.err(ins, f"global_load_lds_{size} is not modelled (modelled: "
                           f"{', '.join('global_load_lds_' + s for s in _SIZES)})")
    nbytes, stride = _SIZES[size]
    if nbytes not in lds_dma_bytes(st.target) or fam not in _M0_BITS:
        raise ctx.err(ins, f"{st.target} has no {nbytes}-byte global_load_lds "
                           f"(sizes: {', '.join(map(str, lds_dma_bytes(st.target))) or 'none'})")
    m0_bits = _M0_BITS[fam]
    off = imm_mod(ins, "offset", ctx)
    if len(ins.operands) != 2:
        raise ctx.err(ins, "expected `vaddr, saddr|off`")
    vaddr, saddr = ins.operands
    use_s = isinstance(saddr, Reg) and saddr.file == "s"
    if use_s:
        if saddr.count != 2:
            raise ctx.err(ins, "the scalar base address takes an SGPR pair")
        a, si = vreg(vaddr, 1, ctx, ins, st), saddr.index
    else:
        a, si = vreg(vaddr, 2, ctx, ins, st), -1

    def run(sel: np.ndarray) -> None:
        w, ln = np.nonzero(st.active(sel))
        if w.size == 0:
            return
        where = f"{ins.mnemonic} ({st.target}, line {ins.line})"
        m0 = st.s[M0][w].astype(np.int64)
        if (m0 >> m0_bits).any():
            i = int(np.flatnonzero(m0 >> m0_bits)[0])
            raise IsaError(f"{where} wave {int(w[i])}: M0 = {int(m0[i]):#x} has bits above its {m0_bits}-bit LDS "
                           "offset field (not modelled)")
        if use_s:
            addr = st.read_s(si, 2)[w] + st.v[a][w, ln].astype(np.uint64)
        else:
            addr = st.read_v(a, 2)[w, ln]
        addr = (addr.astype(np.int64) + off).astype(np.uint64)
        src = st.heap.offsets(addr, nbytes, lambda i: f"{where} wave {int(w[i])} lane {int(ln[i])}")
        lds = st.lds
        dst = m0 + off + ln.astype(np.int64) * stride
        bad = (dst < 0) | (dst + nbytes > lds.size)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise IsaError(f"{where} wave {int(w[i])} lane {int(ln[i])}: LDS bytes {int(dst[i])}.."
                           f"{int(dst[i]) + nbytes} (M0 {int(m0[i])} + offset {off} + lane * {stride}) outside the "
                           f"{lds.size}-byte allocation")
        cols = dst[:, None] + np.arange(nbytes)
        gg = np.broadcast_to(st.group[w][:, None], cols.shape)
        lds.track(ins, gg.ravel(), cols.ravel(), np.broadcast_to(st.slot[w][:, None], cols.shape).ravel(),
                  np.broadcast_to(st.epoch[w][:, None], cols.shape).ravel(), True)
        lds.data[gg, cols] = st.heap.data[src[:, None] + np.arange(nbytes)]
        if st.hazards is not None:
            st.hazards.lds_dma(ins, gg.ravel(), cols.ravel(), np.broadcast_to(w[:, None], cols.shape).ravel())
    return run
