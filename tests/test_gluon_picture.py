"""Thread-value pictures of Gluon layouts (``tilesim.frameworks.gluon_picture``).

Expected owners are written from the layouts' definitions (Triton's documentation), not from tilesim:
a ``BlockedLayout`` with ``size_per_thread=[1, 4]``, ``threads_per_warp=[8, 4]``, ``order=[1, 0]``
gives each thread 4 consecutive columns, lanes run along dim1 first (4 per row), so element
``(r, c)`` sits in lane ``c // 4 + 4 * r``, register ``c % 4``; an MFMA 16x16 A operand with
``k_width=4`` puts row ``i`` in lanes ``i + 16 * (k // 4)``, register ``k % 4``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from tilesim.errors import LayoutError
from tilesim.frameworks.gluon import (
    AMDMFMALayout,
    AMDWMMALayout,
    BlockedLayout,
    DotOperandLayout,
    SharedLinearLayout,
    SliceLayout,
)
from tilesim.frameworks.gluon_picture import owners, svg


def _titles(text: str) -> dict[str, str]:
    root = ET.fromstring(text)
    out = {}
    for t in root.iter("{http://www.w3.org/2000/svg}title"):
        if ":" in (t.text or ""):
            where, _, who = t.text.partition(": ")
            out[where] = who
    return out


def test_blocked_owners_and_picture() -> None:
    spec = BlockedLayout([1, 4], [8, 4], [1, 1], [1, 0])
    names, held = owners(spec, [8, 16])
    assert names == ["block", "warp", "lane", "register"]
    for r in range(8):
        for c in range(16):
            assert held[(r, c)] == [(0, 0, c // 4 + 4 * r, c % 4)]
    tips = _titles(svg(spec, [8, 16]))
    assert tips["dim0=2, dim1=13"] == "warp 0, lane 11, register 1"
    assert len(tips) == 8 * 16


def test_mfma_operand_picture_and_broadcast_stripes() -> None:
    a = DotOperandLayout(0, AMDMFMALayout(3, [16, 16, 16], False, [1, 1]), 4)
    _, held = owners(a, [16, 16])
    assert all(held[(i, k)] == [(0, 0, i + 16 * (k // 4), k % 4)] for i in range(16) for k in range(16))
    # a slice broadcasts: each element of a row vector is held by every thread of its column
    row = SliceLayout(0, BlockedLayout([1, 1], [4, 8], [1, 1], [1, 0]))
    _, held = owners(row, [8])
    assert sorted(s[2] for s in held[(3,)]) == [3, 11, 19, 27]
    text = svg(row, [8])
    assert "(4 copies)" in _titles(text)["dim0=3"]


def test_rank3_shared_and_versioned_pictures() -> None:
    text = svg(AMDWMMALayout(2, False, [1, 1, 1]), [2, 16, 16], triton_version="3.9")
    assert "dim0=1" in text and len(_titles(text)) == 2 * 16 * 16
    sh = SharedLinearLayout([[0, 1], [0, 2], [1, 2], [2, 0]])  # an XOR swizzle: offset 4 -> (1, 2)
    names, held = owners(sh, [4, 4])
    assert names == ["block", "offset"] and held[(1, 2)] == [(0, 4)] and held[(1, 0)] == [(0, 6)]
    assert re.search(r"dim0=1, dim1=2: offset 4", svg(sh, [4, 4]))


def test_pictures_refuse_what_they_cannot_draw() -> None:
    with pytest.raises(LayoutError, match="at most 16384"):
        owners(BlockedLayout([1, 4], [8, 4], [1, 1], [1, 0]), [256, 256])
    with pytest.raises(LayoutError, match="not a Gluon layout"):
        owners(object(), [4, 4])


def test_cli_writes_the_picture_with_or_without_a_check(tmp_path, capsys) -> None:
    from tilesim.cli import main

    out = tmp_path / "c.svg"
    mfma = ("tensor<32x32xf16, #ttg.amd_mfma<{version = 3, warpsPerCTA = [1, 1], instrShape = [32, 32, 8], "
            "isTransposed = false}>>")
    assert main(["check-layout", mfma, "--arch", "gfx942", "--picture", str(out)]) == 0
    assert capsys.readouterr().out.startswith("MATCH") and len(_titles(out.read_text())) == 32 * 32
    # a layout that names no instruction: the picture alone, at --shape
    blocked = tmp_path / "b.svg"
    assert main(["check-layout", "BlockedLayout([1, 4], [8, 4], [1, 1], [1, 0])", "--picture", str(blocked),
                 "--shape", "8,16"]) == 0
    assert _titles(blocked.read_text())["dim0=2, dim1=13"] == "warp 0, lane 11, register 1"
    dot = "DotOperandLayout(0, AMDWMMALayout(2, False, [2, 2], [16, 16, 16], [2, 2]), 8)"
    for argv, code in ((["check-layout", "BlockedLayout([1], [32], [1], [0])"], 2),  # neither --arch nor --picture
                       (["check-layout", dot, "--arch", "gfx1201", "--shape", "64,64"], 2),  # 3.6 or 3.9?
                       (["check-layout", dot, "--arch", "gfx1201", "--shape", "6x4"], 2),
                       (["check-layout", dot, "--arch", "gfx1201", "--shape", "64,64", "--triton-version", "3.6"], 0)):
        assert main(argv) == code, argv
        captured = capsys.readouterr()
        if code == 2:
            assert captured.err.startswith("tilesim: error:") and captured.err.count("\n") == 1
    assert main(["check-layout", dot, "--arch", "gfx1201", "--shape", "64,64"]) == 2
    assert "--triton-version" in capsys.readouterr().err
