"""Memory instructions: global/flat, scratch, scalar loads, and LDS (``ds_*``) with a race detector.

Global memory is a byte heap holding named buffers at fake 64-bit addresses with unmapped gaps
between them: an access that is not wholly inside one buffer raises :class:`IsaError` naming the
instruction, wave and lane (real hardware might read garbage or fault). LDS is bytes per workgroup
of the descriptor's size; an access past it raises too. Scratch is private bytes per lane.

Race detector: each LDS byte remembers the wave (within its workgroup) that last wrote it and the
barrier epoch of that write, and the set of waves that read it in the current epoch. A read of a
byte another wave wrote in the same epoch, or a write of a byte another wave read or wrote in the
same epoch, is a race — a missing ``s_barrier`` between them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tilesim.errors import InstructionError
from tilesim.isa.asm import Imm, Instr, IsaError, Reg
from tilesim.isa.lds_dma import compile_lds_dma, is_lds_dma
from tilesim.isa.state import Ctx, Machine
from tilesim.isa.variants import check_halves, permute_halves
from tilesim.matrix.lds_transpose import TransposeRead, transpose_read

__all__ = ["Heap", "Lds", "Race", "compile_memory"]

_U32, _U64 = np.uint32, np.uint64
BASE = 0x7F0000000000  # high enough that a pointer truncated to 32 bits lands outside every buffer
_GAP = 4096


class Heap:
    """Named buffers at fake addresses."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.starts: list[int] = []
        self.sizes: list[int] = []
        self.data = np.zeros(0, np.uint8)

    def add(self, name: str, data: bytes | np.ndarray) -> int:
        raw = np.frombuffer(bytes(data), np.uint8) if isinstance(data, (bytes, bytearray)) else \
            np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        start = (self.data.size + _GAP + 255) // 256 * 256
        self.data = np.concatenate([self.data, np.zeros(start - self.data.size, np.uint8), raw])
        self.names.append(name)
        self.starts.append(start)
        self.sizes.append(raw.size)
        return BASE + start

    def view(self, name: str) -> np.ndarray:
        i = self.names.index(name)
        return self.data[self.starts[i]: self.starts[i] + self.sizes[i]]

    def offsets(self, addr: np.ndarray, nbytes: int, what: Callable[[int], str]) -> np.ndarray:
        """Heap offsets of ``addr`` (uint64), each checked to lie with its ``nbytes`` in one buffer."""
        off = addr.astype(np.int64) - BASE if addr.size else addr.astype(np.int64)
        if off.size == 0:
            return off
        starts, sizes = np.array(self.starts, np.int64), np.array(self.sizes, np.int64)
        k = np.searchsorted(starts, off, side="right") - 1
        kk = np.maximum(k, 0)
        ok = (k >= 0) & (off >= starts[kk]) & (off + nbytes <= starts[kk] + sizes[kk])
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            bufs = ", ".join(f"{n} at {BASE + s:#x}+{z}" for n, s, z in zip(self.names, self.starts, self.sizes))
            raise IsaError(f"{what(i)}: address {int(addr[i]):#x} ({nbytes} bytes) is outside every buffer ({bufs})")
        return off


@dataclass(frozen=True)
class Race:
    kind: str  # "read after write" | "write after read" | "write after write"
    line: int
    text: str
    workgroup: int
    wave: int
    other_wave: int
    address: int

    def __str__(self) -> str:
        return (f"LDS race ({self.kind}) at line {self.line} `{self.text}`: workgroup {self.workgroup} "
                f"wave {self.wave} "
                f"touches byte {self.address} that wave {self.other_wave} accessed since the last barrier")


