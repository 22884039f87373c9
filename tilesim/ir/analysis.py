"""Static estimates of a program's resources: VGPRs per wave and LDS bytes per workgroup.

They live in the IR layer because they read only the IR: the verifier (``check``) compares them
with the target's budget and the simulator reports the same numbers, from this one place.
"""

from __future__ import annotations

from tilesim.ir.core import Program, Value

__all__ = ["vgpr_estimate", "lds_estimate", "LDS_ALIGN"]

LDS_ALIGN = 16  # bytes: each LDS buffer starts on a 16-byte boundary (as the simulator and emitted code place them)


def lds_estimate(prog: Program) -> int:
    """Bytes of LDS the program allocates per workgroup (every ``lds_alloc``, each rounded up to 16 bytes)."""
    return sum(-(-op.out.lds.bytes // LDS_ALIGN) * LDS_ALIGN for op in prog.walk()
               if op.kind == "lds_alloc" and op.out is not None and op.out.lds is not None)


def vgpr_estimate(prog: Program) -> int:
    """Registers of all fragments live at once, assuming each value lives from definition to
    its last use (loop-carried values live through their loop)."""
    ops = prog.walk()
    last: dict[int, int] = {}
    first: dict[int, tuple[int, int]] = {}
    for i, op in enumerate(ops):
        if op.out is not None and op.out.kind == "frag" and op.out.layout is not None:
            first[op.out.id] = (i, op.out.layout.registers_per_lane())
        for a in op.args:
            if isinstance(a, Value):
                last[a.id] = i
        if op.kind == "loop":
            end = i + len(op.attr("body").walk())
            for init, nxt in op.attr("carried"):
                last[init.id] = max(last.get(init.id, 0), end)
                last[nxt.id] = max(last.get(nxt.id, 0), end)
    peak = 0
    for i in range(len(ops)):
        live = sum(r for vid, (s, r) in first.items() if s <= i <= last.get(vid, s))
        peak = max(peak, live)
    return peak
