"""What the code generator does for sparse and multi-block matrix instructions.

* :func:`stack_blocks` — a multi-block fragment is addressed as one ``(blocks*M) x cols`` tile
  (block ``b`` in rows ``b*M …``), as the simulator's codecs stack it (tilesim/wave/codec.py).
* :func:`sparse_index_arg` — the index operand of SMFMAC/SWMMAC is the metadata fragment's one
  VGPR. SMFMAC picks the index set with its ABID immediate; the SWMMAC builtins have no index-key
  immediate: LLVM selects ``index_key:n`` when the index is the register shifted right by ``n``
  index sets (AMDGPU instruction selection of ``llvm.amdgcn.swmmac.*``), so the shift is emitted
  and OPSEL is not passed on.
"""

from __future__ import annotations

from tilesim.layouts.layout import Layout
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.matrix.sparse import meta_layout

__all__ = ["stack_blocks", "sparse_index_arg"]


def stack_blocks(lay: Layout) -> Layout:
    """``(lane, slot) -> (block, row, col)`` as ``(lane, slot) -> (row + block*rows, col)``; other layouts unchanged."""
    dims = dict(lay.out_dims)
    if dims.get("block", 1) == 1:
        return lay
    hw, lg = lay.pairs()
    names = lay.out_names
    b, r, c = (lg[:, names.index(n)] for n in ("block", "row", "col"))
    return Layout.from_pairs(lay.in_dims, {"row": dims["block"] * dims["row"], "col": dims["col"]}, hw,
                             list(zip((b * dims["row"] + r).tolist(), c.tolist())), elem_bits=lay.elem_bits)


def sparse_index_arg(row: MatrixInstruction, wave: int, frag: str, mods: dict[str, int]) -> tuple[str, dict[str, int]]:
    """(the C expression of the index argument, the modifiers left for the builtin's immediates)."""
    sel = mods.get("opsel", 0)
    m = row.modifier("opsel")
    if not sel or m is None or m.kind != "index_set":
        return f"{frag}.r[0]", mods
    lo = int(meta_layout(row, wave, opsel=sel).location_array()[:, 5].min())  # the set's first bit in the VGPR
    return f"({frag}.r[0] >> {lo})", {k: v for k, v in mods.items() if k != "opsel"}
