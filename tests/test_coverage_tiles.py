"""The coverage pass's proof on tiles (tilesim/ir/footprint.py ``_tiled``) gives exactly the findings
of the per-element pass it short-cuts.

Every program here is checked twice: as ``check`` runs it, and with the tile proof switched off
(every tensor through the per-element counts, the pass as it was before the proof). The findings
must be the same list, message for message. The programs: every example's ``programs()`` on every
target it names, the GEMM at ragged sizes (grids that leave rows unwritten, masked edge tiles), and
planted coverage bugs (a lane missing from a store layout, two workgroups storing one tile, tiles
offset off the lattice, a grid that skips every other tile, an output stored twice by two ops,
stores of halves of a tensor). The expected findings of the planted bugs are the per-element pass's
own (tests/test_check_sound.py pins its messages against hand-worked element indices); this file
shows the proof never changes them, and that the proof does fire (else it would test nothing).
"""

from __future__ import annotations

import importlib

import pytest

import tilesim as ts
from examples import gemm as gemm_mod
from examples.gemm import gemm
from tilesim.ir import footprint
from tilesim.layouts import Layout
from tilesim.matrix import lookup
from tests.test_store_tiles import placed

WMMA = "v_wmma_f32_16x16x16_f16"
MFMA = "v_mfma_f32_32x32x8f16"
EXAMPLES = ("batched_small_gemm", "block_gemm", "fp8_gemm", "gemm", "gemm_abt", "gemm_bias", "gemm_planted",
            "gfx1250_gemm", "int8_gemm", "lds_gemm", "lds_tr_gemm", "mxfp4_gemm", "mxfp8_gemm", "port_cdna3",
            "softmax", "sparse_gemm")


def _c_layout(target: str = "gfx1201", instr: str = WMMA) -> Layout:
    return lookup(instr, target).layout("C")


@ts.kernel
def _copy(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"], *, lay=None, gm=1, gn=1, sm=16, sn=16,
          om=0, on=0):
    """Workgroup (i, j) copies the tile at (sm*i + om, sn*j + on): strides and offsets plant gaps,
    overlaps and origins off the lattice of tiles."""
    ts.grid(gm, gn)
    r, c = ts.tile_id(0) * sm + om, ts.tile_id(1) * sn + on
    ts.store(Y[r:, c:], ts.load(X[r:, c:], lay))


