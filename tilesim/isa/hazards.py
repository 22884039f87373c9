"""Missing ``s_waitcnt``: registers used while the load that writes them may still be in flight.

The emulator completes every load at once, so without this a kernel that reads a loaded VGPR before
waiting for it would still compute the right answer. Here each load is also *issued* on its
counter — gfx9/gfx11 ``vmcnt`` (VMEM loads) and ``lgkmcnt`` (LDS; scalar loads complete out of
order, so only ``lgkmcnt(0)`` retires them), gfx12 ``loadcnt``, ``dscnt`` and ``kmcnt`` — and a
wait ``X(n)`` retires all but the ``n`` most recent loads of counter X (in order, as the ISA
guides specify for VMEM loads and LDS). An instruction that reads or writes a register whose load
is not yet retired is a hazard, reported once per (line, register) in ``result.hazards``.

Direct global -> LDS loads (``global_load_lds_*``, tilesim/isa/lds_dma.py) write no register: they
issue on ``vmcnt`` and leave their LDS bytes in flight instead, each byte remembering the issuing
wave and the load's place on its counter; an LDS access (``ds_*``, by any wave) of a byte whose load
that wave has not retired is a hazard, reported once per line.
"""

from __future__ import annotations

import re

import numpy as np

from tilesim.isa.asm import Instr, IsaError, Reg
from tilesim.isa.state import Machine
from tilesim.targets import get_target

__all__ = ["Hazards"]

# the counter each kind of memory operation counts on, per generation: VMEM loads and stores, every
# LDS operation (stores too), scalar loads
_COUNTERS = {"gfx12": {"vm": "loadcnt", "vm_store": "storecnt", "ds": "dscnt", "sm": "kmcnt"},
             "gfx11": {"vm": "vmcnt", "vm_store": "vscnt", "ds": "lgkmcnt", "sm": "lgkmcnt_smem"},
             "gfx9": {"vm": "vmcnt", "vm_store": "vmcnt", "ds": "lgkmcnt", "sm": "lgkmcnt_smem"}}


def _kind(m: str) -> str | None:
    if m.startswith("global_load_lds_"):
        return "vm_lds"
    if m.startswith(("global_load", "flat_load", "scratch_load", "buffer_load")):
        return "vm"
    if m.startswith(("global_store", "flat_store", "scratch_store", "buffer_store")):
        return "vm_store"
    if m.startswith("ds_"):
        return "ds"
    if m.startswith(("s_load", "s_buffer_load")):
        return "sm"
    return None


