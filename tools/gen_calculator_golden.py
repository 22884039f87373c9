#!/usr/bin/env python3
"""Generate the AMD Matrix Instruction Calculator golden dataset for tilesim's tests.

This script drives AMD's own *Matrix Instruction Calculator*
(``matrix_calculator.py`` from the ROCm ``amd_matrix_instruction_calculator``
repository) and turns what it prints into compact, numpy-only data files. The
calculator itself is **not** part of this repository; pass its path with
``--calculator``. Nothing from the calculator's source is copied: we only run it
and parse its printed output.

Usage::

    python tools/gen_calculator_golden.py \\
        --calculator /path/to/matrix_calculator.py \\
        --out tests/golden/amd_calculator

How the calculator is driven
----------------------------
The calculator module is imported from the given path (under a private module
name, so its ``if __name__ == '__main__'`` block does not run) and its CLI entry
point ``parse_and_run()`` is called in-process with a patched ``sys.argv``,
capturing stdout/stderr. That is exactly the code path of a command line such as
``matrix_calculator.py -a cdna3 -i v_mfma_f32_32x32x8_f16 -R -A -c``, without
one interpreter start per query.

Everything is discovered from the calculator's own output:

* architectures: the ``--help`` text ("... the following architectures: ...")
  and its ``Alternately:`` alias lines;
* instructions: ``-a ARCH -L``;
* wave sizes: an instruction accepts ``-w 32`` / ``-w 64`` or rejects it;
* operand matrices: ``-A``/``-B``/``-C``/``-D`` and ``-k`` (``--compression``,
  the 4:2-sparse compression-index matrix of SMFMAC/SWMMAC, printed by the
  calculator as ``K[M][K]`` / ``compression[i][k]``) are each probed;
* legal modifier values: every value of ``--cbsz`` (0..7), ``--abid`` (0..15 for
  each accepted CBSZ), ``--blgp`` (0..7), ``--opsel`` (0..7), ``--neg`` and
  ``--neg_hi`` (0..7) is tried per (instruction, matrix, wave size); the
  calculator's own argument validation decides what is legal. The accepted
  sets are recorded in ``details.json``.

Which modifier combinations are enumerated as layouts
-----------------------------------------------------
Only modifiers that change *where* an element is read from are enumerated:

* ``cbsz``/``abid`` for the dense A matrix of CDNA MFMAs that support them, and
  for the compression-index matrix ``K`` of CDNA3 SMFMACs;
* ``blgp`` for the B matrix of CDNA MFMAs (except FP64, see below);
* ``opsel`` wherever the calculator accepts it (RDNA3: C/D of the 16-bit-output
  WMMAs, values 0 and 4; RDNA4: ``K`` of the SWMMACs, one value per
  compression-index set).

Accepted but *not* enumerated, because they do not move data: ``neg``/``neg_hi``
(sign/abs only), ``blgp`` on CDNA3 FP64 MFMAs (there it is the A/B/C negate
control; the calculator only adds a ``-`` prefix), and ``cbsz``/``abid`` on the
sparse A matrix of SMFMACs (they only select the compression-index set; for
``-A`` the calculator ignores them, apart from a "Blocks 0..2^CBSZ-1" header).
The script verifies each of these claims on every instruction: the stripped
layout must equal the default one, otherwise it aborts.

The combined legality of different modifier families is also checked: every
enumerated combination is validated by the calculator itself.

Record format (public contract)
-------------------------------
Each layout is parsed from ``--register-layout --csv``. One record is emitted per
copy of an element, i.e. per register-lane entry printed in a table cell
(replicated/broadcast elements print several entries in a cell)::

    (block, row, col, vgpr, lane, bit_lo, bit_hi)

* A: row = i, col = k.   B: row = k, col = j.   C/D: row = i, col = j.
* K (compression index): row = i, col = k, where k is the column index of the
  *uncompressed* (logical, 4:2-sparse) A matrix, 0..K-1, exactly as the
  calculator indexes ``K[i][k]``/``compression[i][k]``. Each group of four
  consecutive k (one 4:2 group) maps to the same 4-bit field that holds the
  two 2-bit indices of that group.
* ``block``: the block from the "Block b" header above each table (CDNA).
  With CBSZ>0 the calculator prints one table under "Blocks b0, b1, ...": it
  applies to every listed block, so a record is emitted for each of them.
  RDNA prints no block header: block = 0.
* ``lane``: the number in braces.
* ``vgpr`` / ``bit_lo`` / ``bit_hi`` from the printed register name:

  - ``vN{L}``           -> vgpr N, bits 0..31;
  - ``vN{L}.[h:l]``     -> vgpr N, bits l..h (h inclusive);
  - ``v[H:N]{L}``       -> vgpr N (the lowest register of the tuple),
    bits 0..32*(H-N+1)-1, i.e. 0..63 for a register pair;
  - bit numbers count across the tuple starting at ``vgpr``; should a printed
    sub-range lie wholly above bit 31 the record is normalised so that
    ``vgpr`` is the first register holding any bit of it
    (``vgpr += lo // 32``; bits reduced by ``32 * (lo // 32)``).

  So ``v[3:2]{5}`` -> (vgpr 2, bits 0-63); ``v1{7}.[31:16]`` -> (vgpr 1,
  bits 16-31); ``v0{3}.[23:16]`` -> (vgpr 0, bits 16-23).
* Register numbers are offsets from the operand's first VGPR (as printed).
* Quirk, sparse A (SMFMAC/SWMMAC): the calculator cannot know which of the
  four logical k of a 4:2 group are stored, so it prints the *container* that
  holds the group's two stored values: the whole 32-bit register for 16-bit
  types (``vN``, bits 0-31), a 16-bit half for 8-bit types, a byte for 4-bit
  types. All four k of a group therefore share one record location.
* With CBSZ/ABID (A) or BLGP (B) the layout tells where the hardware *reads*
  the element of that block/lane from (broadcast source), as the calculator
  prints it.

Output files (in ``--out``)
---------------------------
* ``LAYOUTS_<arch>.npz`` - one int16 array ``records`` (N x 7) per architecture;
* ``index_<arch>.json``  - key -> [offset, count] into ``records``, key =
  ``"<inst>|<A|B|C|D|K>|w<32|64>|cbsz=<c>|abid=<a>|blgp=<b>|opsel=<o>"``;
  records of one key are sorted lexicographically;
* ``sha256_<arch>.json`` - key -> sha256 of that key's records as a sorted,
  C-contiguous little-endian int32 (count x 7) array (covers every key, also
  any key whose records are not stored, see ``--max-mb``);
* ``details.json``      - per architecture/instruction everything
  ``--detail-instruction`` prints (parsed, plus the raw text), the probed
  wave sizes, matrices, accepted modifier values and enumerated combinations;
* ``README.md``          - description, provenance and regeneration command.

If the compressed layout files would exceed ``--max-mb`` (default 20 MB), only
the default-modifier layouts are stored as records and the others are kept as
sha256 digests only (the README then says so).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import io
import itertools
import json
import os
import re
import sys
import time
from typing import Any

import numpy as np

# run as `python tools/gen_calculator_golden.py`: the script's folder is on sys.path
from _calculator_parse import normalise_detail, parse_detail, parse_register_layout, records_sha256, sort_records

MATRIX_FLAGS = {"A": "-A", "B": "-B", "C": "-C", "D": "-D", "K": "-k"}
RECORD_FIELDS = ["block", "row", "col", "vgpr", "lane", "bit_lo", "bit_hi"]
DEFAULT_MODS = (0, 0, 0, 0)  # cbsz, abid, blgp, opsel


# --------------------------------------------------------------------------------------------
# Driving the calculator
# --------------------------------------------------------------------------------------------
class Calculator:
    """In-process driver for AMD's matrix_calculator.py."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        spec = importlib.util.spec_from_file_location("_amd_matrix_calculator", self.path)
        if spec is None or spec.loader is None:
            raise SystemExit(f"cannot import calculator from {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.mod = module
        self.calls = 0
        with open(self.path, "rb") as fh:
            self.sha256 = hashlib.sha256(fh.read()).hexdigest()

    def run(self, *args: str) -> tuple[int, str, str]:
        """Run the calculator CLI with ``args``; returns (exit code, stdout, stderr)."""
        self.calls += 1
        out, err = io.StringIO(), io.StringIO()
        saved = sys.argv
        sys.argv = ["matrix_calculator.py", *args]
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    rc = self.mod.parse_and_run()
                except SystemExit as exc:  # argparse errors / --help
                    rc = exc.code if isinstance(exc.code, int) else 1
        finally:
            sys.argv = saved
        return rc, out.getvalue(), err.getvalue()

    def ok(self, *args: str) -> bool:
        return self.run(*args)[0] == 0

    def version(self) -> str:
        rc, out, _ = self.run("--version")
        return out.strip().rsplit(" ", 1)[-1] if rc == 0 else "unknown"


# --------------------------------------------------------------------------------------------
# Discovery
# --------------------------------------------------------------------------------------------
def discover_architectures(calc: Calculator) -> dict[str, list[str]]:
    """Architectures and their alternative names, parsed from ``--help``."""
    _, out, _ = calc.run("--help")
    m = re.search(r"following architectures:\s*(.*?)\n\s*\n", out, re.S)
    if not m:
        raise SystemExit("could not find the architecture list in --help")
    archs = [a.strip() for a in " ".join(m.group(1).split()).split(",") if a.strip()]
    aliases: dict[str, list[str]] = {a: [] for a in archs}
    current = None
    for line in out.splitlines():
        s = line.strip()
        if s in archs:
            current = s
        elif current and s.startswith("Alternately:"):
            aliases[current] += [x.strip() for x in s[len("Alternately:"):].split(",") if x.strip()]
        elif current and not s.startswith("Alternately:"):
            if s.startswith("-"):
                current = None
    return {a.lower(): [x.lower() for x in aliases[a]] for a in archs}


def list_instructions(calc: Calculator, arch: str) -> list[str]:
    rc, out, err = calc.run("-a", arch, "-L")
    if rc != 0:
        raise SystemExit(f"-L failed for {arch}: {err}")
    lines = out.splitlines()
    assert lines[0].startswith("Available instructions"), lines[0]
    return [x.strip() for x in lines[1:] if x.strip()]


# --------------------------------------------------------------------------------------------
# Probing legality
# --------------------------------------------------------------------------------------------
def mod_args(cbsz: int, abid: int, blgp: int, opsel: int, neg: int = 0, neg_hi: int = 0) -> list[str]:
    return ["--cbsz", str(cbsz), "--abid", str(abid), "--blgp", str(blgp), "--opsel", str(opsel),
            "--neg", str(neg), "--neg_hi", str(neg_hi)]


def probe_modifiers(calc: Calculator, base: list[str]) -> dict[str, Any]:
    """Which single-family modifier values the calculator accepts for ``base`` (a -g query)."""
    acc: dict[str, Any] = {}
    cbsz_ok = [c for c in range(8) if calc.ok(*base, *mod_args(c, 0, 0, 0))]
    acc["cbsz_abid"] = [[c, a] for c in cbsz_ok for a in range(16) if calc.ok(*base, *mod_args(c, a, 0, 0))]
    acc["blgp"] = [b for b in range(8) if calc.ok(*base, *mod_args(0, 0, b, 0))]
    acc["opsel"] = [o for o in range(8) if calc.ok(*base, *mod_args(0, 0, 0, o))]
    acc["neg"] = [n for n in range(8) if calc.ok(*base, *mod_args(0, 0, 0, 0, n, 0))]
    acc["neg_hi"] = [n for n in range(8) if calc.ok(*base, *mod_args(0, 0, 0, 0, 0, n))]
    return acc


# --------------------------------------------------------------------------------------------
# Main generation
# --------------------------------------------------------------------------------------------
def generate(calc: Calculator, out_dir: str, max_mb: float, calc_commit: str) -> dict[str, Any]:
    t0 = time.time()
    archs = discover_architectures(calc)
    details: dict[str, Any] = {
        "calculator": {"version": calc.version(), "commit": calc_commit, "file_sha256": calc.sha256},
        "record_fields": RECORD_FIELDS,
        "architectures": {},
    }
    layouts: dict[str, dict[str, np.ndarray]] = {}
    summary: dict[str, Any] = {}
    for arch, alias_list in archs.items():
        insts = list_instructions(calc, arch)
        arch_details: dict[str, Any] = {"aliases": alias_list, "instructions": {}}
        arch_layouts: dict[str, np.ndarray] = {}
        arch_waves: set = set()
        n_verified = 0
        for inst in insts:
            rc, dtext, err = calc.run("-a", arch, "-i", inst, "-d")
            if rc != 0:
                raise SystemExit(f"-d failed for {arch} {inst}: {err}")
            parsed = parse_detail(dtext)
            info = normalise_detail(parsed)
            waves = [w for w in (32, 64) if calc.ok("-a", arch, "-i", inst, "-w", str(w), "-d")]
            arch_waves.update(waves)
            info["wave_sizes"] = waves
            info["instruction_aliases"] = []  # the calculator prints none
            mats: dict[str, Any] = {}
            for mat, flag in MATRIX_FLAGS.items():
                per_wave: dict[str, Any] = {}
                for w in waves:
                    base = ["-a", arch, "-i", inst, "-w", str(w), "-g", flag]
                    if not calc.ok(*base):
                        continue
                    acc = probe_modifiers(calc, base)
                    fp64 = info["data_types"].get("Src0", "").startswith("FP64")
                    # Families that move data for this matrix (see module docstring).
                    use_cbsz = (mat == "A" and not info["sparse"]) or mat == "K"
                    use_blgp = mat == "B" and not fp64
                    cbsz_abid = [tuple(x) for x in acc["cbsz_abid"]] if use_cbsz else [(0, 0)]
                    blgps = acc["blgp"] if use_blgp else [0]
                    opsels = acc["opsel"]
                    combos = [(c, a, b, o) for (c, a), b, o in itertools.product(cbsz_abid, blgps, opsels)]
                    for combo in combos:
                        if not calc.ok(*base, *mod_args(*combo)):
                            raise SystemExit(f"calculator rejects combination {combo} for {arch} {inst} {mat} w{w}")
                    default = None
                    for combo in combos:
                        rc, text, err = calc.run("-a", arch, "-i", inst, "-w", str(w), "-R", flag, "-c",
                                                 *mod_args(*combo))
                        if rc != 0:
                            raise SystemExit(f"-R failed {arch} {inst} {mat} w{w} {combo}: {err}")
                        arr, negated, _ = parse_register_layout(text, info["blocks"])
                        if negated:
                            raise SystemExit(f"unexpected negation in {arch} {inst} {mat} {combo}")
                        arr = sort_records(arr)
                        rows, cols = {"A": ("m", "k"), "B": ("k", "n"), "C": ("m", "n"),
                                      "D": ("m", "n"), "K": ("m", "k")}[mat]
                        cells = {tuple(x) for x in arr[:, :3].tolist()}
                        want = info["blocks"] * info[rows] * info[cols]
                        if len(cells) != want or arr[:, 0].max() >= info["blocks"]:
                            raise SystemExit(f"incomplete layout {arch} {inst} {mat} w{w} {combo}: "
                                             f"{len(cells)} of {want} elements")
                        key = f"{inst}|{mat}|w{w}|cbsz={combo[0]}|abid={combo[1]}|blgp={combo[2]}|opsel={combo[3]}"
                        arch_layouts[key] = arr
                        if combo == DEFAULT_MODS:
                            default = arr
                    if default is None:
                        raise SystemExit(f"no default layout for {arch} {inst} {mat} w{w}")
                    # Accepted-but-not-enumerated modifiers must leave the layout unchanged.
                    skipped = []
                    if not use_cbsz:
                        skipped += [(c, a, 0, 0) for c, a in acc["cbsz_abid"] if (c, a) != (0, 0)]
                    if not use_blgp:
                        skipped += [(0, 0, b, 0) for b in acc["blgp"] if b]
                    for combo in skipped:
                        rc, text, err = calc.run("-a", arch, "-i", inst, "-w", str(w), "-R", flag, "-c",
                                                 *mod_args(*combo))
                        if rc != 0:
                            raise SystemExit(f"-R failed {arch} {inst} {mat} w{w} {combo}: {err}")
                        arr, _, _ = parse_register_layout(text, info["blocks"])
                        arr = sort_records(arr[arr[:, 0] < info["blocks"]])
                        if not np.array_equal(arr, default):
                            raise SystemExit(f"non-enumerated modifier {combo} changes {arch} {inst} {mat} w{w}")
                        n_verified += 1
                    per_wave[f"w{w}"] = {
                        "accepted": acc,
                        "enumerated": [list(c) for c in combos],
                        "not_enumerated_verified_unchanged": [list(c) for c in skipped],
                    }
                if per_wave:
                    mats[mat] = per_wave
            info["matrices"] = mats
            info["raw"] = dtext
            info["parsed"] = {"top": parsed["top"], "sections": parsed["sections"]}
            arch_details["instructions"][inst] = info
        arch_details["wave_sizes"] = sorted(arch_waves)
        details["architectures"][arch] = arch_details
        layouts[arch] = arch_layouts
        summary[arch] = {"instructions": len(insts), "keys": len(arch_layouts),
                         "records": int(sum(len(v) for v in arch_layouts.values())),
                         "verified_non_layout_modifier_runs": n_verified}
        print(f"{arch}: {len(insts)} instructions, {len(arch_layouts)} layouts, "
              f"{summary[arch]['records']} records ({time.time() - t0:.1f}s)", flush=True)

    os.makedirs(out_dir, exist_ok=True)
    full = _write_layouts(out_dir, layouts, store_all=True)
    if full > max_mb * 1e6:
        print(f"full layout data {full / 1e6:.1f} MB > {max_mb} MB: storing default modifiers only")
        size = _write_layouts(out_dir, layouts, store_all=False)
        stored_all = False
    else:
        size, stored_all = full, True
    with open(os.path.join(out_dir, "details.json"), "w") as fh:
        json.dump(details, fh, indent=1, sort_keys=False)
        fh.write("\n")
    elapsed = time.time() - t0
    return {"summary": summary, "layout_bytes": size, "stored_all": stored_all, "elapsed_s": elapsed,
            "calls": calc.calls, "details": details}


def _write_layouts(out_dir: str, layouts: dict[str, dict[str, np.ndarray]], store_all: bool) -> int:
    total = 0
    for arch, keyed in layouts.items():
        chunks, index, digests, off = [], {}, {}, 0
        for key in sorted(keyed):
            arr = keyed[key]
            digests[key] = records_sha256(arr)
            is_default = key.endswith("|cbsz=0|abid=0|blgp=0|opsel=0")
            if store_all or is_default:
                index[key] = [off, int(len(arr))]
                chunks.append(arr.astype(np.int16))
                off += len(arr)
        assert all(int(a.max()) < 2**15 for a in keyed.values())
        records = np.concatenate(chunks).astype(np.int16)
        npz = os.path.join(out_dir, f"LAYOUTS_{arch}.npz")
        np.savez_compressed(npz, records=records)
        with open(os.path.join(out_dir, f"index_{arch}.json"), "w") as fh:
            json.dump(index, fh, indent=0, sort_keys=True)
            fh.write("\n")
        with open(os.path.join(out_dir, f"sha256_{arch}.json"), "w") as fh:
            json.dump(digests, fh, indent=0, sort_keys=True)
            fh.write("\n")
        total += os.path.getsize(npz)
    return total


README_TEMPLATE = """\
# AMD Matrix Instruction Calculator golden data

Independent reference data for tilesim's AMD MFMA/SMFMAC/WMMA/SWMMAC register
layouts, produced by running AMD's own *Matrix Instruction Calculator*
(`matrix_calculator.py`, repository `ROCm/amd_matrix_instruction_calculator`)
and parsing what it prints. Only facts (the printed layouts and instruction
details) are stored here; the calculator's code is not part of this repository.

* Calculator: version {version}, commit `{commit}`
  (file sha256 `{file_sha}`).
* Generated by `tools/gen_calculator_golden.py` (about {elapsed:.0f} s on one CPU core,
  {calls} in-process calculator invocations).

## Regenerate

```sh
pip install tabulate numpy
python tools/gen_calculator_golden.py \\
    --calculator /path/to/matrix_calculator.py \\
    --calculator-commit {commit} \\
    --out tests/golden/amd_calculator
```

## Coverage

{coverage}

Architecture names are the calculator's: {arch_aliases}

Wave sizes: CDNA wave64 only; RDNA3/RDNA4 wave32 and wave64. Matrices: A, B,
C, D for dense instructions; A, B, D and the compression-index matrix `K`
(`--compression`, the calculator's `K[i][k]` / `compression[i][k]`) for the
sparse SMFMAC/SWMMAC instructions (they have no C).

Modifier combinations stored (all validated by the calculator itself):
`cbsz`/`abid` (every legal pair, ABID < 2^CBSZ) for the dense CDNA A matrix
and for `K` on CDNA3 SMFMACs (there ABID < number of compression-index sets);
`blgp` 0..7 for the CDNA B matrix; `opsel` for RDNA3 16-bit-output C/D
(0 and 4) and for RDNA4 SWMMAC `K` (0..sets-1). Not enumerated because they do
not move data (verified by the generator to leave the layout unchanged):
`neg`/`neg_hi`, `blgp` on CDNA3 FP64 (negation), `cbsz`/`abid` on sparse A.
{storage_note}

## Files

* `LAYOUTS_<arch>.npz`: array `records`, int16, shape (N, 7), columns
  `block, row, col, vgpr, lane, bit_lo, bit_hi`.
* `index_<arch>.json`: `"<inst>|<A|B|C|D|K>|w<32|64>|cbsz=<c>|abid=<a>|blgp=<b>|opsel=<o>"`
  -> `[offset, count]` into `records`; records of a key are sorted
  lexicographically.
* `sha256_<arch>.json`: same keys -> sha256 of that key's records as a C-contiguous
  little-endian int32 `(count, 7)` array (sorted as above).
* `details.json`: per architecture (aliases, wave sizes) and instruction:
  opcode, encoding, m/n/k/blocks, data types, GPR counts per wave size, alignment,
  cycles, FLOPs/Ops, co-execution, printed modifier support, equations, sparse flag,
  accepted modifier values per matrix and wave size, the enumerated combinations,
  and the raw `--detail-instruction` text. The calculator prints no alternative
  instruction spellings (`instruction_aliases` is always empty) and no pass counts
  (only cycles).

## Record format

One record per copy of an element (replicated/broadcast elements give several):
`(block, row, col, vgpr, lane, bit_lo, bit_hi)`.

* A: row = i, col = k. B: row = k, col = j. C/D: row = i, col = j.
  K: row = i, col = k where k is the *uncompressed* A column (0..K-1); the four k of
  one 4:2 group share the 4-bit field holding that group's two 2-bit indices.
* `vgpr` is the first register (offset from the operand's base VGPR) holding any
  bit of the element; `bit_lo..bit_hi` (inclusive) count across the register
  tuple from `vgpr`: `v[3:2]{{l}}` -> vgpr 2, bits 0-63; `v1{{l}}.[31:16]` -> vgpr 1,
  bits 16-31; `v0{{l}}.[23:16]` -> vgpr 0, bits 16-23; `v5{{l}}` -> vgpr 5, bits 0-31.
* `block` comes from the calculator's "Block b" headers (0 on RDNA); with CBSZ>0
  one table printed under "Blocks b0, b1, ..." yields records for each listed block.
* Sparse A (SMFMAC/SWMMAC): the calculator prints the container holding a 4:2
  group's two stored values (whole 32-bit register for 16-bit types, a 16-bit
  half for 8-bit, a byte for 4-bit), so the four k of a group share a location.
* With CBSZ/ABID (A) and BLGP (B) a record says where the hardware reads that
  block's/lane's element from.

## Calculator quirks worth knowing

* CDNA3 SMFMAC `K`: ABID selects the compression-index set only when CBSZ = 0;
  for CBSZ > 0 the calculator ignores ABID, so those layouts equal the default.
* CDNA SMFMAC A accepts CBSZ/ABID but its layout does not change (the calculator
  then prints a "Blocks 0..2^CBSZ-1" header over the single block's table).
* RDNA3 16-bit C/D: OPSEL=4 moves every element to bits 16-31 (OPSEL=0: bits 0-15),
  one element per 32-bit register half, i.e. only every other half is used.
* `details.json` echoes the calculator's tables as printed; e.g. it prints the same
  VOP3P opcode (0x54) for the two 8-bit-integer MFMAs of each CDNA generation
  (`v_mfma_i32_32x32x8i8`/`v_mfma_i32_16x16x16i8`, CDNA3
  `v_mfma_i32_32x32x16_i8`/`v_mfma_i32_16x16x32_i8`).

## Load one layout (numpy only)

```python
import json, numpy as np
d = "tests/golden/amd_calculator"
rec = np.load(f"{{d}}/LAYOUTS_cdna2.npz")["records"]
off, n = json.load(open(f"{{d}}/index_cdna2.json"))["v_mfma_f32_32x32x8f16|A|w64|cbsz=0|abid=0|blgp=0|opsel=0"]
a = rec[off:off + n]  # columns: block, row, col, vgpr, lane, bit_lo, bit_hi
```
"""


def write_readme(out_dir: str, result: dict[str, Any]) -> None:
    det = result["details"]
    calc_info = det["calculator"]
    lines = ["| arch | aliases | instructions | layout keys | records |", "|---|---|---|---|---|"]
    for arch, s in result["summary"].items():
        al = ", ".join(det["architectures"][arch]["aliases"])
        lines.append(f"| {arch} | {al} | {s['instructions']} | {s['keys']} | {s['records']} |")
    arch_aliases = "; ".join(f"`{a}` = {', '.join(v['aliases'])}" for a, v in det["architectures"].items())
    if result["stored_all"]:
        note = (f"\nAll enumerated combinations are stored in full "
                f"({result['layout_bytes'] / 1e6:.2f} MB of compressed `.npz`).")
    else:
        note = ("\n**Size limit:** only the default-modifier layouts (`cbsz=0|abid=0|blgp=0|opsel=0`) are "
                "stored as records; every other combination is available only as its sha256 in "
                f"`sha256_<arch>.json` ({result['layout_bytes'] / 1e6:.2f} MB stored).")
    text = README_TEMPLATE.format(
        version=calc_info["version"], commit=calc_info["commit"], file_sha=calc_info["file_sha256"],
        elapsed=max(10, round(result["elapsed_s"], -1)), calls=result["calls"], coverage="\n".join(lines),
        arch_aliases=arch_aliases, storage_note=note)
    with open(os.path.join(out_dir, "README.md"), "w") as fh:
        fh.write(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calculator", required=True, help="path to AMD's matrix_calculator.py")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--calculator-commit", default="unknown",
                    help="git commit of the calculator, recorded in README/details")
    ap.add_argument("--max-mb", type=float, default=20.0,
                    help="if all layouts compress to more than this, store default modifiers only")
    args = ap.parse_args(argv)
    calc = Calculator(args.calculator)
    result = generate(calc, args.out, args.max_mb, args.calculator_commit)
    write_readme(args.out, result)
    print(f"done in {result['elapsed_s']:.1f}s, {result['calls']} calculator calls, "
          f"layout data {result['layout_bytes'] / 1e6:.2f} MB, stored_all={result['stored_all']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
