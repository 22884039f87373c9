"""The verifier: ``check(prog)`` finds what would make the hardware compute something else.

* every ``mma`` operand's declared layout against the layout the instruction reads on this
  target and wave size — the first differing element with its lane/VGPR/bits on both sides, and
  the pattern (missing RDNA3 replicas, rows permuted with both row formulas, only some lanes…);
  a K permutation shared by A and B is reported as "equivalent, but not the hardware layout";
* element types against the instruction's operand types;
* instructions the target lacks, and wave sizes;
* LDS bytes and a VGPR estimate against the target's budget, with occupancy;
* numerics traps: signed tensors read as unsigned (and the reverse) by the NEG signedness bits of
  iu8/iu4 rows, fp8 of one flavour (OCP/FNUZ) fed to an instruction of the other, loads and stores
  whose fragment type is not the tensor's (the device moves the bits, it does not convert);
* what the simulator and the code generator cannot represent (:func:`structure`): fragment
  layouts with several elements in one register slot, ``convert``
  between tiles of different shapes, fragments for another wave size, values used out of scope;
* memory (:mod:`tilesim.ir.accesses`): every output element written exactly once, accesses out of
  bounds, LDS races (a missing barrier), LDS reads of bytes no store wrote, loads of an output
  element another unordered (workgroup, wave) stores (:mod:`tilesim.ir.orders`);
* a program with no output, a workgroup over the target's work-item limit, barriers that only some
  waves of a workgroup reach (:mod:`tilesim.ir.accesses`), and shuffles that give the copies of a
  replicated element (RDNA3 A/B lanes i and i+16) different elements.

``check`` OK means ``simulate`` runs the program without error and the result is what the device
computes; ``simulate`` itself refuses the :func:`structure` errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilesim.budget import check_program
from tilesim.errors import TargetError, TilesimError, VerifyError
from tilesim.targets import get_target, occupancy
from tilesim.ir.accesses import analyse
from tilesim.ir.analysis import lds_estimate, vgpr_estimate
from tilesim.ir.core import Op, Program, Value
from tilesim.ir.lds_tr import op_plan
from tilesim.ir.ops import MMA_KINDS, TENSOR_KINDS, PathStatus, program_paths
from tilesim.layouts.compare import compare_layouts
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import FP8_FLAVOURS, dtype, fp8_clash, fp8_flavour
from tilesim.matrix.instruction import LAYOUT_MODIFIERS, SCALE_FORMAT_MODIFIERS
from tilesim.matrix.numerics import format_types, signed_types
from tilesim.matrix.scale import SCALE_DTYPES
from tilesim.matrix.sparse import meta_layout, values_layout

__all__ = ["check", "check_errors", "structure", "CheckReport", "Finding", "compare_layouts"]


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
    # simulate / emit / compile on the program's target, from the op table (tilesim/ir/ops.py)
    paths: dict[str, PathStatus] = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def __bool__(self) -> bool:  # `assert ts.check(prog)`: false with an error (a dataclass is always true)
        return self.ok

    def raise_if_errors(self) -> None:
        if self.errors:
            raise VerifyError("; ".join(str(e) for e in self.errors[:3]))

    def __str__(self) -> str:
        p = self.program
        head = (f"check {p.name} on {p.target} (wave{p.wave_size}): "
                f"{'OK' if self.ok else f'{len(self.errors)} error(s)'}; VGPRs ~{self.vgprs}, LDS {self.lds_bytes} B"
                + (f", occupancy {self.occupancy} waves/SIMD" if self.occupancy is not None else ""))
        paths = ["  paths: " + "; ".join(f"{k} {v}" for k, v in self.paths.items())] if self.paths else []
        return "\n".join([head] + paths + [f"  {f}" for f in self.findings])


def _k_perm(decl: Layout, hw: Layout, k_dim: str) -> dict[int, int] | None:
    """If ``decl`` equals ``hw`` up to relabelling k, the map k_declared -> k_hardware; else None."""
    if not (decl.is_function() and hw.is_function()) or decl.in_dims != hw.in_dims:
        return None
    grid = {n: np.arange(s) for n, s in decl.in_dims}
    lane, slot = np.meshgrid(grid["lane"], grid["slot"], indexing="ij")
    d, h = decl.apply(lane=lane, slot=slot), hw.apply(lane=lane, slot=slot)
    held = d[k_dim] >= 0
    if not np.array_equal(held, h[k_dim] >= 0):
        return None
    # every other coordinate must agree — the other matrix axis and, for multi-block MFMA, the block
    # (A and B with the same blocks rotated are not equivalent: block b's product lands in C's block b)
    if any(not np.array_equal(d[o][held], h[o][held]) for o in decl.out_names if o != k_dim):
        return None
    pairs = {}
    for a, b in zip(d[k_dim][held].tolist(), h[k_dim][held].tolist()):
        if pairs.setdefault(a, b) != b:
            return None
    return pairs


def check(prog: Program, *, lds_state: bool = True) -> CheckReport:
    """Verify a program; returns a :class:`CheckReport` (``.ok``, ``.findings``, ``.raise_if_errors()``).

    ``lds_state=False``: for callers that simulate the program next and fail on the simulation's own
    LDS findings (see :func:`tilesim.ir.accesses.analyse`); ``tilesim check`` runs everything."""
    if not isinstance(prog, Program):
        raise TilesimError(f"check() takes a specialised Program, got {type(prog).__name__}")
    check_program(prog)  # before anything sized by the program is allocated (tilesim.budget)
    rep = CheckReport(prog)
    t = get_target(prog.target)
    rep.findings += structure(prog)
    sources = _sources(prog)
    for i, op in enumerate(prog.walk()):
        where = f"op {i} ({op.kind})"
        if op.kind in MMA_KINDS:
            _check_mma(rep, op, prog, where, sources)
        if op.kind == "elementwise":
            _check_elementwise(rep, op, where)
        if op.kind in ("load", "store"):
            _check_global_type(rep, op, prog, where)
        if op.kind == "shuffle":
            _check_shuffle(rep, op, where)
    rep.findings += _discarded_products(prog)
    used = {op.attr("tensor") for op in prog.walk() if op.kind in TENSOR_KINDS}
    for tp in prog.tensors:  # a parameter nothing reads or writes: if it was meant as an output, it stays unwritten
        if tp.name not in used:
            rep.findings.append(Finding("error", "program", f"tensor {tp.name} is a parameter that no op loads or "
                                        f"stores: if it is an output, none of its elements is ever written (the device "
                                        f"leaves whatever the buffer held); store to it, or drop the parameter"))
    if not any(t.output for t in prog.tensors):
        rep.findings.append(Finding("error", "program", "no op stores to a tensor: the program has no output, so "
                                                        "nothing it computes can be observed or checked"))
    if not any(f.severity == "error" for f in rep.findings):  # the analysis needs well-formed IR
        notes, _ = analyse(prog, lds_state=lds_state)
        rep.findings += [Finding(n.severity, n.where, n.message) for n in notes]
    size = prog.waves_per_workgroup * prog.wave_size
    if size > t.max_workgroup_size:
        rep.findings.append(Finding("error", "program", f"{prog.waves_per_workgroup} waves of {prog.wave_size} lanes "
                                    f"= {size} work-items per workgroup; {t.name} launches at most "
                                    f"{t.max_workgroup_size} (the launch fails)"))
    lds = lds_estimate(prog)
    rep.lds_bytes = lds
    if lds > t.lds_bytes:
        rep.findings.append(Finding("error", "program", f"LDS use {lds} bytes exceeds {t.name}'s {t.lds_bytes} bytes"))
    rep.vgprs = vgpr_estimate(prog)
    if rep.vgprs > t.max_vgprs_per_wave:
        rep.findings.append(Finding("error", "program", f"~{rep.vgprs} VGPRs per wave exceeds {t.name}'s "
                                                        f"{t.max_vgprs_per_wave}"))
    elif prog.wave_size in t.wave_sizes:
        try:
            rep.occupancy = occupancy(t, rep.vgprs, prog.wave_size)
        except TargetError as e:  # a budget the target's table cannot place: a finding, not a crash
            rep.findings.append(Finding("error", "program", str(e)))
    rep.paths = program_paths(prog)
    return rep


def check_errors(prog: Program, *, lds_state: bool = True) -> list[str]:
    """``check(prog)``'s errors as text; a check that cannot finish is a failed check, not a pass."""
    try:
        return [str(f) for f in check(prog, lds_state=lds_state).errors]
    except TilesimError as e:
        return [f"check stopped: {type(e).__name__}: {e}"]


