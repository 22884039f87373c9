"""The lane-accurate simulator: runs a Tile IR :class:`~tilesim.ir.core.Program` on numpy arrays.

State, vectorised over every (workgroup, wave) pair ``g`` at once:

* scalars: ``int64[G]``;
* register fragments: ``uint32[G, lane, vgpr]`` — bit-exact register images, packed through the
  fragment's declared layout (``tilesim.wave.codec``);
* LDS: ``uint8[workgroups, bytes]`` with bank-conflict counting and a cross-wave race detector
  (two waves touching the same byte, at least one writing, with no barrier between);
* global tensors: numpy arrays; loads/stores report out-of-bounds lanes (masked) and 64-byte
  transaction counts per instruction (one instruction per VGPR).

An ``mma`` reads its operands through the *instruction's* hardware layout, whatever layout the
program declared, so a wrong declaration produces exactly the hardware's wrong answer; disagreeing
replicas (RDNA3 A/B lanes 16-31 vs 0-15) are reported. Numerics: inputs as the registers hold
them, products and sum in float64 (exact for integer and <=11-bit-significand inputs of these
instruction sizes in all but extreme exponent spreads), one rounding to the accumulator type;
``exact=True`` uses the catalog's exact rational model instead.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from tilesim.budget import check_program
from tilesim.errors import CheckWarning, TilesimError, VerifyError
from tilesim.targets import get_target
from tilesim.ir.analysis import vgpr_estimate
from tilesim.ir.footprint import lattice
from tilesim.ir.core import Block, Op, Program, Value
from tilesim.ir.ops import BINOPS, ELEMENTWISE, REDUCE
from tilesim.ir.verify import check_errors, structure
from tilesim.matrix.dtypes import decode, dtype, encode, encode_bits
from tilesim.matrix.numerics import cast, quantize
from tilesim.wave.codec import Codec, codec
from tilesim.wave.fused import run_fused_loop
from tilesim.wave.inputs import check_inputs
from tilesim.wave.async_copy import issue_copy, land_copies
from tilesim.wave.lds_tr import run_lds_load_tr
from tilesim.wave.provenance import Provenance, ProvenanceMap
from tilesim.wave.kernels import gather_windows
from tilesim.wave.images import RegisterMap, Registers, TileImage, WindowImage, WriteCounts, tile_elements
from tilesim.wave.storage import put_tiles, storage_dtype, tensor_bits, tensor_storage
from tilesim.wave.lds import Lds
from tilesim.wave.lds_fused import run_lds_loop
from tilesim.wave.mma import run_mma
from tilesim.wave.result import Report, SimResult

__all__ = ["simulate", "SimResult", "Report"]

_SEG = 64  # bytes per global memory transaction
_STORE_CHUNK = 1 << 16  # a fast store writes this many elements at a time (peak memory: 0.5 MiB of indices)


class _Sim:
    def __init__(self, prog: Program, arrays: dict[str, np.ndarray], exact: bool, trace: tuple[int, ...] = ()) -> None:
        self.p = prog
        self.exact = exact
        self.trace: dict[int, list[np.ndarray]] = {int(t): [] for t in trace}
        self.prov: dict[str, Provenance] = {}
        self.writes: dict[str, np.ndarray] = {}  # uint8 while every count stays < 256 (write_bound), else int64
        self.write_bound: dict[str, int] = {}  # an upper bound of each tensor's largest write count
        self.t = get_target(prog.target)
        self.nwg, self.W, self.L = prog.workgroups, prog.waves_per_workgroup, prog.wave_size
        self.G = self.nwg * self.W
        self.wg_of = np.repeat(np.arange(self.nwg), self.W)
        self.wave_of = np.tile(np.arange(self.W), self.nwg)
        self.scal: dict[int, np.ndarray] = {}
        self.regs = Registers()  # value id -> uint32[G, lane, vgpr] (or a TileImage, encoded when read)
        self.vals: dict[int, Value] = {}
        self.rep = Report()
        self.active = np.ones(self.G, bool)
        self.tensors: dict[str, np.ndarray] = {}
        self.memo: dict[Any, Any] = {}  # per-run plans (fused loops)
        self.tensor_bits: dict[tuple[str, str], np.ndarray] = {}  # (tensor, element type) -> flat encoded bits
        for tp in prog.tensors:
            if tp.name in arrays:
                a = np.asarray(arrays[tp.name])
                if a.shape != tp.shape:
                    raise VerifyError(f"tensor {tp.name} has shape {a.shape}; the program was specialised for {tp.shape}")
                self.tensors[tp.name] = tensor_storage(a, tp.dtype, borrow=not tp.output)
            elif tp.output:
                self.tensors[tp.name] = np.zeros(tp.shape, storage_dtype(tp.dtype))
            else:
                raise VerifyError(f"missing input tensor {tp.name!r} ({tp.dtype}{list(tp.shape)})")
        self.lds = Lds(self.nwg, self.W, self.wg_of, self.wave_of, self.t.lds_banks, self.t.lds_bytes, self.t.name,
                       self.rep)

    # ------------------------------------------------------------------ helpers
    def scalar(self, a: Any) -> np.ndarray:
        if isinstance(a, Value):
            return self.scal[a.id]
        return np.full(self.G, int(a), np.int64)

    def codec_of(self, v: Value) -> Codec:
        assert v.layout is not None and v.dtype
        return codec(v.layout, v.dtype)

    def set_frag(self, v: Value, regs: np.ndarray | TileImage | WindowImage) -> None:
        self.regs[v.id] = regs
        self.vals[v.id] = v
        if v.id in self.trace:
            img = self.regs[v.id]
            self.trace[v.id].append(img.reshape(self.nwg, self.W, *img.shape[1:]).copy())

    def _prov(self, name: str) -> Provenance:
        if name not in self.prov:
            self.prov[name] = Provenance(self.tensors[name].shape)
        return self.prov[name]

    def _note(self, lst: list[str], msg: str) -> None:
        if len(lst) < 20:
            lst.append(msg)

    def _where(self, g: int) -> str:
        return f"workgroup {int(self.wg_of[g])}, wave {int(self.wave_of[g])}"

    # ------------------------------------------------------------------ run
    def run(self, block: Block) -> None:
        for op in block.ops:
            self.current = op
            self.rep.ops[op.kind] += 1
            fn = getattr(self, "op_" + op.kind, None)
            if fn is None:  # the op table has a kind this simulator has no method for: refuse it by name
                raise VerifyError(f"op kind {op.kind!r} is not simulated; simulated kinds: "
                                  f"{', '.join(sorted(k[3:] for k in dir(self) if k.startswith('op_')))}")
            fn(op)

    def op_const(self, op: Op) -> None:
        self.scal[op.out.id] = np.full(self.G, int(op.attr("value")), np.int64)

    def op_tile_id(self, op: Op) -> None:
        axis = op.attr("axis")
        coords = np.unravel_index(self.wg_of, self.p.grid, order="F")
        self.scal[op.out.id] = coords[axis].astype(np.int64)

    def op_wave_id(self, op: Op) -> None:
        self.scal[op.out.id] = self.wave_of.astype(np.int64)

    def op_binop(self, op: Op) -> None:
        a, b = (self.scalar(x) for x in op.args)
        self.scal[op.out.id] = BINOPS[op.attr("op")].numpy(a, b).astype(np.int64)

    def op_zeros(self, op: Op) -> None:
        c = self.codec_of(op.out)
        if c.dt.name == "f32" and c.slots is not None and c._slot_plan[1] is not None:  # an accumulator
            self.set_frag(op.out, TileImage.zeros(c, self.G))  # no image until something reads one
        else:
            self.set_frag(op.out, np.zeros((self.G, c.lanes, c.nregs), np.uint32))

    def _global_access(self, name: str, c: Codec, row0: np.ndarray, col0: np.ndarray, store: bool,
                       transpose: bool = False, broadcast: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        shape = self.tensors[name].shape
        tr, tc = (2, 1) if transpose else (1, 2)
        rec = c.rec
        if broadcast:  # a vector load: the fragment's row (or column) index reads tensor row (column) 0
            rec = rec.copy()
            rec[:, 1 if broadcast == "row" else 2] = 0
        r = row0[:, None] + rec[None, :, tr]
        q = col0[:, None] + rec[None, :, tc]
        ok = (r >= 0) & (r < shape[0]) & (q >= 0) & (q < shape[1])
        bad = ~ok & self.active[:, None]
        if bad.any():
            self.rep.oob_count += int(bad.sum())
            g, i = (int(x) for x in np.argwhere(bad)[0])
            self._note(self.rep.oob, f"{'store to' if store else 'load from'} {name}[{int(r[g, i])}][{int(q[g, i])}] "
                       f"(shape {shape}) by {self._where(g)}, lane {int(c.rec[i, 4])}, VGPR {int(c.rec[i, 3])}: masked")
        # transactions: one instruction per (g, vgpr); count distinct 64-byte segments touched
        eb = max(1, dtype(self.p.tensor(name).dtype).reg_bits // 8)
        addr = (np.where(ok, r, 0) * shape[1] + np.where(ok, q, 0)) * eb
        key = (c.rec[None, :, 3] * (1 << 40) + addr // _SEG)[:, :]
        for vgpr in np.unique(c.rec[:, 3]):
            sel = c.rec[:, 3] == vgpr
            k = np.sort(np.where(ok[:, sel], key[:, sel], -1), axis=1)
            distinct = (np.diff(k, axis=1) != 0).sum(1) + 1 - (k[:, 0] == -1)
            self.rep.global_transactions += int(distinct[self.active].sum())
            self.rep.global_ideal_transactions += int(self.active.sum()) * math.ceil(int(sel.sum()) * eb / _SEG)
        return np.where(ok, r, 0), np.where(ok, q, 0), ok

    def offsets(self, name: str, c: Codec, transpose: bool) -> tuple[np.ndarray, tuple[int, int, int, int]]:
        """Flat element offset of every record from the window's origin, and the records' row and
        column extent (min row, max row, min col, max col), for a row-major tensor."""
        cols = self.tensors[name].shape[1]
        key = ("offsets", cols, transpose)
        if key not in c.memo:
            tr, tc = (2, 1) if transpose else (1, 2)
            rr, cc = c.rec[:, tr], c.rec[:, tc]
            c.memo[key] = (rr * cols + cc, (int(rr.min()), int(rr.max()), int(cc.min()), int(cc.max())))
        return c.memo[key]

    def in_bounds(self, name: str, c: Codec, row0: np.ndarray, col0: np.ndarray, transpose: bool) -> bool:
        """Whether every lane of every (workgroup, wave) accesses inside the tensor."""
        rows, cols = self.tensors[name].shape
        rlo, rhi, clo, chi = self.offsets(name, c, transpose)[1]
        if not np.size(row0) or not np.size(col0):
            return True
        # each bound on the least / greatest origin: the same answer as every lane's, without four
        # [steps, waves] temporaries (3-5 ms of a 1024³ GEMM's fused loop)
        return bool(int(np.min(row0)) + rlo >= 0 and int(np.max(row0)) + rhi < rows
                    and int(np.min(col0)) + clo >= 0 and int(np.max(col0)) + chi < cols)

    def count_transactions(self, name: str, c: Codec, base: np.ndarray, transpose: bool) -> None:
        """:meth:`_global_access`'s transaction counts for an all-in-bounds access whose window starts
        at flat element ``base[g]``. A lane's byte address is ``base*eb + off*eb``; adding a multiple of
        the segment size to every address of an instruction shifts its segments without changing how
        many distinct ones it touches, so the count depends only on ``base*eb % 64`` and is computed
        once per residue (exactly as the general path does) and reused."""
        eb = max(1, dtype(self.p.tensor(name).dtype).reg_bits // 8)
        off = self.offsets(name, c, transpose)[0]
        memo = c.memo.setdefault(("transactions", self.tensors[name].shape[1], transpose, eb), {})
        rows = base.reshape(-1, base.shape[-1])  # base: [G] for one access, or [steps, G] for several
        per_res = np.zeros(_SEG, np.int64)
        n_sel = 0
        every = bool(self.active.all())  # (no boolean-index copy)
        shift = rows[:, :1].astype(np.int64) - int(rows[0, 0]) if every and rows.shape[0] > 1 else None
        if shift is not None and bool((rows == rows[:1] + shift.astype(rows.dtype)).all()):
            # step t's windows are step 0's moved by shift[t] (a k-loop): its residues are step 0's
            # moved by shift[t]*eb mod 64, so the histogram is step 0's summed over those rotations
            h0 = np.bincount(rows[0].astype(np.int64) * eb % _SEG, minlength=_SEG)
            by = np.bincount(shift[:, 0] * eb % _SEG, minlength=_SEG)
            for r in np.flatnonzero(by).tolist():
                per_res += int(by[r]) * np.roll(h0, r)
            n_sel, rows = rows.size, rows[:0]  # (nothing left for the loop below)
        for i in range(0, rows.shape[0], max(1, _STORE_CHUNK // rows.shape[1])):  # (peak memory)
            sel = rows[i:i + max(1, _STORE_CHUNK // rows.shape[1])]
            sel = sel if every else sel[:, self.active]
            res = sel * eb & (_SEG - 1) if _SEG & (_SEG - 1) == 0 else sel * eb % _SEG  # x & 63 == x % 64
            per_res += np.bincount(res.reshape(-1), minlength=_SEG)
            n_sel += sel.size
        for r in np.flatnonzero(per_res).tolist():
            k = int(per_res[r])
            if r not in memo:
                seg = (r + off * eb) // _SEG
                memo[r] = sum(int(np.unique(seg[c.rec[:, 3] == v]).size) for v in np.unique(c.rec[:, 3]))
            self.rep.global_transactions += memo[r] * k
        if "ideal" not in memo:
            memo["ideal"] = sum(math.ceil(int((c.rec[:, 3] == v).sum()) * eb / _SEG) for v in np.unique(c.rec[:, 3]))
        self.rep.global_ideal_transactions += n_sel * memo["ideal"]

    def bits_of(self, name: str, dt: Any) -> np.ndarray:
        """The tensor's values encoded as ``dt`` (flat); kept until the tensor is stored to."""
        key = (name, dtype(dt).name)
        if key not in self.tensor_bits:  # a fragment of another type than the tensor's: a cast (numerics.cast)
            t, tdt = self.tensors[name], self.p.tensor(name).dtype
            if dtype(dt).name == dtype(tdt).name:  # the tensor's own type: its bits (a view where it can be)
                self.tensor_bits[key] = tensor_bits(t, dt)
            else:
                self.tensor_bits[key] = encode_bits(cast(t.astype(np.float64) if t.dtype.kind == "f" else t, tdt, dt),
                                                    dt).reshape(-1)
        return self.tensor_bits[key]

    def op_load(self, op: Op) -> None:
        c = self.codec_of(op.out)
        row0, col0 = self.scalar(op.args[0]), self.scalar(op.args[1])
        self.set_frag(op.out, self.gather(op.attr("tensor"), c, row0, col0, bool(op.attr("transpose")),
                                          op.attr("broadcast")))

    def gather(self, name: str, c: Codec, row0: np.ndarray, col0: np.ndarray, tr: bool = False,
               bc: str | None = None, lazy: bool = True) -> np.ndarray | WindowImage:
        """The register image a load of ``name`` through ``c`` holds (0 outside the tensor, reported);
        ``lazy``: a :class:`WindowImage` where the bits can be gathered when read."""
        if c.slots is not None and not bc and self.in_bounds(name, c, row0, col0, tr):
            # every lane in bounds: gather the encoded bits straight into register slots (the same
            # bits as encoding the gathered values, which is elementwise)
            base = row0 * self.tensors[name].shape[1] + col0
            self.count_transactions(name, c, base, tr)
            off = self.offsets(name, c, tr)[0]
            rec_of_slot = c._slot_plan[1]
            bits = self.bits_of(name, c.dt)
            if rec_of_slot is not None and lazy:  # gathered when read (an mma reads the tensor's bits directly)
                return WindowImage(c, bits, base, off[rec_of_slot], name)
            return c.pack(gather_windows(bits, base, off))
        r, q, ok = self._global_access(name, c, row0, col0, False, tr, bc)
        t = self.tensors[name][r, q]
        vals = np.where(ok, cast(t.astype(np.float64) if t.dtype.kind == "f" else t, self.p.tensor(name).dtype, c.dt), 0)
        return c.encode(vals)

    def op_store(self, op: Op) -> None:
        v = op.args[0]
        c = self.codec_of(v)
        name = op.attr("tensor")
        row0, col0, tr = self.scalar(op.args[1]), self.scalar(op.args[2]), bool(op.attr("transpose"))
        self.regs.settle(name)  # loads from this tensor not yet gathered read it as it was
        for key in [k for k in self.tensor_bits if k[0] == name]:
            del self.tensor_bits[key]
        if self.active.all() and self.in_bounds(name, c, row0, col0, tr):
            self._store_fast(name, c, v, row0, col0, tr)
            return
        vals = cast(c.decode(self.regs[v.id]), v.dtype, self.p.tensor(name).dtype)
        r, q, ok = self._global_access(name, c, row0, col0, True, tr)
        w = ok & self.active[:, None]
        self._writable(name)[r[w], q[w]] = vals[w]
        counts = self.writes[name] = self._counts64(name)
        gw, iw = np.nonzero(w)
        size = counts.size
        flat = r[w] * counts.shape[1] + q[w]
        if "distinct" not in c.memo:  # no two lanes of one store hold the same element
            c.memo["distinct"] = np.unique(c.flat_elem).size == c.flat_elem.size
        key = flat if c.memo["distinct"] else np.unique(gw * size + flat) % size  # one write per (wave, element)
        counts += np.bincount(key, minlength=size).reshape(counts.shape)
        prov = self._prov(name).expand()
        g = np.nonzero(w)[0]
        rec = c.rec[np.nonzero(w)[1]]
        prov[r[w], q[w]] = np.stack([self.wg_of[g], self.wave_of[g], rec[:, 4], rec[:, 3], rec[:, 5],
                                     np.full(g.size, v.id)], 1)

    def _writable(self, name: str) -> np.ndarray:
        """The tensor, copied first if it is the caller's (read-only) input array."""
        if not self.tensors[name].flags.writeable:
            self.tensors[name] = self.tensors[name].copy()
        return self.tensors[name]

    def _store_fast(self, name: str, c: Codec, v: Value, row0: np.ndarray, col0: np.ndarray, tr: bool) -> None:
        """:meth:`op_store` when every wave is active and every lane in bounds: the same writes,
        counts and provenance (in the same (wave, record) order, so the last writer still wins),
        a chunk of waves at a time (peak memory); a lazily encoded accumulator is stored from its
        tile without building its register image."""
        t = self._writable(name)
        base = row0 * t.shape[1] + col0
        self.count_transactions(name, c, base, tr)
        off = self.offsets(name, c, tr)[0]
        tdt = self.p.tensor(name).dtype
        img = self.regs.raw(v.id)
        elem = tile_elements(img, c) if isinstance(img, TileImage) else None
        if elem is None:
            img = self.regs[v.id]
        if "distinct" not in c.memo:  # no two lanes of one store hold the same element
            c.memo["distinct"] = np.unique(c.flat_elem).size == c.flat_elem.size
        R = c.rec.shape[0]
        step = max(1, _STORE_CHUNK // R)
        flat_t = t.reshape(-1)
        # an f32 tile into an f32 tensor: cast() rounds f32 values to f32, so every value but a NaN
        # (whose signalling bit the float64 round trip sets) is stored as it is, without float64
        same = elem is not None and dtype(v.dtype).name == dtype(tdt).name == "f32" and t.dtype == np.float32
        tiles = self._tiles(name, c, row0, col0, tr)
        if same and tiles is not None and self._tile_order(c, tr, elem, img.tile.shape[1:], tiles[2:]) \
                and t.flags.c_contiguous and not np.isnan(img.tile).any():
            # disjoint windows that are whole tiles laid out as the accumulator's tile: one block copy
            # (the same writes; no element is written twice, so their order does not matter)
            put_tiles(t, *tiles, img.tile.reshape(-1, *tiles[2:]))
            g_start = self.G  # (nothing left for the loop below)
        else:
            g_start = 0
        for g0 in range(g_start, self.G, step):
            g1 = min(self.G, g0 + step)
            flat = (base[g0:g1, None] + off[None, :]).reshape(-1)
            if same:
                v32 = img.tile.reshape(img.tile.shape[0], -1)[g0:g1][:, elem]
                if not np.isnan(v32).any():
                    flat_t[flat] = v32.reshape(-1)
                    continue
            if elem is not None:
                vals = img.tile.reshape(img.tile.shape[0], -1)[g0:g1][:, elem].astype(np.float64)
            else:
                vals = c.decode(img[g0:g1])
            flat_t[flat] = cast(vals, v.dtype, tdt).reshape(-1)
            del vals
        prov = self._prov(name)
        rec = c.rec[:, [4, 3, 5]]
        if name not in self.writes:
            if prov.record_windows(base, off, self.wg_of, self.wave_of, rec, v.id, tiles):
                return  # every element written at most once so far: the counts are the written mask
            earlier = prov.counts()
            self.writes[name] = (earlier if earlier is not None else np.zeros(t.shape, np.int64)).astype(np.uint8)
            self.write_bound[name] = int(self.writes[name].max(initial=0))
        prov.to_codes()
        start = prov.next
        for g0 in range(0, self.G, step):
            g1 = min(self.G, g0 + step)
            prov.record((base[g0:g1, None] + off[None, :]).reshape(-1), self.wg_of[g0:g1], self.wave_of[g0:g1], rec,
                        v.id)
        # write counts: +1 per (wave, element) written; a narrow array while no element can pass 255
        bound = self.write_bound.get(name, 0) + (1 if prov.distinct_since(start) else self.G)
        self.write_bound[name] = bound
        counts = self.writes[name]
        if bound > 255 and counts.dtype != np.int64:
            counts = self.writes[name] = counts.astype(np.int64)
        for g0 in range(0, self.G, step):
            g1 = min(self.G, g0 + step)
            flat = (base[g0:g1, None] + off[None, :]).reshape(-1)
            key = flat if c.memo["distinct"] else np.unique(
                np.repeat(np.arange(g0, g1), R) * t.size + flat) % t.size
            np.add.at(counts.reshape(-1), key, 1)  # (no tensor-sized temporary)

    def _tiles(self, name: str, c: Codec, row0: np.ndarray, col0: np.ndarray,
               tr: bool) -> tuple[np.ndarray, np.ndarray, int, int] | None:
        """An in-bounds store's windows as :func:`~tilesim.ir.footprint.lattice` tiles, when no two
        waves' windows are the same tile (so no element is written twice); else None."""
        tr_, tc_ = (2, 1) if tr else (1, 2)
        shape = self.tensors[name].shape
        lat = lattice(c.rec[:, tr_], c.rec[:, tc_], row0, col0, shape)
        if lat is None:
            return None
        ti, tj, h, w = lat
        return lat if np.bincount(ti * (shape[1] // w) + tj).max(initial=0) <= 1 else None

    @staticmethod
    def _tile_order(c: Codec, tr: bool, elem: np.ndarray, tile_shape: tuple[int, ...], hw: tuple[int, int]) -> bool:
        """Whether record ``r`` of a store through ``c`` writes tile element ``elem[r]`` at its place in
        an ``h x w`` window (row-major), the tile being ``h x w``: then the tile is the window."""
        if tuple(tile_shape) != tuple(hw):
            return False
        tr_, tc_ = (2, 1) if tr else (1, 2)
        rr, cc = c.rec[:, tr_], c.rec[:, tc_]
        return bool(np.array_equal(elem, (rr - rr.min()) * hw[1] + (cc - cc.min())))

    def _counts64(self, name: str) -> np.ndarray:
        """The tensor's write counts as int64 (a general-path store adds to them)."""
        if name in self.writes:
            return self.writes[name].astype(np.int64)
        earlier = self.prov[name].counts() if name in self.prov else None
        return earlier if earlier is not None else np.zeros(self.tensors[name].shape, np.int64)

    # ------------------------------------------------------------------ LDS (tilesim.wave.lds)
    def op_lds_alloc(self, op: Op) -> None:
        self.lds.alloc(op.out)
        self.vals[op.out.id] = op.out

    def op_lds_store(self, op: Op) -> None:
        buf, v = op.args[0], op.args[1]
        c = self.codec_of(v)
        acc = self.lds.access(buf, c, self.scalar(op.args[2]), self.scalar(op.args[3]))
        self.lds.check(buf, acc, True, self.active)
        self.lds.store(buf, c, self.regs.raw(v.id), acc, self.active, v.dtype)  # (a loaded window: its bits)

    def op_lds_load(self, op: Op) -> None:
        buf = op.args[0]
        c = self.codec_of(op.out)
        acc = self.lds.access(buf, c, self.scalar(op.args[1]), self.scalar(op.args[2]))
        self.lds.check(buf, acc, False, self.active)
        self.lds.unwritten_reads(buf, acc, self.active)
        self.set_frag(op.out, self.lds.load(buf, c, acc))

    def op_lds_load_tr(self, op: Op) -> None:
        run_lds_load_tr(self, op)  # tilesim/wave/lds_tr.py

    def op_barrier(self, op: Op) -> None:
        self.lds.barrier()

    def op_lds_copy_async(self, op: Op) -> None:
        issue_copy(self, op)  # tilesim/wave/async_copy.py

    def op_async_commit(self, op: Op) -> None:
        self.lds.flight.commit(self.active)

    def op_async_wait(self, op: Op) -> None:
        land_copies(self, op)

    # ------------------------------------------------------------------ math
    def op_mma(self, op: Op) -> None:
        run_mma(self, op)

    def op_mma_scaled(self, op: Op) -> None:
        run_mma(self, op)

    def op_mma_sparse(self, op: Op) -> None:
        run_mma(self, op)  # the same, with the metadata as a fourth operand (mma_forms.operand_codecs)

    def op_elementwise(self, op: Op) -> None:
        x, y = op.args
        c = self.codec_of(op.out)
        a = c.decode(self.regs[x.id])
        b = c.decode(self.regs[y.id]) if isinstance(y, Value) and y.kind == "frag" else (
            self.scalar(y)[:, None] if isinstance(y, Value) else y)
        f = ELEMENTWISE[op.attr("op")].numpy
        with np.errstate(all="ignore"):
            r = np.asarray(f(a, b))
            # integer elements: integer arithmetic wraps; a float result (``/``, exp, a float constant)
            # becomes the element type as a cast does (numerics.cast)
            self.set_frag(op.out, c.encode(cast(r, "f64" if r.dtype.kind == "f" else c.dt, c.dt)))

    def op_cast(self, op: Op) -> None:
        x = op.args[0]
        vals = self.codec_of(x).decode(self.regs[x.id])
        self.set_frag(op.out, self.codec_of(op.out).encode(cast(vals, x.dtype, op.out.dtype)))

    def op_convert(self, op: Op) -> None:
        x = op.args[0]
        tile, _ = self.codec_of(x).tile(self.regs[x.id])
        self.set_frag(op.out, self.codec_of(op.out).from_tile(tile))

    def op_shuffle(self, op: Op) -> None:
        x = op.args[0]
        src = np.asarray(op.attr("src_lane"))
        self.set_frag(op.out, self.regs[x.id][:, src, :])

    def op_reduce(self, op: Op) -> None:
        x = op.args[0]
        c = self.codec_of(x)
        tile, _ = c.tile(self.regs[x.id])
        f = REDUCE[op.attr("op")].numpy
        axis = -1 if op.attr("axis") == "col" else -2
        red = np.broadcast_to(f(tile, axis=axis, keepdims=True), tile.shape)
        self.set_frag(op.out, c.from_tile(quantize(red, c.dt)))

    # ------------------------------------------------------------------ control
    def _uniform(self, a: Any, what: str) -> int:
        v = self.scalar(a)
        if not (v == v[0]).all():
            raise VerifyError(f"loop {what} must be the same in every workgroup and wave")
        return int(v[0])

    def op_loop(self, op: Op) -> None:
        start, stop, step = (self._uniform(a, n) for a, n in zip(op.args, ("start", "stop", "step")))
        if step <= 0:
            raise VerifyError(f"loop step must be positive, got {step}")
        carried = op.attr("carried")
        iters = list(range(start, stop, step))
        ran = bool(iters)
        for it in iters[run_fused_loop(self, op, iters) or run_lds_loop(self, op, iters):]:
            self.loop_step(op, it)
        for init, nxt in carried:  # after the loop the body's value is the final value
            store = self.regs if init.kind == "frag" else self.scal
            if not ran:
                store[nxt.id] = dict.__getitem__(store, init.id)
                if init.kind == "frag":
                    self.vals[nxt.id] = nxt

    def loop_step(self, op: Op, it: int) -> None:
        """Iteration ``it`` of loop ``op``, step by step, and its carried values passed on."""
        self.scal[op.out.id] = np.full(self.G, it, np.int64)
        self.run(op.attr("body"))
        for init, nxt in op.attr("carried"):
            store = self.regs if init.kind == "frag" else self.scal
            store[init.id] = dict.__getitem__(store, nxt.id)  # (a TileImage stays one)

    def op_branch(self, op: Op) -> None:
        cond = self.scalar(op.args[0]) != 0
        saved = self.active
        self.active = saved & cond
        if self.active.any():
            self.run(op.attr("body"))
        self.active = saved


def simulate(prog: Program, *, exact: bool = False, trace: tuple[int, ...] = (), verify: bool = True,
             **arrays: np.ndarray) -> SimResult:
    """Run ``prog`` on the given input tensors (numpy arrays); returns outputs and a report.

    ``trace`` lists fragment value ids whose register image is kept every time it is (re)defined
    (e.g. an accumulator across loop iterations); ``exact`` uses the exact rational numerics.
    ``verify`` (default) runs ``check`` too: a program with errors is still simulated — the
    outputs are the hardware's wrong answer — but ``SimResult.check_errors`` lists the errors and a
    :class:`~tilesim.errors.CheckWarning` says so; the simulation itself never judges intent. The
    check's per-byte LDS passes (races, reads of unwritten LDS, copies in flight) are left to the
    simulation, which sees them on every access (``report.races``, ``report.uninit``; the warning
    names them too, and ``run``/``tilesim simulate`` fail on them: tilesim/wave/undefined.py).
    """
    if not isinstance(prog, Program):
        raise TilesimError(f"simulate() takes a specialised Program (kernel.specialize(...)), got {type(prog).__name__}")
    check_program(prog)  # before the tensors and register state are allocated (tilesim.budget)
    trace = check_inputs(prog, arrays, trace)
    bad = [f for f in structure(prog) if f.severity == "error"]
    if bad:  # what the simulator cannot represent is refused here, as check() reports it
        raise VerifyError(f"cannot simulate {prog.name}: " + "; ".join(str(f) for f in bad[:3]))
    sim = _Sim(prog, arrays, exact, trace)
    try:
        sim.run(prog.body)
    except TilesimError:
        raise
    except Exception as e:  # not a user error: a tilesim bug. Keep the exception, say where it happened
        op = getattr(sim, "current", None)
        e.add_note(f"tilesim bug: simulating {prog.name} on {prog.target} raised {type(e).__name__} at a "
                   f"{getattr(op, 'kind', '?')} op; check() passed or was not run. Please report it with the program's "
                   "JSON (Program.to_json()).")
        raise
    sim.rep.vgprs = vgpr_estimate(prog)
    outs = {}
    for tp in prog.tensors:
        if tp.output:
            d = dtype(tp.dtype)
            t = sim.tensors[tp.name]
            if t.dtype == d.np:  # stored in its own type (tensor_storage): the values are the output
                outs[tp.name] = t
            elif d.kind == "float" and d.np_name in ("float16", "float32", "float64") and d.bits == d.reg_bits:
                with np.errstate(over="ignore", invalid="ignore"):  # the encode/decode round trip is this cast
                    outs[tp.name] = t.astype(d.np)
            else:
                outs[tp.name] = decode(encode(t, tp.dtype), tp.dtype).astype(d.np)
    regs = RegisterMap(sim.regs, sim.nwg, sim.W)
    # the per-byte LDS passes of check are what this simulation just did on every access (report.races,
    # report.uninit: tilesim/wave/undefined.py), so they are not walked a second time here
    errors = check_errors(prog, lds_state=False) if verify else []
    seen = ([f"{sim.rep.race_count} LDS race(s) (accesses of a byte by two waves with no barrier between)"] if sim.rep.race_count else []) + (
        [f"{sim.rep.uninit_count} LDS read(s) of bytes no store wrote"] if sim.rep.uninit_count else [])
    if verify and (errors or seen):  # stacklevel 2: the warning names the caller's line
        warnings.warn(f"{prog.name} on {prog.target}: " + "; ".join(
            ([f"check found {len(errors)} error(s)"] if errors else []) + [f"the simulation saw {x}" for x in seen])
            + f", so these outputs are what the hardware computes, not what the program says: "
            f"{(errors or sim.rep.races or sim.rep.uninit or [''])[0]}"[:600], CheckWarning, stacklevel=2)
    return SimResult(prog, outs, sim.rep, regs, dict(sim.vals), sim.trace, ProvenanceMap(sim.prov),
                     WriteCounts(sim.writes, sim.prov), errors, bool(verify))
