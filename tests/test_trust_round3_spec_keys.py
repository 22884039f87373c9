"""Layout spec JSON refuses keys it does not read (round three).

Triton's printed bases ``{"bases": {...}, "shape": [...]}`` and the ``{"spec": ...}`` wrapper
ignored every other key: a misspelt ``"shpae"`` next to the right one, a ``"warps_per_cta"`` the
bases form has no use for, or a ``"cases"`` list beside a wrapped spec passed silently, and the
verdict was about a layout other than the one the file seemed to describe. Each is now a
LayoutError naming the key and the valid ones; the documented forms still check.
"""

from __future__ import annotations

import pytest

from tilesim.errors import LayoutError
from tilesim.frameworks.check import check_layout, parse_spec

RDNA3_C = {"bases": {"register": [[2, 0], [4, 0], [8, 0]],
                     "lane": [[0, 1], [0, 2], [0, 4], [0, 8], [1, 0]], "warp": [], "block": []},
           "shape": [16, 16]}
WMMA = {"layout": "AMDWMMALayout", "version": 1, "transposed": False, "warps_per_cta": [1, 1]}


@pytest.mark.parametrize("extra", [{"shpae": [32, 32]}, {"order": [1, 0]}, {"warps_per_cta": [2, 2]},
                                   {"layout": "AMDWMMALayout"}])
def test_bases_json_with_a_key_it_does_not_read_is_refused(extra):
    key = next(iter(extra))
    with pytest.raises(LayoutError, match=key):
        parse_spec({**RDNA3_C, **extra})


@pytest.mark.parametrize("extra", [{"cases": [{"shape": [32, 32]}]}, {"arch": "gfx942"}, {"spec ": 1}])
def test_a_wrapped_spec_with_a_key_it_does_not_read_is_refused(extra):
    key = next(iter(extra))
    with pytest.raises(LayoutError, match=key.strip()):
        parse_spec({"spec": WMMA, **extra})


def test_the_documented_forms_still_check():
    assert check_layout(RDNA3_C, "gfx1100", instr="v_wmma_f32_16x16x16_f16").status == "match"
    assert check_layout({"spec": WMMA}, "gfx1100", instr="v_wmma_f32_16x16x16_f16").status == "match"


def test_layout_json_with_a_key_it_does_not_read_is_refused():
    """`tilesim.layouts.from_json` (the public reader) ignored unknown keys and derived tables that
    contradict the pairs; only the program reader checked them."""
    import json

    from tilesim.layouts import from_json, to_json
    from tilesim.matrix.catalog import lookup

    lay = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")
    doc = json.loads(to_json(lay))
    assert from_json(json.dumps(doc)) == lay
    with pytest.raises(LayoutError, match="expr"):
        from_json(json.dumps({**doc, "expr": "lane * 2"}))
    doc["locations"][0], doc["locations"][1] = doc["locations"][1], doc["locations"][0]
    with pytest.raises(LayoutError, match="locations"):
        from_json(json.dumps(doc))
