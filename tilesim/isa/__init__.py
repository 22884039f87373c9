"""tilesim's AMDGPU ISA executor: runs the assembly clang emits for gfx1100 (RDNA3), gfx1201
(RDNA4), gfx942 (CDNA3) and gfx950 (CDNA4), instruction by instruction, without an AMD GPU.

Not run on AMD hardware: the executor is checked against the tile simulator and the ISA guides'
semantics. See docs/emulator.md for what is modelled and what raises.
"""

from tilesim.isa.api import Emulation, emulate, emulate_program
from tilesim.isa.asm import IsaError, Kernel, kernel_names, parse
from tilesim.isa.audit import AuditReport, Finding, audit, audit_program
from tilesim.isa.hipfile import emulate_hip
from tilesim.isa.memory import Race

__all__ = ["AuditReport", "Emulation", "Finding", "IsaError", "Kernel", "Race", "audit", "audit_program", "emulate",
           "emulate_hip", "emulate_program", "kernel_names", "parse"]
