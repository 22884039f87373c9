"""Cross-lane VALU instructions in the ISA emulator: DPP16 (row/quad/mirror/share/xmask, CDNA wave
shifts and row broadcasts, row/bank masks, bound_ctrl, EXEC-disabled sources), DPP8, and RDNA's
v_permlane16_b32 / v_permlanex16_b32 — as clang emits them for the builtins that warp reductions in
ordinary HIP code use (`__builtin_amdgcn_update_dpp`, `__builtin_amdgcn_mov_dpp8`,
`__builtin_amdgcn_permlane16` / `permlanex16`, e.g. llama.cpp's RDNA `warp_reduce_sum`).

Expectations are written here, lane by lane, from the AMD ISA guides' text: the DPP_CTRL
enumeration (CDNA3 guide, Table 94: ``row_shl``: ``if ((n&0xf) < 16-c) src = n+c else bound_ctrl``,
``row_shr``, ``row_ror``, ``row_mirror`` ``15-(n&0xf)``, ``row_half_mirror`` ``7-(n&7)``, wave
shifts/rotates, ``row_bcast:15/31``, ``DPP_ROW* 0x150-15F`` broadcast of lane c of each row), the DPP
field descriptions (BANK_MASK/ROW_MASK disable destination writes only; BC 0 = do not write when the
source is out of range), RDNA's row_xmask (lane ``(n&~15) | ((n&15)^c)``, the XOR exchange llama.cpp
relies on) and permlane (lane ``i`` reads the lane of its row / the other row named by nibble ``i%16``
of ``{sel_hi, sel_lo}``). Not run on AMD hardware.
"""

from __future__ import annotations

import numpy as np
import pytest

from tilesim.hw.offline import compile_hip
from tilesim.isa import IsaError, emulate

pytestmark = pytest.mark.compiler

# (name, dpp_ctrl, row_mask, bank_mask, bound_ctrl) for __builtin_amdgcn_update_dpp(old, src, ...)
COMMON = [("quad_perm_3210", 0x1B, 0xF, 0xF, True), ("quad_perm_1032", 0xB1, 0xF, 0xF, False),
          ("row_shl_3", 0x103, 0xF, 0xF, True), ("row_shl_3_nobc", 0x103, 0xF, 0xF, False),
          ("row_shr_5", 0x115, 0xF, 0xF, False), ("row_ror_7", 0x127, 0xF, 0xF, False),
          ("row_mirror", 0x140, 0xF, 0xF, False), ("row_half_mirror", 0x141, 0xF, 0xF, False),
          ("masked", 0x111, 0x1, 0x5, True)]
RDNA = [("row_share_9", 0x159, 0xF, 0xF, False), ("row_xmask_6", 0x166, 0xF, 0xF, True)]
CDNA = [("wave_shl", 0x130, 0xF, 0xF, True), ("wave_rol", 0x134, 0xF, 0xF, False),
        ("wave_shr", 0x138, 0xF, 0xF, False), ("wave_ror", 0x13C, 0xF, 0xF, False),
        ("row_bcast_15", 0x142, 0xA, 0xF, False), ("row_bcast_31", 0x143, 0xC, 0xF, False),
        ("row_newbcast_2", 0x152, 0xF, 0xF, False)]


def _kernel(cases, extra: str = "") -> str:
    body = "\n".join(f"  y[{k} * L + i] = __builtin_amdgcn_update_dpp(o[i], x[i], {c:#x}, {r:#x}, {b:#x}, "
                     f"{'true' if bc else 'false'});" for k, (_, c, r, b, bc) in enumerate(cases))
    return ('extern "C" __attribute__((global)) void lanes(const int* __restrict__ x, const int* __restrict__ o, '
            'int* __restrict__ y, unsigned lo, unsigned hi) {\n'
            '  const int L = __builtin_amdgcn_wavefrontsize(); int i = __builtin_amdgcn_workitem_id_x();\n'
            f'{body}\n{extra}}}\n')


