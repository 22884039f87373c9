"""The lane-accurate wave simulator, inspection and program equivalence."""

from tilesim.wave.codec import Codec, codec
from tilesim.wave.equivalence import Equivalence, equivalent
from tilesim.wave.inspect import inspect, resolve_value
from tilesim.wave.sim import Report, SimResult, simulate

__all__ = ["Codec", "Equivalence", "Report", "SimResult", "codec", "equivalent", "inspect", "resolve_value", "simulate"]
