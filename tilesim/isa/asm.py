"""AMDGPU assembly → a program of instructions, with the kernel descriptor.

Why assembly and not the code object: clang already prints, for every instruction, its mnemonic
(encoding suffix included: ``_e32``/``_e64``/``_dpp``), its operands in the syntax LLVM's MC layer
defines, and its modifiers (``neg_lo:[1,1,0]``, ``offset:16``, ``clamp``) — so no binary decoder
has to be written and checked, and each instruction keeps its source line for error messages. The
same ``-S`` output carries the kernel descriptor directives (``.amdhsa_user_sgpr_count``,
``.amdhsa_system_vgpr_workitem_id``, ``.amdhsa_group_segment_fixed_size``, float modes …) that say
how ROCm launches the kernel, and the AMDGPU metadata that :func:`tilesim.hw.amd.kernarg_metadata`
reads. Assembly is exactly what :func:`tilesim.hw.offline.compile_hip` returns and caches.

The parser is strict: operand spellings it does not know raise :class:`IsaError` with the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tilesim.errors import TilesimError

__all__ = ["IsaError", "Reg", "Imm", "Label", "Instr", "Kernel", "parse", "kernel_names"]


class IsaError(TilesimError):
    """An instruction, operand form or descriptor setting the emulator does not model, or a fault
    (out-of-bounds access, deadlock) while emulating. The message names the mnemonic, the target
    and the source line."""


@dataclass(frozen=True)
class Reg:
    """A register operand: ``file`` is ``s`` (SGPRs, VCC, EXEC, M0, TTMPs, NULL by hardware number),
    ``v`` or ``a``; ``count`` consecutive 32-bit registers. ``half`` is ``l``/``h`` for a true16
    operand (``v8.l``). ``neg``/``abs`` are source modifiers."""

    file: str
    index: int
    count: int = 1
    half: str = ""
    neg: bool = False
    abs: bool = False
    sext: bool = False  # SDWA sext(): sign-extend the selected field


@dataclass(frozen=True)
class Imm:
    """An inline constant or literal as printed: integer, or a float literal (``1.0``, ``-0.5``)."""

    text: str
    value: int | float
    neg: bool = False
    abs: bool = False

    @property
    def is_float(self) -> bool:
        return isinstance(self.value, float)


@dataclass(frozen=True)
class Label:
    name: str


@dataclass(frozen=True)
class Sym:
    """A PC-relative relocation, ``NAME@rel32@lo+12``: half ``part`` of the symbol's address minus
    the PC that the paired ``s_getpc_b64`` returned (the printed addend compensates for encoding
    offsets, which the emulator's own PC model does not need)."""

    name: str
    part: str  # "lo" | "hi"
    addend: int


Operand = Reg | Imm | Label | Sym


@dataclass(frozen=True)
class Instr:
    mnemonic: str
    operands: tuple[Operand, ...]
    mods: tuple[tuple[str, str], ...]  # trailing modifiers: ("offset", "16"), ("clamp", "")
    line: int
    text: str
    raw: str = ""  # operand text as printed (timing instructions keep theirs unparsed)

    def mod(self, name: str, default: str | None = None) -> str | None:
        return next((v for k, v in self.mods if k == name), default)


@dataclass(frozen=True)
class Kernel:
    name: str
    target: str
    instrs: tuple[Instr | tuple[Instr, Instr], ...]  # a pair is a VOPD dual issue
    labels: tuple[tuple[str, int], ...]
    descriptor: tuple[tuple[str, int], ...]
    data: tuple[tuple[str, bytes], ...] = ()  # constant objects the code refers to (.rodata tables)

    def desc(self, key: str, default: int | None = None) -> int | None:
        return dict(self.descriptor).get(key, default)


_SPECIAL = {"vcc": (106, 2), "vcc_lo": (106, 1), "vcc_hi": (107, 1), "m0": (124, 1), "null": (125, 1),
            "exec": (126, 2), "exec_lo": (126, 1), "exec_hi": (127, 1)}
_REG = re.compile(r"^(s|v|a|ttmp)(?:(\d+)|\[(\d+):(\d+)\])(?:\.([lh]))?$")
_SYM = re.compile(r"^([.\w$]+)@rel32@(lo|hi)([+-]\d+)?$")
_INT = re.compile(r"^-?(?:0x[0-9a-fA-F]+|\d+)$")
_FLOAT = re.compile(r"^-?\d+\.\d*(?:e[-+]?\d+)?$")
# instructions whose operands are timing/scheduling text, not registers
_RAW = ("s_waitcnt", "s_wait_", "s_delay_alu", "s_clause", "s_nop", "s_setprio", "s_sleep", "global_inv",
        "buffer_inv", "buffer_wbl2", "s_barrier_signal", "s_barrier_wait", "s_inst_prefetch", "s_sendmsg")
_TIMING_ONLY = frozenset({"s_code_end"})


def _split_top(s: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _operand(tok: str, where: str) -> Operand:
    neg = absm = sext = False
    t = tok
    if t.startswith("sext(") and t.endswith(")"):
        sext, t = True, t[5:-1]
    if t.startswith("neg(") and t.endswith(")"):
        neg, t = True, t[4:-1]
    if t.startswith("abs(") and t.endswith(")"):
        absm, t = True, t[4:-1]
    if t.startswith("-") and not (_INT.match(t) or _FLOAT.match(t)):
        neg, t = True, t[1:]
    if t.startswith("|") and t.endswith("|"):
        absm, t = True, t[1:-1]
    if t == "off":  # no address register (global: 64-bit VGPR address; scratch: no VGPR/SGPR offset)
        return Reg("off", 0, 0)
    if t in _SPECIAL:
        i, n = _SPECIAL[t]
        return Reg("s", i, n, "", neg, absm)
    m = _REG.match(t)
    if m:
        f, one, lo, hi, half = m.groups()
        lo_i = int(one if one is not None else lo)
        n = 1 if one is not None else int(hi) - lo_i + 1
        if f == "ttmp":
            return Reg("s", 108 + lo_i, n, half or "", neg, absm)
        return Reg(f, lo_i, n, half or "", neg, absm, sext)
    if sext:
        raise IsaError(f"{where}: sext() on {t!r} is not modelled")
    m = _SYM.match(t)
    if m:
        return Sym(m.group(1), m.group(2), int(m.group(3) or 0))
    if _INT.match(t):
        v = int(t, 0)
        return Imm(tok, v, neg, absm)
    if _FLOAT.match(t):
        return Imm(tok, float(t), neg, absm)
    if re.match(r"^\.?[A-Za-z_][\w.$]*$", t):
        return Label(t)
    raise IsaError(f"{where}: operand {tok!r} is not a form the emulator reads")


def _mods(tokens: list[str], where: str) -> tuple[tuple[str, str], ...]:
    out = []
    for tok in tokens:
        k, _, v = tok.partition(":")
        if not re.match(r"^[a-z_0-9]+$", k):
            raise IsaError(f"{where}: modifier {tok!r} is not a form the emulator reads")
        out.append((k, v))
    return tuple(out)


def _instr(text: str, line: int, target: str) -> Instr:
    body = text.split(";", 1)[0].strip()
    mnem, _, rest = body.partition(" ")
    rest = rest.strip()
    where = f"{mnem} ({target}, line {line})"
    if mnem.startswith(_RAW) or mnem in _TIMING_ONLY:
        return Instr(mnem, (), (), line, body, rest)
    parts = _split_top(rest) if rest else []
    mods: list[str] = []
    if parts:
        last = parts[-1].split()
        parts[-1] = last[0]
        mods = last[1:]
        # a modifier-only tail (e.g. "s_endpgm" has none; "v_mfma ... blgp:1" leaves it on the last operand)
        if ":" in parts[-1] and not parts[-1].startswith(("v[", "s[", "a[")) and re.match(r"^[a-z_0-9]+:", parts[-1]):
            mods.insert(0, parts.pop())
        elif parts[-1] in ("clamp", "glc", "slc", "dlc", "nt", "sc0", "sc1", "lds") and len(parts) > 1:
            mods.insert(0, parts.pop())
    ops = tuple(_operand(p, where) for p in parts)
    return Instr(mnem, ops, _mods(mods, where), line, body, rest)


def kernel_names(asm: str) -> list[str]:
    return re.findall(r"^\s*\.amdhsa_kernel\s+(\S+)", asm, re.M)


def parse(asm: str, kernel: str | None = None) -> Kernel:
    """The instructions, labels and descriptor of one kernel in clang's assembly output."""
    lines = asm.splitlines()
    tm = re.search(r'\.amdgcn_target\s+"amdgcn-amd-amdhsa--(gfx\w+)', asm)
    if not tm:
        raise IsaError("no .amdgcn_target directive: not AMDGPU assembly from clang")
    target = tm.group(1)
    names = kernel_names(asm)
    if not names:
        raise IsaError(f"no .amdhsa_kernel in the assembly ({target})")
    if kernel is None:
        if len(names) > 1:
            raise IsaError(f"the assembly holds {len(names)} kernels; name one of: {', '.join(names)}")
        kernel = names[0]
    if kernel not in names:
        raise IsaError(f"kernel {kernel!r} is not in the assembly; kernels: {', '.join(names)}")
    start = next((i for i, ln in enumerate(lines) if re.match(rf"^{re.escape(kernel)}:", ln)), None)
    if start is None:
        raise IsaError(f"no code label {kernel}: in the assembly ({target})")
    instrs: list[Instr | tuple[Instr, Instr]] = []
    labels: dict[str, int] = {}
    for i in range(start + 1, len(lines)):
        raw = lines[i]
        s = raw.split(";", 1)[0].strip()
        if not s or s.startswith("//"):
            continue
        if s.startswith((".Lfunc_end", ".section")):
            break
        if s.endswith(":"):
            labels[s[:-1]] = len(instrs)
            continue
        if s.startswith("."):
            if s.startswith((".p2align", ".loc", ".file", ".cfi")):
                continue
            raise IsaError(f"directive {s.split()[0]!r} inside kernel {kernel} ({target}, line {i + 1}) "
                           "is not modelled")
        if "::" in s:
            a, b = s.split("::")
            instrs.append((_instr(a, i + 1, target), _instr(b, i + 1, target)))
        else:
            instrs.append(_instr(s, i + 1, target))
    desc: dict[str, int] = {}
    m = re.search(rf"^\s*\.amdhsa_kernel\s+{re.escape(kernel)}\s*$(.*?)^\s*\.end_amdhsa_kernel", asm, re.M | re.S)
    if m:
        for key, val in re.findall(r"^\s*\.amdhsa_(\w+)\s+(-?\d+)\s*$", m.group(1), re.M):
            desc[key] = int(val)
    for ins in instrs:
        for part in (ins if isinstance(ins, tuple) else (ins,)):
            for op in part.operands:
                if isinstance(op, Label) and op.name not in labels:
                    raise IsaError(f"{part.mnemonic} ({target}, line {part.line}): branch target {op.name} "
                                   "is not a label of this kernel")
    syms = {op.name for ins in instrs for part in (ins if isinstance(ins, tuple) else (ins,))
            for op in part.operands if isinstance(op, Sym)}
    return Kernel(kernel, target, tuple(instrs), tuple(labels.items()), tuple(sorted(desc.items())),
                  tuple((n, _data_object(lines, n, target)) for n in sorted(syms)))


_DATA = {".byte": 1, ".short": 2, ".value": 2, ".2byte": 2, ".long": 4, ".4byte": 4, ".quad": 8, ".8byte": 8}


def _data_object(lines: list[str], name: str, target: str) -> bytes:
    """The bytes of data object ``name`` (``.byte/.short/.long/.quad/.zero`` lines after its label)."""
    start = next((i for i, ln in enumerate(lines) if ln.split(";", 1)[0].strip() == f"{name}:"), None)
    if start is None:
        raise IsaError(f"symbol {name} ({target}) has no data in the assembly")
    out = bytearray()
    for i in range(start + 1, len(lines)):
        s = lines[i].split(";", 1)[0].strip()
        if not s:
            continue
        d, _, arg = s.partition("\t") if "\t" in s else s.partition(" ")
        d, arg = d.strip(), arg.strip()
        if d in _DATA:
            for v in arg.split(","):
                out += (int(v.strip(), 0) & ((1 << (8 * _DATA[d])) - 1)).to_bytes(_DATA[d], "little")
        elif d == ".zero":
            n, _, fill = arg.partition(",")
            out += bytes([int(fill or "0", 0) & 0xFF]) * int(n, 0)
        elif d in (".size", ".section", ".text", ".type") or s.endswith(":"):
            break
        elif d.startswith((".p2align", ".align")):
            continue
        else:
            raise IsaError(f"data directive {d!r} of {name} ({target}, line {i + 1}) is not modelled")
    return bytes(out)
