"""What clang emits for RDNA3/RDNA4 in wave64 and for CDNA2 (gfx90a), run in the ISA emulator.

Expected values come from numpy (float32 sums in the kernel's order, a ballot mask built bit by bit)
or, for the tile programs, from the tile simulator bit for bit; what the compiler emitted (64-bit
EXEC forms, the descriptor's wave size, WMMA register counts, the user-SGPR layout) is read from
its own assembly. Not run on AMD hardware.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilesim as ts
from examples.gemm import gemm, inputs
from tilesim.codegen.hip import emit_hip
from tilesim.hw.offline import compile_hip
from tilesim.isa import IsaError, emulate, emulate_program

pytestmark = pytest.mark.compiler

BRANCHY = r"""
extern "C" __attribute__((global)) void branchy(const float* x, float* y, unsigned long long* m) {
  int i = __builtin_amdgcn_workitem_id_x() + 64 * __builtin_amdgcn_workgroup_id_x();
  float v = x[i];
  int n = (int)(v * 4.0f);
  float acc = 0.0f;
  for (int k = 0; k < n; ++k) acc += x[(i + k) & 63];   // a divergent loop: EXEC narrows lane by lane
  y[i] = acc;
  if (v > 0.5f) y[i + 128] = x[63 - (i & 63)];         // a divergent branch around a load
  m[i] = __builtin_amdgcn_ballot_w64(v > 0.5f);         // a compare into an SGPR pair, stored
}
extern "C" __attribute__((global)) void lanes(const float* x, unsigned* y, unsigned* c) {
  int i = __builtin_amdgcn_workitem_id_x();
  y[i] = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));  // the lane, as HIP's __lane_id()
  c[i] = __builtin_popcountll(__builtin_amdgcn_ballot_w64(x[i] > 0.0f));
}
extern "C" __attribute__((global)) void shuffle(const int* x, int* y, const int* idx) {
  int i = __builtin_amdgcn_workitem_id_x();
  y[i] = __builtin_amdgcn_ds_bpermute(idx[i] * 4, x[i]);
}
"""
SWAP = r"""extern "C" __attribute__((global)) void swap_halves(const int* x, int* y) {
  int i = __builtin_amdgcn_workitem_id_x();
  y[i] = __builtin_amdgcn_permlane64(x[i]);  // gfx11+ only
}"""
RDNA = ["gfx1100", "gfx1101", "gfx1102", "gfx1200", "gfx1201"]


def _expected(x: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y = np.zeros(256, np.float32)
    m = np.zeros(128, np.uint64)
    for wg in range(2):
        live = range(64 * wg, 64 * wg + block)
        mask = sum(1 << (i % 64) for i in live if x[i] > np.float32(0.5))
        for i in live:
            acc = np.float32(0)
            for k in range(int(np.float32(x[i]) * np.float32(4))):
                acc = np.float32(acc + x[(i + k) & 63])
            y[i] = acc
            if x[i] > np.float32(0.5):
                y[i + 128] = x[63 - (i & 63)]
            m[i] = mask
    return y, m, np.zeros(0)


@pytest.mark.parametrize("block", [64, 40])
@pytest.mark.parametrize("target", RDNA)
def test_divergent_wave64_code_runs_with_64_bit_exec(target: str, block: int) -> None:
    comp = compile_hip(BRANCHY, target, wave_size=64)
    isa = comp.isa
    assert ".amdhsa_wavefront_size32 0" in isa
    assert re.search(r"s_and_saveexec_b64 s\[\d+:\d+\]", isa) and "s_or_b64 exec, exec" in isa
    x = np.random.default_rng(1).uniform(-1, 3, 128).astype(np.float32)
    out = emulate(comp, target, "branchy", grid=2, block=block,
                  args=[("x", x), ("y", np.zeros(256, np.float32)), ("m", np.zeros(128, np.uint64))])
    y, m, _ = _expected(x, block)
    np.testing.assert_array_equal(out.buffers["y"], y)
    np.testing.assert_array_equal(out.buffers["m"], m)
    assert (m >> np.uint64(32)).any()  # the ballot's high half is exercised


def test_wave64_bpermute_within_halves_and_a_crossing_refused() -> None:
    comp = compile_hip(BRANCHY, "gfx1100", wave_size=64)
    x = np.arange(64, dtype=np.int32) * 3 + 7
    n = np.arange(64)
    idx = ((n & 32) | ((n * 7 + 1) % 32)).astype(np.int32)
    out = emulate(comp, "gfx1100", "shuffle", block=64, args=[("x", x), ("y", np.zeros(64, np.int32)), ("idx", idx)])
    np.testing.assert_array_equal(out.buffers["y"], x[idx])
    with pytest.raises(IsaError, match="other half-wave"):
        emulate(comp, "gfx1100", "shuffle", block=64,
                args=[("x", x), ("y", np.zeros(64, np.int32)), ("idx", (63 - n).astype(np.int32))])
    cdna = compile_hip(BRANCHY, "gfx942")  # CDNA's wave64 permutes across the whole wave
    out = emulate(cdna, "gfx942", "shuffle", block=64,
                  args=[("x", x), ("y", np.zeros(64, np.int32)), ("idx", (63 - n).astype(np.int32))])
    np.testing.assert_array_equal(out.buffers["y"], x[63 - n])


@pytest.mark.parametrize("target", ["gfx1100", "gfx1201"])
def test_wave64_wmma_gemm_is_bit_exact_and_uses_the_wave64_register_counts(target: str) -> None:
    mma = "v_wmma_f32_16x16x16_f16"
    regs = {}
    for wave in (32, 64):
        prog = gemm.specialize(target=target, wave_size=wave, M=32, N=32, K=32, mma=mma)
        arrays = inputs(prog)
        np.testing.assert_array_equal(emulate_program(prog, arrays)["C"], ts.simulate(prog, **arrays)["C"])
        isa = compile_hip(emit_hip(prog).source, target, wave_size=wave).isa
        d = re.search(rf"{mma} v\[(\d+):(\d+)\]", isa)
        regs[wave] = int(d.group(2)) - int(d.group(1)) + 1
    # a 16x16 f32 accumulator is 256 values: 8 per lane in wave32, 4 in wave64 (the compiler's operands)
    assert regs == {32: 8, 64: 4}


def test_gfx90a_gemm_is_bit_exact_with_the_kernarg_pointer_after_the_scratch_buffer() -> None:
    prog = gemm.specialize(target="gfx90a", M=64, N=64, K=64, mma="v_mfma_f32_32x32x8f16")
    isa = compile_hip(emit_hip(prog).source, "gfx90a").isa
    # gfx90a (no architected flat scratch): clang enables the private segment buffer, s[0:3], and reads the
    # kernarg segment through s[4:5]
    assert ".amdhsa_user_sgpr_private_segment_buffer 1" in isa and re.search(r"s_load_dword\w* s\[\d+:\d+\], s\[4:5\]", isa)
    arrays = inputs(prog)
    np.testing.assert_array_equal(emulate_program(prog, arrays)["C"], ts.simulate(prog, **arrays)["C"])


def test_gfx90a_scratch_is_refused() -> None:
    src = r"""extern "C" __attribute__((global)) void spill(const int* x, int* y) {
      int buf[64]; int i = __builtin_amdgcn_workitem_id_x();
      for (int k = 0; k < 64; ++k) buf[k] = x[k] * i;
      y[i] = buf[x[i] & 63]; }"""
    comp = compile_hip(src, "gfx90a", opt="-O1")
    assert ".amdhsa_private_segment_fixed_size 0" not in comp.isa
    with pytest.raises(IsaError, match="scratch without architected flat scratch"):
        emulate(comp, "gfx90a", "spill", block=64,
                args=[("x", np.arange(64, dtype=np.int32)), ("y", np.zeros(64, np.int32))])


@pytest.mark.parametrize(("target", "mma"), [("gfx1100", "v_wmma_f32_16x16x16_f16"), ("gfx90a", "v_mfma_f32_16x16x16f16")])
def test_the_layout_audit_traces_wave64_rdna_and_gfx90a(target: str, mma: str) -> None:
    from tests.test_isa_planted import _mutated
    from tilesim.isa import audit_program

    good = gemm.specialize(target=target, wave_size=64, M=32, N=32, K=32, mma=mma)
    assert audit_program(good).ok
    bad = gemm.specialize(target=target, wave_size=64, M=32, N=32, K=32, mma=mma,
                          a_layout=_mutated(mma, target, "A", "lane_off", 64))  # A's lanes 9 and 10 swapped
    rep = audit_program(bad)
    assert not rep.ok and rep.findings
    lanes = {int(m) for f in rep.findings for m in re.findall(r"lane (\d+), A", f.text)}
    assert 9 in lanes and lanes <= {9, 10}  # the finding names the planted lanes, no other


@pytest.mark.parametrize("target", ["gfx1100", "gfx1201", "gfx90a"])
def test_lane_ids_and_ballot_counts_in_wave64(target: str) -> None:
    comp = compile_hip(BRANCHY, target, wave_size=64)
    x = np.random.default_rng(2).standard_normal(128).astype(np.float32)
    out = emulate(comp, target, "lanes", grid=1, block=128,
                  args=[("x", x), ("y", np.zeros(128, np.uint32)), ("c", np.zeros(128, np.uint32))])
    np.testing.assert_array_equal(out.buffers["y"], np.arange(128) % 64)
    per_wave = [(x[64 * w:64 * w + 64] > 0).sum() for w in (0, 1)]
    np.testing.assert_array_equal(out.buffers["c"], np.repeat(per_wave, 64))


@pytest.mark.parametrize("target", ["gfx1100", "gfx1201"])
def test_permlane64_swaps_the_wave64_halves(target: str) -> None:
    comp = compile_hip(SWAP, target, wave_size=64)
    assert "v_permlane64_b32" in comp.isa
    x = np.arange(128, dtype=np.int32) * 5 - 3
    out = emulate(comp, target, "swap_halves", block=128, args=[("x", x), ("y", np.zeros(128, np.int32))])
    n = np.arange(128)
    np.testing.assert_array_equal(out.buffers["y"], x[n ^ 32])  # within each wave of 64: lane i <- lane i ^ 32


def test_the_emulate_command_compiles_for_the_wave_size_asked(tmp_path, capsys):
    """`tilesim emulate --wave 64` on an RDNA target runs one wave64 (the default, wave32, two waves);
    the result is 2x from numpy either way; a wave size the target lacks is a usage error (exit 2)."""
    import json

    from tilesim.cli import main

    src = tmp_path / "twice.hip"
    src.write_text('extern "C" __attribute__((global)) void twice(const float* x, float* y) {\n'
                   "  int i = __builtin_amdgcn_workitem_id_x(); y[i] = 2.0f * x[i]; }\n")
    x = np.arange(64, dtype=np.float32) - 20.5
    np.save(tmp_path / "x.npy", x)
    counts = {}
    for wave in (None, 64):
        out = tmp_path / f"out{wave}"
        argv = ["emulate", str(src), "--target", "gfx1201", "--kernel", "twice", "--block", "64",
                "--arg", f"x={tmp_path / 'x.npy'}", "--arg", "y=zeros:f32[64]", "--out", str(out), "--format", "json"]
        assert main(argv + (["--wave", str(wave)] if wave else [])) == 0
        counts[wave] = json.loads(capsys.readouterr().out)["wave_instructions"]
        assert np.array_equal(np.load(out / "y.npy"), 2 * x)
    assert counts[None] == 2 * counts[64]  # the same straight-line code, two wave32s against one wave64
    assert main(["emulate", str(src), "--target", "gfx942", "--kernel", "twice", "--wave", "32",
                 "--arg", "x=f32[64]", "--arg", "y=zeros:f32[64]"]) == 2
    assert "gfx942 runs wave64 only" in capsys.readouterr().err
