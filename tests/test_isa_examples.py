"""End to end: every example on every AMD target it supports, emitted as HIP, compiled by clang,
executed by tilesim's ISA emulator — and compared with the tile simulator, bit for bit.

The two are independent paths to the same numbers: the simulator runs the Tile IR through its
own register model; the emulator runs the instructions clang chose (address arithmetic, EXEC
masking, loads, LDS, barriers, the matrix instruction reading whatever registers the compiled
code filled). Matrix results are the exact sum rounded once (the catalog's numerics), which both
use, so the outputs agree bit for bit.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import tilesim as ts
from tilesim.isa import emulate_program

EXAMPLES = ("gemm", "gemm_abt", "int8_gemm", "lds_gemm", "fp8_gemm", "port_cdna3", "sparse_gemm", "batched_small_gemm",
            "mxfp8_gemm")
# the emulator models these families and wave sizes (tilesim.isa); other programs of the examples are skipped here
EMULATED = {("cdna3", 64), ("cdna4", 64), ("rdna3", 32), ("rdna4", 32)}


def _cases() -> list[tuple[str, int]]:
    out = []
    for ex in EXAMPLES:
        mod = importlib.import_module(f"examples.{ex}")
        for i, p in enumerate(mod.programs()):
            if ts.get_target(p.target).vendor == "amd" and (ts.get_target(p.target).family, p.wave_size) in EMULATED:
                out.append((ex, i))
    return out


CASES = _cases()


def _prog(ex: str, i: int) -> tuple[object, ts.Program]:
    mod = importlib.import_module(f"examples.{ex}")
    return mod, mod.programs()[i]


@pytest.mark.compiler
@pytest.mark.parametrize(("example", "index"), CASES,
                         ids=[f"{e}-{_prog(e, i)[1].target}-{i}" for e, i in CASES])
def test_example_emulates_bit_exact_to_the_simulator(example: str, index: int) -> None:
    mod, prog = _prog(example, index)
    arrays = mod.inputs(prog)
    want = ts.simulate(prog, **arrays)
    got = emulate_program(prog, arrays)
    assert got.races == ()
    assert got.instructions > 0
    for t in prog.tensors:
        if t.output:
            np.testing.assert_array_equal(got[t.name], want[t.name], err_msg=f"{example} on {prog.target}: {t.name}")
    # and both are right: the simulator's answer is the float64 reference within the catalog's tolerance
    ref = mod.reference(**arrays)
    for name, r in ref.items():
        assert np.allclose(got[name], r, rtol=1e-2, atol=1e-2), name


@pytest.mark.compiler
def test_unsigned_int8_variant_matches_too() -> None:
    mod = importlib.import_module("examples.int8_gemm")
    for prog in mod.programs(signed=False):
        arrays = mod.inputs(prog)  # NEG=0: the WMMA reads the int8 bytes as unsigned; both must say so
        np.testing.assert_array_equal(emulate_program(prog, arrays)["C"], ts.simulate(prog, **arrays)["C"])


@pytest.mark.compiler
@pytest.mark.parametrize("index", [0, 1], ids=["gfx1201", "gfx942"])
def test_softmax_emulates_within_a_few_ulp(index: int) -> None:
    """Softmax's compiled ``expf`` is range reduction + ``v_exp_f32`` + ``v_ldexp_f32`` and its
    division is the ``v_div_scale/fmas/fixup`` expansion; the simulator rounds float64 ``exp`` once.
    The two legitimately differ in the last bits, so the check is a few f32 ulps, not bit-exact."""
    mod = importlib.import_module("examples.softmax")
    prog = mod.programs()[index]
    assert ts.get_target(prog.target).vendor == "amd"
    arrays = mod.inputs(prog)
    want = np.asarray(ts.simulate(prog, **arrays)["Y"], np.float64)
    got = np.asarray(emulate_program(prog, arrays)["Y"], np.float64)
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(got - want) <= 4 * ulp), float(np.max(np.abs(got - want) / ulp))


@pytest.mark.compiler
@pytest.mark.parametrize("mma", ["v_mfma_f32_16x16x32_f16", "v_mfma_f32_32x32x16_bf16"])
def test_gfx950_gemm_with_its_own_mfma_rows(mma: str) -> None:
    from examples.gemm import gemm, inputs

    prog = gemm.specialize(target="gfx950", M=64, N=64, K=64, mma=mma)
    arrays = inputs(prog)
    np.testing.assert_array_equal(emulate_program(prog, arrays)["C"], ts.simulate(prog, **arrays)["C"])
