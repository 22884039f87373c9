"""Compiler truth: every AMD row's builtin compiles for every target that has it, and the ISA
the real compiler emits shows the row's instruction (in one of its spellings).

The expected mnemonic comes from the catalog; the observed one from clang's ISA output, an
independent source. One translation unit per (target, wave) keeps the whole sweep to a few
seconds, so CI runs every target.
"""

from __future__ import annotations

import pytest

from tilesim.errors import InstructionError, ToolchainError
from tilesim.targets import MATRIX_CORE_PATHS, TARGETS
from tilesim.matrix.catalog import lookup, rows
from tilesim.matrix.probe import kernel_mnemonics, probe_source

offline = pytest.importorskip("tilesim.hw.offline")

# LLVM removed gfx940 and gfx941 (they were pre-production MI300 steppings); clang 22 rejects
# them as --offload-arch. Their rows are the gfx942 rows, which are compiled below.
REMOVED_FROM_LLVM = {"gfx940", "gfx941"}

# Every AMD target with a matrix path, every wave size: derived from the target table alone, so a
# target that has no builtins (rows forgotten) is a failing case, not a missing one.
CASES = [
    (t.name, w)
    for t in TARGETS.values()
    if t.vendor == "amd" and t.matrix_path in MATRIX_CORE_PATHS and t.name not in REMOVED_FROM_LLVM
    for w in t.wave_sizes
]


def _clang_or_skip() -> None:
    try:
        offline.clang_command()
    except ToolchainError as e:  # pragma: no cover - the dev extra installs ziglang
        pytest.skip(f"no AMDGPU clang: {e}")


@pytest.mark.compiler
@pytest.mark.parametrize(("target", "wave"), CASES, ids=[f"{t}-w{w}" for t, w in CASES])
def test_every_builtin_compiles_and_emits_its_instruction(target: str, wave: int) -> None:
    _clang_or_skip()
    have = [r for r in rows() if target in r.targets]
    src, kept = probe_source(have, wave)
    assert kept, f"no builtins for {target} wave{wave}"
    # strict vector types: HIP otherwise accepts any same-size vector, which would hide a wrong
    # element type in the catalog's builtin signature
    compiled = offline.compile_hip(src, target, wave_size=wave, extra_args=("-flax-vector-conversions=none",))
    assert compiled.metadata.get("wavefront_size") == wave
    seen = kernel_mnemonics(compiled.isa)
    missing = [
        (r.mnemonic, seen.get(i))
        for i, r in enumerate(kept)
        if not set(seen.get(i, [])) & set(r.spellings)
    ]
    assert not missing, f"{target} wave{wave}: ISA does not show {missing}"


@pytest.mark.compiler
@pytest.mark.parametrize("target", sorted(REMOVED_FROM_LLVM))
def test_targets_llvm_removed_are_reported_by_the_compiler(target: str) -> None:
    """We say exactly what the compiler says, instead of silently skipping."""
    _clang_or_skip()
    with pytest.raises(ToolchainError, match=target):
        offline.compile_hip('extern "C" __attribute__((global)) void k() {}', target)


@pytest.mark.parametrize(
    ("mnemonic", "target", "pattern"),
    [
        ("v_wmma_f32_16x16x16_f16", "gfx1030", "gfx1030 .*matrix path dp4a.* exists on: .*gfx1100"),
        ("v_mfma_f32_32x32x8f16", "gfx1201", "gfx1201 .*exists on: gfx908"),
        ("v_wmma_f32_16x16x16_fp8_fp8", "gfx1100", "exists on: gfx1200, gfx1201"),
        ("v_mfma_f32_16x16x32_f16", "gfx942", "exists on: gfx950"),
        ("v_mfma_f32_16x16x8_xf32", "gfx950", "exists on: gfx940, gfx941, gfx942"),
        ("v_mfma_f32_32x32x8f16", "gfx1010", "gfx1010 .*matrix path none"),
    ],
)
def test_target_without_the_instruction_is_rejected_before_any_compiler(mnemonic, target, pattern) -> None:
    with pytest.raises(InstructionError, match=pattern):
        lookup(mnemonic, target)


_TOKEN_BITS = {"f32": 32, "f64": 64, "f16": 16, "fp16": 16, "bf16": 16, "i16": 16, "i32": 32, "i64": 64, "i8": 8}


def _vgprs(tok: str) -> int:
    import re

    m = re.fullmatch(r"v(\d+)(\w+)", tok)
    n, base = (int(m.group(1)), m.group(2)) if m else (1, tok)
    return -(-n * _TOKEN_BITS[base] // 32)


BUILTIN_ROWS = [(r, b) for r in rows() for b in r.builtins if r.kind != "mma_sync"]


@pytest.mark.parametrize(("row", "builtin"), BUILTIN_ROWS, ids=[f"{r.family}:{b.name}" for r, b in BUILTIN_ROWS])
def test_register_counts_equal_the_builtin_signature(row, builtin) -> None:
    """clang's declared operand types (an independent source) fix each operand's VGPRs per lane."""
    operands = [t for t in builtin.args if not t.startswith("imm:")]
    names = ["A", "B", "C", "K"] if row.sparse else ["A", "B", "C"]  # sparse: C = D in place, then the index
    regs = row.registers_for(builtin.wave)
    declared = {op: _vgprs(t) for op, t in zip(names, operands)}
    declared["D"] = _vgprs(builtin.ret)
    assert {op: regs[op] for op in declared} == declared
    # anything after the matrix operands is a block-scale operand: one i32 each (gfx950 v_mfma_scale_*,
    # gfx1250 v_wmma_scale_*: four 8-bit scales), one i64 each for gfx1250 v_wmma_scale16_* (eight)
    scale = "i64" if "_scale16_" in builtin.name else "i32"
    assert all(t == scale for t in operands[len(names):]), operands
