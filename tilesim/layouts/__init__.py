"""Layouts: exact maps between hardware positions (lane, slot, wave…) and logical coordinates."""

from tilesim.layouts.expr import IndexExpr, Term, expressions
from tilesim.layouts.algebra import compose, product
from tilesim.layouts.check import LayoutCheck, check_layout
from tilesim.layouts.compare import compare_layouts
from tilesim.layouts.gluon import (
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
from tilesim.layouts.index_maps import IndexMapReport, check_index_maps, from_index_maps
from tilesim.layouts.layout import Dims, Layout, Location
from tilesim.layouts.render import FORMATS, from_json, render, render_matrix, render_registers, to_csv, to_json

__all__ = [
    "AMDMFMALayout",
    "AMDWMMALayout",
    "BlockedLayout",
    "DistributedLinearLayout",
    "DotOperandLayout",
    "NVMMADistributedLayout",
    "PaddedSharedLayout",
    "SliceLayout",
    "SwizzledSharedLayout",
    "IndexMapReport",
    "LayoutCheck",
    "check_layout",
    "check_index_maps",
    "compare_layouts",
    "from_index_maps",
    "Dims",
    "FORMATS",
    "IndexExpr",
    "Layout",
    "Location",
    "Term",
    "compose",
    "expressions",
    "from_json",
    "product",
    "render",
    "render_matrix",
    "render_registers",
    "to_csv",
    "to_json",
]
