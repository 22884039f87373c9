"""Write docs/notebooks/*.ipynb from the cell lists below, executed, with their outputs.

Run after editing: ``python tools/make_notebooks.py [NAME ...]`` (needs the ``dev`` extra: nbformat,
nbclient, ipykernel). Each notebook runs in a fresh Jupyter kernel whose working directory is
docs/notebooks/ — where Jupyter starts it — so the notebooks load the examples through
``tilesim.examples.load`` rather than ``import examples`` (which only works from the repository
root). Cell ids are stable (``<notebook>-<n>``) so regenerating gives small diffs. Every code cell
prints what it shows and asserts it; tests/test_notebooks.py executes them all again.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "docs" / "notebooks"

NB: dict[str, list[tuple[str, str]]] = {}

_SHOW = "from IPython.display import SVG, Markdown, display\nfrom tilesim.layouts import pictures\n"

NB["01_wave32_vs_wave64"] = [
    ("md", "# Wave32 vs wave64: one 16x16 product, three ways\n\nRDNA3 (gfx1100) and RDNA4 (gfx1201) compute "
           "`D = A·B + C` with `v_wmma_f32_16x16x16_f16` in wave32; CDNA3 (gfx942) uses a wave64 MFMA. The "
           "same mnemonic on RDNA3 and RDNA4 puts elements in different lanes and registers."),
    ("code", "import numpy as np\nimport tilesim as ts\nfrom tilesim.matrix import lookup\n" + _SHOW +
             "rdna3 = lookup('v_wmma_f32_16x16x16_f16', 'gfx1100')\nrdna4 = lookup('v_wmma_f32_16x16x16_f16', 'gfx1201')\n"
             "cdna3 = lookup('v_mfma_f32_16x16x16f16', 'gfx942')\n"
             "print(rdna3.registers_for(32), rdna4.registers_for(32), cdna3.registers_for(64))\n"
             "assert rdna3.registers_for(32)['A'] == 8 and rdna4.registers_for(32)['A'] == 4  # RDNA3 replicates A"),
    ("md", "RDNA3 keeps every A element twice — in lane `i` and lane `i+16` (the two stripes of each cell "
           "below). RDNA4 splits K across the two lane halves instead, so each lane holds half as much."),
    ("code", "a3, a4 = rdna3.layout('A'), rdna4.layout('A')\n"
             "display(SVG(pictures.svg(a3, 'RDNA3 A (16 x 16, f16): i = lane % 16, k = slot', names=('i', 'k'))))\n"
             "print(a3.owners_of(block=0, row=3, col=5), a4.owners_of(block=0, row=3, col=5))\n"
             "assert a3.owners_of(block=0, row=3, col=5) == [{'lane': 3, 'slot': 5}, {'lane': 19, 'slot': 5}]\n"
             "assert a4.owners_of(block=0, row=3, col=5) == [{'lane': 19, 'slot': 1}]\n"
             "assert a3.replication()['copies'] == {2: 256} and a4.replication()['copies'] == {1: 256}"),
    ("md", "The register view: one row per lane, one column per VGPR, `(i,k)@bit` for each f16 half."),
    ("code", "from tilesim.layouts.render import render_registers\n"
             "view = render_registers(a4, 'markdown')\ndisplay(Markdown(view))\n"
             "lane19 = view.splitlines()[2 + 19]\nprint(lane19)\n"
             "assert lane19.startswith('| 19 | (3,4)@0 (3,5)@16 |')  # lane 19 v0: k = 4, 5 of row 3"),
    ("md", "The accumulator rows interleave differently: RDNA3 `row = 2*v + lane/16`, RDNA4 `row = 8*(lane/16) + v`, "
           "and wave64 MFMA `row = 4*(lane/16) + v`. The picture outlines every element whose owner differs."),
    ("code", "from tilesim.layouts import expressions\n"
             "rows = {name: expressions(ins.layout('D'))['row'].text for name, ins in "
             "[('rdna3', rdna3), ('rdna4', rdna4), ('cdna3', cdna3)]}\nprint(rows)\n"
             "assert rows == {'rdna3': 'lane / 16 + slot * 2', 'rdna4': 'slot + (lane / 16) * 8', 'cdna3': 'slot + (lane / 16) * 4'}\n"
             "display(SVG(pictures.svg_compare(rdna3.layout('D'), rdna4.layout('D'), 'RDNA3 D', 'RDNA4 D', names=('i', 'j'))))"),
    ("code", "rng = np.random.default_rng(0)\nA = rng.standard_normal((16, 16)).astype(np.float16)\n"
             "B = rng.standard_normal((16, 16)).astype(np.float16)\n"
             "outs = [ts.matrix.execute_logical(i, A, B) for i in (rdna3, rdna4, cdna3)]\n"
             "print('max |difference| between the three:', max(float(np.abs(o - outs[0]).max()) for o in outs))\n"
             "assert all(np.array_equal(o, outs[0]) for o in outs)  # same math, different registers"),
]

NB["02_forging_an_index_map"] = [
    ("md", "# Forging an index map — and catching a wrong one\n\nWe build a layout by hand from the ISA formula, "
           "check it against the catalog, then plant the classic porting bug and let `check` and the "
           "simulator blame it. The GEMM comes from the repository's `examples/` folder through "
           "`tilesim.examples.load`, which works from any working directory."),
    ("code", "import numpy as np\nimport tilesim as ts\nfrom tilesim.layouts import Layout\nfrom tilesim.matrix import lookup\n"
             + _SHOW +
             "mine = Layout.from_function({'lane': 32, 'slot': 8}, {'block': 1, 'row': 16, 'col': 16},\n"
             "    lambda lane, slot: {'block': 0 * lane, 'row': 2 * slot + lane // 16, 'col': lane % 16}, elem_bits=32)\n"
             "hardware = lookup('v_wmma_f32_16x16x16_f16', 'gfx1100').layout('C')\n"
             "print('my map equals the catalog:', mine == hardware)\n"
             "assert mine == hardware  # RDNA3's accumulator, exactly"),
    ("code", "from tilesim.examples import load\ngemm_example = load('gemm')\n"
             "gemm, inputs, reference = gemm_example.gemm, gemm_example.inputs, gemm_example.reference\n"
             "rdna4_rows = lookup('v_wmma_f32_16x16x16_f16', 'gfx1201').layout('C')\n"
             "bad = gemm.specialize(target='gfx1100', M=32, N=32, K=32, c_layout=rdna4_rows)\n"
             "report = ts.check(bad)\nprint(report)\nassert not report.ok\n"
             "assert 'hardware i = lane / 16 + slot * 2' in report.errors[0].message"),
    ("md", "What the bad program declares (left) against what RDNA3 does (right): every outlined cell is "
           "stored by the wrong lane or VGPR."),
    ("code", "display(SVG(pictures.svg_compare(rdna4_rows, hardware, 'declared (RDNA4 rows)', 'RDNA3 hardware', "
             "names=('i', 'j'))))\n"
             "n_diff = sum(a != b for a, b in zip(sorted(map(str, rdna4_rows.locations())), sorted(map(str, hardware.locations()))))\n"
             "print(n_diff, 'of 256 locations differ')\nassert n_diff > 0"),
    ("code", "arrays = inputs(bad)\nres = ts.simulate(bad, **arrays)\nref = reference(**arrays)['C']\n"
             "wrong = np.abs(res['C'] - ref) > 1e-3\nprint(int(wrong.sum()), 'wrong elements')\n"
             "from tilesim.diff import blame\nlines, pattern = blame(res, 'C', wrong, res['C'], expected=ref)\n"
             "print(lines[0]); print(pattern)\nassert 'lane' in lines[0] and 'VGPR' in lines[0]"),
    ("md", "The same judgement as `tilesim run --device none`: without a device the verdict is "
           "`SIM_MISMATCH`, with a lane × VGPR heatmap of the registers that stored wrong elements."),
    ("code", "verdict = ts.run(bad, device='none', reference=reference(**arrays), **arrays)\n"
             "print(verdict.status, '-', verdict.reason[:100])\nassert verdict.status == 'SIM_MISMATCH' and not verdict.ok\n"
             "display(SVG(verdict.heatmap_svg()))"),
]

NB["03_porting_cdna_to_rdna4"] = [
    ("md", "# Porting a CDNA3 kernel to RDNA4\n\nThe same tile program, written against `ts.mma_op`, "
           "re-specialises from wave64 MFMA (gfx942) to wave32 WMMA (gfx1201). `ts.equivalent` proves the two "
           "agree on one-hot probes per operand and random inputs."),
    ("code", "import tilesim as ts\nfrom tilesim.examples import load\n" + _SHOW +
             "gemm = load('gemm').gemm\n"
             "cdna = gemm.specialize(target='gfx942', M=64, N=64, K=64, mma='v_mfma_f32_16x16x16f16')\n"
             "rdna = gemm.specialize(target='gfx1201', M=64, N=64, K=64, mma='v_wmma_f32_16x16x16_f16')\n"
             "print(cdna.grid, cdna.wave_size, '->', rdna.grid, rdna.wave_size)\n"
             "assert (cdna.grid, rdna.grid) == ((4, 4), (4, 4))"),
    ("md", "Each tile's accumulator moves: 64 lanes x 4 VGPRs on CDNA3, 32 lanes x 8 VGPRs on RDNA4."),
    ("code", "from tilesim.matrix import lookup\n"
             "d_cdna = lookup('v_mfma_f32_16x16x16f16', 'gfx942').layout('D')\n"
             "d_rdna = lookup('v_wmma_f32_16x16x16_f16', 'gfx1201').layout('D')\n"
             "display(SVG(pictures.svg_compare(d_cdna, d_rdna, 'CDNA3 MFMA D (wave64)', 'RDNA4 WMMA D (wave32)', "
             "names=('i', 'j'))))\n"
             "print(d_cdna.registers_per_lane(), d_rdna.registers_per_lane())\n"
             "assert (d_cdna.registers_per_lane(), d_rdna.registers_per_lane()) == (4, 8)"),
    ("code", "eq = ts.equivalent(cdna, rdna)\nprint(eq)\nassert eq"),
    ("code", "assert ts.check(cdna).ok and ts.check(rdna).ok\n"
             "print(ts.check(cdna).occupancy, 'waves/SIMD on gfx942;', ts.check(rdna).occupancy, 'on gfx1201')"),
]

NB["04_sparse_indices"] = [
    ("md", "# Structured sparsity: SMFMAC and SWMMAC compression indices\n\nA 4:2 sparse A keeps two of every "
           "four k; the index operand K holds their 2-bit positions, 4 bits per group."),
    ("code", "import numpy as np\nfrom tilesim.matrix import lookup\nfrom tilesim.matrix.registers import "
             "pack, unpack, compress_sparse, execute_registers\n" + _SHOW +
             "row = lookup('v_smfmac_f32_16x16x32_f16', 'gfx942')\nprint(row.registers_for())\n"
             "assert row.registers_for() == {'A': 2, 'B': 4, 'C': 4, 'D': 4, 'K': 1}"),
    ("code", "vals, idx = compress_sparse(np.array([[0, 5, 0, 7, 1, 0, 0, 0]], float))\nprint(vals, idx)\n"
             "assert vals.tolist() == [[5, 7, 1, 0]] and idx.tolist() == [[1, 3, 0, 1]]"),
    ("md", "The compressed A operand: 16 rows x 32 k of the dense matrix, of which each lane holds the kept "
           "half (4 f16 in 2 VGPRs)."),
    ("code", "display(SVG(pictures.svg(row.layout('A'), 'SMFMAC A (dense k shown)', names=('i', 'k'))))\n"
             "print(row.layout('A').registers_per_lane(), 'VGPRs of A per lane')\nassert row.layout('A').registers_per_lane() == 2"),
    ("code", "rng = np.random.default_rng(0)\nA = rng.integers(-3, 4, (16, 32)).astype(float)\n"
             "A.reshape(16, 8, 4)[:, :, [0, 2]] = 0  # keep k = 1, 3 of every group\n"
             "B = rng.integers(-3, 4, (32, 16)).astype(float)\n"
             "regs = [pack(row, 'A', A), pack(row, 'B', B), pack(row, 'C', np.zeros((16, 16)))]\n"
             "D = unpack(row, 'D', execute_registers(row, *regs, k=pack(row, 'K', A))).values[0]\n"
             "print('D == A @ B:', np.array_equal(D, A @ B))\nassert np.array_equal(D, A @ B)"),
    ("code", "k_lay = row.layout('K')\nloc = [l for l in k_lay.locations() if l.row == 0 and l.col < 8]\n"
             "print(loc[:2])\nassert {(l.lane, l.bit_lo) for l in loc} == {(0, 0), (0, 4)}  # groups 0 and 1 of row 0"),
]

NB["05_fp8_fnuz_vs_ocp"] = [
    ("md", "# fp8: FNUZ (gfx942) vs OCP (gfx950, gfx12)\n\nThe same mnemonic reads the same bits differently."),
    ("code", "import numpy as np\nfrom tilesim.matrix import lookup\nfrom tilesim.matrix.dtypes import decode\n" + _SHOW +
             "fnuz = lookup('v_mfma_f32_16x16x32_fp8_fp8', 'gfx942')\nocp = lookup('v_mfma_f32_16x16x32_fp8_fp8', 'gfx950')\n"
             "print(fnuz.types[0], ocp.types[0])\nassert (fnuz.types[0], ocp.types[0]) == ('fp8_fnuz', 'fp8_ocp')\n"
             "assert decode(np.array([0x40]), 'fp8_fnuz')[0] == 1.0 and decode(np.array([0x40]), 'fp8_ocp')[0] == 2.0"),
    ("md", "Same registers: the two A layouts are identical (no cell outlined) — only the meaning of the bits changes."),
    ("code", "display(SVG(pictures.svg_compare(fnuz.layout('A'), ocp.layout('A'), 'gfx942 A', 'gfx950 A', names=('i', 'k'))))\n"
             "print('same layout:', fnuz.layout('A') == ocp.layout('A'))\nassert fnuz.layout('A') == ocp.layout('A')"),
    ("code", "from tilesim.matrix.numerics import execute_logical\n"
             "bits = np.full((16, 32), 0x40)\nA_f, A_o = decode(bits, 'fp8_fnuz'), decode(bits, 'fp8_ocp')\n"
             "D_f = execute_logical(fnuz, A_f, decode(np.full((32, 16), 0x40), 'fp8_fnuz'))\n"
             "D_o = execute_logical(ocp, A_o, decode(np.full((32, 16), 0x40), 'fp8_ocp'))\n"
             "print(D_f[0, 0], D_o[0, 0])\nassert np.all(D_o == 4 * D_f)  # each product is 4x larger under OCP"),
    ("code", "print('max finite:', float(decode(np.array([0x7f]), 'fp8_fnuz')[0]), float(decode(np.array([0x7e]), 'fp8_ocp')[0]))\n"
             "assert np.isnan(decode(np.array([0x80]), 'fp8_fnuz')[0])  # FNUZ: 0x80 is the only NaN, no -0\n"
             "assert decode(np.array([0x80]), 'fp8_ocp')[0] == 0.0  # OCP: 0x80 is -0"),
]

NB["06_lds_swizzles"] = [
    ("md", "# LDS swizzles and bank conflicts\n\nStaging the RDNA4 accumulator through LDS: each VGPR instruction "
           "touches rows v and v+8, which with a 64-byte row hit the same 16 banks. Padding each row by 2 "
           "elements moves row v+8 onto the other 16 banks."),
    ("code", "import numpy as np\nimport tilesim as ts\nfrom tilesim.matrix import lookup\n" + _SHOW +
             "lay = lookup('v_wmma_f32_16x16x16_f16', 'gfx1201').layout('C')\n"
             "def staged(pad):\n    @ts.kernel\n    def k(X: ts.Tensor['f32', 'M', 'N'], Y: ts.Tensor['f32', 'M', 'N']):\n"
             "        buf = ts.lds_alloc('f32', 16, 16, pad=pad)\n        ts.lds_store(buf, 0, 0, ts.load(X[0:, 0:], lay))\n"
             "        ts.barrier()\n        ts.store(Y[0:, 0:], ts.lds_load(buf, 0, 0, lay))\n"
             "    return k.specialize(target='gfx1201', M=16, N=16)\n"
             "X = np.arange(256, dtype=np.float32).reshape(16, 16)\n"
             "cycles = {pad: ts.simulate(staged(pad), X=X).report.lds_bank_conflict_cycles for pad in (0, 1, 2)}\n"
             "print(cycles)\nassert cycles[0] > 0 and cycles[2] == 0"),
    ("md", "Which of the 32 LDS banks (4-byte words) each lane's VGPR writes, without and with padding: "
           "darker = higher bank number. Unpadded, lanes 0-15 and 16-31 of one VGPR land on the same 16 banks."),
    ("code", "def banks(pad):\n    out = np.zeros((32, 8), int)\n    for l in lay.locations():\n"
             "        out[l.lane, l.vgpr] = (l.row * (16 + pad) + l.col) % 32\n    return out\n"
             "for pad in (0, 2):\n    display(SVG(pictures.svg_heatmap(banks(pad), f'LDS bank per lane and VGPR, pad={pad}')))\n"
             "print(sorted(set(banks(0)[:, 0])), sorted(set(banks(2)[:, 0])))\n"
             "assert len(set(banks(0)[:, 0])) == 16 and len(set(banks(2)[:, 0])) == 32"),
    ("code", "res = ts.simulate(staged(2), X=X)\nprint('round trip exact:', np.array_equal(res['Y'], X), '; races:', "
             "res.report.race_count)\nassert np.array_equal(res['Y'], X) and res.report.race_count == 0"),
]

NB["07_rdna_wave64_wmma"] = [
    ("md", "# RDNA wave64 WMMA: the same instruction, 64 lanes\n\nRDNA3 and RDNA4 also run WMMA in wave64. "
           "The RDNA3 ISA guide (section 7.9) splits the 16x16 tile across both halves of the wave: A and B "
           "are replicated into lanes 32-63 as well, while the accumulator's rows are shared between the "
           "halves, so C/D need half the VGPRs of the wave32 form."),
    ("code", "import tilesim as ts\nfrom tilesim.matrix import lookup\n" + _SHOW +
             "from tilesim.layouts.render import render_registers\n"
             "rdna3 = lookup('v_wmma_f32_16x16x16_f16', 'gfx1100')\nrdna4 = lookup('v_wmma_f32_16x16x16_f16', 'gfx1201')\n"
             "for arch, ins in (('gfx1100', rdna3), ('gfx1201', rdna4)):\n    print(arch, ins.wave_sizes, 'wave32', ins.registers_for(32), 'wave64', "
             "ins.registers_for(64))\n"
             "assert rdna3.wave_sizes == (32, 64) and rdna4.wave_sizes == (32, 64)\n"
             "assert rdna3.registers_for(64)['C'] == rdna3.registers_for(32)['C'] // 2 == 4  # 256 f32 / 64 lanes"),
    ("md", "## A: RDNA3 replicates four times in wave64\n\nEach A element of RDNA3 lives in lanes `i`, `i+16`, "
           "`i+32`, `i+48` (four stripes per cell); RDNA4 does not replicate and instead halves A's VGPRs."),
    ("code", "a64 = rdna3.layout('A', wave_size=64)\nowners = a64.owners_of(block=0, row=3, col=5)\nprint(owners)\n"
             "assert [o['lane'] for o in owners] == [3, 19, 35, 51]\n"
             "assert rdna4.registers_for(64)['A'] == rdna4.registers_for(32)['A'] // 2 == 2\n"
             "display(SVG(pictures.svg(rdna4.layout('A', wave_size=64), 'RDNA4 A, wave64', names=('i', 'k'))))"),
    ("md", "## C/D: the row interleave gains a lane-half term\n\nRDNA4 wave32 has `row = v + 8*(lane/16)`; in wave64 the "
           "upper 32 lanes take rows 4-7 and 12-15 of each half: `row = v + 4*(lane/32) + 8*((lane/16)%2)`."),
    ("code", "from tilesim.layouts import expressions\n"
             "rows = {w: expressions(rdna4.layout('C', wave_size=w))['row'].text for w in (32, 64)}\nprint(rows)\n"
             "assert rows == {32: 'slot + (lane / 16) * 8', 64: 'slot + (lane / 32) * 4 + ((lane / 16) % 2) * 8'}\n"
             "c32, c64 = rdna4.layout('C', wave_size=32), rdna4.layout('C', wave_size=64)\n"
             "display(SVG(pictures.svg_compare(c32, c64, 'RDNA4 C, wave32', 'RDNA4 C, wave64', names=('i', 'j'))))"),
    ("md", "The register view of the wave64 accumulator: 64 lanes x 4 VGPRs."),
    ("code", "view = render_registers(c64, 'markdown')\ndisplay(Markdown(view))\n"
             "lane37 = view.splitlines()[2 + 37]\nprint(lane37)\n"
             "assert lane37 == '| 37 | (4,5) | (5,5) | (6,5) | (7,5) |'  # lane 37: rows 4-7 of column 5"),
    ("md", "Both forms compute the same product; a kernel can choose its wave size per launch."),
    ("code", "import numpy as np\nrng = np.random.default_rng(1)\n"
             "A = rng.standard_normal((16, 16)).astype(np.float16); B = rng.standard_normal((16, 16)).astype(np.float16)\n"
             "from tilesim.matrix.registers import pack, unpack, execute_registers\n"
             "def via_registers(ins, wave):\n    regs = [pack(ins, op, M, wave_size=wave) for op, M in "
             "(('A', A), ('B', B), ('C', np.zeros((16, 16), np.float32)))]\n"
             "    return unpack(ins, 'D', execute_registers(ins, *regs, wave_size=wave), wave_size=wave).values[0]\n"
             "D32, D64 = via_registers(rdna4, 32), via_registers(rdna4, 64)\n"
             "err = float(np.abs(D64 - A.astype(np.float64) @ B.astype(np.float64)).max())\n"
             "print('wave32 == wave64:', np.array_equal(D32, D64), '; max |error| vs float64:', err)\n"
             "assert np.array_equal(D32, D64) and err < 1e-3"),
]

NB["08_simulate_run_blame_fix"] = [
    ("md", "# Simulate → run → blame → fix, on a planted bug\n\n`examples/gemm_planted.py` declares lane 5's "
           "accumulator rows swapped (rows g and g+8) for `mma.sync m16n8k16` on sm_90. The simulator executes "
           "what the hardware would do with that declaration, so without any GPU we can see the wrong answer, "
           "blame the lane and VGPR, fix the layout, and re-run."),
    ("code", "import numpy as np\nimport tilesim as ts\nfrom tilesim.examples import load\n" + _SHOW +
             "planted, gemm_example = load('gemm_planted'), load('gemm')\n"
             "bad = next(p for p in planted.programs() if p.name == 'gemm_c_rows_lane5')\n"
             "arrays = planted.inputs(bad)\nref = planted.reference(**arrays)\n"
             "print(bad.name, bad.target, bad.grid)\nassert bad.target == 'sm_90'"),
    ("md", "## 1. Simulate\n\nThe simulated C differs from the float64 reference in exactly lane 5's swapped rows."),
    ("code", "res = ts.simulate(bad, **arrays)\nwrong = np.abs(res['C'] - ref['C']) > 1e-2\n"
             "print(int(wrong.sum()), 'wrong elements of', wrong.size)\n"
             "assert wrong.sum() == 32  # lane 5 stores 4 elements per 16x8 tile, 2x4 tiles of the 32x32 C"),
    ("md", "## 2. Run\n\nWith no GPU (or `device='none'`) `ts.run` cannot give a device verdict, and the "
           "simulation already disagrees with the reference: `SIM_MISMATCH`, exit status 1."),
    ("code", "verdict = ts.run(bad, device='none', reference=ref, **arrays)\n"
             "print(verdict.status, verdict.exit_status, verdict.paths)\n"
             "assert verdict.status == 'SIM_MISMATCH' and verdict.exit_status == 1"),
    ("md", "## 3. Blame\n\nEach wrong element names the lane and VGPR that stored it; the heatmap shows lane 5, all of "
           "its C registers."),
    ("code", "print('\\n'.join(verdict.blame[:2]))\ndisplay(SVG(verdict.heatmap_svg()))\n"
             "lanes, vgprs = np.nonzero(verdict.mismatch_counts)\nprint('lanes:', sorted(set(lanes.tolist())))\n"
             "assert set(lanes.tolist()) == {5} and all('lane 5' in b for b in verdict.blame)"),
    ("code", "from tilesim.matrix import lookup\ngood_c = lookup(planted.MMA, 'sm_90').layout('C')\n"
             "display(SVG(pictures.svg_compare(planted.planted_c_layout(), good_c, 'declared', 'hardware', names=('i', 'j'))))"),
    ("md", "## 4. Fix\n\nDrop the hand-written layout and use the instruction's own (`op.layout('C')`)."),
    ("code", "fixed = gemm_example.gemm.specialize(target='sm_90', M=32, N=32, K=32, mma=planted.MMA)\n"
             "v2 = ts.run(fixed, device='none', reference=ref, **arrays)\nprint(v2.status, '-', v2.reason[:90])\n"
             "assert v2.ok and v2.status == 'SIMULATED_ONLY'  # right, but NVIDIA needs a CUDA device to go further"),
    ("md", "## The same loop on AMD, with the ISA emulator\n\nFor AMD targets tilesim compiles the emitted HIP "
           "offline (clang from the `ziglang` wheel) and can execute the compiled code in its AMDGPU ISA "
           "emulator (`tilesim.isa`, see docs/emulator.md; checked against the simulator and the ISA guides, "
           "not against AMD hardware). Plant the same bug on RDNA4: lane 5's rows v and v+8 swapped."),
    ("code", "from tilesim.layouts import Layout\nfrom tilesim.isa import emulate_program\n"
             "good = lookup('v_wmma_f32_16x16x16_f16', 'gfx1201').layout('C')\nhw, lg = good.pairs()\nlg = lg.copy()\n"
             "sel = hw[:, 0] == 5\nlg[sel, 1] = (lg[sel, 1] + 8) % 16\n"
             "swapped = Layout.from_pairs(good.in_dims, good.out_dims, hw, lg, elem_bits=32)\n"
             "amd_bad = gemm_example.gemm.specialize(target='gfx1201', M=32, N=32, K=32, c_layout=swapped)\n"
             "amd_arrays = gemm_example.inputs(amd_bad)\namd_ref = gemm_example.reference(**amd_arrays)\n"
             "emu = emulate_program(amd_bad, amd_arrays)\nsim = ts.simulate(amd_bad, **amd_arrays)\n"
             "print(emu.instructions, 'instructions emulated; emulator == simulator:', np.array_equal(emu['C'], sim['C']))\n"
             "assert np.array_equal(emu['C'], sim['C'])  # the compiled code does what the simulator predicted\n"
             "assert (np.abs(emu['C'] - amd_ref['C']) > 1e-2).sum() == 32  # and is wrong where lane 5 stored"),
    ("code", "v_amd = ts.run(amd_bad, device='none', reference=amd_ref, **amd_arrays)\n"
             "print(v_amd.status, v_amd.paths)\nassert v_amd.status == 'SIM_MISMATCH' and 'compiled' in v_amd.paths\n"
             "amd_fixed = gemm_example.gemm.specialize(target='gfx1201', M=32, N=32, K=32)\n"
             "emu2 = emulate_program(amd_fixed, amd_arrays)\nerr = float(np.abs(emu2['C'] - amd_ref['C']).max())\n"
             "v_fix = ts.run(amd_fixed, device='none', reference=amd_ref, **amd_arrays)\n"
             "print(v_fix.status, '; emulated max |error| vs float64:', err)\n"
             "assert v_fix.status == 'COMPILE_ONLY' and err < 1e-2"),
]


def notebook(name: str, cells: list[tuple[str, str]]):
    """An nbformat 4.5 notebook with stable cell ids."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                   "language_info": {"name": "python"}}
    for i, (kind, text) in enumerate(cells):
        cell = nbformat.v4.new_markdown_cell(text) if kind == "md" else nbformat.v4.new_code_cell(text)
        cell.id = f"{name.split('_')[0]}-{i}"
        nb.cells.append(cell)
    return nb