class Lds:
    def __init__(self, groups: int, size: int) -> None:
        self.size = size
        self.data = np.zeros((groups, max(size, 1)), np.uint8)
        self.writer = np.full((groups, max(size, 1)), -1, np.int16)
        self.wepoch = np.zeros((groups, max(size, 1)), np.int32)
        self.readers = np.zeros((groups, max(size, 1)), np.uint64)
        self.repoch = np.full((groups, max(size, 1)), -1, np.int32)
        self.races: list[Race] = []
        # reads of LDS bytes no store (nor async copy) wrote: the hardware's LDS holds what an earlier
        # workgroup left there, the emulator's zeros (an LDS accumulator never zeroed gave the right sum)
        self.unwritten: list[str] = []

    def track(self, ins: Instr, g: np.ndarray, addr: np.ndarray, slot: np.ndarray, epoch: np.ndarray,
              write: bool) -> None:
        """``g``/``addr``/``slot``/``epoch``: per byte accessed (workgroup, LDS byte, wave slot, epoch)."""
        wr, we = self.writer[g, addr], self.wepoch[g, addr]
        raw = (wr >= 0) & (wr != slot) & (we == epoch)
        bad = raw.copy()
        kinds = np.where(raw, 0, -1)
        if write:
            rd, re_ = self.readers[g, addr], self.repoch[g, addr]
            others = rd & ~(np.uint64(1) << slot.astype(np.uint64))
            war = (re_ == epoch) & (others != 0)
            bad |= war
            kinds = np.where(raw, 2, np.where(war, 1, -1))
        if bad.any() and len(self.races) < 64:
            i = int(np.flatnonzero(bad)[0])
            bitsv = int(others[i]) if kinds[i] == 1 else 0
            other = int(wr[i]) if kinds[i] != 1 else (bitsv & -bitsv).bit_length() - 1
            self.races.append(Race(("read after write", "write after read", "write after write")[int(kinds[i])]
                                   if write else "read after write", ins.line, ins.text, int(g[i]), int(slot[i]), other,
                                   int(addr[i])))
        if write:
            self.writer[g, addr] = slot
            self.wepoch[g, addr] = epoch
        else:
            fresh = wr < 0
            if fresh.any() and len(self.unwritten) < 16:
                i = int(np.flatnonzero(fresh)[0])
                self.unwritten.append(f"line {ins.line} `{ins.text}`: workgroup {int(g[i])} wave {int(slot[i])} reads "
                                      f"LDS byte {int(addr[i])} (and {int(fresh.sum()) - 1} more) that no store wrote")
            stale = self.repoch[g, addr] != epoch
            self.readers[g[stale], addr[stale]] = 0
            self.repoch[g, addr] = epoch
            np.bitwise_or.at(self.readers, (g, addr), np.uint64(1) << slot.astype(np.uint64))


# mnemonic stem -> (bytes, how): how = zext/sext (to 32 bits), dw (whole dwords), lo16/hi16 (d16 halves)
_LOAD = {"u8": (1, "zext"), "ubyte": (1, "zext"), "i8": (1, "sext"), "sbyte": (1, "sext"),
         "u16": (2, "zext"), "ushort": (2, "zext"), "i16": (2, "sext"), "sshort": (2, "sext"),
         "b32": (4, "dw"), "dword": (4, "dw"), "b64": (8, "dw"), "dwordx2": (8, "dw"), "b96": (12, "dw"),
         "dwordx3": (12, "dw"), "b128": (16, "dw"), "dwordx4": (16, "dw"),
         "d16_b16": (2, "lo16"), "short_d16": (2, "lo16"), "d16_hi_b16": (2, "hi16"), "short_d16_hi": (2, "hi16"),
         "d16_u8": (1, "lo16z"), "ubyte_d16": (1, "lo16z"), "d16_hi_u8": (1, "hi16z"), "ubyte_d16_hi": (1, "hi16z"),
         "d16_i8": (1, "lo16s"), "sbyte_d16": (1, "lo16s"), "d16_hi_i8": (1, "hi16s"), "sbyte_d16_hi": (1, "hi16s")}
