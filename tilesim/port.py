"""``port(prog, target)``: move a tile program to another target's matrix instructions, with proof.

CDNA (wave64 MFMA) ⇄ RDNA3/RDNA4 (wave32 WMMA) ⇄ NVIDIA mma.sync: the same GEMM tile needs a
different instruction shape, different fragment layouts (which lane and slot hold which element),
a different wave size and so a different grid and workgroup. Ports written by hand fail silently
there (TileLang's gfx1201 index maps assumed 64 lanes; Tensile assumed FNUZ fp8 on gfx950).

How it works. A DSL program remembers the ``@ts.kernel`` it was specialised from
(:class:`tilesim.ir.core.KernelOrigin`: kernel, options, sizes). ``port`` re-specialises that
kernel for the new target with the chosen instruction as its ``mma=`` option — the kernel itself
derives tiles, loop steps, fragment layouts, grid and waves from ``ts.mma_op`` — then sets the
mma modifiers so the new instruction reads the operands with the source's meaning (signed i8 on
RDNA ``iu8`` WMMA is NEG bits 0 and 1), checks the result with :func:`tilesim.check`, and proves
it computes the same outputs as the source with :func:`tilesim.equivalent` (one-hot probes along
every line of every input plus random inputs; exact comparison). A candidate that fails any step
is set aside with the reason, and the next one is tried; when none passes, :class:`PortError`
lists every reason. A program is never returned unproven.

A program with no kernel origin (loaded from JSON, built by hand) is rewritten in place instead,
to an instruction with the same m x n x k tile only: fragments in the source instruction's A/B/C
layouts take the target's layouts for the same roles, mma ops the new instruction; the tiling
stays (see :func:`_rewrite`). The same check, screen and proof follow.

Refused, with the reason: programs that fail ``check`` (a port proves equivalence to a correct
program only) or race in LDS when simulated (a racy program has no single result to be equivalent
to; a candidate port that races is set aside); programs with no kernel origin whose tile has no same-shape counterpart, or
with fragments in other (wave-specific) layouts; element types with no
instruction on the target (fp8 FNUZ on gfx942 has no equivalent on OCP-only gfx950/gfx12/sm_90:
the same byte is a different number); shapes whose tiling does not divide the problem (the
ported program would read or write out of bounds or leave outputs unwritten); modifiers with no
translation (negation, broadcasts).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tilesim.budget import check_runs
from tilesim.errors import TilesimError, choices
from tilesim.targets import get_target
from tilesim.ir.core import Block, Op, Program, Value
from tilesim.ir.verify import check
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import instructions, lookup
from tilesim.matrix.dtypes import FP8_FLAVOURS, fp8_clash, fp8_flavour
from tilesim.matrix.explain import explain
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.matrix.numerics import signed_types
from tilesim.wave.equivalence import Equivalence, equivalent
from tilesim.wave.sim import simulate

__all__ = ["port", "Port", "PortError", "MapChange"]

_MAX_TRIES = 4  # candidate instructions tried before giving up (each try simulates both programs)



class PortError(TilesimError):
    """A program that cannot be ported to the asked target, with the reason."""


@dataclass(frozen=True)
class MapChange:
    """One index map (or shape fact) that differs between the source and the ported program."""

    what: str  # "wave size", "A", "B", "C", "instruction", "grid", "waves/workgroup"
    source: str
    target: str

    def __str__(self) -> str:
        if "\n" in self.source or len(self.source) + len(self.target) > 70:
            return f"{self.what}:\n      {self.source}\n   -> {self.target}"
        return f"{self.what}: {self.source} -> {self.target}"


@dataclass(frozen=True, eq=False)
class Port:
    """A proven port: the new program, the instructions on both sides, what changed, the proof."""

    program: Program
    source: Program
    source_instr: MatrixInstruction
    target_instr: MatrixInstruction
    modifiers: tuple[tuple[str, int], ...]
    changes: tuple[MapChange, ...]
    evidence: Equivalence
    set_aside: tuple[tuple[str, str], ...] = field(default=())  # (candidate mnemonic, why not)
    # "re-specialised": the @ts.kernel ran again with the new instruction; "rewritten": a program
    # without kernel origin had its fragment layouts and mma ops replaced in place (same tiling)
    method: str = "re-specialised"

    def __str__(self) -> str:
        s, p = self.source, self.program
        mods = "".join(f" {k}={v}" for k, v in self.modifiers)
        lines = [f"port {s.name}: {s.target} (wave{s.wave_size}, {self.source_instr.mnemonic}) -> "
                 f"{p.target} (wave{p.wave_size}, {self.target_instr.mnemonic}{mods})",
                 "  index maps and shapes that changed:" if self.changes else "  nothing changed"]
        lines += ["    " + str(c).replace("\n", "\n    ") for c in self.changes]
        for m, why in self.set_aside:
            lines.append(f"  set aside {m}: {why}")
        if self.method != "re-specialised":
            lines.append(f"  {self.method} in place (no kernel origin): same tiling, fragment layouts replaced")
        lines.append(f"  proof: {self.evidence}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        s, p = self.source, self.program

        def side(prog: Program, row: MatrixInstruction) -> dict[str, Any]:
            return {"target": prog.target, "wave_size": prog.wave_size, "instruction": row.mnemonic,
                    "waves_per_workgroup": prog.waves_per_workgroup, "grid": list(prog.grid)}

        return {"program": s.name, "ported": True, "method": self.method, "source": side(s, self.source_instr),
                "target": side(p, self.target_instr), "modifiers": dict(self.modifiers),
                "changes": [{"what": c.what, "source": c.source, "target": c.target} for c in self.changes],
                "proof": {"equivalent": self.evidence.equal, "runs": self.evidence.runs,
                          "differences": list(self.evidence.differences)},
                "set_aside": [{"instruction": m, "reason": r} for m, r in self.set_aside],
                "ported_program": json.loads(p.to_json())}


# ---------------------------------------------------------------------------- instruction choice
def _types(row: MatrixInstruction, mods: dict[str, int]) -> tuple[str, str, str, str]:
    """The element types the instruction reads and writes with these modifiers (iu8 NEG = signed)."""
    ts_, _ = signed_types(row, int(mods.get("neg", 0)))
    a, b, c, d = ts_
    return a.name, b.name, c.name, d.name


def _realisations(row: MatrixInstruction, want: tuple[str, ...]) -> dict[str, int] | None:
    """The modifiers with which ``row`` reads/writes exactly the types ``want``, or None."""
    if _types(row, {}) == want:
        return {}
    neg = row.modifier("neg")
    if neg is not None and neg.kind == "signedness":
        for bits in neg.values:
            if _types(row, {"neg": bits}) == want:
                return {"neg": bits}
    return None


def _usable(row: MatrixInstruction, wave: int) -> bool:
    return row.blocks == 1 and not row.sparse and wave in row.wave_sizes


def _fmt_types(types: tuple[str, ...]) -> str:
    return f"A x B + C = {types[0]} x {types[1]} + {types[2]}"


def _no_instruction(src: Program, src_row: MatrixInstruction, want: tuple[str, ...], target: str, wave: int) -> str:
    have = [lookup(m, target) for m in instructions(target)]
    have = [r for r in have if _usable(r, wave)]
    reads = sorted({f"{r.types[0]} x {r.types[1]} + {r.types[2]}" for r in have})
    for flav, other in ((f, o) for f in FP8_FLAVOURS for o in FP8_FLAVOURS if o != f):
        mine = [t for t in want[:2] if fp8_flavour(t) == flav]
        twins = {f"{t.rpartition('_')[0]}_{other}" for t in mine}  # the same format of the other flavour
        if mine and any(twins & set(r.types[:2]) for r in have):
            return (f"{src_row.mnemonic} on {src.target} reads {', '.join(sorted(set(mine)))}: fp8 "
                    f"{FP8_FLAVOURS[flav]}; {target} has only {FP8_FLAVOURS[other]} fp8, where the same byte is a "
                    f"different number ({fp8_clash(flav, other)}), so no program on {target} computes the same "
                    f"result; {target} reads: {choices(reads)}")
    if not have:
        return f"{target} has no single-block matrix instruction for wave{wave}"
    return (f"{target} has no wave{wave} matrix instruction reading {_fmt_types(want)} (as {src_row.mnemonic} on "
            f"{src.target} does); {target} reads: {choices(reads)}")


def _candidates(src: Program, src_row: MatrixInstruction, want: tuple[str, ...], target: str, wave: int,
                instr: str | None) -> list[tuple[MatrixInstruction, dict[str, int]]]:
    if instr is not None:
        row = lookup(instr, target)
        if not _usable(row, wave):
            raise PortError(f"{row.mnemonic} on {target} cannot carry a tile program in wave{wave} (blocks "
                            f"{row.blocks}, sparse {row.sparse}, waves {list(row.wave_sizes)})")
        mods = _realisations(row, want)
        if mods is None:
            if any(fp8_flavour(t) == "fnuz" for t in want[:2]):
                raise PortError(f"cannot port {src.name} to {row.mnemonic} on {target}: "
                                + _no_instruction(src, src_row, want, target, wave))
            raise PortError(f"{row.mnemonic} on {target} reads {_fmt_types(_types(row, {}))} but {src_row.mnemonic} "
                            f"on {src.target} reads {_fmt_types(want)}; no modifier makes them agree")
        return [(row, mods)]
    out = []
    for m in instructions(target):
        row = lookup(m, target)
        if not _usable(row, wave):
            continue
        mods = _realisations(row, want)
        if mods is not None:
            out.append((row, mods))
    if not out:
        raise PortError(f"cannot port {src.name} to {target}: " + _no_instruction(src, src_row, want, target, wave))
    mnk = (src_row.m, src_row.n, src_row.k)

    def key(c: tuple[MatrixInstruction, dict[str, int]]) -> tuple[Any, ...]:
        r = c[0]
        # same shape first, then same tile (m, n), then the closest size; formats/scales last
        return ((r.m, r.n, r.k) != mnk, (r.m, r.n) != mnk[:2], any(md.kind == "format" for md in r.modifiers),
                abs(float(np.log2(r.m * r.n * r.k / np.prod(mnk)))), r.mnemonic)

    return sorted(out, key=key)


# ---------------------------------------------------------------------------- the rewrite
def _with_modifiers(prog: Program, mods: dict[str, int]) -> Program:
    """``prog`` with every mma's modifiers set to ``mods`` (the source's meaning on the new instruction)."""
    attrs_mods = tuple(sorted((k, v) for k, v in mods.items() if v))

    def block(b: Block) -> Block:
        ops = []
        for op in b.ops:
            if op.kind == "mma":
                attrs = tuple((k, attrs_mods if k == "modifiers" else v) for k, v in op.attrs)
                op = Op(op.kind, op.out, op.args, attrs)
            else:
                op = op.with_blocks(block)
            ops.append(op)
        return Block(tuple(ops))

    return Program(prog.name, prog.target, prog.wave_size, prog.waves_per_workgroup, prog.grid, prog.tensors,
                   prog.sizes, block(prog.body), prog.origin)


def _respecialise(prog: Program, target: str, wave: int, row: MatrixInstruction, mods: dict[str, int]) -> Program:
    origin = prog.origin
    assert origin is not None
    opts = {**dict(origin.options), "mma": row.mnemonic}
    new = origin.kernel.specialize(target=target, wave_size=wave, **dict(origin.sizes), **opts)
    return _with_modifiers(new, mods)


def _rewrite(prog: Program, target: str, wave: int, src_row: MatrixInstruction, row: MatrixInstruction,
             mods: dict[str, int]) -> Program:
    """Port a program without kernel origin to an instruction with the same m x n x k tile: every
    fragment in one of the source instruction's A/B/C layouts takes the target instruction's layout
    for the same role (the role an mma gives it, else the first of C, A, B whose layout it has),
    mma ops name the new instruction; tiling, loops, grid and waves stay. Fragments in any other
    layout (an LDS copy layout, a hand-written one) and lane shuffles are wave-specific: refused."""
    roles: dict[int, str] = {}
    for op in prog.walk():
        if op.kind == "shuffle":
            raise PortError(f"{prog.name} has no kernel origin and shuffles lanes by number (wave{prog.wave_size}); "
                            "port cannot translate a shuffle in place: pass the kernel.specialize(...) program")
        if op.kind == "mma":
            for role, a in zip("ABC", op.args):
                if isinstance(a, Value):
                    roles.setdefault(a.id, role)
            if op.out is not None:
                roles.setdefault(op.out.id, "C")
    src_l = {r: src_row.layout(r, wave_size=prog.wave_size).with_elem_bits(None) for r in "ABC"}
    dst_l = {r: row.layout(r, wave_size=wave) for r in "ABC"}
    memo: dict[int, Value] = {}

    def value(v: Value) -> Value:
        if v.kind != "frag" or v.layout is None:
            return v
        if v.id not in memo:
            bare = v.layout.with_elem_bits(None)
            role = roles.get(v.id)
            if role is None or src_l[role] != bare:
                role = next((r for r in "CAB" if src_l[r] == bare), None)
            if role is None:
                raise PortError(f"{prog.name} has no kernel origin and fragment {v.short()} is in a layout that is "
                                f"none of {src_row.mnemonic}'s A/B/C layouts on {prog.target} (e.g. an LDS copy "
                                "layout); port cannot re-derive it in place: pass the kernel.specialize(...) program")
            memo[v.id] = replace(v, layout=dst_l[role].with_elem_bits(v.layout.elem_bits))
        return memo[v.id]

    def conv(x: Any) -> Any:
        if isinstance(x, Value):
            return value(x)
        if isinstance(x, Block):
            return Block(tuple(rewrite(o) for o in x.ops))
        if isinstance(x, tuple):
            return tuple(conv(y) for y in x)
        return x

    mma_attrs = {"instr": row.mnemonic, "family": row.family,
                 "modifiers": tuple(sorted((k, v) for k, v in mods.items() if v))}

    def rewrite(o: Op) -> Op:
        attrs = o.attrs
        if o.kind == "mma":
            attrs = tuple((k, mma_attrs.get(k, v)) for k, v in attrs)
        return Op(o.kind, conv(o.out), conv(o.args), conv(attrs))

    return Program(prog.name, target, wave, prog.waves_per_workgroup, prog.grid, prog.tensors, prog.sizes,
                   conv(prog.body), None)


def _screen(src: Program, new: Program, seed: int = 0) -> str | None:
    """One cheap run on small random integers before the proof: out-of-bounds accesses the source
    does not make, or differing outputs, say the tiling does not fit. None when it looks right."""
    rng = np.random.default_rng(seed)
    arrays = {t.name: rng.integers(0, 4, t.shape).astype(np.float64) for t in src.tensors if not t.output}
    r1, r2 = simulate(src, verify=False, **arrays), simulate(new, verify=False, **arrays)
    if r1.report.race_count:  # a racy source has no single meaning to be equivalent to
        raise PortError(f"{src.name} on {src.target} races in LDS ({r1.report.race_count} racing accesses, e.g. "
                        f"{r1.report.races[0]}); its result depends on timing, so no port can be proved equivalent")
    if r2.report.race_count:
        return (f"the ported program races in LDS ({r2.report.race_count} racing accesses, e.g. "
                f"{r2.report.races[0]})")
    if r2.report.oob_count > r1.report.oob_count:
        first = r2.report.oob[0] if r2.report.oob else ""
        return (f"the tiling does not divide the problem ({_sizes(src)}): {r2.report.oob_count} out-of-bounds "
                f"lane accesses, e.g. {first}")
    for name, a in r1.outputs.items():
        a, b = np.asarray(a, np.float64), np.asarray(r2.outputs[name], np.float64)
        bad = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        if bad.any():
            i, j = (int(x) for x in np.argwhere(bad)[0])
            first = f"{int(bad.sum())} elements, first {name}[{i}][{j}] = {float(a[i, j]):.9g} vs {float(b[i, j]):.9g}"
            with np.errstate(all="ignore"):
                rel = float(np.nanmax(np.abs(a - b)[bad] / np.maximum(np.abs(a[bad]), np.abs(b[bad]))))
            if rel < 1e-5:  # a few ulps: same math, other rounding
                return (f"outputs differ in rounding on random inputs ({first}; largest relative difference "
                        f"{rel:.1e}): the new tiling sums in another order, so the results are not bit-identical")
            return (f"outputs differ on random inputs ({first}); the tiling may not divide the problem "
                    f"({_sizes(src)})")
    return None


def _sizes(p: Program) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.sizes)


# ---------------------------------------------------------------------------- what changed
def _replication(lay: Layout) -> str:
    copies = lay.replication()["copies"]
    n = max(copies)
    if n <= 1:
        return ""
    owners = lay.owners_of(**{d: 0 for d in lay.out_names})
    lanes = sorted({o["lane"] for o in owners})
    return f"; each element in {n} lanes (e.g. [0][0] in lanes {', '.join(map(str, lanes))})"


def _extent(lay: Layout) -> str:
    """``(16x32 in 64 lanes x 8 slots)``: the same formula text can cover another tile and wave."""
    tile = "x".join(str(n) for d, n in lay.out_dims if d != "block")
    ins = dict(lay.in_dims)
    return f"({tile} in {ins.get('lane', 1)} lanes x {ins.get('slot', 1)} slots)"


def _changes(src: Program, new: Program, src_row: MatrixInstruction, row: MatrixInstruction) -> list[MapChange]:
    out = []
    if src.wave_size != new.wave_size:
        out.append(MapChange("wave size", f"wave{src.wave_size}", f"wave{new.wave_size}"))
    if (src_row.m, src_row.n, src_row.k) != (row.m, row.n, row.k) or src_row.mnemonic != row.mnemonic:
        out.append(MapChange("instruction", f"{src_row.mnemonic} ({src_row.m}x{src_row.n}x{src_row.k})",
                             f"{row.mnemonic} ({row.m}x{row.n}x{row.k})"))
    e1, e2 = explain(src_row, wave_size=src.wave_size), explain(row, wave_size=new.wave_size)
    for op in "ABC":
        l1, l2 = src_row.layout(op, wave_size=src.wave_size), row.layout(op, wave_size=new.wave_size)
        if l1.with_elem_bits(None) == l2.with_elem_bits(None):
            continue
        f1 = e1.formulas[op]["holds"].replace("lane, slot hold ", "") + _replication(l1)
        f2 = e2.formulas[op]["holds"].replace("lane, slot hold ", "") + _replication(l2)
        out.append(MapChange(op, f"{src.target} {_extent(l1)}: {f1}", f"{new.target} {_extent(l2)}: {f2}"))
    if src.waves_per_workgroup != new.waves_per_workgroup:
        out.append(MapChange("waves/workgroup", str(src.waves_per_workgroup), str(new.waves_per_workgroup)))
    if src.grid != new.grid:
        out.append(MapChange("grid", str(src.grid), str(new.grid)))
    return out


# ---------------------------------------------------------------------------- entry point
def port(prog: Program, target: str, *, instr: str | None = None, wave_size: int | None = None,
         random_runs: int = 3, max_lines: int = 16) -> Port:
    """Rewrite ``prog`` for ``target`` and prove it equivalent; raises :class:`PortError` with the
    reason when no equivalent program exists (or none this tool can build).

    ``instr`` forces the target instruction (either spelling); ``wave_size`` the wave (default:
    the target's default, wave32 on RDNA). ``random_runs``/``max_lines`` go to ``equivalent``.
    """
    if not isinstance(prog, Program):
        raise PortError(f"port() takes a specialised Program (kernel.specialize(...)), got {type(prog).__name__}")
    check_runs(random_runs, max_lines)
    t = get_target(target)
    wave = wave_size if wave_size is not None else t.default_wave
    if wave not in t.wave_sizes:
        raise PortError(f"{t.name} has no wave{wave!r}; wave sizes: {choices(t.wave_sizes)}")
    rep = check(prog)
    if not rep.ok:
        raise PortError(f"{prog.name} on {prog.target} does not pass check ({rep.errors[0]}); a port proves "
                        "equivalence to the source, so fix the source first")
    mmas = [op for op in prog.walk() if op.kind == "mma"]
    used = sorted({lookup(op.attr("instr"), prog.target).mnemonic for op in mmas})
    if prog.origin is None:
        # No kernel to re-specialise (program JSON, hand-built IR): rewrite the IR in place, keeping the tiling.
        if not used:
            raise PortError(f"{prog.name} on {prog.target} has no kernel origin (loaded from JSON or built by hand) "
                            "and no mma op naming the instruction whose layouts it uses; pass the Python file or "
                            "kernel.specialize(...)'s program")
        if len(used) > 1:
            raise PortError(f"{prog.name} uses {choices(used)}; port rewrites programs with one instruction")
        src_row = lookup(used[0], prog.target)
    else:
        opts = dict(prog.origin.options)
        if not isinstance(opts.get("mma"), str):
            raise PortError(f"kernel {prog.name} has no mma= option naming its instruction; port re-specialises "
                            f"kernels through it (options: {choices(sorted(opts)) or 'none'})")
        fixed = sorted(k for k, v in opts.items() if isinstance(v, Layout))
        if fixed:
            raise PortError(f"{prog.name}: option(s) {', '.join(fixed)} hold hand-written Layouts for "
                            f"wave{prog.wave_size} on {prog.target}; port derives layouts from the instruction and "
                            "cannot translate them")
        src_row = lookup(opts["mma"], prog.target)
        if used and used != [src_row.mnemonic]:
            raise PortError(f"{prog.name} uses {choices(used)} but its mma= option is {src_row.mnemonic}; port "
                            "handles programs whose mma ops all use the kernel's instruction")
    mod_sets = {tuple(op.attr("modifiers") or ()) for op in mmas}
    if len(mod_sets) > 1:
        raise PortError(f"{prog.name}'s mma ops use different modifiers {sorted(mod_sets)}; port translates one set")
    src_mods = dict(next(iter(mod_sets))) if mod_sets else {}
    for k, v in src_mods.items():
        mod = src_row.modifier(k)
        if v and (mod is None or mod.kind != "signedness"):
            kind = mod.kind if mod is not None else "unknown"
            raise PortError(f"{prog.name}: modifier {k}={v} ({kind}) on {src_row.mnemonic} has no translation; port "
                            "translates signedness (iu8/iu4 NEG bits) only")
    want = _types(src_row, src_mods)
    cands = _candidates(prog, src_row, want, t.name, wave, instr)
    mnk = (src_row.m, src_row.n, src_row.k)
    if prog.origin is None:
        same = [c for c in cands if (c[0].m, c[0].n, c[0].k) == mnk]
        if not same:
            raise PortError(f"{prog.name} on {prog.target} has no kernel origin (loaded from JSON or built by hand), so "
                            f"port can only rewrite it in place, keeping its {'x'.join(map(str, mnk))} tiling, and "
                            f"{t.name} has no such instruction reading {_fmt_types(want)} (it has "
                            f"{choices([c[0].mnemonic for c in cands])}); pass the Python file or "
                            "kernel.specialize(...)'s program so the kernel can be re-tiled")
        cands = same
    tried: list[tuple[str, str]] = []
    for row, mods in cands[:_MAX_TRIES]:
        try:
            if prog.origin is None:
                new = _rewrite(prog, t.name, wave, src_row, row, mods)
            else:
                new = _respecialise(prog, t.name, wave, row, mods)
        except PortError:
            raise
        except TilesimError as e:
            tried.append((row.mnemonic, f"the kernel does not specialise with it ({e}); a {row.m}x{row.n}x{row.k} "
                                        f"tile may not fit the problem ({_sizes(prog)})"))
            continue
        rep = check(new)
        if not rep.ok:
            tried.append((row.mnemonic, f"the re-specialised program fails check: {rep.errors[0]}"))
            continue
        why = _screen(prog, new)
        if why:
            tried.append((row.mnemonic, why))
            continue
        ev = equivalent(prog, new, random_runs=random_runs, max_lines=max_lines)
        if ev.source_races:  # equivalent() never calls racy runs equal; a racy source cannot be ported at all
            raise PortError(f"{prog.name} on {prog.target} races in LDS on the proof's inputs ({ev.differences[0]}); "
                            "fix the source first")
        if not ev.equal:
            tried.append((row.mnemonic, f"not equivalent: {ev.differences[0]}"))
            continue
        return Port(new, prog, src_row, row, tuple(sorted((k, v) for k, v in mods.items() if v)),
                    tuple(_changes(prog, new, src_row, row)), ev, tuple(tried),
                    "re-specialised" if prog.origin is not None else "rewritten")
    raise PortError(f"no equivalent of {prog.name} ({prog.target}, {src_row.mnemonic}) on {t.name}: "
                    + "; ".join(f"{m}: {why}" for m, why in tried))
