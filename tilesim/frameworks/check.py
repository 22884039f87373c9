"""Check a Gluon/Triton layout against the hardware: does it hold, lane for lane and register for
register, what one matrix instruction reads (A, B) or writes (C/D) on a target?

A Gluon layout maps ``(register, lane, warp[, block]) -> (dim0, dim1)``; an instruction's operand
layout (:meth:`tilesim.matrix.instruction.MatrixInstruction.layout`) maps ``(lane, slot) ->
(block, row, col)``. :func:`check_layout` takes warp 0's registers for one instruction tile (the
operand's ``M x K``, ``K x N`` or ``M x N`` corner of the tensor), calls them slots, and compares
the two element by element. The answer is a :class:`LayoutCheck`:

* ``match`` — every lane/register holds what the instruction reads or writes;
* ``match_k_permuted`` — an A/B layout that differs from the instruction's only by a permutation
  of k. A dot product does not care about the order of k as long as A and B use the same one
  (Triton's dot operands with equal ``k_width`` do), so it counts as a match, with the
  permutation reported;
* ``mismatch`` — the first differing lane/VGPR, both sides' elements there, and the pattern;
* ``rejected`` — the layout cannot be this target's instruction at all, e.g. a wave64 CDNA
  ``AMDMFMALayout`` on a wave32 RDNA target that has no MFMA.

A spec is a Gluon spec object (:mod:`tilesim.frameworks.gluon`), a :class:`Layout` with those dims,
a string such as ``"AMDMFMALayout(version=3, instr_shape=[32, 32, 8], transposed=False,
warps_per_cta=[1, 1])"`` (parsed with :mod:`ast`: only the spec constructors and literals, never
evaluated), a JSON object (``{"layout": "AMDMFMALayout", ...}`` with a nested ``"parent"``, or
Triton's printed bases ``{"bases": {"register": ..., "lane": ..., "warp": ..., "block": ...},
"shape": [...]}``), or the path of a ``.json`` file holding one.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tilesim.errors import LayoutError, TilesimError, choices
from tilesim.frameworks.gluon import SPECS
from tilesim.layouts.compare import compare_layouts
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import instructions, lookup
from tilesim.targets import get_target

__all__ = ["check_layout", "LayoutCheck", "parse_spec"]

_STATUSES = ("match", "match_k_permuted", "mismatch", "rejected")
# instruction kind each Gluon class stands for, and the wave size it is written for
_KIND = {"AMDMFMALayout": ("mfma", 64), "AMDWMMALayout": ("wmma", 32), "NVMMADistributedLayout": ("mma_sync", 32)}
_KIND_WORDS = {"mfma": "MFMA, a wave64 CDNA instruction", "wmma": "WMMA, a wave32 RDNA/gfx1250 instruction",
               "mma_sync": "mma.sync, an NVIDIA warp instruction"}


@dataclass(frozen=True)
class LayoutCheck:
    """The answer of :func:`check_layout`. ``ok`` is true for ``match`` and ``match_k_permuted``."""

    status: str
    spec: str
    arch: str
    operand: str
    instruction: str | None
    wave_size: int | None
    reason: str
    first_difference: dict[str, Any] | None = None
    pattern: tuple[str, ...] = ()
    k_permutation: tuple[int, ...] | None = None
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.status not in _STATUSES:
            raise ValueError(f"status {self.status!r}; valid: {_STATUSES}")

    @property
    def ok(self) -> bool:
        return self.status in ("match", "match_k_permuted")

    def __str__(self) -> str:
        head = {"match": "MATCH", "match_k_permuted": "MATCH (k permuted)", "mismatch": "MISMATCH",
                "rejected": "REJECTED"}[self.status]
        where = f"{self.instruction} on {self.arch}" if self.instruction else self.arch
        lines = [f"{head}: {self.spec} as {self.operand} of {where}", f"  {self.reason}"]
        lines += [f"  {p}" for p in self.pattern]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "status": self.status, "spec": self.spec, "arch": self.arch, "operand": self.operand,
                "instruction": self.instruction, "wave_size": self.wave_size, "reason": self.reason,
                "first_difference": self.first_difference, "pattern": list(self.pattern),
                "k_permutation": None if self.k_permutation is None else list(self.k_permutation),
                "notes": list(self.notes)}


# --------------------------------------------------------------------------- reading a spec
def _spec_classes() -> dict[str, type]:
    return dict(SPECS)


def _literal(node: ast.AST, text: str) -> Any:
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (bool, int))):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e, text) for e in node.elts]
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise LayoutError(f"layout spec: only constructor calls such as AMDMFMALayout(...) are allowed, "
                              f"got {ast.get_source_segment(text, node.func)!r}")
        allowed = set(_spec_classes()) | {"DistributedLinearLayout"}
        if node.func.id not in allowed:
            raise LayoutError(f"unknown layout {node.func.id!r}; valid: {choices(sorted(allowed))}")
        if any(k.arg is None for k in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
            raise LayoutError("layout spec: * and ** arguments are not allowed")
        return {"layout": node.func.id, "args": [_literal(a, text) for a in node.args],
                "kwargs": {k.arg: _literal(k.value, text) for k in node.keywords}}
    seg = ast.get_source_segment(text, node) or type(node).__name__
    raise LayoutError(f"layout spec: {seg!r} is not allowed; use integers, True/False/None, lists and "
                      "layout constructors")


def _build(tree: Any) -> Any:
    """A parsed constructor tree -> a Gluon spec object (or the bases form of a linear layout)."""
    if isinstance(tree, list):
        return [_build(x) for x in tree]
    if not isinstance(tree, dict):
        return tree
    name = tree.get("layout")
    if "bases" in tree:  # Triton's printed form: {"bases": {...}, "shape": [...]}
        return _LinearBases.from_json(tree)
    if "args" not in tree:  # JSON form: {"layout": name, field: value, ...}
        tree = {"layout": name, "args": [], "kwargs": {k: v for k, v in tree.items() if k != "layout"}}
    classes = _spec_classes()
    args = [_build(a) for a in tree["args"]]
    kwargs = {k: _build(v) for k, v in tree["kwargs"].items()}
    if name not in classes:
        if name == "DistributedLinearLayout":  # usable before/without tilesim.frameworks.gluon
            return _LinearBases.from_args(args, kwargs)
        valid = sorted(classes) or ["DistributedLinearLayout (tilesim.frameworks.gluon is not available)"]
        raise LayoutError(f"unknown layout {name!r}; valid: {choices(valid)}")
    try:
        return classes[name](*args, **kwargs)
    except TilesimError:
        raise
    except (TypeError, ValueError) as e:
        raise LayoutError(f"{name}: {e}"[:300]) from None


def parse_spec(spec: Any) -> Any:
    """A Gluon spec object from a string, a JSON object or a ``.json`` path; other values pass through."""
    if isinstance(spec, Path) or (isinstance(spec, str) and spec.strip().endswith(".json")):
        path = Path(spec)
        try:
            spec = json.loads(path.read_text())
        except OSError as e:
            raise LayoutError(f"cannot read layout spec file {str(path)!r}: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise LayoutError(f"layout spec file {str(path)!r} is not JSON: {e}") from None
    if isinstance(spec, str) and spec.lstrip().startswith("{"):  # JSON text on the command line
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError as e:
            raise LayoutError(f"layout spec {spec.strip()[:80]!r} is not JSON: {e}") from None
    if isinstance(spec, dict):
        if "spec" in spec and isinstance(spec["spec"], (dict, str)) and "bases" not in spec:
            spec = spec["spec"]  # {"spec": ...} wrapper (the golden files' form, minus the bases)
        if isinstance(spec, dict):
            if "layout" not in spec and "bases" not in spec:
                raise LayoutError(f"layout spec JSON needs a \"layout\" key (a class name) or \"bases\"; got keys "
                                  f"{sorted(spec)}")
            return _build(spec)
    if isinstance(spec, str):
        text = spec.strip()
        try:
            node = ast.parse(text, mode="eval").body
        except SyntaxError as e:
            raise LayoutError(f"layout spec {text[:80]!r} is not a constructor call: {e.msg}") from None
        if not isinstance(node, ast.Call):
            raise LayoutError(f"layout spec {text[:80]!r} must be a call such as AMDMFMALayout(...)")
        return _build(_literal(node, text))
    return spec


@dataclass(frozen=True)
class _LinearBases:
    """Bases of a linear layout ((register, lane, warp, block) -> (dim0, dim1)), without gluon.py."""

    reg_bases: tuple
    lane_bases: tuple
    warp_bases: tuple
    block_bases: tuple
    shape: tuple

    @classmethod
    def from_args(cls, args: list, kwargs: dict) -> _LinearBases:
        names = ("reg_bases", "lane_bases", "warp_bases", "block_bases", "shape")
        if len(args) > len(names) or set(kwargs) - set(names):
            raise LayoutError(f"DistributedLinearLayout takes {', '.join(names)}")
        vals = dict(zip(names, args)) | kwargs
        missing = [n for n in names if n not in vals]
        if missing:
            raise LayoutError(f"DistributedLinearLayout needs {', '.join(missing)}")
        return cls(*(_tuples(vals[n]) for n in names))

    @classmethod
    def from_json(cls, doc: dict) -> _LinearBases:
        b = doc["bases"]
        if not isinstance(b, dict) or "shape" not in doc:
            raise LayoutError("bases JSON needs {\"bases\": {\"register\": ..., \"lane\": ...}, \"shape\": [...]}")
        return cls(_tuples(b.get("register", [])), _tuples(b.get("lane", [])), _tuples(b.get("warp", [])),
                   _tuples(b.get("block", [])), _tuples(doc["shape"]))

    def to_layout(self, shape: Any = None) -> Layout:
        if len(self.shape) != 2:
            raise LayoutError(f"linear layout shape {list(self.shape)} must have 2 dims")
        dims = {"register": self.reg_bases, "lane": self.lane_bases, "warp": self.warp_bases}
        if self.block_bases:
            dims["block"] = self.block_bases
        for name, vecs in dims.items():
            if any(len(v) != 2 for v in vecs):
                raise LayoutError(f"{name} bases {[list(v) for v in vecs]} must be [dim0, dim1] pairs"[:300])
        return Layout.from_bases({n: 1 << len(v) for n, v in dims.items()},
                                 {"dim0": self.shape[0], "dim1": self.shape[1]}, dims)

    def __str__(self) -> str:
        return (f"DistributedLinearLayout(reg_bases={_lists(self.reg_bases)}, lane_bases={_lists(self.lane_bases)}, "
                f"warp_bases={_lists(self.warp_bases)}, block_bases={_lists(self.block_bases)}, "
                f"shape={list(self.shape)})")


def _tuples(x: Any) -> Any:
    return tuple(_tuples(v) for v in x) if isinstance(x, (list, tuple)) else x


def _lists(x: Any) -> Any:
    return [_lists(v) for v in x] if isinstance(x, (list, tuple)) else x


# --------------------------------------------------------------------------- which instruction
def _describe(spec: Any) -> tuple[str, str | None, str | None, tuple[int, ...] | None, Any]:
    """(class name, instruction kind, operand it implies, instr_shape, result-layout spec)."""
    name = type(spec).__name__
    if name == "DotOperandLayout":
        parent = spec.parent
        pname = type(parent).__name__
        op = ("A", "B")[int(spec.operand_index)]
        return name, _KIND.get(pname, (None,))[0], op, _shape(parent), parent
    if name in _KIND:
        return name, _KIND[name][0], None, _shape(spec), spec
    return name, None, None, None, None


def _shape(spec: Any) -> tuple[int, ...] | None:
    s = getattr(spec, "instr_shape", None)
    return None if s is None else tuple(int(v) for v in s)


def _infer(arch: str, kind: str, instr_shape: tuple[int, ...] | None, dtype: str) -> tuple[Any, list[str]]:
    rows = [lookup(m, arch) for m in instructions(arch)]
    cand = [r for r in rows if r.kind == kind and r.blocks == 1 and not r.sparse and r.types[0] == dtype]
    if instr_shape is not None:
        cand = [r for r in cand if (r.m, r.n) == tuple(instr_shape[:2])
                and (len(instr_shape) < 3 or r.k == instr_shape[2])]
    if not cand:
        have = sorted({f"{r.m}x{r.n}x{r.k} {r.types[0]}" for r in rows if r.kind == kind and r.blocks == 1
                       and not r.sparse})
        want = "x".join(map(str, instr_shape)) if instr_shape else "any shape"
        raise LayoutError(f"{arch} has no single-block {kind} instruction {want} with {dtype} inputs; it has: "
                          f"{choices(have) or 'none'} (pass --instr NAME or --dtype)")
    notes = []
    if len(cand) > 1:
        notes.append(f"inferred {cand[0].mnemonic}; also possible: {', '.join(r.mnemonic for r in cand[1:])}")
    return cand[0], notes


# --------------------------------------------------------------------------- the comparison
def _tile(lay: Layout, rows: int, cols: int, transposed: bool) -> Layout:
    """Warp 0's registers holding the ``rows x cols`` corner, as (lane, slot) -> (block, row, col)."""
    need = {"register", "lane"}
    if not need <= set(lay.in_names) or set(lay.out_names) != {"dim0", "dim1"}:
        raise LayoutError(f"a Gluon layout maps (register, lane, warp) -> (dim0, dim1); this one maps "
                          f"{list(lay.in_names)} -> {list(lay.out_names)}")
    fixed = {n: 0 for n in lay.in_names if n not in need}
    hw, lg = lay.restrict(**fixed).pairs() if fixed else lay.pairs()
    names = [n for n in lay.in_names if n in need]
    reg, lane = hw[:, names.index("register")], hw[:, names.index("lane")]
    d0, d1 = lg[:, lay.out_names.index("dim0")], lg[:, lay.out_names.index("dim1")]
    row, col = (d1, d0) if transposed else (d0, d1)
    keep = (row < rows) & (col < cols)
    # a register that repeats a lower one in every lane (a zero register basis: the tensor is smaller than
    # the layout's tile) holds nothing new for the instruction
    seen: dict[bytes, int] = {}
    for r in np.unique(reg[keep]).tolist():
        sel = keep & (reg == r)
        content = np.stack([lane[sel], row[sel], col[sel]], 1)
        content = content[np.lexsort(content.T[::-1])]
        seen.setdefault(content.tobytes(), r)
    keep &= np.isin(reg, list(seen.values()))
    used = np.unique(reg[keep])
    if used.size == 0:
        raise LayoutError(f"warp 0 of the layout holds nothing of the {rows}x{cols} instruction tile")
    slot = np.searchsorted(used, reg)
    hw2 = np.stack([lane[keep], slot[keep]], 1)
    lg2 = np.stack([0 * row[keep], row[keep], col[keep]], 1)
    lanes = dict(lay.in_dims)["lane"]
    return Layout.from_pairs({"lane": lanes, "slot": int(used.size)}, {"block": 1, "row": rows, "col": cols},
                             hw2, lg2)


