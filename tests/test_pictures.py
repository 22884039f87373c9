"""Pictures: SVG structure follows the layout record for record (independently recounted here),
replicas are drawn as stripes, comparisons outline exactly the differing elements, heatmaps and
PNG output work."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tilesim.errors import LayoutError
from tilesim.layouts.pictures import png, svg, svg_compare, svg_heatmap
from tilesim.matrix import lookup

NS = "{http://www.w3.org/2000/svg}"


def _rects(text: str, cls: str) -> list[ET.Element]:
    return [r for r in ET.fromstring(text).iter(f"{NS}rect") if r.get("class") == cls]


@pytest.mark.parametrize(("mnemonic", "arch", "op", "copies"), [
    ("v_wmma_f32_16x16x16_f16", "gfx1100", "A", 2),  # RDNA3 replicates A in lanes i and i+16
    ("v_wmma_f32_16x16x16_f16", "gfx1201", "A", 1),
    ("v_mfma_f32_32x32x8f16", "gfx942", "C", 1),
])
def test_svg_draws_every_copy_with_a_tooltip(mnemonic, arch, op, copies):
    lay = lookup(mnemonic, arch).layout(op)
    text = svg(lay, f"{arch} {mnemonic} {op}")
    rec = lay.location_array()
    assert len(_rects(text, "copy")) == len(rec) == copies * lay.out_size
    cells = _rects(text, "cell")
    assert len(cells) == lay.out_size
    # every tooltip names the lanes that really hold the element
    for cell in cells[:40]:
        r, c = int(cell.get("data-row")), int(cell.get("data-col"))
        tip = cell.find(f"{NS}title").text
        want = sorted(int(x[4]) for x in rec if x[1] == r and x[2] == c)
        assert sorted(int(x) for x in re.findall(r"lane (\d+)", tip)) == want
        assert ("replicated" in tip) == (copies > 1)


def test_compare_outlines_exactly_the_elements_that_differ():
    c3 = lookup("v_wmma_f32_16x16x16_f16", "gfx1100").layout("C")
    c4 = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")
    text = svg_compare(c4, c3)
    outlined = [r for r in _rects(text, "cell") if r.get("stroke") == "#d00"]
    # independent count from the ISA formulas: RDNA3 row = 2v + lane/16, RDNA4 row = 8*(lane/16) + v
    differ = sum(1 for i in range(16) for j in range(16)
                 if ((16 * (i % 2) + j), i // 2) != ((16 * (i // 8) + j), i % 8))
    assert len(outlined) == 2 * differ and f"{differ} of 256 elements differ" in text
    assert svg_compare(c3, c3).count('stroke="#d00"') == 0


def test_heatmap_and_png(tmp_path):
    counts = np.zeros((32, 8), int)
    counts[5, 2] = 3
    text = svg_heatmap(counts)
    assert "lane 5, v2: 3" in text and text.count("<rect") == 32 * 8 + 1
    pytest.importorskip("matplotlib")
    out = tmp_path / "a.png"
    png(svg(lookup("v_wmma_f32_16x16x16_f16", "gfx1100").layout("A")), str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_bad_input_is_a_typed_error():
    from tilesim.layouts import Layout

    with pytest.raises(LayoutError):
        svg(Layout.identity({"a": 4}))
    a = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("A")
    with pytest.raises(LayoutError, match="cannot compare"):
        svg_compare(a, lookup("v_mfma_f32_32x32x8f16", "gfx942").layout("A"))
