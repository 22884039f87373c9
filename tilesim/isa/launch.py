"""Launch a parsed kernel as ROCm does, and run its waves.

Launch (from the kernel descriptor and the AMDHSA code-object ABI): user SGPRs in order —
only the kernarg segment pointer is modelled; any other enabled user SGPR raises — then the
system SGPRs (workgroup id x, y, z as enabled) from ``.amdhsa_user_sgpr_count`` on; on RDNA4
(gfx12, architected SGPRs) the workgroup ids are also in TTMP9 (x) and TTMP7 (y | z << 16), which
is where clang reads them. Work-item ids are packed into v0 (x | y << 10 | z << 20) on every target
modelled (gfx90a+, gfx11+). EXEC starts with the wave's live lanes; LDS is the descriptor's
``group_segment_fixed_size`` per workgroup. Float modes other than round-to-nearest-even with
denormals kept raise.

Scheduling: all waves of the grid advance together, one instruction at a time for the waves at
the same program counter. Waves of one workgroup are run in wave-slot order between barriers —
slot 0 until it waits at ``s_barrier`` (or ends), then slot 1, … — batched across workgroups, so a
kernel that omits a barrier reads stale LDS exactly as an unlucky hardware schedule would, and the
race detector (:mod:`tilesim.isa.memory`) names the access.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tilesim.isa.asm import Instr, IsaError, Kernel
from tilesim.isa.hazards import Hazards
from tilesim.isa.matrix import MATRIX_PREFIXES, compile_matrix
from tilesim.isa.memory import Heap, Lds, Race, compile_memory
from tilesim.isa.salu import TIMING, branch_condition, branch_target, compile_salu
from tilesim.isa.state import EXEC, Ctx, Machine
from tilesim.isa.valu import compile_valu
from tilesim.isa.variants import check_variant
from tilesim.targets import get_target

__all__ = ["run_kernel", "execute", "Launch", "SUPPORTED_FAMILIES", "prepare"]

# The target families the emulator models, in every wave size the target has (RDNA wave32 and wave64, CDNA
# wave64; what differs is in tilesim.isa.variants) with the target's limits; gfx12 (its ISA generation,
# tilesim.targets) has the architected workgroup-id SGPRs.
SUPPORTED_FAMILIES = ("rdna3", "rdna4", "cdna2", "cdna3", "cdna4")

_DESC_OK = {  # descriptor fields and the values the emulator models
    "user_sgpr_dispatch_ptr": (0,), "user_sgpr_queue_ptr": (0,), "user_sgpr_dispatch_id": (0,),
    "user_sgpr_private_segment_size": (0,), "user_sgpr_kernarg_preload_length": (0,),
    "user_sgpr_private_segment_buffer": (0, 1), "user_sgpr_flat_scratch_init": (0,),
    "system_sgpr_workgroup_info": (0,), "uses_dynamic_stack": (0,),
    "float_round_mode_32": (0,), "float_round_mode_16_64": (0,), "float_denorm_mode_32": (3,),
    "float_denorm_mode_16_64": (3,), "fp16_overflow": (0,), "dx10_clamp": (0, 1), "ieee_mode": (0, 1),
    "shared_vgpr_count": (0,), "tg_split": (0,),
}


@dataclass
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    kernarg: bytes
    buffers: dict[str, np.ndarray] = field(default_factory=dict)


def _check_descriptor(k: Kernel, wave: int) -> None:
    for key, ok in _DESC_OK.items():
        v = k.desc(key)
        if v is not None and v not in ok:
            raise IsaError(f"kernel {k.name} ({k.target}): descriptor .amdhsa_{key} {v} is not modelled "
                           f"(modelled: {', '.join(map(str, ok))})")
    for key, v in k.descriptor:
        if key.startswith("exception_") and v:
            raise IsaError(f"kernel {k.name} ({k.target}): descriptor .amdhsa_{key} {v} (FP exceptions) "
                           "is not modelled")
    if k.desc("user_sgpr_kernarg_segment_ptr", 0) != 1:
        raise IsaError(f"kernel {k.name} ({k.target}): kernels without a kernarg segment pointer are not modelled")
    w32 = k.desc("wavefront_size32", 0)
    if (32 if w32 else 64) != wave:
        raise IsaError(f"kernel {k.name} ({k.target}): descriptor says wave{32 if w32 else 64}, expected wave{wave}")


def prepare(k: Kernel, st: Machine) -> list[tuple[str, object, Instr]]:
    """Compile every instruction (fail closed before anything runs)."""
    ctx = Ctx(k.target, st.L, dict(k.labels), 0, k.instrs)
    prog: list[tuple[str, object, Instr]] = []
    for n, ins in enumerate(k.instrs):
        ctx.index = n
        for part in ins if isinstance(ins, tuple) else (ins,):
            check_variant(part, ctx)
        if isinstance(ins, tuple):
            if not all(p.mnemonic.startswith("v_dual_") for p in ins):
                raise ctx.err(ins[0], "'::' joins only v_dual_* halves")
            prog.append(("op", compile_valu(ins, ctx, st), ins[0]))
            continue
        m = ins.mnemonic
        if m in TIMING or m.startswith("s_waitcnt"):
            prog.append(("op", lambda sel: None, ins))
        elif m == "s_sendmsg":  # gfx11+ end-of-kernel hint; any other message is not modelled
            if ins.raw.replace(" ", "") != "sendmsg(MSG_DEALLOC_VGPRS)":
                raise ctx.err(ins, "this message is not modelled")
            prog.append(("op", lambda sel: None, ins))
        elif m == "s_endpgm":
            prog.append(("end", None, ins))
        elif m in ("s_barrier", "s_barrier_wait"):
            if m == "s_barrier_wait" and ins.raw.strip() not in ("-1", "0xffff"):
                raise ctx.err(ins, "named barriers are not modelled")
            prog.append(("barrier", None, ins))
        elif m == "s_barrier_signal":
            if ins.raw.strip() != "-1":
                raise ctx.err(ins, "named barriers are not modelled")
            prog.append(("op", lambda sel: None, ins))  # arrival is counted at the wait that follows
        elif branch_condition(ins, ctx, st) is not None:
            prog.append(("branch", (branch_condition(ins, ctx, st), branch_target(ins, ctx)), ins))
        elif m.startswith(MATRIX_PREFIXES):
            prog.append(("op", compile_matrix(ins, ctx, st), ins))
        elif m.startswith("v_"):
            prog.append(("op", compile_valu(ins, ctx, st), ins))
        else:
            f = compile_memory(ins, ctx, st) or compile_salu(ins, ctx, st)
            if f is None:
                raise ctx.err(ins, "instruction not modelled")
            prog.append(("op", f, ins))
    return prog


def _hazard_plans(k: Kernel, hz: Hazards) -> list[tuple]:
    out = []
    for ins in k.instrs:
        if isinstance(ins, tuple):  # a VOPD pair touches both halves' registers
            joined = Instr(ins[0].mnemonic, ins[0].operands + ins[1].operands, (), ins[0].line, ins[0].text)
            out.append(hz.hook(joined))
        else:
            out.append(hz.hook(ins))
    return out


def _split_signal_wait(k: Kernel) -> None:
    # gfx12 splits s_barrier into signal + wait; the emulator counts arrival at the wait, which is
    # exact only while nothing between them touches LDS or branches
    seq = [i if not isinstance(i, tuple) else i[0] for i in k.instrs]
    for n, ins in enumerate(seq):
        if ins.mnemonic == "s_barrier_signal":
            for nxt in seq[n + 1:]:
                if nxt.mnemonic == "s_barrier_wait":
                    break
                if nxt.mnemonic.startswith(("ds_", "s_branch", "s_cbranch", "s_endpgm", "global_", "scratch_")):
                    raise IsaError(f"{nxt.mnemonic} ({k.target}, line {nxt.line}) between s_barrier_signal and "
                                   "s_barrier_wait is not modelled")


def run_kernel(k: Kernel, launch: Launch, heap: Heap, kernarg_addr: int, *, max_steps: int = 5_000_000,
               mma_hook: object = None) -> tuple[Machine, list[Race], list[str]]:
    t = get_target(k.target)
    if t.family not in SUPPORTED_FAMILIES:
        raise IsaError(f"target {k.target} ({t.family}) is not modelled; emulated families: "
                       f"{', '.join(SUPPORTED_FAMILIES)}")
    architected = t.isa == "gfx12"  # workgroup ids also in TTMP7/TTMP9
    wave = 32 if k.desc("wavefront_size32", 0) else 64
    if wave not in t.wave_sizes:
        raise IsaError(f"{k.target} has no wave{wave} (wave sizes: {', '.join(map(str, t.wave_sizes))})")
    _check_descriptor(k, wave)
    _split_signal_wait(k)
    gx, gy, gz = launch.grid
    bx, by, bz = launch.block
    threads = bx * by * bz
    if threads < 1 or threads > t.max_workgroup_size or min(gx, gy, gz) < 1:
        raise IsaError(f"grid {launch.grid} / block {launch.block} is not a valid launch")
    if (by > 1 or bz > 1) and k.desc("system_vgpr_workitem_id", 0) < (2 if bz > 1 else 1):
        pass  # ids beyond what the kernel reads are harmless
    per_wg = -(-threads // wave)
    groups = gx * gy * gz
    W = groups * per_wg
    # the whole architectural file (256 VGPRs, and 256 AGPRs on CDNA): reads of registers the kernel
    # never wrote see zeros, accesses past the file raise
    agprs = 256 if k.desc("accum_offset") is not None else 0
    st = Machine(target=k.target, wave=wave, waves=W, vgprs=256, agprs=agprs)
    st.heap = heap
    st.mma_hook = mma_hook
    st.notes = []
    st.symbols = {name: heap.add(name, data) for name, data in k.data}
    g = np.repeat(np.arange(groups), per_wg)
    slot = np.tile(np.arange(per_wg), groups)
    st.group, st.slot, st.epoch = g, slot, np.zeros(W, np.int32)
    st.lds = Lds(groups, int(k.desc("group_segment_fixed_size", 0) or 0))
    priv = int(k.desc("private_segment_fixed_size", 0) or 0)
    st.scratch = np.zeros((W, wave, priv), np.uint8) if priv else None
    # workgroup ids, x fastest
    wid = np.stack([g % gx, (g // gx) % gy, g // (gx * gy)], 1).astype(np.uint32)
    # user SGPRs in the ABI's order: the private segment buffer's V# (s[0:3], gfx9 without architected
    # flat scratch: clang enables it on gfx90a even for kernels without scratch) stays zero — only buffer_*
    # instructions read it and none is modelled, and scratch without architected flat scratch is refused
    # below — then the kernarg segment pointer (any other user SGPR is refused by _check_descriptor)
    ka = 4 if k.desc("user_sgpr_private_segment_buffer", 0) else 0
    st.s[ka] = np.uint32(kernarg_addr & 0xFFFFFFFF)
    st.s[ka + 1] = np.uint32(kernarg_addr >> 32)
    nxt = int(k.desc("user_sgpr_count", 2))
    for axis, key in enumerate(("x", "y", "z")):
        if k.desc(f"system_sgpr_workgroup_id_{key}", 1 if key == "x" else 0):
            st.s[nxt] = wid[:, axis]
            nxt += 1
    scratch = k.desc("enable_private_segment", 0) or k.desc("system_sgpr_private_segment_wavefront_offset", 0)
    if scratch and not architected:  # gfx90a spells it the wavefront-offset system SGPR (buffer_* scratch)
        raise IsaError(f"kernel {k.name} ({k.target}): scratch without architected flat scratch is not modelled")
    if architected:
        st.s[108 + 9] = wid[:, 0]
        st.s[108 + 7] = wid[:, 1] | (wid[:, 2] << np.uint32(16))
    tid = slot[:, None] * wave + np.arange(wave)[None, :]
    live = tid < threads
    tx, ty, tz = tid % bx, (tid // bx) % by, tid // (bx * by)
    st.v[0] = np.where(live, tx | (ty << 10) | (tz << 20), 0).astype(np.uint32)
    bits = st.bits_of(live)
    st.s[EXEC] = (bits & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    if wave == 64:
        st.s[EXEC + 1] = (bits >> np.uint64(32)).astype(np.uint32)
    execute(k, st, groups, max_steps)
    return st, st.lds.races, st.notes


def execute(k: Kernel, st: Machine, groups: int = 1, max_steps: int = 5_000_000) -> None:
    """Compile ``k`` (fail closed) and run it on machine ``st`` until every wave ends."""
    prog = prepare(k, st)
    st.hazards = Hazards(st, k.target)
    _execute(prog, st, groups, max_steps, _hazard_plans(k, st.hazards))


def _execute(prog: list, st: Machine, groups: int, max_steps: int, plans: list) -> None:
    hz = st.hazards
    W = st.W
    pc = np.zeros(W, np.int64)
    done = np.zeros(W, bool)
    waiting = np.zeros(W, bool)
    n = len(prog)
    steps = 0
    while True:
        run = ~done & ~waiting
        if not run.any():
            if not waiting.any():
                return
            # every live wave of each workgroup is at the barrier (finished waves do not count)
            wg_wait = np.zeros(groups, bool)
            wg_run = np.zeros(groups, bool)
            np.logical_or.at(wg_wait, st.group[waiting], True)
            np.logical_or.at(wg_run, st.group[~done & ~waiting], True)
            release = waiting & ~wg_run[st.group]
            st.epoch[release] += 1
            pc[release] += 1
            waiting[release] = False
            continue
        s = st.slot[run].min()
        cand = run & (st.slot == s)
        p = pc[cand].min()
        sel = cand & (pc == p)
        if p >= n:
            raise IsaError(f"wave(s) {np.flatnonzero(sel)[:4].tolist()} ran past the end of the kernel "
                           "without s_endpgm")
        kind, f, ins = prog[p]
        steps += 1
        st.executed += int(sel.sum())
        if steps > max_steps:
            raise IsaError(f"stopped after {max_steps} steps at line {ins.line} `{ins.text}` (a loop that never ends?)")
        if kind == "op":
            plan = plans[p]
            hz.before(plan, ins, sel)
            f(sel)
            hz.after(plan, sel)
            pc[sel] += 1
        elif kind == "branch":
            cond, target = f
            taken = sel & cond()
            pc[taken] = target
            pc[sel & ~taken] += 1
        elif kind == "barrier":
            waiting |= sel
        else:  # end
            done |= sel