def _held(lay: Layout, bits: int) -> dict[tuple[int, int], set[tuple[int, int]]]:
    out: dict[tuple[int, int], set[tuple[int, int]]] = {}
    hw, lg = lay.pairs()
    rc = [lay.out_names.index("row"), lay.out_names.index("col")]
    for (lane, slot), (r, c) in zip(hw.tolist(), lg[:, rc].tolist()):
        out.setdefault((lane, slot * bits), set()).add((r, c))
    return out


def _first_difference(dec: Layout, hw: Layout, bits: int, operand: str) -> dict[str, Any] | None:
    """The first (lane, bit offset) whose elements differ, with both sides' elements there."""
    d, h = _held(dec, bits), _held(hw, bits)
    for pos in sorted(set(d) | set(h)):
        if d.get(pos, set()) != h.get(pos, set()):
            lane, bit0 = pos
            return {"lane": lane, "vgpr": bit0 // 32, "bits": [bit0 % 32, bit0 % 32 + bits - 1],
                    "layout_holds": [f"{operand}[{r}][{c}]" for r, c in sorted(d.get(pos, set()))],
                    "instruction_holds": [f"{operand}[{r}][{c}]" for r, c in sorted(h.get(pos, set()))]}
    return None


def _k_permutation(dec: Layout, hw: Layout, operand: str, k: int) -> tuple[int, ...] | None:
    """pi with dec = hw with k replaced by pi[k] at every position, if one exists."""
    if operand not in ("A", "B") or dec.in_dims != hw.in_dims:
        return None
    (dh, dl), (hh, hl) = dec.pairs(), hw.pairs()
    if dh.shape != hh.shape or not np.array_equal(dh, hh):  # pairs are sorted by position, then element
        return None
    kd, other = (2, 1) if operand == "A" else (1, 2)
    if not np.array_equal(dl[:, other], hl[:, other]):
        return None
    pi = np.full(k, -1, np.int64)
    for a, b in zip(hl[:, kd].tolist(), dl[:, kd].tolist()):
        if pi[a] not in (-1, b):
            return None
        pi[a] = b
    if (pi < 0).any() or len(set(pi.tolist())) != k:
        return None
    return tuple(int(v) for v in pi)


