"""Emitted index maps equal the catalog layouts on every slot; example kernels write every output
element exactly once and stay in bounds over their stated size ranges."""

from __future__ import annotations

import pytest

from proofs.kernels import (
    STATIC_MODULES,
    all_index_map_cases,
    emitted_index_maps,
    kernel_cases,
    prove_kernel,
    prove_kernel_static,
    static_kernel_cases,
)

IDX = all_index_map_cases()
KERNELS = list(kernel_cases())


@pytest.mark.parametrize("family", sorted({c.row.family for c in IDX}))
def test_emitted_index_expressions_equal_the_layout_tables(family):
    bad = [m for c in IDX if c.row.family == family for m in emitted_index_maps(c)]
    assert not bad, "\n".join(bad[:10])


@pytest.mark.parametrize(("mod", "kern", "spec"), KERNELS,
                         ids=[f"{m}-{s[0]}-{s[1][:14]}-M{s[2]}N{s[3]}K{s[4]}" for m, _, s in KERNELS])
def test_kernels_write_every_output_once_and_stay_in_bounds(mod, kern, spec):
    bad = prove_kernel(mod, kern, spec)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("mod", STATIC_MODULES)
def test_kernels_write_every_output_once_over_a_slice_of_the_static_range(mod):
    cases = [c for c in static_kernel_cases(full=False) if c[0] == mod]
    assert len(cases) >= 18
    bad = [m for c in cases for m in prove_kernel_static(*c)]
    assert not bad, "\n".join(bad[:10])


@pytest.mark.slow
@pytest.mark.parametrize("mod", STATIC_MODULES)
def test_kernels_write_every_output_once_over_the_static_range(mod):
    cases = [c for c in static_kernel_cases() if c[0] == mod]
    assert len(cases) >= 256
    bad = [m for c in cases for m in prove_kernel_static(*c)]
    assert not bad, "\n".join(bad[:10])


def test_the_static_obligation_catches_a_short_grid():
    from examples.gemm import gemm

    bad = prove_kernel_static("gemm", gemm, {"target": "gfx1201", "M": 40, "N": 16, "K": 16})
    errors = [m for m in bad if ": error: " in m]
    assert len(errors) == 1 and "C[32][0] is never written" in errors[0]
    # the operand rows that feed only the unwritten outputs are unread too: a warning that says so
    assert all(": warning: " in m and "the outputs never written, above, may be why" in m for m in bad[1:])


def test_the_obligation_catches_a_double_write():
    import tilesim as ts
    from tilesim.matrix import lookup
    from tilesim.wave.sim import simulate

    lay = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")

    @ts.kernel
    def twice(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.grid(2)
        ts.store(Y[0:, 0:], ts.load(X[0:, 0:], lay))  # both workgroups store the same tile

    import numpy as np

    res = simulate(twice.specialize(target="gfx1201", M=16, N=16), X=np.zeros((16, 16), np.float32))
    assert (res.write_counts["Y"] == 2).all()