def _expected(ctrl: int, rmask: int, bmask: int, bc: bool, x: list[int], old: list[int],
              active: list[bool] | None = None) -> list[int]:
    L = len(x)
    active = active or [True] * L
    out = []
    for n in range(L):
        r = n & 15
        if ctrl <= 0xFF:
            src = (n & ~3) + ((ctrl >> (2 * (n % 4))) & 3)
        elif 0x101 <= ctrl <= 0x10F:
            c = ctrl & 15
            src = n + c if r < 16 - c else None
        elif 0x111 <= ctrl <= 0x11F:
            c = ctrl & 15
            src = n - c if r >= c else None
        elif 0x121 <= ctrl <= 0x12F:
            c = ctrl & 15
            src = n - c if r >= c else n + 16 - c
        elif ctrl == 0x130:
            src = n + 1 if n < 63 else None
        elif ctrl == 0x134:
            src = n + 1 if n < 63 else 0
        elif ctrl == 0x138:
            src = n - 1 if n > 0 else None
        elif ctrl == 0x13C:
            src = n - 1 if n > 0 else 63
        elif ctrl == 0x140:
            src = (n & ~15) + 15 - r
        elif ctrl == 0x141:
            src = (n & ~7) + 7 - (n & 7)
        elif ctrl == 0x142:
            src = (n & 0x30) - 1 if n > 15 else "undefined"
        elif ctrl == 0x143:
            src = (n & 0x20) - 1 if n > 31 else "undefined"
        elif 0x150 <= ctrl <= 0x15F:
            src = (n & ~15) + (ctrl & 15)
        elif 0x160 <= ctrl <= 0x16F:
            src = (n & ~15) | (r ^ (ctrl & 15))
        else:
            raise AssertionError(hex(ctrl))
        write = bool((rmask >> (n // 16)) & 1 and (bmask >> (r // 4)) & 1) and active[n]
        if src is not None and src != "undefined" and not active[src]:
            src = None  # a disabled source lane is invalid (no fi)
        if not write:
            out.append(old[n])
        elif src == "undefined":
            raise AssertionError("the test asks for an undefined lane")
        elif src is None:
            out.append(0 if bc else old[n])
        else:
            out.append(x[src])
    return out


def _run(target: str, cases, extra: str = "", lo: int = 0, hi: int = 0, rows: int | None = None):
    L = 32 if target.startswith("gfx1") else 64
    rng = np.random.default_rng(7)
    x = rng.integers(1, 1 << 20, L, dtype=np.int32)
    old = rng.integers(-(1 << 20), -1, L, dtype=np.int32)
    n = rows or len(cases)
    res = emulate(compile_hip(_kernel(cases, extra), target), target, "lanes", grid=1, block=L,
                  args=[("x", x), ("o", old), ("y", np.zeros(n * L, np.int32)), np.uint32(lo), np.uint32(hi)])
    return x.tolist(), old.tolist(), res.buffers["y"].reshape(n, L)


@pytest.mark.parametrize("target, cases", [("gfx1201", COMMON + RDNA), ("gfx1100", COMMON + RDNA),
                                           ("gfx942", COMMON + CDNA)])
def test_dpp16_controls_match_the_isa_table(target, cases):
    x, old, y = _run(target, cases)
    for k, (name, c, r, b, bc) in enumerate(cases):
        assert y[k].tolist() == _expected(c, r, b, bc, x, old), name


def test_dpp8_and_permlanes_on_rdna():
    sel8 = [3, 3, 4, 5, 1, 6, 6, 0]
    code = sum(s << (3 * i) for i, s in enumerate(sel8))
    extra = (f"  y[0 * L + i] = __builtin_amdgcn_mov_dpp8(x[i], {code:#x});\n"
             "  y[1 * L + i] = __builtin_amdgcn_permlane16(o[i], x[i], lo, hi, false, false);\n"
             "  y[2 * L + i] = __builtin_amdgcn_permlanex16(o[i], x[i], lo, hi, false, false);\n"
             "  y[3 * L + i] = __builtin_amdgcn_permlanex16(o[i], x[i], 0x76543210u, 0xfedcba98u, true, false);\n")
    lo, hi = 0x0F1E2D3C & 0xFFFFFFFF, 0x4B5A6978  # nibbles: arbitrary source lanes 0-15
    x, _, y = _run("gfx1201", [], extra, lo, hi, rows=4)
    assert y[0].tolist() == [x[(n & ~7) + sel8[n % 8]] for n in range(32)]
    nib = [((hi << 32 | lo) >> (4 * (n % 16))) & 15 for n in range(32)]
    assert y[1].tolist() == [x[(n // 16) * 16 + nib[n]] for n in range(32)]
    assert y[2].tolist() == [x[(1 - n // 16) * 16 + nib[n]] for n in range(32)]
    assert y[3].tolist() == [x[n ^ 16] for n in range(32)]  # identity selects: swap the two halves


def test_disabled_source_lanes_read_as_invalid():
    # lanes 20-23 read lanes 24-27 (row_shl:4), which the branch disabled: bound_ctrl gives 0, else no write
    extra = ("  if (i < 24) {\n"
             "    y[0 * L + i] = __builtin_amdgcn_update_dpp(o[i], x[i], 0x104, 0xf, 0xf, true);\n"
             "    y[1 * L + i] = __builtin_amdgcn_update_dpp(o[i], x[i], 0x104, 0xf, 0xf, false);\n  }\n")
    x, old, y = _run("gfx1201", [], extra, rows=2)
    act = [n < 24 for n in range(32)]
    for k, bc in enumerate((True, False)):
        want = _expected(0x104, 0xF, 0xF, bc, x, old, act)
        assert y[k].tolist()[:24] == want[:24]


@pytest.mark.parametrize("target, good, bad, why", [
    ("gfx942", "row_mirror", "row_xmask:1", "not modelled for gfx942"),  # an RDNA control on CDNA
    ("gfx1201", "row_mirror", "row_bcast:15", "not modelled for gfx1201"),  # a CDNA control on RDNA
    ("gfx942", "row_mirror row_mask:0xf", "row_bcast:15 row_mask:0xf", "undefined"),  # row 0 has no source
])
def test_what_the_isa_does_not_define_here_raises(target, good, bad, why):
    L = 32 if target.startswith("gfx1") else 64
    isa = compile_hip(_kernel([("row_mirror", 0x140, 0xF, 0xF, False)]), target).isa
    assert good in isa
    with pytest.raises(IsaError, match=why):
        emulate(isa.replace(good, bad), target, "lanes", grid=1, block=L,
                args=[("x", np.zeros(L, np.int32)), ("o", np.zeros(L, np.int32)), ("y", np.zeros(L, np.int32)),
                      np.uint32(0), np.uint32(0)])
