"""Check a Gluon/Triton layout against the hardware: does it hold, lane for lane and register for
register, what one matrix instruction reads (A, B) or writes (C/D) on a target?

A Gluon layout maps ``(register, lane, warp[, block]) -> (dim0, dim1)``; an instruction's operand
layout (:meth:`tilesim.matrix.instruction.MatrixInstruction.layout`) maps ``(lane, slot) ->
(block, row, col)``. :func:`check_layout` takes warp 0's registers for one instruction tile (the
operand's ``M x K``, ``K x N`` or ``M x N`` corner of the tensor), calls them slots, and compares
the two element by element. The answer is a :class:`~tilesim.frameworks.verdict.LayoutCheck`
(``match``, ``match_k_permuted``, ``mismatch`` or ``rejected``; see :mod:`tilesim.frameworks.verdict`,
shared with :func:`tilesim.frameworks.check_index_maps`). Triton's dot operands with equal
``k_width`` share one k order, which is why ``match_k_permuted`` counts as a match; ``rejected`` is,
e.g., a wave64 CDNA ``AMDMFMALayout`` on a wave32 RDNA target that has no MFMA.

A spec is a Gluon spec object (:mod:`tilesim.frameworks.gluon`), a :class:`Layout` with those dims,
a string such as ``"AMDMFMALayout(version=3, instr_shape=[32, 32, 8], transposed=False,
warps_per_cta=[1, 1])"`` (parsed with :mod:`ast`: only the spec constructors and literals, never
evaluated), the text Triton prints (``#ttg.amd_mfma<{...}>`` or a ``tensor<64x64xf32, #ttg...>`` type, read by
:mod:`tilesim.frameworks.ttg_text`), a JSON object (``{"layout": "AMDMFMALayout", ...}`` with a nested ``"parent"``, or
Triton's printed bases ``{"bases": {"register": ..., "lane": ..., "warp": ..., "block": ...},
"shape": [...]}``), or the path of a ``.json`` file holding one.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tilesim.errors import LayoutError, TilesimError, choices
from tilesim.files import check_keys, read_input, strict_json
from tilesim.frameworks.gluon import SPECS, DistributedLinearLayout
from tilesim.frameworks.ttg_text import ELEMENT_TYPES, looks_like_ttg, parse_ttg
from tilesim.frameworks.verdict import LayoutCheck, verdict
from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog import instructions, lookup
from tilesim.targets import get_target

__all__ = ["check_layout", "LayoutCheck", "parse_spec"]

_MAX_SPEC_BYTES = 1 << 20  # a spec is a few hundred bytes; Triton's bases for a big tensor a few KB
_MAX_DEPTH = 16  # a layout, its parent, a list of bases, a basis: 4-6 levels
# per Gluon class: the instruction kind it stands for, the wave size it is written for, and in words
_KIND = {"AMDMFMALayout": ("mfma", 64, "MFMA, a wave64 CDNA instruction"),
         "AMDWMMALayout": ("wmma", 32, "WMMA, a wave32 RDNA/gfx1250 instruction"),
         "NVMMADistributedLayout": ("mma_sync", 32, "mma.sync, an NVIDIA warp instruction")}


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
        allowed = set(_spec_classes())
        if node.func.id not in allowed:
            raise LayoutError(f"unknown layout {node.func.id!r}; valid: {choices(sorted(allowed))}")
        if any(k.arg is None for k in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
            raise LayoutError("layout spec: * and ** arguments are not allowed")
        return _Call(node.func.id, tuple(_literal(a, text) for a in node.args),
                     tuple((k.arg, _literal(k.value, text)) for k in node.keywords))
    seg = ast.get_source_segment(text, node) or type(node).__name__
    raise LayoutError(f"layout spec: {seg!r} is not allowed; use integers, True/False/None, lists and "
                      "layout constructors")


@dataclass(frozen=True)
class _Call:
    """A constructor call read from spec text: ``name(*args, **dict(kwargs))``."""

    name: str
    args: tuple
    kwargs: tuple


def _depth(tree: Any, limit: int) -> None:
    """Refuse JSON nested deeper than any layout spec is (a parent of a parent of bases lists), before
    recursing into it: deep nesting is an attack on the stack, not a layout."""
    todo = [(tree, 0)]
    while todo:
        x, d = todo.pop()
        if d > limit:
            raise LayoutError(f"layout spec is nested more than {limit} levels deep; a spec is a few levels "
                              "(a layout, its parent, lists of bases)")
        if isinstance(x, dict):
            todo += [(v, d + 1) for v in x.values()]
        elif isinstance(x, (list, tuple)):
            todo += [(v, d + 1) for v in x]


def _build(tree: Any) -> Any:
    """A parsed constructor call or JSON object -> a Gluon spec object."""
    if isinstance(tree, list):
        return [_build(x) for x in tree]
    classes = _spec_classes()
    if isinstance(tree, _Call):
        name, args, kwargs = tree.name, [_build(a) for a in tree.args], {k: _build(v) for k, v in tree.kwargs}
    elif isinstance(tree, dict):
        if "bases" in tree:  # Triton's printed form: {"bases": {...}, "shape": [...]}
            return _from_bases_json(tree)
        name = tree.get("layout")  # JSON form: {"layout": name, field: value, ...}
        args, kwargs = [], {str(k): _build(v) for k, v in tree.items() if k != "layout"}
    else:
        return tree
    if not isinstance(name, str) or name not in classes:
        raise LayoutError(f"unknown layout {name!r}"[:120] + f"; valid: {choices(sorted(classes))}")
    try:
        return classes[name](*args, **kwargs)
    except TilesimError:
        raise
    except (TypeError, ValueError) as e:
        raise LayoutError(f"{name}: {e}"[:300]) from None


def _json(text: str, where: str) -> Any:
    try:
        return strict_json(text, where, LayoutError)  # a key twice is refused, not the last kept
    except json.JSONDecodeError as e:
        raise LayoutError(f"{where} is not JSON: {e}") from None
    except RecursionError:
        raise LayoutError(f"{where} is nested too deeply to be a layout spec") from None


def parse_spec(spec: Any) -> Any:
    """A Gluon spec object from a string, a JSON object or a ``.json`` path; other values pass through."""
    if isinstance(spec, Path) or (isinstance(spec, str) and spec.strip().endswith(".json")):
        path = Path(spec.strip() if isinstance(spec, str) else spec)
        spec = _json(read_input(path, "layout spec file", _MAX_SPEC_BYTES, LayoutError), f"layout spec file {str(path)!r}")
    elif isinstance(spec, str) and len(spec) > _MAX_SPEC_BYTES:
        raise LayoutError(f"layout spec text has {len(spec)} characters; a spec is at most {_MAX_SPEC_BYTES}")
    if isinstance(spec, str) and spec.lstrip().startswith("{"):  # JSON text on the command line
        spec = _json(spec, f"layout spec {spec.strip()[:80]!r}")
    if isinstance(spec, (dict, list)):
        _depth(spec, _MAX_DEPTH)
    if isinstance(spec, dict):
        if "spec" in spec and isinstance(spec["spec"], (dict, str)) and "bases" not in spec:
            # {"spec": ...} wrapper (the golden files' form, minus the bases); nothing beside it is read
            spec = check_keys(spec, "layout spec JSON wrapper", ("spec",), (), LayoutError)["spec"]
        if isinstance(spec, dict):
            if "layout" not in spec and "bases" not in spec:
                raise LayoutError(f"layout spec JSON needs a \"layout\" key (a class name) or \"bases\"; got keys "
                                  f"{sorted(spec)}")
            return _build(spec)
    if isinstance(spec, str) and looks_like_ttg(spec):  # as Triton prints it: #ttg.…<{…}> or tensor<…, #ttg…>
        return parse_ttg(spec).layout
    if isinstance(spec, str):
        text = spec.strip()
        try:
            node = ast.parse(text, mode="eval").body
        except SyntaxError as e:
            raise LayoutError(f"layout spec {text[:80]!r} is not a constructor call: {e.msg}") from None
        except ValueError as e:  # NUL bytes, lone surrogates
            raise LayoutError(f"layout spec {ascii(text[:80])} is not a constructor call: {e}"[:300]) from None
        except (RecursionError, MemoryError):
            raise LayoutError(f"layout spec {text[:80]!r} is nested too deeply to be a layout spec") from None
        if not isinstance(node, ast.Call):
            raise LayoutError(f"layout spec {text[:80]!r} must be a call such as AMDMFMALayout(...)")
        return _build(_literal(node, text))
    return spec


def _from_bases_json(doc: dict) -> DistributedLinearLayout:
    """Triton's printed form ``{"bases": {"register": ..., "lane": ..., "warp": ..., "block": ...}, "shape": [...]}``."""
    b = doc["bases"]
    if "shape" in doc:  # a key not read (a misspelt "shpae", an "order") is refused, never ignored
        check_keys(doc, "bases JSON", ("bases", "shape"), (), LayoutError)
    if not isinstance(b, dict) or "shape" not in doc:
        raise LayoutError("bases JSON needs {\"bases\": {\"register\": ..., \"lane\": ...}, \"shape\": [...]}")
    unknown = sorted(set(map(str, b)) - {"register", "lane", "warp", "block"})
    if unknown:
        raise LayoutError(f"bases JSON: unknown hardware dim {unknown[0]!r}; valid: register, lane, warp, block")
    return DistributedLinearLayout(b.get("register", []), b.get("lane", []), b.get("warp", []), b.get("block", []),
                                   doc["shape"])


