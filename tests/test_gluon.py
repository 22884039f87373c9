"""Gluon layout specs convert exactly as Triton converts them.

The golden files in ``tests/golden/triton_layouts`` were written by ``tools/gen_triton_golden.py``
running Triton 3.9's own ``to_linear_layout`` (an independent source: tilesim's conversions are
written from the layouts' meaning, and Triton is not a dependency). Every accepted parameter set
must give the same bases, basis for basis; every rejected one must be rejected by tilesim too.
The live test re-asks Triton when it can be imported (or when ``TILESIM_TRITON_PYTHON`` names a
Python that has it) and skips otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from tilesim.errors import LayoutError, TilesimError
from tilesim.layouts import Layout
from tilesim.frameworks.gluon import (
    SPECS,
    AMDMFMALayout,
    AMDWMMALayout,
    BlockedLayout,
    DistributedLinearLayout,
    DotOperandLayout,
    NVMMADistributedLayout,
    PaddedSharedLayout,
    SliceLayout,
    SwizzledSharedLayout,
)

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "triton_layouts"
FAMILIES = ("mfma", "wmma", "dot_operand", "blocked", "slice", "nvmma", "shared", "cga", "batched")


def build(spec: dict):
    """The tilesim spec for a golden entry's JSON spec (parents nested)."""
    args = {k: v for k, v in spec.items() if k != "layout"}
    if "parent" in args:
        args["parent"] = build(args["parent"])
    return SPECS[spec["layout"]](**args)


@lru_cache(maxsize=None)
def golden(family: str) -> tuple[str, list[tuple[dict, dict]]]:
    doc = json.loads((GOLDEN / f"{family}.json").read_text())
    return doc["triton_version"], [(g["spec"], case) for g in doc["entries"] for case in g["cases"]]


def tilesim_bases(spec: dict, shape: list[int]) -> dict[str, list[list[int]]]:
    obj = build(spec)
    if isinstance(obj, SwizzledSharedLayout):  # shared memory: offset -> element
        return {"offset": [list(v) for v in obj.offset_bases(shape)], "block": []}
    return obj.to_linear(shape, triton_version="3.9").bases_dict()  # the golden files are Triton 3.9's


def first_difference(got: dict, want: dict) -> str:
    for dim in want:
        g, w = got[dim], want[dim]
        for i in range(max(len(g), len(w))):
            gi = g[i] if i < len(g) else "(none)"
            wi = w[i] if i < len(w) else "(none)"
            if gi != wi:
                return f"{dim}[{i}]: tilesim {gi}, Triton {wi}"
    return "no difference"


def compare(spec: dict, case: dict) -> str | None:
    """None when tilesim agrees with Triton's answer for one golden case, else what differs."""
    where = f"{json.dumps(spec)} shape {case['shape']}"
    try:
        got = tilesim_bases(spec, case["shape"])
    except TilesimError as e:
        return None if "rejected" in case else f"{where}: tilesim rejects ({e}), Triton accepts"
    if "rejected" in case:
        return f"{where}: tilesim accepts, Triton rejects ({case['rejected']})"
    if got != case["bases"]:
        return f"{where}: first differing basis {first_difference(got, case['bases'])}"
    return None


@pytest.mark.parametrize("family", FAMILIES)
def test_to_linear_matches_triton(family: str) -> None:
    version, cases = golden(family)
    assert version.startswith("3.9"), version
    problems = [p for spec, case in cases if (p := compare(spec, case))]
    accepted = sum("bases" in c for _, c in cases)
    assert accepted > 0
    assert not problems, f"{len(problems)}/{len(cases)} {family} cases differ from Triton {version}:\n" + "\n".join(
        problems[:5])


def test_golden_sweep_is_broad_and_small() -> None:
    sizes = {f: len(golden(f)[1]) for f in FAMILIES}
    assert min(sizes.values()) >= 20, sizes
    assert sum(sizes.values()) >= 4000, sizes
    total = sum((GOLDEN / f"{f}.json").stat().st_size for f in FAMILIES)
    assert total < 2_000_000, total
    for family in FAMILIES:  # Triton's rejections are recorded (and checked) in every family
        assert any("rejected" in c for _, c in golden(family)[1]), family


def _sample(step: int) -> list[tuple[dict, dict]]:
    out = []
    for family in FAMILIES:
        out += [sc for sc in golden(family)[1][::step] if "bases" in sc[1]]
    return out


