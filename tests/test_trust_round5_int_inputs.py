"""Inputs the tensor's type cannot hold are refused, not wrapped or overflowed (trust, round five).

Before 0.11.0 ``--inputs FILE.npz``, ``ts.simulate`` and ``ts.run`` took any array for an integer tensor and
converted it silently: an i8 tensor given 300 read 44 (wrapped), 1.5 read 1 (truncated), an i32 bias of
2**40 read 0. The simulation was then of other inputs than the ones given, so a REFERENCE_MISMATCH blamed
the kernel for the caller's data (and a reference computed the same lossy way would agree with it). Now
each is an input error naming the tensor, the element, its value and the type's range (exit 2).

The ranges are the two's-complement ones of the type's width (i8: -128..127, u4: 0..15), not tilesim's.
A finite float past its type's largest finite value (1e6 in an f16 became inf) is refused the same way.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from examples import int8_gemm
from tilesim.cli import main
from tilesim.errors import InputError


def _prog():
    return int8_gemm.programs(M=32, N=32, K=32)[0]  # gfx942, A/B i8, Bias/C i32


def _arrays():
    rng = np.random.default_rng(0)
    return {"A": rng.integers(-128, 128, (32, 32)).astype(np.int8),
            "B": rng.integers(-128, 128, (32, 32)).astype(np.int8), "Bias": np.zeros((32, 32), np.int32)}


@pytest.mark.parametrize("name, value, dtype, words", [
    ("A", 300, np.int16, ["A", "i8", "300", "-128..127"]),
    ("A", -129, np.int64, ["A", "-129"]),
    ("B", 1.5, np.float64, ["B", "1.5", "not an integer"]),
    ("B", np.nan, np.float64, ["B", "nan"]),
    ("Bias", 2**40, np.int64, ["Bias", "i32", str(2**40)]),
])
def test_an_integer_tensor_given_what_its_type_cannot_hold_is_refused(name, value, dtype, words):
    arrays = _arrays()
    bad = arrays[name].astype(dtype)
    bad[3, 5] = value
    arrays[name] = bad
    with pytest.raises(InputError) as e:
        ts.simulate(_prog(), **arrays)
    assert all(w in str(e.value) for w in words) and "(3, 5)" in str(e.value)
    with pytest.raises(InputError):
        ts.run(_prog(), device="none", **arrays)


def test_the_cli_refuses_such_inputs_with_exit_2(tmp_path, capsys):
    prog = _prog()
    (tmp_path / "p.json").write_text(prog.to_json())
    arrays = _arrays()
    arrays["A"] = arrays["A"].astype(np.int16)
    arrays["A"][0, 0] = 300
    np.savez(tmp_path / "in.npz", **arrays)
    exact = arrays["A"].astype(np.int64) @ arrays["B"].astype(np.int64)
    np.savez(tmp_path / "exp.npz", C=exact)
    for cmd in ("simulate", "run"):
        assert main([cmd, str(tmp_path / "p.json"), "--inputs", str(tmp_path / "in.npz"),
                     "--expect", str(tmp_path / "exp.npz")]) == 2
        assert "300" in capsys.readouterr().err


def test_values_the_type_holds_in_a_wider_array_are_taken():
    arrays = {k: v.astype(np.float64 if k == "B" else np.int64) for k, v in _arrays().items()}
    arrays["A"][0, 0], arrays["A"][0, 1] = -128, 127
    got = ts.simulate(_prog(), **arrays)["C"]
    want = arrays["A"].astype(np.int64) @ arrays["B"].astype(np.int64)  # |sum| < 2**21: no wrap
    assert np.array_equal(got, want)


@pytest.mark.parametrize("name, dtype, value", [("A", "f16", 1e6), ("A", "f16", -70000.0), ("A", "bf16", 1e39),
                                                ("A", "fp8_ocp", 1e4), ("A", "fp8_fnuz", -1e4)])
def test_a_finite_float_its_type_overflows_on_is_refused(name, dtype, value):
    """65504 is f16's largest finite value, 448 OCP E4M3's, 240 FNUZ E4M3's, ~3.39e38 bf16's (their format
    specifications): a finite input past it became inf or NaN, other inputs than the given ones."""
    from examples.gemm import gemm

    mma = {"f16": "v_wmma_f32_16x16x16_f16", "bf16": "v_wmma_f32_16x16x16_bf16",
           "fp8_ocp": "v_wmma_f32_16x16x16_fp8_fp8"}.get(dtype)
    if dtype == "fp8_fnuz":
        prog = _typed_gemm("fp8_fnuz", "gfx942", "v_mfma_f32_16x16x32_fp8_fp8")
    elif dtype == "f16":
        prog = gemm.specialize(target="gfx1201", M=16, N=16, K=16, mma=mma)
    else:
        prog = _typed_gemm(dtype, "gfx1201", mma)
    K = prog.tensor("A").shape[1]
    A = np.ones((16, K))
    A[2, 3] = value
    with pytest.raises(InputError) as e:
        ts.simulate(prog, A=A, B=np.ones((K, 16)))
    assert "A" in str(e.value) and "(2, 3)" in str(e.value) and dtype in str(e.value)
    A[2, 3] = np.inf if dtype in ("f16", "bf16") else np.nan  # a non-finite value given is the caller's own
    ts.simulate(prog, A=A, B=np.ones((K, 16)))


def _typed_gemm(dt, target, mma):
    def g(A, B, C, *, mma=mma):
        op = ts.mma_op(mma)
        acc = ts.zeros(op.layout("C"), "f32")
        for k in ts.range(0, A.shape[1], op.k):
            acc = ts.mma(op, ts.load(A[0:, k:], op.layout("A")), ts.load(B[k:, 0:], op.layout("B")), acc)
        ts.store(C[0:, 0:], acc)

    g.__annotations__ = {"A": ts.Tensor[dt, "M", "K"], "B": ts.Tensor[dt, "K", "N"], "C": ts.Tensor["f32", "M", "N"]}
    from tilesim.matrix import lookup
    row = lookup(mma, target)
    return ts.kernel(g).specialize(target=target, M=16, N=16, K=row.k, mma=mma)
