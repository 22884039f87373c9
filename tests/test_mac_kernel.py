"""The MAC kernels (``tilesim/wave/_jit.py``) against an explicit k-ordered float64 loop, on values
chosen to expose any change of operation order or rounding: exponent spreads over the whole f16
and bf16 ranges, subnormals, -0 and Inf, and sums built to cancel (where another order of the
same terms gives other bits; checked: summing k in reverse fails this file).

The kernels vectorise across output columns and may contract ``s + a*b`` into an FMA, which is
exact only when ``a*b`` is (operands that are float32 values). The reference here is written from
the numerics model alone (a sum from +0 in k order, one multiply and one add per term, then one
rounding to f32 per step), not from the kernels. The last test feeds float64 operands whose
products round: an FMA would give other bits there, so it checks the kernel drops FMA for them."""

from __future__ import annotations

import numpy as np
import pytest

import tilesim.wave.kernels as kernels
from tilesim.matrix.dtypes import decode
from tilesim.wave.kernels import HAVE_NUMBA, mma_chain

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="the MAC kernels need numba")


def _k_ordered(va, base_a, off_a, vb, base_b, off_b, acc, k):
    """Each element: ``s = +0; s = s + a[m, i] * b[i, n]`` for i in order, then ``f32(s + c)``."""
    c = acc.astype(np.float64)
    G, M, N = acc.shape
    for t in range(base_a.shape[0]):
        a = np.where(off_a >= 0, va[base_a[t][:, None] + np.maximum(off_a, 0)[None, :]], 0.0).reshape(G, M, k)
        b = np.where(off_b >= 0, vb[base_b[t][:, None] + np.maximum(off_b, 0)[None, :]], 0.0).reshape(G, k, N)
        s = np.zeros((G, M, N))
        with np.errstate(all="ignore"):
            for i in range(k):
                prod = a[:, :, i, None] * b[:, None, i, :]  # rounded to float64 (exact for float32 values)
                s = s + prod
            c = (s + c).astype(np.float32).astype(np.float64)
    return c.astype(np.float32)


def _spread(rng: np.random.Generator, n: int, dt: str) -> np.ndarray:
    """Random ``dt`` values (as float64) over the type's whole exponent range, with zeros of both
    signs, subnormals and a few infinities of one sign (so no sum is Inf - Inf)."""
    bits = rng.integers(0, 1 << 16, n).astype(np.uint16)
    v = decode(bits, dt)
    v = np.where(np.isfinite(v), v, 1.0)
    v[rng.random(n) < 0.05] = 0.0
    v[rng.random(n) < 0.05] = -0.0
    if dt == "f16":
        v[rng.random(n) < 0.05] = rng.choice([1, -1]) * 2.0 ** -24 * rng.integers(1, 1024)  # subnormals
    return v


def _cancelling(rng: np.random.Generator, m: int, n: int, k: int, T: int) -> tuple[np.ndarray, np.ndarray]:
    """A and B tiles (one per step, flat) whose products cancel: in every row of A, two even
    positions hold +2**15 and -2**15 against the same B value 2**15 (products +-2**30 that cancel
    exactly), the rest f16 values near 2**-14 against B values near 2**-10 or 2**15. Terms of
    2**-24 .. 2**1 added while 2**30 is in the running sum lose bits that they keep once it has
    cancelled, so a sum taken in another order than k order gives other f32 results."""
    a = (2.0 ** -14 * (1 + rng.random((T, m, k)))).astype(np.float16).astype(np.float64)
    for t in range(T):
        for r in range(m):
            i, j = sorted(rng.choice(np.arange(0, k, 2), 2, replace=False))
            a[t, r, i], a[t, r, j] = 2.0 ** 15, -(2.0 ** 15)
    b = (2.0 ** -10 * (1 + rng.random((T, k, n)))).astype(np.float16).astype(np.float64)
    b[:, 0::2, :] = 2.0 ** 15 * rng.choice([1.0, -1.0], (T, 1, n))
    return a.reshape(-1), b.reshape(-1)


