"""Write docs/notebooks/*.ipynb from the cell lists below (run after editing: python tools/make_notebooks.py).

Every code cell asserts what it shows; tests/test_notebooks.py executes them all.
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "docs" / "notebooks"

NB: dict[str, list[tuple[str, str]]] = {}

NB["01_wave32_vs_wave64"] = [
    ("md", "# Wave32 vs wave64: one 16x16 product, three ways\n\nRDNA3 (gfx1100) and RDNA4 (gfx1201) compute "
           "`D = A·B + C` with `v_wmma_f32_16x16x16_f16` in wave32; CDNA3 (gfx942) uses a wave64 MFMA. The "
           "same mnemonic on RDNA3 and RDNA4 puts elements in different lanes and registers."),
    ("code", "import numpy as np\nimport tilesim as ts\nfrom tilesim.matrix import lookup\n"
             "rdna3 = lookup('v_wmma_f32_16x16x16_f16', 'gfx1100')\nrdna4 = lookup('v_wmma_f32_16x16x16_f16', 'gfx1201')\n"
             "cdna3 = lookup('v_mfma_f32_16x16x16f16', 'gfx942')\n"
             "print(rdna3.registers_for(32), rdna4.registers_for(32), cdna3.registers_for(64))\n"
             "assert rdna3.registers_for(32)['A'] == 8 and rdna4.registers_for(32)['A'] == 4  # RDNA3 replicates A"),
    ("md", "RDNA3 keeps every A element twice — in lane `i` and lane `i+16`. RDNA4 splits K across the two lane "
           "halves instead, so each lane holds half as much."),
    ("code", "a3, a4 = rdna3.layout('A'), rdna4.layout('A')\n"
             "assert a3.owners_of(block=0, row=3, col=5) == [{'lane': 3, 'slot': 5}, {'lane': 19, 'slot': 5}]\n"
             "assert a4.owners_of(block=0, row=3, col=5) == [{'lane': 19, 'slot': 1}]\n"
             "assert a3.replication()['copies'] == {2: 256} and a4.replication()['copies'] == {1: 256}"),
    ("md", "The accumulator rows interleave differently: RDNA3 `row = 2*v + lane/16`, RDNA4 `row = 8*(lane/16) + v`, "
           "and wave64 MFMA `row = 4*(lane/16) + v`."),
    ("code", "from tilesim.layouts import expressions\n"
             "rows = {name: expressions(ins.layout('D'))['row'].text for name, ins in "
             "[('rdna3', rdna3), ('rdna4', rdna4), ('cdna3', cdna3)]}\nprint(rows)\n"
             "assert rows == {'rdna3': 'lane / 16 + slot * 2', 'rdna4': 'slot + (lane / 16) * 8', 'cdna3': 'slot + (lane / 16) * 4'}"),
    ("code", "rng = np.random.default_rng(0)\nA = rng.standard_normal((16, 16)).astype(np.float16)\n"
             "B = rng.standard_normal((16, 16)).astype(np.float16)\n"
             "outs = [ts.matrix.execute_logical(i, A, B) for i in (rdna3, rdna4, cdna3)]\n"
             "assert all(np.array_equal(o, outs[0]) for o in outs)  # same math, different registers"),
]

NB["02_forging_an_index_map"] = [
    ("md", "# Forging an index map — and catching a wrong one\n\nWe build a layout by hand from the ISA formula, "
           "check it against the catalog, then plant the classic porting bug and let `check` and the "
           "simulator blame it."),
    ("code", "import numpy as np\nimport tilesim as ts\nfrom tilesim.layouts import Layout\nfrom tilesim.matrix import lookup\n"
             "mine = Layout.from_function({'lane': 32, 'slot': 8}, {'block': 1, 'row': 16, 'col': 16},\n"
             "    lambda lane, slot: {'block': 0 * lane, 'row': 2 * slot + lane // 16, 'col': lane % 16}, elem_bits=32)\n"
             "assert mine == lookup('v_wmma_f32_16x16x16_f16', 'gfx1100').layout('C')  # RDNA3's accumulator, exactly"),
    ("code", "from examples.gemm import gemm, inputs, reference\n"
             "rdna4_rows = lookup('v_wmma_f32_16x16x16_f16', 'gfx1201').layout('C')\n"
             "bad = gemm.specialize(target='gfx1100', M=32, N=32, K=32, c_layout=rdna4_rows)\n"
             "report = ts.check(bad)\nprint(report)\nassert not report.ok\n"
             "assert 'hardware i = lane / 16 + slot * 2' in report.errors[0].message"),
    ("code", "arrays = inputs(bad)\nres = ts.simulate(bad, **arrays)\nref = reference(**arrays)['C']\n"
             "wrong = np.abs(res['C'] - ref) > 1e-3\nprint(int(wrong.sum()), 'wrong elements')\n"
             "from tilesim.diff import blame\nlines, pattern = blame(res, 'C', wrong, res['C'], expected=ref)\n"
             "print(lines[0]); print(pattern)\nassert 'lane' in lines[0] and 'VGPR' in lines[0]"),
]

NB["03_porting_cdna_to_rdna4"] = [
    ("md", "# Porting a CDNA3 kernel to RDNA4\n\nThe same tile program, written against `ts.mma_op`, "
           "re-specialises from wave64 MFMA (gfx942) to wave32 WMMA (gfx1201). `ts.equivalent` proves the two "
           "agree on one-hot probes per operand and random inputs."),
    ("code", "import tilesim as ts\nfrom examples.gemm import gemm\n"
             "cdna = gemm.specialize(target='gfx942', M=64, N=64, K=64, mma='v_mfma_f32_32x32x8f16')\n"
             "rdna = gemm.specialize(target='gfx1201', M=64, N=64, K=64, mma='v_wmma_f32_16x16x16_f16')\n"
             "print(cdna.grid, cdna.wave_size, '->', rdna.grid, rdna.wave_size)\n"
             "assert (cdna.grid, rdna.grid) == ((2, 2), (4, 4))"),
    ("code", "eq = ts.equivalent(cdna, rdna)\nprint(eq)\nassert eq"),
    ("code", "assert ts.check(cdna).ok and ts.check(rdna).ok\n"
             "print(ts.check(cdna).occupancy, 'waves/SIMD on gfx942;', ts.check(rdna).occupancy, 'on gfx1201')"),
]

NB["04_sparse_indices"] = [
    ("md", "# Structured sparsity: SMFMAC and SWMMAC compression indices\n\nA 4:2 sparse A keeps two of every "
           "four k; the index operand K holds their 2-bit positions, 4 bits per group."),
    ("code", "import numpy as np\nfrom tilesim.matrix import lookup\nfrom tilesim.matrix.registers import "
             "pack, unpack, compress_sparse, execute_registers\n"
             "row = lookup('v_smfmac_f32_16x16x32_f16', 'gfx942')\nprint(row.registers_for())\n"
             "assert row.registers_for() == {'A': 2, 'B': 4, 'C': 4, 'D': 4, 'K': 1}"),
    ("code", "vals, idx = compress_sparse(np.array([[0, 5, 0, 7, 1, 0, 0, 0]], float))\n"
             "assert vals.tolist() == [[5, 7, 1, 0]] and idx.tolist() == [[1, 3, 0, 1]]"),
    ("code", "rng = np.random.default_rng(0)\nA = rng.integers(-3, 4, (16, 32)).astype(float)\n"
             "A.reshape(16, 8, 4)[:, :, [0, 2]] = 0  # keep k = 1, 3 of every group\n"
             "B = rng.integers(-3, 4, (32, 16)).astype(float)\n"
             "regs = [pack(row, 'A', A), pack(row, 'B', B), pack(row, 'C', np.zeros((16, 16)))]\n"
             "D = unpack(row, 'D', execute_registers(row, *regs, k=pack(row, 'K', A))).values[0]\n"
             "assert np.array_equal(D, A @ B)"),
    ("code", "k_lay = row.layout('K')\nloc = [l for l in k_lay.locations() if l.row == 0 and l.col < 8]\n"
             "print(loc[:2])\nassert {(l.lane, l.bit_lo) for l in loc} == {(0, 0), (0, 4)}  # groups 0 and 1 of row 0"),
]

NB["05_fp8_fnuz_vs_ocp"] = [
    ("md", "# fp8: FNUZ (gfx942) vs OCP (gfx950, gfx12)\n\nThe same mnemonic reads the same bits differently."),
    ("code", "import numpy as np\nfrom tilesim.matrix import lookup\nfrom tilesim.matrix.dtypes import decode\n"
             "fnuz = lookup('v_mfma_f32_16x16x32_fp8_fp8', 'gfx942')\nocp = lookup('v_mfma_f32_16x16x32_fp8_fp8', 'gfx950')\n"
             "print(fnuz.types[0], ocp.types[0])\nassert (fnuz.types[0], ocp.types[0]) == ('fp8_fnuz', 'fp8_ocp')\n"
             "assert decode(np.array([0x40]), 'fp8_fnuz')[0] == 1.0 and decode(np.array([0x40]), 'fp8_ocp')[0] == 2.0"),
    ("code", "from tilesim.matrix.numerics import execute_logical\n"
             "bits = np.full((16, 32), 0x40)\nA_f, A_o = decode(bits, 'fp8_fnuz'), decode(bits, 'fp8_ocp')\n"
             "D_f = execute_logical(fnuz, A_f, decode(np.full((32, 16), 0x40), 'fp8_fnuz'))\n"
             "D_o = execute_logical(ocp, A_o, decode(np.full((32, 16), 0x40), 'fp8_ocp'))\n"
             "assert np.all(D_o == 4 * D_f)  # each product is 4x larger under OCP"),
    ("code", "print('max finite:', float(decode(np.array([0x7f]), 'fp8_fnuz')[0]), float(decode(np.array([0x7e]), 'fp8_ocp')[0]))\n"
             "assert np.isnan(decode(np.array([0x80]), 'fp8_fnuz')[0])  # FNUZ: 0x80 is the only NaN, no -0\n"
             "assert decode(np.array([0x80]), 'fp8_ocp')[0] == 0.0  # OCP: 0x80 is -0"),
]

NB["06_lds_swizzles"] = [
    ("md", "# LDS swizzles and bank conflicts\n\nStaging the RDNA4 accumulator through LDS: each VGPR instruction "
           "touches rows v and v+8, which with a 64-byte row hit the same 16 banks. Padding each row by 2 "
           "elements moves row v+8 onto the other 16 banks."),
    ("code", "import numpy as np\nimport tilesim as ts\nfrom tilesim.matrix import lookup\n"
             "lay = lookup('v_wmma_f32_16x16x16_f16', 'gfx1201').layout('C')\n"
             "def staged(pad):\n    @ts.kernel\n    def k(X: ts.Tensor['f32', 'M', 'N'], Y: ts.Tensor['f32', 'M', 'N']):\n"
             "        buf = ts.lds_alloc('f32', 16, 16, pad=pad)\n        ts.lds_store(buf, 0, 0, ts.load(X[0:, 0:], lay))\n"
             "        ts.barrier()\n        ts.store(Y[0:, 0:], ts.lds_load(buf, 0, 0, lay))\n"
             "    return k.specialize(target='gfx1201', M=16, N=16)\n"
             "X = np.arange(256, dtype=np.float32).reshape(16, 16)\n"
             "cycles = {pad: ts.simulate(staged(pad), X=X).report.lds_bank_conflict_cycles for pad in (0, 1, 2)}\n"
             "print(cycles)\nassert cycles[0] > 0 and cycles[2] == 0"),
    ("code", "res = ts.simulate(staged(2), X=X)\nassert np.array_equal(res['Y'], X) and res.report.race_count == 0"),
]


def notebook(cells: list[tuple[str, str]]) -> dict:
    out = []
    for kind, text in cells:
        src = [line + "\n" for line in text.split("\n")]
        src[-1] = src[-1].rstrip("\n")
        if kind == "md":
            out.append({"cell_type": "markdown", "metadata": {}, "source": src})
        else:
            out.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": src})
    return {"cells": out, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"},
                                       "language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for name, cells in NB.items():
        (OUT / f"{name}.ipynb").write_text(json.dumps(notebook(cells), indent=1) + "\n")
        print("wrote", OUT / f"{name}.ipynb")
