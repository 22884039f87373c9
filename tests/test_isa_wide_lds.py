"""Emulator rows the wide LDS code of tilesim/codegen/wide.py makes clang select (gfx942): ``v_xad_u32``
and the ``stride64`` two-address LDS loads. Expected values from the ISA's definitions with Python
integers: V_XAD_U32 D = (S0 ^ S1) + S2 mod 2**32; DS_READ2ST64_B64 reads qwords at
ADDR + OFFSET0*8*64 and ADDR + OFFSET1*8*64 (the same as the gfx12 name ds_load_2addr_stride64_b64)."""

from __future__ import annotations

import numpy as np

from tests._isa_harness import run

RNG = np.random.default_rng(17)
M32 = (1 << 32) - 1


def _ints(x: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(x).ravel()]


def test_v_xad_u32_is_xor_then_add_modulo_2_32() -> None:
    a, b, c = (RNG.integers(0, 2**32, 64, dtype=np.uint64) for _ in range(3))
    st = run("gfx942", "\tv_xad_u32 v3, v0, v1, v2", {0: a, 1: b, 2: c})
    assert _ints(st.v[3][0]) == [((x ^ y) + z) & M32 for x, y, z in zip(_ints(a), _ints(b), _ints(c))]


def test_ds_read2st64_b64_offsets_count_64_qwords() -> None:
    lo, hi = RNG.integers(0, 2**32, 64, dtype=np.uint64), RNG.integers(0, 2**32, 64, dtype=np.uint64)
    x, y = RNG.integers(0, 2**32, 64, dtype=np.uint64), RNG.integers(0, 2**32, 64, dtype=np.uint64)
    addr = np.arange(64, dtype=np.uint64) * 8  # lane l: bytes 8l..8l+7
    body = ("\tds_write_b64 v0, v[2:3]\n\tds_write_b64 v0, v[4:5] offset:1024\n\ts_waitcnt lgkmcnt(0)\n"
            "\tds_read2st64_b64 v[6:9], v0 offset1:2\n\ts_waitcnt lgkmcnt(0)")
    st = run("gfx942", body, {0: addr, 2: lo, 3: hi, 4: x, 5: y}, lds=2048)
    # offset1:2 is 2 * 64 * 8 = 1024 bytes past the address: the second write's qword
    assert [_ints(st.v[r][0]) for r in (6, 7, 8, 9)] == [_ints(lo), _ints(hi), _ints(x), _ints(y)]
