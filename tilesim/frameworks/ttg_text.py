"""Read the layouts Triton prints: ``#ttg.blocked<{...}>``, ``#ttg.amd_mfma<{...}>`` … and the tensor and
memdesc types that carry them (``tensor<64x64xf32, #ttg...>``, ``!ttg.memdesc<...>``).

A small tokenizer and a recursive-descent reader over the subset of MLIR attribute syntax that
Triton 3.6 and 3.9 print for Gluon layouts; nothing is evaluated. Every token must be understood:
an unknown layout name, an unknown or repeated key, a missing key or a stray character raises
:class:`TtgParseError` (a :class:`~tilesim.errors.LayoutError`) naming the token and its position.

The result is the tilesim spec (:mod:`tilesim.frameworks.gluon`): ``#ttg.amd_wmma`` printed by
Triton 3.9 (``ctaLayout = {register = ..., warp = ...}``) becomes an ``AMDWMMALayout`` with
``warp_bases``/``reg_bases`` and ``triton_version="3.9"``; printed by Triton 3.6 (``warpsPerCTA``,
``tilesPerWarp``) it becomes one with ``triton_version="3.6"`` — a 3.6 layout is never numbered as
3.9 numbers it without saying so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tilesim.errors import LayoutError, choices
from tilesim.frameworks.gluon import (
    AMDMFMALayout,
    AMDWMMALayout,
    BlockedLayout,
    DistributedLinearLayout,
    DotOperandLayout,
    NVMMADistributedLayout,
    SliceLayout,
)
from tilesim.frameworks.gluon_shared import NVMMASharedLayout, SharedLinearLayout, SwizzledSharedLayout

__all__ = ["TtgParseError", "TtgType", "parse_ttg", "parse_ttg_layout", "looks_like_ttg"]

_MAX_TEXT = 1 << 20
_MAX_DEPTH = 32


class TtgParseError(LayoutError):
    """Printed Triton layout text that tilesim does not understand; names the token and its position."""

    def __init__(self, message: str, token: str = "", position: int = -1) -> None:
        super().__init__(message[:400])
        self.token = token
        self.position = position


# --------------------------------------------------------------------------- tokens
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<attr>\#ttg\.[A-Za-z_][A-Za-z0-9_]*)
  | (?P<memdesc>!ttg\.memdesc)
  | (?P<dims>(?:\d+x)+[A-Za-z][A-Za-z0-9]*)
  | (?P<int>-?\d+)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[<>{}\[\],=])
""", re.VERBOSE)


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    pos: int


def _tokens(text: str) -> list[_Tok]:
    out, i = [], 0
    while i < len(text):
        m = _TOKEN.match(text, i)
        if not m:
            raise TtgParseError(f"Triton layout text: unexpected character {text[i]!r} at position {i}",
                                text[i], i)
        if m.lastgroup != "ws":
            out.append(_Tok(m.lastgroup or "", m.group(), i))
        i = m.end()
    out.append(_Tok("end", "", len(text)))
    return out


# --------------------------------------------------------------------------- reader
@dataclass(frozen=True)
class _Attr:
    """``#ttg.name<{key = value, ...}, key = value>`` as read (values: int, bool, list, dict, _Attr)."""

    name: str
    fields: tuple[tuple[str, Any, int], ...]  # (key, value, position of the key)
    pos: int


