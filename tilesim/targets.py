"""The target table: one frozen row per GPU target, and feature predicates over it.

Code asks ``has(target, "wmma_gfx12")``; it never tests a name prefix. New silicon is one
row here. Numbers carry the source they come from in the family notes below.

Sources:
  * AMD "CDNA3 ISA" / "CDNA4 ISA" reference guides, sections 1 and 7 (MAI);
    "RDNA3 ISA" / "RDNA4 ISA" guides, section 7.9 (WMMA); LLVM AMDGPUUsage.rst
    processor table (wave sizes, LDS sizes) and GCNProcessors.td (feature sets).
  * The RDNA wave32 occupancy table (VGPRs per wave -> waves per SIMD) published in
    AMD's RDNA performance guide; reproduced by :func:`occupancy`.
  * NVIDIA CUDA C Programming Guide, "Technical Specifications per Compute Capability";
    PTX ISA 8.x, section 9.7.14 (mma.sync).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

from tilesim.errors import TargetError, choices, did_you_mean

__all__ = [
    "Target",
    "TARGETS",
    "FEATURES",
    "MATRIX_PATHS",
    "ISA_GENERATIONS",
    "MATRIX_CORE_PATHS",
    "get_target",
    "target_names",
    "families",
    "family_targets",
    "feature_targets",
    "has",
    "lds_dma_bytes",
    "LDS_DMA_BYTES",
    "occupancy",
]

ISA_GENERATIONS = ("gfx9", "gfx10", "gfx11", "gfx12", "ptx")
MATRIX_PATHS = ("none", "dot2", "dp4a", "wmma", "wmma_gfx12", "mfma", "mma_sync")
# The paths with matrix instructions in the catalog (the others have dot products only): a target
# on one of these must have catalog rows (proofs/targets.py checks it).
MATRIX_CORE_PATHS = ("wmma", "wmma_gfx12", "mfma", "mma_sync")

# Every feature name a predicate may ask about; `has` rejects others so a typo fails loudly.
FEATURES = frozenset(
    {
        "mfma",  # any CDNA matrix core
        "mfma_gfx908",  # the CDNA1 set (separate AGPR file)
        "mfma_gfx90a",  # f64 MFMA, *_1k bf16 forms, unified VGPR/AGPR file
        "mfma_gfx940",  # CDNA3 set: xf32, fp8, i8 with k doubled, SMFMAC
        "mfma_gfx950",  # CDNA4 additions: 16x16x32 f16, f8f6f4, scaled MFMA
        "smfmac",
        "xf32",
        "wmma",  # any RDNA WMMA
        "wmma_gfx11",
        "wmma_gfx12",
        "wmma_gfx1250",
        "swmmac",
        "fp8_fnuz",
        "fp8_ocp",
        "dot2",
        "dp4a",
        "mma_sync",
        "mma_sync_fp8",
        "cp_async",  # asynchronous global -> shared copies, cp.async + commit/wait groups (PTX ISA, sm_80+)
        "global_load_lds",  # CDNA3+: global_load_lds_{ubyte,ushort,dword}, global -> LDS without VGPRs (LDS_DMA_BYTES)
        "global_load_lds_b128",  # CDNA4 adds global_load_lds_dwordx3/dwordx4 (LDS_DMA_BYTES)
        "agpr",  # accumulation registers exist (CDNA)
        "wave32",
        "wave64",
    }
)


@dataclass(frozen=True)
class Target:
    """One GPU target. Values, not objects with state: compare and hash freely."""

    name: str
    family: str  # cdna1 … cdna4, rdna1 … rdna4, gfx1250, sm80 … sm90
    vendor: str  # "amd" | "nvidia"
    wave_sizes: tuple[int, ...]
    default_wave: int
    vgprs_per_simd: int  # 32-bit registers per lane of one SIMD (NVIDIA: per SM sub-partition)
    max_waves_per_simd: int
    lds_bytes: int  # most LDS / shared memory one workgroup may allocate
    lds_banks: int
    matrix_path: str
    fp8: str | None  # "fnuz" | "ocp" | None
    features: frozenset[str]
    vgpr_granule: int  # registers are allocated per wave in multiples of this
    max_vgprs_per_wave: int
    # the instruction-set generation whose encodings, DPP rules and wait counters the ISA emulator
    # follows: "gfx9" (CDNA), "gfx10", "gfx11", "gfx12" (LLVM's SIInstrInfo generations), "ptx"
    isa: str
    marketing: str = ""
    notes: str = ""
    occupancy_buckets: tuple[int, ...] = field(default=())
    # work-items one workgroup may have: 1024 on every AMD target (LLVM AMDGPUUsage, "max flat workgroup
    # size") and NVIDIA sm_80 … sm_90 (CUDA Programming Guide, "maximum number of threads per block")
    max_workgroup_size: int = 1024

    def __post_init__(self) -> None:
        if self.default_wave not in self.wave_sizes:
            raise TargetError(f"{self.name}: default wave {self.default_wave} not in {self.wave_sizes}")
        if self.isa not in ISA_GENERATIONS:
            raise TargetError(f"{self.name}: ISA generation {self.isa!r}; valid: {choices(ISA_GENERATIONS)}")
        if self.matrix_path not in MATRIX_PATHS:
            raise TargetError(f"{self.name}: matrix path {self.matrix_path!r}; valid: {choices(MATRIX_PATHS)}")
        unknown = self.features - FEATURES
        if unknown:
            raise TargetError(f"{self.name}: unknown features {sorted(unknown)}")

    def __str__(self) -> str:
        return self.name


# RDNA wave32 allocation buckets: a wave asking for n VGPRs is charged the smallest bucket
# >= n. These breakpoints reproduce AMD's published occupancy table for RDNA3/RDNA4.
_RDNA_BUCKETS = (64, 84, 96, 112, 128, 168, 204, 256)


def _amd(
    name: str,
    family: str,
    *,
    waves: tuple[int, ...],
    vgprs: int,
    max_waves: int,
    lds: int,
    banks: int,
    path: str,
    feats: set[str],
    isa: str,
    fp8: str | None = None,
    granule: int = 8,
    max_vgprs: int = 256,
    marketing: str = "",
    buckets: tuple[int, ...] = (),
) -> Target:
    f = set(feats) | {f"wave{w}" for w in waves}
    if fp8:
        f.add(f"fp8_{fp8}")
    return Target(
        name=name,
        family=family,
        vendor="amd",
        wave_sizes=waves,
        default_wave=waves[0],
        vgprs_per_simd=vgprs,
        max_waves_per_simd=max_waves,
        lds_bytes=lds,
        lds_banks=banks,
        matrix_path=path,
        fp8=fp8,
        features=frozenset(f),
        vgpr_granule=granule,
        max_vgprs_per_wave=max_vgprs,
        isa=isa,
        marketing=marketing,
        occupancy_buckets=buckets,
    )


def _cdna(name: str, family: str, feats: set[str], **kw: object) -> Target:
    # CDNA: wave64 only; gfx90a+ unify VGPRs and AGPRs (512 per lane), gfx908 keeps them apart.
    base = {"mfma", "agpr", "dot2", "dp4a"} | feats
    return _amd(name, family, waves=(64,), path="mfma", feats=base, isa="gfx9", **kw)  # type: ignore[arg-type]


def _rdna(name: str, family: str, path: str, feats: set[str], vgprs: int, **kw: object) -> Target:
    # RDNA: wave32 by default, wave64 selectable (gfx1250: wave32 only). Each row names its ISA
    # generation (isa=, LLVM GCNProcessors.td's FeatureGFX10/11/12 sets): RDNA families span three.
    kw.setdefault("waves", (32, 64))
    return _amd(
        name,
        family,
        vgprs=vgprs,
        max_waves=16,
        lds=65536,
        banks=32,
        path=path,
        feats=feats,
        buckets=_RDNA_BUCKETS,
        **kw,  # type: ignore[arg-type]
    )


_CDNA1 = {"mfma_gfx908"}
_CDNA2 = _CDNA1 | {"mfma_gfx90a"}
_CDNA3 = _CDNA2 | {"mfma_gfx940", "smfmac", "xf32", "global_load_lds"}
_CDNA4 = (_CDNA3 - {"xf32"}) | {"mfma_gfx950", "global_load_lds_b128"}
# bytes a lane moves per direct global -> LDS load, per feature: the sizes clang's
# __builtin_amdgcn_global_load_lds accepts (gfx942: 1, 2, 4; gfx950 also 12, 16 -- checked by compiling,
# tests/test_amd_async_copy.py). Each lane writes LDS at M0 + offset + lane * stride, stride = the size
# (16 for 12: CDNA4 ISA, "Memory Buffer Load to LDS"; docs/emulator.md)
LDS_DMA_BYTES = {"global_load_lds": (1, 2, 4), "global_load_lds_b128": (12, 16)}
_RDNA2_DOT = {"dot2", "dp4a"}
_RDNA3 = {"wmma", "wmma_gfx11", "dot2", "dp4a"}
_RDNA4 = {"wmma", "wmma_gfx12", "swmmac", "dot2", "dp4a"}
_GFX1250 = {"wmma", "wmma_gfx1250", "swmmac", "dot2", "dp4a"}


def _nvidia(name: str, family: str, *, max_warps_sm: int, smem: int, fp8: bool, marketing: str) -> Target:
    feats = {"mma_sync", "wave32", "cp_async"} | ({"mma_sync_fp8", "fp8_ocp"} if fp8 else set())
    return Target(
        name=name,
        family=family,
        vendor="nvidia",
        wave_sizes=(32,),
        default_wave=32,
        vgprs_per_simd=512,  # 64K registers per SM / 4 sub-partitions / 32 lanes
        max_waves_per_simd=max_warps_sm // 4,
        lds_bytes=smem,
        lds_banks=32,
        matrix_path="mma_sync",
        fp8="ocp" if fp8 else None,
        features=frozenset(feats),
        vgpr_granule=8,  # 256 registers per warp
        max_vgprs_per_wave=255,
        isa="ptx",
        marketing=marketing,
    )


_ROWS: list[Target] = [
    _cdna("gfx908", "cdna1", _CDNA1, vgprs=256, max_waves=10, lds=65536, banks=32, granule=4,
          marketing="Instinct MI100"),
    _cdna("gfx90a", "cdna2", _CDNA2, vgprs=512, max_waves=8, lds=65536, banks=32, max_vgprs=512,
          marketing="Instinct MI210/MI250/MI250X"),
    _cdna("gfx940", "cdna3", _CDNA3, vgprs=512, max_waves=8, lds=65536, banks=32, max_vgprs=512,
          fp8="fnuz", marketing="Instinct MI300 (early)"),
    _cdna("gfx941", "cdna3", _CDNA3, vgprs=512, max_waves=8, lds=65536, banks=32, max_vgprs=512,
          fp8="fnuz", marketing="Instinct MI300 (early)"),
    _cdna("gfx942", "cdna3", _CDNA3, vgprs=512, max_waves=8, lds=65536, banks=32, max_vgprs=512,
          fp8="fnuz", marketing="Instinct MI300X/MI300A/MI325X"),
    _cdna("gfx950", "cdna4", _CDNA4, vgprs=512, max_waves=8, lds=163840, banks=64, max_vgprs=512,
          fp8="ocp", marketing="Instinct MI350X/MI355X"),
    _rdna("gfx1010", "rdna1", "none", set(), isa="gfx10", vgprs=1024, marketing="Radeon RX 5700"),
    _rdna("gfx1011", "rdna1", "dot2", _RDNA2_DOT, isa="gfx10", vgprs=1024, marketing="Radeon Pro V520"),
    _rdna("gfx1012", "rdna1", "dot2", _RDNA2_DOT, isa="gfx10", vgprs=1024, marketing="Radeon RX 5500"),
    *(
        _rdna(f"gfx103{i}", "rdna2", "dp4a", _RDNA2_DOT, isa="gfx10", vgprs=1024, marketing=m)
        for i, m in enumerate(
            ["Radeon RX 6800/6900", "Radeon RX 6700", "Radeon RX 6600", "Van Gogh APU",
             "Radeon RX 6500", "Rembrandt APU", "Raphael APU"]
        )
    ),
    _rdna("gfx1100", "rdna3", "wmma", _RDNA3, isa="gfx11", vgprs=1536, marketing="Radeon RX 7900"),
    _rdna("gfx1101", "rdna3", "wmma", _RDNA3, isa="gfx11", vgprs=1536, marketing="Radeon RX 7800/7700"),
    _rdna("gfx1102", "rdna3", "wmma", _RDNA3, isa="gfx11", vgprs=1024, marketing="Radeon RX 7600"),
    _rdna("gfx1103", "rdna3", "wmma", _RDNA3, isa="gfx11", vgprs=1024, marketing="Phoenix APU"),
    _rdna("gfx1150", "rdna3", "wmma", _RDNA3, isa="gfx11", vgprs=1024, marketing="Strix Point APU (RDNA3.5)"),
    _rdna("gfx1151", "rdna3", "wmma", _RDNA3, isa="gfx11", vgprs=1536, marketing="Strix Halo APU (RDNA3.5)"),
    _rdna("gfx1152", "rdna3", "wmma", _RDNA3, isa="gfx11", vgprs=1024, marketing="Krackan APU (RDNA3.5)"),
    _rdna("gfx1153", "rdna3", "wmma", _RDNA3, isa="gfx11", vgprs=1024, marketing="RDNA3.5 APU"),
    _rdna("gfx1200", "rdna4", "wmma_gfx12", _RDNA4, isa="gfx12", vgprs=1536, fp8="ocp", marketing="Radeon RX 9060"),
    _rdna("gfx1201", "rdna4", "wmma_gfx12", _RDNA4, isa="gfx12", vgprs=1536, fp8="ocp", marketing="Radeon RX 9070"),
    _rdna("gfx1250", "gfx1250", "wmma_gfx12", _GFX1250, isa="gfx12", vgprs=1536, fp8="ocp", waves=(32,),
          max_vgprs=1024, marketing="Instinct MI400-class (gfx1250)"),
    _nvidia("sm_80", "sm80", max_warps_sm=64, smem=166912, fp8=False, marketing="A100"),
    _nvidia("sm_86", "sm86", max_warps_sm=48, smem=101376, fp8=False, marketing="RTX 30xx, A40"),
    _nvidia("sm_89", "sm89", max_warps_sm=48, smem=101376, fp8=True, marketing="RTX 40xx, L40"),
    _nvidia("sm_90", "sm90", max_warps_sm=64, smem=232448, fp8=True, marketing="H100/H200"),
]

TARGETS: dict[str, Target] = {t.name: t for t in _ROWS}

# Accepted spellings beyond the canonical names (marketing names and family names map to
# the representative target, as AMD's matrix instruction calculator accepts them).
_ALIASES: dict[str, str] = {
    "cdna1": "gfx908", "cdna": "gfx908", "mi100": "gfx908",
    "cdna2": "gfx90a", "mi200": "gfx90a", "mi250": "gfx90a", "mi250x": "gfx90a", "mi210": "gfx90a",
    "cdna3": "gfx942", "mi300": "gfx942", "mi300x": "gfx942", "mi325x": "gfx942",
    "cdna4": "gfx950", "mi350": "gfx950", "mi355x": "gfx950",
    "rdna3": "gfx1100", "rdna4": "gfx1201",
    "sm80": "sm_80", "sm86": "sm_86", "sm89": "sm_89", "sm90": "sm_90",
    "sm_90a": "sm_90", "h100": "sm_90", "a100": "sm_80",
    # LLVM processor codenames (AMDGPUUsage "Processors" table) and Radeon product names
    "arcturus": "gfx908", "aldebaran": "gfx90a", "aqua_vanjaram": "gfx942",
    "navi10": "gfx1010", "navi12": "gfx1011", "navi14": "gfx1012",
    "navi21": "gfx1030", "sienna_cichlid": "gfx1030", "navi22": "gfx1031", "navy_flounder": "gfx1031",
    "navi23": "gfx1032", "dimgrey_cavefish": "gfx1032", "vangogh": "gfx1033", "navi24": "gfx1034",
    "beige_goby": "gfx1034", "rembrandt": "gfx1035", "yellow_carp": "gfx1035", "raphael": "gfx1036",
    "navi31": "gfx1100", "navi32": "gfx1101", "navi33": "gfx1102", "phoenix": "gfx1103",
    "strix": "gfx1150", "strix_point": "gfx1150", "strix_halo": "gfx1151",
    "navi44": "gfx1200", "navi48": "gfx1201",
    "rx7900xtx": "gfx1100", "rx7900xt": "gfx1100", "rx9070xt": "gfx1201", "rx9070": "gfx1201", "rx9060xt": "gfx1200",
}

# Target-ID feature suffixes that LLVM accepts after the processor name (``gfx942:sramecc+:xnack-``).
# They change code-object compatibility, not matrix layouts, so they are accepted and dropped.
_TARGET_ID_FEATURES = ("sramecc", "xnack")


def target_names() -> list[str]:
    return list(TARGETS)


def families() -> tuple[str, ...]:
    """Every family name of the table, in table order."""
    return tuple(dict.fromkeys(t.family for t in TARGETS.values()))


def family_targets(family: str) -> tuple[str, ...]:
    """Every target of ``family``, in table order: what a catalog row of that family runs on.

    The catalog derives its per-family target lists here, so a new target of an existing family
    is one row of this table and nothing else.
    """
    names = tuple(t.name for t in TARGETS.values() if t.family == family)
    if not names:
        raise TargetError(f"unknown family {family!r}; known families: {choices(families())}")
    return names


def feature_targets(feature: str) -> tuple[str, ...]:
    """Every target that has ``feature`` (one of :data:`FEATURES`), in table order."""
    if not isinstance(feature, str) or feature not in FEATURES:
        raise TargetError(f"unknown feature {feature!r}; known features: {choices(sorted(FEATURES))}")
    return tuple(t.name for t in TARGETS.values() if feature in t.features)


def get_target(name: str | Target) -> Target:
    """Look a target up by name (``gfx942``, ``sm_90``) or accepted alias (``cdna3``, ``MI300X``)."""
    if isinstance(name, Target):
        return name
    if not isinstance(name, str):
        raise TargetError(f"target must be a name like 'gfx942', got {name!r}")
    key, *features = name.strip().lower().split(":")
    if key not in TARGETS:  # "RX 9070 XT", "strix-halo"
        key = key.replace(" ", "").replace("-", "_")
    for f in features:
        if f[:-1] not in _TARGET_ID_FEATURES or f[-1:] not in "+-" or not f[:-1]:
            raise TargetError(f"unknown target feature {f!r} in {name!r}; LLVM target-ID features: "
                              f"{choices(x + s for x in _TARGET_ID_FEATURES for s in '+-')}")
    key = _ALIASES.get(key, key)
    try:
        return TARGETS[key]
    except KeyError:
        hint = did_you_mean(key, [*TARGETS, *_ALIASES])
        raise TargetError(f"unknown target {name!r};{hint or ''} known targets: {choices(TARGETS, limit=100)} "
                          "(codenames such as navi48 or aldebaran and product names such as MI300X are accepted)") from None


def lds_dma_bytes(target: str | Target) -> tuple[int, ...]:
    """Bytes per lane of the direct global -> LDS loads ``target`` has (empty: none)."""
    feats = get_target(target).features
    return tuple(sorted(n for f, sizes in LDS_DMA_BYTES.items() if f in feats for n in sizes))


def has(target: str | Target, feature: str) -> bool:
    """True when ``target`` has ``feature`` (one of :data:`FEATURES`)."""
    if not isinstance(feature, str) or feature not in FEATURES:
        raise TargetError(f"unknown feature {feature!r}; known features: {choices(sorted(FEATURES))}")
    return feature in get_target(target).features


def occupancy(target: str | Target, vgprs_per_wave: int, wave_size: int | None = None) -> int:
    """Waves one SIMD can hold when each wave uses ``vgprs_per_wave`` VGPRs.

    RDNA (wave32) charges a wave the smallest published allocation bucket that fits; CDNA
    and NVIDIA round up to the allocation granule. A wave64 on RDNA occupies two wave32
    register slices, so it gets half the wave32 count.
    """
    t = get_target(target)
    wave = t.default_wave if wave_size is None else wave_size
    if wave not in t.wave_sizes:
        raise TargetError(f"{t.name} has no wave{wave}; wave sizes: {choices(t.wave_sizes)}")
    try:  # any integer, numpy's included; not bool (True is an int to Python) nor float
        if isinstance(vgprs_per_wave, bool):
            raise TypeError
        vgprs_per_wave = operator.index(vgprs_per_wave)
    except TypeError:
        raise TargetError(f"VGPRs per wave must be a non-negative integer, got {vgprs_per_wave!r}") from None
    if vgprs_per_wave < 0:
        raise TargetError(f"VGPRs per wave must be a non-negative integer, got {vgprs_per_wave!r}")
    if vgprs_per_wave > t.max_vgprs_per_wave:
        raise TargetError(
            f"{vgprs_per_wave} VGPRs per wave exceeds {t.name}'s limit of {t.max_vgprs_per_wave}"
        )
    n = max(vgprs_per_wave, 1)
    if t.occupancy_buckets:
        charged = next(b for b in t.occupancy_buckets if b >= n) if n <= t.occupancy_buckets[-1] else n
    else:
        charged = -(-n // t.vgpr_granule) * t.vgpr_granule
    waves = min(t.max_waves_per_simd, t.vgprs_per_simd // charged)
    if t.vendor == "amd" and wave == 64 and 32 in t.wave_sizes:
        waves //= 2
    return waves
