"""Layout audit of compiled kernels: which element each matrix-instruction operand slot really holds.

The kernel runs in the emulator twice on *coded* inputs — every input element carries its own
index (as raw bits for 16-bit buffers, as an exact integer value for f32/f64 buffers, so the code
survives a conversion to f16 up to 2048) — with a hook at every WMMA/MFMA:

1. **Operands.** Each A/B/C slot the instruction reads (placement from the catalog row's layout)
   is decoded back to the buffer element it came from. Per instruction and wave, the most common
   (buffer, orientation, offset) is the tile the code meant to load; a slot that disagrees is a
   finding: "v_wmma at line 212, wave 0, lane 17, A v[3] bits 0-15 holds A[1][11]; the instruction
   reads A[1][3] there". Replicated lanes (RDNA3 16-31) are checked copy by copy. When A and B are
   permuted along k the same way the product is still right — reported as a shared k order.
2. **Stores.** The instruction's results are replaced by codes naming (call, row, column); after
   the run each output element says which D element landed there, and elements stored away from
   their tile's position are findings naming the lane and VGPR that held them.

Limits (said in the report, never guessed): 8-bit buffers carry too few codes and are not traced;
values the kernel computes on (scales, sums) before the instruction are "untraced" slots;
multi-block MFMA operands are not audited.

Fail closed: a kernel that runs no matrix instruction, a call whose A or B operand has no slot that
could be traced (8-bit operands, values computed in the kernel), a multi-block, sparse or scaled call,
and results that reach no traceable output (a bf16 output, an epilogue computing on D) leave the
audit *undecided* (``AuditReport.undecided`` names each); the report is then not ``ok`` and the
command line exits 3, never 0 — "no findings" would only mean "nothing was looked at".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from tilesim.codegen.hip import emit_hip
from tilesim.hw.offline import compile_hip
from tilesim.isa.api import emulate
from tilesim.isa.asm import IsaError
from tilesim.matrix.dtypes import DTYPES, dtype

__all__ = ["Finding", "AuditReport", "audit", "audit_program"]

_RAW16_LIMIT = {"float16": 0x7C00, "bfloat16": 0x7F80, "int16": 0x8000, "uint16": 0x10000}


@dataclass(frozen=True)
class Finding:
    kind: str  # "operand" | "store"
    line: int
    mnemonic: str
    wave: int
    lane: int
    operand: str  # A | B | C | D
    vgpr: int
    bits: tuple[int, int]
    holds: str  # e.g. "A[1][11]"
    expected: str  # e.g. "A[1][3]"
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class AuditReport:
    findings: tuple[Finding, ...]
    matrix_calls: int
    checked: int  # operand slots and stored elements traced
    untraced: int
    notes: tuple[str, ...] = ()
    counts: dict = field(default_factory=dict)  # findings per (kind, operand)
    undecided: tuple[str, ...] = ()  # what the audit could not look at (see the module docstring)
    # what `tilesim emulate` fails on, seen in the audit's own emulation: LDS races, registers used while
    # their load may be in flight, replicated copies that differ. The hardware may read other data than the
    # traced codes there (the emulator's loads land at once), so the trace proves nothing: exit 1
    hazards: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """No finding, no hazard *and* every matrix instruction's A and B were traced (the command line's exit 0)."""
        return not self.findings and not self.undecided and not self.hazards

    def __bool__(self) -> bool:  # `assert audit(...)`: false with a finding or undecided (was always true)
        return self.ok

    @property
    def exit_status(self) -> int:
        """1: a layout finding or a hazard; 3: nothing contradicts the layout but the audit could not trace it;
        else 0."""
        return 1 if self.findings or self.hazards else 3 if self.undecided else 0

    def __str__(self) -> str:
        head = (f"layout audit: {self.matrix_calls} matrix-instruction calls, {self.checked} slots/elements traced, "
                f"{self.untraced} untraced, {sum(self.counts.values())} finding(s)")
        if self.hazards:
            head += f" — FAILED: {len(self.hazards)} race(s)/hazard(s) in the emulation (the hardware may read other data)"
        elif self.undecided and not self.findings:
            head += " — UNDECIDED: not all of the layout could be audited"
        return "\n".join([head, *(f"  {f}" for f in self.findings[:40]), *(f"  {h}" for h in self.hazards[:10]),
                          *(f"  undecided: {u}" for u in self.undecided), *(f"  note: {n}" for n in self.notes)])


@dataclass(frozen=True)
class _Code:
    name: str
    base: int
    shape: tuple[int, ...]
    how: str  # raw16 | raw32 | value


def _code_buffers(args: list) -> tuple[list, list[_Code]]:
    out, codes, nxt = [], [], 0
    for a in args:
        if not isinstance(a, tuple):
            out.append(a)
            continue
        name, arr = a
        arr = np.asarray(arr)
        n = arr.size
        dt = arr.dtype
        if dt.itemsize == 2 and dt.name in _RAW16_LIMIT:
            if nxt + n > _RAW16_LIMIT[dt.name]:
                raise IsaError(f"buffer {name} ({n} elements) is too large to code in {dt.name} bits for the audit")
            bits = np.arange(nxt, nxt + n, dtype=np.uint16).reshape(arr.shape)
            out.append((name, bits.view(dt)))
            codes.append(_Code(name, nxt, arr.shape, "raw16"))
        elif dt in (np.float32, np.float64):
            if nxt + n > 2**24:
                raise IsaError(f"buffer {name} is too large to code for the audit")
            out.append((name, np.arange(nxt, nxt + n).astype(dt).reshape(arr.shape)))
            codes.append(_Code(name, nxt, arr.shape, "value"))
        elif dt in (np.int32, np.uint32):
            out.append((name, np.arange(nxt, nxt + n).astype(dt).reshape(arr.shape)))
            codes.append(_Code(name, nxt, arr.shape, "raw32"))
        else:  # 8-bit and other buffers: too few codes; left as given
            out.append((name, arr))
            continue
        nxt += n
    return out, codes


def _is_float(optype: str) -> bool:
    return optype in DTYPES and DTYPES[optype].kind == "float"


def _decode(fields: np.ndarray, width: int, optype: str, codes: list[_Code]) -> tuple[np.ndarray, np.ndarray]:
    """(buffer number or -1, flat index) per field."""
    buf = np.full(fields.shape, -1, np.int64)
    idx = np.zeros(fields.shape, np.int64)
    f = fields.astype(np.int64)
    if width == 16:
        val = fields.astype(np.uint16).view(np.float16).astype(np.float64) if optype == "f16" else None
        if optype == "bf16":
            val = (fields.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    elif width == 32:
        val = fields.astype(np.uint32).view(np.float32).astype(np.float64) if _is_float(optype) else \
            fields.astype(np.uint32).view(np.int32).astype(np.float64)
    else:
        return buf, idx
    for k, c in enumerate(codes):
        n = int(np.prod(c.shape))
        if c.how == ("raw16" if width == 16 else "raw32"):
            hit = (buf < 0) & (f >= c.base) & (f < c.base + n)
            buf[hit], idx[hit] = k, f[hit] - c.base
        if c.how == "value" and val is not None:
            ok = np.isfinite(val) & (val == np.round(val))
            iv = np.where(ok, val, -1).astype(np.int64)
            hit = (buf < 0) & ok & (iv >= c.base) & (iv < c.base + n)
            buf[hit], idx[hit] = k, iv[hit] - c.base
    return buf, idx


def _majority(keys: np.ndarray) -> tuple[int, ...] | None:
    if keys.size == 0:
        return None
    rows, counts = np.unique(keys, axis=0, return_counts=True)
    return tuple(int(x) for x in rows[np.argmax(counts)])


class _Auditor:
    def __init__(self, codes: list[_Code], store_pass: bool) -> None:
        self.codes, self.store_pass = codes, store_pass
        self.findings: list[Finding] = []
        self.counts: Counter = Counter()
        self.checked = self.untraced = self.calls = 0
        self.notes: list[str] = []
        self.undecided: list[str] = []
        self.instances: list[tuple[int, str, int, np.ndarray, int, int]] = []  # line, mnem, wave, D rec, m, n
        self.d_base = sum(int(np.prod(c.shape)) for c in codes)
        self.kmaps: dict[tuple[int, int, str], dict[int, int]] = {}

    def _name(self, k: int, i: int, j: int) -> str:
        return f"{self.codes[k].name}[{i}][{j}]"

    def __call__(self, ins, row, w, operands, d_rec):  # noqa: ANN001 - the emulator's hook signature
        self.calls += 1
        if row.blocks != 1:
            self.undecided.append(f"line {ins.line} {row.mnemonic}: multi-block operands are not audited")
            return None
        if self.store_pass:
            m, n = row.m, row.n
            out = np.empty((w.size, 1, m, n))
            for t, wave in enumerate(w):
                inst = len(self.instances)
                self.instances.append((ins.line, row.mnemonic, int(wave), d_rec, m, n))
                out[t, 0] = self.d_base + inst * m * n + np.arange(m * n).reshape(m, n)
            if self.d_base + len(self.instances) * m * n >= 2**24:
                raise IsaError("too many matrix-instruction calls to code their results for the store audit")
            return out
        for op, (rec, fields) in operands.items():
            optype = row.types["ABC".index(op)]
            width = int(rec[0, 6] - rec[0, 5] + 1)
            buf, idx = _decode(fields, width, optype, self.codes)
            r, c = rec[:, 1], rec[:, 2]
            if op in "AB" and not (buf >= 0).any():  # C may start as zeros in registers; A and B come from memory
                why = f"{width}-bit operands carry too few codes" if width < 16 else \
                    "its values are not the coded input elements (computed in the kernel, or not from a buffer)"
                self.undecided.append(f"line {ins.line} {row.mnemonic}: no {op} operand slot could be traced ({why})")
            for t, wave in enumerate(w):
                known = buf[t] >= 0
                self.untraced += int((~known).sum())
                self.checked += int(known.sum())
                if not known.any():
                    continue
                shape = [self.codes[b].shape for b in buf[t][known]]
                if any(len(s) != 2 for s in shape):
                    continue
                ii = np.array([np.unravel_index(x, s)[0] for x, s in zip(idx[t][known], shape)])
                jj = np.array([np.unravel_index(x, s)[1] for x, s in zip(idx[t][known], shape)])
                rk, ck, bk = r[known], c[known], buf[t][known]
                keys = np.concatenate([np.stack([bk, np.zeros_like(bk), ii - rk, jj - ck], 1),
                                       np.stack([bk, np.ones_like(bk), ii - ck, jj - rk], 1)])
                b0, orient, di, dj = _majority(keys)
                want_i = np.where(orient == 0, rk + di, ck + di)
                want_j = np.where(orient == 0, ck + dj, rk + dj)
                bad = (bk != b0) | (ii != want_i) | (jj != want_j)
                recs = rec[known]
                if op in "AB" and bad.any():  # record which k each hardware k slot holds (for a shared k order)
                    hw_k = ck if op == "A" else rk
                    held = (jj - dj if orient == 0 else ii - di) if op == "A" else (ii - di if orient == 0 else jj - dj)
                    self.kmaps[(ins.line, int(wave), op)] = {int(a): int(b) for a, b in zip(hw_k[bad], held[bad])}
                for q in np.flatnonzero(bad)[:8]:
                    lane, vg, lo, hi = (int(x) for x in recs[q, [4, 3, 5, 6]])
                    holds = self._name(int(bk[q]), int(ii[q]), int(jj[q]))
                    exp = self._name(b0, int(want_i[q]), int(want_j[q]))
                    self.findings.append(Finding(
                        "operand", ins.line, row.mnemonic, int(wave), lane, op, vg, (lo, hi), holds, exp,
                        f"{row.mnemonic} at line {ins.line}, wave {int(wave)}, lane {lane}, {op} VGPR {vg} bits "
                        f"{lo}-{hi} holds {holds}; the instruction reads {op}[{int(rk[q])}][{int(ck[q])}] there, "
                        f"which is {exp} of the tile the other slots hold"))
                self.counts[("operand", op)] += int(bad.sum())
        return None

    def unaudited(self, ins, row) -> None:  # noqa: ANN001 - called by the emulator for sparse/scaled instructions
        self.undecided.append(f"line {ins.line} {row.mnemonic}: sparse and scaled matrix instructions are not audited")

    def finish_stores(self, outputs: dict[str, np.ndarray]) -> None:
        for name, arr in outputs.items():
            if arr.ndim != 2 or arr.dtype not in (np.float32, np.int32):
                continue
            vals = arr.astype(np.float64)
            ok = np.isfinite(vals) & (vals == np.round(vals)) & (vals >= self.d_base)
            code = np.where(ok, vals - self.d_base, -1).astype(np.int64)
            by_inst: dict[int, list[tuple[int, int, int, int]]] = {}
            for (i, j), cv in np.ndenumerate(code):
                if cv < 0:
                    continue
                line, mnem, wave, rec, m, n = self.instances[cv // (self.instances[0][4] * self.instances[0][5])]
                inst = cv // (m * n)
                rr, cc = divmod(int(cv % (m * n)), n)
                by_inst.setdefault(int(inst), []).append((i, j, rr, cc))
            for inst, items in by_inst.items():
                line, mnem, wave, rec, m, n = self.instances[inst]
                a = np.array(items)
                self.checked += len(items)
                stored = np.zeros((m, n), bool)
                stored[a[:, 2], a[:, 3]] = True
                lost = np.argwhere(~stored)
                self.counts[("store", "D")] += len(lost)
                for rr, cc in lost[:8]:  # this call's tile reached memory, but not these elements
                    where = rec[(rec[:, 1] == rr) & (rec[:, 2] == cc)][0]
                    lane, vg = int(where[4]), int(where[3])
                    self.findings.append(Finding(
                        "store", line, mnem, wave, lane, "D", vg, (int(where[5]), int(where[6])), "nowhere",
                        f"{name}[{rr}+][{cc}+]", f"{mnem} at line {line}, wave {wave}: D[{rr}][{cc}] (lane {lane}, "
                        f"VGPR {vg}) never reached {name} — stored over by another element or not stored"))
                di, dj = _majority(np.stack([a[:, 0] - a[:, 2], a[:, 1] - a[:, 3]], 1))
                bad = (a[:, 0] - a[:, 2] != di) | (a[:, 1] - a[:, 3] != dj)
                self.counts[("store", "D")] += int(bad.sum())
                for i, j, rr, cc in a[bad][:8]:
                    where = rec[(rec[:, 1] == rr) & (rec[:, 2] == cc)][0]
                    lane, vg = int(where[4]), int(where[3])
                    self.findings.append(Finding(
                        "store", line, mnem, wave, lane, "D", vg, (int(where[5]), int(where[6])),
                        f"{name}[{i}][{j}]", f"{name}[{rr + di}][{cc + dj}]",
                        f"{mnem} at line {line}, wave {wave}: D[{rr}][{cc}] (lane {lane}, VGPR {vg}) was stored to "
                        f"{name}[{i}][{j}]; the rest of its tile went to {name}[{di}:, {dj}:], so it belongs at "
                        f"{name}[{rr + di}][{cc + dj}]"))

    def shared_k(self) -> None:
        for (line, wave, op), km in self.kmaps.items():
            if op == "A" and self.kmaps.get((line, wave, "B")) == km:
                self.notes.append(f"line {line}, wave {wave}: A and B hold the same k permutation {km} — the product "
                                  "is right, but the registers are not the instruction's layout")
                break


def audit(code: object, target: str | None = None, kernel: str | None = None, *, grid: object = 1,
          block: object = 1, args: list | None = None) -> AuditReport:
    """Audit one kernel (arguments as for :func:`tilesim.isa.emulate`; buffer values are replaced by
    codes, so only their dtypes and shapes matter)."""
    coded, codes = _code_buffers(list(args or []))
    first = _Auditor(codes, store_pass=False)
    emulate(code, target, kernel, grid=grid, block=block, args=coded, mma_hook=first)
    first.shared_k()
    second = _Auditor(codes, store_pass=True)
    res = emulate(code, target, kernel, grid=grid, block=block, args=coded, mma_hook=second)
    if second.instances:
        second.finish_stores(res.buffers)
    findings = tuple(first.findings + second.findings)
    counts = {f"{k}:{o}": v for (k, o), v in (first.counts + second.counts).items() if v}
    notes = list(dict.fromkeys(first.notes + second.notes))
    undecided = list(dict.fromkeys(first.undecided))
    if second.instances and not second.checked:  # e.g. a bf16 output: 24-bit result codes do not survive it
        undecided.append("no matrix-instruction result reached an output the audit can trace (2-D f32 or i32 "
                         "buffers; results converted or computed on lose their codes): where D is stored was not "
                         "audited")
    if not first.calls and not undecided:
        undecided.append(f"kernel {kernel or '(the only one)'} ran no matrix instruction: nothing was audited")
    untraced_bufs = [a[0] for a in (args or []) if isinstance(a, tuple) and a[0] not in {c.name for c in codes}]
    if untraced_bufs:
        notes.append(f"not traced (8-bit or other element types): {', '.join(untraced_bufs)}")
    hazards = ([f"race: {r}" for r in res.races] + [f"hazard: {h}" for h in res.hazards]
               + [f"replicated copies differ: {n}" for n in res.notes]
               + [f"unwritten LDS read: {u}" for u in res.unwritten])
    return AuditReport(findings, first.calls, first.checked + second.checked, first.untraced, tuple(notes), counts,
                       tuple(undecided), tuple(hazards))


def audit_program(prog: object) -> AuditReport:
    """Audit a tile program's compiled code (emitted, compiled through the cache)."""
    em = emit_hip(prog)  # type: ignore[arg-type]
    p = em.program
    comp = compile_hip(em.source, p.target, wave_size=p.wave_size)
    args = []
    for name in em.tensors:
        tp = p.tensor(name)
        d = dtype(tp.dtype)
        npd = d.np if d.bits == d.reg_bits and d.bits >= 16 else np.dtype(f"uint{d.reg_bits}")
        args.append((name, np.zeros(tp.shape, npd)))
    return audit(comp, p.target, em.kernel, grid=em.grid, block=em.block, args=args)
