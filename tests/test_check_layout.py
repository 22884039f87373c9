"""check_layout / `tilesim check-layout`: Gluon/Triton layouts against the instructions' operand layouts.

Where each expectation comes from (none is taken from tilesim.frameworks.check itself):

* ``TRITON`` — bases printed by Triton 3.9.0 itself (``GluonOpBuilder.to_linear_layout(layout, shape)``,
  queried through tools/gen_triton_golden.py's ``query``), copied here verbatim with their spec;
* the ISA formulas written out in ``_isa_*`` below (AMD CDNA3 ISA 7.1 / matrix instruction calculator for
  v_mfma_f32_32x32x8_f16; RDNA3 ISA 7.12 and RDNA4 ISA 7.12 for v_wmma_f32_16x16x16_f16);
* the catalog's ISA-derived instruction layouts (``lookup(...).layout(op)``), which the ``_isa_*`` tests
  confirm independently before the checks rely on them.
"""

from __future__ import annotations

import json

import pytest

from tilesim.cli import main
from tilesim.errors import LayoutError, TilesimError
from tilesim.frameworks import LayoutCheck, check_layout
from tilesim.layouts import Layout
from tilesim.frameworks.check import parse_spec
from tilesim.matrix import lookup

MFMA = {"layout": "AMDMFMALayout", "version": 3, "instr_shape": [32, 32, 8], "transposed": False,
        "warps_per_cta": [1, 1]}
WMMA1 = {"layout": "AMDWMMALayout", "version": 1, "transposed": False, "warps_per_cta": [1, 1]}
WMMA2 = {"layout": "AMDWMMALayout", "version": 2, "transposed": False, "warps_per_cta": [1, 1]}
NV = {"layout": "NVMMADistributedLayout", "version": [2, 0], "warps_per_cta": [1, 1], "instr_shape": [16, 8]}


def _dot(i: int, parent: dict, k: int) -> dict:
    return {"layout": "DotOperandLayout", "operand_index": i, "parent": parent, "k_width": k}


# (spec, shape, Triton 3.9.0's bases: register, lane) — warp and block bases are empty for all of them
TRITON = {
    "mfma32_C": (MFMA, [32, 32], [[1, 0], [2, 0], [8, 0], [16, 0]], [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [4, 0]]),
    "mfma32_C_T": ({**MFMA, "transposed": True}, [32, 32], [[0, 1], [0, 2], [0, 8], [0, 16]],
                   [[1, 0], [2, 0], [4, 0], [8, 0], [16, 0], [0, 4]]),
    "mfma32_A_k4": (_dot(0, MFMA, 4), [32, 8], [[0, 1], [0, 2]], [[1, 0], [2, 0], [4, 0], [8, 0], [16, 0], [0, 4]]),
    "mfma32_B_k4": (_dot(1, MFMA, 4), [8, 32], [[1, 0], [2, 0]], [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [4, 0]]),
    "mfma32_A_k8": (_dot(0, MFMA, 8), [32, 8], [[0, 1], [0, 2], [0, 4]],
                    [[1, 0], [2, 0], [4, 0], [8, 0], [16, 0], [0, 0]]),
    "wmma1_C": (WMMA1, [16, 16], [[2, 0], [4, 0], [8, 0]], [[0, 1], [0, 2], [0, 4], [0, 8], [1, 0]]),
    "wmma1_A": (_dot(0, WMMA1, 16), [16, 16], [[0, 1], [0, 2], [0, 4], [0, 8]],
                [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]]),
    "wmma1_B": (_dot(1, WMMA1, 16), [16, 16], [[1, 0], [2, 0], [4, 0], [8, 0]],
                [[0, 1], [0, 2], [0, 4], [0, 8], [0, 0]]),
    "wmma2_C": (WMMA2, [16, 16], [[1, 0], [2, 0], [4, 0]], [[0, 1], [0, 2], [0, 4], [0, 8], [8, 0]]),
    "wmma2_A": (_dot(0, WMMA2, 8), [16, 16], [[0, 1], [0, 2], [0, 4]], [[1, 0], [2, 0], [4, 0], [8, 0], [0, 8]]),
    "wmma2_B": (_dot(1, WMMA2, 8), [16, 16], [[1, 0], [2, 0], [4, 0]], [[0, 1], [0, 2], [0, 4], [0, 8], [8, 0]]),
    "nv_C": (NV, [16, 8], [[0, 1], [8, 0]], [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]]),
    "nv_A_k2": (_dot(0, NV, 2), [16, 16], [[0, 1], [8, 0], [0, 8]], [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]]),
    "nv_B_k2": (_dot(1, NV, 2), [16, 8], [[1, 0], [8, 0]], [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]]),
}
# where each entry is checked, and the verdict: the instruction's layout is the ISA's (test_isa_formulas...)
_M32, _W16 = "v_mfma_f32_32x32x8_f16", "v_wmma_f32_16x16x16_f16"
_NV = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
VERDICT = {"mfma32_C": ("gfx942", _M32, "match"), "mfma32_C_T": ("gfx942", _M32, "match"),
           "mfma32_A_k4": ("gfx942", _M32, "match"), "mfma32_B_k4": ("gfx942", _M32, "match"),
           "mfma32_A_k8": ("gfx942", _M32, "mismatch"), "wmma1_C": ("gfx1100", _W16, "match"),
           "wmma1_A": ("gfx1100", _W16, "match"), "wmma1_B": ("gfx1100", _W16, "match"),
           "wmma2_C": ("gfx1201", _W16, "match"), "wmma2_A": ("gfx1201", _W16, "match_k_permuted"),
           "wmma2_B": ("gfx1201", _W16, "match_k_permuted"), "nv_C": ("sm_80", _NV, "match"),
           "nv_A_k2": ("sm_80", _NV, "match"), "nv_B_k2": ("sm_80", _NV, "match")}