def _discarded_products(prog: Program) -> list[Finding]:
    """A fragment no op reads: a matrix instruction's (``ts.mma(...)`` without ``acc =``, or into a
    name the loop does not carry: its products are thrown away, and check passed such a GEMM,
    which stores its zero accumulator) or any other op's (an epilogue computed and the raw
    accumulator stored). No example program has one."""
    read: set[int] = set()

    def note(a: Any) -> None:
        if isinstance(a, Value):
            read.add(a.id)
        elif isinstance(a, (tuple, list)):
            for x in a:
                note(x)

    ops = prog.walk()
    for op in ops:
        note(op.args)
        if op.kind == "loop":
            note(op.attr("carried") or ())
    out = []
    for i, op in enumerate(ops):
        if op.out is None or op.out.kind != "frag" or op.out.id in read:
            continue
        if op.kind in MMA_KINDS:
            why = (f"the result {op.out.short()} of {op.attr('instr')} is never read: its products are discarded "
                   "(write acc = ts.mma(op, a, b, acc), and carry acc through the loop)")
        else:  # e.g. an epilogue computed and the raw accumulator stored
            why = (f"the fragment {op.out.short()} is never read: nothing stored depends on this {op.kind} "
                   "(store it, carry it through the loop, or drop it)")
        out.append(Finding("error", f"op {i} ({op.kind})", why))
    return out


