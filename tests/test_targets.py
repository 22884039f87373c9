"""The target table and occupancy, checked against published numbers and stated formulas.

Independent sources:
  * AMD's RDNA wave32 occupancy table (VGPRs per wave -> waves per SIMD), written out below as
    literal data; first column an RDNA3 part with 1024 VGPRs per SIMD (gfx1102), second an RDNA4
    part with 1536 (gfx1201).
  * CDNA: waves = min(max waves, floor(VGPRs per SIMD / roundup(n, granule))), the allocation rule
    of the CDNA ISA guides / LLVM AMDGPUUsage, computed here from the stated constants.
  * LLVM AMDGPUUsage processor table and the CDNA3/CDNA4/RDNA ISA guides for wave sizes and the
    fp8 flavour; PTX ISA for NVIDIA.
"""

from __future__ import annotations

import numpy as np
import pytest

from tilesim.errors import TargetError, TilesimError
from tilesim.targets import TARGETS, get_target, has, occupancy, target_names

# (first VGPR count, last VGPR count, waves on a 1024-VGPR RDNA3 SIMD, waves on a 1536-VGPR RDNA4 SIMD)
RDNA_WAVE32_TABLE = [
    (1, 64, 16, 16),
    (65, 84, 12, 16),
    (85, 96, 10, 16),
    (97, 112, 9, 13),
    (113, 128, 8, 12),
    (129, 168, 6, 9),
    (169, 204, 5, 7),
    (205, 256, 4, 6),
]


def test_rdna_table_is_contiguous_over_1_to_256() -> None:
    # Guards the literal table itself: every count 1..256 appears exactly once.
    covered = [n for lo, hi, _, _ in RDNA_WAVE32_TABLE for n in range(lo, hi + 1)]
    assert covered == list(range(1, 257))


@pytest.mark.parametrize("arch, column", [("gfx1102", 2), ("gfx1201", 3)])
def test_rdna_wave32_occupancy_matches_published_table(arch: str, column: int) -> None:
    t = get_target(arch)
    assert t.vgprs_per_simd == (1024 if column == 2 else 1536)
    got = {n: occupancy(arch, n, 32) for n in range(1, 257)}
    want = {n: row[column] for row in RDNA_WAVE32_TABLE for n in range(row[0], row[1] + 1)}
    wrong = {n: (got[n], want[n]) for n in want if got[n] != want[n]}
    assert not wrong, f"{arch}: VGPRs -> (got, published): {wrong}"


def test_rdna_default_wave_is_32() -> None:
    assert occupancy("gfx1201", 100) == occupancy("gfx1201", 100, 32) == 13


