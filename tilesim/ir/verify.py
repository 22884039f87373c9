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
from tilesim.targets import get_target, occupancy
from tilesim.ir.core import Op, Program, Value
from tilesim.layouts.compare import compare_layouts
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