def _check_layout(spec: dict, case: dict) -> None:
    want = case["bases"]
    ind = {d: 1 << len(want[d]) for d in want if d != "block" or want[d]}
    outd = {f"dim{i}": s for i, s in enumerate(case["shape"])}
    expected = Layout.from_bases(ind, outd, {d: want[d] for d in ind})
    got = build(spec).to_layout(case["shape"], triton_version="3.9")
    assert got == expected, f"{spec} {case['shape']}"
    assert got.in_names == tuple(ind) and got.out_names == tuple(outd)


@pytest.mark.parametrize("spec,case", _sample(97), ids=lambda x: None)
def test_to_layout_equals_from_bases(spec: dict, case: dict) -> None:
    _check_layout(spec, case)


@pytest.mark.slow
def test_to_layout_equals_from_bases_everywhere() -> None:
    for spec, case in _sample(1):
        _check_layout(spec, case)


# --------------------------------------------------------------------------- interface
def test_specs_are_values_with_triton_argument_order() -> None:
    a = AMDMFMALayout(3, [32, 32, 8], False, [2, 2])
    b = AMDMFMALayout(version=3, instr_shape=(32, 32, 8), transposed=False, warps_per_cta=(2, 2),
                      element_bitwidth=32, tiles_per_warp=[1, 1])
    assert a == b and hash(a) == hash(b)  # None defaults normalise as in Triton
    assert a.instr_shape == (32, 32, 8) and a.wave_size == 64 and "gfx942" in a.arch_family
    with pytest.raises(AttributeError):
        a.version = 4  # type: ignore[misc]
    w = AMDWMMALayout(2, False, [2, 2])
    assert w.instr_shape == (16, 16, 16) and w.wave_size == 32 and w.arch_family == ("gfx1200", "gfx1201")
    assert "gfx1100" in AMDWMMALayout(1, True, [1, 1]).arch_family
    assert AMDWMMALayout(3, False, [1, 1], [16, 16, 32]).arch_family == ("gfx1250",)
    assert set(SPECS) == {"BlockedLayout", "SliceLayout", "AMDMFMALayout", "AMDWMMALayout", "DotOperandLayout",
                          "NVMMADistributedLayout", "DistributedLinearLayout", "SwizzledSharedLayout",
                          "PaddedSharedLayout", "NVMMASharedLayout", "SharedLinearLayout"}
    assert DotOperandLayout(0, a, 8) == DotOperandLayout(operand_index=0, parent=a, k_width=8)
    assert BlockedLayout([1, 4], [8, 8], [2, 2], [1, 0]).rank == 2
    assert SliceLayout(0, BlockedLayout([1, 4], [8, 8], [2, 2], [1, 0])).to_layout([64]).in_names == (
        "register", "lane", "warp")


def test_wmma_warp_bases_spelling_is_the_same_layout() -> None:
    # Triton 3.9 spells warps and repeats as bases in instruction tiles.
    a = AMDWMMALayout(2, False, [2, 4], tiles_per_warp=[2, 1])
    b = AMDWMMALayout(2, False, None, warp_bases=[[0, 1], [0, 2], [2, 0]], reg_bases=[[1, 0]])
    assert a == b
    assert a.to_linear([128, 128], triton_version="3.9") == b.to_linear([128, 128], triton_version="3.9")
    batched = AMDWMMALayout(2, False, [2, 2, 1])  # [batch, M, N]
    # Triton 3.9: rank= says the bases' length (default 2); rank-3 bases without it are refused, as Triton
    # refuses them ("warp_bases basis rank mismatch")
    assert batched.rank == 3 and batched == AMDWMMALayout(2, False, warp_bases=[[0, 1, 0], [1, 0, 0]], rank=3)
    with pytest.raises(LayoutError, match="warp_bases"):
        AMDWMMALayout(2, False, warp_bases=[[0, 1, 0], [1, 0, 0]])
    with pytest.raises(LayoutError, match="not both"):
        AMDWMMALayout(2, False, [2, 2], warp_bases=[[0, 1]])
    with pytest.raises(LayoutError, match="warp_bases=... and reg_bases=... by keyword"):
        AMDWMMALayout(2, False, [[0, 1], [1, 0]])