def _tensor_elem(spec: Any) -> str | None:
    """The element type of a ``tensor<…>``/``!ttg.memdesc<…>`` spec text, as Triton prints it."""
    return parse_ttg(spec).element_type if isinstance(spec, str) and looks_like_ttg(spec) else None


def _operand_dtype(spec: Any, implied: str | None, dtype: str | None) -> str:
    """The A/B element type: the dot operand tensor's own (a contradicting ``dtype`` is refused, as an
    ignored element type let an i8 operand be checked as f16's and MATCH), else ``dtype``, else f16."""
    elem = _tensor_elem(spec) if implied else None
    if elem is None:
        return dtype or "f16"
    mine = ELEMENT_TYPES.get(elem)
    if mine is None:
        if dtype is None:
            raise LayoutError(f"tensor element type {elem[:40]!r} is not one tilesim maps to an A/B type "
                              f"({choices(sorted(ELEMENT_TYPES))}); pass --dtype")
        return dtype
    if dtype is not None and dtype != mine:
        raise LayoutError(f"--dtype {dtype} contradicts the tensor's element type {elem} ({mine})")
    return mine


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


def check_layout(spec: Any, arch: str, *, operand: str | None = None, instr: str | None = None,
                 dtype: str | None = None, shape: Any = None, triton_version: str | None = None) -> LayoutCheck:
    """Does ``spec``, as ``operand`` of one instruction on ``arch``, hold what the instruction reads/writes?

    ``operand`` defaults to the spec's own (A/B for a ``DotOperandLayout``, else C); ``instr`` defaults
    to the instruction the spec's kind, ``instr_shape`` and ``dtype`` (the A/B element type) name;
    ``dtype`` defaults to the element type of a dot operand's ``tensor<…>`` type, else f16.
    ``shape`` is the tensor shape to lay out (default: one instruction tile); its corner is compared.
    ``triton_version`` ("3.6" or "3.9") picks whose register numbering to use where they differ.
    Raises ``TilesimError`` on bad input; a layout that does not fit is an answer, not an error.
    """
    target = get_target(arch)
    obj = parse_spec(spec)
    text = str(spec).strip() if isinstance(spec, str) and not spec.strip().endswith(".json") else _spec_text(obj)
    cls, kind, implied, instr_shape, result = _describe(obj)
    dtype = _operand_dtype(spec, implied, dtype)
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
        _, wave, words = _KIND[type(result).__name__]
        what = f"{cls}" + (f" (parent {type(result).__name__})" if result is not obj else "")
        return rejected(f"{what} is the layout of {words}; {target.name} "
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
    if implied and instr is not None and _tensor_elem(spec) and row.types[0] != dtype:
        raise LayoutError(f"{row.mnemonic} reads {row.types[0]} operands; the layout is of a {dtype} tensor")
    if row.blocks != 1:
        raise LayoutError(f"{row.mnemonic} computes {row.blocks} blocks at once; check-layout compares single-block "
                          "instructions only")
    if kind is not None and row.kind != kind:
        _, wave, words = _KIND[type(result).__name__]
        if not (kind == "wmma" and row.kind == "swmmac"):
            return rejected(f"{cls} is the layout of {words}; {row.mnemonic} is a {row.kind} "
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
    if cls == "DistributedLinearLayout":  # for its own shape; its corner is compared
        full = obj.to_layout(tuple(obj.shape), triton_version)
    elif hasattr(obj, "to_linear"):
        full = obj.to_layout(shape, triton_version)
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
    dec = _tile(full, rows_, cols_, transposed).with_elem_bits(hw.elem_bits or 32)
    return verdict(dec, hw, op_key, mnemonic=row.mnemonic, kind=row.kind, notes=notes, **base)


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
