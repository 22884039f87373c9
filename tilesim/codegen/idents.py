"""User-chosen names (kernel, tensors) as safe C/C++/HIP/CUDA identifiers, and safe comment text.

A program from the DSL or from JSON may name its kernel or tensors anything: a C++ keyword
(``int``, ``new``), a name the generated code already uses (``lane``, ``x``, ``s3``, ``ts_lds``), a
CUDA built-in (``threadIdx``), a reserved spelling (``__x``, ``_X``: C++ [lex.name] reserves any
name containing ``__`` or starting with ``_`` and a capital), non-ASCII letters, or characters that
are no part of an identifier. Such a name could fail to compile, silently alias a local variable,
or inject text into the source.

Rule: a name that is plain ASCII (``[A-Za-z][A-Za-z0-9_]*``), at most 63 characters (C99 5.2.4.1's
significant initial characters), without ``__`` and outside :data:`RESERVED` and the generator's
own name patterns is kept as it is (so ``A``, ``B``, ``C`` and ``gemm`` read as written). Any other
name becomes ``<prefix>_<ascii part>_<8 hex digits of its SHA-256>``: deterministic, distinct for
distinct names, and readable. Names are assigned in order with the kept ones first, and a
collision (two names to one identifier, or a name in ``taken``) is resolved by hashing again, so
the map is one-to-one. ``emit_hip`` passes every word of the generated kernel body as ``taken``
(``_Gen.bind_user_names``), so a local the generator adds later cannot shadow a parameter either.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from tilesim.ir.ops import ELEMENTWISE

__all__ = ["RESERVED", "c_identifiers", "is_safe_identifier", "comment_text"]

_KEYWORDS = """
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class
compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype
default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public
register reinterpret_cast requires restrict return short signed sizeof static static_assert static_cast
struct switch template this thread_local throw true try typedef typeid typename union unsigned using virtual
void volatile wchar_t while xor xor_eq
"""
# CUDA/HIP built-ins and macros that exist without headers, common predefined macros in GNU modes,
# and the entry point; the math functions the prelude calls come from the op table's macros
_PLATFORM = """
threadIdx blockIdx blockDim gridDim warpSize main unix linux i386 NULL assert printf malloc free
"""
_MATH = {fn for e in ELEMENTWISE.values() for m in (e.macro, e.macro64) if m is not None
         for fn in re.findall(r"\b([A-Za-z_]\w*)\s*\(", f"{m.amd} {m.cuda}")}
# names the generated kernel body declares (tilesim/codegen/hip.py), also with a numeric suffix
# (the paired 16-bit loads declare gr0/gc0/ok0/i0 ...): any generated local is in this family
_GENERATED = "lane wave s v lo x gr gc r c off a b t i ok f q"

RESERVED = frozenset((_KEYWORDS + _PLATFORM).split()) | _MATH
_GENERATED_PATTERN = re.compile(r"(?:%s)\d*|ts_.*|TS_.*" % "|".join(_GENERATED.split()), re.S)
_MAX_LEN = 63


def is_safe_identifier(name: object) -> bool:
    """True when ``name`` can be used in the generated source exactly as written."""
    return (isinstance(name, str) and len(name) <= _MAX_LEN and re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) is not None
            and "__" not in name and name not in RESERVED and _GENERATED_PATTERN.fullmatch(name) is None)


def _mangle(name: str, prefix: str, salt: int = 0) -> str:
    ascii_part = re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_")[:32].rstrip("_")
    digest = hashlib.sha256(f"{salt}\0{name}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{prefix}_{ascii_part}_{digest}" if ascii_part else f"{prefix}_{digest}"


def c_identifiers(names: Iterable[str], prefix: str, taken: Iterable[str] = ()) -> dict[str, str]:
    """A one-to-one map from each distinct name to a safe identifier, avoiding ``taken``."""
    names = list(dict.fromkeys(names))
    used = set(taken)
    out: dict[str, str] = {}
    for n in sorted(names, key=lambda n: not is_safe_identifier(n)):  # kept names first: they never move
        ident, salt = (n if is_safe_identifier(n) else _mangle(str(n), prefix)), 0
        while ident in used:
            salt += 1
            ident = _mangle(str(n), prefix, salt)
        used.add(ident)
        out[n] = ident
    return out


def comment_text(text: object) -> str:
    """``text`` for a ``//`` comment: printable ASCII only (no newline or trailing backslash can end
    the comment early or continue it onto the next line)."""
    s = str(text)
    if re.fullmatch(r"[ -\[\]-~]*", s):  # printable ASCII without a backslash: as it is
        return s
    return ascii(s)
