"""NVIDIA mma.sync fragments against real silicon (skipped without an NVIDIA GPU and CuPy).

Independent source: the GPU itself. One-hot probes through the catalog's A and B layouts must
come back in the right D row/column through the catalog's D layout (see tilesim.hw.nvidia_probe).
"""

from __future__ import annotations

import pytest

from tilesim.matrix.catalog import rows

cp = pytest.importorskip("cupy", reason="needs CuPy and an NVIDIA GPU (run on the device machine)")


def _gpu_cc() -> int:
    try:
        major, minor = cp.cuda.Device(0).compute_capability[0], cp.cuda.Device(0).compute_capability[1]
        return int(major) * 10 + int(minor)
    except Exception as e:  # no driver / no device
        pytest.skip(f"no usable NVIDIA GPU: {e}")


NV = [r for r in rows() if r.kind == "mma_sync"]


@pytest.mark.cuda
@pytest.mark.parametrize("row", NV, ids=[r.mnemonic for r in NV])
def test_fragment_layouts_on_the_gpu(row):
    from tilesim.hw.nvidia_probe import run_probes

    cc = _gpu_cc()
    if f"sm_{cc}" not in row.targets and not (cc >= 90 and "sm_90" in row.targets):
        pytest.skip(f"{row.mnemonic} needs one of {row.targets}; this GPU is sm_{cc}")
    res = run_probes(row)
    assert res.probes == row.m * row.k + row.k * row.n + 1
    assert res.ok, "\n".join(res.mismatches[:10])


@pytest.mark.cuda
def test_a_wrong_fragment_layout_is_caught_and_blamed():
    """The probe can fail: swap two A slots in the catalog row and the GPU disagrees exactly there."""
    from dataclasses import replace

    from tilesim.hw.nvidia_probe import run_probes
    from tilesim.layouts.layout import Layout

    _gpu_cc()
    row = next(r for r in NV if r.mnemonic.endswith("m16n8k16.row.col.f32.f16.f16.f32"))
    geo = dict(dict(row.geometry)[32])
    good = geo["A"]

    def swapped(**mods):
        lay = good(**mods)
        hw, lg = lay.pairs()
        slot = hw[:, 1]
        hw2 = hw.copy()
        hw2[:, 1] = slot ^ 1  # a0<->a1, a2<->a3, ... in every lane: k and k+1 swap
        return Layout.from_pairs(lay.in_dims, lay.out_dims, hw2, lg, elem_bits=lay.elem_bits)

    geo["A"] = swapped
    bad_row = replace(row, geometry=((32, tuple(geo.items())),))
    res = run_probes(bad_row)
    assert not res.ok
    a_blamed = [m for m in res.mismatches if m.startswith("A[")]
    assert len(a_blamed) == row.m * row.k  # every A element moved, every one-hot A probe says so
    assert any(m.startswith("A[0][0]: D[0][") for m in a_blamed)
