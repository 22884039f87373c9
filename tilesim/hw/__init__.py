"""Hardware: the target table (``tilesim.hw.targets``) and, later, toolchains and runtimes."""

from tilesim.hw.targets import FEATURES, MATRIX_PATHS, TARGETS, Target, get_target, has, occupancy, target_names

__all__ = ["FEATURES", "MATRIX_PATHS", "TARGETS", "Target", "get_target", "has", "occupancy", "target_names"]
