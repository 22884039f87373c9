"""The fake device behind ``tests/fakes/hip``: device memory, module loading and kernel launch, with
tilesim's AMDGPU ISA emulator (``tilesim.isa``) executing the loaded code object.

How the code object reaches the emulator. The emulator reads clang's assembly; this project has no
AMDGPU disassembler (the ziglang wheel ships none). So ``load`` *finds* the assembly: it searches
tilesim's compile cache for listings whose target and metadata match the ELF's own
``NT_AMDGPU_METADATA`` note, assembles and links each candidate exactly as a code object is built
(``tilesim.hw.amd.link_code_object``), and accepts one only when the result is byte-for-byte the
image it was handed. What executes is therefore the loaded code object's own instructions and
kernel descriptor; the fake is never handed the program, the emitted source or the simulator's
answer. Without such a listing (cache off, or a code object tilesim did not compile) it refuses.

How arguments reach the kernel. As ROCm's clr does for ``extra``: each explicit argument is copied
from the caller's buffer at the offset and size the ELF metadata (not tilesim's ``.s`` parser)
gives; hidden arguments are filled by the runtime from the launch. A wrongly packed buffer thus
hands the kernel wrong pointers, and the emulator faults (hipErrorIllegalAddress) or computes a
wrong answer.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hip._elf import CodeObjectImage, read_code_object


class FakeHipLimitation(RuntimeError):
    """Something the fake cannot do (no assembly for the image, an instruction the emulator does not
    model). Not a HIP error: real hardware would have run it."""


@dataclass
class Allocation:
    name: str
    address: int
    size: int
    freed: bool = False


@dataclass
class Module:
    image: CodeObjectImage
    asm: str


@dataclass
class Device:
    arch: str  # gcnArchName, e.g. "gfx942:sramecc+:xnack-"
    capacity: int
    allocations: list[Allocation] = field(default_factory=list)
    sticky: str | None = None  # an asynchronous error, reported by the next synchronise
    last_fault: str = ""
    launches: int = 0

    def __post_init__(self) -> None:
        from tilesim.isa.memory import Heap

        self.heap = Heap()

    # -------------------------------------------------------------- memory
    def malloc(self, size: int) -> int | None:
        used = sum(a.size for a in self.allocations if not a.freed)
        if used + size > self.capacity:
            return None
        name = f"alloc{len(self.allocations)}"
        addr = self.heap.add(name, np.zeros(size, np.uint8))
        self.allocations.append(Allocation(name, addr, size))
        return addr

    def find(self, address: int, nbytes: int) -> tuple[Allocation, int] | None:
        for a in self.allocations:
            if not a.freed and a.address <= address and address + nbytes <= a.address + a.size:
                return a, address - a.address
        return None

    def write(self, address: int, data: bytes) -> bool:
        hit = self.find(address, len(data))
        if hit is None:
            return False
        a, off = hit
        self.heap.view(a.name)[off: off + len(data)] = np.frombuffer(data, np.uint8)
        return True

    def read(self, address: int, nbytes: int) -> bytes | None:
        hit = self.find(address, nbytes)
        if hit is None:
            return None
        a, off = hit
        return self.heap.view(a.name)[off: off + nbytes].tobytes()

    def free(self, address: int) -> bool:
        for a in self.allocations:
            if a.address == address and not a.freed:
                a.freed = True
                return True
        return False

    # -------------------------------------------------------------- modules
    def load(self, data: bytes) -> Module:
        image = read_code_object(data)
        return Module(image, _find_assembly(image))

    def launch(self, module: Module, kernel: str, grid: tuple[int, int, int], block: tuple[int, int, int],
               dynamic_lds: int, explicit: bytes) -> str | None:
        """Run ``kernel``; returns a hipError_t name for a launch-time error, else None (a fault
        during execution becomes the sticky error)."""
        from tilesim.isa.asm import IsaError, parse
        from tilesim.isa.launch import Launch, run_kernel
        from tilesim.targets import get_target

        meta = module.image.kernel(kernel)
        threads = block[0] * block[1] * block[2]
        if threads < 1 or threads > int(meta.get(".max_flat_workgroup_size", 1024)) or min(grid) < 1:
            return "hipErrorInvalidValue"
        lds_limit = get_target(_base(self.arch)).lds_bytes
        if int(meta.get(".group_segment_fixed_size", 0)) + dynamic_lds > lds_limit:
            return "hipErrorInvalidValue"
        seg = bytearray(int(meta[".kernarg_segment_size"]))
        hidden = {"hidden_block_count_x": grid[0], "hidden_block_count_y": grid[1], "hidden_block_count_z": grid[2],
                  "hidden_group_size_x": block[0], "hidden_group_size_y": block[1], "hidden_group_size_z": block[2],
                  "hidden_grid_dims": 3 if grid[2] > 1 else 2 if grid[1] > 1 else 1,
                  "hidden_dynamic_lds_size": dynamic_lds}
        for a in meta.get(".args", []):
            off, size, kind = int(a[".offset"]), int(a[".size"]), a[".value_kind"]
            if not kind.startswith("hidden_"):
                if off + size <= len(explicit):  # clr copies an argument only when it lies in the buffer
                    seg[off: off + size] = explicit[off: off + size]
            elif kind in hidden:
                seg[off: off + size] = int(hidden[kind]).to_bytes(size, "little")
            # other hidden arguments (printf, hostcall, queue pointers, remainders of whole blocks): zero
        kaddr = self.heap.add(f"kernarg{self.launches}", bytes(seg) or b"\0" * 8)
        self.launches += 1
        try:
            k = parse(module.asm, kernel)
            run_kernel(k, Launch(grid, block, bytes(seg)), self.heap, kaddr)
        except IsaError as e:
            if "outside every buffer" in str(e) or "out of bounds" in str(e):
                self.sticky, self.last_fault = "hipErrorIllegalAddress", str(e)  # a memory access fault
                return None
            raise FakeHipLimitation(f"fake hip: tilesim's ISA emulator cannot run {kernel}: {e}") from None
        return None


def _base(arch: str) -> str:
    return arch.split(":", 1)[0]


def _listing_matches(asm: str, image: CodeObjectImage) -> bool:
    target = image.target.split("--", 1)[-1]
    if f'.amdgcn_target "amdgcn-amd-amdhsa--{target}"' not in asm:
        return False
    for k in image.metadata.get("amdhsa.kernels", []):
        for key in (".name", ".kernarg_segment_size", ".vgpr_count", ".sgpr_count", ".group_segment_fixed_size"):
            if key in k and not re.search(rf"^\s*{re.escape(key)}:\s+{re.escape(str(k[key]))}\s*$", asm, re.M):
                return False
    return True


def _find_assembly(image: CodeObjectImage) -> str:
    from tilesim.hw.amd import link_code_object
    from tilesim.hw.offline import cache_dir

    folder = cache_dir()
    if folder is None or not folder.is_dir():
        raise FakeHipLimitation("fake hip: no compile cache to find this code object's assembly in "
                                "(TILESIM_NO_CACHE is set, or nothing was compiled)")
    target = _base(image.target.split("--", 1)[-1])
    want = hashlib.sha256(image.data).hexdigest()
    tried = 0
    for path in sorted(Path(folder).glob("*/*.s")):
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        head, _, body = text.partition("\n")
        asm = body if head.startswith("; tilesim-cache") else text
        if not _listing_matches(asm, image):
            continue
        tried += 1
        if hashlib.sha256(link_code_object(asm, target)).hexdigest() == want:
            return asm
    raise FakeHipLimitation(f"fake hip: no assembly in tilesim's compile cache ({folder}) assembles to this code "
                            f"object ({tried} candidate(s) tried); the fake runs only code tilesim compiled")


def config_from_env() -> Device | None:
    """The fake's device, from TILESIM_FAKE_HIP_ARCH (gcnArchName; unset: no device),
    TILESIM_FAKE_HIP_MEMORY (bytes, default 1 GiB)."""
    arch = os.environ.get("TILESIM_FAKE_HIP_ARCH", "")
    if not arch or os.environ.get("TILESIM_FAKE_HIP_DEVICES", "1") == "0":
        return None
    return Device(arch, int(os.environ.get("TILESIM_FAKE_HIP_MEMORY", str(1 << 30))))


def pointers(raw: bytes) -> tuple[int, ...]:
    return struct.unpack(f"<{len(raw) // 8}Q", raw)