@contextlib.contextmanager
def kernel_pythonpath():
    """Kernels see this checkout's ``tilesim`` but not the repository root (no ``import examples`` by name).

    A user's kernel imports an installed tilesim and starts in docs/notebooks/; a developer's shell
    often has ``PYTHONPATH=<repo root>``, which would hide exactly the bug the notebooks must not
    have. So the kernel's PYTHONPATH is a temporary folder holding only a link to this ``tilesim``.
    """
    root = OUT.parents[1]
    old = os.environ.get("PYTHONPATH")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "tilesim").symlink_to(root / "tilesim", target_is_directory=True)
        os.environ["PYTHONPATH"] = tmp
        try:
            yield tmp
        finally:
            if old is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = old


def execute(nb, timeout: int = 120):
    """Run every cell in a fresh kernel started in docs/notebooks/ (as Jupyter does); outputs stay in ``nb``."""
    from nbclient import NotebookClient

    with kernel_pythonpath():
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(OUT)}}).execute()
    return nb


def main(argv: list[str]) -> int:
    import nbformat

    OUT.mkdir(parents=True, exist_ok=True)
    for name, cells in NB.items():
        if argv and name not in argv and name.split("_")[0] not in argv:
            continue
        nb = execute(notebook(name, cells))
        nbformat.validate(nb)
        for c in nb.cells:  # drop volatile metadata (execution timings) so regenerating is stable
            c.metadata.pop("execution", None)
        nbformat.write(nb, OUT / f"{name}.ipynb")
        print("wrote", OUT / f"{name}.ipynb", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
