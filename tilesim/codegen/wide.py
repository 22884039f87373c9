"""When a fragment's slots can move as one wide (32/64/128-bit) memory access.

A group is ``g`` consecutive slots ``g*v .. g*v+g-1`` of one lane. It can be one access of
``g * bits`` bits when, for every lane and every group, the ``g`` elements lie in one memory row
at consecutive, ``g``-aligned columns (the layout's column, or its row for a transposed global
access): then, the row stride and the tile's first column being multiples of ``g``, the first
element's address is ``g * bytes``-aligned and the group's bits are the ``g`` elements low slot
first — the same bits the per-element code moves, since slots pack low first into the 32-bit
registers and memory is little-endian. The layout part is decided here, once, from the layout
itself (every lane, every slot); the column offset and the bounds are the emitter's business.
"""

from __future__ import annotations

import numpy as np

from tilesim.codegen.mma_forms import stack_blocks
from tilesim.layouts.layout import Layout

__all__ = ["group_width", "VECTOR_TYPES"]

# C type of one access by width in bits; ts_v2/ts_v4 are declared in the prelude (ext_vector_type
# on AMD clang, CUDA's uint2/uint4 on NVRTC) with members .x .y .z .w, register order low first.
VECTOR_TYPES = {32: "ts_u32", 64: "ts_v2", 128: "ts_v4"}


def group_width(lay: Layout, bits: int, *, transpose: bool = False, stride: int, swizzle_vec: int = 0,
                max_bits: int = 128) -> int:
    """The largest ``g`` (slots per access, ``g * bits`` in 32/64/128) that the layout allows for a
    memory tile of row stride ``stride`` elements, 1 when none does.

    ``swizzle_vec``: LDS XOR swizzle unit (columns XORed with multiples of it); a group survives the
    XOR only when the unit is a multiple of ``g`` (0: no swizzle)."""
    if not lay.is_function() or bits not in (8, 16, 32):
        return 1
    lay = stack_blocks(lay)
    dims = dict(lay.in_dims)
    lanes, slots = dims.get("lane", 0), dims.get("slot", 0)
    if set(dims) != {"lane", "slot"} or lanes < 1 or slots < 2:
        return 1
    lane, slot = np.meshgrid(np.arange(lanes), np.arange(slots), indexing="ij")
    at = lay.apply(lane=lane, slot=slot)
    row, col = (at["col"], at["row"]) if transpose else (at["row"], at["col"])
    if (row < 0).any() or (col < 0).any():  # a slot holding nothing: keep the per-element code
        return 1
    for width in (128, 64, 32):
        g = width // bits
        if width > max_bits or g < 2 or slots % g or stride % g or (swizzle_vec and swizzle_vec % g):
            continue
        r, c = row.reshape(lanes, slots // g, g), col.reshape(lanes, slots // g, g)
        if ((r == r[:, :, :1]).all() and (c == c[:, :, :1] + np.arange(g)).all() and (c[:, :, 0] % g == 0).all()):
            return g
    return 1
