"""The simulator's LDS: bytes per workgroup, bank-conflict counting and the cross-wave race detector.

Memory is ``uint8[workgroups, bytes]``. Every access reports its bank-conflict cycles and runs the
race detector (two waves of one workgroup touching the same byte, at least one writing, with no
barrier between).

A k-loop repeats the same few accesses every step (the slab alternates, nothing else), so the
work that depends only on *where* an access goes is done once per distinct access and reused:

* **addresses**: an access's byte addresses are a function of (buffer, fragment layout, the
  per-wave row and column origin); they are computed once per distinct origin (and the
  out-of-buffer check with them) and kept with a small *token* naming them;
* **banks**: the cycles of an access depend on its addresses and the active waves only;
* **races**: a barrier starts a new epoch, and an access can only race with accesses of its own
  epoch (the detector compares epochs), so the races an access finds are a function of the
  sequence of accesses since the last barrier. The results are kept in a trie keyed by that
  sequence (token, write, active waves); a step that repeats a known sequence reuses them, and
  the detector's per-byte state, which only later accesses of the same epoch read, is brought up
  to date (the skipped accesses replayed) before the next access that is not in the trie.

The data moves are the step-by-step path's: an aligned f16/bf16/f32 access whose register type is
the buffer's type moves the register bits as they are (decode then encode of those types gives
the same bits, NaN aside: an access holding a NaN takes the general path). ``TILESIM_NO_FUSE=1``
turns the caches off (every access computed from scratch, for comparison and debugging).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tilesim.errors import VerifyError
from tilesim.ir.async_copy import InFlight
from tilesim.ir.core import Value
from tilesim.matrix.dtypes import decode, encode
from tilesim.matrix.numerics import cast
from tilesim.wave.codec import Codec
from tilesim.wave.images import TileImage, WindowImage
from tilesim.wave.kernels import gather_windows, lds_bank_cycles, lds_races
from tilesim.wave.lds_access import ALL_ONES, BIT_MOVE, Access, grown, has_nan, what
from tilesim.wave.lds_access import origins as distinct_origins

__all__ = ["Lds"]

def _built(regs: np.ndarray | TileImage | WindowImage) -> np.ndarray:
    return regs.image() if isinstance(regs, (TileImage, WindowImage)) else regs


class Lds:
    def __init__(self, nwg: int, W: int, wg_of: np.ndarray, wave_of: np.ndarray, banks: int, limit: int,
                 target: str, rep: Any) -> None:
        self.nwg, self.W, self.wg_of, self.wave_of = nwg, W, wg_of, wave_of
        self.G = wg_of.size
        self.all_waves = np.ones(self.G, bool)
        # (the caches' workgroup-0 shortcuts take the waves as blocks of W per workgroup, in order)
        assert np.array_equal(wg_of, np.repeat(np.arange(nwg), W)), "waves are not in workgroup order"
        self.nbanks, self.limit, self.target, self.rep = banks, limit, target, rep
        self.offset: dict[int, int] = {}
        self.top = 0
        self.mem = np.zeros((nwg, 0), np.uint8)
        # 1 where some store (or landed async copy) wrote the byte: a read of a 0 byte reads what the LDS
        # held before the kernel, which no program defines (Report.uninit; tilesim/wave/undefined.py)
        self.written = np.zeros((nwg, 0), np.uint8)
        self.marked: set[int] = set()  # access tokens whose bytes are marked written in every wave
        self.read_ok: set[int] = set()  # access tokens that read written bytes only, in every wave (bytes stay written)
        self.maybe_nan = False  # only stores that moved register bits as they are (never a NaN) so far
        self.epoch = 0
        # int32 (waves and epochs fit): the race state is 4 + 4 + 4*W bytes per LDS byte of every workgroup
        # (workgroup 0's rows only while every race pass has been workgroup 0's: _race_pass grows them)
        self.last_writer = np.zeros((1, 0), np.int32)
        self.write_epoch = np.zeros((1, 0), np.int32)
        self.read_epoch = np.zeros((1, W, 0), np.int32)
        # scratch of the compiled race detector (kernels.lds_races): the op that last touched a byte, and its wave
        self.race_seen = (np.zeros((nwg, 0), np.int32), np.zeros((nwg, 0), np.int32))
        self.race_ops = 0
        self.cached = not os.environ.get("TILESIM_NO_FUSE")
        self.accesses: dict[Any, Access] = {}
        self.trie: dict[Any, tuple[int, tuple[int, int, int, int, int, bool]]] = {}
        self.node = 0  # the trie node of this epoch's accesses so far
        # accesses whose per-byte state update was skipped since the state was current: in every
        # workgroup, and in workgroup 0 (whose state alone a uniform epoch keeps)
        self.pend_all: list[tuple[Access, int, bool, np.ndarray]] = []
        self.pend_wg0: list[tuple[Access, int, bool, np.ndarray]] = []
        self.uniform = True  # every access of this epoch so far alike in every workgroup
        self.flight = InFlight(wg_of, wave_of)  # asynchronous copies not landed yet (tilesim/wave/async_copy.py)
        self.flight_seen: dict[Any, Any] = {}  # (access, copies in flight) -> what flight.check found
        self.epochs: dict[Any, list[Any]] = {}  # (token, write) of an epoch from its start -> findings (check_epoch)

    # ------------------------------------------------------------------ allocation
    def alloc(self, buf: Value) -> None:
        lay = buf.lds
        assert lay is not None
        self.offset[buf.id] = self.top
        self.top += -(-lay.bytes // 16) * 16
        self.rep.lds_bytes = self.top
        if self.top > self.limit:
            raise VerifyError(f"LDS use {self.top} bytes exceeds {self.target}'s {self.limit} bytes")
        self.mem = grown(self.mem, self.top, 0)
        self.written = grown(self.written, self.top, 0)
        self.flight.grow(self.top)  # (the race state grows when a race pass first needs it: _race_pass)

    def barrier(self) -> None:
        self.epoch += 1
        self.node = 0
        self.pend_all, self.pend_wg0 = [], []  # accesses of an older epoch race with nothing later
        self.uniform = True

    # ------------------------------------------------------------------ addresses
    def _addr(self, buf: Value, c: Codec, row0: np.ndarray,
              col0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Byte address of every record of each distinct (row0, col0) origin (a k-loop's waves
        share a handful), and each wave's origin."""
        lay = buf.lds
        assert lay is not None
        origins, inv = distinct_origins(row0, col0)
        r = origins[:, 0, None] + c.rec[None, :, 1]
        q = origins[:, 1, None] + c.rec[None, :, 2]
        if (r < 0).any() or (r >= lay.rows).any() or (q < 0).any() or (q >= lay.cols).any():
            raise VerifyError(f"LDS access outside the {lay.rows}x{lay.cols} buffer (row/col out of range)")
        per_origin = self.offset[buf.id] + lay.offset(r, q)
        return per_origin, inv.reshape(-1)

    def access(self, buf: Value, c: Codec, row0: np.ndarray, col0: np.ndarray) -> Access:
        if not self.cached:
            return Access(-1, *self._addr(buf, c, row0, col0), c)
        key = (buf.id, id(c), row0.tobytes(), col0.tobytes())
        acc = self.accesses.get(key)
        if acc is None:
            acc = self.accesses[key] = Access(len(self.accesses), *self._addr(buf, c, row0, col0), c)
        return acc

    def check(self, buf: Value, acc: Access, write: bool, active: np.ndarray) -> None:
        """The bank count and race check of one ``lds_store`` (``write``) or ``lds_load`` of ``buf``."""
        self.banks(acc, active)
        self.races(acc, buf.lds.elem_bytes, write, what(buf, write), active)  # type: ignore[union-attr]

    def check_epoch(self, events: list[tuple[Value, Access, bool]], active: np.ndarray, barrier: bool = True) -> None:
        """Of each ``(buffer, access, write)`` in order: ``check``, then ``_mark`` (a store) or
        ``unwritten_reads`` (a load); then ``barrier()`` (``barrier``): the ops one by one. When the
        accesses start an epoch (none since the last barrier, no copy in flight) and repeat one
        checked from its start before, each race lookup would find that epoch's path in the trie
        and return what it found, and the bank counts are per access: that epoch's findings are
        reported again without the lookups (a k-loop's steps: one lookup per distinct step)."""
        key = None
        if barrier and self.cached and self.node == 0 and not self.flight.pending and active.all():
            key = tuple((acc.token, write) for _, acc, write in events)
        seen = self.epochs.get(key) if key is not None else None
        found = []
        for i, (buf, acc, write) in enumerate(events):
            eb = buf.lds.elem_bytes  # type: ignore[union-attr]
            if seen is None:
                b, r = self._banks_of(acc, active), self._races_of(acc, eb, write, what(buf, write), active)
                found.append((b, r))
            else:
                b, r = seen[i]
            self.rep.lds_accesses += b[0]
            self.rep.lds_bank_conflict_cycles += b[1]
            if r[0]:
                self._report(r, what(buf, write))
            if write:
                self._mark(acc, eb, active)
            else:
                self.unwritten_reads(buf, acc, active)
        if key is not None and seen is None:
            self.epochs[key] = found
        if barrier:
            self.barrier()

    # ------------------------------------------------------------------ banks
    def banks(self, acc: Access, active: np.ndarray) -> None:
        got = self._banks_of(acc, active)
        self.rep.lds_accesses += got[0]
        self.rep.lds_bank_conflict_cycles += got[1]

    def _banks_of(self, acc: Access, active: np.ndarray) -> tuple[int, int]:
        key = None if active.all() else active.tobytes()
        got = acc.banks.get(key) if self.cached else None
        if got is None:
            got = self._bank_pass(acc, active)
            if self.cached:
                acc.banks[key] = got
        return got

    def _bank_pass(self, acc: Access, active: np.ndarray) -> tuple[int, int]:
        """(VGPR instructions, bank-conflict cycles) of one access: the cycles of each distinct
        origin once, times the active waves that have it (the origins with one such count of
        waves summed in one pass)."""
        rows, c = acc.per_origin, acc.codec
        weight = np.bincount(acc.origin[active], minlength=rows.shape[0])
        total = 0
        for n in np.unique(weight[weight > 0]).tolist():
            total += n * self._bank_cycles(rows[weight == n], c)
        return int(active.sum()) * np.unique(c.rec[:, 3]).size, total

    def _bank_cycles(self, addr: np.ndarray, c: Codec) -> int:
        """Bank-conflict cycles of the waves' accesses ``addr[wave, record]``, summed: for each wave
        and VGPR instruction (the records with one ``vgpr`` value), the most distinct dwords in
        one bank, minus one."""
        banks = self.nbanks
        cycles = lds_bank_cycles(addr, c.rec[:, 3], banks, np.ones(addr.shape[0], bool))
        if cycles is not None:
            return cycles
        total = 0
        for row in addr:
            for vgpr in np.unique(c.rec[:, 3]):
                dw = np.unique(row[c.rec[:, 3] == vgpr] // 4)
                total += max(int(np.bincount(dw % banks, minlength=banks).max()), 1) - 1
        return total

    # ------------------------------------------------------------------ races
    def races(self, acc: Access, eb: int, write: bool, what: str, active: np.ndarray) -> None:
        """Race check of an access whose elements (``eb`` bytes each) start at ``acc.addr``."""
        self._report(self._races_of(acc, eb, write, what, active), what)

    def _races_of(self, acc: Access, eb: int, write: bool, what: str,
                  active: np.ndarray) -> tuple[int, int, int, int, int, bool]:
        """``races``' findings, not reported (those of copies in flight are)."""
        if self.flight.pending:
            self._in_flight(acc.addr, eb, write, what, active, acc.token)
        if self.cached:
            key = (self.node, acc.token, write, None if active.all() else active.tobytes())
            hit = self.trie.get(key)
            uniform = self.uniform and self._uniform(acc, active)
            if hit is not None:
                self.node, got = hit
                self.pend_all.append((acc, eb, write, active))
                self.pend_wg0.append((acc, eb, write, active))
            else:
                if uniform:  # every workgroup the same: workgroup 0's races, once per workgroup
                    for a, *p in self.pend_wg0:
                        self._race_pass(a.rows(self.W), *p, wg0=True)
                    self.pend_wg0 = []
                    n, *first = self._race_pass(acc.rows(self.W), eb, write, active, wg0=True)
                    got = (n * self.nwg, *first)  # type: ignore[assignment]
                    self.pend_all.append((acc, eb, write, active))
                else:
                    for a, *p in self.pend_all:  # bring the per-byte state up to date first
                        self._race_pass(a.addr, *p)
                    self.pend_all, self.pend_wg0 = [], []
                    got = self._race_pass(acc.addr, eb, write, active)
                self.node = len(self.trie) + 1
                self.trie[key] = (self.node, got)
            self.uniform = uniform
        else:
            got = self._race_pass(acc.addr, eb, write, active)
        return got

    def races_at(self, addr: np.ndarray, eb: int, write: bool, what: str, active: np.ndarray) -> None:
        """Race check of an access the cache does not know (a transpose read's per-lane addresses):
        pending cached passes are applied first, then this one in full; the epoch's path in the
        cache restarts at a fresh node, so no later access matches a path that skipped it."""
        self._in_flight(addr, eb, write, what, active)
        for a, *p in self.pend_all:
            self._race_pass(a.addr, *p)
        self.pend_all, self.pend_wg0 = [], []
        got = self._race_pass(addr, eb, write, active)
        if self.cached:
            self.trie[("uncached", len(self.trie))] = (len(self.trie) + 1, got)
            self.node, self.uniform = len(self.trie), False
        self._report(got, what)

    def _in_flight(self, addr: np.ndarray, eb: int, write: bool, what: str, active: np.ndarray,
                   token: int = -1) -> None:
        """An access of bytes an asynchronous copy may still be writing: a race, whichever wave it is.
        The answer depends only on the access and on which copies are in flight in which waves, so a
        k-loop's repeats (the same few accesses against the same few copies) are looked up."""
        if not self.flight.pending:
            return
        key = None
        if self.cached and token >= 0:
            copies = tuple((p.payload[3].token, p.issued.tobytes()) for p in self.flight.pending)
            if all(t >= 0 for t, _ in copies):
                key = (token, write, None if active.all() else active.tobytes(), copies)
        if key is not None and key in self.flight_seen:
            found = self.flight_seen[key]
        else:
            found = self.flight.check(addr, eb, active, write)
            if key is not None:
                self.flight_seen[key] = found
        if found is not None:
            self.rep.race_count += found[0]
            if len(self.rep.races) < 20:
                self.rep.races.append(f"{what}: {found[1]}")

    def _report(self, got: tuple[int, int, int, int, int, bool], what: str) -> None:
        n, wg, wave, byte, other, kind = got
        if n:
            self.rep.race_count += n
            if len(self.rep.races) < 20:
                self.rep.races.append(f"{what}: workgroup {wg}, wave {wave} at LDS byte {byte} conflicts with a "
                                      f"{'write' if kind else 'read'} by wave {other} with no barrier between")

    def _uniform(self, acc: Access, active: np.ndarray) -> bool:
        """Whether every workgroup's waves make this access alike (same addresses, same active waves)."""
        if acc.uniform is None:
            o = acc.origin.reshape(self.nwg, self.W)
            acc.uniform = bool((o == o[0]).all())
        a = active.reshape(self.nwg, self.W)
        return acc.uniform and bool((a == a[0]).all())

    def _race_pass(self, addr: np.ndarray, eb: int, write: bool, active: np.ndarray,
                   wg0: bool = False) -> tuple[int, int, int, int, int, bool]:
        """Races of one access against the state, and the state updated: (races, workgroup, wave
        and byte of the first racing access, the other wave of its race, whether that was a write).
        ``wg0``: workgroup 0's waves only (the first ``W``)."""
        if wg0:
            addr, active = addr[:self.W], active[:self.W]
        wg_of, wave_of = (self.wg_of[:self.W], self.wave_of[:self.W]) if wg0 else (self.wg_of, self.wave_of)
        rows = 1 if wg0 else self.nwg
        if self.last_writer.shape[1] != self.top or self.last_writer.shape[0] < rows:
            # allocated since (grown once, not per lds_alloc), or the first pass over every
            # workgroup: until then only workgroup 0's rows exist (the other rows, never touched,
            # hold what they were made with)
            rows = max(rows, self.last_writer.shape[0])
            self.last_writer = grown(self.last_writer, self.top, -1, rows)
            self.write_epoch = grown(self.write_epoch, self.top, -1, rows)
            self.read_epoch = grown(self.read_epoch, self.top, -1, rows)
        if self.race_seen[0].shape != self.last_writer.shape:
            shape = self.last_writer.shape
            self.race_seen = (np.full(shape, -1, np.int32), np.zeros(shape, np.int32))
        self.race_ops += 1
        got = lds_races(addr, eb, wg_of, wave_of, active, write, self.epoch, self.last_writer,
                        self.write_epoch, self.read_epoch, self.race_seen, self.race_ops)
        if got is not None:
            return got
        byte_addr = (addr[:, :, None] + np.arange(eb)).reshape(addr.shape[0], -1)
        wg = wg_of[:, None].repeat(byte_addr.shape[1], 1)
        wave = wave_of[:, None].repeat(byte_addr.shape[1], 1)
        act = active[:, None].repeat(byte_addr.shape[1], 1)
        wg, wave, b = wg[act], wave[act], byte_addr[act]
        lw, we = self.last_writer[wg, b], self.write_epoch[wg, b]
        conflict = (lw >= 0) & (lw != wave) & (we == self.epoch)
        partner = np.where(conflict, lw, -1)  # the other wave of the race, for the message
        kind_write = conflict.copy()  # the other access of the race is a write (else a read)
        if write:
            others = self.read_epoch[wg, :, b] == self.epoch
            others[np.arange(wave.size), wave] = False
            war = others.any(1) & ~conflict
            partner = np.where(war, others.argmax(1), partner)
            conflict |= war
        # two waves of one workgroup writing the same byte in this very op
        if write:
            key = wg * (1 << 32) + b
            order = np.argsort(key, kind="stable")
            ks, ws = key[order], wave[order]
            same = (ks[1:] == ks[:-1]) & (ws[1:] != ws[:-1])
            if same.any():
                hit = order[1:][same]
                partner[hit] = np.where(conflict[hit], partner[hit], ws[:-1][same])
                kind_write[hit] = np.where(conflict[hit], kind_write[hit], True)
                conflict[hit] = True
        got = (0, -1, -1, -1, -1, False)
        if conflict.any():
            i = int(np.flatnonzero(conflict)[0])
            got = (int(conflict.sum()), int(wg[i]), int(wave[i]), int(b[i]), int(partner[i]), bool(kind_write[i]))
        if write:
            self.last_writer[wg, b] = wave
            self.write_epoch[wg, b] = self.epoch
        else:
            self.read_epoch[wg, wave, b] = self.epoch
        return got

    # ------------------------------------------------------------------ data
    def _flat(self, acc: Access, eb: int) -> np.ndarray:
        if acc.flat is None or acc.width != self.mem.shape[1] or not self.cached:  # (a later alloc grows rows)
            # (from the addresses per origin: the division on a handful of rows, not every wave's)
            acc.flat, acc.width = self._per_wave(acc, acc.per_origin // eb, eb), self.mem.shape[1]
        return acc.flat

    def _per_wave(self, acc: Access, elems: np.ndarray, eb: int) -> np.ndarray:
        """``wg_of[:, None] * row + elems[acc.origin]``: the flat index into the LDS's ``eb``-byte
        view of each wave's elements ``elems[origin, k]`` of its workgroup's row; for an access
        alike in every workgroup, workgroup 0's waves' rows offset per workgroup (no gather
        over every wave)."""
        row = self.mem.shape[1] // eb
        if self.cached and self._uniform(acc, self.all_waves):
            return ((np.arange(self.nwg) * row)[:, None, None] + elems[acc.origin[:self.W]]).reshape(self.G, -1)
        return self.wg_of[:, None] * row + elems[acc.origin]

    def _few_runs(self, acc: Access, eb: int, active: np.ndarray) -> bool:
        """Whether ``acc`` is alike in every workgroup and workgroup 0's elements form a few runs."""
        return self._uniform(acc, active) and len(self._wg0_runs(acc, eb)) <= 8

    def _wg0_runs(self, acc: Access, eb: int) -> list[tuple[int, int]]:
        """The elements (``eb`` bytes, index in a workgroup's row) workgroup 0's waves access, as
        runs ``lo:hi`` of consecutive elements (a slab's rows: one or a few runs; column slices
        of every workgroup's row are far faster than a gather or scatter of the same elements)."""
        if acc.wg0 is None:
            e = np.unique((acc.per_origin // eb)[np.unique(acc.origin[:self.W])])
            cut = np.flatnonzero(np.diff(e) != 1) + 1
            acc.wg0 = list(zip(e[np.r_[0, cut]].tolist(), (e[np.r_[cut - 1, e.size - 1]] + 1).tolist()))
        return acc.wg0

    def _store_runs(self, acc: Access, eb: int) -> list[tuple[int, int, np.ndarray]] | None:
        """For an access alike in every workgroup whose workgroup-0 waves touch distinct elements
        (no element stored twice: no order of writes to follow) in a few runs of consecutive
        elements: each run ``lo:hi`` and the (wave, record) index, wave-major, that writes each of
        its elements; else None."""
        if acc.runs is None:
            e = (acc.per_origin // eb)[acc.origin[:self.W]].reshape(-1)
            order = np.argsort(e, kind="stable")
            es = e[order]
            step = np.diff(es)
            cut = np.flatnonzero(step != 1) + 1
            ok = not (step == 0).any() and cut.size < 8
            acc.runs = [(int(es[a]), int(es[b - 1]) + 1, order[a:b])
                        for a, b in zip(np.r_[0, cut], np.r_[cut, es.size])] if ok else []
        return acc.runs or None

    def _aligned(self, acc: Access, eb: int) -> bool:
        if eb not in acc.aligned:
            # every wave's addresses are a row of per_origin (each row some wave's): the same answer, fewer numbers
            acc.aligned[eb] = eb in (2, 4, 8) and not (acc.per_origin % eb).any()
        return acc.aligned[eb]

    def _bit_move(self, buf: Value, c: Codec, acc: Access, eb: int) -> bool:
        return (c.slots is not None and c.dt.name == buf.dtype and buf.dtype in BIT_MOVE
                and c.width == 8 * eb and self._aligned(acc, eb))

    def store(self, buf: Value, c: Codec, regs: np.ndarray | TileImage | WindowImage, acc: Access,
              active: np.ndarray, src_dtype: str | None = None) -> None:
        """An ``lds_store`` of register image ``regs`` (or one not built yet: a loaded window's
        record bits are gathered from the tensor's bits as its slots would hold them)."""
        eb = buf.lds.elem_bytes  # type: ignore[union-attr]
        if self._bit_move(buf, c, acc, eb):
            if isinstance(regs, WindowImage) and regs._image is None and regs.codec is c:
                bits = gather_windows(regs.bits, regs.base, regs.off[c.slots])
            else:  # per record, in the element's width
                bits = np.take(c.slot_view(_built(regs)), c.slots, axis=-1)
            if self.move_bits(buf, bits, acc, active):
                return
        regs = _built(regs)
        self._mark(acc, eb, active)
        src = src_dtype or c.dt.name  # the fragment's type, cast to the buffer's (numerics.cast)
        bits = encode(cast(c.decode(regs), src, buf.dtype), buf.dtype)  # type: ignore[arg-type]
        self.maybe_nan = True
        act, addr = active, acc.addr
        if self._aligned(acc, eb):  # aligned elements: one store per element, same bytes
            unit = np.dtype(f"uint{8 * eb}")
            self.mem.view(unit)[self.wg_of[act][:, None], addr[act] // eb] = bits[act].astype(unit)
            return
        byt = ((bits[:, :, None] >> (8 * np.arange(eb, dtype=np.uint64))) & np.uint64(0xFF)).astype(np.uint8)
        wgi = self.wg_of[act][:, None].repeat(addr.shape[1] * eb, 1)
        byte_addr = (addr[act][:, :, None] + np.arange(eb)).reshape(int(act.sum()), -1)
        self.mem[wgi, byte_addr] = byt[act].reshape(int(act.sum()), -1)

    def move_bits(self, buf: Value, bits: np.ndarray, acc: Access, active: np.ndarray) -> bool:
        """The store of a bit move (``_bit_move``) of element bits ``bits[wave, record]``, as they are;
        False (nothing stored) when one is a NaN pattern: ``store``'s general path stores those."""
        if has_nan(bits, buf.dtype):  # type: ignore[arg-type]
            return False
        eb = buf.lds.elem_bytes  # type: ignore[union-attr]
        self._mark(acc, eb, active)
        runs = self._store_runs(acc, eb) if self.cached and active.all() and self._uniform(acc, active) else None
        if runs is not None:  # every workgroup's row: its waves' bits (wave-major) to workgroup 0's runs
            units, per_wg = self.mem.view(bits.dtype), bits.reshape(self.nwg, -1)
            for lo, hi, who in runs:
                units[:, lo:hi] = np.take(per_wg, who, axis=1)
            return True
        flat = self._flat(acc, eb)
        unit = self.mem.view(bits.dtype).reshape(-1)
        if active.all():
            unit[flat] = bits
        else:
            unit[flat[active]] = bits[active]
        return True

    def _mark(self, acc: Access, eb: int, active: np.ndarray) -> None:
        """Mark the bytes a store of the ``active`` waves writes (once per access: bytes stay written)."""
        if acc.token in self.marked:
            return
        if acc.token >= 0 and active.all():
            self.marked.add(acc.token)
        if self.cached and self._aligned(acc, eb) and active.all() and self._few_runs(acc, eb, active):
            # the same elements in every workgroup: workgroup 0's, in every row
            units = self.written.view(f"<u{eb}")
            for lo, hi in self._wg0_runs(acc, eb):
                units[:, lo:hi] = ALL_ONES[eb]
            return
        if self._aligned(acc, eb):  # one unit per element, all its bytes 1 (0x0101...)
            flat = self._flat(acc, eb)
            self.written.view(f"<u{eb}").reshape(-1)[flat if active.all() else flat[active]] = ALL_ONES[eb]
            return
        act = active
        self.written[self.wg_of[act][:, None, None], acc.addr[act][:, :, None] + np.arange(eb)] = 1

    def unwritten_reads(self, buf: Value, acc: Access, active: np.ndarray) -> None:
        """Report (``Report.uninit``) the ``active`` waves' reads of bytes no store wrote."""
        if acc.token in self.read_ok:
            return
        eb = buf.lds.elem_bytes  # type: ignore[union-attr]
        if acc.token >= 0 and self._aligned(acc, eb) and active.all() and self._few_runs(acc, eb, active) and all(
                (self.written.view(f"<u{eb}")[:, lo:hi] == ALL_ONES[eb]).all() for lo, hi in self._wg0_runs(acc, eb)):
            self.read_ok.add(acc.token)  # (alike in every workgroup: workgroup 0's elements, every row)
            return
        if self._aligned(acc, eb):
            bad = self.written.view(f"<u{eb}").reshape(-1)[self._flat(acc, eb)] != ALL_ONES[eb]
        else:
            bad = self.written[self.wg_of[:, None, None], acc.addr[:, :, None] + np.arange(eb)].min(-1) == 0
        self.unwritten_at(bad, acc.addr, f"lds_load from %{buf.id}", active, acc.token)

    def unwritten_at(self, bad: np.ndarray, addr: np.ndarray, what: str, active: np.ndarray, token: int = -1) -> None:
        """``bad[wave, record]``: the record read a byte no store wrote (``addr``: its byte address)."""
        bad = bad & active[:, None]
        if not bad.any():
            if token >= 0 and active.all():
                self.read_ok.add(token)
            return
        g, r = (int(x) for x in np.argwhere(bad)[0])
        self.rep.uninit_count += int(bad.sum())
        if len(self.rep.uninit) < 5:
            self.rep.uninit.append(f"{what}: workgroup {int(self.wg_of[g])} wave {int(self.wave_of[g])} reads LDS "
                                   f"byte {int(addr[g, r])}, which no store wrote ({int(bad.sum())} such element "
                                   "read(s) here)")

    def load(self, buf: Value, c: Codec, acc: Access) -> np.ndarray:
        """The register image an lds_load of every wave (active or not) reads."""
        eb = buf.lds.elem_bytes  # type: ignore[union-attr]
        if self._bit_move(buf, c, acc, eb) and c._slot_plan[1] is not None:
            if self.cached and self._uniform(acc, self.all_waves):
                # alike in every workgroup: workgroup 0's waves' columns of every workgroup's row
                if acc.cols is None:
                    acc.cols = (acc.per_origin // eb)[:, c._slot_plan[1]][acc.origin[:self.W]].reshape(-1)
                bits = np.take(self.mem.view(c._unit), acc.cols, axis=1).reshape(self.G, -1)
            else:
                if acc.flat_slots is None or acc.slots_width != self.mem.shape[1] or not self.cached:
                    # (as _flat, the register slots' columns only)
                    acc.flat_slots = self._per_wave(acc, (acc.per_origin // eb)[:, c._slot_plan[1]], eb)
                    acc.slots_width = self.mem.shape[1]
                bits = self.mem.view(c._unit).reshape(-1)[acc.flat_slots]
            if not self.maybe_nan or not has_nan(bits, buf.dtype):  # type: ignore[arg-type]
                return c.from_slots(bits)
        addr = acc.addr
        if self._aligned(acc, eb):  # aligned elements: read each as one unit
            bits = self.mem.view(np.dtype(f"uint{8 * eb}"))[self.wg_of[:, None], addr // eb].astype(np.uint64)
        else:
            raw = self.mem[self.wg_of[:, None, None], addr[:, :, None] + np.arange(eb)].astype(np.uint64)
            bits = (raw << (8 * np.arange(eb, dtype=np.uint64))).sum(-1).astype(np.uint64)
        return c.encode(cast(decode(bits, buf.dtype), buf.dtype, c.dt))  # type: ignore[arg-type]

