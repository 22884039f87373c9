"""Matrix instructions in the emulator, placed by AMD's calculator (tests/golden/amd_calculator).

Dense rows below; sparse SWMMAC/SMFMAC rows (2:4 A with its index VGPR, two index sets) at the end.

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
ARCH = {"rdna3": ("gfx1100", 32), "rdna4": ("gfx1201", 32), "cdna3": ("gfx942", 64),
        # RDNA in wave64 and CDNA2 (the calculator's wave64 records and its gfx90a architecture)
        "rdna3-w64": ("gfx1100", 64), "rdna4-w64": ("gfx1201", 64), "cdna2": ("gfx90a", 64)}


def _arch(key: str) -> str:
    return key.split("-")[0]


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


ROWS = [(arch, name) for arch in ARCH for name in sorted(_details()[_arch(arch)]["instructions"])
        if not _details()[_arch(arch)]["instructions"][name]["sparse"]]


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
    arch = _arch(arch)
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
    st = run(target, line, regs, wave=wave)
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


def test_an_index_set_the_instruction_lacks_is_refused() -> None:
    with pytest.raises(IsaError, match="index"):
        run("gfx1201", "\tv_swmmac_f32_16x16x32_f16 v[0:7], v[8:11], v[12:19], v20 index_key:3")


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


_SET_KEY = {"rdna4": "cbsz=0|abid=0|blgp=0|opsel={}", "cdna3": "cbsz=0|abid={}|blgp=0|opsel=0"}
SPARSE = [(key, name, iset) for key in ("rdna4", "rdna4-w64", "cdna3") for arch in [_arch(key)]
          for name in sorted(_details()[arch]["instructions"])
          if _details()[arch]["instructions"][name]["sparse"] for iset in (0, 1)
          if f"{name}|K|w{ARCH[key][1]}|{_SET_KEY[arch].format(iset)}" in _golden(arch)[1]]


@pytest.mark.parametrize(("arch", "name", "iset"), SPARSE, ids=[f"{a}:{n}:set{s}" for a, n, s in SPARSE])
def test_sparse_instruction_reads_values_and_indices_where_the_calculator_says(arch: str, name: str,
                                                                                 iset: int) -> None:
    """2:4 A: each group of four k holds two kept values in one register field and their two 2-bit
    positions in a 4-bit field of the index VGPR (set ``iset``: SWMMAC index_key, SMFMAC abid)."""
    target, wave = ARCH[arch]
    arch = _arch(arch)
    row = lookup(name, target)
    d = _details()[arch]["instructions"][name]
    ta, tb, tc, td = row.types
    nregs = row.registers_for(wave)
    rng = np.random.default_rng(abs(hash((name, iset))) % 2**32)
    nb, m, n, k = d["blocks"], d["m"], d["n"], d["k"]
    lo_v = 0 if ta.startswith("u") else -2
    groups = nb * m * (k // 4)
    pos = np.sort(np.stack([rng.permutation(4)[:2] for _ in range(groups)]), axis=1).reshape(nb, m, k // 4, 2)
    kept = rng.integers(lo_v, 3, (nb, m, k // 4, 2)).astype(np.float64)
    A = np.zeros((nb, m, k))
    for part in (0, 1):
        np.put_along_axis(A.reshape(nb, m, k // 4, 4), pos[..., part:part + 1], kept[..., part:part + 1], axis=-1)
    B = rng.integers(0 if tb.startswith("u") else -2, 3, (nb, k, n)).astype(np.float64)
    C = rng.integers(-4, 5, (nb, m, n)).astype(np.float64)
    base = {"A": 0, "B": nregs["A"], "K": nregs["A"] + nregs["B"], "D": nregs["A"] + nregs["B"] + nregs["K"]}
    regs: dict[int, np.ndarray] = {}

    def put(vgpr: int, lane: int, field: int) -> None:
        regs.setdefault(vgpr, np.zeros(wave, np.uint64))[lane] |= field

    key = _SET_KEY[arch].format(iset)
    rec_all, index = _golden(arch)
    off, cnt = index[f"{name}|K|w{wave}|{key}"]
    for b, r, c, vg, lane, lo, hi in rec_all[off:off + cnt].tolist():
        if c % 4 == 0:
            p0, p1 = pos[b, r, c // 4]
            put(base["K"] + vg, lane, (int(p0) | int(p1) << 2) << lo)
    for b, r, c, vg, lane, lo, hi in _records(arch, name, "A", wave).tolist():
        if c % 4 == 0:
            half = (hi - lo + 1) // 2
            v0, v1 = (int(_encode(np.array([kept[b, r, c // 4, i]]), ta)[0]) for i in (0, 1))
            put(base["A"] + vg, lane, (v0 | v1 << half) << lo)
    _place(regs, base["B"], _records(arch, name, "B", wave), B, tb, wave)
    _place(regs, base["D"], _records(arch, name, "D", wave), C, tc, wave)  # SWMMAC/SMFMAC accumulate in place
    span = {op: f"v[{base[op]}:{base[op] + nregs[op] - 1}]" if nregs[op] > 1 else f"v{base[op]}" for op in "ABDK"}
    mod = "" if not iset else (f" index_key:{iset}" if arch == "rdna4" else f" abid:{iset}")
    st = run(target, f"\t{name} {span['D']}, {span['A']}, {span['B']}, {span['K']}{mod}", regs, wave=wave)
    rec = _records(arch, name, "D", wave)
    lo, hi = rec[:, 5], rec[:, 6]
    word = st.v[base["D"] + rec[:, 3], 0, rec[:, 4]].astype(np.uint64)
    width = (hi - lo + 1).astype(np.uint64)
    got = _decode((word >> lo.astype(np.uint64)) & ((np.uint64(1) << width) - np.uint64(1)), td)
    want = (A @ B + C)[rec[:, 0], rec[:, 1], rec[:, 2]]
    np.testing.assert_array_equal(got, want, err_msg=f"{name} on {target}, index set {iset}")


MODDED = [(arch, key.split("|")[0], key.split("|")[1], dict(kv.split("=") for kv in key.split("|")[3:]))
          for arch in ("cdna3", "cdna2") for key in _golden(arch)[1] if key.split("|")[1] in "AB"
          and not key.endswith("cbsz=0|abid=0|blgp=0|opsel=0")
          and not _details()[arch]["instructions"][key.split("|")[0]]["sparse"]]


_FIRST = {}
for _a, _n, _o, _m in MODDED:
    _FIRST.setdefault((_a, _n, _o), tuple(_m.items()))
# one modifier variant per instruction and operand in the default run; every variant with --full
MODDED_CASES = [pytest.param(a, n, o, m, marks=() if _FIRST[(a, n, o)] == tuple(m.items()) else pytest.mark.slow,
                             id=f"{a}:{n}:{o}:" + ",".join(f"{k}{v}" for k, v in m.items() if v != "0"))
                for a, n, o, m in MODDED]


@pytest.mark.parametrize(("arch", "name", "op", "mods"), MODDED_CASES)
def test_mfma_broadcast_and_lane_pattern_read_where_the_calculator_says(arch: str, name: str, op: str, mods: dict) -> None:
    """CBSZ/ABID (A broadcast between blocks) and BLGP (B lane patterns): registers hold random small
    values; the calculator's records under the modifier say which register each logical element is
    read from, so the expected product is built by reading the registers through them."""
    target, wave = {"cdna3": "gfx942", "cdna2": "gfx90a"}[arch], 64
    row = lookup(name, target)
    d = _details()[arch]["instructions"][name]
    counts = d["gprs"][f"w{wave}"]
    ta, tb, tc, td = row.types
    rng = np.random.default_rng(abs(hash((name, op, tuple(mods.items())))) % 2**32)
    base = {"A": 0, "B": counts["A"], "C": counts["A"] + counts["B"]}
    base["D"] = base["C"] + counts["C"]
    regs: dict[int, np.ndarray] = {}
    logical = {}
    for o, t in (("A", ta), ("B", tb)):
        rec = _records(arch, name, o, wave)
        width = int(rec[0, 6] - rec[0, 5] + 1)
        lo_v = 0 if t.startswith("u") else -2
        vals = rng.integers(lo_v, 3, (counts[o], wave, 32 // width))
        for v in range(counts[o]):
            field = sum((_encode(vals[v, :, s].astype(np.float64), t).astype(np.uint64) << np.uint64(s * width))
                        for s in range(32 // width))
            regs[base[o] + v] = np.asarray(field, np.uint64)
        fields = ("cbsz", "abid", "blgp", "opsel")
        key = f"{name}|{o}|w{wave}|" + "|".join(f"{k}={mods[k] if o == op else 0}" for k in fields)
        off, n = _golden(arch)[1][key]
        rd = _golden(arch)[0][off:off + n]
        shape = (d["blocks"], d["m"], d["k"]) if o == "A" else (d["blocks"], d["k"], d["n"])
        mat = np.zeros(shape)
        mat[rd[:, 0], rd[:, 1], rd[:, 2]] = vals[rd[:, 3], rd[:, 4], rd[:, 5] // width]
        logical[o] = mat
    C = rng.integers(-4, 5, (d["blocks"], d["m"], d["n"])).astype(np.float64)
    _place(regs, base["C"], _records(arch, name, "C", wave), C, tc, wave)
    span = {o: f"v[{base[o]}:{base[o] + counts[o] - 1}]" for o in "ABCD"}
    text = " ".join(f"{k}:{v}" for k, v in mods.items() if k != "opsel" and v != "0")
    st = run(target, f"\t{name} {span['D']}, {span['A']}, {span['B']}, {span['C']} {text}", regs)
    rec = _records(arch, name, "D", wave)
    lo, hi = rec[:, 5], rec[:, 6]
    word = st.v[base["D"] + rec[:, 3], 0, rec[:, 4]].astype(np.uint64)
    if int(hi[0]) >= 32:
        word = word | (st.v[base["D"] + rec[:, 3] + 1, 0, rec[:, 4]].astype(np.uint64) << np.uint64(32))
    width = hi - lo + 1
    mask = np.uint64(2**64 - 1) if int(width[0]) == 64 else (np.uint64(1) << np.uint64(width[0])) - np.uint64(1)
    got = _decode((word >> lo.astype(np.uint64)) & mask, td)
    want = (logical["A"] @ logical["B"] + C)[rec[:, 0], rec[:, 1], rec[:, 2]]
    np.testing.assert_array_equal(got, want, err_msg=f"{name} {op} {mods}")
