"""The ISA emulator runs gfx950 f8f6f4 MFMA with CBSZ/BLGP formats, and its block-scaled form.

Expected D is computed here: the A/B values the test packs, each 32-k block times the scale the
formula names (lane ``r + M*kb``, byte ``op_sel[i] + 2*op_sel_hi[i]``), decoded from the E8M0 spec
table (tests/_bitcodecs.py), multiplied in float64 and rounded once to f32.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests import _bitcodecs as spec
from tests._isa_harness import bits_f32, run
from tilesim.isa.asm import IsaError
from tilesim.matrix.catalog import lookup
from tilesim.matrix.registers import pack

FMT = {0: "fp8_ocp", 1: "bf8_ocp", 2: "fp6", 3: "bf6", 4: "fp4"}
NREGS = {0: 8, 1: 8, 2: 6, 3: 6, 4: 4}  # CDNA4 ISA §7.1.5: the tuple is 8/6/4 VGPRs by format


def _values(rng, code: int, shape) -> np.ndarray:
    pats = rng.integers(0, 1 << spec.FORMATS[FMT[code]].bits, shape)
    vals = spec.decode(pats, FMT[code])
    return np.where(np.isfinite(vals), vals, 0.0)


def _regs(image: np.ndarray, first: int) -> dict[int, np.ndarray]:
    return {first + r: image[:, r] for r in range(image.shape[1])}


CASES = [("16x16x128", 16, 128, 4, 4, (1, 0), (1, 1)), ("16x16x128", 16, 128, 0, 2, (0, 1), (0, 1)),
         ("32x32x64", 32, 64, 1, 4, (1, 1), (1, 0)), ("32x32x64", 32, 64, 3, 0, (0, 0), (0, 0))]


@pytest.mark.parametrize(("shape", "m", "k", "cbsz", "blgp", "op_sel", "op_sel_hi"), CASES)
def test_scaled_mfma_reads_scales_where_the_formula_says(shape, m, k, cbsz, blgp, op_sel, op_sel_hi) -> None:
    rng = np.random.default_rng(cbsz * 5 + blgp)
    row = lookup(f"v_mfma_scale_f32_{shape}_f8f6f4", "gfx950")
    a, b = _values(rng, cbsz, (m, k)), _values(rng, blgp, (k, m))
    c = rng.normal(size=(m, m)).astype(np.float32).astype(np.float64)
    na, nb, nc = NREGS[cbsz], NREGS[blgp], m * m // 64
    img_a = pack(row, "A", a, cbsz=cbsz)[:, :na]
    img_b = pack(row, "B", b, blgp=blgp)[:, :nb]
    img_c = pack(row, "C", c)
    scale_a = rng.integers(118, 136, (64, 4)).astype(np.uint32)  # four candidate bytes per lane
    scale_b = rng.integers(118, 136, (64, 4)).astype(np.uint32)
    word = lambda s: s[:, 0] | s[:, 1] << 8 | s[:, 2] << 16 | s[:, 3] << 24  # noqa: E731
    regs = {**_regs(img_a, 4), **_regs(img_b, 12), **_regs(img_c, 32), 30: word(scale_a), 31: word(scale_b)}
    mods = f"op_sel:[{op_sel[0]},{op_sel[1]},0] op_sel_hi:[{op_sel_hi[0]},{op_sel_hi[1]},0] cbsz:{cbsz} blgp:{blgp}"
    body = (f"\tv_mfma_scale_f32_{shape}_f8f6f4 v[32:{31 + nc}], v[4:{3 + na}], v[12:{11 + nb}], "
            f"v[32:{31 + nc}], v30, v31 {mods}")
    st = run("gfx950", body, v=regs)
    d_img = np.stack([st.v[32 + r][0] for r in range(nc)], 1)
    # expected: byte op_sel + 2*op_sel_hi of lane r + M*kb
    byte_a, byte_b = op_sel[0] + 2 * op_sel_hi[0], op_sel[1] + 2 * op_sel_hi[1]
    kb = np.arange(k) // 32
    ea = scale_a[np.arange(m)[:, None] + m * kb[None, :], byte_a]  # (m, k): the scale byte of A[i][k]
    eb = scale_b[np.arange(m)[None, :] + m * kb[:, None], byte_b]  # (k, m): of B[k][j]
    fa, fb = spec.decode(ea, "e8m0"), spec.decode(eb, "e8m0")
    want = ((a * fa) @ (b * fb) + c).astype(np.float32)
    got = bits_f32(d_img)
    dref = pack(row, "D", want.astype(np.float64)).view(np.float32)
    assert np.allclose(got, dref, rtol=2**-20, atol=1e-30)


def test_unscaled_f8f6f4_reads_the_formats_cbsz_and_blgp_name() -> None:
    rng = np.random.default_rng(7)
    row = lookup("v_mfma_f32_16x16x128_f8f6f4", "gfx950")
    a, b = _values(rng, 2, (16, 128)), _values(rng, 4, (128, 16))
    regs = {**_regs(pack(row, "A", a, cbsz=2)[:, :6], 4), **_regs(pack(row, "B", b, blgp=4)[:, :4], 12)}
    st = run("gfx950", "\tv_mfma_f32_16x16x128_f8f6f4 v[32:35], v[4:9], v[12:15], 0 cbsz:2 blgp:4", v=regs)
    got = bits_f32(np.stack([st.v[32 + r][0] for r in range(4)], 1))
    want = pack(row, "D", (a @ b).astype(np.float32).astype(np.float64)).view(np.float32)
    assert np.allclose(got, want, rtol=2**-20, atol=1e-30)


def test_wrong_tuple_size_and_sgpr_scales_are_refused() -> None:
    with pytest.raises(IsaError, match="takes 4 VGPRs"):
        run("gfx950", "\tv_mfma_f32_16x16x128_f8f6f4 v[32:35], v[4:11], v[12:15], 0 cbsz:4 blgp:4")
    with pytest.raises(IsaError, match="scale operand SA"):
        run("gfx950", "\tv_mfma_scale_f32_16x16x128_f8f6f4 v[32:35], v[4:11], v[12:19], v[32:35], s0, v31")
