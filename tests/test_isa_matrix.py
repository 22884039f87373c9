"""Matrix instructions in the emulator, placed by AMD's calculator (tests/golden/amd_calculator).

For every dense WMMA/MFMA row the calculator knows on gfx1100, gfx1201 and gfx942, the test writes
A, B and C into registers exactly where the calculator's records say each element lives (never
where the catalog says), runs the single instruction in the emulator, and reads D back through the
calculator's D records. Small integer values make ``A @ B + C`` exact in every element type, so the
result must equal numpy's product — a misplaced element anywhere changes it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tests._isa_harness import run
from tests._refs import ML
from tilesim.isa import IsaError
from tilesim.matrix import lookup

GOLDEN = Path(__file__).parent / "golden" / "amd_calculator"
ARCH = {"rdna3": ("gfx1100", 32), "rdna4": ("gfx1201", 32), "cdna3": ("gfx942", 64)}


@lru_cache(maxsize=None)
def _golden(arch: str) -> tuple[np.ndarray, dict]:
    rec = np.load(GOLDEN / f"LAYOUTS_{arch}.npz")["records"].astype(np.int64)
    return rec, json.loads((GOLDEN / f"index_{arch}.json").read_text())


@lru_cache(maxsize=None)
def _details() -> dict:
    return json.loads((GOLDEN / "details.json").read_text())["architectures"]


def _records(arch: str, name: str, op: str, wave: int) -> np.ndarray:
    rec, index = _golden(arch)
    off, n = index[f"{name}|{op}|w{wave}|cbsz=0|abid=0|blgp=0|opsel=0"]
    return rec[off:off + n]


ROWS = [(arch, name) for arch in ARCH for name in sorted(_details()[arch]["instructions"])
        if not _details()[arch]["instructions"][name]["sparse"]]


def _encode(vals: np.ndarray, t: str) -> np.ndarray:
    """Element bits of ``vals`` in type ``t`` (numpy/ml_dtypes, or two's complement for integers)."""
    if t in ("i8", "u8", "i4", "u4", "i32"):
        bits = {"i8": 8, "u8": 8, "i4": 4, "u4": 4, "i32": 32}[t]
        return (vals.astype(np.int64) & ((1 << bits) - 1)).astype(np.uint64)
    if t == "xf32":
        return vals.astype(np.float32).view(np.uint32).astype(np.uint64)
    arr = vals.astype(ML[t])
    width = np.dtype(ML[t]).itemsize * 8
    return arr.view({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[width]).astype(np.uint64)


def _decode(bits: np.ndarray, t: str) -> np.ndarray:
    if t == "i32":
        return bits.astype(np.uint32).view(np.int32).astype(np.float64)
    width = np.dtype(ML[t]).itemsize * 8
    return bits.astype({16: np.uint16, 32: np.uint32, 64: np.uint64}[width]).view(ML[t]).astype(np.float64)


def _place(regs: dict[int, np.ndarray], base: int, rec: np.ndarray, mat: np.ndarray, t: str, lanes: int) -> None:
    bits = _encode(mat[rec[:, 0], rec[:, 1], rec[:, 2]], t)
    for (_, _, _, vgpr, lane, lo, hi), b in zip(rec.tolist(), bits.tolist()):
        field = int(b) << lo
        for part in range((hi + 32) // 32):  # 64-bit elements span two VGPRs
            r = regs.setdefault(base + vgpr + part, np.zeros(lanes, np.uint64))
            r[lane] |= (field >> (32 * part)) & 0xFFFFFFFF


@pytest.mark.parametrize(("arch", "name"), ROWS, ids=[f"{a}:{n}" for a, n in ROWS])
def test_matrix_instruction_reads_and_writes_where_the_calculator_says(arch: str, name: str) -> None:
    target, wave = ARCH[arch]
    row = lookup(name, target)
    d = _details()[arch]["instructions"][name]
    counts = d["gprs"][f"w{wave}"]
    ta, tb, tc, td = row.types
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    nb, m, n, k = d["blocks"], d["m"], d["n"], d["k"]
    lo_a = 0 if ta.startswith("u") else -2
    lo_b = 0 if tb.startswith("u") else -2
    A = rng.integers(lo_a, 3, (nb, m, k)).astype(np.float64)
    B = rng.integers(lo_b, 3, (nb, k, n)).astype(np.float64)
    C = rng.integers(-4, 5, (nb, m, n)).astype(np.float64)
    base = {"A": 0, "B": counts["A"], "C": counts["A"] + counts["B"]}
    base["D"] = base["C"] + counts["C"]
    regs: dict[int, np.ndarray] = {}
    for op, mat, t in (("A", A, ta), ("B", B, tb), ("C", C, tc)):
        _place(regs, base[op], _records(arch, name, op, wave), mat, t, wave)
    span = {op: f"v[{base[op]}:{base[op] + counts[op] - 1}]" for op in "ABCD"}
    line = f"\t{name} {span['D']}, {span['A']}, {span['B']}, {span['C']}"
    st = run(target, line, regs)
    rec = _records(arch, name, "D", wave)
    lo, hi = rec[:, 5], rec[:, 6]
    word = st.v[base["D"] + rec[:, 3], 0, rec[:, 4]].astype(np.uint64)
    upper = st.v[base["D"] + rec[:, 3] + 1, 0, rec[:, 4]].astype(np.uint64) << np.uint64(32)
    word = word | np.where(hi >= 32, upper, np.uint64(0)).astype(np.uint64)
    width = hi - lo + 1
    fields = (word >> lo.astype(np.uint64)) & np.where(width >= 64, np.uint64(2**64 - 1),
                                                        (np.uint64(1) << width.astype(np.uint64)) - np.uint64(1))
    got = _decode(fields, td)
    want = (A @ B + C)[rec[:, 0], rec[:, 1], rec[:, 2]]
    np.testing.assert_array_equal(got, want, err_msg=f"{name} on {target}")


def test_a_sparse_instruction_is_refused_not_guessed() -> None:
    with pytest.raises(IsaError, match="not modelled"):
        run("gfx942", "\tv_smfmac_f32_16x16x32_f16 v[0:3], v[4:5], v[6:9], v10")


def test_exec_must_be_all_ones_for_a_matrix_instruction() -> None:
    with pytest.raises(IsaError, match="EXEC is not all ones"):
        run("gfx1201", "\tv_wmma_f32_16x16x16_f16 v[0:7], v[8:11], v[12:15], v[0:7]", exec_mask=0xFFFF)


def test_neg_lo_on_iu8_means_signed_bytes() -> None:
    # A = all 0xFF bytes, B = all 0x01: unsigned 255*16, signed -1*16 per element
    regs = {i: np.full(32, 0xFFFFFFFF, np.uint64) for i in range(2)}
    regs.update({2 + i: np.full(32, 0x01010101, np.uint64) for i in range(2)})
    st = run("gfx1201", "\tv_wmma_i32_16x16x16_iu8 v[4:11], v[0:1], v[2:3], 0", regs)
    assert int(st.v[4, 0, 0]) == 255 * 16
    st = run("gfx1201", "\tv_wmma_i32_16x16x16_iu8 v[4:11], v[0:1], v[2:3], 0 neg_lo:[1,0,0]", regs)
    assert int(st.v[4, 0, 0].astype(np.int64)) == (-16) & 0xFFFFFFFF
    assert ml_dtypes is not None
