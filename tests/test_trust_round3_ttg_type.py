"""check-layout reads the tensor type around a Triton layout (round three).

``tensor<32x8xi8, #ttg.dot_op<{opIdx = 0, parent = #ttg.amd_mfma<{... instrShape = [32, 32, 8] ...}>,
kWidth = 4}>>`` names an i8 A operand; gfx942 has no 32x32x8 i8 MFMA (its i8 form is 32x32x16,
which reads 8 k per lane: AMD CDNA3 ISA, v_mfma_i32_32x32x16_i8). tilesim ignored the element type
and checked the layout as the f16 instruction's A: MATCH, exit 0. A shape of 0 rows, or of 10^20,
was ignored the same way. The element type of a dot operand now picks the instruction (and an
explicit --dtype that contradicts it is refused); a shape that is no tensor's is refused.
"""

from __future__ import annotations

import pytest

from tilesim.cli import main
from tilesim.errors import LayoutError
from tilesim.frameworks.check import check_layout

MFMA = "#ttg.amd_mfma<{{version = 3, warpsPerCTA = [1, 1], instrShape = [32, 32, {k}], isTransposed = false}}>"


def _a(shape: str, elem: str, k: int, kw: int) -> str:
    return f"tensor<{shape}x{elem}, #ttg.dot_op<{{opIdx = 0, parent = {MFMA.format(k=k)}, kWidth = {kw}}}>>"


def test_an_i8_operand_is_not_checked_as_f16(capsys):
    spec = _a("32x8", "i8", 8, 4)
    with pytest.raises(LayoutError, match="i8"):
        check_layout(spec, "gfx942")
    assert main(["check-layout", spec, "--arch", "gfx942"]) == 2
    capsys.readouterr()


def test_the_i8_instruction_is_picked_from_the_element_type():
    right = check_layout(_a("32x16", "i8", 16, 8), "gfx942")
    assert right.status == "match" and right.instruction == "v_mfma_i32_32x32x16_i8", right
    wrong = check_layout(_a("32x16", "i8", 16, 4), "gfx942")  # 4 k per lane where the instruction reads 8
    assert wrong.status != "match" and wrong.instruction == "v_mfma_i32_32x32x16_i8", wrong


def test_a_dtype_that_contradicts_the_tensor_is_refused():
    with pytest.raises(LayoutError, match="bf16"):
        check_layout(_a("32x8", "f16", 8, 4), "gfx942", dtype="bf16")


@pytest.mark.parametrize("shape", ["0x8", "32x0", "99999999999999999999x8"])
def test_a_shape_no_tensor_has_is_refused(shape):
    with pytest.raises(LayoutError, match="shape"):
        check_layout(_a(shape, "f16", 8, 4), "gfx942")


def test_the_f16_neighbour_still_matches():
    assert check_layout(_a("32x8", "f16", 8, 4), "gfx942").status == "match"
    c = "tensor<32x32xf32, " + MFMA.format(k=8) + ">"  # a result: its element type is the accumulator's
    assert check_layout(c, "gfx942").status == "match"


def test_an_instruction_that_reads_another_type_is_refused():
    with pytest.raises(LayoutError, match="i8"):
        check_layout(_a("32x8", "i8", 8, 4), "gfx942", instr="v_mfma_f32_32x32x8_f16")