_STORE = {"b8": (1, "lo"), "byte": (1, "lo"), "b16": (2, "lo"), "short": (2, "lo"), "b32": (4, "dw"),
          "dword": (4, "dw"),
          "b64": (8, "dw"), "dwordx2": (8, "dw"), "b96": (12, "dw"), "dwordx3": (12, "dw"), "b128": (16, "dw"),
          "dwordx4": (16, "dw"), "d16_hi_b8": (1, "hi"), "byte_d16_hi": (1, "hi"), "d16_hi_b16": (2, "hi"),
          "short_d16_hi": (2, "hi"), "b8_d16_hi": (1, "hi"), "b16_d16_hi": (2, "hi")}
_DS_ALIAS = {"ds_read_": "ds_load_", "ds_write_": "ds_store_", "ds_read2_": "ds_load_2addr_",
             "ds_read2st64_": "ds_load_2addr_stride64_", "ds_write2st64_": "ds_store_2addr_stride64_",
             "ds_write2_": "ds_store_2addr_",
             # the d16 LDS loads (gfx9 ds_read_*_d16*, renamed above; RDNA ds_load_*_d16*) onto the global stems:
             # the low or high 16 bits of the VGPR are written, the other half kept
             "ds_load_u16_d16_hi": "ds_load_d16_hi_b16", "ds_load_u16_d16": "ds_load_d16_b16",
             "ds_load_u8_d16_hi": "ds_load_d16_hi_u8", "ds_load_u8_d16": "ds_load_d16_u8",
             "ds_load_i8_d16_hi": "ds_load_d16_hi_i8", "ds_load_i8_d16": "ds_load_d16_i8"}


def _to_regs(data: np.ndarray, nbytes: int, how: str, old: np.ndarray | None) -> list[np.ndarray]:
    """Bytes ``[N, nbytes]`` → the uint32 values of the destination VGPRs (``old``: the first VGPR's
    current value, for d16 forms that keep the other half)."""
    if how == "dw":
        return list(np.ascontiguousarray(data).view("<u4").reshape(data.shape[0], -1).T)
    val = data[:, 0].astype(_U32) if nbytes == 1 else np.ascontiguousarray(data).view("<u2")[:, 0].astype(_U32)
    if how.endswith("s") or how == "sext":
        width = 8 * nbytes
        val = np.where(val >= (1 << (width - 1)), val.astype(np.int64) - (1 << width), val).astype(np.int64)
        val = (val & (0xFFFFFFFF if how == "sext" else 0xFFFF)).astype(_U32)
    if how in ("zext", "sext"):
        return [val]
    assert old is not None
    if how.startswith("lo16"):
        return [(old & _U32(0xFFFF0000)) | (val & _U32(0xFFFF))]
    return [(old & _U32(0xFFFF)) | ((val & _U32(0xFFFF)) << _U32(16))]


def _from_regs(regs: list[np.ndarray], nbytes: int, how: str) -> np.ndarray:
    if how == "dw":
        return np.ascontiguousarray(np.stack(regs, 1).astype("<u4")).view(np.uint8).reshape(len(regs[0]), -1)
    v = regs[0] >> _U32(16) if how == "hi" else regs[0]
    return np.ascontiguousarray(v.astype("<u4")).view(np.uint8).reshape(-1, 4)[:, :nbytes]


def _imm_mod(ins: Instr, name: str, ctx: Ctx, default: int = 0) -> int:
    v = ins.mod(name)
    if v is None:
        return default
    try:
        return int(v, 0)
    except ValueError:
        raise ctx.err(ins, f"{name}:{v} is not an integer") from None


def _check_mods(ins: Instr, ctx: Ctx, allowed: tuple[str, ...]) -> None:
    bad = [k for k, _ in ins.mods if k not in allowed]
    if bad:
        raise ctx.err(ins, f"modifier(s) {', '.join(bad)} not modelled")


def _vreg(op: object, n: int, ctx: Ctx, ins: Instr, st: Machine) -> int:
    if not isinstance(op, Reg) or op.file not in ("v", "a") or op.neg or op.abs or op.half:
        raise ctx.err(ins, f"operand {op!r} must be a vector register")
    if op.count != n:
        raise ctx.err(ins, f"operand needs {n} register(s), got {op.count}")
    try:
        return st.vbase(op)
    except IsaError as e:
        raise ctx.err(ins, str(e)) from None


