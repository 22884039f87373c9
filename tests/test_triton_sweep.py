"""tilesim against Triton's own answers for a seeded random sweep of Gluon layouts, and Triton's printed forms.

``tests/golden/triton_layouts/sweep-3.9.jsonl.gz`` and ``sweep-3.6.jsonl.gz`` were written by
``tools/sweep_triton_layouts.py`` running the real Triton 3.9.0 and 3.6.0 wheels (Triton is not a
tilesim dependency; its answers are the independent source). ``tools/check_triton_sweep.py``
compares: every accepted case basis for basis (``triton_version`` set to the sweep's), every
rejected case rejected, every printed type read back (``tilesim.frameworks.ttg_text``) to the same
layout. CI checks a slice; ``--full`` checks every spec.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from functools import lru_cache
from pathlib import Path

import pytest

from tilesim.errors import LayoutError
from tilesim.frameworks.gluon import (
    AMDMFMALayout,
    AMDWMMALayout,
    BlockedLayout,
    DotOperandLayout,
    NVMMASharedLayout,
    SharedLinearLayout,
)
from tilesim.frameworks.ttg_text import TtgParseError, parse_ttg

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "triton_layouts"


@lru_cache(maxsize=None)
def _tool():
    spec = importlib.util.spec_from_file_location("tilesim_tools_check_triton_sweep",
                                                  ROOT / "tools" / "check_triton_sweep.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sweep_is_large_broad_and_small_on_disk() -> None:
    head, entries = _tool().load("3.9")
    assert head["triton_version"] == "3.9.0" and head["specs"] == len(entries) >= 20_000
    kinds = {e["spec"]["layout"] for e in entries}
    assert kinds >= {"BlockedLayout", "SliceLayout", "DotOperandLayout", "AMDMFMALayout", "AMDWMMALayout",
                     "NVMMADistributedLayout", "SwizzledSharedLayout", "NVMMASharedLayout", "SharedLinearLayout",
                     "DistributedLinearLayout"}
    parents = {e["spec"]["parent"]["layout"] for e in entries if e["spec"]["layout"] == "DotOperandLayout"}
    assert parents == {"AMDMFMALayout", "AMDWMMALayout", "NVMMADistributedLayout", "BlockedLayout"}
    assert {e["spec"]["version"] for e in entries if e["spec"]["layout"] == "AMDMFMALayout"} >= {1, 2, 3, 4}
    assert {e["spec"]["version"] for e in entries if e["spec"]["layout"] == "AMDWMMALayout"} >= {1, 2, 3}
    assert any(e["spec"].get("cga_layout") for e in entries)
    assert any(len(e["cases"][0]["shape"]) == 3 for e in entries)
    head36, entries36 = _tool().load("3.6")
    assert head36["triton_version"] == "3.6.0" and len(entries36) >= 5_000
    size = sum(p.stat().st_size for p in GOLDEN.glob("sweep-*.jsonl.gz"))
    assert size < 5_000_000, size


@pytest.mark.parametrize("version", ["3.9", "3.6"])
def test_a_slice_of_the_sweep_agrees_with_triton(version: str) -> None:
    _, total, problems = _tool().run(version, every=40)
    assert total["matched"] > 100 and total["rejected_both"] > 20, total
    assert total["printed_parsed"] > 100, total
    assert total["disagree"] == 0 and total["printed_bad"] == 0, "\n".join(problems[:5])


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.9", "3.6"])
def test_the_whole_sweep_agrees_with_triton(version: str) -> None:
    _, total, problems = _tool().run(version)
    assert total["disagree"] == 0 and total["printed_bad"] == 0, "\n".join(problems[:5])


# --------------------------------------------------------------------------- printed forms
# Texts as Triton 3.9 / 3.6 print them (``str()`` of a tensor or memdesc type holding the layout).
MFMA_39 = ("tensor<64x64xf32, #ttg.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [32, 32, 8], "
           "isTransposed = true, tilesPerWarp = [2, 1]}>>")
WMMA_39 = ("tensor<64x64xf32, #ttg.amd_wmma<{version = 2, isTranspose = false, ctaLayout = {register = [[1, 0]], "
           "warp = [[0, 1]]}, instrShape = [16, 16, 32]}>>")
WMMA_36 = "tensor<64x64xf32, #ttg.amd_wmma<{version = 2, isTranspose = false, warpsPerCTA = [2, 2], tilesPerWarp = [2, 2]}>>"


def test_printed_forms_read_back_as_the_spec() -> None:
    t = parse_ttg(MFMA_39)
    assert t.shape == (64, 64) and t.element_type == "f32"
    assert t.layout == AMDMFMALayout(3, [32, 32, 8], True, [2, 2], tiles_per_warp=[2, 1])
    w = parse_ttg(WMMA_39).layout
    assert w.warp_bases == ((0, 1),) and w.reg_bases == ((1, 0),) and w.follows == "3.9"
    assert parse_ttg(WMMA_36).layout.follows == "3.6"  # a 3.6 print is numbered as 3.6 numbers it
    dot = parse_ttg("#ttg.dot_op<{opIdx = 1, parent = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = "
                    "[8, 8], warpsPerCTA = [2, 2], order = [1, 0], CGALayout = [[1, 0]]}>}>").layout
    assert dot == DotOperandLayout(1, BlockedLayout([1, 4], [8, 8], [2, 2], [1, 0], [[1, 0]]), 0)
    nv = parse_ttg("!ttg.memdesc<8x8x8xf32, #ttg.nvmma_shared<{swizzlingByteWidth = 64, transposed = true, "
                   "elementBitWidth = 8, rank = 3}>, #ttg.shared_memory, mutable>")
    assert nv.layout == NVMMASharedLayout(64, 8, rank=3, transposed=True) and nv.shape == (8, 8, 8)
    sl = parse_ttg("!ttg.memdesc<8x8xf32, #ttg.shared_linear<{offset = [[0, 1], [0, 2], [1, 0], [2, 4], [0, 4]], "
                   "block = [[4, 0]]}, alignment = 32>, #ttg.shared_memory, mutable>").layout
    assert sl == SharedLinearLayout([[0, 1], [0, 2], [1, 0], [2, 4], [0, 4]], [[4, 0]], 32) and sl.shape == (8, 8)


@pytest.mark.parametrize("text,token,last", [
    ("#ttg.blocked<{sizePerThread = [1, 4] threadsPerWarp = [8, 8]}>", "threadsPerWarp", False),  # no comma
    ("#ttg.blocked<{sizePerThread = [1, 4], colour = 3}>", "colour", False),  # unknown key
    ("#ttg.blocked<{order = [1, 0], order = [0, 1]}>", "order", True),  # repeated key
    ("#ttg.amd_fancy<{version = 3}>", "#ttg.amd_fancy", False),  # unknown layout
    ("#ttg.slice<{dim = 0, parent = 7}>", "parent", False),  # a parent that is no layout
    ("tensor<64x64xf32, #ttg.linear<{register = [], lane = [], warp = [], block = []}>> extra", "extra", False),
    ("#ttg.blocked<{sizePerThread = [1; 4]}>", ";", False),  # a character outside the syntax
    ("#ttg.blocked<{sizePerThread = __import__}>", "__import__", False),  # a name where a value belongs
])
def test_what_is_not_understood_is_refused_naming_token_and_position(text: str, token: str, last: bool) -> None:
    with pytest.raises(TtgParseError) as info:
        parse_ttg(text)
    position = text.rindex(token) if last else text.index(token)
    assert (info.value.token, info.value.position) == (token, position)
    assert isinstance(info.value, LayoutError) and f"position {position}" in str(info.value)


def test_missing_keys_and_bad_values_are_typed_errors() -> None:
    with pytest.raises(TtgParseError, match="missing key 'order'"):
        parse_ttg("#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [1]}>")
    with pytest.raises(TtgParseError, match="#ttg.amd_mfma at position 0: .*version 7"):
        parse_ttg("#ttg.amd_mfma<{version = 7, warpsPerCTA = [1, 1], instrShape = [32, 32, 8], isTransposed = false}>")


# --------------------------------------------------------------------------- 3.6 and 3.9 numbering
# Answers of the real Triton wheels (to_linear_layout) for one WMMA operand with tiles_per_warp [2, 2].
_DOT36 = [[0, 1], [0, 2], [0, 4], [0, 16], [0, 32], [16, 0]]
_DOT39 = [[0, 1], [0, 2], [0, 4], [16, 0], [0, 16], [0, 32]]


def test_wmma_tiles_per_warp_numbering_follows_the_version_asked() -> None:
    parent = AMDWMMALayout(2, False, [2, 2], [16, 16, 16], [2, 2])
    dot = DotOperandLayout(0, parent, 8)
    assert [list(v) for v in dot.to_linear([64, 64], triton_version="3.6").reg_bases] == _DOT36
    assert [list(v) for v in dot.to_linear([64, 64], triton_version="3.9").reg_bases] == _DOT39
    with pytest.raises(LayoutError, match="3.6 and 3.9 order"):  # never one version's numbering silently
        dot.to_linear([64, 64])
    pinned = DotOperandLayout(0, AMDWMMALayout(2, False, [2, 2], [16, 16, 16], [2, 2], triton_version="3.6"), 8)
    assert pinned.follows == "3.6" and [list(v) for v in pinned.to_linear([64, 64]).reg_bases] == _DOT36
    with pytest.raises(LayoutError, match="follows Triton 3.6"):
        pinned.to_linear([64, 64], triton_version="3.9")
    with pytest.raises(LayoutError, match="triton_version '3.7'"):
        dot.to_linear([64, 64], triton_version="3.7")
    # where both versions agree, no version is needed
    assert DotOperandLayout(0, AMDWMMALayout(2, False, [2, 2]), 8).to_linear([64, 64]).shape == (64, 64)


def test_nvmma_shared_and_refusals() -> None:
    # Triton 3.9's answer (sweep) for a 64-byte swizzle of 64-bit elements over [8, 64]
    got = NVMMASharedLayout(64, 64).shared_bases([8, 64])
    assert got == {"offset": [[0, 1], [0, 2], [0, 4], [1, 0], [2, 2], [4, 4], [0, 8], [0, 16], [0, 32]], "block": []}
    with pytest.raises(LayoutError, match="not modelled by tilesim"):
        NVMMASharedLayout(128, 8, fp4_padded=True).shared_bases([64, 128])
    with pytest.raises(LayoutError, match="Illegal shared layout"):
        NVMMASharedLayout(128, 16).shared_bases([4, 64])
    with pytest.raises(LayoutError, match="swizzle_byte_width 16"):
        NVMMASharedLayout(16, 16)
    with pytest.raises(LayoutError, match="bijective"):
        SharedLinearLayout([[1], [2], [4], [8], [4]])


def test_golden_sweep_rows_are_plain_gzip_json() -> None:
    with gzip.open(GOLDEN / "sweep-3.9.jsonl.gz", "rt") as f:
        head = json.loads(f.readline())
        first = json.loads(f.readline())
    assert head["generator"] == "tools/sweep_triton_layouts.py" and {"spec", "cases"} <= set(first)
