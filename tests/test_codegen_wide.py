"""Wide (32/64/128-bit) global and LDS accesses in the emitted code (tilesim/codegen/wide.py).

Independent sources: the PTX ISA's fragment description of ``mma.m16n8k16`` (.f16 A row-major:
a0,a1 at columns 2*tig + {0,1}, a2,a3 eight rows down; B: b0,b1 at rows 2*tig + {0,1} of column
``group``; C: c0,c1 at columns 2*tig + {0,1}), the offline clang's machine code (which instructions
it selected), the ISA emulator running that code, and float64 numpy for the expected outputs.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilesim as ts
from examples import block_gemm, lds_gemm
from tilesim.codegen import emit_hip
from tilesim.codegen.wide import group_width
from tilesim.diff import run
from tilesim.hw import offline
from tilesim.layouts import Layout
from tilesim.matrix import lookup

MMA = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


def _pairs_at_odd_columns() -> Layout:
    """Lane l holds columns 2l+1 and 2l+2 of one row: adjacent, but never 4-byte aligned."""
    return Layout.from_function({"lane": 32, "slot": 2}, {"row": 1, "col": 66},
                                lambda lane, slot: {"row": 0, "col": 2 * lane + 1 + slot})


def test_group_width_follows_the_ptx_fragment_description():
    row = lookup(MMA, "sm_90")
    a, b, c = row.layout("A"), row.layout("B"), row.layout("C")
    assert group_width(a, 16, stride=64) == 2  # a0,a1 adjacent; a2 is 8 rows down: no 4-element group
    assert group_width(b, 16, stride=64) == 1  # b0,b1 are two rows of one column in row-major B
    assert group_width(b, 16, stride=64, transpose=True) == 2  # B stored N x K: b0,b1 adjacent
    assert group_width(c, 32, stride=64) == 2  # c0,c1: one 64-bit access of two f32
    assert group_width(a, 16, stride=63) == 1  # an odd row stride breaks the alignment of every other row


def test_group_width_of_copy_layouts_alignment_and_swizzle():
    copy = block_gemm.copy_layout(16, 32, 32)  # 8 consecutive f16 of a row per lane and pass
    assert group_width(copy, 16, stride=32) == 8  # 128 bits
    assert group_width(copy, 16, stride=32, swizzle_vec=8) == 8  # XOR with 16-byte units keeps them whole
    assert group_width(copy, 16, stride=32, swizzle_vec=2) == 2  # XOR with dwords: only 32-bit pieces survive
    assert group_width(copy, 16, stride=36) == 4  # row stride 72 bytes: 8-byte aligned rows only
    assert group_width(_pairs_at_odd_columns(), 16, stride=66) == 1


@ts.kernel
def _copy(X: ts.Tensor["f16", "R", "N"], Y: ts.Tensor["f16", "R2", "N2"], *, odd=False):
    ts.grid(3)
    t = ts.tile_id(0)
    lay = _pairs_at_odd_columns() if odd else block_gemm.copy_layout(4, 64, 32)
    c = t * 5  # columns 0, 5, 10: only the first tile is 8-element aligned at run time
    x = ts.load(X[0:, c:], lay)
    ts.store(Y[t * X.shape[0]:, 0:], x)


def test_emitted_source_has_the_wide_access_only_where_the_layout_allows_it():
    wide = emit_hip(_copy.specialize(target="gfx1201", R=4, R2=12, N=72, N2=64)).source
    assert "*(const ts_v4*)(" in wide and "*(ts_v4*)(" in wide  # 128-bit load and store
    assert "% 8 == 0" in wide  # the run-time column alignment guard
    narrow = emit_hip(_copy.specialize(target="gfx1201", R=1, R2=3, N=66, N2=66, odd=True)).source
    body = narrow[narrow.index('extern "C"'):]
    assert "ts_v4" not in body and "ts_v2" not in body and "*(ts_u32*)" not in body
    lds = emit_hip(block_gemm.program("gfx942")).source
    assert "*(ts_v4*)(ts_lds + off)" in lds  # the swizzled 128-bit LDS stores of the copies


@pytest.mark.compiler
@pytest.mark.parametrize(("target", "want"), [("gfx942", {"global_load_dwordx4", "ds_write_b128"}),
                                              ("gfx1201", {"global_load_b128", "ds_store_b128"})])
def test_block_gemm_compiles_to_128_bit_copies_without_spills(target, want):
    prog = block_gemm.program(target)
    comp = offline.compile_hip(emit_hip(prog).source, target, wave_size=prog.wave_size)
    used = set(re.findall(r"^\s*([a-z_0-9]+)\s", comp.isa, re.M))  # the machine code's mnemonics
    assert want <= used, sorted(m for m in used if "load" in m or "store" in m or "write" in m)
    assert comp.metadata["scratch_bytes"] == 0


@pytest.mark.compiler
def test_unaligned_and_partly_out_of_bounds_groups_fall_back_exactly():
    """Tiles read from columns 0 (wide path), 5 and 10 (misaligned: per element), the last one
    running past column 71 (loads give 0 there): the emulated compiled code equals numpy's copy."""
    prog = _copy.specialize(target="gfx1201", R=4, R2=12, N=72, N2=64)
    X = np.random.default_rng(0).standard_normal((4, 72)).astype(np.float16)
    Y = np.zeros((12, 64), np.float64)
    for t in range(3):
        c = 5 * t
        Y[4 * t:4 * t + 4, :min(64, 72 - c)] = X[:, c:c + 64]
    v = run(prog, reference={"Y": Y}, device="emulator", X=X)
    assert v.status == "EMULATED_MATCH", str(v)
    assert np.array_equal(np.asarray(v.device["Y"], np.float64), Y)  # the compiled code, exactly


@pytest.mark.compiler
@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_gemm_examples_with_wide_accesses_are_emulated_match(target):
    progs = [block_gemm.program(target), block_gemm.program(target, 256, 128, 96)]
    progs += [p for p in lds_gemm.programs() if p.target == target]
    for prog in progs:
        arrays = block_gemm.inputs(prog)
        ref = {"C": arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)}  # numpy, not tilesim
        v = run(prog, reference=ref, device="emulator", **arrays)
        assert v.status == "EMULATED_MATCH", (prog.name, str(v))