def check_layout(spec: Any, arch: str, *, operand: str | None = None, instr: str | None = None,
                 dtype: str = "f16", shape: Any = None) -> LayoutCheck:
    """Does ``spec``, as ``operand`` of one instruction on ``arch``, hold what the instruction reads/writes?

    ``operand`` defaults to the spec's own (A/B for a ``DotOperandLayout``, else C); ``instr`` defaults
    to the instruction the spec's kind, ``instr_shape`` and ``dtype`` (the A/B element type) name.
    ``shape`` is the tensor shape to lay out (default: one instruction tile); its corner is compared.
    Raises ``TilesimError`` on bad input; a layout that does not fit is an answer, not an error.
    """
    target = get_target(arch)
    obj = parse_spec(spec)
    text = str(spec).strip() if isinstance(spec, str) and not spec.strip().endswith(".json") else _spec_text(obj)
    cls, kind, implied, instr_shape, result = _describe(obj)
    if operand is None:
        op = implied or "C"
    else:
        op = str(operand).upper()
        if op not in ("A", "B", "C", "D"):
            raise LayoutError(f"operand {operand!r}; valid: A, B, C, D")
        if implied and op != implied:
            raise LayoutError(f"{cls} with operand_index {('A', 'B').index(implied)} is operand {implied}, not {op}")
        if kind and not implied and op in ("A", "B"):
            raise LayoutError(f"{cls} is a result (C/D) layout; wrap it in DotOperandLayout({'AB'.index(op)}, ...) "
                              f"for operand {op}")
    op_key = "C" if op == "D" else op
    base = dict(spec=text, arch=target.name, operand=op)

    def rejected(reason: str, ins: str | None = None, wave: int | None = None) -> LayoutCheck:
        return LayoutCheck("rejected", instruction=ins, wave_size=wave, reason=reason, **base)

    kinds_here = {lookup(m, target.name).kind for m in instructions(target.name)}
    if kind is not None and kind not in kinds_here:
        wave = _KIND[type(result).__name__][1]
        what = f"{cls}" + (f" (parent {type(result).__name__})" if result is not obj else "")
        return rejected(f"{what} is the layout of {_KIND_WORDS[kind]}; {target.name} "
                        f"({target.family}, default wave{target.default_wave}) has no {kind} instructions — its "
                        f"matrix path is {target.matrix_path}", wave=wave)
    notes: list[str] = []
    if instr is not None:
        row = lookup(instr, target.name)
    elif kind is None:
        raise LayoutError(f"{cls} names no instruction; pass --instr (one of {target.name}'s: "
                          f"{choices(instructions(target.name), limit=12)})")
    else:
        row, notes = _infer(target.name, kind, instr_shape, dtype)
    if row.blocks != 1:
        raise LayoutError(f"{row.mnemonic} computes {row.blocks} blocks at once; check-layout compares single-block "
                          "instructions only")
    if kind is not None and row.kind != kind:
        wave = _KIND[type(result).__name__][1]
        if not (kind == "wmma" and row.kind == "swmmac"):
            return rejected(f"{cls} is the layout of {_KIND_WORDS[kind]}; {row.mnemonic} is a {row.kind} "
                            f"instruction (wave {'/'.join(map(str, row.wave_sizes))})", row.mnemonic, wave)
    fam = getattr(result, "arch_family", None)
    if fam and target.name not in _family_targets(fam) and target.family not in _family_targets(fam):
        notes.append(f"{type(result).__name__} version {getattr(result, 'version', '?')} stands for {_fam_text(fam)}; "
                     f"checking it on {target.name} ({target.family})")

    m, n, k = row.m, row.n, row.k
    rows_, cols_ = {"A": (m, k), "B": (k, n), "C": (m, n)}[op_key]
    transposed = bool(getattr(result, "transposed", False)) and op_key == "C"
    if transposed:
        notes.append("transposed: the layout holds C^T, i.e. the instruction's C of the swapped product "
                     "B^T A^T (Triton swaps A and B); compared as that")
    if shape is None:
        shape = (cols_, rows_) if transposed else (rows_, cols_)
    if cls in ("DistributedLinearLayout", "_LinearBases"):  # for its own shape; its corner is compared
        full = obj.to_layout(tuple(obj.shape))
    else:
        full = obj.to_layout(shape) if hasattr(obj, "to_layout") else _as_layout(obj)
    if not isinstance(full, Layout):
        raise LayoutError(f"{cls}.to_layout() returned {type(full).__name__}, not a Layout")
    lanes = dict(full.in_dims).get("lane")
    if lanes is None:
        raise LayoutError(f"the layout has no lane dim: {list(full.in_names)}")
    if lanes not in row.wave_sizes:
        return rejected(f"the layout spans {lanes} lanes (wave{lanes}) but {row.mnemonic} runs in wave"
                        f"{'/'.join(map(str, row.wave_sizes))}" + (" — MFMA is a wave64 CDNA instruction"
                                                                    if lanes == 64 else ""), row.mnemonic, lanes)
    hw = row.layout(op_key, wave_size=lanes)
    bits = hw.elem_bits or 32
    dec = _tile(full, rows_, cols_, transposed).with_elem_bits(bits)
    got = dict(instruction=row.mnemonic, wave_size=lanes, **base)
    if dec == hw:
        return LayoutCheck("match", reason=f"every lane and register holds what {row.mnemonic} "
                           f"{'reads' if op_key in 'AB' else 'writes'} ({len(hw)} element copies in {lanes} lanes)",
                           notes=tuple(notes), **got)
    pi = _k_permutation(dec, hw, op_key, k)
    if pi is not None:
        return LayoutCheck("match_k_permuted", k_permutation=pi, notes=tuple(notes),
                           reason=f"holds what {row.mnemonic} reads up to a permutation of k (layout k = pi[hardware "
                                  f"k], pi = {list(pi)}); correct only if the other operand uses the same k order, as "
                                  "Triton's dot operands with equal k_width do", **got)
    first = _first_difference(dec, hw, bits, op_key)
    slots_d, slots_h = dict(dec.in_dims)["slot"], dict(hw.in_dims)["slot"]
    if slots_d != slots_h:
        notes.insert(0, f"the layout gives each lane {slots_d} {bits}-bit elements of this tile; {row.mnemonic} "
                        f"uses {slots_h}")
    rep_d, rep_h = _copies(dec), _copies(hw)
    if rep_d != rep_h:
        notes.append(f"the layout keeps {rep_d} cop{'y' if rep_d == 1 else 'ies'} of each element in a wave, "
                     f"{row.mnemonic} {rep_h}" + (" (RDNA3 WMMA replicates A/B in lanes 16-31; RDNA4 does not)"
                                                  if row.kind == "wmma" and op_key in "AB" else ""))
    pattern = tuple(compare_layouts(dec, hw, op_key, verbs=("is held at", "the instruction has it at")))
    reason = "differs from the instruction"
    if first is not None:
        reason = (f"first difference at lane {first['lane']}, VGPR {first['vgpr']}"
                  + (f" bits {first['bits'][0]}-{first['bits'][1]}" if bits < 32 else "")
                  + f": the layout holds {', '.join(first['layout_holds']) or 'nothing'}, "
                  f"{row.mnemonic} {'reads' if op_key in 'AB' else 'writes'} "
                  f"{', '.join(first['instruction_holds']) or 'nothing'}")
    return LayoutCheck("mismatch", reason=reason, first_difference=first, pattern=pattern, notes=tuple(notes), **got)


def _copies(lay: Layout) -> int:
    """How many hardware positions hold each element (the most, over the tile)."""
    _, lg = lay.pairs()
    return int(np.unique(lg, axis=0, return_counts=True)[1].max()) if len(lg) else 0


def _as_layout(obj: Any) -> Layout:
    if isinstance(obj, Layout):
        return obj
    raise LayoutError(f"cannot check a {type(obj).__name__}; pass a Gluon layout spec, its string or JSON form, "
                      "or a Layout (register, lane, warp) -> (dim0, dim1)")


def _spec_text(obj: Any) -> str:
    if isinstance(obj, Layout):
        return f"Layout{dict(obj.in_dims)} -> {dict(obj.out_dims)}"
    return str(obj) if type(obj).__str__ is not object.__str__ else repr(obj)


def _family_targets(fam: Any) -> set[str]:
    return {str(f) for f in fam} if isinstance(fam, (tuple, list, set, frozenset)) else {str(fam)}


def _fam_text(fam: Any) -> str:
    return "/".join(sorted(_family_targets(fam)))