class _Reader:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def fail(self, want: str) -> TtgParseError:
        t = self.tok
        got = "the end of the text" if t.kind == "end" else repr(t.text)
        return TtgParseError(f"Triton layout text: expected {want} at position {t.pos}, got {got}", t.text, t.pos)

    def take(self, text: str) -> _Tok:
        if self.tok.text != text or self.tok.kind not in ("punct", "name"):
            raise self.fail(repr(text))
        self.i += 1
        return self.toks[self.i - 1]

    def at(self, text: str) -> bool:
        return self.tok.text == text and self.tok.kind in ("punct", "name")

    def value(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise self.fail("a shallower value (layouts nest a few levels)")
        t = self.tok
        if t.kind == "int":
            self.i += 1
            return int(t.text)
        if t.kind == "name" and t.text in ("true", "false"):
            self.i += 1
            return t.text == "true"
        if t.kind == "attr":
            return self.attr(depth + 1)
        if self.at("["):
            self.take("[")
            items = []
            while not self.at("]"):
                items.append(self.value(depth + 1))
                if not self.at("]"):
                    self.take(",")
            self.take("]")
            return items
        if self.at("{"):
            return dict((k, v) for k, v, _ in self.entries(depth + 1))
        raise self.fail("a value (an integer, true/false, a [list], a {dict} or a #ttg layout)")

    def entries(self, depth: int) -> list[tuple[str, Any, int]]:
        self.take("{")
        out: list[tuple[str, Any, int]] = []
        while not self.at("}"):
            out.append(self.entry(depth))
            if not self.at("}"):
                self.take(",")
        self.take("}")
        return out

    def entry(self, depth: int) -> tuple[str, Any, int]:
        t = self.tok
        if t.kind != "name":
            raise self.fail("a key such as warpsPerCTA")
        self.i += 1
        self.take("=")
        return t.text, self.value(depth), t.pos

    def attr(self, depth: int = 0) -> _Attr:
        t = self.tok
        if t.kind != "attr":
            raise self.fail("a layout such as #ttg.blocked<{...}>")
        self.i += 1
        self.take("<")
        fields = self.entries(depth + 1)
        while self.at(","):  # trailing parameters outside the braces (shared_linear's alignment)
            self.take(",")
            fields.append(self.entry(depth + 1))
        self.take(">")
        return _Attr(t.text[len("#ttg."):], tuple(fields), t.pos)


# --------------------------------------------------------------------------- attribute -> spec
class _Fields:
    """The keys of one attribute, each used once; what is left over is an error."""

    def __init__(self, a: _Attr) -> None:
        self.name = a.name
        self.pos: dict[str, int] = {}
        self.vals: dict[str, Any] = {}
        for k, v, p in a.fields:
            if k in self.vals:
                raise TtgParseError(f"#ttg.{a.name}: key {k!r} at position {p} is repeated", k, p)
            self.vals[k], self.pos[k] = v, p
        self.at = a.pos

    def get(self, key: str, default: Any = ...) -> Any:
        if key in self.vals:
            return self.vals.pop(key)
        if default is ...:
            raise TtgParseError(f"#ttg.{self.name} at position {self.at}: missing key {key!r}", self.name, self.at)
        return default

    def done(self, valid: tuple[str, ...], unknown_only: bool = False) -> None:
        left = [k for k in self.vals if not unknown_only or k not in valid]
        if left:
            k = left[0]
            raise TtgParseError(f"#ttg.{self.name}: unknown key {k!r} at position {self.pos[k]}; valid: "
                                f"{choices(list(valid))}", k, self.pos[k])


def _as_spec(a: _Attr, rank: int | None, shape: tuple[int, ...] | None = None) -> Any:
    f = _Fields(a)
    build = _BUILDERS.get(a.name)
    if build is None:
        raise TtgParseError(f"unknown Triton layout #ttg.{a.name} at position {a.pos}; valid: "
                            f"{choices(['#ttg.' + n for n in _BUILDERS])}", "#ttg." + a.name, a.pos)
    keys, fn = build
    f.done(keys, unknown_only=True)  # an unknown key is named before anything is built
    spec = fn(f, rank, shape)
    f.done(keys)
    return spec


def _parent(f: _Fields, rank: int | None, shape: tuple[int, ...] | None = None) -> Any:
    p = f.get("parent")
    if not isinstance(p, _Attr):
        at = f.pos.get("parent", f.at)
        raise TtgParseError(f"#ttg.{f.name}: parent at position {at} must be a #ttg layout, got {p!r}"[:300],
                            "parent", at)
    return _as_spec(p, rank, shape)


def _cga(f: _Fields) -> Any:
    return f.get("CGALayout", [])


def _wmma(f: _Fields, rank: int | None, shape: Any) -> AMDWMMALayout:
    common = {"version": f.get("version"), "transposed": f.get("isTranspose"), "instr_shape": f.get("instrShape", None),
              "cga_layout": _cga(f)}
    if "warpsPerCTA" in f.vals:  # Triton 3.6's form
        return AMDWMMALayout(warps_per_cta=f.get("warpsPerCTA"), tiles_per_warp=f.get("tilesPerWarp", None),
                             triton_version="3.6", **common)
    cta = f.get("ctaLayout")
    if not isinstance(cta, dict) or set(cta) - {"register", "warp"}:
        raise TtgParseError(f"#ttg.amd_wmma: ctaLayout must be {{register = [...], warp = [...]}}, got {cta!r}"[:300],
                            "ctaLayout", f.pos.get("ctaLayout", f.at))
    bases = [*cta.get("warp", []), *cta.get("register", []), *common["cga_layout"]]
    r = len(bases[0]) if bases and isinstance(bases[0], list) else (rank or 2)
    return AMDWMMALayout(warp_bases=cta.get("warp", []), reg_bases=cta.get("register", []), rank=r,
                         warps_per_cta=None, triton_version="3.9", **common)


def _linear(f: _Fields, rank: int | None, shape: tuple[int, ...] | None) -> DistributedLinearLayout:
    b = {k: f.get(k, []) for k in ("register", "lane", "warp", "block")}
    return DistributedLinearLayout(b["register"], b["lane"], b["warp"], b["block"], shape or _implied(b.values(), rank))


def _implied(groups: Any, rank: int | None) -> tuple[int, ...]:
    """Triton's implied shape of explicit bases: each dim up to the next power of two above its largest entry."""
    vecs = [v for g in groups for v in g if isinstance(v, list)]
    r = len(vecs[0]) if vecs else (rank or 1)
    return tuple(1 << max((int(v[d]).bit_length() for v in vecs if len(v) == r and isinstance(v[d], int)), default=0)
                 for d in range(r))


_BUILDERS: dict[str, tuple[tuple[str, ...], Any]] = {
    "blocked": (("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order", "CGALayout"),
                lambda f, r, s: BlockedLayout(f.get("sizePerThread"), f.get("threadsPerWarp"), f.get("warpsPerCTA"),
                                           f.get("order"), _cga(f))),
    "slice": (("dim", "parent"), lambda f, r, s: SliceLayout(f.get("dim"), _parent(f, None if r is None else r + 1))),
    "dot_op": (("opIdx", "parent", "kWidth"),
               lambda f, r, s: DotOperandLayout(f.get("opIdx"), _parent(f, r), f.get("kWidth", 0))),
    "amd_mfma": (("version", "warpsPerCTA", "instrShape", "isTransposed", "tilesPerWarp", "elementBitWidth",
                  "CGALayout"),
                 lambda f, r, s: AMDMFMALayout(f.get("version"), f.get("instrShape"), f.get("isTransposed"),
                                            f.get("warpsPerCTA"), f.get("elementBitWidth", None),
                                            f.get("tilesPerWarp", None), _cga(f))),
    "amd_wmma": (("version", "isTranspose", "ctaLayout", "warpsPerCTA", "tilesPerWarp", "instrShape", "CGALayout"),
                 _wmma),
    "nvidia_mma": (("versionMajor", "versionMinor", "warpsPerCTA", "instrShape", "CGALayout"),
                   lambda f, r, s: NVMMADistributedLayout([f.get("versionMajor"), f.get("versionMinor")],
                                                       f.get("warpsPerCTA"), f.get("instrShape"), _cga(f))),
    "linear": (("register", "lane", "warp", "block"), lambda f, r, s: _linear(f, r, s)),
    # what Triton prints for explicit bases that are not a permutation (tilesim refuses those, as Triton's
    # conversion does)
    "generic_linear": (("register", "lane", "warp", "block"), lambda f, r, s: _linear(f, r, s)),
    "swizzled_shared": (("vec", "perPhase", "maxPhase", "order", "CGALayout"),
                        lambda f, r, s: SwizzledSharedLayout(f.get("vec"), f.get("perPhase"), f.get("maxPhase"),
                                                          f.get("order"), _cga(f))),
    "nvmma_shared": (("swizzlingByteWidth", "transposed", "elementBitWidth", "rank", "fp4Padded", "CGALayout"),
                     lambda f, r, s: NVMMASharedLayout(f.get("swizzlingByteWidth"), f.get("elementBitWidth"),
                                                    f.get("rank", r or 2), f.get("transposed", False),
                                                    f.get("fp4Padded", False), _cga(f))),
    "shared_linear": (("offset", "block", "alignment"),
                      lambda f, r, s: SharedLinearLayout(f.get("offset"), f.get("block", []), f.get("alignment", 16))),
}


# --------------------------------------------------------------------------- entry points
# MLIR element types as Triton prints them -> tilesim's A/B element types (Triton's i8 is signless;
# its MFMA/WMMA lowering reads it as signed)
ELEMENT_TYPES = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "i8": "i8",
                 "f8E4M3FNUZ": "fp8_fnuz", "f8E5M2FNUZ": "bf8_fnuz", "f8E4M3FN": "fp8_ocp", "f8E5M2": "bf8_ocp"}


