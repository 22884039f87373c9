#!/usr/bin/env python3
"""Ask Triton itself about thousands of seeded random Gluon layout specs; record its answers.

Run it with a Python that has Triton (3.9.0 or 3.6.0; Triton is *not* a tilesim dependency)::

    /tmp/tritonvenv/bin/python   tools/sweep_triton_layouts.py --specs 20000   # -> sweep-3.9.jsonl.gz
    /tmp/triton36venv/bin/python tools/sweep_triton_layouts.py --specs 20000   # -> sweep-3.6.jsonl.gz

Every family is drawn from one seeded generator (``random.Random(seed)``): blocked, slice, dot
operands (MFMA, WMMA, mma.sync and blocked parents), MFMA v1-v4, WMMA v1-v3, NVIDIA mma v2/v3,
swizzled shared, NVMMA shared, shared linear, distributed linear, CGA layouts and batched ranks,
with a share of invalid parameters so that Triton's rejections are exercised too. The specs are
written in the Triton version's own spelling (``AMDWMMALayout`` takes ``warp_bases``/``reg_bases``
and ``rank`` in 3.9, ``warps_per_cta``/``tiles_per_warp`` in 3.6).

For each spec and each of its tensor shapes the file records Triton's ``to_linear_layout`` bases
(or the message it rejected the spec with), and once per spec the MLIR type Triton prints for it
(``tensor<64x64xf32, #ttg.amd_mfma<{...}>>`` or ``!ttg.memdesc<...>``) — the printed forms that
``tilesim.frameworks.ttg_text`` must parse. Some of Triton's checks abort the process (C++
assertions, ``LLVM ERROR``), so queries run in a forked worker; when it dies, the query it was on
is recorded as rejected with the abort message and a fresh worker goes on from the next one.

Output: gzip JSON lines; line 1 is a header (Triton version, seed, counts), then one spec per line::

    {"spec": {"layout": "BlockedLayout", ...}, "type": "tensor<...>" | null, "type_rejected": "...",
     "cases": [{"shape": [..], "bases": {"register": [[..]], "lane": .., "warp": .., "block": ..}},
               {"shape": [..], "rejected": "..."}]}

(shared layouts: ``"bases": {"offset": [..], "block": [..]}``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

# Triton's printed LinearLayout is read as gen_triton_golden reads it (stdlib only, like this tool)
try:
    from gen_triton_golden import _parse as _parse_linear  # run as a script: tools/ is on sys.path
except ModuleNotFoundError:
    from tools.gen_triton_golden import _parse as _parse_linear  # python -m tools.sweep_triton_layouts

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "triton_layouts"
MSG = 200  # characters of a rejection message kept


# --------------------------------------------------------------------------- random specs
def _p2(rng: random.Random, lo: int, hi: int) -> int:
    return 1 << rng.randint(lo, hi)


def _split(rng: random.Random, bits: int, rank: int) -> list[int]:
    """``2**bits`` spread over ``rank`` dims as powers of two."""
    out = [0] * rank
    for _ in range(bits):
        out[rng.randrange(rank)] += 1
    return [1 << b for b in out]


def _cga(rng: random.Random, rank: int) -> list[list[int]]:
    r = rng.random()
    if r < 0.75:
        return []
    if r < 0.78:  # invalid: wrong length or not a power of two
        return [[3] + [0] * (rank - 1)] if rng.random() < 0.5 else [[1] * (rank + 1)]
    out, used = [], {}
    for _ in range(rng.randint(1, 2)):
        if rng.random() < 0.15:
            out.append([0] * rank)  # a broadcast CTA
            continue
        d = rng.randrange(rank)
        used[d] = used.get(d, 0) + 1
        out.append([(1 << (used[d] - 1)) if i == d else 0 for i in range(rank)])
    return out


def _perm(rng: random.Random, n: int) -> list[int]:
    p = list(range(n))
    rng.shuffle(p)
    if rng.random() < 0.03:
        p[0] = p[-1]  # invalid
    return p


def blocked(rng: random.Random, rank: int | None = None) -> dict:
    rank = rank or rng.choice([1, 2, 2, 2, 3, 3, 4])
    spt = [_p2(rng, 0, 3) for _ in range(rank)]
    if rng.random() < 0.03:
        spt[0] = 3
    lanes = rng.choice([5, 5, 6]) if rng.random() > 0.05 else rng.choice([3, 4, 7])
    return {"layout": "BlockedLayout", "size_per_thread": spt, "threads_per_warp": _split(rng, lanes, rank),
            "warps_per_cta": _split(rng, rng.randint(0, 3), rank), "order": _perm(rng, rank),
            "cga_layout": _cga(rng, rank)}


_MFMA_MN = [(32, 32), (16, 16), (64, 4), (4, 64), (4, 4), (8, 8), (32, 16)]


def mfma(rng: random.Random, rank: int | None = None) -> dict:
    rank = rank or rng.choice([2, 2, 2, 3])
    m, n = rng.choice(_MFMA_MN[:4] * 6 + _MFMA_MN)
    spec = {"layout": "AMDMFMALayout", "version": rng.choice([1, 2, 3, 4] * 12 + [0, 5]),
            "instr_shape": [m, n, rng.choice([1, 2, 4, 8, 16, 32, 64, 128])], "transposed": rng.random() < 0.5,
            "warps_per_cta": _split(rng, rng.randint(0, 3), rank)}
    if rng.random() < 0.3:
        spec["element_bitwidth"] = rng.choice([32, 64, 64, 16])
    if rng.random() < 0.5:
        spec["tiles_per_warp"] = _split(rng, rng.randint(0, 2), rank)
    spec["cga_layout"] = _cga(rng, rank)
    return spec


def _tile_bases(rng: random.Random, rank: int) -> tuple[list[list[int]], list[list[int]]]:
    """WMMA 3.9 ``reg_bases``/``warp_bases``: every (dim, bit) of the tile grid in some order."""
    grid = _split(rng, rng.randint(0, 4), rank)
    if rank == 3 and rng.random() < 0.7:
        grid[0] = 1
    items = [(d, b) for d in range(rank) for b in range(grid[d].bit_length() - 1)]
    if rng.random() < 0.6:  # the usual order: lowest bits first, last dim first
        items.sort(key=lambda t: (t[1], -t[0]))
    else:
        rng.shuffle(items)
    reg, warp = [], []
    for d, b in items:
        (reg if rng.random() < 0.4 else warp).append([(1 << b) if i == d else 0 for i in range(rank)])
    if rng.random() < 0.08:
        warp.append([0] * rank)  # a broadcast warp
    if rng.random() < 0.03 and (reg or warp):
        (reg or warp).append(list((reg or warp)[0]))  # invalid: repeated
    if rng.random() < 0.02:
        warp.append([2] + [0] * (rank - 1) if rank else [])  # may leave a gap
    return reg, warp


def wmma(rng: random.Random, rank: int | None = None, triton: str = "3.9") -> dict:
    rank = rank or rng.choice([2, 2, 2, 3])
    version = rng.choice([1, 2, 3] * 12 + [0, 4])
    spec = {"layout": "AMDWMMALayout", "version": version, "transposed": rng.random() < 0.5}
    shape = None
    if rng.random() < 0.75:
        k = rng.choice({1: [16], 2: [16, 32], 3: [4, 32, 64, 128]}.get(version, [16]) * 5 + [8, 4, 16, 32, 128])
        shape = [16, 16, k] if rng.random() > 0.03 else [32, 32, k]
    if triton == "3.6":
        spec["warps_per_cta"] = _split(rng, rng.randint(0, 3), rank)
        if shape:
            spec["instr_shape"] = shape
        if rng.random() < 0.6:
            spec["tiles_per_warp"] = _split(rng, rng.randint(0, 3), rank)
    else:
        reg, warp = _tile_bases(rng, rank)
        spec["warp_bases"] = warp
        if reg or rng.random() < 0.5:
            spec["reg_bases"] = reg
        if shape:
            spec["instr_shape"] = shape
        if rng.random() < 0.5 or not (reg or warp):
            spec["rank"] = rank
    spec["cga_layout"] = _cga(rng, rank)
    return spec


def nvmma(rng: random.Random, rank: int | None = None) -> dict:
    major = rng.choice([2] * 10 + [3] * 6 + [1])
    rank = rank or (rng.choice([2, 2, 3]) if major == 2 else 2)
    minor = 0 if rng.random() > 0.03 else 1
    if major == 3:
        warps = _split(rng, rng.randint(0, 1), rank)
        warps[0] *= 4
        instr = [16, rng.choice([8, 16, 32, 64, 128, 256]), rng.choice([8, 16, 32])]
    else:
        warps = _split(rng, rng.randint(0, 3), rank)
        instr = [16, 8] if rank == 2 else [1, 16, 8]
        if rng.random() < 0.05:
            instr = [16, 16]
    return {"layout": "NVMMADistributedLayout", "version": [major, minor], "warps_per_cta": warps,
            "instr_shape": instr, "cga_layout": _cga(rng, rank)}


def dot_op(rng: random.Random, triton: str, rank: int | None = None) -> dict:
    rank = rank or rng.choice([2, 2, 2, 3])
    kind = rng.choice(["mfma", "mfma", "wmma", "wmma", "nvmma", "blocked"])
    parent = {"mfma": lambda: mfma(rng, rank), "wmma": lambda: wmma(rng, rank, triton),
              "nvmma": lambda: nvmma(rng, rank), "blocked": lambda: blocked(rng, rank)}[kind]()
    kw = 0 if kind == "blocked" and rng.random() < 0.9 else rng.choice([1, 2, 4, 8, 8, 16, 32, 0])
    return {"layout": "DotOperandLayout", "operand_index": rng.choice([0, 1]), "parent": parent, "k_width": kw}


def _unit(rank: int, d: int, x: int) -> list[int]:
    return [x if i == d else 0 for i in range(rank)]


def linear(rng: random.Random, rank: int | None = None) -> dict:
    rank = rank or rng.choice([1, 2, 2, 3])
    shape = [_p2(rng, 0, 6) for _ in range(rank)]
    bits = [_unit(rank, d, 1 << b) for d in range(rank) for b in range(shape[d].bit_length() - 1)]
    rng.shuffle(bits)
    out = {"reg_bases": [], "lane_bases": [], "warp_bases": [], "block_bases": []}
    for v in bits:
        out[rng.choice(["reg_bases", "lane_bases", "lane_bases", "warp_bases", "block_bases"])].append(v)
    for _ in range(rng.randint(0, 2)):
        out[rng.choice(["reg_bases", "lane_bases", "warp_bases"])].append([0] * rank)
    r = rng.random()
    if r < 0.04 and bits:
        out["reg_bases"].append(list(bits[0]))  # repeated basis
    elif r < 0.08 and rank >= 2 and all(s >= 2 for s in shape):
        out["lane_bases"].append([1] * rank)  # not one power of two in one dim
    elif r < 0.1 and out["lane_bases"]:
        out["lane_bases"].pop()  # leaves an element unheld
    return {"layout": "DistributedLinearLayout", **out, "shape": shape}


def slice_(rng: random.Random, triton: str) -> dict:
    rank = rng.choice([2, 2, 3])
    kind = rng.choice(["blocked", "blocked", "mfma", "wmma", "nvmma", "dot", "linear", "slice"])
    if kind == "slice":
        parent = {"layout": "SliceLayout", "dim": rng.randrange(3), "parent": blocked(rng, 3)}
    else:
        parent = {"blocked": lambda: blocked(rng, rank), "mfma": lambda: mfma(rng, rank),
                  "wmma": lambda: wmma(rng, rank, triton), "nvmma": lambda: nvmma(rng, 2),
                  "dot": lambda: dot_op(rng, triton, rank), "linear": lambda: linear(rng, rank)}[kind]()
    prank = 2 if kind == "slice" else len(parent.get("shape") or parent.get("warps_per_cta") or
                                           parent.get("parent", {}).get("warps_per_cta") or [0] * rank)
    dim = rng.randrange(prank) if rng.random() > 0.03 else prank
    return {"layout": "SliceLayout", "dim": dim, "parent": parent}


def swizzled(rng: random.Random) -> dict:
    rank = rng.choice([1, 2, 2, 2, 3])
    vals = [1, 2, 4, 8, 16] * 8 + [3, 6]
    return {"layout": "SwizzledSharedLayout", "vec": rng.choice(vals), "per_phase": rng.choice(vals),
            "max_phase": rng.choice(vals), "order": _perm(rng, rank), "cga_layout": _cga(rng, rank)}


def nvmma_shared(rng: random.Random) -> dict:
    rank = rng.choice([2, 2, 2, 3])
    ebw = rng.choice([8, 16, 16, 32, 64] * 6 + [4])
    fp4 = rng.random() < 0.1
    return {"layout": "NVMMASharedLayout", "swizzle_byte_width": rng.choice([0, 32, 64, 128] * 6 + [16]),
            "element_bitwidth": ebw, "rank": rank, "transposed": rng.random() < 0.4, "fp4_padded": fp4,
            "cga_layout": _cga(rng, rank)}


def shared_linear(rng: random.Random) -> dict:
    rank = rng.choice([1, 2, 2, 3])
    shape = [_p2(rng, 0, 6) for _ in range(rank)]
    bases = [_unit(rank, d, 1 << b) for d in range(rank) for b in range(shape[d].bit_length() - 1)]
    if rng.random() < 0.5:
        rng.shuffle(bases)
    if rank >= 2 and rng.random() < 0.5:  # an XOR swizzle: outer-dim bits also flip inner-dim bits
        inner = rng.randrange(rank)
        for v in bases:
            if not v[inner] and shape[inner] > 1 and rng.random() < 0.6:
                v[inner] = 1 << rng.randrange(shape[inner].bit_length() - 1)
    block = []
    if rng.random() < 0.2:
        block = [[0] * rank]
    if rng.random() < 0.05 and bases:
        bases.append(list(bases[0]))  # not invertible
    return {"layout": "SharedLinearLayout", "offset_bases": bases, "block_bases": block,
            "alignment": rng.choice([16, 16, 32, 128, 8])}


FAMILIES = {  # name -> (weight, generator(rng, triton))
    "blocked": (12, lambda rng, t: blocked(rng)),
    "mfma": (12, lambda rng, t: mfma(rng)),
    "wmma": (14, lambda rng, t: wmma(rng, None, t)),
    "nvmma": (6, lambda rng, t: nvmma(rng)),
    "dot_operand": (18, lambda rng, t: dot_op(rng, t)),
    "slice": (10, lambda rng, t: slice_(rng, t)),
    "linear": (8, lambda rng, t: linear(rng)),
    "swizzled_shared": (7, lambda rng, t: swizzled(rng)),
    "nvmma_shared": (7, lambda rng, t: nvmma_shared(rng)),
    "shared_linear": (6, lambda rng, t: shared_linear(rng)),
}


def spec_rank(spec: dict) -> int:
    k = spec["layout"]
    if k in ("SliceLayout",):
        return spec_rank(spec["parent"]) - 1
    if k == "DotOperandLayout":
        return spec_rank(spec["parent"])
    if k == "DistributedLinearLayout":
        return len(spec["shape"])
    if k == "SharedLinearLayout":
        return len(spec["offset_bases"][0]) if spec["offset_bases"] else 1
    if k == "NVMMASharedLayout":
        return spec["rank"]
    if k in ("SwizzledSharedLayout", "BlockedLayout"):
        return len(spec["order"])
    if k == "AMDWMMALayout" and "warps_per_cta" not in spec:
        return spec.get("rank") or len(next(iter(spec.get("warp_bases", []) + spec.get("reg_bases", [])), [0, 0]))
    return len(spec["warps_per_cta"])


def shapes(rng: random.Random, spec: dict) -> list[list[int]]:
    k = spec["layout"]
    if k == "DistributedLinearLayout":
        return [spec["shape"]] + ([[2 * s for s in spec["shape"]]] if rng.random() < 0.05 else [])
    if k == "SharedLinearLayout":
        rank = spec_rank(spec)
        size = [1] * rank
        for v in spec["offset_bases"]:
            for d, x in enumerate(v):
                size[d] = max(size[d], 1 << x.bit_length())
        return [size]
    rank = max(spec_rank(spec), 1)
    out = []
    for _ in range(rng.choice([1, 2, 2, 3])):
        budget = rng.randint(2, 14)
        s = _split(rng, budget, rank)
        if rank == 3 and rng.random() < 0.7:
            s = [min(s[0], 4)] + s[1:]
        if k == "NVMMASharedLayout":
            s = [max(x, 8) for x in s[:-1]] + [max(s[-1], 64)]
        if rng.random() < 0.01:
            s[0] = 48  # not a power of two
        if s not in out:
            out.append(s)
    return out


def generate(seed: int, n: int, triton: str) -> list[tuple[dict, list[list[int]]]]:
    rng = random.Random(seed)
    names = list(FAMILIES)
    weights = [FAMILIES[k][0] for k in names]
    out = []
    for _ in range(n):
        fam = rng.choices(names, weights)[0]
        spec = FAMILIES[fam][1](rng, triton)
        out.append((spec, shapes(rng, spec)))
    return out


# --------------------------------------------------------------------------- Triton side
def _build(spec: dict):
    import triton.experimental.gluon.language as gl  # noqa: PLC0415
    from triton.experimental.gluon.language import amd  # noqa: PLC0415

    p = {k: (_build(v) if k == "parent" else v) for k, v in spec.items() if k != "layout"}
    cls = getattr(amd, spec["layout"], None) or getattr(gl, spec["layout"])
    return cls(**p)


def _one(builder, f32, kind: str, spec: dict, shape: list[int]) -> dict:
    try:
        lay = _build(spec)
        attr = lay._to_ir(builder)
        if kind == "attr":
            return {"type": None}
        if kind == "type":
            shared = "Shared" in spec["layout"]
            ty = (builder.get_shared_mem_desc_ty(f32, shape, attr, shape) if shared
                  else builder.get_distributed_ty(f32, shape, attr))
            return {"type": str(ty)}
        return {"ok": repr(builder.to_linear_layout(attr, shape))}
    except BaseException as e:  # noqa: BLE001 - every rejection is data
        return {"err": f"{type(e).__name__}: {e}".strip()}


def _answer(res: dict, shape: list[int]) -> dict:
    if "type" in res:
        return res
    if "ok" in res:
        got = _parse_linear(res["ok"])
        if "offset_bases" in got:
            return {"bases": {"offset": got["offset_bases"], "block": got.get("block_bases", [])}}
        if got["shape"] != list(shape):
            return {"rejected": f"Triton returned shape {got['shape']} for requested {shape}"}
        return {"bases": {"register": got["reg_bases"], "lane": got["lane_bases"], "warp": got["warp_bases"],
                          "block": got["block_bases"]}}
    return {"rejected": " ".join(res["err"].split())[:MSG]}


def _warm(builder, f32) -> None:
    """Run every layout class once here, in the parent: Triton fills caches on first use (it reads and
    tokenizes its own sources), and a forked worker then inherits them instead of redoing that work."""
    import triton  # noqa: PLC0415

    v39 = triton.__version__.startswith("3.9")
    blocked = {"layout": "BlockedLayout", "size_per_thread": [1, 4], "threads_per_warp": [8, 4],
               "warps_per_cta": [1, 1], "order": [1, 0]}
    mfma = {"layout": "AMDMFMALayout", "version": 3, "instr_shape": [32, 32, 8], "transposed": False,
            "warps_per_cta": [1, 1]}
    wmma = ({"layout": "AMDWMMALayout", "version": 2, "transposed": False, "warp_bases": [[0, 1]], "reg_bases": []}
            if v39 else {"layout": "AMDWMMALayout", "version": 2, "transposed": False, "warps_per_cta": [1, 2]})
    distributed = [
        (blocked, [8, 16]), (mfma, [32, 32]), (wmma, [16, 32]),
        ({"layout": "NVMMADistributedLayout", "version": [2, 0], "warps_per_cta": [1, 1], "instr_shape": [16, 8]},
         [16, 8]),
        ({"layout": "DotOperandLayout", "operand_index": 0, "parent": mfma, "k_width": 4}, [32, 16]),
        ({"layout": "DotOperandLayout", "operand_index": 1, "parent": wmma, "k_width": 8}, [16, 32]),
        ({"layout": "SliceLayout", "dim": 0, "parent": blocked}, [16]),
        ({"layout": "DistributedLinearLayout", "reg_bases": [[1, 0]], "lane_bases": [[0, 1], [0, 2], [0, 4], [0, 8],
                                                                                     [2, 0]],
          "warp_bases": [[4, 0]], "block_bases": [], "shape": [8, 16]}, [8, 16])]
    shared = [({"layout": "SwizzledSharedLayout", "vec": 4, "per_phase": 2, "max_phase": 4, "order": [1, 0]}, [16, 16]),
              ({"layout": "NVMMASharedLayout", "swizzle_byte_width": 64, "element_bitwidth": 16}, [16, 64]),
              ({"layout": "SharedLinearLayout", "offset_bases": [[0, 1], [0, 2], [1, 0], [2, 0]]}, [4, 4])]
    for spec, shape in distributed + shared:
        _one(builder, f32, "type", spec, shape)
        if v39 or (spec, shape) in distributed:  # 3.6's binding aborts on a shared layout's conversion
            _one(builder, f32, "linear", spec, shape)


def run_queries(queries: list[tuple[str, dict, list[int]]]) -> list[dict]:
    """Triton's answer for every query, in forked workers (a C++ abort kills one worker, not the sweep)."""
    from triton._C.libtriton import gluon_ir, ir  # noqa: PLC0415

    ctx = ir.context()
    ir.load_dialects(ctx)
    builder = gluon_ir.GluonOpBuilder(ctx)
    f32 = builder.get_float_ty()
    _warm(builder, f32)
    answers: list[dict] = []
    shown = 0
    while len(answers) < len(queries):
        start = len(answers)
        if start - shown >= 2000 and sys.stderr.isatty():  # progress on a terminal only
            print(f"  {start}/{len(queries)} queries", file=sys.stderr, flush=True)
            shown = start
        r, w = os.pipe()
        err = tempfile.TemporaryFile()
        pid = os.fork()
        if pid == 0:  # worker: one JSON line per query, in order
            os.close(r)
            os.dup2(err.fileno(), 2)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # an abort writes no core file
            for kind, spec, shape in queries[start:]:
                os.write(w, (json.dumps(_one(builder, f32, kind, spec, shape)) + "\n").encode())
            os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            for line in f:
                if line.endswith(b"\n"):  # a partial last line is the worker dying mid-write
                    answers.append(_answer(json.loads(line), queries[len(answers)][2]))
        os.waitpid(pid, 0)
        if len(answers) < len(queries):  # the worker died on queries[len(answers)]
            err.seek(0)
            text = err.read().decode(errors="replace")
            lines = [x for x in text.splitlines() if "Assertion" in x or "ERROR" in x or "error" in x.lower()]
            said = [x for x in lines if x.startswith(("error:", "LLVM ERROR"))]  # the diagnostic, when printed
            msg = (said or lines or text.strip().splitlines() or ["process aborted"])[-1]
            if "Assertion" in msg:  # drop the build path: "python: /path/File.h:123: ... Assertion `x' failed."
                msg = msg[msg.index("Assertion"):]
            elif "LLVM ERROR" in msg:
                msg = msg[msg.index("LLVM ERROR"):]
            answers.append({"rejected": ("abort: " + " ".join(msg.split()))[:MSG]})
        err.close()
    return answers


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--specs", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=20261125)
    ap.add_argument("--out", type=Path, default=None, help="default: tests/golden/triton_layouts/sweep-<ver>.jsonl.gz")
    args = ap.parse_args(argv)
    import triton  # noqa: PLC0415

    ver = ".".join(triton.__version__.split(".")[:2])
    if ver not in ("3.6", "3.9"):
        print(f"Triton {triton.__version__}: this sweep is written for 3.6 and 3.9", file=sys.stderr)
        return 2
    t0 = time.time()
    specs = generate(args.seed, args.specs, ver)
    os.nice(10)  # the machine is shared: background priority
    # Phase 1: can Triton build the layout attribute at all? A spec it refuses there (often by an
    # abort) is refused for every shape; phase 2 asks only about the others.
    built = run_queries([("attr", spec, shps[0]) for spec, shps in specs])
    queries = []
    for (spec, shps), b in zip(specs, built):
        if "rejected" not in b:
            queries.append(("type", spec, shps[0]))
            queries += [("linear", spec, s) for s in shps]
    it = iter(run_queries(queries))
    out = args.out or OUT / f"sweep-{ver}.jsonl.gz"
    lines, ncases, nok = [], 0, 0
    for (spec, shps), b in zip(specs, built):
        if "rejected" in b:
            entry = {"spec": spec, "type": None, "type_rejected": b["rejected"],
                     "cases": [{"shape": s, "rejected": b["rejected"]} for s in shps]}
        else:
            t = next(it)
            entry = {"spec": spec, "type": t.get("type")}
            if "rejected" in t:
                entry["type_rejected"] = t["rejected"]
            entry["cases"] = [{"shape": s, **next(it)} for s in shps]
        ncases += len(shps)
        nok += sum("bases" in c for c in entry["cases"])
        lines.append(json.dumps(entry, separators=(",", ":")))
    head = {"triton_version": triton.__version__, "seed": args.seed, "specs": len(specs), "cases": ncases,
            "accepted": nok, "generator": "tools/sweep_triton_layouts.py"}
    with gzip.open(out, "wt", compresslevel=9) as f:
        f.write(json.dumps(head) + "\n" + "\n".join(lines) + "\n")
    print(f"{len(specs)} specs, {ncases} cases ({nok} accepted by Triton) in {time.time() - t0:.0f}s -> {out} "
          f"({out.stat().st_size} bytes)", flush=True)
    sys.stdout.flush()
    os._exit(0)  # skip nanobind's leak report at interpreter exit


if __name__ == "__main__":
    main()