def structure(prog: Program) -> list[Finding]:
    """Errors that make a program impossible to simulate or emit as written (cheap, no scalar
    evaluation): wave size, fragment layouts, ``convert`` shapes,
    values read before their definition or outside the block that defines them."""
    out: list[Finding] = []
    t = get_target(prog.target)
    if prog.wave_size not in t.wave_sizes:
        out.append(Finding("error", "program", f"{t.name} runs wave{'/'.join(map(str, t.wave_sizes))}; the program is "
                                               f"wave{prog.wave_size} (re-specialise it for {t.name}, or use "
                                               "tilesim.port)"))
    seen: set[int] = set()

    def frag(v: Value, where: str) -> None:
        if v.id in seen or v.kind != "frag" or v.layout is None:
            return
        seen.add(v.id)
        lay = v.layout
        lanes = dict(lay.in_dims).get("lane")
        if lanes != prog.wave_size:
            out.append(Finding("error", where, f"fragment {v.short()} has {lanes} lanes; the program runs "
                                               f"wave{prog.wave_size}"))
        if not lay.is_function():
            hw, _ = lay.pairs()
            keys, counts = np.unique(hw, axis=0, return_counts=True)
            at = dict(zip(lay.in_names, (int(x) for x in keys[counts > 1][0])))
            lane, slot = at.get("lane", 0), at.get("slot", 0)
            out.append(Finding("error", where, f"fragment {v.short()}: one register slot holds several elements "
                                               f"(e.g. lane {lane}, slot {slot} holds {len(lay.elements_at(lane=lane, slot=slot))}); a "
                                               "register holds one value: use a layout with one element per slot"))

    def visit(block: Any, scope: set[int]) -> None:
        for op in block.ops:
            where = f"op {index[id(op)]} ({op.kind})"
            carried = op.attr("carried") or () if op.kind == "loop" else ()
            for a in (*op.args, *[i for i, _ in carried]):
                if isinstance(a, Value) and a.kind != "none" and a.id not in scope:
                    out.append(Finding("error", where, f"reads {a.short()}, which is not defined before this op in "
                                                       "its block or an enclosing one"))
            for v in (op.out, *[a for a in op.args if isinstance(a, Value)]):
                if v is not None:
                    frag(v, where)
            if op.kind == "convert" and op.out is not None and isinstance(op.args[0], Value) \
                    and op.args[0].layout is not None and op.out.layout is not None:
                a, b = (_tile(x.layout) for x in (op.args[0], op.out))
                if a != b:
                    out.append(Finding("error", where, f"convert from a {_shape(a)} tile to a {_shape(b)} tile: convert "
                                                       "moves the same tile between layouts; the shapes must agree"))
            if op.kind == "lds_load_tr":
                try:
                    op_plan(op, prog.target)  # tilesim/ir/lds_tr.py
                except VerifyError as e:
                    out.append(Finding("error", where, str(e)))
            if op.kind == "loop":
                inner = set(scope) | {op.out.id} | {i.id for i, _ in carried}
                visit(op.attr("body"), inner)
                missing = [n for _, n in carried if n.id not in _defs(op.attr("body"))]
                if missing:
                    out.append(Finding("error", where, f"loop-carried {missing[0].short()} is not defined in the loop "
                                                       "body"))
                # after the loop: its counter, and the final value of each carried value (the body's
                # other values are the last trip's, and exist only when it ran: see accesses)
                if _never_runs(op):  # constant bounds, no trip: only the carried values (= their initial values)
                    scope |= {n.id for _, n in carried}
                else:
                    scope |= inner | _defs(op.attr("body"))
                scope.add(op.out.id)
                continue
            if op.kind == "branch":
                visit(op.attr("body"), set(scope))  # values defined in a branch stay in it
            if op.out is not None:
                scope.add(op.out.id)

    index = {id(op): i for i, op in enumerate(prog.walk())}
    visit(prog.body, set())
    return out


