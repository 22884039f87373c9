"""Framework integrations: Triton Gluon layout specs, TileLang index maps, and checking either against
an instruction of the catalog (``check_layout``, ``check_index_maps``).

This package sits above the catalog (targets < layouts < matrix < … < frameworks): it may import
every lower layer; nothing below imports it.
"""

from tilesim.frameworks import gluon as _gluon
from tilesim.frameworks.check import check_layout, parse_spec
from tilesim.frameworks.gluon import *  # the Gluon layout classes, listed once: gluon.SPECS
from tilesim.frameworks.gluon_picture import owners as layout_owners
from tilesim.frameworks.gluon_picture import svg as layout_svg
from tilesim.frameworks.index_maps import IndexMapReport, check_index_maps, from_index_maps
from tilesim.frameworks.ttg_text import TtgParseError, parse_ttg
from tilesim.frameworks.verdict import LayoutCheck

__all__ = [
    "IndexMapReport",
    "LayoutCheck",
    "TtgParseError",
    "check_index_maps",
    "check_layout",
    "from_index_maps",
    "layout_owners",
    "layout_svg",
    "parse_spec",
    "parse_ttg",
]
__all__ += [name for name in sorted(_gluon.SPECS)]  # every Gluon layout class tilesim reads
