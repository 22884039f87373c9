"""``ts.lds_copy_async`` on CDNA3/CDNA4 as direct global -> LDS loads (``global_load_lds_*``), and the
ISA emulator's model of them (tilesim/isa/lds_dma.py). Not run on AMD hardware.

Expectations come from outside the code under test: which copy sizes each target has from what
clang accepts; the LDS place each lane writes from the ISA guides' formula (M0 + offset + lane *
stride), evaluated with numpy on the kernel's inputs; the ``s_waitcnt`` immediate from the
compiler's own printing of it; ``v_bitop3_b32`` from numpy evaluating the C expression clang
turned into it; GEMM results from the tile simulator (itself checked against float64)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilesim as ts
from examples import block_gemm
from tilesim.codegen.async_copy import _WAIT_VMCNT0
from tilesim.codegen.hip import emit_hip
from tilesim.errors import ToolchainError
from tilesim.hw.offline import compile_hip
from tilesim.isa import IsaError, emulate, emulate_program
from tilesim.matrix.dtypes import encode, to_memory
from tilesim.targets import lds_dma_bytes

pytestmark = pytest.mark.compiler

_PROBE = r'''
extern "C" __attribute__((global)) void k(const unsigned* __restrict__ x, unsigned* __restrict__ y) {
  __attribute__((shared)) __attribute__((aligned(16))) unsigned buf[1024];
  const int t = __builtin_amdgcn_workitem_id_x();
  _Pragma("unroll") for (int j = 0; j < 16; ++j) buf[t + 64 * j] = 0xdeadbeefu;
  __builtin_amdgcn_s_waitcnt(0);
  __builtin_amdgcn_s_barrier();
  typedef __attribute__((address_space(3))) char lds_char;
  typedef __attribute__((address_space(3))) void lds_void;
  __builtin_amdgcn_global_load_lds((void*)(x + PERM * SZ / 4), (lds_void*)((lds_char*)buf + BASE), SZ, OFF, 0);
  WAIT
  __builtin_amdgcn_s_barrier();
  _Pragma("unroll") for (int j = 0; j < 16; ++j) y[t + 64 * j] = buf[t + 64 * j];
}'''


def _probe(size: int, base: int = 0, off: int = 0, wait: bool = True) -> str:
    return (_PROBE.replace("PERM", "((t * 13 + 5) % 64)").replace("SZ", str(size)).replace("BASE", str(base))
            .replace("OFF", str(off)).replace("WAIT", f"__builtin_amdgcn_s_waitcnt({_WAIT_VMCNT0});" if wait else ""))


@pytest.mark.parametrize("target", ["gfx942", "gfx950", "gfx1201"])
def test_the_sizes_a_target_has_are_the_ones_clang_accepts(target):
    accepted = []
    for size in (1, 2, 4, 8, 12, 16):
        try:
            compile_hip(_probe(size), target)
            accepted.append(size)
        except ToolchainError as e:
            assert "size" in str(e) or "vmem-to-lds" in str(e), e
    assert tuple(accepted) == lds_dma_bytes(target)


def test_the_wait_immediate_is_vmcnt_0_alone():
    src = f'extern "C" __attribute__((global)) void k() {{ __builtin_amdgcn_s_waitcnt({_WAIT_VMCNT0}); }}'
    waits = [ln.strip() for ln in compile_hip(src, "gfx942").isa.splitlines() if "s_waitcnt" in ln]
    assert waits == ["s_waitcnt vmcnt(0)"]


@pytest.mark.parametrize("target,size,stride", [("gfx942", 4, 4), ("gfx950", 4, 4), ("gfx950", 16, 16)])
@pytest.mark.parametrize("base,off", [(0, 0), (256, 16)])
def test_each_lane_writes_m0_plus_offset_plus_lane_times_stride(target, size, stride, base, off):
    comp = compile_hip(_probe(size, base, off), target)
    assert f"global_load_lds_dword{'x4' if size == 16 else ''} " in comp.isa
    x = (np.arange(64 * 4 + 64, dtype=np.uint64) * 2654435761 % (1 << 32)).astype(np.uint32)
    out = emulate(comp, target, "k", grid=1, block=64, args=[("x", x.astype(np.uint32)),
                                                             ("y", np.zeros(1024, np.uint32))])
    # ISA: lane l loads `size` bytes from its address + offset and writes them at M0 + offset + l * stride
    want = np.full(1024, 0xDEADBEEF, np.uint32)
    words = size // 4
    for lane in range(64):
        src = ((lane * 13 + 5) % 64) * size // 4 + off // 4
        dst = (base + off + lane * stride) // 4
        want[dst: dst + words] = x[src: src + words]
    assert np.array_equal(out.buffers["y"], want)
    assert out.hazards == () and out.races == ()


def test_a_read_before_the_wait_is_a_hazard():
    comp = compile_hip(_probe(4, wait=False), "gfx942")
    after = comp.isa.split("global_load_lds_dword", 1)[1].split("ds_read", 1)[0]
    assert "vmcnt" not in after  # this clang inserts no wait of its own here: the read is unguarded
    out = emulate(comp, "gfx942", "k", grid=1, block=64, args=[("x", np.zeros(128, np.uint32)),
                                                               ("y", np.zeros(1024, np.uint32))])
    assert any("global_load_lds of wave 0" in h and "reads LDS byte" in h for h in out.hazards), out.hazards


def test_a_size_the_target_lacks_is_refused():
    isa = compile_hip(_probe(4), "gfx942").isa
    assert "global_load_lds_dword v" in isa
    bad = re.sub(r"global_load_lds_dword (v\d+), (s\[\d+:\d+\])", r"global_load_lds_dwordx4 \1, \2", isa)
    with pytest.raises(IsaError, match="gfx942 has no 16-byte global_load_lds"):
        emulate(bad, "gfx942", "k", grid=1, block=64, args=[("x", np.zeros(512, np.uint32)),
                                                            ("y", np.zeros(1024, np.uint32))])


def test_v_bitop3_b32_is_the_truth_table_clang_encodes():
    exprs = ["(a & b) | c", "a ^ (b & ~c)", "(a | b) & ~c", "~(a ^ b ^ c)", "(a & ~b) | (b & c)"]
    body = "".join(f"  y[{i} * 64 + t] = {e};\n" for i, e in enumerate(exprs))
    src = ('extern "C" __attribute__((global)) void k(const unsigned* x, unsigned* y) {\n'
           "  const int t = __builtin_amdgcn_workitem_id_x();\n"
           "  const unsigned a = x[t], b = x[64 + t], c = x[128 + t];\n" + body + "}")
    comp = compile_hip(src, "gfx950")
    assert "v_bitop3_b32" in comp.isa
    rng = np.random.default_rng(0)
    x = rng.integers(0, 1 << 32, 192, dtype=np.uint64).astype(np.uint32)
    out = emulate(comp, "gfx950", "k", grid=1, block=64, args=[("x", x), ("y", np.zeros(64 * len(exprs), np.uint32))])
    a, b, c = x[:64], x[64:128], x[128:]
    want = np.concatenate([eval(e, {}, {"a": a, "b": b, "c": c}) for e in exprs]).astype(np.uint32)
    assert np.array_equal(out.buffers["y"], want)


# ---------------------------------------------------------------------------- block_gemm
@pytest.mark.parametrize("stages", [2, 3])  # 3: two copies in flight (async_wait(1), emitted as vmcnt(0))
@pytest.mark.parametrize("target,mnemonic", [("gfx942", "global_load_lds_dword"),
                                             ("gfx950", "global_load_lds_dwordx4")])
def test_block_gemm_async_copies_are_global_load_lds_and_emulate_bit_identical(target, mnemonic, stages):
    prog = block_gemm.program(target, 128, 128, 64 * (stages - 1), async_copy=True, stages=stages)
    arrays = block_gemm.inputs(prog)
    comp = compile_hip(emit_hip(prog).source, target)
    assert re.search(rf"\b{mnemonic}\b", comp.isa) and comp.metadata["scratch_bytes"] == 0
    res = emulate_program(prog, arrays)
    assert np.array_equal(res["C"], ts.simulate(prog, **arrays)["C"])
    assert res.hazards == () and res.races == ()


def test_block_gemm_without_its_wait_is_a_hazard():
    prog = block_gemm.program("gfx942", 128, 128, 64, async_copy=True)
    em = emit_hip(prog)
    isa = compile_hip(em.source, "gfx942").isa
    planted = isa.replace("s_waitcnt vmcnt(0) lgkmcnt(0)\n\ts_barrier", "s_waitcnt lgkmcnt(0)\n\ts_barrier")
    assert planted != isa
    arrays = block_gemm.inputs(prog)
    args = [(n, to_memory(encode(arrays[n], prog.tensor(n).dtype) if n in arrays
                          else np.zeros(prog.tensor(n).shape, np.uint64), prog.tensor(n).dtype)) for n in em.tensors]
    run = [emulate(text, "gfx942", em.kernel, grid=em.grid, block=em.block, args=args) for text in (isa, planted)]
    assert run[0].hazards == ()
    assert any("may still be writing it" in h for h in run[1].hazards)


def test_a_copy_whose_lanes_are_not_in_lds_order_stays_synchronous_and_matches():
    # block_gemm's register-staging copy layout: the LDS swizzle puts lanes' 16-byte units out of lane order
    mma, options = block_gemm.CONFIGS["gfx950"]
    prog = block_gemm.block_gemm.specialize(target="gfx950", M=128, N=128, K=64, mma=mma, async_copy=True, **options)
    src = emit_hip(prog).source
    assert "__builtin_amdgcn_global_load_lds" not in src and "no asynchronous copy emitted" in src
    arrays = block_gemm.inputs(prog)
    assert np.array_equal(emulate_program(prog, arrays)["C"], ts.simulate(prog, **arrays)["C"])


def test_rdna_keeps_the_synchronous_copy():
    prog = block_gemm.program("gfx1201", 128, 128, 64, async_copy=True)
    src = emit_hip(prog).source
    assert "__builtin_amdgcn_global_load_lds" not in src and "s_waitcnt" not in src
    assert "global_load_lds" not in compile_hip(src, "gfx1201").isa


@ts.kernel
def _staged(A: ts.Tensor["f32", "M", "K"], C: ts.Tensor["f32", "M", "K"], *, row0=0, group=4):
    ts.grid(1)
    s = ts.lds_alloc("f32", 32, 32, vec=8, per_phase=2, max_phase=4)
    lay = block_gemm.lds_order_layout(16, 32, 64, group, 8, 2, 4)  # lanes in LDS order at rows 0, 8, 16, ...
    ts.lds_copy_async(s, row0, 0, A[0:, 0:], lay)
    ts.async_commit()
    ts.async_wait(0)
    ts.barrier()
    ts.store(C[0:, 0:], ts.lds_load(s, row0, 0, lay))


@pytest.mark.parametrize("target,group", [("gfx942", 1), ("gfx950", 4)])  # f32: 4 and 16 bytes a lane
@pytest.mark.parametrize("row0", [0, 8, 2, 5])
def test_the_run_time_condition_takes_the_direct_copy_only_in_lane_order(target, group, row0):
    """Rows 2 and 5 shift the swizzle's phase under the lanes: their LDS places leave lane order, so the
    condition is false (clang folds it: no global_load_lds left) and the copy goes element by element."""
    prog = _staged.specialize(target=target, M=16, K=32, row0=row0, group=group)
    X = (np.arange(16 * 32) * 1.25 - 99).astype(np.float32).reshape(16, 32)
    assert ts.check(prog).ok
    isa = compile_hip(emit_hip(prog).source, target).isa
    assert ("global_load_lds" in isa) == (row0 % 8 == 0)
    res = emulate_program(prog, {"A": X})
    assert np.array_equal(res["C"], X) and np.array_equal(ts.simulate(prog, A=X)["C"], X)
    assert res.hazards == () and res.races == ()


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_block_gemm_async_at_4096_keeps_the_direct_copies_and_does_not_spill(target):
    comp = compile_hip(emit_hip(block_gemm.program(target, 4096, 4096, 4096, async_copy=True)).source, target)
    assert comp.isa.count("global_load_lds_dword") == {"gfx942": 32, "gfx950": 8}[target]
    assert comp.metadata["scratch_bytes"] == 0


def test_block_gemm_on_gfx950_without_async_copies_emulates_too():
    # its compiled code has v_bitop3_b32, which raised before the emulator modelled it
    prog = block_gemm.program("gfx950", 128, 128, 64)
    arrays = block_gemm.inputs(prog)
    assert "v_bitop3_b32" in compile_hip(emit_hip(prog).source, "gfx950").isa
    assert np.array_equal(emulate_program(prog, arrays)["C"], ts.simulate(prog, **arrays)["C"])
