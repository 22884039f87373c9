"""Layouts: exact maps between hardware positions (lane, slot, wave…) and logical coordinates.

Pure layout algebra only; framework integrations (Gluon specs, TileLang index maps, ``check_layout``)
live in :mod:`tilesim.frameworks`, above the catalog."""

from tilesim.layouts.expr import IndexExpr, Term, expressions
from tilesim.layouts.compare import compare_layouts
from tilesim.layouts.layout import Dims, Layout, Location, compose, product
from tilesim.layouts.render import FORMATS, from_json, render, render_matrix, render_registers, to_csv, to_json

__all__ = [
    "compare_layouts",
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
