"""The ISA emulator reports LDS reads of bytes no store wrote (trust, round five).

The emulator's LDS starts at zeros; the hardware's holds what an earlier workgroup left. A kernel that
accumulates into LDS it never zeroed (``buf[t] += x[t]``) gave the right answer in the emulator, and
``tilesim emulate`` / ``audit`` exited 0 on it (the tile simulator has flagged such reads in tile programs
since 0.7; compiled and hand-written code were not watched). Now each such read is in
``Emulation.unwritten``: ``emulate`` exits 1, the audit fails (``AuditReport.hazards``), and an emulated
run of a tile program is an EMULATED_MISMATCH.

The right answer of the kernel is undefined by the HIP/C++ rules (an uninitialised ``__shared__`` array),
not by tilesim; the neighbour that zeroes ``buf`` first is clean.
"""

from __future__ import annotations

import numpy as np
import pytest

from tilesim.cli import main
from tilesim.hw.offline import compile_hip
from tilesim.isa import emulate

SRC = r"""
extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(1, 64)))
void acc(const float* __restrict__ x, float* __restrict__ y) {
  __attribute__((shared)) float buf[64];
  int t = __builtin_amdgcn_workitem_id_x();
  ZERO
  buf[t] += x[t];
  __builtin_amdgcn_s_barrier();
  y[t] = buf[t];
}
"""


@pytest.mark.compiler
@pytest.mark.parametrize("target", ["gfx1201", "gfx1100", "gfx942", "gfx950"])
def test_an_lds_accumulator_never_zeroed_is_reported(target):
    x = np.arange(64, dtype=np.float32)
    args = [("x", x), ("y", np.zeros(64, np.float32))]
    bad = emulate(compile_hip(SRC.replace("ZERO", ""), target), target, "acc", block=64, args=args)
    np.testing.assert_array_equal(bad.buffers["y"], x)  # "right" only because the emulator's LDS is zeros
    assert bad.unwritten and "no store wrote" in bad.unwritten[0] and "ds_" in bad.unwritten[0]
    good = emulate(compile_hip(SRC.replace("ZERO", "buf[t] = 0.0f; __builtin_amdgcn_s_barrier();"), target),
                   target, "acc", block=64, args=args)
    np.testing.assert_array_equal(good.buffers["y"], x)
    assert good.unwritten == ()


@pytest.mark.compiler
@pytest.mark.parametrize("command", ["emulate", "audit"])
def test_emulate_and_audit_exit_1_on_it(tmp_path, capsys, command):
    (tmp_path / "k.hip").write_text(SRC.replace("ZERO", ""))
    args = ["--target", "gfx1201", "--kernel", "acc", "--block", "64", "--arg", "x=f32[64]", "--arg", "y=zeros:f32[64]"]
    code = main([command, str(tmp_path / "k.hip"), *args])
    out = capsys.readouterr().out
    if command == "emulate":
        assert code == 1 and "unwritten LDS read" in out  # was 0
    else:  # no matrix instruction: undecided (3) before; the unwritten read fails it
        assert code == 1 and "unwritten LDS read" in out