def _defs(b: Any) -> set[int]:
    """Values a loop body leaves defined after the loop: its own and those of its nested loops
    (the last trip's; a branch's values stay inside the branch)."""
    out = set()
    for op in b.ops:
        if op.out is not None:
            out.add(op.out.id)
        if op.kind == "loop":
            out |= _defs(op.attr("body")) | {n.id for _, n in op.attr("carried") or ()}
    return out


def _never_runs(op: Op) -> bool:
    a = op.args
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in a):
        return False
    return a[2] > 0 and len(range(a[0], a[1], a[2])) == 0


def _tile(lay: Layout) -> dict[str, int]:
    return {d: n for d, n in lay.out_dims if not (d == "block" and n == 1)}


def _shape(dims: dict[str, int]) -> str:
    return "x".join(str(n) for n in dims.values())


def _sources(prog: Program) -> dict[int, str]:
    """Fragment value id -> the tensor it was loaded from (through converts and shuffles)."""
    out: dict[int, str] = {}
    for op in prog.walk():
        if op.out is None:
            continue
        if op.kind == "load":
            out[op.out.id] = op.attr("tensor")
        elif op.kind in ("convert", "shuffle") and isinstance(op.args[0], Value) and op.args[0].id in out:
            out[op.out.id] = out[op.args[0].id]
    return out


