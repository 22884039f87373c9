"""Sparse (SMFMAC/SWMMAC) and multi-block MFMA in tile programs, against independent expectations.

* The compressed-value and metadata layouts (tilesim/matrix/sparse.py) against AMD's matrix
  instruction calculator (tests/golden/amd_calculator): the calculator prints, for each dense k of
  a sparse A, the VGPR that holds its group, and for each index group its 4 bits; the ISA says
  the two kept elements share the group's field, the lower k in the low half (CDNA3 ISA §7.1.6,
  RDNA4 ISA §7.9), and that the index holds ``idx0 | idx1 << 2`` per group.
* compress / decompress against hand-written bytes.
* examples/sparse_gemm.py and examples/batched_small_gemm.py: simulated against float64 numpy on
  the decompressed / stacked matrices.
* CBSZ/ABID: the register image is packed from the calculator's plain A layout, the effective A
  read from its CBSZ/ABID layout (what the calculator says block b reads), and the product
  computed in float64 — no tilesim code in the expectation.
* planted bugs: a wrong index operand (wrong index set, metadata of the wrong rows) and a wrong
  block mapping make the simulator's output differ from numpy, and ``check`` names what it can see.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilesim as ts
from examples import batched_small_gemm, sparse_gemm
from tests._golden import records
from tilesim.errors import ModifierError, VerifyError
from tilesim.layouts import Layout
from tilesim.matrix import lookup
from tilesim.matrix.catalog import rows
from tilesim.matrix.sparse import compress, decompress, meta_layout, values_layout

SPARSE = [(r, t, w) for t in ("gfx942", "gfx1201") for r in rows() if r.sparse and t in r.targets for w in r.wave_sizes]


def _sorted(rec: np.ndarray) -> np.ndarray:
    rec = np.asarray(rec, np.int64)
    return rec[np.lexsort(rec.T[::-1])]


# ------------------------------------------------------------------------ layouts vs the calculator
@pytest.mark.parametrize("row,target,wave", SPARSE, ids=[f"{r.mnemonic}-w{w}" for r, _, w in SPARSE])
def test_values_layout_matches_calculator(row, target, wave):
    got = records(row.spellings, target, "A", wave)
    assert got is not None, f"no calculator layout for {row.mnemonic} A"
    gold = got[0]
    bits = {"f16": 16, "bf16": 16, "i8": 8, "u8": 8, "u4": 4, "i4": 4}.get(row.types[0], 8)  # fp8/bf8: 8
    first = gold[gold[:, 2] % 4 == 0]  # the four k of a group share one field
    want = []
    for b, i, k, vgpr, lane, lo, _ in first.tolist():
        want.append((b, i, k // 2, vgpr, lane, lo, lo + bits - 1))  # lower kept element: low half
        want.append((b, i, k // 2 + 1, vgpr, lane, lo + bits, lo + 2 * bits - 1))
    np.testing.assert_array_equal(values_layout(row, wave).location_array(), _sorted(want))


def _meta_expected(gold: np.ndarray) -> np.ndarray:
    first = gold[gold[:, 2] % 4 == 0]
    nib = {(b, i, k // 4): (vgpr, lane, lo) for b, i, k, vgpr, lane, lo, _ in first.tolist()}
    want = []
    for (b, i, g), (vgpr, lane, lo) in nib.items():
        if g % 2:
            assert nib[(b, i, g - 1)] == (vgpr, lane, lo - 4)  # the odd group: high nibble of the same byte
            continue
        assert lo % 8 == 0
        want.append((b, i, g // 2, vgpr, lane, lo, lo + 7))
    return _sorted(want)


INDEX_SETS = [(r, t, w, name, v) for r, t, w in SPARSE
              for name in ("abid", "opsel") if (m := r.modifier(name)) is not None and m.kind == "index_set"
              for v in m.values]


@pytest.mark.parametrize("row,target,wave,name,value", INDEX_SETS,
                         ids=[f"{r.mnemonic}-w{w}-{n}{v}" for r, _, w, n, v in INDEX_SETS])
def test_meta_layout_matches_calculator(row, target, wave, name, value):
    got = records(row.spellings, target, "K", wave, **{name: value})
    if got is None:  # the calculator prints only the index sets the wave size has
        with pytest.raises(ModifierError):
            row.layout("K", wave_size=wave, **{name: value})
        return
    np.testing.assert_array_equal(meta_layout(row, wave, **{name: value}).location_array(), _meta_expected(got[0]))


def test_every_sparse_row_has_both_layouts():
    assert len(SPARSE) >= 20  # 16 SMFMAC rows on gfx942, 11 SWMMAC rows on gfx1201 in two wave sizes
    for row, _, wave in SPARSE:
        for lay in (values_layout(row, wave), meta_layout(row, wave)):
            assert lay.is_function() and lay.is_injective() and lay.covers()


# ------------------------------------------------------------------------ compress / decompress
def test_compress_by_hand():
    dense = np.zeros((1, 16))
    dense[0, [1, 3]] = [1.0, 2.0]  # group 0 keeps k 1, 3: code 1 | 3 << 2 = 13
    dense[0, 4] = 5.0  # group 1: one non-zero at 0, a zero kept at 1: code 0 | 1 << 2 = 4
    dense[0, [10, 11]] = [7.0, -1.0]  # group 2: k 2, 3: code 2 | 3 << 2 = 14; group 3 empty: 0 | 1 << 2 = 4
    values, meta = compress(dense)
    np.testing.assert_array_equal(values, [[1, 2, 5, 0, 7, -1, 0, 0]])
    np.testing.assert_array_equal(meta, [[13 | 4 << 4, 14 | 4 << 4]])
    np.testing.assert_array_equal(decompress(values, meta), dense)


def test_compress_refuses_three_in_a_group():
    dense = np.zeros((2, 8))
    dense[1, 4:7] = 1
    with pytest.raises(ModifierError, match=r"group \(1, 1\)"):
        compress(dense)


def test_decompress_equal_positions_add():
    # code 5 = idx0 1, idx1 1: both kept values multiply B row 1 (the hardware gathers per value)
    out = decompress(np.array([[2.0, 3.0, 0, 0]]), np.array([[5 | 4 << 4]], np.uint8))
    np.testing.assert_array_equal(out, [[0, 5, 0, 0, 0, 0, 0, 0]])


# ------------------------------------------------------------------------ the examples vs float64
SPARSE_PROGS = sparse_gemm.programs()
BATCHED_PROGS = batched_small_gemm.programs() + batched_small_gemm.programs(broadcast=True)


def _mma(prog):
    return next(op for op in prog.walk() if op.kind in ("mma", "mma_sparse"))


@pytest.mark.parametrize("i", range(len(SPARSE_PROGS)),
                         ids=[f"{p.target}-w{p.wave_size}-{_mma(p).attr('instr')}-{i}" for i, p in enumerate(SPARSE_PROGS)])
def test_sparse_gemm_matches_float64(i):
    prog = SPARSE_PROGS[i]
    rep = ts.check(prog)
    assert rep.ok, rep
    assert rep.paths["emit"].ok
    arrays = sparse_gemm.inputs(prog, seed=i)
    out = ts.simulate(prog, **arrays)
    ref = sparse_gemm.reference(**arrays)["C"]
    assert not np.array_equal(arrays["Av"], 0)
    # f16 products are exact in float64; the one rounding is to f32 per mma: K/op.k roundings
    np.testing.assert_allclose(out["C"], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("i", range(len(BATCHED_PROGS)),
                         ids=[f"{p.target}-{_mma(p).attr('instr')}-{dict(_mma(p).attr('modifiers'))}" for p in BATCHED_PROGS])
def test_batched_small_gemm_matches_float64(i):
    prog = BATCHED_PROGS[i]
    rep = ts.check(prog)
    assert rep.ok, rep
    assert rep.paths["emit"].ok
    arrays = batched_small_gemm.inputs(prog, seed=i)
    out = ts.simulate(prog, **arrays)
    ref = batched_small_gemm.reference_for(prog, arrays)["C"]
    np.testing.assert_allclose(out["C"], ref, rtol=1e-5, atol=1e-5)
    assert out.write_counts["C"].min() == out.write_counts["C"].max() == 1  # every batch's C written once


# ------------------------------------------------------------------------ CBSZ/ABID vs the calculator
def _pack(gold: np.ndarray, values: np.ndarray, lanes: int) -> np.ndarray:
    """Register image from calculator records (b, i, k, vgpr, lane, lo, hi) and values[b, i, k]."""
    regs = np.zeros((lanes, int(gold[:, 3].max()) + 1), np.uint64)
    for b, i, k, vgpr, lane, lo, hi in gold.tolist():
        bits = int(np.float16(values[b, i, k]).view(np.uint16)) if hi - lo == 15 else \
            int(np.float32(values[b, i, k]).view(np.uint32))
        regs[lane, vgpr] |= np.uint64(bits << lo)
    return regs


def _read(gold: np.ndarray, regs: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape)
    for b, i, k, vgpr, lane, lo, hi in gold.tolist():
        bits = (int(regs[lane, vgpr]) >> lo) & ((1 << (hi - lo + 1)) - 1)
        out[b, i, k] = np.uint16(bits).view(np.float16) if hi - lo == 15 else np.uint32(bits).view(np.float32)
    return out


BCAST = [("gfx90a", "v_mfma_f32_4x4x4f16", "f16", 2, 3), ("gfx90a", "v_mfma_f32_4x4x4f16", "f16", 4, 9),
         ("gfx942", "v_mfma_f32_16x16x4_4b_f16", "f16", 1, 1), ("gfx942", "v_mfma_f32_16x16x4_4b_f16", "f16", 2, 2),
         ("gfx90a", "v_mfma_f32_32x32x4f16", "f16", 1, 1), ("gfx90a", "v_mfma_f32_16x16x1f32", "f32", 2, 3)]


@pytest.mark.parametrize("target,mma,dt,cbsz,abid", BCAST)
def test_cbsz_abid_broadcast_matches_calculator(target, mma, dt, cbsz, abid):
    row = lookup(mma, target)
    prog = batched_small_gemm.specialize(target, mma, dt, cbsz, abid, groups=1)
    assert ts.check(prog).ok
    arrays = batched_small_gemm.inputs(prog, seed=cbsz * 16 + abid)
    nb, m, k, n = row.blocks, row.m, row.k, row.n
    a = arrays["A"].astype(np.float64).reshape(nb, m, k)
    plain, src = records(row.spellings, target, "A", 64), records(row.spellings, target, "A", 64, cbsz=cbsz, abid=abid)
    assert plain is not None and src is not None
    effective = _read(src[0], _pack(plain[0], a, 64), (nb, m, k))  # what the calculator says each block reads
    assert not np.array_equal(effective, a)  # the broadcast moves data
    want = np.einsum("bmk,bkn->bmn", effective, arrays["B"].astype(np.float64).reshape(nb, k, n)).reshape(-1, n)
    out = ts.simulate(prog, **arrays)
    np.testing.assert_allclose(out["C"], want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------ planted bugs
def _sparse_prog(target, mma, wave=None, **opts):
    return sparse_gemm.sparse_gemm.specialize(target=target, wave_size=wave, M=32, N=32, K=64, KC=32, KM=8, mma=mma,
                                              **opts)


@ts.kernel
def _meta_set_mismatch(Av: ts.Tensor["f16", "M", "KC"], Am: ts.Tensor["u8", "M", "KM"], B: ts.Tensor["f16", "K", "N"],
                       C: ts.Tensor["f32", "M", "N"], *, mma="v_smfmac_f32_16x16x32_f16", load_set=1, read_set=0,
                       key="abid", meta_row=0):
    op = ts.mma_op(mma)
    ts.grid(C.shape[0] // op.m, C.shape[1] // op.n)
    tm, tn = ts.tile_id(0), ts.tile_id(1)
    acc = ts.zeros(op.layout("C"), "f32")
    for k in ts.range(0, B.shape[0], op.k):
        a = ts.load(Av[tm * op.m:, k // 2:], op.layout("A"))
        meta = ts.load(Am[(tm * op.m + meta_row) % C.shape[0]:, k // 8:], op.layout("index", **{key: load_set}))
        b = ts.load(B[k:, tn * op.n:], op.layout("B"))
        acc = ts.mma(op, a, b, acc, index=meta, **({key: read_set} if read_set else {}))
    ts.store(C[tm * op.m:, tn * op.n:], acc)


PLANTED_INDEX = [("gfx942", None, "v_smfmac_f32_16x16x32_f16", "abid"), ("gfx1201", None, "v_swmmac_f32_16x16x32_f16", "opsel"),
                 ("gfx1201", 64, "v_swmmac_f32_16x16x32_f16", "opsel")]


@pytest.mark.parametrize("target,wave,mma,key", PLANTED_INDEX)
def test_planted_wrong_index_set(target, wave, mma, key):
    """The metadata is loaded into index set 1 but the instruction reads set 0: the simulator reads
    whatever set 0 holds (zeros: every group's kept values land on k 0), as the hardware would."""
    good = _meta_set_mismatch.specialize(target=target, wave_size=wave, M=32, N=32, K=64, KC=32, KM=8, mma=mma,
                                         load_set=1, read_set=1, key=key)
    bad = _meta_set_mismatch.specialize(target=target, wave_size=wave, M=32, N=32, K=64, KC=32, KM=8, mma=mma,
                                        load_set=1, read_set=0, key=key)
    arrays = sparse_gemm.inputs(good, seed=3)
    ref = sparse_gemm.reference(**arrays)["C"]
    assert ts.check(good).ok
    np.testing.assert_allclose(ts.simulate(good, **arrays)["C"], ref, rtol=1e-5, atol=1e-5)
    rep = ts.check(bad)
    assert not rep.ok and any("operand index" in str(f) for f in rep.errors), rep
    wrong = ts.simulate(bad, **arrays)["C"]
    assert np.abs(wrong - ref).max() > 0.1


def test_planted_metadata_of_other_rows():
    """Layouts right, data wrong: the metadata of the rows 1 below. check cannot see it; the
    simulator's output differs from the float64 reference."""
    prog = _meta_set_mismatch.specialize(target="gfx942", M=32, N=32, K=64, KC=32, KM=8, load_set=0, read_set=0,
                                         meta_row=1)
    assert ts.check(prog).ok
    arrays = sparse_gemm.inputs(prog, seed=4)
    ref = sparse_gemm.reference(**arrays)["C"]
    assert np.abs(ts.simulate(prog, **arrays)["C"] - ref).max() > 0.1
    v = ts.run(prog, reference={"C": ref}, device="none", **arrays)  # blamed through the sparse instruction
    assert v.status == "SIM_MISMATCH" and "computed by v_smfmac_f32_16x16x32_f16" in str(v)


def _rotated_blocks(lay: Layout) -> Layout:
    """``lay`` with block b's registers holding batch b+1's elements: a wrong block mapping."""
    nb = dict(lay.out_dims)["block"]
    hw, lg = lay.pairs()
    lg = lg.copy()
    bi = lay.out_names.index("block")
    lg[:, bi] = (lg[:, bi] + 1) % nb
    return Layout.from_pairs(lay.in_dims, lay.out_dims, hw, lg, elem_bits=lay.elem_bits)


@ts.kernel
def _batched_declared(A: ts.Tensor["f16", "BM", "K"], B: ts.Tensor["f16", "BK", "N"], C: ts.Tensor["f32", "BM", "N"],
                      *, mma="v_mfma_f32_4x4x4f16", a_layout=None):
    op = ts.mma_op(mma)
    ts.grid(C.shape[0] // (op.blocks * op.m))
    g = ts.tile_id(0)
    acc = ts.zeros(op.layout("C"), "f32")
    a = ts.load(A[g * (op.blocks * op.m):, 0:], a_layout or op.layout("A"))
    b = ts.load(B[g * (op.blocks * op.k):, 0:], op.layout("B"))
    ts.store(C[g * (op.blocks * op.m):, 0:], ts.mma(op, a, b, acc))


@pytest.mark.parametrize("target,mma", [("gfx90a", "v_mfma_f32_4x4x4f16"), ("gfx942", "v_mfma_f32_16x16x4_4b_f16"),
                                        ("gfx90a", "v_mfma_f32_32x32x4f16")])
def test_planted_wrong_block_mapping(target, mma):
    row = lookup(mma, target)
    sizes = dict(BM=2 * row.blocks * row.m, BK=2 * row.blocks * row.k, K=row.k, N=row.n)
    wrong = _rotated_blocks(row.layout("A", wave_size=64))
    prog = _batched_declared.specialize(target=target, mma=mma, a_layout=wrong, **sizes)
    rep = ts.check(prog)
    assert not rep.ok and any("operand A" in str(f) for f in rep.errors), rep
    arrays = batched_small_gemm.inputs(prog, seed=5)
    ref = batched_small_gemm.reference(arrays["A"], arrays["B"])["C"]
    out = ts.simulate(prog, **arrays)["C"]
    assert np.abs(out - ref).max() > 0.1
    # what the hardware computes: block b multiplies batch b+1's A (the load put it in block b's registers)
    nb, m, k, n = row.blocks, row.m, row.k, row.n
    a = arrays["A"].astype(np.float64).reshape(-1, nb, m, k)
    shifted = np.roll(a, -1, axis=1).reshape(-1, m, k)
    want = np.einsum("bmk,bkn->bmn", shifted, arrays["B"].astype(np.float64).reshape(-1, k, n)).reshape(-1, n)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------ the DSL says what it wants
def test_sparse_mma_needs_its_index():
    @ts.kernel
    def no_index(Av: ts.Tensor["f16", "M", "KC"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"]):
        op = ts.mma_op("v_smfmac_f32_16x16x32_f16")
        acc = ts.zeros(op.layout("C"), "f32")
        ts.store(C[0:, 0:], ts.mma(op, ts.load(Av[0:, 0:], op.layout("A")), ts.load(B[0:, 0:], op.layout("B")), acc))

    with pytest.raises(VerifyError, match="pass its metadata"):
        no_index.specialize(target="gfx942", M=16, N=16, K=32, KC=16)


def test_dense_mma_refuses_an_index():
    @ts.kernel
    def extra(A: ts.Tensor["f16", "M", "K"], B: ts.Tensor["f16", "K", "N"], C: ts.Tensor["f32", "M", "N"]):
        op = ts.mma_op("v_mfma_f32_16x16x16f16")
        a, b = ts.load(A[0:, 0:], op.layout("A")), ts.load(B[0:, 0:], op.layout("B"))
        ts.store(C[0:, 0:], ts.mma(op, a, b, ts.zeros(op.layout("C"), "f32"), index=a))

    with pytest.raises(VerifyError, match="takes no index"):
        extra.specialize(target="gfx942", M=16, N=16, K=16)


def test_metadata_as_another_type_is_reported():
    prog = _sparse_prog("gfx942", "v_smfmac_f32_16x16x32_f16")
    bad = ts.Program.from_json(prog.to_json().replace('"dtype": "u8"', '"dtype": "i8"'))
    rep = ts.check(bad)
    assert not rep.ok and any("metadata bytes" in str(f) for f in rep.errors), rep


# ------------------------------------------------------------------------ emitted and compiled
@pytest.mark.compiler
@pytest.mark.parametrize(("module", "i", "shown"), [
    ("sparse_gemm", 0, "v_smfmac_f32_16x16x32_f16 "), ("sparse_gemm", 1, "v_smfmac_f32_32x32x16_f16 .* abid:1"),
    ("sparse_gemm", 2, "v_swmmac_f32_16x16x32_f16 "), ("sparse_gemm", 3, "v_swmmac_f32_16x16x32_f16 .* index_key:1"),
    ("broadcast", 0, "v_mfma_f32_4x4x4_16b_f16 .* cbsz:4 abid:5"), ("broadcast", 1, "v_mfma_f32_16x16x4f16 .* cbsz:1 abid:1"),
    ("batched_small_gemm", 1, "v_mfma_f32_4x4x4f16 "), ("batched_small_gemm", 3, "v_mfma_f32_32x32x4_2b_f16 ")])
def test_the_isa_shows_the_instruction_and_its_modifiers(module, i, shown):
    """clang chose the instruction with the modifiers the program asked for: ABID/CBSZ as the
    builtin's immediates, the SWMMAC index set as index_key (LLVM folds the emitted shift)."""
    import re

    from tilesim.codegen.hip import emit_hip
    from tilesim.hw import offline

    prog = (sparse_gemm.programs() if module == "sparse_gemm" else
            batched_small_gemm.programs(broadcast=module == "broadcast"))[i]
    comp = offline.compile_hip(emit_hip(prog).source, prog.target, wave_size=prog.wave_size)
    assert re.search(shown, comp.isa), [ln for ln in comp.isa.splitlines() if "mfma" in ln or "mmac" in ln]
    assert comp.metadata["scratch_bytes"] == 0


@pytest.mark.compiler
@pytest.mark.parametrize(("module", "i"), [("sparse_gemm", i) for i in range(4)] + [("batched_small_gemm", 0),
                                                                                    ("broadcast", 0)])
def test_the_isa_emulator_runs_the_compiled_kernel(module, i):
    """tilesim's ISA emulator executes clang's code (SMFMAC/SWMMAC with the index VGPR, CBSZ/ABID)
    and gets the simulator's bits."""
    from tilesim.isa import emulate_program

    mod = sparse_gemm if module == "sparse_gemm" else batched_small_gemm
    prog = (sparse_gemm.programs() if module == "sparse_gemm" else
            batched_small_gemm.programs(broadcast=module == "broadcast"))[i]
    arrays = mod.inputs(prog)
    np.testing.assert_array_equal(emulate_program(prog, arrays)["C"], ts.simulate(prog, **arrays)["C"])


def test_examples_run_as_scripts():
    import contextlib
    import io
    import runpy

    for mod in (sparse_gemm, batched_small_gemm):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            runpy.run_path(mod.__file__, run_name="__main__")
        errs = [float(x) for x in __import__("re").findall(r"max \|C - float64\| = (\S+)", buf.getvalue())]
        assert errs and max(errs) < 1e-4, buf.getvalue()


def test_layout_command_shows_the_compressed_values_and_metadata(capsys):
    """``tilesim layout --operand values|index``: the tiles a sparse program loads. Expected cells
    from the calculator's A/K records (the group's field; the kept value p at 16*p, the group's
    nibble pair as one byte) — not from tilesim."""
    from tilesim.cli import main

    row = lookup("v_smfmac_f32_16x16x32_f16", "gfx942")
    a, _ = records(row.spellings, "gfx942", "A", 64)
    k, _ = records(row.spellings, "gfx942", "K", 64, abid=2)
    field = {(i, kk): (lane, v) for _, i, kk, v, lane, _, _ in a.tolist()}
    nib = {(i, kk): (lane, v, lo) for _, i, kk, v, lane, lo, _ in k.tolist()}
    assert main(["layout", "--instr", row.mnemonic, "--arch", "gfx942", "--operand", "values"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for i, c in [(0, 0), (0, 1), (5, 6), (15, 15)]:
        lane, v = field[(i, 4 * (c // 2))]
        assert f"L{lane}.v{v}[{16 * (c % 2)}:{16 * (c % 2) + 15}]" == lines[2 + i].split()[1 + c]
    assert main(["layout", "--instr", row.mnemonic, "--arch", "gfx942", "--operand", "index", "--abid", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for i, c in [(0, 0), (3, 1), (15, 3)]:
        lane, v, lo = nib[(i, 8 * c)]
        assert f"L{lane}.v{v}[{lo}:{lo + 7}]" == lines[2 + i].split()[1 + c]
    assert main(["layout", "--instr", "v_mfma_f32_16x16x16f16", "--arch", "gfx942", "--operand", "values"]) != 0
    assert "not a sparse instruction" in capsys.readouterr().err