def triton(name: str) -> dict:
    """Triton's answer in the bases JSON form check_layout reads (no tilesim.frameworks.gluon involved)."""
    _, shape, reg, lane = TRITON[name]
    return {"bases": {"register": reg, "lane": lane, "warp": [], "block": []}, "shape": shape}


def linear(name: str) -> str:
    _, shape, reg, lane = TRITON[name]
    return f"DistributedLinearLayout(reg_bases={reg}, lane_bases={lane}, warp_bases=[], block_bases=[], shape={shape})"


MFMA_32 = lookup("v_mfma_f32_32x32x8_f16", "gfx942")
WMMA_11 = lookup("v_wmma_f32_16x16x16_f16", "gfx1100")
WMMA_12 = lookup("v_wmma_f32_16x16x16_f16", "gfx1201")


def _isa_c(lanes: int, slots: int, rows: int, cols: int, fn) -> Layout:
    return Layout.from_function({"lane": lanes, "slot": slots}, {"block": 1, "row": rows, "col": cols},
                                lambda lane, slot: {"block": 0, **fn(lane, slot)})


# ----------------------------------------------------------------------------- the instruction side
def test_isa_formulas_agree_with_the_catalog():
    """The catalog rows the checks compare against equal the ISA formulas written out here."""
    # CDNA3 ISA / matrix calculator: lane l, register r -> row 8*(r//4) + 4*(l//32) + r%4, col l%32
    assert _isa_c(64, 16, 32, 32, lambda lane, slot: {"row": 8 * (slot // 4) + 4 * (lane // 32) + slot % 4,
                                                      "col": lane % 32}) == MFMA_32.layout("C").with_elem_bits(None)
    # RDNA3: row = 2*v + lane//16; RDNA4: row = v + 8*(lane//16); col = lane % 16 on both
    assert _isa_c(32, 8, 16, 16, lambda lane, slot: {"row": 2 * slot + lane // 16, "col": lane % 16}) \
        == WMMA_11.layout("C", wave_size=32).with_elem_bits(None)
    assert _isa_c(32, 8, 16, 16, lambda lane, slot: {"row": slot + 8 * (lane // 16), "col": lane % 16}) \
        == WMMA_12.layout("C").with_elem_bits(None)


# ----------------------------------------------------------------------------- Triton's bases
@pytest.mark.parametrize(("name", "arch", "instr", "operand"), [
    ("mfma32_C", "gfx942", "v_mfma_f32_32x32x8_f16", "C"),
    ("mfma32_A_k4", "gfx942", "v_mfma_f32_32x32x8_f16", "A"),
    ("mfma32_B_k4", "gfx942", "v_mfma_f32_32x32x8_f16", "B"),
    ("mfma32_C", "gfx90a", "v_mfma_f32_32x32x8f16", "C"),
    ("wmma1_C", "gfx1100", "v_wmma_f32_16x16x16_f16", "C"),
    ("wmma1_A", "gfx1100", "v_wmma_f32_16x16x16_f16", "A"),  # the lane-16 zero basis is RDNA3's replication
    ("wmma1_B", "gfx1100", "v_wmma_f32_16x16x16_f16", "B"),
    ("wmma2_C", "gfx1201", "v_wmma_f32_16x16x16_f16", "C"),
    ("nv_C", "sm_80", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "C"),  # PTX ISA m16n8k16 fragments
    ("nv_A_k2", "sm_80", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "A"),
    ("nv_B_k2", "sm_80", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "B"),
])
def test_triton_layouts_match_their_instruction(name, arch, instr, operand):
    r = check_layout(triton(name), arch, instr=instr, operand=operand)
    assert r.status == "match" and r.ok, str(r)
    assert check_layout(linear(name), arch, instr=instr, operand=operand).status == "match"


def test_rdna4_k_width_8_matches_up_to_the_same_k_permutation_for_a_and_b():
    """Triton's RDNA4 dot operands (k_width 8) hold k 0-7 in lane i and 8-15 in lane i+16; the ISA puts k 4-7
    in lane i+16. A dot product is unchanged when A and B share one k order, so both are matches, k permuted."""
    a = check_layout(triton("wmma2_A"), "gfx1201", instr="v_wmma_f32_16x16x16_f16", operand="A")
    b = check_layout(triton("wmma2_B"), "gfx1201", instr="v_wmma_f32_16x16x16_f16", operand="B")
    assert a.status == b.status == "match_k_permuted" and a.ok
    assert a.k_permutation == b.k_permutation == (0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15)


def test_rdna3_result_layout_on_gfx1201_reports_the_row_interleave():
    r = check_layout(triton("wmma1_C"), "gfx1201", instr="v_wmma_f32_16x16x16_f16")
    assert r.status == "mismatch" and not r.ok
    # lane 0, VGPR 1: RDNA3 keeps row 2*1 + 0 = 2 there, RDNA4 row 1 + 0 = 1
    assert r.first_difference == {"lane": 0, "vgpr": 1, "bits": [0, 31], "layout_holds": ["C[2][0]"],
                                  "instruction_holds": ["C[1][0]"]}
    assert any("pattern: i differs" in p for p in r.pattern)


def test_rdna3_operand_on_gfx1201_reports_the_replication():
    r = check_layout(triton("wmma1_A"), "gfx1201", instr="v_wmma_f32_16x16x16_f16", operand="A")
    assert r.status == "mismatch"
    # RDNA3 A: lane i holds k 0-15 in 8 VGPRs; RDNA4 lane i holds k 0-3 then 8-11: VGPR 2 is k 4 vs k 8
    assert r.first_difference["lane"] == 0 and r.first_difference["vgpr"] == 2
    assert r.first_difference["layout_holds"] == ["A[0][4]"] and r.first_difference["instruction_holds"] == ["A[0][8]"]
    assert any("2 copies" in n and "lanes 16-31" in n for n in r.notes)


def test_k_width_8_on_a_k8_mfma_is_a_mismatch():
    """k_width 8 gives a lane 8 consecutive k; v_mfma_f32_32x32x8_f16 reads 4 per lane (lanes 32-63 hold k 4-7)."""
    r = check_layout(triton("mfma32_A_k8"), "gfx942", instr="v_mfma_f32_32x32x8_f16", operand="A")
    assert r.status == "mismatch" and r.first_difference["lane"] == 0 and r.first_difference["vgpr"] == 2
    assert any("8 16-bit elements" in n and "uses 4" in n for n in r.notes)


def test_wrong_instruction_shape_and_wave_size():
    r = check_layout(triton("mfma32_C"), "gfx942", instr="v_mfma_f32_16x16x16_f16")
    assert r.status == "mismatch"
    r = check_layout(triton("wmma2_C"), "gfx942", instr="v_mfma_f32_32x32x8_f16")
    assert r.status == "rejected" and "32 lanes" in r.reason and "wave64" in r.reason


# Triton's own sweeps (tests/golden/triton_layouts/{mfma,wmma}.json, written by tools/gen_triton_golden.py
# from Triton 3.9): every result layout whose tensor covers one instruction tile must hold warp 0's first
# tile exactly as the ISA-derived catalog row writes it; transposed ones once dim0 and dim1 are exchanged.
GOLDEN = __import__("pathlib").Path(__file__).parent / "golden" / "triton_layouts"
RESULT_INSTR = {  # (layout, version or element bits, M, N) -> (arch, instruction)
    ("AMDMFMALayout", 32, 32, 32): ("gfx942", "v_mfma_f32_32x32x8_f16"),
    ("AMDMFMALayout", 32, 16, 16): ("gfx942", "v_mfma_f32_16x16x16_f16"),
    ("AMDMFMALayout", 64, 16, 16): ("gfx942", "v_mfma_f64_16x16x4_f64"),
    ("AMDWMMALayout", 1, 16, 16): ("gfx1100", "v_wmma_f32_16x16x16_f16"),
    ("AMDWMMALayout", 2, 16, 16): ("gfx1201", "v_wmma_f32_16x16x16_f16"),
    ("AMDWMMALayout", 3, 16, 16): ("gfx1250", "v_wmma_f32_16x16x32_f16"),
}


def _golden(family: str, step: int) -> list[tuple[dict, str, str]]:
    path = GOLDEN / f"{family}.json"
    if not path.exists():
        pytest.skip(f"no Triton golden file {path.name}")
    out = []
    for e in json.loads(path.read_text())["entries"]:
        s = e["spec"]
        which = s.get("element_bitwidth") or 32 if s["layout"] == "AMDMFMALayout" else s.get("version")
        key = (s["layout"], which, *(s.get("instr_shape") or (16, 16))[:2])
        for case in e.get("cases", [e]):
            if "bases" not in case or key not in RESULT_INSTR or case["shape"][0] < key[2] or case["shape"][1] < key[3]:
                continue
            doc = {"bases": case["bases"], "shape": case["shape"]}
            if s["transposed"]:
                doc = {"bases": {k: [v[::-1] for v in vs] for k, vs in doc["bases"].items()},
                       "shape": doc["shape"][::-1]}
            out.append((doc, *RESULT_INSTR[key]))
    assert out
    return out[::step]


def _sweep(family: str, step: int) -> None:
    for doc, arch, instr in _golden(family, step):
        r = check_layout(doc, arch, instr=instr)
        assert r.status == "match", f"{doc}: {r}"


@pytest.mark.parametrize("family", ["mfma", "wmma"])
def test_triton_sweep_sample(family):
    _sweep(family, 61)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["mfma", "wmma"])
def test_triton_sweep_full(family):
    _sweep(family, 1)


# ----------------------------------------------------------------------------- Gluon spec classes
def _gluon(*names: str):
    from tilesim.frameworks.gluon import SPECS

    missing = [n for n in names if n not in SPECS]
    if missing:
        pytest.skip(f"tilesim.frameworks.gluon has no {missing} yet")


def test_mfma_spec_string_matches_on_cdna_and_is_rejected_on_rdna():
    _gluon("AMDMFMALayout")
    spec = "AMDMFMALayout(version=3, instr_shape=[32,32,8], transposed=True, warps_per_cta=[1,1])"
    r = check_layout(spec, "gfx942")
    assert r.status == "match" and r.instruction == "v_mfma_f32_32x32x8_f16" and r.wave_size == 64
    assert any("transposed" in n for n in r.notes)
    for arch in ("gfx1100", "gfx1201"):
        r = check_layout(spec, arch)
        assert r.status == "rejected" and not r.ok
        assert "wave64" in r.reason and "no mfma" in r.reason, r.reason
    # more warps and tiles per warp: warp 0's first instruction tile is still the instruction's C
    assert check_layout("AMDMFMALayout(3, [16, 16, 16], False, [2, 4], tiles_per_warp=[2, 2])", "gfx942").ok


def test_a_larger_tensor_shape_compares_its_first_tile():
    _gluon("AMDMFMALayout")
    spec = "AMDMFMALayout(3, [32, 32, 8], False, [2, 2])"
    assert check_layout(spec, "gfx942", shape=[128, 64]).status == "match"
    with pytest.raises(LayoutError):
        check_layout(spec, "gfx942", shape=[48, 64])  # not a power of two: the spec refuses it


def test_mfma_spec_equals_triton_bases_on_the_tile():
    _gluon("AMDMFMALayout")
    spec, shape, reg, lane = TRITON["mfma32_C_T"]
    mine = parse_spec(spec).to_layout(shape)
    theirs = Layout.from_bases({"register": 16, "lane": 64, "warp": 1}, {"dim0": 32, "dim1": 32},
                               {"register": reg, "lane": lane, "warp": []})
    assert mine == theirs


def test_dot_operand_and_wmma_spec_strings():
    _gluon("AMDMFMALayout", "AMDWMMALayout", "DotOperandLayout")
    r = check_layout("DotOperandLayout(0, AMDMFMALayout(3, [32, 32, 8], False, [1, 1]), 4)", "gfx942")
    assert r.status == "match" and r.operand == "A"
    r = check_layout("DotOperandLayout(1, AMDMFMALayout(3, [32, 32, 8], False, [1, 1]), 4)", "gfx942")
    assert r.status == "match" and r.operand == "B"
    assert check_layout("DotOperandLayout(0, AMDWMMALayout(1, False, [1, 1]), 16)", "gfx1100").status == "match"
    r = check_layout("DotOperandLayout(0, AMDWMMALayout(1, False, [1, 1]), 16)", "gfx1201")
    assert r.status == "mismatch" and r.first_difference["lane"] == 0
    r = check_layout("AMDWMMALayout(1, False, [1, 1])", "gfx1201")
    assert r.status == "mismatch" and r.first_difference["vgpr"] == 1
    assert check_layout("AMDWMMALayout(2, False, [1, 1])", "gfx1201").status == "match"
    assert check_layout("AMDWMMALayout(1, False, [1, 1])", "gfx942").status == "rejected"


@pytest.mark.parametrize("name", sorted(TRITON))
def test_spec_json_gives_the_same_answer_as_triton_bases(name):
    """The spec (JSON form, nested parent) checked with the instruction inferred from it answers exactly as
    Triton's bases for it do."""
    _gluon("AMDMFMALayout", "AMDWMMALayout", "DotOperandLayout", "NVMMADistributedLayout")
    spec, _, _, _ = TRITON[name]
    arch, instr, status = VERDICT[name]
    by_spec = check_layout(spec, arch)
    assert by_spec.instruction == lookup(instr, arch).mnemonic and by_spec.status == status, str(by_spec)
    bases = triton(name)
    if spec.get("transposed"):  # the bases carry no flag: exchange dim0 and dim1 to get the instruction's C
        bases = {"bases": {k: [v[::-1] for v in vs] for k, vs in bases["bases"].items()}, "shape": bases["shape"][::-1]}
    by_bases = check_layout(bases, arch, instr=instr, operand=by_spec.operand)
    assert (by_spec.status, by_spec.first_difference, by_spec.k_permutation) == \
        (by_bases.status, by_bases.first_difference, by_bases.k_permutation)


def test_rdna4_dot_operand_string_is_a_k_permuted_match():
    _gluon("AMDWMMALayout", "DotOperandLayout")
    a = check_layout("DotOperandLayout(0, AMDWMMALayout(2, False, [1, 1]), 8)", "gfx1201")
    b = check_layout("DotOperandLayout(1, AMDWMMALayout(2, False, [1, 1]), 8)", "gfx1201")
    assert a.status == b.status == "match_k_permuted" and a.k_permutation == b.k_permutation
    assert check_layout("DotOperandLayout(0, AMDWMMALayout(2, False, [1, 1]), 4)", "gfx1201").status == "match"


# ----------------------------------------------------------------------------- input handling
@pytest.mark.parametrize("bad", [
    "eval('1')", "__import__('os').system('true')", "AMDMFMALayout(3, [32, 32, 8], False, [1, 1]).x",
    "lambda: 0", "AMDMFMALayout(*[3])", "AMDMFMALayout(3, [32, 32, 8], 'no', [1, 1])", "1 +", "x",
    "AMDMFMALayout(3, [32, 32, 8], False, [1, 1], **{})", "AMDMFMALayout(3, [32, 32, 8.5], False, [1, 1])",
])
def test_unsafe_or_malformed_strings_are_refused(bad):
    with pytest.raises(LayoutError):
        parse_spec(bad)


def test_json_forms(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(triton("wmma2_C")))
    assert check_layout(str(p), "gfx1201", instr="v_wmma_f32_16x16x16_f16").status == "match"
    p.write_text("{not json")
    with pytest.raises(LayoutError, match="not JSON"):
        check_layout(str(p), "gfx1201")
    with pytest.raises(LayoutError, match="cannot read"):
        check_layout(str(tmp_path / "missing.json"), "gfx1201")
    with pytest.raises(LayoutError, match="layout"):
        check_layout({"version": 3}, "gfx942")


def test_usage_errors():
    with pytest.raises(LayoutError, match="pass --instr"):
        check_layout(triton("mfma32_C"), "gfx942")
    with pytest.raises(LayoutError, match="operand"):
        check_layout(triton("mfma32_C"), "gfx942", instr="v_mfma_f32_32x32x8_f16", operand="Q")
    with pytest.raises(TilesimError):
        check_layout(triton("mfma32_C"), "gfx942", instr="v_mfma_f32_4x4x4_16b_f16")
    with pytest.raises(TilesimError):
        check_layout(triton("mfma32_C"), "gfx9999", instr="v_mfma_f32_32x32x8_f16")


def test_result_object():
    r = check_layout(triton("wmma1_C"), "gfx1201", instr="v_wmma_f32_16x16x16_f16")
    assert isinstance(r, LayoutCheck)
    d = r.to_dict()
    assert json.loads(json.dumps(d)) == d and d["ok"] is False and d["first_difference"]["lane"] == 0
    assert str(r).startswith("MISMATCH:") and "lane 0, VGPR 1" in str(r)


# ----------------------------------------------------------------------------- CLI
def test_cli_exit_codes_and_json(tmp_path, capsys):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(triton("wmma1_C")))
    assert main(["check-layout", str(p), "--arch", "gfx1100", "--instr", "v_wmma_f32_16x16x16_f16"]) == 0
    assert capsys.readouterr().out.startswith("MATCH")
    assert main(["check-layout", str(p), "--arch", "gfx1201", "--instr", "v_wmma_f32_16x16x16_f16",
                 "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "mismatch" and doc["first_difference"]["vgpr"] == 1
    for argv in (["check-layout", "eval('1')", "--arch", "gfx942"],
                 ["check-layout", str(p), "--arch", "gfx9999"],
                 ["check-layout", str(p), "--arch", "gfx1100", "--operand", "Q"],
                 ["check-layout", str(p)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("tilesim: error:") and err.count("\n") == 1 and "Traceback" not in err


def test_cli_rejects_mfma_on_rdna(capsys):
    _gluon("AMDMFMALayout")
    spec = "AMDMFMALayout(version=3, instr_shape=[32,32,8], transposed=False, warps_per_cta=[1,1])"
    assert main(["check-layout", spec, "--arch", "gfx942"]) == 0
    assert main(["check-layout", spec, "--arch", "gfx1201", "--format", "json"]) == 1
    out = capsys.readouterr().out
    doc = json.loads(out[out.index("{"):])
    assert doc["status"] == "rejected" and "wave64" in doc["reason"]


# ----------------------------------------------------------------------------- docs/frameworks.md executes
FRAMEWORKS = __import__("pathlib").Path(__file__).resolve().parents[1] / "docs" / "frameworks.md"


def test_frameworks_doc_python_blocks_run():
    import re

    ns: dict = {}
    blocks = re.findall(r"```python\n(.*?)```", FRAMEWORKS.read_text(), re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, str(FRAMEWORKS), "exec"), ns)  # noqa: S102 - our own documentation


def test_frameworks_doc_commands_exit_0(capsys):
    import re
    import shlex

    lines = [ln[2:] for b in re.findall(r"```console\n(.*?)```", FRAMEWORKS.read_text(), re.S)
             for ln in b.splitlines() if ln.startswith("$ tilesim ")]
    assert lines
    for cmd in lines:
        assert main(shlex.split(cmd)[1:]) == 0, cmd
        assert capsys.readouterr().out.strip()


# ----------------------------------------------------------------------------- hostile input (issue 19.4-5)
HOSTILE = [
    '{"layout": "AMDMFMALayout", "args": [3], "kwargs": [1, 2]}',  # non-dict kwargs
    {"layout": "AMDMFMALayout", "kwargs": 5},
    {"layout": ["AMDMFMALayout"]}, {"layout": None},
    "[" * 100_000 + "]" * 100_000,
    '{"layout": "AMDMFMALayout", "instr_shape": ' + "[" * 100_000 + "]" * 100_000 + "}",  # RecursionError in json
    {"layout": "AMDMFMALayout", "instr_shape": __import__("functools").reduce(lambda a, _: [a], range(5000), [])},
    "AMDMFMALayout(" + "[" * 300 + "]" * 300 + ")",
    "'\ud800'", "\x00", "",
    {"bases": 5, "shape": [16, 16]}, {"bases": {"register": "x"}, "shape": [16, 16]},
    {"bases": {"foo": []}, "shape": [16]}, {"bases": {"register": [[1.5, 0]]}, "shape": [2, 2]},
    {"layout": "DotOperandLayout", "operand_index": 0, "parent": [1, 2], "k_width": 4},
    "x" * (2 << 20),
]


@pytest.mark.parametrize("spec", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_specs_are_typed_errors(spec):
    with pytest.raises(LayoutError) as info:
        check_layout(spec, "gfx942")
    assert len(str(info.value)) < 600 and "\n" not in str(info.value)


def test_deeply_nested_json_on_the_command_line_is_one_error_line(tmp_path, capsys):
    deep = '{"layout": "AMDMFMALayout", "instr_shape": ' + "[" * 100_000 + "]" * 100_000 + "}"
    p = tmp_path / "deep.json"
    p.write_text(deep)
    for argv in (["check-layout", deep, "--arch", "gfx942"], ["check-layout", str(p), "--arch", "gfx942"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("tilesim: error:") and "nested" in err and "Traceback" not in err


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs os.mkfifo")
def test_a_fifo_named_json_is_refused_without_opening_it(tmp_path, capsys):
    import os
    import threading

    fifo = tmp_path / "spec.json"
    os.mkfifo(fifo)
    result: list = []
    t = threading.Thread(target=lambda: result.append(main(["check-layout", str(fifo), "--arch", "gfx942"])),
                         daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():  # unblock the reader so the test process can end, then fail
        with open(fifo, "w"):
            pass
        pytest.fail("check-layout blocked reading a FIFO")
    assert result == [2] and "not a regular file" in capsys.readouterr().err
    with pytest.raises(LayoutError, match="not a regular file"):
        parse_spec(tmp_path)  # a folder, passed as a Path
    (tmp_path / "d.json").mkdir()
    with pytest.raises(LayoutError, match="not a regular file"):
        parse_spec(str(tmp_path / "d.json"))
