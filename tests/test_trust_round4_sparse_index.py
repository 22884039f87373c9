"""Round four: a sparse (SMFMAC/SWMMAC) index code outside the 2:4 format is not given a meaning.

The metadata keeps, per group of four k, two positions ``idx0 < idx1`` (CDNA3 ISA §7.1.6, RDNA4
§7.9; ``tilesim.matrix.sparse``): 6 of the 16 four-bit codes. For the other 10 (a metadata tensor
never written reads as code 0: idx0 = idx1 = 0) no source says what the instruction reads; the
simulator and the ISA emulator added both kept values into one k, and the example's reference
(which decompresses the same way) agreed: REFERENCE_OK and EMULATED_MATCH on a kernel whose
device result nobody can state. Now the simulation fails closed (CHECK_FAILED) and the emulator
refuses (DEVICE_ERROR). The codes are judged here by bit arithmetic on the format, not by tilesim.
"""

from __future__ import annotations

import numpy as np
import pytest

import examples.sparse_gemm as sg
import tilesim as ts
from tilesim.diff import run
from tilesim.isa import IsaError, emulate_program

pytestmark = pytest.mark.compiler  # emulate_program compiles with the offline AMDGPU clang


def _outside_the_format(meta: np.ndarray) -> np.ndarray:
    """Per group code (two per byte, low nibble first): idx0 = bits 0-1, idx1 = bits 2-3, valid iff idx0 < idx1."""
    m = np.asarray(meta, np.int64)
    codes = np.stack([m & 15, m >> 4], -1)
    return (codes & 3) >= (codes >> 2)


def _case(fill: int):
    prog = next(p for p in sg.programs(M=32, N=32, K=64) if p.target == "gfx942")
    arrays = sg.inputs(prog)
    arrays["Am"] = np.full_like(arrays["Am"], fill)
    return prog, arrays


@pytest.mark.parametrize("fill", [0x00, 0x11, 0x4B])  # codes 0|0, 1|1, 11 (idx0 3 > idx1 2) beside 4 (valid)
def test_an_index_code_outside_the_format_fails_the_simulation(fill):
    prog, arrays = _case(fill)
    assert _outside_the_format(arrays["Am"]).any()
    res = ts.simulate(prog, **arrays)
    v = run(prog, reference=sg.reference(**arrays), **arrays)
    assert v.status == "CHECK_FAILED" and "index" in v.reason, v.reason
    with pytest.raises(IsaError, match="idx0 < idx1"):
        emulate_program(prog, arrays)
    assert res.report.summary()["sparse_index_outside_format"] > 0


def test_the_compressed_metadata_still_passes_everywhere():
    prog, arrays = _case(0)
    arrays = sg.inputs(prog)  # compress(): every code valid
    assert not _outside_the_format(arrays["Am"]).any()
    assert run(prog, reference=sg.reference(**arrays), **arrays).status == "COMPILE_ONLY"
    assert np.array_equal(emulate_program(prog, arrays)["C"], ts.simulate(prog, **arrays)["C"])
