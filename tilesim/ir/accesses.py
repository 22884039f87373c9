"""Static memory analysis of a specialised program: coverage, bounds, LDS races, def-before-use.

The scalar part of a program (tile ids, wave id, loop counters, index arithmetic) is evaluated for
every (workgroup, wave) at once, and for every trip of a loop at once (a loop adds a leading axis
to the scalar arrays), without running any fragment math. From the scalars and each access's
fragment layout follow, as arrays:

* **coverage** — the set of elements each store writes; every element of an output tensor must be
  written exactly once per (workgroup, wave): unwritten elements are named with the store, the
  lane and VGPR that would hold them and the tile id that would have stored them; two waves or
  workgroups writing one element are a write race; one wave overwriting an element with other data
  that it never loads back is a dead write;
* **input coverage** — the distinct origins each load of an input tensor reads from; an element no
  load reads, along an axis a matrix instruction sums over, is an error (terms missing from a sum);
* **bounds** — global loads/stores outside their tensor (masked: a warning with the count); LDS
  accesses outside their buffer (an error: the simulator refuses, the device corrupts memory);
* **LDS races** — two waves of a workgroup touching the same LDS byte, at least one writing, with no
  barrier between (a loop touching LDS runs trip by trip here, so its order is kept);
* **uninitialised LDS** — a read of LDS bytes no ``lds_store`` of the workgroup wrote before it (the
  device returns whatever the LDS held; the simulator's zeros are no answer);
* **global read/write races** — an element of an output tensor loaded by one (workgroup, wave) and
  stored by another with nothing ordering them (another workgroup, or a wave of the same workgroup
  with no barrier between): the value read depends on which runs first;
* **structure** — values used before their definition, after the branch that defined them or after
  a loop that runs no trip; loop bounds that differ between waves; divisions by zero; ``tile_id``
  axes outside the grid.

Work is bounded: when the arrays would exceed :data:`BUDGET` elements the analysis says so as a
warning instead of allocating (the program is not declared covered).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tilesim.errors import VerifyError
from tilesim.ir.async_copy import InFlight, copy_problem
from tilesim.ir.core import Block, Op, Program, Value
from tilesim.ir.footprint import (BUDGET, Note, Read, Skip as _Skip, Store as _Store, coverage, input_coverage,
                                   origins, records as _records)
from tilesim.ir.lds_tr import op_plan, tr_addresses
from tilesim.ir.orders import Load, read_back_races
from tilesim.ir.ops import BINOPS

__all__ = ["analyse", "Note", "BUDGET"]

_SEQ_TRIPS = 1 << 16  # trips x body ops run one by one at most (loops with carried scalars or LDS)
_BINOPS = {name: row.numpy for name, row in BINOPS.items()}  # the op table's (tilesim/ir/ops.py)


class _Static:
    def __init__(self, prog: Program, grid: tuple[int, ...] | None = None, races: bool = True,
                 lds_state: bool = True) -> None:
        self.p = prog
        self.grid = grid or prog.grid
        self.nwg = int(np.prod(self.grid))
        self.W = prog.waves_per_workgroup
        self.G = self.nwg * self.W
        if self.G > BUDGET:
            raise _Skip(f"{self.G} (workgroup, wave) pairs")
        self.wg_of = np.repeat(np.arange(self.nwg), self.W)
        self.wave_of = np.tile(np.arange(self.W), self.nwg)
        self.scal: dict[int, np.ndarray] = {}
        self.defined: set[int] = set()
        self.notes: list[Note] = []
        self.stores: list[_Store] = []
        self.out_loads: list[Load] = []
        self.reads: list[Read] = []  # what each load of an input tensor reads (input coverage)
        self.oob: dict[tuple[str, str], list[Any]] = {}  # (tensor, load/store) -> [count, first message]
        self.index = 0
        self.op_index: dict[int, int] = {id(op): i for i, op in enumerate(prog.walk())}
        self.seen_where: set[str] = set()
        # LDS: buffer id -> byte offset; race state per (workgroup, byte) only when several waves share LDS
        self.lds_at: dict[int, int] = {}
        self.lds_top = 0
        # lds_state=False leaves the per-byte LDS state (races, unwritten reads, copies in flight) to a
        # simulation of this same program, which tracks it on every access (tilesim/wave/undefined.py)
        self.lds_state = lds_state
        self.races = races and lds_state and self.W > 1
        self.epoch = 0
        self.written: np.ndarray | None = np.zeros((self.nwg, 0), bool) if lds_state else None  # None: not tracked
        self.race_count = 0
        # asynchronous copies in flight (tilesim/ir/async_copy.py): tracked even in a one-wave workgroup
        self.flight = InFlight(self.wg_of, self.wave_of) if lds_state and any(
            o.kind == "lds_copy_async" for o in prog.walk()) else None

    # ------------------------------------------------------------------ helpers
    def note(self, severity: str, where: str, message: str, simulate: bool = False) -> None:
        if (where, message) in self.seen_where:
            return
        self.seen_where.add((where, message))  # type: ignore[arg-type]
        self.notes.append(Note(severity, where, message, simulate))

    def where(self, op: Op) -> str:
        return f"op {self.op_index.get(id(op), '?')} ({op.kind})"

    def scalar(self, a: Any, op: Op) -> np.ndarray:
        if isinstance(a, Value):
            if a.id not in self.scal:
                raise _Skip(f"{self.where(op)} reads %{a.id}, which has no value here")
            return self.scal[a.id]
        return np.asarray(int(a), np.int64)

    def full(self, x: np.ndarray, lead: tuple[int, ...]) -> np.ndarray:
        return np.broadcast_to(x, (*lead, self.G))

    def use(self, op: Op, scope: set[int]) -> bool:
        """Every value an op reads is defined in scope; notes the first that is not."""
        for a in op.args:
            if isinstance(a, Value) and a.id not in scope:
                why = ("defined later or never" if a.id not in self.defined else
                       "defined inside a branch or a loop that may not run, and read outside it")
                self.note("error", self.where(op), f"reads {a.short()}, {why}; the simulator and the device have no "
                          "value for it", simulate=True)
                return False
        return True

    # ------------------------------------------------------------------ walk
    def run(self, block: Block, lead: tuple[int, ...], active: np.ndarray, scope: set[int]) -> None:
        for op in block.ops:
            ok = self.use(op, scope)
            if op.out is not None:
                self.defined.add(op.out.id)
            if not ok:
                if op.out is not None:
                    scope.add(op.out.id)  # one note per missing value, not one per use downstream
                continue
            getattr(self, "op_" + op.kind, self.op_other)(op, lead, active, scope)
            if op.out is not None and op.kind != "loop":
                scope.add(op.out.id)

    def op_other(self, op: Op, lead: tuple[int, ...], active: np.ndarray, scope: set[int]) -> None:
        pass

    def op_const(self, op: Op, lead, active, scope) -> None:
        v = op.attr("value")
        if not isinstance(v, int) or isinstance(v, bool):
            self.note("error", self.where(op), f"constant {v!r} is not an integer", simulate=True)
            raise _Skip("a non-integer constant")
        self.scal[op.out.id] = np.asarray(v, np.int64)

    def op_tile_id(self, op: Op, lead, active, scope) -> None:
        axis = op.attr("axis")
        if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < len(self.grid):
            self.note("error", self.where(op), f"tile_id axis {axis!r} is not an axis of the grid {self.p.grid} "
                      f"(axes 0..{len(self.p.grid) - 1})", simulate=True)
            raise _Skip("a tile_id axis outside the grid")
        self.scal[op.out.id] = np.unravel_index(self.wg_of, self.grid, order="F")[axis].astype(np.int64)

    def op_wave_id(self, op: Op, lead, active, scope) -> None:
        self.scal[op.out.id] = self.wave_of.astype(np.int64)

    def op_binop(self, op: Op, lead, active, scope) -> None:
        name = op.attr("op")
        f = _BINOPS.get(name) if isinstance(name, str) else None  # from JSON it may be any value
        if f is None:
            self.note("error", self.where(op), f"unknown scalar operator {op.attr('op')!r}; operators: "
                      f"{', '.join(_BINOPS)}", simulate=True)
            raise _Skip("an unknown operator")
        a, b = (self.scalar(x, op) for x in op.args)
        if BINOPS[op.attr("op")].divides and bool(((np.broadcast_to(b, np.broadcast_shapes(b.shape, active.shape)) == 0)
                                                   & active).any()):
            self.note("error", self.where(op), f"integer {op.attr('op')} by zero on some (workgroup, wave)")
        with np.errstate(all="ignore"):
            self.scal[op.out.id] = f(a, b).astype(np.int64)

    def op_load(self, op: Op, lead, active, scope) -> None:
        self._global(op, op.out, op.args[0], op.args[1], lead, active, store=False)

    def op_store(self, op: Op, lead, active, scope) -> None:
        self._global(op, op.args[0], op.args[1], op.args[2], lead, active, store=True)

    def _global(self, op: Op, v: Value, r0: Any, c0: Any, lead: tuple[int, ...], active: np.ndarray,
                store: bool) -> None:
        name = op.attr("tensor")
        rows, cols = self.p.tensor(name).shape
        rr, cc, lane_vgpr = _records(v, bool(op.attr("transpose")), None if store else op.attr("broadcast"))
        if not rr.size:  # a fragment holding no element accesses nothing
            return
        r0s, c0s = self.scalar(r0, op), self.scalar(c0, op)
        if not store and self.p.tensor(name).output:  # read back from an output: ordered against its stores?
            self._output_load(op, name, rr, cc, r0s, c0s, lead, active)
        elif not store:
            self._read(op, name, rr, cc, r0s, c0s, lead, active)
        # bounds from the extents, on the scalars' own (broadcastable) shapes: O(trips + waves) for a GEMM's loads
        if not store and bool(((r0s + rr.min() >= 0) & (r0s + rr.max() < rows)).all()) \
                and bool(((c0s + cc.min() >= 0) & (c0s + cc.max() < cols)).all()):
            return
        row0, col0 = self.full(r0s, lead), self.full(c0s, lead)
        act = np.broadcast_to(active, row0.shape)
        n = int(act.sum())
        if n * rr.size > BUDGET:
            raise _Skip(f"{n * rr.size} element accesses at {self.where(op)}")
        g = np.broadcast_to(np.arange(self.G), row0.shape)[act]
        r_act, c_act = row0[act], col0[act]
        if bool(((r_act + rr.min() >= 0) & (r_act + rr.max() < rows) & (c_act + cc.min() >= 0)
                 & (c_act + cc.max() < cols)).all()):  # every lane in bounds: the flat indices in one step
            if store:
                self.stores.append(_Store(self.op_index.get(id(op), -1), name, None, g, np.stack([r_act, c_act], 1),
                                          v, bool(op.attr("transpose")), False, self.epoch, cols))  # flat: lazily
            return
        R, C = r_act[:, None] + rr, c_act[:, None] + cc
        ok = (R >= 0) & (R < rows) & (C >= 0) & (C < cols)
        if not ok.all():
            i, j = (int(x) for x in np.argwhere(~ok)[0])
            key = (name, "store to" if store else "load from")
            entry = self.oob.setdefault(key, [0, f"{self.where(op)}: {key[1]} {name}[{int(R[i, j])}][{int(C[i, j])}] "
                                                  f"(shape {rows}x{cols}) by workgroup {int(self.wg_of[g[i]])}, wave "
                                                  f"{int(self.wave_of[g[i]])}, lane {int(lane_vgpr[j, 0])}, VGPR "
                                                  f"{int(lane_vgpr[j, 1])}"])
            entry[0] += int((~ok).sum())
        if store:
            flat = np.where(ok, R * cols + C, -1)
            self.stores.append(_Store(self.op_index.get(id(op), -1), name, flat, g,
                                      np.stack([r_act, c_act], 1), v, bool(op.attr("transpose")), True, self.epoch,
                                      cols))

    def _read(self, op: Op, name: str, rr: np.ndarray, cc: np.ndarray, r0s: Any, c0s: Any, lead: tuple[int, ...],
              active: np.ndarray) -> None:
        at = origins(np.asarray(r0s), np.asarray(c0s), active, (*lead, self.G), BUDGET // 16)
        if at is not None and not at[0].size * at[1].size:
            return  # no instance runs
        # each element once: replicas (RDNA3 A/B lanes i and i+16) and broadcast rows would keep the
        # windows off the tile lattice (footprint.lattice) and send the pass to per-element counts
        r_lo, c_lo = int(rr.min()), int(cc.min())
        w = int(cc.max()) - c_lo + 1
        cell = np.unique((rr - r_lo) * w + (cc - c_lo))
        self.reads.append(Read(self.op_index.get(id(op), -1), name, cell // w + r_lo, cell % w + c_lo, at))

    def _output_load(self, op: Op, name: str, rr: np.ndarray, cc: np.ndarray, r0s: np.ndarray, c0s: np.ndarray,
                     lead: tuple[int, ...], active: np.ndarray) -> None:
        rows, cols = self.p.tensor(name).shape
        row0, col0 = self.full(r0s, lead), self.full(c0s, lead)
        act = np.broadcast_to(active, row0.shape)
        if int(act.sum()) * rr.size > BUDGET:
            raise _Skip(f"{int(act.sum()) * rr.size} element loads of output {name} at {self.where(op)}")
        g = np.broadcast_to(np.arange(self.G), row0.shape)[act]
        R, C = row0[act][:, None] + rr, col0[act][:, None] + cc
        ok = (R >= 0) & (R < rows) & (C >= 0) & (C < cols)
        self.out_loads.append(Load(self.op_index.get(id(op), -1), name, np.where(ok, R * cols + C, -1), g, self.epoch))

    # ------------------------------------------------------------------ LDS
    def op_lds_alloc(self, op: Op, lead, active, scope) -> None:
        self.lds_at[op.out.id] = self.lds_top
        self.lds_top += -(-op.out.lds.bytes // 16) * 16
        if self.written is not None:
            if self.nwg * self.lds_top > BUDGET:
                self.written = None
                self.note("warning", "program", f"reads of unwritten LDS not checked: {self.nwg} workgroups x "
                          f"{self.lds_top} bytes is over the analysis budget")
            else:
                self.written = np.pad(self.written, ((0, 0), (0, self.lds_top - self.written.shape[1])))
        if self.flight is not None:
            if self.nwg * self.lds_top > BUDGET // 8:  # two int32 per byte, and every LDS access reads them
                self.flight = None
                self.note("warning", "program", f"asynchronous copies not checked (reads before their wait): "
                          f"{self.nwg} workgroups x {self.lds_top} LDS bytes is over the analysis budget")
            else:
                self.flight.grow(self.lds_top)
        if self.races:
            if self.nwg * self.lds_top * (self.W + 1) > BUDGET:
                self.races = False
                self.note("warning", "program", f"LDS races not checked: {self.nwg} workgroups x {self.lds_top} bytes "
                          "is over the analysis budget")
                return
            grow = self.lds_top - getattr(self, "last_writer", np.zeros((self.nwg, 0))).shape[1]
            pad = ((0, 0), (0, grow))
            self.last_writer = np.pad(getattr(self, "last_writer", np.zeros((self.nwg, 0), np.int64)), pad,
                                      constant_values=-1)
            self.write_epoch = np.pad(getattr(self, "write_epoch", np.zeros((self.nwg, 0), np.int64)), pad,
                                      constant_values=-1)
            self.read_epoch = np.pad(getattr(self, "read_epoch", np.zeros((self.nwg, self.W, 0), np.int64)),
                                     ((0, 0), (0, 0), (0, grow)), constant_values=-1)

    def op_barrier(self, op: Op, lead, active, scope) -> None:
        self.epoch += 1

    def op_lds_store(self, op: Op, lead, active, scope) -> None:
        self._lds(op, op.args[0], op.args[1], op.args[2], op.args[3], lead, active, write=True)

    def op_lds_load(self, op: Op, lead, active, scope) -> None:
        self._lds(op, op.args[0], op.out, op.args[1], op.args[2], lead, active, write=False)

    def op_lds_load_tr(self, op: Op, lead, active, scope) -> None:
        # the reads touch exactly the fragment's elements (the plan checks it; structure reports a misfit)
        before = len(self.notes)
        self._lds(op, op.args[0], op.out, op.args[1], op.args[2], lead, active, write=False,
                  transpose=bool(op.attr("transpose")))
        try:
            plan = op_plan(op, self.p.target)
        except VerifyError:
            return  # structure() reports it
        if len(self.notes) > before:
            return  # out of bounds: reported by _lds
        r0, c0 = (self.full(self.scalar(a, op), lead) for a in op.args[1:3])
        act = np.broadcast_to(active, r0.shape)
        _, why = tr_addresses(plan, op.args[0].lds, r0[act], c0[act])  # contiguity and alignment of each read
        if why:
            self.note("error", self.where(op), why, simulate=True)

    def _lds(self, op: Op, buf: Value, v: Value, r0: Any, c0: Any, lead: tuple[int, ...], active: np.ndarray,
             write: bool, transpose: bool = False) -> np.ndarray | None:
        """Bounds, then (when tracked) copies in flight and races of an LDS access; its byte addresses."""
        lay = buf.lds
        rr, cc, _ = _records(v, transpose)
        row0, col0 = self.full(self.scalar(r0, op), lead), self.full(self.scalar(c0, op), lead)
        act = np.broadcast_to(active, row0.shape)
        inside = (row0 + rr.min() >= 0) & (row0 + rr.max() < lay.rows) & (col0 + cc.min() >= 0) & (col0 + cc.max() < lay.cols)
        bad = act & ~inside
        if bad.any():
            g = int(np.argwhere(bad)[0][-1])
            self.note("error", self.where(op), f"{'lds_store to' if write else 'lds_load from'} {buf.short()} leaves its "
                      f"{lay.rows}x{lay.cols} buffer: rows {int(row0[bad].min() + rr.min())}..{int(row0[bad].max() + rr.max())}, "
                      f"cols {int(col0[bad].min() + cc.min())}..{int(col0[bad].max() + cc.max())} "
                      f"(workgroup {int(self.wg_of[g])}, wave {int(self.wave_of[g])})", simulate=True)
            return None
        if buf.id not in self.lds_at or (not self.races and self.written is None and self.flight is None):
            return None
        if lead:  # ordering across trips matters: loops touching LDS run trip by trip (see _loop)
            raise _Skip("LDS accessed in a loop evaluated all at once")
        addr = lay.offset(row0[:, None] + rr, col0[:, None] + cc) + self.lds_at[buf.id]
        found = None if self.flight is None else self.flight.check(addr, lay.elem_bytes, active, write)
        if found is not None:  # an access of bytes an asynchronous copy may still be writing
            self.race_count += found[0]
            self.note("error", self.where(op), f"{buf.short()}: {found[1]}")
        if self.written is not None:
            self._initialised(op, buf, addr, lay.elem_bytes, active, write)
        if self.races:
            self._race(op, buf, addr, lay.elem_bytes, active, write)
        return addr

    def _initialised(self, op: Op, buf: Value, addr: np.ndarray, eb: int, active: np.ndarray, write: bool) -> None:
        """Mark the bytes a store writes; a read of a byte no store of its workgroup wrote is an error
        (the device returns stale LDS, from an earlier kernel or another buffer's reuse)."""
        assert self.written is not None
        byte = (addr[:, :, None] + np.arange(eb)).reshape(self.G, -1)
        act = np.broadcast_to(np.broadcast_to(active, (self.G,))[:, None], byte.shape)
        wg = np.broadcast_to(self.wg_of[:, None], byte.shape)[act]
        b = byte[act]
        if write:
            self.written[wg, b] = True
            return
        unset = ~self.written[wg, b]
        if unset.any():
            i = int(np.flatnonzero(unset)[0])
            wave = np.broadcast_to(self.wave_of[:, None], byte.shape)[act][i]
            self.note("error", self.where(op), f"reads LDS {buf.short()} at byte {int(b[i]) - self.lds_at[buf.id]} "
                      f"(workgroup {int(wg[i])}, wave {int(wave)}), which no lds_store wrote before it "
                      f"({int(unset.sum())} byte reads of unwritten LDS): the device returns whatever the LDS held")

    # ------------------------------------------------------------------ asynchronous copies
    def op_lds_copy_async(self, op: Op, lead, active, scope) -> None:
        """One instruction per group, inside the tensor, aligned (errors: a copy instruction has no mask);
        then the LDS side as a write at issue (races with this epoch), in flight until its wait (a write
        again when it lands there)."""
        buf = op.args[0]
        act = np.broadcast_to(active, np.broadcast_shapes(*(self.full(self.scalar(x, op), lead).shape
                                                            for x in op.args[1:5])))
        src0, dst0 = ([np.broadcast_to(self.full(self.scalar(x, op), lead), act.shape)[act] for x in xs]
                      for xs in (op.args[3:5], op.args[1:3]))
        bad = copy_problem(op, self.p.tensor(op.attr("tensor")).shape, self.lds_at.get(buf.id, 0), *src0, *dst0)
        if bad is not None:
            gi = None if bad[0] is None else int(np.flatnonzero(act.reshape(-1))[bad[0]]) % self.G
            at = "" if gi is None else f"workgroup {int(self.wg_of[gi])}, wave {int(self.wave_of[gi])}: "
            self.note("error", self.where(op), f"lds_copy_async: {at}{bad[1]}")
            return
        v = Value(0, "frag", buf.dtype, op.attr("layout"))
        if not self.p.tensor(op.attr("tensor")).output:
            rr, cc, _ = _records(v, False)
            self._read(op, op.attr("tensor"), rr, cc, self.scalar(op.args[3], op), self.scalar(op.args[4], op), lead,
                       active)
        addr = self._lds(op, buf, v, op.args[1], op.args[2], lead, active, write=True)
        if addr is None or self.flight is None:  # outside the buffer (reported), or not tracked (said)
            return
        self.flight.issue(self.op_index.get(id(op), -1), addr, buf.lds.elem_bytes, active, op)

    def op_async_commit(self, op: Op, lead, active, scope) -> None:
        if self.flight is not None:
            self.flight.commit(active)

    def op_async_wait(self, op: Op, lead, active, scope) -> None:
        if self.flight is None:
            return
        for p, land in self.flight.wait(op.attr("pending"), active):
            if self.races:  # the data lands now: a write of this epoch by the waves it landed in. Every
                # access that could conflict with it so far touched bytes in flight (reported), so the
                # race state is only brought up to date, for the accesses after it
                byte = (p.addr[land][:, :, None] + np.arange(p.eb)).reshape(int(land.sum()), -1)
                wg, wave = (np.broadcast_to(x[land][:, None], byte.shape) for x in (self.wg_of, self.wave_of))
                self.last_writer[wg, byte] = wave
                self.write_epoch[wg, byte] = self.epoch

    def _race(self, op: Op, buf: Value, addr: np.ndarray, eb: int, active: np.ndarray, write: bool) -> None:
        byte = (addr[:, :, None] + np.arange(eb)).reshape(self.G, -1)
        act = np.broadcast_to(np.broadcast_to(active, (self.G,))[:, None], byte.shape)
        wg = np.broadcast_to(self.wg_of[:, None], byte.shape)[act]
        wave = np.broadcast_to(self.wave_of[:, None], byte.shape)[act]
        b = byte[act]
        lw, we = self.last_writer[wg, b], self.write_epoch[wg, b]
        conflict = (lw >= 0) & (lw != wave) & (we == self.epoch)
        if write:
            others = self.read_epoch[wg, :, b] == self.epoch
            others[np.arange(wave.size), wave] = False
            conflict |= others.any(1)
            key = wg * (1 << 32) + b
            order = np.argsort(key, kind="stable")
            same = (key[order][1:] == key[order][:-1]) & (wave[order][1:] != wave[order][:-1])
            conflict[order[1:][same]] = True
        if conflict.any():
            i = int(np.flatnonzero(conflict)[0])
            self.race_count += int(conflict.sum())
            self.note("error", self.where(op), f"LDS race on {buf.short()}: workgroup {int(wg[i])}, wave {int(wave[i])} "
                      f"{'writes' if write else 'reads'} byte {int(b[i])}, which another wave of the workgroup "
                      f"{'reads or writes' if write else 'writes'} with no barrier between (a missing ts.barrier())")
        if write:
            self.last_writer[wg, b] = wave
            self.write_epoch[wg, b] = self.epoch
        else:
            self.read_epoch[wg, wave, b] = self.epoch

    # ------------------------------------------------------------------ control
    def op_branch(self, op: Op, lead, active, scope) -> None:
        cond = self.scalar(op.args[0], op) != 0
        if self.W > 1 and any(o.kind == "barrier" for o in op.attr("body").walk()):
            # a barrier waits for every wave of the workgroup: one that only some waves reach hangs
            # them (CUDA: undefined) or, on AMD, lets the others run on past it unordered
            c = cond & active
            c = np.broadcast_to(c, np.broadcast_shapes(c.shape, (self.G,))).reshape(-1, self.nwg, self.W)
            split = c.any(-1) & ~c.all(-1)
            if split.any():
                wg = int(np.argwhere(split)[0][-1])
                waves = np.flatnonzero(c[np.argwhere(split)[0][0], wg])
                self.note("error", self.where(op), f"a barrier inside a branch that only some waves of a workgroup "
                          f"take (workgroup {wg}: waves {waves.tolist()} of {self.W}): every wave must reach a barrier")
        self.run(op.attr("body"), lead, active & cond, set(scope))  # values defined inside stay inside

    def op_loop(self, op: Op, lead, active, scope) -> None:
        bounds = []
        for a, what in zip(op.args, ("start", "stop", "step")):
            x = self.full(self.scalar(a, op), lead)
            if not (x == x.reshape(-1)[0]).all():
                if (x == x[..., :1]).all():  # uniform over the waves, varies with an outer loop's trip
                    raise _Skip(f"loop {what} that depends on an outer loop")
                self.note("error", self.where(op), f"loop {what} differs between workgroups/waves (the simulator and "
                          "the code generator run uniform loops only)", simulate=True)
                raise _Skip("a non-uniform loop")
            bounds.append(int(x.reshape(-1)[0]))
        start, stop, step = bounds
        if step <= 0:
            self.note("error", self.where(op), f"loop step {step} is not positive", simulate=True)
            raise _Skip("a loop with a non-positive step")
        trips = len(range(start, stop, step))
        body = op.attr("body")
        carried = op.attr("carried") or ()
        inner = set(scope) | {op.out.id} | {i.id for i, _ in carried}
        if trips == 0:
            scope.update(i.id for i, _ in carried)
            for init, nxt in carried:
                scope.add(nxt.id)  # after a loop that does not run, its result is the initial value
                if init.id in self.scal:
                    self.scal[nxt.id] = self.scal[init.id]
            self._defined_in(body)
            return
        body_ops = body.walk()
        sequential = any(i.kind == "scalar" for i, _ in carried) or self.lds_state and any(
            o.kind.startswith(("lds_", "async_")) or o.kind == "barrier" for o in body_ops)
        if sequential:
            if trips * max(1, len(body_ops)) > _SEQ_TRIPS:
                raise _Skip(f"a loop of {trips} trips with loop-carried scalars or LDS accesses")
            for it in range(start, stop, step):
                self.scal[op.out.id] = np.asarray(it, np.int64)
                s = set(inner)
                self.run(body, lead, active, s)
                for init, nxt in carried:
                    if nxt.id in self.scal:
                        self.scal[init.id] = self.scal[nxt.id]
            final = s
        else:
            if trips * int(np.prod(lead, dtype=np.int64)) * self.G > BUDGET:
                raise _Skip(f"a loop of {trips} trips over {self.G} waves")
            k = np.arange(start, stop, step, dtype=np.int64).reshape((trips,) + (1,) * (len(lead) + 1))
            self.scal[op.out.id] = k
            before = set(self.scal)
            final = set(inner)
            self.run(body, (trips, *lead), active, final)
            for vid in set(self.scal) - before:  # after the loop: the last trip's value
                x = self.scal[vid]
                if x.ndim == len(lead) + 2:
                    self.scal[vid] = x[-1]
        scope.update(final)  # body values are the last trip's after the loop (it runs at least once)

    def _defined_in(self, b: Block) -> None:
        for o in b.walk():
            if o.out is not None:
                self.defined.add(o.out.id)


def analyse(prog: Program, *, lds_state: bool = True) -> tuple[list[Note], int]:
    """The notes of the static analysis of ``prog`` and the LDS race count it found.

    ``lds_state=False`` skips the per-byte LDS passes (races, reads of unwritten bytes, reads of
    copies in flight) for a caller that simulates this same program and fails on what the
    simulation sees (run, simulate): LDS addresses depend on tile ids, wave ids and loop counters,
    never on data, so the simulation meets exactly the accesses this pass would walk."""
    try:
        st = _Static(prog, lds_state=lds_state)
    except _Skip as e:
        return [Note("warning", "program", f"memory accesses not analysed: {e} is over the analysis budget")], 0
    try:
        st.run(prog.body, (), np.ones(st.G, bool), set())
    except _Skip as e:
        st.notes.append(Note("warning", "program", f"coverage and races not analysed past this point: {e}"))
        return st.notes, st.race_count
    for (name, kind), (n, first) in st.oob.items():
        st.note("warning", "program", f"{n} element {kind.split()[0]}s outside {name} (masked: loads read 0, stores "
                f"are dropped), e.g. {first}")
    if st.flight is not None:
        for p in st.flight.pending:
            st.note("warning", f"op {p.op} (lds_copy_async)", "asynchronous copies that no ts.async_wait completes "
                    "before the kernel ends (never committed, or never waited for): their data may land at any time")
    def rerun(grid: tuple[int, ...]) -> _Static:  # the walk on another grid: who would write an element
        big = _Static(prog, grid, races=False)
        big.run(prog.body, (), np.ones(big.G, bool), set())
        return big

    coverage(st, prog, BUDGET, rerun)
    input_coverage(st, prog, BUDGET)
    for where, message in read_back_races(prog, st.out_loads, st.stores, st.wg_of, st.wave_of):
        st.note("error", where, message)
    return st.notes, st.race_count
