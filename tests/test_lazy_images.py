"""Lazily built register images and write records (tilesim/wave/images.py, provenance.py) answer
what the eager ones did: a load not yet gathered still reads the tensor as it was when a later
store changes it, an all-zero accumulator reads as zeros, and write counts and provenance switch
from the store-window form to per-element codes when an element is written twice. Expected values
come from numpy on the inputs (small integers: every f32 sum is exact)."""

from __future__ import annotations

import numpy as np

import tilesim as ts
from tilesim.matrix import lookup

LAY = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")


@ts.kernel
def load_then_store(Y: ts.Tensor["f32", "M", "N"], Z: ts.Tensor["f32", "M", "N"]):
    ts.grid(1)
    x = ts.load(Y[0:, 0:], LAY)  # not gathered yet when the next store overwrites Y
    ts.store(Y[0:, 0:], x + x)
    y = ts.load(Y[0:, 0:], LAY)
    ts.store(Z[0:, 0:], x + y)


def test_a_load_reads_the_tensor_as_it_was_before_a_later_store() -> None:
    prog = load_then_store.specialize(target="gfx1201", M=16, N=16)
    Y0 = np.arange(256, dtype=np.float32).reshape(16, 16) - 100
    res = ts.simulate(prog, Y=Y0.copy())
    assert np.array_equal(res["Y"], 2 * Y0) and np.array_equal(res["Z"], 3 * Y0)
    x_id = next(op.out.id for op in prog.walk() if op.kind == "load")
    assert res.registers[x_id].shape == (1, 1, 32, 8)


@ts.kernel
def stores_twice(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"], *, second_row=0):
    ts.grid(2)
    t = ts.tile_id(0)
    acc = ts.zeros(LAY, "f32")
    x = ts.load(X[t * 16:, 0:], LAY)
    ts.store(Y[t * 16:, 0:], acc + x)  # every element once: the window form
    ts.store(Y[second_row:, 0:], x)  # both workgroups write rows second_row..+16 again


def test_write_counts_and_provenance_when_elements_are_written_again() -> None:
    X = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    for second in (0, 8):
        prog = stores_twice.specialize(target="gfx1201", M=32, N=16, second_row=second)
        res = ts.simulate(prog, X=X)
        want = np.ones((32, 16), np.int64)
        want[second:second + 16] += 2  # two workgroups store there in the second store
        assert res.write_counts["Y"].dtype == np.int64 and np.array_equal(res.write_counts["Y"], want)
        prov = res.provenance["Y"]
        # the last writer of the re-written rows is workgroup 1 (the later wave in (wave, record) order)
        assert (prov[second:second + 16, :, 0] == 1).all()
        assert (prov[:second, :, 0] == 0).all() and (prov[second + 16:, :, 0] == 1).all()
        assert np.array_equal(res["Y"][second:second + 16], X[16:32])


def test_a_zero_accumulator_reads_as_zeros() -> None:
    prog = stores_twice.specialize(target="gfx1201", M=32, N=16, second_row=0)
    res = ts.simulate(prog, X=np.zeros((32, 16), np.float32))
    zero_id = next(op.out.id for op in prog.walk() if op.kind == "zeros")
    img = res.registers[zero_id]
    assert img.dtype == np.uint32 and img.shape == (2, 1, 32, 8) and not img.any()
