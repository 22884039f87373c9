"""Framework integrations: Triton Gluon layout specs, TileLang index maps, and checking either against
an instruction of the catalog (``check_layout``, ``check_index_maps``).

This package sits above the catalog (targets < layouts < matrix < … < frameworks): it may import
every lower layer; nothing below imports it.
"""

from tilesim.frameworks.check import check_layout, parse_spec
from tilesim.frameworks.gluon import (
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
from tilesim.frameworks.index_maps import IndexMapReport, check_index_maps, from_index_maps
from tilesim.frameworks.verdict import LayoutCheck

__all__ = [
    "AMDMFMALayout",
    "AMDWMMALayout",
    "BlockedLayout",
    "DistributedLinearLayout",
    "DotOperandLayout",
    "IndexMapReport",
    "LayoutCheck",
    "NVMMADistributedLayout",
    "PaddedSharedLayout",
    "SliceLayout",
    "SwizzledSharedLayout",
    "check_index_maps",
    "check_layout",
    "from_index_maps",
    "parse_spec",
]
