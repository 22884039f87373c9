"""``ldmatrix`` selection for NVIDIA fragment loads from LDS (tilesim/codegen/ldmatrix.py).

The equivalence with the per-slot LDS load it replaces is checked against the PTX ISA's text, written
out here independently of tilesim's code:

* ``ldmatrix ... .m8n8.xN[.trans].b16``: threads 8i..8i+7 address rows 0..7 of matrix i; thread t
  gets in register i elements (t/4, 2(t%4)+j), j = 0, 1 (low half first), or with ``.trans``
  (2(t%4)+j, t/4).
* ``mma.m16n8k16`` .f16 fragments (group = t/4, tig = t%4): A a0..a7 at row group (+8 for a2, a3,
  a6, a7), col 2*tig + {0,1} (+8 for a4..a7); B b0..b3 at row (k) 2*tig + {0,1} (+8 for b2, b3),
  col group.

The H100 run of benchmarks/cuda.py checks the emitted kernel's bits (docs/performance.md).
"""

from __future__ import annotations

from examples import block_gemm, lds_gemm
from tilesim.codegen import emit_hip
from tilesim.codegen.ldmatrix import ldmatrix_plan
from tilesim.matrix import lookup

MMA = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


def _ptx_ldmatrix(blocks, trans):
    """{(lane, register, half): (row, col)} loaded by ldmatrix with matrix i at blocks[i]."""
    out = {}
    for t in range(32):
        for i, (r0, c0) in enumerate(blocks):
            for j in range(2):
                r, c = (2 * (t % 4) + j, t // 4) if trans else (t // 4, 2 * (t % 4) + j)
                out[t, i, j] = (r0 + r, c0 + c)
    return out


def _ptx_mma_a():
    out = {}
    for t in range(32):
        g, tig = t // 4, t % 4
        for a in range(8):
            out[t, a // 2, a % 2] = (g + 8 * (a in (2, 3, 6, 7)), 2 * tig + a % 2 + 8 * (a >= 4))
    return out


def _ptx_mma_b():
    out = {}
    for t in range(32):
        g, tig = t // 4, t % 4
        for b in range(4):
            out[t, b // 2, b % 2] = (2 * tig + b % 2 + 8 * (b >= 2), g)
    return out


def _layout_elements(lay):
    slots = dict(lay.in_dims)["slot"]
    out = {}
    for t in range(32):
        for s in range(slots):
            e = lay.apply(lane=t, slot=s)
            out[t, s // 2, s % 2] = (e["row"], e["col"])
    return out


def test_ldmatrix_plans_load_exactly_the_ptx_mma_fragments():
    row = lookup(MMA, "sm_90")
    a, b = row.layout("A"), row.layout("B")
    pa, pb = ldmatrix_plan(a, 16), ldmatrix_plan(b, 16)
    assert pa is not None and not pa.trans
    assert pb is not None and pb.trans
    # what ldmatrix delivers (PTX ISA) == the mma fragment (PTX ISA) == what the per-slot load moves (layout)
    assert _ptx_ldmatrix(pa.blocks, False) == _ptx_mma_a() == _layout_elements(a)
    assert _ptx_ldmatrix(pb.blocks, True) == _ptx_mma_b() == _layout_elements(b)


def test_layouts_ldmatrix_cannot_load_get_no_plan():
    assert ldmatrix_plan(block_gemm.copy_layout(16, 32, 32), 16) is None  # 8 elements of a row per lane
    assert ldmatrix_plan(lookup(MMA, "sm_90").layout("A"), 32) is None  # 32-bit elements


def test_emitted_sm90_block_gemm_uses_ldmatrix_and_keeps_the_fallback():
    src = emit_hip(block_gemm.program("sm_90")).source
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in src  # A: 4 registers, one instruction
    assert "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16" in src  # B: transposed on the way
    assert "__cvta_generic_to_shared" in src
    assert "*((ts_u16*)(ts_lds + off)) << lo)" in src  # the per-slot load stays for a misaligned column
    for prog in block_gemm.programs():  # AMD sources never get it
        if prog.target.startswith("gfx"):
            assert "ldmatrix" not in emit_hip(prog).source


def test_a_swizzle_that_splits_16_byte_rows_gets_no_ldmatrix():
    # lds_gemm's swizzle XORs single dwords (vec=2): an 8-element row is not contiguous in LDS
    prog = lds_gemm.lds_gemm.specialize(target="sm_90", M=32, N=32, K=32, mma=MMA, **lds_gemm.SMEM["swizzled"])
    assert "ldmatrix" not in emit_hip(prog).source
    prog = lds_gemm.lds_gemm.specialize(target="sm_90", M=32, N=32, K=32, mma=MMA)  # plain: 16-f16 rows
    assert "ldmatrix" in emit_hip(prog).source