@ts.kernel
def _halves(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"], *, lay=None, second=16):
    """Two store ops: the left tile, then the tile at column ``second`` (16: the right half)."""
    v = ts.load(X[0:, 0:], lay)
    ts.store(Y[0:, 0:], v)
    ts.store(Y[0:, second:], v)


@ts.kernel
def _stored_twice(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"], *, lay=None):
    v = ts.load(X[0:, 0:], lay)
    ts.store(Y[0:, 0:], v)
    ts.store(Y[0:, 0:], v)


def _partial_layout() -> Layout:  # the RDNA4 C layout without column 5 (lanes 5 and 21)
    c = _c_layout()
    hw, lg = c.pairs()
    keep = lg[:, c.out_names.index("col")] != 5
    return Layout.from_pairs(c.in_dims, c.out_dims, hw[keep], lg[keep], elem_bits=c.elem_bits)


def _programs() -> list[tuple[str, ts.Program]]:
    out = []
    for mod in EXAMPLES:
        for p in importlib.import_module(f"examples.{mod}").programs():
            out.append((f"{mod}:{p.name}:{p.target}", p))
    for M, N, K in ((40, 64, 32), (48, 64, 32), (64, 40, 32), (96, 96, 64), (72, 40, 32)):
        for target, instr in (("gfx1201", WMMA), ("gfx1100", WMMA), ("gfx942", MFMA),
                              ("gfx942", "v_mfma_f32_16x16x16f16"),
                              ("sm_90", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")):
            out.append((f"gemm {M}x{N}x{K} {target}", gemm.specialize(target=target, M=M, N=N, K=K, mma=instr)))
    for target, instr in gemm_mod.CONFIGS:  # the accumulator stored transposed
        for M, N in ((64, 32), (40, 32)):
            out.append((f"transposed {M}x{N} {target}", placed(target, instr, M, N, 32, transpose=True)))
    lay, mfma = _c_layout(), _c_layout("gfx942", MFMA)
    planted = {
        "exact 4x4": dict(M=64, N=64, lay=lay, gm=4, gn=4),
        "exact mfma": dict(M=64, N=96, lay=mfma, gm=2, gn=3, sm=32, sn=32),
        "missing lane": dict(M=32, N=32, lay=_partial_layout(), gm=2, gn=2),
        "grid too small": dict(M=64, N=64, lay=lay, gm=3, gn=4),
        "grid too large (masked)": dict(M=48, N=48, lay=lay, gm=4, gn=3),
        "same tile twice": dict(M=16, N=16, lay=lay, gm=2, gn=1, sm=0),
        "overlapping rows": dict(M=64, N=16, lay=lay, gm=5, gn=1, sm=12),
        "every other tile": dict(M=64, N=64, lay=lay, gm=2, gn=4, sm=32),
        "off the lattice": dict(M=40, N=16, lay=lay, gm=2, gn=1, om=8),
        "half-overlapping tiles": dict(M=32, N=32, lay=lay, gm=2, gn=2, sm=8, sn=16),
        "off the lattice, one start per tile": dict(M=48, N=16, lay=lay, gm=3, gn=1, sm=15, om=2),
        "shifted columns": dict(M=16, N=48, lay=lay, gm=1, gn=2, sn=16, on=8),
    }
    for name, kw in planted.items():
        M, N = kw.pop("M"), kw.pop("N")
        out.append((f"copy {name}", _copy.specialize(target="gfx1201" if kw["lay"] is lay or name == "missing lane"
                                                     else "gfx942", M=M, N=N, **kw)))
    out.append(("two halves", _halves.specialize(target="gfx1201", M=16, N=32, lay=lay)))
    out.append(("two halves overlapping", _halves.specialize(target="gfx1201", M=16, N=32, lay=lay, second=8)))
    out.append(("two halves, a column unwritten", _halves.specialize(target="gfx1201", M=16, N=33, lay=lay)))
    out.append(("stored twice by one wave", _stored_twice.specialize(target="gfx1201", M=16, N=16, lay=lay)))
    return out


def _findings(prog: ts.Program) -> list[str]:
    return [f"{f.severity} {f}" for f in ts.check(prog).findings]


def test_tile_proof_gives_the_per_element_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    proved: list[bool] = []
    real = footprint._tiled

    def spy(stores, shape):
        proved.append(real(stores, shape))
        return proved[-1]

    progs = _programs()
    with_proof, without = {}, {}
    monkeypatch.setattr(footprint, "_tiled", spy)
    for name, p in progs:
        with_proof[name] = _findings(p)
    monkeypatch.setattr(footprint, "_tiled", lambda stores, shape: False)
    for name, p in progs:
        without[name] = _findings(p)
    for name, _ in progs:
        assert with_proof[name] == without[name], name
    # the proof decided many tensors, and the planted bugs reached the per-element pass and were found
    assert sum(proved) >= 40 and not all(proved), (sum(proved), len(proved))
    for name in ("copy missing lane", "copy grid too small", "copy same tile twice", "copy overlapping rows",
                 "copy every other tile", "copy off the lattice", "copy off the lattice, one start per tile", "copy half-overlapping tiles", "two halves overlapping",
                 "two halves, a column unwritten", "stored twice by one wave", "gemm 40x64x32 gfx1201"):
        assert any(("never written" in f or "written by" in f or "written 2 times" in f) for f in without[name]), \
            (name, without[name])
    for name in ("copy exact 4x4", "copy exact mfma", "two halves",
                 "gemm 48x64x32 gfx1201", "gemm 96x96x64 gfx942"):
        assert not any("never written" in f or "written by" in f for f in without[name]), (name, without[name])


def test_read_tile_proof_gives_the_per_element_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Input coverage (``input_coverage``) the same way: its proof on tiles (``_read_tiled``) against
    the per-element pass, on every example (broadcast loads of a bias, async copies, scales, LDS
    staging), the ragged GEMMs and planted input-coverage bugs (tests/test_input_coverage.py)."""
    from tests.test_input_coverage import planted as unread  # noqa: PLC0415

    progs = _programs() + [(f"block_gemm_async:{p.name}:{p.target}", p)
                           for p in importlib.import_module("examples.block_gemm_async").programs()]
    progs += [(f"unread {k}", p) for k, p in unread().items()]
    proved: list[bool] = []
    real = footprint._read_tiled

    def spy(reads, shape):
        proved.append(real(reads, shape))
        return proved[-1]

    monkeypatch.setattr(footprint, "_read_tiled", spy)
    with_proof = {name: _findings(p) for name, p in progs}
    monkeypatch.setattr(footprint, "_read_tiled", lambda reads, shape: False)
    without = {name: _findings(p) for name, p in progs}
    for name, _ in progs:
        assert with_proof[name] == without[name], name
    assert sum(proved) >= 40 and not all(proved), (sum(proved), len(proved))
    for name in ("unread one step short", "unread from op.k", "unread scales of the wrong k-block"):
        assert any("never read" in f for f in without[name]), (name, without[name])
    # elsewhere unread inputs are warnings: operands of outputs never written (a grid too small for ragged
    # sizes: that error comes first), the inputs of copies (no matrix instruction: may be meant)
    assert not any(f.startswith("error") and "never read" in f for name, _ in progs if not name.startswith("unread")
                   for f in without[name])
    for name in ("gemm 40x64x32 gfx1201", "copy grid too small"):
        assert any(f.startswith("warning") and "never read" in f for f in without[name]), (name, without[name])