def _check_global_type(rep: CheckReport, op: Op, prog: Program, where: str) -> None:
    v = op.out if op.kind == "load" else op.args[0]
    if not isinstance(v, Value) or not v.dtype:
        return
    tp = prog.tensor(op.attr("tensor"))
    fd, td = dtype(v.dtype), dtype(tp.dtype)
    if fd.name != td.name and fd.reg_bits == td.reg_bits:
        verb = "loads" if op.kind == "load" else "stores"
        rep.findings.append(Finding("error", where, f"{verb} tensor {tp.name} ({td.name}) as a {fd.name} fragment: the "
                                                    f"device moves the {td.reg_bits}-bit patterns unchanged, so a "
                                                    f"{td.name} value is read as the {fd.name} with the same bits "
                                                    "(e.g. -1 as 255, or the other fp8 flavour); load it as "
                                                    f"{td.name} and ts.cast it"))


def _check_shuffle(rep: CheckReport, op: Op, where: str) -> None:
    """A shuffle keeps its input's declared layout, so copies of a replicated element (RDNA3 A/B in
    lanes i and i+16) must receive copies of one element, or they disagree: an mma may read either
    copy, a store writes both."""
    x, src = op.args[0], op.attr("src_lane")
    if not isinstance(x, Value) or x.layout is None or not x.layout.is_function() or not isinstance(src, tuple):
        return
    lay = x.layout
    hw, lg = lay.pairs()
    names = list(lay.in_names)
    li, si = names.index("lane"), names.index("slot")
    held = {(int(h[li]), int(h[si])): tuple(int(v) for v in g) for h, g in zip(hw, lg)}
    copies: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for (lane, slot), e in held.items():
        copies.setdefault(e, []).append((lane, slot))
    for e, where_held in copies.items():
        if len(where_held) < 2:
            continue
        got = {held.get((src[lane], slot)) if 0 <= lane < len(src) else None for lane, slot in where_held}
        if len(got) > 1:
            lanes = sorted(lane for lane, _ in where_held)
            srcs = [src[lane] for lane in lanes]
            rep.findings.append(Finding("error", where, f"shuffle of %{x.id}: the copies of element "
                                        f"{dict(zip(lay.out_names, e))} in lanes {lanes} receive lanes {srcs}, which "
                                        "hold different elements: the replicas disagree (an mma may read either copy, "
                                        "a store writes both); move replicas together (e.g. lane i and i+16 alike)"))
            return


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


