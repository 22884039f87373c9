"""The lane-accurate wave simulator."""

from tilesim.wave.codec import Codec, codec
from tilesim.wave.sim import Report, SimResult, simulate

__all__ = ["Codec", "Report", "SimResult", "codec", "simulate"]