def test_distributed_linear_layout_round_trip() -> None:
    lin = AMDMFMALayout(4, [16, 16, 32], True, [2, 1], tiles_per_warp=[1, 2]).to_linear([64, 64])
    again = DistributedLinearLayout(*[[list(v) for v in vs] for vs in (lin.reg_bases, lin.lane_bases,
                                                                        lin.warp_bases, lin.block_bases)],
                                    shape=[64, 64])
    assert again == lin and again.to_linear([64, 64]) is again
    lay = lin.to_layout()
    assert lay.in_names == ("register", "lane", "warp") and lay.out_names == ("dim0", "dim1")
    assert lay.bases["lane"] == lin.lane_bases
    with pytest.raises(LayoutError, match="outside shape"):
        DistributedLinearLayout([[64, 0]], [], [], [], [64, 64])
    # another tensor shape: repeated or cut as Triton does (Triton 3.9's answer for this spec, from the sweep)
    small = DistributedLinearLayout([[0, 2], [0, 4]], [[0, 8]], [[0, 1]], [], [1, 16])
    assert small.to_linear([2, 32]).bases_dict() == {"register": [[0, 2], [0, 4], [0, 16], [1, 0]], "lane": [[0, 8]],
                                                     "warp": [[0, 1]], "block": []}


def test_block_dim_appears_only_when_used() -> None:
    lin = DistributedLinearLayout([[0, 1]], [[1, 0]], [], [[2, 0]], [4, 2])
    assert lin.to_layout().in_names == ("register", "lane", "warp", "block")
    assert lin.to_layout().apply(register=1, lane=1, warp=0, block=1) == {"dim0": 3, "dim1": 1}
    two_ctas = AMDMFMALayout(3, [32, 32, 8], False, [2, 2], cga_layout=[[1, 0]])
    assert two_ctas.to_layout([128, 64]).in_names == ("register", "lane", "warp", "block")
    assert two_ctas.to_linear([128, 64]).block_bases == ((64, 0),)  # CTA 1 holds rows 64..127
    assert AMDMFMALayout(3, [32, 32, 8], False, [2, 2]).to_layout([128, 64]).in_names == ("register", "lane", "warp")
    with pytest.raises(LayoutError, match=r"cga_layout \[\[3, 0\]\].*powers of two"):
        BlockedLayout([1, 1], [8, 8], [1, 1], [1, 0], [[3, 0]])


BAD = [
    (lambda: AMDMFMALayout(5, [32, 32, 8], False, [1, 1]), r"AMDMFMALayout version 5: .*4 \(gfx950\)"),
    (lambda: AMDMFMALayout(3, [8, 8, 4], False, [1, 1]), r"instr_shape \[8, 8, 4\].*32x32, 16x16, 64x4, 4x64"),
    (lambda: AMDMFMALayout(3, [32, 32], False, [1, 1]), r"instr_shape .*\(M, N, K\)"),
    (lambda: AMDMFMALayout(3, [64, 4, 4], False, [1, 1]).to_linear([64, 4]), r"transposed False: a 64x4 result"),
    (lambda: AMDMFMALayout(3, [32, 32, 8], False, [3, 1]), r"warps_per_cta \[3, 1\].*powers of two"),
    (lambda: AMDMFMALayout(3, [32, 32, 8], False, [1, 1], element_bitwidth=16), r"element_bitwidth 16.*32 or 64"),
    (lambda: AMDMFMALayout(3, [32, 32, 8], "no", [1, 1]), r"transposed 'no'.*True or False"),
    (lambda: AMDWMMALayout(4, False, [1, 1]), r"AMDWMMALayout version 4: .*gfx1250"),
    (lambda: AMDWMMALayout(1, False, [1, 1], [16, 16, 32]), r"instr_shape \[16, 16, 32\].*1 \(RDNA3\) takes 16x16x16"),
    (lambda: DotOperandLayout(2, AMDWMMALayout(2, False, [1, 1]), 8), r"operand_index 2"),
    (lambda: DotOperandLayout(0, AMDMFMALayout(3, [32, 32, 8], False, [1, 1]), 0), r"k_width 0.*required"),
    (lambda: DotOperandLayout(0, BlockedLayout([1, 1], [8, 8], [1, 1], [1, 0]), 2), r"k_width 2.*BlockedLayout"),
    (lambda: DotOperandLayout(0, "mfma", 4), r"parent 'mfma'"),
    (lambda: BlockedLayout([1, 3], [8, 8], [1, 1], [1, 0]), r"size_per_thread \[1, 3\]"),
    (lambda: BlockedLayout([1, 1], [8, 8], [1, 1], [0, 0]), r"order \[0, 0\].*permutation"),
    (lambda: BlockedLayout([1, 1], [8, 8, 1], [1, 1], [1, 0]), r"threads_per_warp \[8, 8, 1\].*2 entries"),
    (lambda: SliceLayout(2, BlockedLayout([1, 1], [8, 8], [1, 1], [1, 0])), r"SliceLayout dim 2"),
    (lambda: NVMMADistributedLayout([1, 0], [4, 1], [16, 8]), r"version \[1, 0\].*\[2, 0\].*\[3, 0\]"),
    (lambda: NVMMADistributedLayout([2, 0], [4, 1], [16, 8, 16]), r"instr_shape \[16, 8, 16\].*\[M, N\]"),
    (lambda: DotOperandLayout(1, NVMMADistributedLayout([3, 0], [4, 1], [16, 64, 16]), 2), r"operand_index 1.*Hopper"),
    (lambda: DotOperandLayout(0, AMDWMMALayout(1, False, [1, 1]), 4), r"k_width 4.*8/16.*RDNA3"),
    (lambda: SwizzledSharedLayout(4, 0, 4, [1, 0]), r"per_phase 0: must be a positive integer"),
    (lambda: SwizzledSharedLayout(4, 1, 4, [1, 1]), r"order \[1, 1\]"),
    (lambda: PaddedSharedLayout([[32, 4], [32, 2]], [[0, 1]], [], [1, 2]), r"intervals must be distinct"),
    (lambda: PaddedSharedLayout([[32, 4]], [[0, 1]], [], [2, 2]), r"offset_bases.*needs 2 bases"),
    (lambda: AMDMFMALayout(3, [32, 32, 8], False, [1, 1]).to_linear([48, 64]), r"tensor shape \[48, 64\]"),
    (lambda: AMDMFMALayout(3, [32, 32, 8], False, [1, 1]).to_linear([64]), r"tensor shape \[64\]"),
]