def _cdna_formula(vgprs_per_simd: int, granule: int, max_waves: int, n: int) -> int:
    charged = -(-max(n, 1) // granule) * granule
    return min(max_waves, vgprs_per_simd // charged)


@pytest.mark.parametrize(
    "arch, n, want",
    [
        ("gfx90a", 128, 4), ("gfx90a", 256, 2), ("gfx90a", 64, 8), ("gfx90a", 512, 1),
        ("gfx942", 128, 4), ("gfx942", 256, 2), ("gfx942", 64, 8), ("gfx942", 65, 7),
        ("gfx908", 24, 10), ("gfx908", 128, 2), ("gfx908", 256, 1), ("gfx908", 25, 9),
    ],
)
def test_cdna_examples(arch: str, n: int, want: int) -> None:
    assert occupancy(arch, n) == want


@pytest.mark.parametrize(
    "arch, simd, granule, max_waves, max_n",
    [("gfx90a", 512, 8, 8, 512), ("gfx942", 512, 8, 8, 512), ("gfx908", 256, 4, 10, 256)],
)
def test_cdna_occupancy_formula_over_whole_range(arch: str, simd: int, granule: int, max_waves: int,
                                                 max_n: int) -> None:
    t = get_target(arch)
    assert (t.vgprs_per_simd, t.vgpr_granule, t.max_waves_per_simd) == (simd, granule, max_waves)
    for n in range(0, max_n + 1):
        assert occupancy(arch, n) == _cdna_formula(simd, granule, max_waves, n), n


def test_occupancy_accepts_numpy_integers() -> None:
    assert occupancy("gfx942", np.int64(128)) == 4


@pytest.mark.parametrize(
    "arch, vgprs, wave",
    [
        ("gfx942", -1, None),
        ("gfx942", 12.0, None),
        ("gfx942", "64", None),
        ("gfx942", True, None),  # bool is an int to Python; not a VGPR count
        ("gfx942", 513, None),  # above 512
        ("gfx908", 257, None),
        ("gfx1201", 257, 32),  # RDNA: at most 256 VGPRs per wave
        ("gfx942", 64, 32),  # CDNA has no wave32
        ("gfx1250", 64, 64),  # gfx1250 is wave32 only
        ("sm_90", 64, 64),
    ],
)
def test_occupancy_bad_input(arch: str, vgprs: object, wave: int | None) -> None:
    with pytest.raises(TargetError):
        occupancy(arch, vgprs, wave)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- table facts
ISSUE_TARGETS = (
    ["gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950", "gfx1010", "gfx1011", "gfx1012"]
    + [f"gfx103{i}" for i in range(7)]
    + [f"gfx110{i}" for i in range(4)]
    + [f"gfx115{i}" for i in range(4)]
    + ["gfx1200", "gfx1201", "gfx1250", "sm_80", "sm_86", "sm_89", "sm_90"]
)
CDNA = ["gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"]
RDNA = [n for n in ISSUE_TARGETS if n.startswith("gfx1") and n != "gfx1250"]
NVIDIA = ["sm_80", "sm_86", "sm_89", "sm_90"]


def test_every_issue_target_exists() -> None:
    missing = [n for n in ISSUE_TARGETS if n not in TARGETS]
    assert not missing
    assert set(target_names()) >= set(ISSUE_TARGETS)
    for n in ISSUE_TARGETS:
        assert get_target(n).name == n


@pytest.mark.parametrize("name", ISSUE_TARGETS)
def test_wave_sizes(name: str) -> None:
    t = get_target(name)
    if name in CDNA:
        want: tuple[int, ...] = (64,)
    elif name == "gfx1250" or name in NVIDIA:
        want = (32,)
    else:
        want = (32, 64)
    assert t.wave_sizes == want
    assert t.default_wave == (64 if name in CDNA else 32)
    for w in (32, 64):
        assert has(t, f"wave{w}") == (w in want)


FP8 = {"gfx940": "fnuz", "gfx941": "fnuz", "gfx942": "fnuz", "gfx950": "ocp", "gfx1200": "ocp",
       "gfx1201": "ocp", "gfx1250": "ocp", "sm_89": "ocp", "sm_90": "ocp"}


@pytest.mark.parametrize("name", ISSUE_TARGETS)
def test_fp8_flavour(name: str) -> None:
    want = FP8.get(name)
    t = get_target(name)
    assert t.fp8 == want
    assert has(t, "fp8_fnuz") == (want == "fnuz")
    assert has(t, "fp8_ocp") == (want == "ocp")


@pytest.mark.parametrize(
    "name, feature, want",
    [
        ("gfx1030", "wmma", False),
        ("gfx1010", "wmma", False),
        ("gfx1100", "wmma", True),
        ("gfx1100", "wmma_gfx11", True),
        ("gfx1100", "wmma_gfx12", False),
        ("gfx1151", "wmma_gfx11", True),
        ("gfx1201", "wmma_gfx12", True),
        ("gfx1201", "wmma_gfx11", False),
        ("gfx1201", "swmmac", True),
        ("gfx1250", "wmma_gfx1250", True),
        ("gfx942", "xf32", True),
        ("gfx950", "xf32", False),
        ("gfx942", "smfmac", True),
        ("gfx90a", "smfmac", False),
        ("gfx942", "mfma", True),
        ("gfx942", "wmma", False),
        ("gfx1100", "mfma", False),
        ("gfx908", "agpr", True),
        ("sm_90", "mma_sync", True),
        ("sm_80", "mma_sync_fp8", False),
        ("sm_89", "mma_sync_fp8", True),
        ("sm_90", "mfma", False),
    ],
)
def test_has(name: str, feature: str, want: bool) -> None:
    assert has(name, feature) is want


def test_matrix_path_agrees_with_features() -> None:
    for name in CDNA:
        assert get_target(name).matrix_path == "mfma"
    for name in RDNA:
        t = get_target(name)
        assert has(t, "wmma") == (t.matrix_path in ("wmma", "wmma_gfx12")), name
    for name in NVIDIA:
        assert get_target(name).matrix_path == "mma_sync"


def test_unknown_target_lists_known_names() -> None:
    with pytest.raises(TargetError) as ei:
        get_target("gfx9999")
    msg = str(ei.value)
    assert "gfx9999" in msg
    for n in ("gfx908", "gfx942", "gfx1201", "sm_90"):
        assert n in msg
    assert not msg.startswith("'")  # not KeyError's quoted repr
    assert isinstance(ei.value, TilesimError)


def test_unknown_target_through_has_and_occupancy() -> None:
    with pytest.raises(TargetError):
        has("gfx9999", "wmma")
    with pytest.raises(TargetError):
        occupancy("gfx9999", 64)
    with pytest.raises(TargetError):
        get_target(942)  # type: ignore[arg-type]


def test_unknown_feature() -> None:
    with pytest.raises(TargetError) as ei:
        has("gfx942", "wmma_gfx13")
    assert "wmma_gfx13" in str(ei.value) and "xf32" in str(ei.value)


@pytest.mark.parametrize("alias, name", [("cdna3", "gfx942"), ("MI300X", "gfx942"), ("mi300x", "gfx942"),
                                         ("cdna2", "gfx90a"), ("rdna4", "gfx1201"), ("sm90", "sm_90"),
                                         (" GFX942 ", "gfx942")])
def test_aliases(alias: str, name: str) -> None:
    assert get_target(alias) is TARGETS[name]


def test_target_is_a_hashable_value() -> None:
    t = get_target("gfx942")
    assert t == get_target("cdna3")
    assert hash(t) == hash(get_target("MI300X"))
    assert {t, get_target("gfx942"), get_target("gfx1201")} == {TARGETS["gfx942"], TARGETS["gfx1201"]}
    assert t != get_target("gfx941")  # same family, different name
    with pytest.raises(AttributeError):
        t.name = "gfx999"  # type: ignore[misc]
    assert get_target(t) is t
