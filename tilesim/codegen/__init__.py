"""Code generation: Tile IR -> HIP/CUDA C++."""

from tilesim.codegen.hip import CodegenError, Emitted, emit_hip

__all__ = ["CodegenError", "Emitted", "emit_hip"]