@dataclass(frozen=True)
class TtgType:
    """A parsed ``tensor<...>`` / ``!ttg.memdesc<...>`` (or a bare attribute: ``shape`` None)."""

    layout: Any
    shape: tuple[int, ...] | None = None
    element_type: str | None = None


def looks_like_ttg(text: str) -> bool:
    t = text.lstrip()
    return t.startswith(("#ttg.", "tensor<", "!ttg."))


def parse_ttg(text: str) -> TtgType:
    """A layout as Triton prints it — a bare ``#ttg.…<{…}>`` attribute or a ``tensor<…>`` /
    ``!ttg.memdesc<…>`` type holding one — as a tilesim spec (with the type's shape and element type)."""
    if not isinstance(text, str):
        raise TtgParseError(f"Triton layout text must be a string, got {type(text).__name__}")
    if len(text) > _MAX_TEXT:
        raise TtgParseError(f"Triton layout text has {len(text)} characters; at most {_MAX_TEXT}")
    r = _Reader(text)
    shape = elem = None
    t = r.tok
    if t.kind == "name" and t.text == "tensor" or t.kind == "memdesc":
        r.i += 1
        r.take("<")
        d = r.tok
        if d.kind != "dims":
            raise r.fail("a shape and element type such as 64x64xf32")
        r.i += 1
        *dims, elem = d.text.split("x")
        shape = tuple(int(x) for x in dims)
        if any(not 1 <= x < 2 ** 31 for x in shape):  # Triton prints no such tensor: never ignored
            raise TtgParseError(f"tensor shape {d.text[:60]} at position {d.pos}: each size must be 1 to 2**31-1",
                                d.text[:60], d.pos)
        r.take(",")
        a = r.attr()
        if t.kind == "memdesc":  # the memory space, mutability and alloc shape follow; only these are known
            while r.at(","):
                r.take(",")
                x = r.tok
                if x.kind == "attr" and x.text == "#ttg.shared_memory" or x.kind == "name" and x.text == "mutable":
                    r.i += 1
                elif x.kind == "dims" or x.kind == "int":
                    r.i += 1
                else:
                    raise r.fail("#ttg.shared_memory, mutable or an alloc shape")
        r.take(">")
    else:
        a = r.attr()
    if r.tok.kind != "end":
        raise r.fail("the end of the layout text")
    try:
        spec = _as_spec(a, len(shape) if shape else None, shape)
    except TtgParseError:
        raise
    except LayoutError as e:  # the values were read, the spec refused them: say where
        raise TtgParseError(f"#ttg.{a.name} at position {a.pos}: {e}", "#ttg." + a.name, a.pos) from None
    except (TypeError, ValueError) as e:
        raise TtgParseError(f"#ttg.{a.name} at position {a.pos}: {e}"[:300], "#ttg." + a.name, a.pos) from None
    return TtgType(spec, shape, elem)


def parse_ttg_layout(text: str) -> Any:
    """Just the spec of :func:`parse_ttg`."""
    return parse_ttg(text).layout
