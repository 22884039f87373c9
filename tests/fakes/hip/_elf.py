"""Read an AMDGPU code object (ELF64) the way a loader does: sections, symbols, and the
``NT_AMDGPU_METADATA`` note (MessagePack), with no LLVM tool and nothing from tilesim.

Written from the ELF-64 object file format (section header and symbol layouts), the MessagePack
specification (github.com/msgpack/msgpack/blob/master/spec.md) and LLVM's AMDGPUUsage "Code Object
V3+ Metadata" (note name ``AMDGPU``, type 32, a MessagePack map with ``amdhsa.kernels`` and
``amdhsa.target``). Only what the fake runtime needs is decoded; anything else raises ValueError.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

EM_AMDGPU = 224
NT_AMDGPU_METADATA = 32
_SHT_SYMTAB, _SHT_NOTE, _SHT_DYNSYM = 2, 7, 11


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    offset: int
    size: int
    link: int


@dataclass(frozen=True)
class CodeObjectImage:
    """What the fake loader knows about one code object."""

    data: bytes
    sections: tuple[Section, ...]
    symbols: dict[str, tuple[int, int]]  # name -> (value, size)
    metadata: dict  # the AMDGPU metadata map

    @property
    def target(self) -> str:
        return str(self.metadata.get("amdhsa.target", ""))

    def kernel(self, name: str) -> dict | None:
        for k in self.metadata.get("amdhsa.kernels", []):
            if k.get(".name") == name or k.get(".symbol") == name + ".kd":
                return k
        return None


def _cstr(blob: bytes, at: int) -> str:
    end = blob.index(b"\0", at)
    return blob[at:end].decode()


def read_code_object(data: bytes) -> CodeObjectImage:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a little-endian ELF64 file")
    machine = struct.unpack_from("<H", data, 0x12)[0]
    if machine != EM_AMDGPU:
        raise ValueError(f"ELF machine {machine}, not EM_AMDGPU ({EM_AMDGPU})")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = []
    for i in range(shnum):
        name, typ, _flags, _addr, off, size, link, _info, _align, _ent = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        raw.append((name, typ, off, size, link))
    strtab_off = raw[shstrndx][2]
    sections = tuple(Section(_cstr(data, strtab_off + n), t, o, s, lk) for n, t, o, s, lk in raw)
    symbols: dict[str, tuple[int, int]] = {}
    for sec in sections:
        if sec.type in (_SHT_SYMTAB, _SHT_DYNSYM):
            names = sections[sec.link].offset
            for at in range(sec.offset, sec.offset + sec.size, 24):
                st_name, _info, _other, _shndx, value, size = struct.unpack_from("<IBBHQQ", data, at)
                if st_name:
                    symbols[_cstr(data, names + st_name)] = (value, size)
    metadata = None
    for sec in sections:
        if sec.type != _SHT_NOTE:
            continue
        at, end = sec.offset, sec.offset + sec.size
        while at + 12 <= end:
            namesz, descsz, typ = struct.unpack_from("<III", data, at)
            name = data[at + 12: at + 12 + namesz].rstrip(b"\0")
            desc_at = at + 12 + (namesz + 3) // 4 * 4
            if name == b"AMDGPU" and typ == NT_AMDGPU_METADATA:
                metadata, _ = _unpack(data, desc_at)
            at = desc_at + (descsz + 3) // 4 * 4
    if not isinstance(metadata, dict):
        raise ValueError("no NT_AMDGPU_METADATA note: not a code object v3+ for amdhsa")
    return CodeObjectImage(bytes(data), sections, symbols, metadata)


def _unpack(b: bytes, i: int):  # noqa: C901 - one branch per MessagePack format byte
    """One MessagePack value at ``b[i]``: (value, next index)."""
    t = b[i]
    if t <= 0x7F:
        return t, i + 1
    if 0x80 <= t <= 0x8F:
        return _map(b, i + 1, t & 0x0F)
    if 0x90 <= t <= 0x9F:
        return _array(b, i + 1, t & 0x0F)
    if 0xA0 <= t <= 0xBF:
        n = t & 0x1F
        return b[i + 1: i + 1 + n].decode(), i + 1 + n
    if t >= 0xE0:
        return t - 0x100, i + 1
    if t == 0xC0:
        return None, i + 1
    if t in (0xC2, 0xC3):
        return t == 0xC3, i + 1
    fixed = {0xCC: "<B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q",
             0xCA: ">f", 0xCB: ">d"}
    if t in fixed:
        fmt = fixed[t]
        return struct.unpack_from(fmt, b, i + 1)[0], i + 1 + struct.calcsize(fmt)
    sized = {0xD9: (">B", "str"), 0xDA: (">H", "str"), 0xDB: (">I", "str"), 0xC4: (">B", "bin"),
             0xC5: (">H", "bin"), 0xC6: (">I", "bin"), 0xDC: (">H", "array"), 0xDD: (">I", "array"),
             0xDE: (">H", "map"), 0xDF: (">I", "map")}
    if t in sized:
        fmt, kind = sized[t]
        n = struct.unpack_from(fmt, b, i + 1)[0]
        j = i + 1 + struct.calcsize(fmt)
        if kind == "str":
            return b[j: j + n].decode(), j + n
        if kind == "bin":
            return bytes(b[j: j + n]), j + n
        return (_array if kind == "array" else _map)(b, j, n)
    raise ValueError(f"MessagePack type byte {t:#x} at {i} is not decoded by the fake loader")


def _array(b: bytes, i: int, n: int):
    out = []
    for _ in range(n):
        v, i = _unpack(b, i)
        out.append(v)
    return out, i


def _map(b: bytes, i: int, n: int):
    out = {}
    for _ in range(n):
        k, i = _unpack(b, i)
        v, i = _unpack(b, i)
        out[k] = v
    return out, i
