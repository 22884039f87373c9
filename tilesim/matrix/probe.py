"""One-instruction probe kernels: HIP source that calls a row's builtin, for compiler truth.

``probe_source(rows, wave)`` writes one kernel per (row, builtin) into one translation unit, so a
whole target is checked with a single compiler run; ``kernel_mnemonics(isa)`` splits the ISA
back per kernel. Operands are loaded from global pointers so nothing folds away; immediates
are 0 (the no-modifier form).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tilesim.matrix.catalog import ISA_PREFIXES
from tilesim.matrix.instruction import Builtin, MatrixInstruction

__all__ = ["C_TYPES", "c_type", "probe_source", "kernel_mnemonics"]

# our operand type tokens -> C element types (no HIP headers: -nogpuinc)
C_TYPES = {"f32": "float", "f64": "double", "f16": "_Float16", "fp16": "__fp16", "bf16": "__bf16",
           "i16": "short", "i32": "int", "i64": "long", "i8": "char", "bool": "bool"}


def c_type(tok: str) -> tuple[str, str | None]:
    """(type name to use, typedef line or None) for one operand type token like ``v8f32``."""
    m = re.fullmatch(r"v(\d+)(\w+)", tok)
    if not m:
        return C_TYPES[tok], None
    n, base = m.groups()
    name = f"{base}x{n}_t"
    return name, f"typedef {C_TYPES[base]} {name} __attribute__((ext_vector_type({n})));"


def _kernel(idx: int, b: Builtin) -> tuple[str, set[str]]:
    typedefs: set[str] = set()
    ret, td = c_type(b.ret)
    if td:
        typedefs.add(td)
    params, args = [f"{ret}* out"], []
    for a, tok in enumerate(b.args):
        if tok.startswith("imm:"):
            continue
        name, td = c_type(tok)
        if td:
            typedefs.add(td)
        params.append(f"const {name}* p{a}")
        args.append(f"p{a}[t]")
    body = (f'extern "C" __attribute__((global)) void probe_{idx}({", ".join(params)}) {{\n'
            f"  int t = __builtin_amdgcn_workitem_id_x();\n"
            f"  out[t] = {b.call(args)};\n}}\n")
    return body, typedefs


def probe_source(rows: Sequence[MatrixInstruction], wave: int) -> tuple[str, list[MatrixInstruction]]:
    """HIP source with ``probe_<i>`` calling the wave-``wave`` builtin of ``rows[i]`` (rows without one are skipped)."""
    kept, bodies, typedefs = [], [], set()
    for row in rows:
        b = row.builtin_for(wave) if wave in row.wave_sizes else None
        if b is None:
            continue
        body, tds = _kernel(len(kept), b)
        kept.append(row)
        bodies.append(body)
        typedefs |= tds
    return "\n".join(sorted(typedefs)) + "\n\n" + "\n".join(bodies), kept


def kernel_mnemonics(isa: str, prefixes: tuple[str, ...] = ISA_PREFIXES) -> dict[int, list[str]]:
    """``{i: [matrix mnemonics in probe_i]}`` from an ISA listing."""
    out: dict[int, list[str]] = {}
    current = None
    pat = re.compile(r"^\s*((?:%s)\w*)\s" % "|".join(prefixes))
    for line in isa.splitlines():
        m = re.match(r"^probe_(\d+):", line)
        if m:
            current = int(m.group(1))
            out[current] = []
            continue
        if line.startswith(".Lfunc_end"):
            current = None
        if current is not None:
            mm = pat.match(line)
            if mm:
                out[current].append(mm.group(1))
    return out
