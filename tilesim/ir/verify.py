"""The verifier: ``check(prog)`` finds what would make the hardware compute something else.

* every ``mma`` operand's declared layout against the layout the instruction reads on this
  target and wave size — the first differing element with its lane/VGPR/bits on both sides, and
  the pattern (missing RDNA3 replicas, rows permuted with both row formulas, only some lanes…);
  a K permutation shared by A and B is reported as "equivalent, but not the hardware layout";
* element types against the instruction's operand types;
* instructions the target lacks, and wave sizes;
* LDS bytes and a VGPR estimate against the target's budget, with occupancy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tilesim.errors import TilesimError, VerifyError
from tilesim.hw.targets import get_target, occupancy
from tilesim.ir.core import Op, Program, Value
from tilesim.layouts.expr import expressions
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import dtype

__all__ = ["check", "CheckReport", "Finding", "compare_layouts"]


@dataclass(frozen=True)
class Finding:
    severity: str  # error | warning
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.where}: {self.message}"


@dataclass
class CheckReport:
    program: Program
    findings: list[Finding] = field(default_factory=list)
    vgprs: int = 0
    lds_bytes: int = 0
    occupancy: int | None = None

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def raise_if_errors(self) -> None:
        if self.errors:
            raise VerifyError("; ".join(str(e) for e in self.errors[:3]))

    def __str__(self) -> str:
        p = self.program
        head = (f"check {p.name} on {p.target} (wave{p.wave_size}): "
                f"{'OK' if self.ok else f'{len(self.errors)} error(s)'}; VGPRs ~{self.vgprs}, LDS {self.lds_bytes} B"
                + (f", occupancy {self.occupancy} waves/SIMD" if self.occupancy is not None else ""))
        return "\n".join([head] + [f"  {f}" for f in self.findings])


def _where_text(loc: tuple[int, ...] | None, bits: int) -> str:
    if loc is None:
        return "nowhere"
    lane, vgpr, lo = loc
    return f"lane {lane}, VGPR {vgpr}" + (f", bits {lo}-{lo + bits - 1}" if bits < 32 else "")


def compare_layouts(declared: Layout, hardware: Layout, operand: str, *,
                    verbs: tuple[str, str] = ("is declared at", "the instruction reads it from")) -> list[str]:
    """Human-readable differences between a declared fragment layout and the hardware's; [] if equal.

    ``operand`` is A, B, C or D (index names i, k, j) or any other label (row, col)."""
    dec = declared.with_elem_bits(hardware.elem_bits)
    if dec == hardware:
        return []
    bits = hardware.elem_bits or 32
    d_rec, h_rec = dec.location_array(), hardware.location_array()
    d_set = {tuple(r[:3]): set() for r in h_rec}
    h_set: dict[tuple, set] = {}
    for r in d_rec:
        d_set.setdefault(tuple(r[:3]), set()).add((int(r[4]), int(r[3]), int(r[5])))
    for r in h_rec:
        h_set.setdefault(tuple(r[:3]), set()).add((int(r[4]), int(r[3]), int(r[5])))
    names = {"A": ("i", "k"), "B": ("k", "j"), "C": ("i", "j"), "D": ("i", "j")}.get(operand, ("row", "col"))
    diffs = [e for e in sorted(set(h_set) | set(d_set)) if d_set.get(e, set()) != h_set.get(e, set())]
    if not diffs:  # same element positions, different shape of the index space
        return [(f"the declared layout {dict(dec.in_dims)} -> {dict(dec.out_dims)} is not the instruction's "
                 f"{dict(hardware.in_dims)} -> {dict(hardware.out_dims)}")]
    out = []
    e = diffs[0]
    dl, hl = sorted(d_set.get(e, set())), sorted(h_set.get(e, set()))
    out.append(f"{operand}[{e[1]}][{e[2]}] ({names[0]}={e[1]}, {names[1]}={e[2]}) {verbs[0]} "
               f"{'; '.join(_where_text(x, bits) for x in dl) or 'nowhere'} but {verbs[1]} "
               f"{'; '.join(_where_text(x, bits) for x in hl) or 'nowhere (the instruction has no such element)'}")
    out.append(f"{len(diffs)} of {len(h_set)} elements differ")
    if all(d_set.get(x, set()) < h_set.get(x, set()) for x in diffs):
        missing = sorted({lane for x in diffs for (lane, _, _) in h_set.get(x, set()) - d_set.get(x, set())})
        out.append(f"pattern: replicas missing in lanes {_ranges(missing)} — the instruction needs every element "
                   "in each of its copies (RDNA3 keeps A/B in lanes i and i+16)")
        return out
    lanes = sorted({lane for x in diffs for (lane, _, _) in h_set.get(x, set()) | d_set.get(x, set())})
    # which logical element each hardware position holds, declared vs hardware
    if dec.is_function() and hardware.is_function() and dec.in_dims == hardware.in_dims:
        lane, slot = np.meshgrid(*(np.arange(sz) for _, sz in dec.in_dims), indexing="ij")
        dv, hv = dec.apply(lane=lane, slot=slot), hardware.apply(lane=lane, slot=slot)
        de, he = expressions(dec), expressions(hardware)
        for dim, label in (("row", names[0]), ("col", names[1])):
            if np.array_equal(dv[dim], hv[dim]):
                continue
            if de[dim].table is None and he[dim].table is None:
                out.append(f"pattern: {label} differs — hardware {label} = {he[dim].text}, program {label} = {de[dim].text}")
            else:
                where = sorted({int(x) for x in lane[dv[dim] != hv[dim]]})
                out.append(f"pattern: {label} differs — hardware {label} = {he[dim].text}, program differs on "
                           f"lanes {_ranges(where)}")
    out.append(f"lanes involved: {_ranges(lanes)}")
    return out


def _ranges(xs: list[int]) -> str:
    if not xs:
        return "none"
    out, start, prev = [], xs[0], xs[0]
    for x in xs[1:] + [None]:  # type: ignore[list-item]
        if x is not None and x == prev + 1:
            prev = x
            continue
        out.append(f"{start}-{prev}" if prev != start else f"{start}")
        if x is not None:
            start = prev = x
    return ", ".join(out)


def _k_perm(decl: Layout, hw: Layout, k_dim: str) -> dict[int, int] | None:
    """If ``decl`` equals ``hw`` up to relabelling k, the map k_declared -> k_hardware; else None."""
    if not (decl.is_function() and hw.is_function()) or decl.in_dims != hw.in_dims:
        return None
    grid = {n: np.arange(s) for n, s in decl.in_dims}
    lane, slot = np.meshgrid(grid["lane"], grid["slot"], indexing="ij")
    d, h = decl.apply(lane=lane, slot=slot), hw.apply(lane=lane, slot=slot)
    other = "col" if k_dim == "row" else "row"
    held = d[k_dim] >= 0
    if not np.array_equal(d[other][held], h[other][held]) or not np.array_equal(held, h[k_dim] >= 0):
        return None
    pairs = {}
    for a, b in zip(d[k_dim][held].tolist(), h[k_dim][held].tolist()):
        if pairs.setdefault(a, b) != b:
            return None
    return pairs


def check(prog: Program) -> CheckReport:
    """Verify a program; returns a :class:`CheckReport` (``.ok``, ``.findings``, ``.raise_if_errors()``)."""
    if not isinstance(prog, Program):
        raise TilesimError(f"check() takes a specialised Program, got {type(prog).__name__}")
    rep = CheckReport(prog)
    t = get_target(prog.target)
    if prog.wave_size not in t.wave_sizes:
        rep.findings.append(Finding("error", "program", f"{t.name} has no wave{prog.wave_size}; wave sizes {t.wave_sizes}"))
    lds = 0
    for i, op in enumerate(prog.walk()):
        where = f"op {i} ({op.kind})"
        if op.kind == "lds_alloc":
            lds += -(-op.out.lds.bytes // 16) * 16
        if op.kind == "mma":
            _check_mma(rep, op, prog, where)
        if op.kind == "elementwise":
            _check_elementwise(rep, op, where)
    rep.lds_bytes = lds
    if lds > t.lds_bytes:
        rep.findings.append(Finding("error", "program", f"LDS use {lds} bytes exceeds {t.name}'s {t.lds_bytes} bytes"))
    from tilesim.wave.sim import _vgpr_estimate

    rep.vgprs = _vgpr_estimate(prog)
    if rep.vgprs > t.max_vgprs_per_wave:
        rep.findings.append(Finding("error", "program", f"~{rep.vgprs} VGPRs per wave exceeds {t.name}'s "
                                                        f"{t.max_vgprs_per_wave}"))
    else:
        rep.occupancy = occupancy(t, rep.vgprs, prog.wave_size)
    return rep


def _check_elementwise(rep: CheckReport, op: Op, where: str) -> None:
    # The DSL refuses these when tracing; a program built or loaded another way (JSON) may not.
    # Elementwise ops pair registers lane by lane and slot by slot, so both fragments must agree.
    x, y = op.args[0], op.args[1] if len(op.args) > 1 else None
    if not (isinstance(x, Value) and isinstance(y, Value) and x.kind == "frag" and y.kind == "frag"):
        return
    what = f"{where} {op.attr('op')} of %{x.id} and %{y.id}"
    if x.dtype != y.dtype:
        rep.findings.append(Finding("error", what, f"{x.dtype} and {y.dtype} fragments; cast one first"))
        return
    if x.layout is None or y.layout is None or x.layout.with_elem_bits(None) == y.layout.with_elem_bits(None):
        return
    try:
        diff = compare_layouts(y.layout, x.layout.with_elem_bits(y.layout.elem_bits), "tile",
                               verbs=(f"is in %{y.id} at", f"in %{x.id} at"))
    except TilesimError:  # layouts without lane/slot -> row/col: say so without the element
        diff = [f"%{y.id} has layout {y.layout!r}, %{x.id} has {x.layout!r}"]
    rep.findings.append(Finding("error", what, "the two fragments have different layouts (convert one first): "
                                + "; ".join(diff)))


def _check_mma(rep: CheckReport, op: Op, prog: Program, where: str) -> None:
    try:
        row = lookup(op.attr("instr"), prog.target)
    except TilesimError as e:
        rep.findings.append(Finding("error", where, str(e)))
        return
    if prog.wave_size not in row.wave_sizes:
        rep.findings.append(Finding("error", where, f"{row.mnemonic} needs wave{'/'.join(map(str, row.wave_sizes))}; "
                                                    f"the program runs wave{prog.wave_size}"))
        return
    mods = {k: v for k, v in (op.attr("modifiers") or ()) if k in ("cbsz", "abid", "blgp", "opsel")}
    perms = {}
    for name, v in zip("ABC", op.args):
        if not isinstance(v, Value) or v.kind != "frag" or v.layout is None:
            rep.findings.append(Finding("error", f"{where} operand {name}", f"not a fragment: {v!r}"[:200]))
            continue
        want_t = dtype(row.types["ABC".index(name)])
        if v.dtype and dtype(v.dtype).reg_bits != want_t.reg_bits:
            rep.findings.append(Finding("error", f"{where} operand {name}",
                                        f"{v.dtype} fragment but {row.mnemonic} reads {want_t.name}"))
            continue
        hw = row.layout(name, wave_size=prog.wave_size, **mods)
        diff = compare_layouts(v.layout, hw, name)
        if not diff:
            continue
        if name in "AB":
            p = _k_perm(v.layout.with_elem_bits(hw.elem_bits), hw, "col" if name == "A" else "row")
            if p is not None:
                perms[name] = (p, diff[0])
                continue
        rep.findings.append(Finding("error", f"{where} {row.mnemonic} operand {name}", "; ".join(diff)))
    if perms:
        if set(perms) == {"A", "B"} and perms["A"][0] == perms["B"][0]:
            rep.findings.append(Finding("warning", f"{where} {row.mnemonic}", "A and B use the same k order, which is "
                                        "not the hardware's: the result is equivalent, but not the hardware layout"))
        else:
            for name, (p, first) in perms.items():
                moved = sorted(k for k, v in p.items() if k != v)
                rep.findings.append(Finding("error", f"{where} {row.mnemonic} operand {name}",
                                            f"k permuted on {name} only (k {moved[:8]} moved): the product changes; "
                                            f"{first}"))
