"""The catalog row decides which modifier feeds which builtin immediate; the compiler confirms it.

Independent source: the AMDGPU assembler syntax clang prints for the instruction it emitted
(``cbsz:1 abid:1 blgp:2``, ``neg_lo:[1,0,0]``, ``op_sel:[0,0,1]``), as the CDNA3/RDNA3 ISA guides
spell the fields. The builtin call is made by ``Builtin.call`` from the row, the way the code
generator makes it; the expected modifier text is written here from the ISA syntax.
"""

from __future__ import annotations

import re

import pytest

import tilesim as ts
from tilesim.codegen.hip import CodegenError, emit_hip
from tilesim.errors import ModifierError, ToolchainError
from tilesim.matrix.catalog import lookup, rows
from tilesim.matrix.instruction import Builtin, Immediate
from tilesim.matrix.probe import c_type

offline = pytest.importorskip("tilesim.hw.offline")


def _one_call(row, wave: int, mods: dict[str, int]) -> str:
    b = row.builtin_for(wave)
    typedefs, params, args = set(), [], []
    ret, td = c_type(b.ret)
    typedefs.add(td)
    for i, tok in enumerate(b.operand_types):
        name, td = c_type(tok)
        typedefs.add(td)
        params.append(f"const {name}* p{i}")
        args.append(f"p{i}[t]")
    return ("\n".join(sorted(t for t in typedefs if t)) + f'\nextern "C" __attribute__((global)) void k({ret}* out, '
            f'{", ".join(params)}) {{ int t = __builtin_amdgcn_workitem_id_x(); out[t] = {b.call(args, mods)}; }}\n')


CASES = [
    ("v_mfma_f32_32x32x1f32", "gfx908", 64, {"cbsz": 1, "abid": 1, "blgp": 2}, "cbsz:1 abid:1 blgp:2"),
    ("v_mfma_f32_4x4x4_16b_f16", "gfx942", 64, {"cbsz": 3, "abid": 5}, "cbsz:3 abid:5"),
    ("v_smfmac_f32_16x16x32_f16", "gfx942", 64, {"abid": 1}, "abid:1"),
    ("v_mfma_scale_f32_16x16x128_f8f6f4", "gfx950", 64, {"cbsz": 2, "blgp": 4}, "cbsz:2 blgp:4"),
    ("v_wmma_i32_16x16x16_iu8", "gfx1100", 32, {"neg": 1}, "neg_lo:[1,0,0]"),
    ("v_wmma_i32_16x16x16_iu4", "gfx1100", 64, {"neg": 3}, "neg_lo:[1,1,0]"),
    ("v_wmma_i32_16x16x16_iu8", "gfx1201", 32, {"neg": 2}, "neg_lo:[0,1,0]"),
    ("v_swmmac_i32_16x16x32_iu8", "gfx1201", 32, {"neg": 1}, "neg_lo:[1,0,0]"),
    ("v_wmma_f16_16x16x16_f16", "gfx1100", 32, {"opsel": 4}, "op_sel:[0,0,1]"),
]


@pytest.mark.compiler
@pytest.mark.parametrize(("mnemonic", "target", "wave", "mods", "isa"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_the_compiler_shows_the_modifier_in_the_immediate_the_row_names(mnemonic, target, wave, mods, isa) -> None:
    try:
        compiled = offline.compile_hip(_one_call(lookup(mnemonic, target), wave, mods), target, wave_size=wave)
    except ToolchainError as e:  # pragma: no cover - the dev extra installs ziglang
        pytest.skip(f"no AMDGPU clang: {e}")
    lines = [ln.strip() for ln in compiled.isa.splitlines() if re.match(r"\s*v_(mfma|smfmac|wmma|swmmac)", ln)]
    assert len(lines) == 1 and lines[0].endswith(isa), lines
    # and with no modifiers, none of those fields is printed
    plain = offline.compile_hip(_one_call(lookup(mnemonic, target), wave, {}), target, wave_size=wave)
    assert not any(f in ln for ln in plain.isa.splitlines() for f in ("cbsz:", "abid:", "blgp:", "neg_lo:", "op_sel:["))


def test_every_builtin_names_its_immediates() -> None:
    for r in rows():
        for b in r.builtins:
            assert all(not t.startswith("imm:") or t[4:] == i.name
                       for t, i in zip([t for t in b.args if t.startswith("imm:")], b.immediates)), b
            assert "imm:i32" not in b.args and "imm:bool" not in b.args, b


def test_a_builtin_whose_immediates_do_not_match_its_arguments_is_rejected() -> None:
    with pytest.raises(ValueError, match="immediates"):
        Builtin("__b", "f32", ("f32", "imm:cbsz"), 64, ())
    with pytest.raises(ModifierError, match="takes 1 operands"):
        Builtin("__b", "f32", ("f32", "imm:cbsz"), 64, (Immediate("cbsz", "cbsz"),)).call(["x", "y"])


@pytest.mark.parametrize(("mnemonic", "target", "mods", "unfed"), [
    ("v_wmma_f16_16x16x16_f16", "gfx1100", {"opsel": 4, "neg": 1}, ["neg=1"]),  # was dropped silently
    ("v_wmma_f32_16x16x16_f16", "gfx1201", {"neg": 4}, ["neg=4"]),
    ("v_swmmac_i32_16x16x32_iu8", "gfx1201", {"neg": 3, "opsel": 1}, ["opsel=1"]),  # index_key: not carried
    ("v_wmma_i32_16x16x16_iu8", "gfx1100", {"neg": 3}, []),
    ("v_mfma_f32_32x32x1f32", "gfx908", {"cbsz": 1, "abid": 1, "blgp": 7}, []),
])
def test_modifier_bits_no_immediate_carries_are_reported(mnemonic, target, mods, unfed) -> None:
    row = lookup(mnemonic, target)
    assert row.builtin_for(row.wave_sizes[0]).unfed(mods) == unfed


@ts.kernel
def _neg_mma(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f16", "M", "N"]):
    op = ts.mma_op("v_wmma_f16_16x16x16_f16")
    ts.grid(1)
    acc = ts.zeros(op.layout("C"), "f16")
    acc = ts.mma(op, ts.load(A[0:, 0:], op.layout("A")), ts.load(B[0:, 0:], op.layout("B")), acc, neg=1)
    ts.store(C[0:, 0:], acc)


def test_codegen_refuses_a_modifier_the_builtin_cannot_carry() -> None:
    prog = _neg_mma.specialize(target="gfx1100", M=16, N=16, K=16)
    with pytest.raises(CodegenError, match="neg=1 on v_wmma_f16_16x16x16_f16"):
        emit_hip(prog)


def test_an_unknown_modifier_name_is_rejected_by_the_row() -> None:
    row = lookup("v_mfma_f32_32x32x8f16", "gfx942")
    with pytest.raises(ModifierError, match="unknown modifier 'cbz'.*cbsz"):
        row.operand_layouts(64, {"cbz": 1})
    assert set(row.operand_layouts(64, {"neg": 0, "cbsz": 0})) == {"A", "B", "C", "D"}