class Hazards:
    """Per-wave issue/retire counts per counter, and per register the load that last wrote it."""

    def __init__(self, st: Machine, target: str) -> None:
        isa = get_target(target).isa
        if isa not in _COUNTERS:
            raise IsaError(f"{target}: the wait counters of ISA generation {isa} are not modelled; modelled: "
                           f"{', '.join(_COUNTERS)}")
        self.names = _COUNTERS[isa]
        self.counters = sorted(set(self.names.values()))
        self.issued = {c: np.zeros(st.W, np.int64) for c in self.counters}
        self.done = {c: np.zeros(st.W, np.int64) for c in self.counters}
        nv = st.v.shape[0]
        self.v_seq = np.full((nv, st.W), -1, np.int64)
        self.v_cnt = np.zeros((nv, st.W), np.int8)
        self.s_seq = np.full((128, st.W), -1, np.int64)
        self.s_cnt = np.zeros((128, st.W), np.int8)
        self.st = st
        self.found: list[str] = []
        self._seen: set[tuple[int, str]] = set()
        # per (workgroup, LDS byte): the wave whose global_load_lds wrote it last and that load's place
        # on the wave's vmcnt (-1: none), made at the first such load
        self.dma_wave = self.dma_seq = np.zeros((0, 0), np.int64)
        self.dma_line = np.zeros((0, 0), np.int32)

    # ------------------------------------------------------------------ compile-time helpers
    def _regs(self, ins: Instr) -> tuple[np.ndarray, np.ndarray]:
        vs, ss = [], []
        for op in ins.operands:
            if isinstance(op, Reg) and op.file in ("v", "a"):
                base = self.st.vbase(op)
                vs += list(range(base, base + max(op.count, 1)))
            elif isinstance(op, Reg) and op.file == "s" and op.index < 124:
                ss += list(range(op.index, op.index + max(op.count, 1)))
        return np.array(vs, np.int64), np.array(ss, np.int64)

    def hook(self, ins: Instr) -> tuple:
        """What running ``ins`` means here: (registers touched, load counter and destination, waits)."""
        vs, ss = self._regs(ins)
        kind = _kind(ins.mnemonic)
        waits: list[tuple[str, int]] = []
        if ins.mnemonic == "s_waitcnt":
            for name, n in re.findall(r"(\w+)\((\d+)\)", ins.raw):
                waits.append((name, int(n)))
                if name == "lgkmcnt" and int(n) == 0:
                    waits.append(("lgkmcnt_smem", 0))
        elif ins.mnemonic.startswith("s_wait_") and ins.mnemonic != "s_wait_alu":
            n = int(ins.raw.split()[0], 0) if ins.raw.strip() else 0
            for name in ins.mnemonic[len("s_wait_"):].split("_"):
                waits.append((name + "cnt" if not name.endswith("cnt") else name, n))
            if "kmcnt" in ins.mnemonic and n != 0:
                waits = [w for w in waits if w[0] != "kmcnt"]  # scalar loads retire out of order
            if len(waits) > 1 and n != 0:
                waits = []  # a combined wait packs several counts into one immediate: retire nothing
        dest = None
        if kind == "vm_lds":  # issues on vmcnt; its destination is LDS bytes (lds_dma), not registers
            dest = (self.names["vm"], np.zeros(0, np.int64), np.zeros(0, np.int64))
        elif kind is not None:
            d = ins.operands[0] if ins.operands and kind in ("vm", "sm") or (
                kind == "ds" and ins.mnemonic.startswith(("ds_load", "ds_read", "ds_bpermute", "ds_permute"))) else None
            dv, ds = (self._regs(Instr(ins.mnemonic, (d,), (), ins.line, ins.text)) if isinstance(d, Reg)
                      else (np.zeros(0, np.int64), np.zeros(0, np.int64)))
            dest = (self.names[kind], dv, ds)  # stores issue on their counter with nothing to wait for
        return vs, ss, dest, waits

    # ------------------------------------------------------------------ LDS DMA
    def lds_dma(self, ins: Instr, g: np.ndarray, addr: np.ndarray, wave: np.ndarray) -> None:
        """A ``global_load_lds`` of waves ``wave`` wrote LDS bytes (``g``, ``addr``), one entry per byte;
        called while it runs, before :meth:`after` counts it (so its place is the current count)."""
        if self.dma_seq.size == 0:
            shape = (int(self.st.group.max(initial=0)) + 1, self.st.lds.data.shape[1])
            self.dma_seq, self.dma_wave = np.full(shape, -1, np.int64), np.zeros(shape, np.int64)
            self.dma_line = np.zeros(shape, np.int32)
        vm = self.names["vm"]
        self.dma_seq[g, addr] = self.issued[vm][wave]
        self.dma_wave[g, addr] = wave
        self.dma_line[g, addr] = ins.line

    def lds_access(self, ins: Instr, g: np.ndarray, addr: np.ndarray, write: bool) -> None:
        """An LDS access of bytes (``g``, ``addr``): a hazard where a global_load_lds may still be
        writing one (its wave's vmcnt has not retired it)."""
        if self.dma_seq.size == 0 or addr.size == 0:
            return
        seq = self.dma_seq[g, addr]
        wave = self.dma_wave[g, addr]
        pending = (seq >= 0) & (seq >= self.done[self.names["vm"]][wave])
        if not pending.any() or (ins.line, "lds") in self._seen or len(self.found) >= 64:
            return
        self._seen.add((ins.line, "lds"))
        i = int(np.flatnonzero(pending)[0])
        self.found.append(f"line {ins.line} `{ins.text}` {'writes' if write else 'reads'} LDS byte {int(addr[i])} "
                          f"(workgroup {int(g[i])}) while the global_load_lds of wave {int(wave[i])} at line "
                          f"{int(self.dma_line[g[i], addr[i]])} may still be writing it (no s_waitcnt "
                          f"{self.names['vm']} of that wave retired it)")

    # ------------------------------------------------------------------ run time
    def before(self, plan: tuple, ins: Instr, sel: np.ndarray) -> None:
        vs, ss, dest, waits = plan
        for name, n in waits:
            if name in self.issued:
                self.done[name] = np.where(sel, np.maximum(self.done[name], self.issued[name] - n), self.done[name])
        w = np.flatnonzero(sel)
        for file, regs, seq, cnt in (("v", vs, self.v_seq, self.v_cnt), ("s", ss, self.s_seq, self.s_cnt)):
            if regs.size == 0:
                continue
            if dest is not None:  # a load's own destination: in-order reuse on the same counter is fine
                drop = dest[1] if file == "v" else dest[2]
                regs = regs[~np.isin(regs, drop)]
            s = seq[regs][:, w]
            if not (s >= 0).any():
                continue
            c = cnt[regs][:, w]
            done = np.stack([self.done[k][w] for k in self.counters])  # [counters, waves]
            pending = (s >= 0) & (s >= np.take_along_axis(done, c.astype(np.int64), axis=0))
            for i in np.flatnonzero(pending.any(axis=1)):
                key = (ins.line, f"{file}{regs[i]}")
                if key in self._seen or len(self.found) >= 64:
                    continue
                self._seen.add(key)
                self.found.append(f"line {ins.line} `{ins.text}` uses {file}{regs[i]} while the load that writes "
                                  f"it may be in flight (no s_waitcnt {self.counters[int(c[i].max())]} retired it)")

    def after(self, plan: tuple, sel: np.ndarray) -> None:
        dest = plan[2]
        if dest is None:
            return
        name, dv, ds = dest
        k = self.counters.index(name)
        for regs, seq, cnt in ((dv, self.v_seq, self.v_cnt), (ds, self.s_seq, self.s_cnt)):
            if regs.size:
                seq[np.ix_(regs, sel)] = self.issued[name][sel][None, :]
                cnt[np.ix_(regs, sel)] = k
        self.issued[name] = np.where(sel, self.issued[name] + 1, self.issued[name])