def compile_memory(ins: Instr, ctx: Ctx, st: Machine) -> Callable[[np.ndarray], None] | None:
    m = ins.mnemonic
    if m.startswith(("ds_read_b64_tr_", "ds_read_b96_tr_", "ds_load_tr", "ds_load_b64_tr_", "ds_load_b96_tr_",
                     "ds_load_b128_tr_")):
        try:
            row = transpose_read(m, st.target)
        except InstructionError as e:
            raise ctx.err(ins, str(e)) from None
        return _ds_transpose(ins, row, ctx, st)
    for a, b in _DS_ALIAS.items():
        if m.startswith(a):
            m = b + m[len(a):]
    if is_lds_dma(m):  # before global_load_*: no VGPR destination, its data goes to LDS
        return compile_lds_dma(ins, ctx, st, _imm_mod, _check_mods, _vreg)
    if m.startswith(("global_", "flat_")):
        return _global(ins, m.split("_", 1)[1], ctx, st)
    if m.startswith("scratch_"):
        return _scratch(ins, m.split("_", 1)[1], ctx, st)
    if m.startswith(("s_load_", "s_buffer_load")):
        return _smem(ins, m, ctx, st)
    if m.startswith("ds_"):
        return _ds(ins, m, ctx, st)
    return None


def _lanes(st: Machine, sel: np.ndarray, what: str, ins: Instr) -> tuple[np.ndarray, np.ndarray, Callable[[int], str]]:
    w, ln = np.nonzero(st.active(sel))
    return w, ln, lambda i: f"{ins.mnemonic} ({st.target}, line {ins.line}) wave {int(w[i])} lane {int(ln[i])}"


