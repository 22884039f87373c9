"""Run a few lines of AMDGPU assembly on one wave with chosen register contents (test helper)."""

from __future__ import annotations

import numpy as np

from tilesim.isa.asm import parse
from tilesim.isa.launch import execute
from tilesim.isa.memory import Heap, Lds
from tilesim.isa.state import EXEC, Machine

WAVE = {"gfx1100": 32, "gfx1201": 32, "gfx90a": 64, "gfx942": 64, "gfx950": 64, "gfx1250": 32}


def kernel_text(target: str, body: str, lds: int = 0, wave: int | None = None) -> str:
    w32 = int((wave or WAVE[target]) == 32)
    return (f'\t.amdgcn_target "amdgcn-amd-amdhsa--{target}"\n\t.text\nk:\n{body}\n\ts_endpgm\n'
            f"\t.section .rodata\n\t.amdhsa_kernel k\n\t\t.amdhsa_group_segment_fixed_size {lds}\n"
            f"\t\t.amdhsa_user_sgpr_kernarg_segment_ptr 1\n\t\t.amdhsa_wavefront_size32 {w32}\n"
            f"\t\t.amdhsa_next_free_vgpr 64\n\t.end_amdhsa_kernel\n")


def run(target: str, body: str, v: dict[int, np.ndarray] | None = None, s: dict[int, int] | None = None,
        exec_mask: int | None = None, waves: int = 1, lds: int = 0, heap: Heap | None = None,
        agprs: int = 0, wave: int | None = None) -> Machine:
    """Registers after running ``body`` (v: VGPR -> per-lane uint32 values; s: SGPR -> value) in a wave
    of ``wave`` lanes (default: the target's own)."""
    k = parse(kernel_text(target, body, lds, wave))
    L = wave or WAVE[target]
    st = Machine(target=target, wave=L, waves=waves, vgprs=256, agprs=agprs)
    st.v[:] = 0  # the harness's registers start at zero (a launch's start unset: tilesim.isa.state.UNSET_VGPR)
    st.heap = heap or Heap()
    st.lds = Lds(1, lds)
    st.group = np.zeros(waves, np.int64)
    st.slot = np.arange(waves)
    for i, vals in (v or {}).items():
        st.v[i] = np.broadcast_to(np.asarray(vals, np.uint64).astype(np.uint32), (waves, L))
    for i, val in (s or {}).items():
        st.s[i] = np.uint32(val & 0xFFFFFFFF)
    e = (1 << L) - 1 if exec_mask is None else exec_mask
    st.s[EXEC] = np.uint32(e & 0xFFFFFFFF)
    if L == 64:
        st.s[EXEC + 1] = np.uint32(e >> 32)
    execute(k, st)
    return st


def f32_bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


def bits_f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.uint32).view(np.float32)
