"""LDS transpose reads: the catalog's lane maps against formulas written here from the sources,
and the ISA emulator's ``ds_read_b64_tr_*`` / ``ds_load_tr*`` against an independent bit-level
expectation (Python integers sliced from the LDS bytes), EXEC and alignment checks included."""

from __future__ import annotations

import numpy as np
import pytest

from tests._isa_harness import run
from tilesim.errors import InstructionError
from tilesim.isa import IsaError
from tilesim.matrix.lds_transpose import TRANSPOSE_READS, select_transpose_read, transpose_read


# Closed forms, one per instruction: destination (lane l, element r) -> (source lane, source element).
# gfx950 (CDNA4 ISA 11.4 + Triton's ds_read_tr lowering): in a 16-lane group, lane i takes element i % E
# of the lanes i // E + (16 / E) * r (E = elements per lane), i.e. a 4x16 (b16) / 8x16 (b8) / 16x16 (b4, b6)
# tile read row by row comes out column by column.
def _gfx950(E: int):
    return lambda l, r: (16 * (l // 16) + (l % 16) // E + (16 // E) * r, (l % 16) % E)


EXPECTED = {
    "ds_read_b64_tr_b16": _gfx950(4),
    "ds_read_b64_tr_b8": _gfx950(8),
    "ds_read_b64_tr_b4": _gfx950(16),
    "ds_read_b96_tr_b6": _gfx950(16),
    # gfx1250 b16: an 8x8 transpose in 8-lane groups (Triton: tile 8 lanes x 8 regs, no other lanes)
    "ds_load_tr16_b128": lambda l, r: (8 * (l // 8) + r, l % 8),
    # gfx1250 b8 (Triton TileKind::DoubleContiguity): regs 0-3 take lanes 0-3, lane bit 3 -> +4, reg bit 2 -> +8
    "ds_load_tr8_b64": lambda l, r: (16 * (l // 16) + r % 4 + 4 * ((l % 16) // 8) + 8 * (r // 4), l % 8),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_lane_map_matches_the_closed_form(name):
    row = TRANSPOSE_READS[name]
    table = row.lane_table()
    want = np.array([[EXPECTED[name](l, r) for r in range(row.elems)] for l in range(row.wave)])
    assert table.shape == want.shape
    bad = np.argwhere((table != want).any(-1))
    assert bad.size == 0, f"{name}: lane {bad[0][0]} element {bad[0][1]}: {table[tuple(bad[0])]} != {want[tuple(bad[0])]}"


def test_triton_worked_example():
    """Triton's comment: lane 0 gets column 0 from [t0,t4,t8,t12], lane 1 column 1 from the same
    lanes (their second 16 bits), lane 4 column 4 from [t1,t5,t9,t13]."""
    t = transpose_read("ds_read_tr16_b64").lane_table()
    assert t[0, :, 0].tolist() == [0, 4, 8, 12] and set(t[0, :, 1].tolist()) == {0}
    assert t[1, :, 0].tolist() == [0, 4, 8, 12] and set(t[1, :, 1].tolist()) == {1}
    assert t[4, :, 0].tolist() == [1, 5, 9, 13] and set(t[4, :, 1].tolist()) == {0}


def test_every_known_map_covers_every_element_once():
    for row in TRANSPOSE_READS.values():
        if not row.lane_map_known:
            continue
        t = row.lane_table().reshape(-1, 2)
        assert np.unique(t[:, 0] * row.elems + t[:, 1]).size == row.wave * row.elems, row.mnemonic


def test_unknown_maps_and_missing_targets_are_refused():
    with pytest.raises(InstructionError, match="no source establishes"):
        TRANSPOSE_READS["ds_load_tr4_b64"].lane_table()
    with pytest.raises(InstructionError, match="gfx950") as e:
        transpose_read("ds_read_b64_tr_b16", "gfx1201")
    assert "global_load_tr" in str(e.value)
    with pytest.raises(InstructionError, match="gfx1250, gfx950"):
        select_transpose_read("gfx942", 16)
    with pytest.raises(InstructionError, match="known:"):
        transpose_read("ds_read_b64_tr_b32")


# ------------------------------------------------------------------------------ the emulator
RNG = np.random.default_rng(16)


def _emulate(row, lds: bytes, addr: np.ndarray, exec_mask: int | None = None, offset: int = 0):
    """Write ``lds`` with ds_write_b32 from every lane, then run the transpose read at ``addr``."""
    L = row.wave
    lds = lds + bytes(-len(lds) % (4 * L))  # whole ds_write_b32 rounds
    words = np.frombuffer(lds, "<u4")
    body = []
    v = {1: addr.astype(np.uint64)}
    for k in range(0, words.size, L):  # lane j writes dword k + j
        chunk = np.zeros(L, np.uint64)
        chunk[: min(L, words.size - k)] = words[k:k + L]
        v[10 + k // L] = chunk
        v[40 + k // L] = (np.arange(L, dtype=np.uint64) + k) * 4
        body.append(f"\tds_write_b32 v{40 + k // L}, v{10 + k // L}")
    regs = row.registers
    body.append("\ts_waitcnt lgkmcnt(0)")
    sregs = {}
    if exec_mask is not None:  # only the transpose read runs under it
        sregs = {20: exec_mask & 0xFFFFFFFF, 21: exec_mask >> 32}
        body.append("\ts_mov_b64 exec, s[20:21]" if L == 64 else "\ts_mov_b32 exec_lo, s20")
    body += [f"\t{row.mnemonic} v[4:{3 + regs}], v1" + (f" offset:{offset}" if offset else ""),
             "\ts_waitcnt lgkmcnt(0)"]
    st = run("gfx950" if L == 64 else "gfx1250", "\n".join(body), v=v, s=sregs, lds=len(lds))
    return st.v[4:4 + regs, 0].T  # [lane, reg]


def _expected(row, lds: bytes, addr: np.ndarray) -> np.ndarray:
    """Python-integer bit slicing: lane l's destination is the concatenation of the elements the
    closed form names, each read from its source lane's little-endian LDS bytes."""
    n, b, nb = row.elems, row.elem_bits, row.read_bits // 8
    out = np.zeros((row.wave, row.registers), np.uint64)
    for l in range(row.wave):
        acc = 0
        for r in range(n):
            s, e = EXPECTED[row.mnemonic](l, r)
            word = int.from_bytes(lds[int(addr[s]): int(addr[s]) + nb], "little")
            acc |= ((word >> (b * e)) & ((1 << b) - 1)) << (b * r)
        for k in range(row.registers):
            out[l, k] = (acc >> (32 * k)) & 0xFFFFFFFF
    return out


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_emulator_against_bit_slicing(name):
    row = TRANSPOSE_READS[name]
    nb = row.read_bits // 8
    slots = 2 * row.wave
    lds = RNG.integers(0, 256, slots * nb, dtype=np.uint8).tobytes()
    addr = RNG.permutation(slots)[: row.wave] * nb  # distinct, aligned, scattered
    got = _emulate(row, lds, addr)
    want = _expected(row, lds, addr)
    bad = np.argwhere(got != want)
    assert bad.size == 0, f"{name}: lane {bad[0][0]} VGPR {bad[0][1]}: {int(got[tuple(bad[0])]):#x} != {int(want[tuple(bad[0])]):#x}"


def test_emulator_one_hot_b16():
    """4x16 row-major tile of f16 ids (id = row * 16 + col): after the read, lane i holds column i."""
    row = TRANSPOSE_READS["ds_read_b64_tr_b16"]
    ids = np.arange(4 * 16 * 4, dtype="<u2")  # four groups' tiles one after another
    lds = ids.tobytes()
    lane = np.arange(64)
    addr = (lane // 16) * 128 + (lane % 16) // 4 * 32 + (lane % 4) * 8  # lanes 4k..4k+3 read row k
    got = _emulate(row, lds, addr)
    halves = np.stack([got[:, 0] & 0xFFFF, got[:, 0] >> 16, got[:, 1] & 0xFFFF, got[:, 1] >> 16], 1)
    want = (lane // 16)[:, None] * 64 + np.arange(4)[None, :] * 16 + (lane % 16)[:, None]
    assert (halves == want).all()


def test_emulator_offset_and_whole_inactive_group():
    row = TRANSPOSE_READS["ds_read_b64_tr_b8"]
    lds = RNG.integers(0, 256, 64 * 8 + 64, dtype=np.uint8).tobytes()
    addr = np.arange(64) * 8
    mask = (1 << 64) - 1 & ~0xFFFF  # group 0 (lanes 0-15) wholly off
    got = _emulate(row, lds, addr, exec_mask=mask, offset=64)
    want = _expected(row, lds, addr + 64)
    assert (got[16:] == want[16:]).all()
    assert (got[:16] == 0).all()  # inactive lanes keep their registers (zero in the harness)


def test_emulator_refuses_a_partly_active_group():
    row = TRANSPOSE_READS["ds_read_b64_tr_b16"]
    lds = bytes(64 * 8)
    with pytest.raises(IsaError, match=r"EXEC leaves lanes \[3\] of the 16-lane group 0 inactive"):
        _emulate(row, lds, np.arange(64) * 8, exec_mask=((1 << 64) - 1) & ~(1 << 3))


def test_emulator_refuses_misaligned_and_out_of_range():
    row = TRANSPOSE_READS["ds_read_b64_tr_b16"]
    lds = bytes(64 * 8 + 8)
    addr = np.arange(64) * 8
    addr[5] += 4
    with pytest.raises(IsaError, match="lane 5: LDS address 44 .* not 8-byte aligned"):
        _emulate(row, lds, addr)
    addr = np.arange(64) * 8
    addr[9] = 4096
    with pytest.raises(IsaError, match="lane 9: .*outside"):
        _emulate(row, lds, addr)


def test_emulator_refuses_unknown_map_and_wrong_target():
    with pytest.raises(IsaError, match="no source establishes"):
        run("gfx1250", "\tds_load_tr4_b64 v[4:5], v1", v={1: np.zeros(32)}, lds=256)
    with pytest.raises(IsaError, match="targets that have it: gfx950"):
        run("gfx942", "\tds_read_b64_tr_b16 v[4:5], v1", v={1: np.zeros(64)}, lds=512)


# ------------------------------------------------------------------------------ the docs page
DOC = __import__("pathlib").Path(__file__).resolve().parents[1] / "docs" / "lds-transpose.md"


def test_docs_table_lists_every_row_with_its_targets_and_confidence():
    rows = {ln.split("|")[1].strip().strip("`"): [c.strip() for c in ln.split("|")[1:-1]]
            for ln in DOC.read_text().splitlines() if ln.startswith("| `")}
    assert set(rows) == set(TRANSPOSE_READS)
    for name, cells in rows.items():
        r = TRANSPOSE_READS[name]
        assert cells[2] == ", ".join(r.targets) and cells[-1].split(":")[0] == r.confidence, (name, cells)
        assert r.builtin in cells[1] and cells[3] == f"{r.elem_bits}-bit" and cells[4] == f"{r.read_bits} bits"


def test_docs_python_blocks_run():
    import re

    ns: dict[str, object] = {}
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 2
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), ns)  # noqa: S102 - our own documentation
