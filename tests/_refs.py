"""Independent reference tables shared by the numerics and dtype tests (not tilesim code)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

# Independent map from tilesim's type names to numpy / ml_dtypes types.
ML = {
    "f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
    "fp8_fnuz": ml_dtypes.float8_e4m3fnuz, "bf8_fnuz": ml_dtypes.float8_e5m2fnuz,
    "fp8_ocp": ml_dtypes.float8_e4m3fn, "bf8_ocp": ml_dtypes.float8_e5m2,
    "fp6": ml_dtypes.float6_e2m3fn, "bf6": ml_dtypes.float6_e3m2fn, "fp4": ml_dtypes.float4_e2m1fn,
    "e8m0": ml_dtypes.float8_e8m0fnu,
}
INT_RANGE = {"i8": (-128, 127), "u8": (0, 255), "i4": (-8, 7), "u4": (0, 15), "i32": (-2**31, 2**31 - 1)}


def q_ml(x: np.ndarray, t: str) -> np.ndarray:
    """Quantise float32 values to ``t`` with ml_dtypes/numpy (xf32/tf32: low 13 bits ignored)."""
    x32 = np.asarray(x, np.float32)
    if t in ("xf32", "tf32"):
        return (x32.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    return x32.astype(ML[t]).astype(np.float64)