def _check_mma(rep: CheckReport, op: Op, prog: Program, where: str, sources: dict[int, str] | None = None) -> None:
    try:
        row = lookup(op.attr("instr"), prog.target)
    except TilesimError as e:
        rep.findings.append(Finding("error", where, str(e)))
        return
    if prog.wave_size not in row.wave_sizes:
        rep.findings.append(Finding("error", where, f"{row.mnemonic} needs wave{'/'.join(map(str, row.wave_sizes))}; "
                                                    f"the program runs wave{prog.wave_size}"))
        return
    if row.sparse != (op.kind == "mma_sparse"):
        rep.findings.append(Finding("error", where, f"{row.mnemonic} is {'' if row.sparse else 'not '}a sparse "
                                    "instruction: " + ("pass its metadata, ts.mma(op, a, b, c, index=meta)" if row.sparse
                                                       else "it takes no index operand")))
        return
    raw = op.attr("modifiers") or ()
    if not isinstance(raw, tuple) or not all(isinstance(m, tuple) and len(m) == 2 and isinstance(m[0], str)
                                             and isinstance(m[1], int) for m in raw):
        rep.findings.append(Finding("error", where, f"modifiers must be (name, integer) pairs; got {raw!r}"[:200]))
        return
    mods = {k: v for k, v in raw if k in LAYOUT_MODIFIERS}
    neg = dict(raw).get("neg", 0)
    scaled = op.kind == "mma_scaled"
    if bool(row.scale_operands) != scaled:  # the scale builtin needs its scale operands; others have none
        rep.findings.append(Finding("error", where, (
            f"{row.mnemonic} reads block scales: use ts.mma(op, a, b, c, scale_a=..., scale_b=...)" if not scaled else
            f"{row.mnemonic} has no block-scale operands; scaled mma needs a v_mfma_scale_* instruction")))
        return
    scale_fmts = _scale_formats(rep, row, dict(raw), scaled, prog.wave_size, where)
    if scale_fmts is None:
        return
    try:
        fmt = format_types(row, int(mods.get("cbsz", 0)), int(mods.get("blgp", 0)))  # f8f6f4: CBSZ/BLGP formats
        eff = signed_types(row, int(neg), fmt)[0] if isinstance(neg, int) else None
    except (TilesimError, TypeError, ValueError):
        eff = None
    perms = {}
    if row.sparse:
        _check_sparse(rep, op, prog, row, mods, where)
        return
    # CBSZ/ABID change which block's registers an MFMA reads, not where a load puts A: the
    # registers hold A as the plain layout says (tilesim/matrix/registers.py)
    held = {k: v for k, v in mods.items() if _kind(row, k) != "broadcast"}
    names = ("A", "B", "C", *row.scale_operands)  # SA/SB: block scales (gfx950 v_mfma_scale_*)
    for name, v in zip(names, op.args):
        if not isinstance(v, Value) or v.kind != "frag" or v.layout is None:
            rep.findings.append(Finding("error", f"{where} operand {name}", f"not a fragment: {v!r}"[:200]))
            continue
        if name in row.scale_operands:  # the format's own dtype, or u8 (the raw bytes)
            sf = scale_fmts[name]
            if v.dtype and dtype(v.dtype).name not in SCALE_DTYPES[sf]:
                field = SCALE_FORMAT_MODIFIERS[name]
                rep.findings.append(Finding("error", f"{where} {row.mnemonic} operand {name}", (
                    f"{v.dtype} fragment but {row.mnemonic} reads {name} as {sf.upper()} ({field}="
                    f"{dict(raw).get(field, 0)}); hold {sf.upper()} scales as {' or '.join(SCALE_DTYPES[sf])}"
                    + (f", or pass {field}=... for the format the tensor holds" if len(row.scale(name).formats) > 1
                       else ""))))
                continue
        else:
            want_t = eff["ABC".index(name)] if eff is not None else dtype(row.types["ABC".index(name)])
        if name not in row.scale_operands and v.dtype and dtype(v.dtype).reg_bits != want_t.reg_bits:
            rep.findings.append(Finding("error", f"{where} operand {name}",
                                        f"{v.dtype} fragment but {row.mnemonic} reads {want_t.name}"))
            continue
        if name not in row.scale_operands and v.dtype and dtype(v.dtype).name != want_t.name:
            rep.findings.append(Finding("error", f"{where} {row.mnemonic} operand {name}",
                                        _type_trap(row, name, v, dtype(v.dtype), want_t, int(neg or 0), prog,
                                                   (sources or {}).get(v.id))))
            continue
        try:
            hw = row.layout(name, wave_size=prog.wave_size, **(held if name == "A" else mods))
        except TilesimError as e:  # an illegal modifier value: a finding, not a crash
            rep.findings.append(Finding("error", f"{where} {row.mnemonic}", str(e)))
            return
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


def _scale_formats(rep: CheckReport, row: Any, raw: dict, scaled: bool, wave: int,
                   where: str) -> dict[str, str] | None:
    """The scale format SA and SB are read in (``a_scale_fmt``/``b_scale_fmt`` codes); None after a
    finding (a code the row does not take, or a format field on an unscaled mma)."""
    out = {}
    for name, field in SCALE_FORMAT_MODIFIERS.items():
        code = raw.get(field, 0)
        try:
            if not scaled:
                if code:
                    raise VerifyError(f"{field}={code}: {row.mnemonic} reads no block scales")
                continue
            out[name] = row.scale(name, wave).in_format(code).fmt
        except TilesimError as e:
            rep.findings.append(Finding("error", f"{where} {row.mnemonic}", str(e)))
            return None
    return out


