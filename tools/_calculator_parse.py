"""Parsers for AMD's matrix instruction calculator output (``--detail-instruction`` text and the
register-layout tables), used by ``tools/gen_calculator_golden.py``: text in, numpy records out."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np

_ENTRY_RE = re.compile(r"^(-?)v(?:(\d+)|\[(\d+):(\d+)\])\{(\d+)\}(?:\.\[(\d+):(\d+)\])?$")
_HEADER_RE = re.compile(r"^([ABCDK])\[([MKN])\]\[([MKN])\]$")

# --------------------------------------------------------------------------------------------
# --detail-instruction parsing
# --------------------------------------------------------------------------------------------
def _to_value(v: str) -> Any:
    if v in ("True", "False"):
        return v == "True"
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    if re.fullmatch(r"0x[0-9a-fA-F]+", v):
        return int(v, 16)
    return v


def parse_detail(text: str) -> dict[str, Any]:
    """Parse ``--detail-instruction`` output into {top-level fields, sections}.

    Lines at indent 4 are either ``Key: value`` (top-level) or ``Section:``;
    lines at indent 8 are ``key: value`` inside the current section; deeper
    lines continue the previous value (wrapped equations, "through" ranges,
    lane notes) and are appended with a newline.
    """
    lines = text.rstrip("\n").splitlines()
    head = {}
    for line in lines[:2]:
        k, v = line.split(": ", 1)
        head[k] = v
    top: dict[str, str] = {}
    sections: dict[str, dict[str, str]] = {}
    container: dict[str, str] | None = None
    last_key = None
    section = None
    for line in lines[2:]:
        indent = len(line) - len(line.lstrip(" "))
        s = line.strip()
        if indent == 4:
            if s.endswith(":") and ": " not in s:
                section = s[:-1]
                sections[section] = {}
                container, last_key = sections[section], None
            else:
                k, v = s.split(": ", 1)
                top[k] = v
                section, container, last_key = None, top, k
        elif indent == 8 and ": " in s and section is not None:
            k, v = s.split(": ", 1)
            sections[section][k] = v
            container, last_key = sections[section], k
        else:
            if container is None or last_key is None:
                raise ValueError(f"unexpected detail line: {line!r}")
            container[last_key] += "\n" + s
    return {"header": head, "top": top, "sections": sections}


def normalise_detail(parsed: dict[str, Any]) -> dict[str, Any]:
    """Pick the well-known fields out of a parsed detail text."""
    top, sec = parsed["top"], parsed["sections"]
    d: dict[str, Any] = {}
    d["mnemonic_printed"] = parsed["header"]["Instruction"]
    d["encoding"] = top.get("Encoding")
    d["opcode_vop3p"] = _to_value(top["VOP3P Opcode"]) if "VOP3P Opcode" in top else None
    d["opcode_vop3p_mai"] = _to_value(top["VOP3P-MAI Opcode"]) if "VOP3P-MAI Opcode" in top else None
    dims = sec["Matrix Dimensions"]
    d["m"], d["n"], d["k"] = int(dims["M"]), int(dims["N"]), int(dims["K"])
    d["blocks"] = int(dims.get("blocks", 1))
    d["blocks_printed"] = "blocks" in dims
    ex = sec["Execution statistics"]
    op_name = "FLOPs" if "FLOPs" in ex else "Ops"
    d["op_name"] = op_name
    d["ops"] = int(ex[op_name])
    d["cycles"] = int(ex["Execution cycles"])
    per_cu = [k for k in ex if k.startswith(op_name + "/") and k.endswith("/cycle")]
    d["ops_per_cu_per_cycle"] = int(ex[per_cu[0]]) if per_cu else None
    d["compute_unit_name"] = per_cu[0].split("/")[1] if per_cu else None
    d["valu_coexec"] = _to_value(ex["Can co-execute with VALU"])
    d["valu_coexec_cycles"] = _to_value(ex["VALU co-execution cycles possible"]) if (
        "VALU co-execution cycles possible" in ex) else None
    gprs: dict[str, dict[str, int]] = {}
    align = None
    for name, body in sec.items():
        m = re.fullmatch(r"(?:Wave(\d+) )?[Rr]egister usage", name)
        if not m:
            continue
        wave = f"w{m.group(1) or 64}"
        gprs[wave] = {}
        for key, val in body.items():
            mm = re.fullmatch(r"GPRs required for ([A-D])", key)
            if mm:
                gprs[wave][mm.group(1)] = int(val)
            elif key == "GPR alignment requirement":
                align = int(val.split()[0])
    d["gprs"] = gprs
    d["gpr_alignment_bytes"] = align
    types = sec.get("Register data types", {})
    d["data_types"] = dict(types)
    enc = [s for s in sec if s.endswith("register encoding")]
    d["register_encoding"] = dict(sec[enc[0]]) if enc else {}
    d["sparse"] = "Compression index field" in d["register_encoding"]
    d["register_capabilities"] = {k: _to_value(v) for k, v in sec.get("Register capabilities", {}).items()}
    d["register_modifiers_printed"] = {k: _to_value(v) for k, v in sec.get("Register modifiers", {}).items()}
    d["element_to_register_equations"] = {
        s: dict(b) for s, b in sec.items() if "matrix element to register mapping" in s.lower()}
    d["register_to_element_equations"] = {
        s: dict(b) for s, b in sec.items() if "register to matrix element mapping" in s.lower()}
    return d


# --------------------------------------------------------------------------------------------
# --register-layout --csv parsing
# --------------------------------------------------------------------------------------------
def parse_entry(text: str) -> tuple[bool, int, int, int, int]:
    """Parse one printed register entry -> (negated, vgpr, lane, bit_lo, bit_hi)."""
    m = _ENTRY_RE.match(text)
    if not m:
        raise ValueError(f"unparseable register entry {text!r}")
    neg, single, hi_reg, lo_reg, lane, bhi, blo = m.groups()
    if single is not None:
        vgpr, width = int(single), 32
    else:
        vgpr, width = int(lo_reg), 32 * (int(hi_reg) - int(lo_reg) + 1)
    if blo is not None:
        lo, hi = int(blo), int(bhi)
    else:
        lo, hi = 0, width - 1
    shift = lo // 32
    return bool(neg), vgpr + shift, int(lane), lo - 32 * shift, hi - 32 * shift


def parse_register_layout(text: str, nblocks: int) -> tuple[np.ndarray, bool, set]:
    """Parse ``-R -c`` output into an (N, 7) int array of records.

    Returns (records, any_negated, set of printed block numbers).
    """
    lines = text.rstrip("\n").splitlines()
    assert lines[0].startswith("Architecture: ") and lines[1].startswith("Instruction: "), lines[:2]
    blocks = [0]
    cols: list[int] | None = None
    recs: list[tuple[int, ...]] = []
    negated = False
    printed_blocks: set = set()
    for line in lines[2:]:
        if line.startswith("Block "):
            blocks = [int(line.split()[1])]
            printed_blocks.update(blocks)
            continue
        if line.startswith("Blocks "):
            blocks = [int(x) for x in line[len("Blocks "):].split(",")]
            printed_blocks.update(blocks)
            continue
        cells = line.split(",")
        if _HEADER_RE.match(cells[0]):
            cols = [int(c) for c in cells[1:]]
            continue
        if cols is None:
            raise ValueError(f"data line before header: {line!r}")
        row = int(cells[0])
        assert len(cells) - 1 == len(cols), line
        for col, cell in zip(cols, cells[1:]):
            for entry in cell.split(" "):
                neg, vgpr, lane, lo, hi = parse_entry(entry)
                negated |= neg
                for b in blocks:
                    recs.append((b, row, col, vgpr, lane, lo, hi))
    arr = np.array(recs, dtype=np.int64).reshape(-1, 7)
    return arr, negated, printed_blocks


def sort_records(arr: np.ndarray) -> np.ndarray:
    order = np.lexsort(arr.T[::-1])
    return arr[order]


def records_sha256(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr, dtype="<i4").tobytes()).hexdigest()