def _case(rng, m, n, k, G=5, T=6, dt="f16", infs=False, cancel=False):
    va, vb = _spread(rng, 2048, dt), _spread(rng, 2048, dt)
    if cancel:  # step t of every wave reads tile t
        va, vb = _cancelling(rng, m, n, k, T)
        base_a = np.repeat(np.arange(T)[:, None] * m * k, G, 1)
        base_b = np.repeat(np.arange(T)[:, None] * k * n, G, 1)
        acc = np.zeros((G, m, n), np.float32)
        return va, base_a, np.arange(m * k), vb, base_b, np.arange(k * n), acc, k
    if infs:  # +Inf in A against nonzero positive B only: such a sum is +Inf, never NaN
        va[:] = np.abs(va)
        vb[:] = np.where(vb == 0, 1.0, np.abs(vb))
        va[rng.random(va.size) < 0.01] = np.inf
    base_a = rng.integers(0, 2048 - m * k, (T, G))
    base_b = rng.integers(0, 2048 - k * n, (T, G))
    off_a = rng.permutation(m * k).astype(np.int64)
    off_b = rng.permutation(k * n).astype(np.int64)
    if not infs:
        off_b[1] = -1  # an element no lane owns reads 0
    acc = (rng.standard_normal((G, m, n)) * np.exp2(rng.integers(-20, 20, (G, m, n)))).astype(np.float32)
    acc[0, 0, :2] = -0.0
    return va, base_a, off_a, vb, base_b, off_b, acc, k


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("dt", ["f16", "bf16"])
# shapes: the GEMM ones; K > 16 (the kernel's k loop, 8 terms a pass: 32, 48; 4 a pass: 20);
# N not a multiple of the vector width (12: four doubles, 6: two); M not a multiple of 8 rows (12)
@pytest.mark.parametrize("m,n,k", [(16, 16, 16), (32, 32, 8), (16, 8, 16), (4, 4, 4), (16, 16, 32), (12, 12, 48),
                                   (8, 6, 20)])
def test_chain_is_the_k_ordered_loop(m, n, k, dt, threads, monkeypatch):
    monkeypatch.setattr(kernels, "_PARALLEL_MACS", 0 if threads else 1 << 62)
    rng = np.random.default_rng(m * 131 + n * 7 + k + (dt == "bf16"))
    for infs, cancel in ((False, False), (True, False), (False, True)):
        args = _case(rng, m, n, k, dt=dt, infs=infs, cancel=cancel and k >= 4)
        want = _k_ordered(*args)
        got = mma_chain(*args)
        assert got is not None
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
        if infs:
            assert np.isinf(want).any()


def test_step_kernel_is_the_k_ordered_loop(monkeypatch):
    """:func:`kernels.mma_step` (operands read through decode tables) on the same kind of values."""
    from tilesim.matrix.dtypes import encode

    monkeypatch.setattr(kernels, "_PARALLEL_STEP_MACS", 0)
    rng = np.random.default_rng(3)
    m = n = k = 16
    va, base_a, off_a, vb, base_b, off_b, acc, _ = _case(rng, m, n, k, T=1)
    lut = decode(np.arange(1 << 16, dtype=np.uint16), "f16")
    abits, bbits = encode(va, "f16").astype(np.uint16), encode(vb, "f16").astype(np.uint16)
    got = kernels.mma_step(abits, base_a[0], off_a, lut, bbits, base_b[0], off_b, lut, acc, k)
    want = _k_ordered(va, base_a, off_a, vb, base_b, off_b, acc, k)
    assert got is not None
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_inexact_products_get_no_fma():
    """Operands that are not float32 values: ``a*b`` rounds in float64, where an FMA would keep the
    bits it drops. Here ``a = b = 1 + 2**-30`` (product ``1 + 2**-29 + 2**-60``, which rounds to
    ``1 + 2**-29``) and the first term is ``-(1 + 2**-29)``, so the separate multiply and add give
    exactly 0 and an FMA ``2**-60``, which survives the f32 rounding."""
    k = 4
    x = 1 + 2.0 ** -30
    va = np.array([1.0, x, 0.0, 0.0] * 4)  # A row m: (1, x, 0, 0)
    vb = np.zeros(16)
    vb[0:4] = -(1 + 2.0 ** -29)  # B row k=0
    vb[4:8] = x  # B row k=1
    z = np.zeros((1, 1), np.int64)
    acc = np.zeros((1, 4, 4), np.float32)
    assert not kernels._f32_values(va)
    got = mma_chain(va, z, np.arange(16), vb, z, np.arange(16), acc, k)
    want = _k_ordered(va, z, np.arange(16), vb, z, np.arange(16), acc, k)
    assert want[0, 0, 0] == 0.0  # the model's answer; an FMA would give 2**-60
    assert got is not None and np.array_equal(got.view(np.uint32), want.view(np.uint32))
