"""Compiler truth for the LDS transpose reads: every row's clang builtin compiles for the targets
the catalog gives it, the ISA shows the row's mnemonic, and clang refuses it elsewhere (the
catalog's target list is checked against the compiler, not the other way round)."""

from __future__ import annotations

import re

import pytest

from tilesim.errors import ToolchainError
from tilesim.matrix.lds_transpose import TRANSPOSE_READS, TransposeRead
from tilesim.targets import TARGETS

offline = pytest.importorskip("tilesim.hw.offline")

REMOVED_FROM_LLVM = {"gfx940", "gfx941"}  # clang 22 rejects them as --offload-arch (see test_compiler_truth)
AMD = [t.name for t in TARGETS.values() if t.vendor == "amd" and t.name not in REMOVED_FROM_LLVM]
# quick refusal set: a CDNA3, an RDNA3 and an RDNA4 target, plus each family's rows on the other family
QUICK_OTHERS = ("gfx942", "gfx1100", "gfx1201", "gfx950", "gfx1250")


def _source(rows: list[TransposeRead]) -> str:
    out = []
    for i, r in enumerate(rows):
        ty, n = r.vector
        out.append(f"typedef {ty} v{i}_t __attribute__((ext_vector_type({n})));\n"
                   f"__attribute__((global)) void k{i}(v{i}_t* out, int i) {{\n"
                   f"  __attribute__((shared)) v{i}_t lds[64];\n"
                   f"  lds[__builtin_amdgcn_workitem_id_x()] = out[i];\n"
                   f"  __builtin_amdgcn_s_barrier();\n"
                   f"  out[__builtin_amdgcn_workitem_id_x()] = "
                   f"{r.builtin}((__attribute__((address_space(3))) v{i}_t*)&lds[i]);\n}}\n")
    return "".join(out)


def _clang_or_skip() -> None:
    try:
        offline.clang_command()
    except ToolchainError as e:  # pragma: no cover - the dev extra installs ziglang
        pytest.skip(f"no AMDGPU clang: {e}")


HAVING = sorted({t for r in TRANSPOSE_READS.values() for t in r.targets})


@pytest.mark.compiler
@pytest.mark.parametrize("target", HAVING)
def test_builtins_compile_and_show_their_mnemonic(target):
    _clang_or_skip()
    rows = [r for r in TRANSPOSE_READS.values() if target in r.targets]
    isa = offline.compile_hip(_source(rows), target).isa
    for i, r in enumerate(rows):
        body = isa.split(f"_Z2k{i}P", 1)[1].split(".Lfunc_end", 1)[0]
        seen = set(re.findall(r"\b(ds_\w*tr\w*)\b", body))
        assert seen & {r.mnemonic, *r.aliases}, f"{target}: {r.builtin} became {sorted(seen)}, not {r.mnemonic}"


def _refused(r: TransposeRead, target: str) -> None:
    with pytest.raises(ToolchainError, match="needs target feature"):
        offline.compile_hip(_source([r]), target)


@pytest.mark.compiler
@pytest.mark.parametrize("name", sorted(TRANSPOSE_READS))
def test_builtins_are_refused_on_other_targets(name):
    _clang_or_skip()
    r = TRANSPOSE_READS[name]
    for target in QUICK_OTHERS:
        if target not in r.targets:
            _refused(r, target)


@pytest.mark.slow
@pytest.mark.compiler
@pytest.mark.parametrize("name", sorted(TRANSPOSE_READS))
def test_catalog_targets_are_exactly_the_compilers(name):
    _clang_or_skip()
    r = TRANSPOSE_READS[name]
    accepted = []
    for target in AMD:
        try:
            offline.compile_hip(_source([r]), target)
            accepted.append(target)
        except ToolchainError as e:
            assert "needs target feature" in str(e), f"{target}: {e}"
    assert tuple(accepted) == r.targets


_EXEC_KERNEL = """typedef short v4 __attribute__((ext_vector_type(4)));
typedef int v2 __attribute__((ext_vector_type(2)));
__attribute__((global)) void k(v4* out, int n) {
  __attribute__((shared)) v2 lds[64];
  const int lane = __builtin_amdgcn_workitem_id_x();
  lds[lane] = (v2){(4 * lane) | ((4 * lane + 1) << 16), (4 * lane + 2) | ((4 * lane + 3) << 16)};
  __builtin_amdgcn_s_barrier();
  v4 x = {-1, -1, -1, -1};
  if (lane < n) x = __builtin_amdgcn_ds_read_tr16_b64_v4i16((__attribute__((address_space(3))) v4*)&lds[lane]);
  out[lane] = x;
}
"""


@pytest.mark.compiler
def test_compiled_kernel_in_the_emulator_and_its_exec_check():
    """clang's code for a HIP kernel: with all 64 lanes active, lane l holds element l % 4 of the
    lanes the ISA formula names (each lane's LDS row is its own ids 4s..4s+3); with only lanes 0-7
    active (``if (lane < 8)``) the emulator refuses the partly active 16-lane group."""
    import numpy as np

    from tilesim.isa import IsaError, emulate

    _clang_or_skip()
    c = offline.compile_hip(_EXEC_KERNEL, "gfx950")
    res = emulate(c, "gfx950", grid=1, block=64, args=[("out", np.zeros((64, 4), np.int16)), np.int32(64)])
    got = res.buffers["out"]
    lane = np.arange(64)[:, None]
    src = 16 * (lane // 16) + (lane % 16) // 4 + 4 * np.arange(4)[None, :]  # CDNA4 / Triton formula
    assert (got == 4 * src + lane % 4).all()
    with pytest.raises(IsaError, match="EXEC leaves lanes"):
        emulate(c, "gfx950", grid=1, block=64, args=[("out", np.zeros((64, 4), np.int16)), np.int32(8)])