def _kind(row: Any, name: str) -> str | None:
    m = row.modifier(name)
    return None if m is None else m.kind


def _check_sparse(rep: CheckReport, op: Op, prog: Program, row: Any, mods: dict[str, int], where: str) -> None:
    """SMFMAC/SWMMAC operands: compressed A values, B, C, and the metadata bytes
    (:mod:`tilesim.matrix.sparse`), each against the layout the instruction reads."""
    try:
        want = {"A": (values_layout(row, prog.wave_size, **mods), dtype(row.types[0])),
                "B": (row.layout("B", wave_size=prog.wave_size, **mods), dtype(row.types[1])),
                "C": (row.layout("C", wave_size=prog.wave_size, **mods), dtype(row.types[2])),
                "index": (meta_layout(row, prog.wave_size, **mods), dtype("u8"))}
    except TilesimError as e:
        rep.findings.append(Finding("error", f"{where} {row.mnemonic}", str(e)))
        return
    for (name, (hw, want_t)), v in zip(want.items(), op.args):
        at = f"{where} {row.mnemonic} operand {name}"
        if not isinstance(v, Value) or v.kind != "frag" or v.layout is None:
            rep.findings.append(Finding("error", at, f"not a fragment: {v!r}"[:200]))
            continue
        if v.dtype and dtype(v.dtype).name != want_t.name:
            what = "metadata bytes (u8: two 4-bit group codes per byte)" if name == "index" else want_t.name
            rep.findings.append(Finding("error", at, f"{v.dtype} fragment but {row.mnemonic} reads {name} as {what}"))
            continue
        diff = compare_layouts(v.layout, hw, "A values" if name == "A" else name)
        if diff:
            rep.findings.append(Finding("error", at, "; ".join(diff)))


def _type_trap(row: Any, name: str, v: Value, have: Any, want: Any, neg: int, prog: Program, tensor: str | None) -> str:
    """Why an operand's element type is not what the instruction reads, in the user's terms."""
    what = f"tensor {tensor} ({have.name})" if tensor else f"fragment {v.short()} ({have.name})"
    if have.kind in ("int", "uint") and want.kind in ("int", "uint") and have.bits == want.bits:
        mod = row.modifier("neg")
        if mod is not None and mod.kind == "signedness" and name in "AB":
            bit = 1 if name == "A" else 2
            fix = (f"set neg bit {bit - 1} (neg={neg | bit}) to read {name} signed" if have.kind == "int" else
                   f"clear neg bit {bit - 1} (neg={neg & ~bit}) to read {name} unsigned")
            return (f"{what} is read as {want.name} by {row.mnemonic} with neg={neg}: "
                    + ("negative values read as 2^" + f"{want.bits} + v (-1 as {2 ** want.bits - 1})"
                       if have.kind == "int" else f"values >= 2^{want.bits - 1} read as negative")
                    + f"; {fix}")
        return (f"{what} is read as {want.name} by {row.mnemonic}: "
                + (f"negative values read as 2^{want.bits} + v" if have.kind == "int" else
                   f"values >= 2^{want.bits - 1} read as negative") + "; use a tensor of the instruction's type")
    fh, fw = fp8_flavour(have.name), fp8_flavour(want.name)
    if fh and fw and fh != fw:
        t = get_target(prog.target)
        return (f"{what} is fp8 {FP8_FLAVOURS[fh]}, but {row.mnemonic} on {t.name} (an fp8 "
                f"{(t.fp8 or fw).upper()} target) reads {want.name}, {FP8_FLAVOURS[fw]}: the "
                f"same byte is a different number ({fp8_clash(fh, fw)}); declare the tensor "
                f"{want.name} or convert it")
    return (f"{what} but {row.mnemonic} reads {name} as {want.name}: the same {want.reg_bits}-bit patterns mean "
            f"other numbers; ts.cast to {want.name}")
