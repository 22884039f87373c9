"""Signaling-NaN sources of conversions and max/min: the emulator refuses them rather than guess.

The RDNA3 ISA guide's V_MAX_F32 / V_MIN_F32 pseudocode quiets a signaling NaN source in IEEE mode
(``if (WAVE_MODE.IEEE && isSignalNAN(S0.f32)) D0.f32 = cvtToQuietNAN(S0.f32)``) and IEEE 754 §7.2
makes every operation on a signaling NaN deliver a quiet one; numpy's casts and ``np.maximum`` keep
the signaling bit clear (f32 0x7F800001 -> f16 0x7C01, f16 0x7C01 -> f32 0x7F802000; max returns
0x7F800001 itself), and which payload the hardware keeps is not written down. So an active lane
with a signaling NaN source must be an IsaError, and an inactive one must not matter.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests._isa_harness import run
from tilesim.isa import IsaError

SNAN32, SNAN16, QNAN32 = 0x7F800001, 0x7C01, 0x7FC00001

LINES = [("gfx1201", "v_cvt_f16_f32_e32 v3, v0", SNAN32), ("gfx942", "v_cvt_f16_f32_e32 v3, v0", SNAN32),
         ("gfx1201", "v_cvt_f32_f16_e32 v3, v0", SNAN16), ("gfx1100", "v_max_f32_e32 v3, v0, v1", SNAN32),
         ("gfx942", "v_min_f32_e32 v3, v1, v0", SNAN32), ("gfx942", "v_max3_f32 v3, v1, v1, v0", SNAN32),
         ("gfx1201", "v_max_num_f32_e32 v3, v0, v1", SNAN32), ("gfx942", "v_cvt_f64_f32_e32 v[4:5], v0", SNAN32)]


@pytest.mark.parametrize("target,line,bits", LINES)
def test_an_active_signaling_nan_source_is_refused(target: str, line: str, bits: int) -> None:
    wave = 64 if target == "gfx942" else 32
    vals = np.full(wave, 0x3F800000)
    vals[3] = bits
    with pytest.raises(IsaError, match="signaling NaN"):
        run(target, "\t" + line, {0: vals, 1: np.full(wave, 0x3F800000)})


@pytest.mark.parametrize("target,line,bits", LINES)
def test_an_inactive_signaling_nan_or_an_active_quiet_nan_runs(target: str, line: str, bits: int) -> None:
    wave = 64 if target == "gfx942" else 32
    vals = np.full(wave, 0x3F800000)
    vals[3] = bits
    run(target, "\t" + line, {0: vals, 1: np.full(wave, 0x3F800000)}, exec_mask=((1 << wave) - 1) & ~(1 << 3))
    vals[3] = QNAN32 if bits == SNAN32 else 0x7E01
    run(target, "\t" + line, {0: vals, 1: np.full(wave, 0x3F800000)})