def _global(ins: Instr, stem: str, ctx: Ctx, st: Machine) -> Callable[[np.ndarray], None]:
    _check_mods(ins, ctx, ("offset", "sc0", "sc1", "nt", "glc", "slc", "dlc", "th", "scope"))
    kind, _, size = stem.partition("_")
    ops = ins.operands
    off = _imm_mod(ins, "offset", ctx)
    if kind == "load":
        if size not in _LOAD:
            raise ctx.err(ins, "load size not modelled")
        nbytes, how = _LOAD[size]
        dst, vaddr, saddr = ops if len(ops) == 3 else (ops + (None,))[:3]
        nd = max(1, nbytes // 4)
        d = _vreg(dst, nd, ctx, ins, st)
    elif kind == "store":
        if size not in _STORE:
            raise ctx.err(ins, "store size not modelled")
        nbytes, how = _STORE[size]
        vaddr, data, saddr = ops
        d = _vreg(data, max(1, nbytes // 4), ctx, ins, st)
    elif kind == "atomic" and size in ("and", "or", "and_b32", "or_b32") and len(ops) == 3 \
            and not any(k in ("glc", "sc0") for k, _ in ins.mods) and "RETURN" not in str(ins.mod("th") or ""):
        # bitwise and/or of a dword without a returned value: lanes in order, which and/or does not see
        nbytes, how = 4, "dw"
        vaddr, data, saddr = ops
        d = _vreg(data, 1, ctx, ins, st)
    else:
        raise ctx.err(ins, "global/flat atomics other than and/or without return, and other forms, are not modelled")
    use_s = isinstance(saddr, Reg) and saddr.file == "s"
    if use_s:
        a = _vreg(vaddr, 1, ctx, ins, st)
        si = saddr.index
        if saddr.count != 2:
            raise ctx.err(ins, "the scalar base address takes an SGPR pair")
    else:
        a = _vreg(vaddr, 2, ctx, ins, st)
    heap = st.heap

    def addresses(sel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, Callable[[int], str]]:
        w, ln, what = _lanes(st, sel, "", ins)
        if use_s:
            addr = st.read_s(si, 2)[w] + st.v[a][w, ln].astype(_U64)
        else:
            addr = st.read_v(a, 2)[w, ln]
        addr = (addr.astype(np.int64) + off).astype(_U64)
        return w, ln, heap.offsets(addr, nbytes, what), what

    if kind == "load":
        def run_load(sel: np.ndarray) -> None:
            w, ln, o, _ = addresses(sel)
            data = heap.data[o[:, None] + np.arange(nbytes)]
            for k, val in enumerate(_to_regs(data, nbytes, how, st.v[d][w, ln])):
                st.v[d + k][w, ln] = val
        return run_load

    if kind == "atomic":
        fn = np.bitwise_and if size.startswith("and") else np.bitwise_or

        def run_atomic(sel: np.ndarray) -> None:
            w, ln, o, _ = addresses(sel)
            if (o % 4).any():
                raise IsaError(f"{ins.mnemonic} (line {ins.line}): unaligned dword atomic")
            words, inv = np.unique(o, return_inverse=True)
            acc = np.full(words.size, 0xFFFFFFFF if fn is np.bitwise_and else 0, _U32)
            fn.at(acc, inv, st.v[d][w, ln].astype(_U32))  # lanes hitting one word combine first
            idx = words[:, None] + np.arange(4)
            cur = np.ascontiguousarray(heap.data[idx]).view("<u4").reshape(-1)
            heap.data[idx] = np.ascontiguousarray(fn(cur, acc).astype("<u4")).view(np.uint8).reshape(-1, 4)
        return run_atomic

    def run_store(sel: np.ndarray) -> None:
        w, ln, o, _ = addresses(sel)
        regs = [st.v[d + k][w, ln] for k in range(max(1, nbytes // 4))]
        heap.data[o[:, None] + np.arange(nbytes)] = _from_regs(regs, nbytes, how)
    return run_store


def _scratch(ins: Instr, stem: str, ctx: Ctx, st: Machine) -> Callable[[np.ndarray], None]:
    _check_mods(ins, ctx, ("offset", "sc0", "sc1", "nt", "glc", "slc", "dlc", "th", "scope"))
    kind, _, size = stem.partition("_")
    ops = ins.operands
    off = _imm_mod(ins, "offset", ctx)
    table = _LOAD if kind == "load" else _STORE
    if kind not in ("load", "store") or size not in table:
        raise ctx.err(ins, "scratch form not modelled")
    nbytes, how = table[size]
    if kind == "load":
        dst, vaddr, saddr = ops
        d = _vreg(dst, max(1, nbytes // 4), ctx, ins, st)
    else:
        vaddr, data, saddr = ops
        d = _vreg(data, max(1, nbytes // 4), ctx, ins, st)
    for x in (vaddr, saddr):
        if not (isinstance(x, Reg) and x.file == "off"):
            raise ctx.err(ins, "scratch addressing through VGPR/SGPR offsets is not modelled (only `off, off`)")

    def run(sel: np.ndarray) -> None:
        w, ln, what = _lanes(st, sel, "", ins)
        if st.scratch is None or off < 0 or off + nbytes > st.scratch.shape[-1]:
            raise IsaError(f"{what(0) if w.size else ins.mnemonic}: scratch bytes {off}..{off + nbytes} outside the "
                           f"private segment ({0 if st.scratch is None else st.scratch.shape[-1]} bytes)")
        cols = off + np.arange(nbytes)
        if kind == "load":
            data = st.scratch[w[:, None], ln[:, None], cols]
            for k, val in enumerate(_to_regs(data, nbytes, how, st.v[d][w, ln])):
                st.v[d + k][w, ln] = val
        else:
            regs = [st.v[d + k][w, ln] for k in range(max(1, nbytes // 4))]
            st.scratch[w[:, None], ln[:, None], cols] = _from_regs(regs, nbytes, how)
    return run


def _smem(ins: Instr, m: str, ctx: Ctx, st: Machine) -> Callable[[np.ndarray], None]:
    _check_mods(ins, ctx, ("offset", "glc", "dlc", "th", "scope"))
    size = m.rsplit("_", 1)[1]
    n = {"b32": 1, "dword": 1, "b64": 2, "dwordx2": 2, "b96": 3, "b128": 4, "dwordx4": 4, "b256": 8, "dwordx8": 8,
         "b512": 16, "dwordx16": 16}.get(size)
    if n is None or not m.startswith("s_load_"):
        raise ctx.err(ins, "scalar memory form not modelled")
    dst, base, offs = (ins.operands + (None,))[:3]
    if not (isinstance(dst, Reg) and dst.file == "s" and dst.count == n):
        raise ctx.err(ins, f"destination must be {n} SGPR(s)")
    if not (isinstance(base, Reg) and base.file == "s" and base.count == 2):
        raise ctx.err(ins, "base address must be an SGPR pair")
    extra = _imm_mod(ins, "offset", ctx)
    if isinstance(offs, Imm) and not isinstance(offs.value, float):
        get_off = (lambda c=offs.value: np.full(st.W, c, np.int64))
    elif isinstance(offs, Reg) and offs.file == "s" and offs.count == 1:
        get_off = (lambda i=offs.index: st.s[i].astype(np.int64))
    else:
        raise ctx.err(ins, "offset operand not modelled")
    d, b = dst.index, base.index

    def run(sel: np.ndarray) -> None:
        w = np.flatnonzero(sel)
        addr = (st.read_s(b, 2)[w].astype(np.int64) + get_off()[w] + extra).astype(_U64)
        o = st.heap.offsets(addr, 4 * n, lambda i: f"{ins.mnemonic} ({st.target}, line {ins.line}) wave {int(w[i])}")
        vals = np.ascontiguousarray(st.heap.data[o[:, None] + np.arange(4 * n)]).view("<u4").reshape(w.size, n)
        for k in range(n):
            st.s[d + k][w] = vals[:, k]
    return run


def _lane_permute(ins: Instr, m: str, ctx: Ctx, st: Machine) -> Callable[[np.ndarray], None]:
    """``ds_bpermute_b32`` (dst[i] = data[(addr[i] + offset) / 4]) and ``ds_permute_b32``
    (dst[(addr[i] + offset) / 4] = data[i], the higher source lane winning): lanes exchange through the
    LDS crossbar without touching LDS memory; reading an inactive lane gives 0 (wave32 and CDNA wave64
    whole; RDNA wave64 within each half, a crossing raises)."""
    _check_mods(ins, ctx, ("offset",))
    dst, addr, data = ins.operands
    d, a, x = _vreg(dst, 1, ctx, ins, st), _vreg(addr, 1, ctx, ins, st), _vreg(data, 1, ctx, ins, st)
    off = _imm_mod(ins, "offset", ctx)
    L = ctx.wave
    halves = permute_halves(ctx)  # RDNA wave64: 32-lane halves (tilesim.isa.variants)

    def run(sel: np.ndarray) -> None:
        act = st.active(sel)
        idx = ((st.v[a].astype(np.int64) + off) >> 2) & (L - 1)
        if halves:
            check_halves(idx, act, lambda w, ln: f"{ins.mnemonic} ({st.target}, line {ins.line}) wave {w}")
        src = np.where(act, st.v[x], 0).astype(np.uint32)
        if m == "ds_bpermute_b32":
            val = np.take_along_axis(src, idx, axis=1)
        else:
            val = np.zeros_like(src)
            rows = np.broadcast_to(np.arange(st.W)[:, None], idx.shape)
            for lane in range(L):  # ascending: the higher source lane's write lands last
                hit = act[:, lane]
                val[rows[hit, lane], idx[hit, lane]] = src[hit, lane]
        st.v[d] = np.where(act, val, st.v[d])
    return run


def _ds(ins: Instr, m: str, ctx: Ctx, st: Machine) -> Callable[[np.ndarray], None]:
    if m in ("ds_bpermute_b32", "ds_permute_b32"):
        return _lane_permute(ins, m, ctx, st)
    _check_mods(ins, ctx, ("offset", "offset0", "offset1", "gds"))
    if ins.mod("gds") is not None:
        raise ctx.err(ins, "GDS is not modelled")
    ops = ins.operands
    two = "_2addr_" in m
    st64 = "_2addr_stride64_" in m  # ISA: offset0/offset1 count units of 64 elements, not 1
    if st64:
        m = m.replace("_2addr_stride64_", "_2addr_")
    if m.startswith("ds_load_"):
        size = m[len("ds_load_2addr_" if two else "ds_load_"):]
        if size not in _LOAD:
            raise ctx.err(ins, "LDS load size not modelled")
        nbytes, how = _LOAD[size]
        dst, vaddr = ops
        per = max(1, nbytes // 4)
        d = _vreg(dst, per * (2 if two else 1), ctx, ins, st)
        write = False
    elif m.startswith("ds_store_"):
        size = m[len("ds_store_2addr_" if two else "ds_store_"):]
        if size not in _STORE:
            raise ctx.err(ins, "LDS store size not modelled")
        nbytes, how = _STORE[size]
        per = max(1, nbytes // 4)
        if two:
            vaddr, d0, d1 = ops
            srcs = [_vreg(d0, per, ctx, ins, st), _vreg(d1, per, ctx, ins, st)]
        else:
            vaddr, d0 = ops
            srcs = [_vreg(d0, per, ctx, ins, st)]
        write = True
    else:
        raise ctx.err(ins, "LDS instruction not modelled")
    if two and how != "dw":
        raise ctx.err(ins, "2addr forms of sub-dword sizes are not modelled")
    a = _vreg(vaddr, 1, ctx, ins, st)
    if two:
        unit = nbytes * (64 if st64 else 1)
        offs = [_imm_mod(ins, "offset0", ctx) * unit, _imm_mod(ins, "offset1", ctx) * unit]
    else:
        offs = [_imm_mod(ins, "offset", ctx)]
    lds = st.lds

    def run(sel: np.ndarray) -> None:
        w, ln, what = _lanes(st, sel, "", ins)
        g = st.group[w]
        base = st.v[a][w, ln].astype(np.int64)
        for part, o in enumerate(offs):
            addr = base + o
            if addr.size and (addr.min() < 0 or addr.max() + nbytes > lds.size):
                i = int(np.flatnonzero((addr < 0) | (addr + nbytes > lds.size))[0])
                raise IsaError(f"{what(i)}: LDS bytes {int(addr[i])}..{int(addr[i]) + nbytes} outside the "
                               f"{lds.size}-byte allocation")
            cols = addr[:, None] + np.arange(nbytes)
            gg = np.broadcast_to(g[:, None], cols.shape)
            lds.track(ins, gg.ravel(), cols.ravel(), np.broadcast_to(st.slot[w][:, None], cols.shape).ravel(),
                      np.broadcast_to(st.epoch[w][:, None], cols.shape).ravel(), write)
            if st.hazards is not None:  # bytes a global_load_lds may still be writing
                st.hazards.lds_access(ins, gg.ravel(), cols.ravel(), write)
            if write:
                regs = [st.v[srcs[part] + k][w, ln] for k in range(per)]
                lds.data[gg, cols] = _from_regs(regs, nbytes, how)
            else:
                data = lds.data[gg, cols]
                first = d + part * per
                for k, val in enumerate(_to_regs(data, nbytes, how, st.v[first][w, ln])):
                    st.v[first + k][w, ln] = val
    return run


def _ds_transpose(ins: Instr, row: TransposeRead, ctx: Ctx, st: Machine) -> Callable[[np.ndarray], None]:
    """An LDS transpose read (``ds_read_b64_tr_b16`` …): each lane reads ``row.read_bits`` at its
    address, then the lanes of each group exchange elements by the catalog's lane map
    (:mod:`tilesim.matrix.lds_transpose`, the one place it is written).

    EXEC: a lane of a group cannot gather from a lane that supplies no address, so a group must be
    wholly active or wholly inactive; a partly active group raises (the hardware result is not
    documented). Each lane's address must be aligned to ``row.align`` bytes."""
    _check_mods(ins, ctx, ("offset",))
    if ctx.wave != row.wave:
        raise ctx.err(ins, f"{row.mnemonic} runs in wave{row.wave}, this wave is wave{ctx.wave}")
    try:
        table = row.lane_table()  # [dest lane, elem, (src lane, src elem)]
    except InstructionError as e:
        raise ctx.err(ins, str(e)) from None
    dst, vaddr = ins.operands
    d, a = _vreg(dst, row.registers, ctx, ins, st), _vreg(vaddr, 1, ctx, ins, st)
    off = _imm_mod(ins, "offset", ctx)
    nbytes, bits, n, G = row.read_bits // 8, row.elem_bits, row.elems, row.group
    lds = st.lds
    src_lane, src_elem = table[..., 0], table[..., 1]

    def run(sel: np.ndarray) -> None:
        act = st.active(sel)  # [waves, lanes]
        grp = act.reshape(act.shape[0], -1, G)
        part = grp.any(2) & ~grp.all(2)
        if part.any():
            w, g = (int(x) for x in np.argwhere(part)[0])
            off_lanes = [int(x) + g * G for x in np.flatnonzero(~grp[w, g])]
            raise IsaError(f"{ins.mnemonic} ({st.target}, line {ins.line}) wave {w}: EXEC leaves lanes "
                           f"{off_lanes[:8]}{'…' if len(off_lanes) > 8 else ''} of the {G}-lane group {g} inactive; "
                           f"a transpose read needs each group wholly active (its lanes gather from each other)")
        w, ln = np.nonzero(act)
        if w.size == 0:
            return
        addr = st.v[a][w, ln].astype(np.int64) + off
        what = f"{ins.mnemonic} ({st.target}, line {ins.line})"
        bad = (addr < 0) | (addr + nbytes > lds.size) | (addr % row.align != 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            why = (f"is not {row.align}-byte aligned" if 0 <= addr[i] and addr[i] + nbytes <= lds.size
                   else f"is outside the {lds.size}-byte allocation")
            raise IsaError(f"{what} wave {int(w[i])} lane {int(ln[i])}: LDS address {int(addr[i])} ({nbytes} bytes) {why}")
        g = st.group[w]
        cols = addr[:, None] + np.arange(nbytes)
        gg = np.broadcast_to(g[:, None], cols.shape)
        lds.track(ins, gg.ravel(), cols.ravel(), np.broadcast_to(st.slot[w][:, None], cols.shape).ravel(),
                  np.broadcast_to(st.epoch[w][:, None], cols.shape).ravel(), False)
        if st.hazards is not None:
            st.hazards.lds_access(ins, gg.ravel(), cols.ravel(), False)
        raw = lds.data[gg, cols]  # [active lanes, bytes], little-endian
        words = np.zeros((st.W, ctx.wave, nbytes // 4), np.uint64)
        words[w, ln] = np.ascontiguousarray(raw).view("<u4").astype(np.uint64)
        # element e of lane s: bits [e*bits, (e+1)*bits) of its read (an element may straddle two dwords)
        lo_w, lo_b = (np.arange(n) * bits) // 32, (np.arange(n) * bits) % 32
        pair = np.concatenate([words, np.zeros(words.shape[:2] + (1,), np.uint64)], 2)
        both = pair[..., lo_w] | (pair[..., np.minimum(lo_w + 1, nbytes // 4)] << np.uint64(32))
        elems = (both >> lo_b.astype(np.uint64)) & np.uint64((1 << bits) - 1)  # [waves, lanes, n]
        got = elems[:, src_lane, src_elem]  # [waves, dest lane, r]
        packed = np.zeros((st.W, ctx.wave, nbytes // 4 + 1), np.uint64)
        for r in range(n):  # n <= 16: pack element r at bits [r*bits, ...)
            v = got[..., r] << lo_b[r].astype(np.uint64)
            packed[..., lo_w[r]] |= v & np.uint64(0xFFFFFFFF)
            packed[..., lo_w[r] + 1] |= v >> np.uint64(32)
        for k in range(row.registers):
            st.v[d + k] = np.where(act, packed[..., k].astype(np.uint32), st.v[d + k])
    return run