@pytest.mark.parametrize("make,message", BAD)
def test_bad_parameters_name_the_value(make, message: str) -> None:
    with pytest.raises(LayoutError, match=message) as info:
        make()
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------- shared memory
def _offsets(lay: Layout, shape: tuple[int, int]) -> np.ndarray:
    """offset -> flat logical index, from the layout's pairs."""
    hw, lg = lay.pairs()
    out = np.full(shape[0] * shape[1], -1)
    out[hw[:, 0]] = lg[:, 0] * shape[1] + lg[:, 1]
    return out


@pytest.mark.parametrize("vec,per_phase,max_phase", [(1, 1, 1), (4, 2, 4), (8, 1, 8), (2, 4, 2), (16, 1, 4)])
@pytest.mark.parametrize("order", [(1, 0), (0, 1)])
def test_swizzled_shared_is_the_xor_swizzle(vec: int, per_phase: int, max_phase: int, order: tuple) -> None:
    # Reference from the definition: element (row, col) of the order-major matrix is stored at
    # row * cols + (col ^ ((row // per_phase) % max_phase) * vec).
    shape = (16, 32)
    inner, outer = order
    rows, cols = shape[outer], shape[inner]
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    stored = r * cols + (c ^ (((r // per_phase) % max_phase) * vec % cols))
    logical = np.zeros((2,) + r.shape, dtype=np.int64)
    logical[outer], logical[inner] = r, c
    want = np.full(rows * cols, -1)
    want[stored.ravel()] = (logical[0] * shape[1] + logical[1]).ravel()
    lay = SwizzledSharedLayout(vec, per_phase, max_phase, list(order)).to_layout(shape)
    assert lay.in_names == ("offset",) and lay.is_injective()
    assert np.array_equal(_offsets(lay, shape), want)


def test_padded_shared_follows_the_documented_example() -> None:
    # Triton's PaddedSharedLayout docstring: shape [8, 4], pairs [[8, 1]], offset bases that step
    # two rows, memory x0y0..x0y3, x2y0.., pad, x4y0.., x6y0.., pad, x1y0.. .
    p = PaddedSharedLayout([[8, 1]], [[0, 1], [0, 2], [2, 0], [4, 0], [1, 0]], [], [8, 4])
    lay = p.to_layout()
    rows = [lay.apply(offset=np.array([i * 4]))["dim0"][0] for i in range(8)]
    assert rows == [0, 2, 4, 6, 1, 3, 5, 7]
    assert [p.padded_offset(i) for i in (0, 7, 8, 16, 24)] == [0, 7, 9, 18, 27]
    ident = PaddedSharedLayout.with_identity_for([[32, 4], [64, 8]], [16, 32], [1, 0])
    assert ident.to_layout().apply(offset=np.array([33]))["dim0"][0] == 1
    assert ident.padded_offset(64) == 64 + 2 * 4 + 8


# --------------------------------------------------------------------------- live Triton
def _triton_python() -> str | None:
    try:
        import triton  # noqa: F401, PLC0415
    except ImportError:
        return os.environ.get("TILESIM_TRITON_PYTHON") or None
    return sys.executable


def test_live_triton_agrees(tmp_path: Path) -> None:
    """Re-ask Triton (a sample of every family) and compare; skipped when Triton is unavailable."""
    python = _triton_python()
    if python is None:
        pytest.skip("Triton not importable (set TILESIM_TRITON_PYTHON to a Python that has it)")
    found = subprocess.run([python, "-c", "import triton; print(triton.__version__)"], capture_output=True,
                           text=True, timeout=120).stdout.strip()
    recorded = json.loads((GOLDEN / "mfma.json").read_text())["triton_version"]
    if found.split(".")[:2] != recorded.split(".")[:2]:
        # Gluon's constructors change between releases (AMDWMMALayout's arguments did), so the generator
        # speaks one version's API; a live run against another version would compare the APIs, not layouts
        pytest.skip(f"Triton {found} found; the golden data and its generator are for Triton {recorded}")
    proc = subprocess.run([python, str(ROOT / "tools" / "gen_triton_golden.py"), "--out", str(tmp_path),
                           "--sample", "53"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    problems, n = [], 0
    for family in FAMILIES:
        doc = json.loads((tmp_path / f"{family}.json").read_text())
        for group in doc["entries"]:
            for case in group["cases"]:
                n += 1
                if p := compare(group["spec"], case):
                    problems.append(p)
    assert n >= 100 and not problems, f"{len(problems)}/{n} live cases differ:\n" + "\n".join(problems[:5])


def test_a_wrong_basis_is_reported_by_position() -> None:
    spec, case = next((s, c) for s, c in golden("mfma")[1] if "bases" in c and len(c["bases"]["lane"]) == 6)
    assert compare(spec, case) is None
    wrong = json.loads(json.dumps(case))
    wrong["bases"]["lane"][2] = [0, 0]
    msg = compare(spec, wrong)
    assert msg is not None and "first differing basis lane[2]" in msg
    assert "tilesim accepts, Triton rejects" in compare(spec, {"shape": case["shape"], "rejected": "x"})


# --------------------------------------------------------------------------- Triton's permutation rule (issue 13.10)
# Triton 3.9 builds AMDWMMALayout's warp/reg bases as LinearLayout({register, warp}) that must be surjective
# ("Layout is expected to be surjective"), and a DistributedLinearLayout must be a permutation matrix after
# removing broadcast (all-zero) bases (LinearEncodingAttr::verify: "requires a permutation matrix layout
# after removing broadcast bases"; its own test rejects register = [[1], [3]] and a lane/warp pair that repeats
# [8, 0]). Expectations below are written from those rules, not from tilesim.
def test_wmma_tile_bases_with_a_gap_are_rejected_naming_the_class() -> None:
    with pytest.raises(LayoutError, match=r"^AMDWMMALayout .*surjective") as info:
        AMDWMMALayout(2, False, None, warp_bases=[], reg_bases=[[0, 2]])
    assert "DistributedLinearLayout" not in str(info.value)
    # a repeated tile basis: Triton 3.9 builds the spec and answers for shapes that cut the repeat away
    # (the sweep holds such answers); where it survives, two hardware bits would reach one element
    twice = AMDWMMALayout(2, False, None, warp_bases=[[0, 1]], reg_bases=[[0, 1]])
    assert twice.to_linear([16, 16], triton_version="3.9").warp_bases == ((0, 0),)
    with pytest.raises(LayoutError, match=r"^AMDWMMALayout: .*not injective"):
        twice.to_linear([16, 32], triton_version="3.9")
    # zero bases are broadcasts (two warps with the same data), which Triton allows
    w = AMDWMMALayout(2, False, None, warp_bases=[[0, 0]], reg_bases=[[0, 1]])
    lin = w.to_linear([16, 32], triton_version="3.9")
    assert lin.warp_bases == ((0, 0),) and (0, 16) in lin.reg_bases


def test_check_layout_refuses_the_issue_spec_instead_of_matching() -> None:
    from tilesim.frameworks import check_layout

    spec = "AMDWMMALayout(2, False, None, warp_bases=[], reg_bases=[[0, 2]])"
    with pytest.raises(LayoutError, match="AMDWMMALayout.*surjective"):
        check_layout(spec, "gfx1201", shape=[16, 64])


@pytest.mark.parametrize("bases,shape,message", [
    (dict(reg_bases=[[1], [3]], lane_bases=[], warp_bases=[]), [4], r"register|reg_bases"),  # Triton's own test
    (dict(reg_bases=[[0, 2], [0, 4], [0, 8], [0, 16], [0, 32]], lane_bases=[[1, 0], [2, 0], [4, 0], [8, 0], [0, 1]],
          warp_bases=[[16, 0], [8, 0]]), [32, 64], "not injective"),  # Triton's own test: [8, 0] twice
    (dict(reg_bases=[[1, 0], [1, 0]], lane_bases=[], warp_bases=[]), [2, 1], "not injective"),
    (dict(reg_bases=[[1, 0]], lane_bases=[], warp_bases=[]), [2, 2], r"\[0, 1\] are held by nobody.*surjective"),
    (dict(reg_bases=[[1, 1]], lane_bases=[], warp_bases=[]), [2, 2], "one power of two in one dim"),
])
def test_distributed_linear_layout_must_be_a_permutation(bases, shape, message) -> None:
    with pytest.raises(LayoutError, match=r"^DistributedLinearLayout: .*" + message):
        DistributedLinearLayout(**bases, shape=shape)


def test_broadcast_bases_are_allowed_and_every_golden_layout_is_a_permutation() -> None:
    lin = DistributedLinearLayout([[0, 0], [1, 0]], [[0, 1]], [[0, 0]], [], [2, 2])
    assert lin.to_layout().is_total()
    for family in FAMILIES:  # what Triton answered is, by its own rule, a permutation after broadcasts
        for spec, case in golden(family)[1]:
            if "bases" in case and "register" in case["bases"]:
                b = case["bases"]
                DistributedLinearLayout(b["register"], b["lane"], b["warp"], b["block"], case["shape"])


def test_padded_shared_offsets_must_reach_every_element() -> None:
    with pytest.raises(LayoutError, match=r"PaddedSharedLayout offset_bases \[\[0, 1\], \[0, 1\]\].*every element"):
        PaddedSharedLayout([[32, 4]], [[0, 1], [0, 1]], [], [2, 2])
    assert PaddedSharedLayout([[32, 4]], [[0, 1], [1, 1]], [], [2, 2]).to_layout().is_total()  # XOR is fine


# --------------------------------------------------------------------------- one source of truth for targets
def test_arch_lists_come_from_the_target_table(monkeypatch) -> None:
    import dataclasses

    import tilesim.targets as targets

    rows = list(targets.TARGETS.values())
    for t in rows:  # every target with a matrix path is named by some version of its framework layout
        if t.matrix_path == "mfma":
            assert any(t.name in AMDMFMALayout(v, [32, 32, 8], False, [1, 1]).arch_family for v in (1, 2, 3, 4)), t
        if t.matrix_path in ("wmma", "wmma_gfx12"):
            assert any(t.name in AMDWMMALayout(v, False, [1, 1], s).arch_family
                       for v, s in ((1, None), (2, None), (3, [16, 16, 32]))), t
        if t.matrix_path == "mma_sync":
            assert t.name in NVMMADistributedLayout([2, 0], [4, 1], [16, 8]).arch_family, t
    # a new target in an existing family needs no edit in gluon.py
    new = dataclasses.replace(targets.TARGETS["gfx1151"], name="gfx1154")
    monkeypatch.setitem(targets.TARGETS, "gfx1154", new)
    assert "gfx1154" in AMDWMMALayout(1, False, [1, 1]).arch_family
    src = (ROOT / "tilesim" / "frameworks" / "gluon.py").read_text()
    import re

    families = {t.family for t in rows}
    literals = set(re.findall(r"[\"']((?:gfx[0-9a-f]+|sm_\d+))[\"']", src)) - families
    assert not literals  # no target-name lists left to forget (family names are the table's keys)
