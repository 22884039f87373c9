#!/usr/bin/env python3
"""Record Triton's own layout conversions as golden data for ``tests/test_gluon.py``.

Run it with a Python that has Triton (3.9 was used; Triton is *not* a tilesim dependency)::

    /tmp/tritonvenv/bin/python tools/gen_triton_golden.py [--out tests/golden/triton_layouts]

For each parameter set in a broad sweep it builds the Gluon layout object, asks Triton's
``GluonOpBuilder.to_linear_layout(layout, shape)`` for the linear layout, and writes the bases
(register, lane, warp, block) exactly as Triton prints them, together with the Triton version.
Parameter sets Triton rejects are recorded too, with Triton's message: tilesim must reject them
as well (at most ``MAX_SAME_REJECTION`` with one message, which keeps the files small).
Some of Triton's checks are C++ assertions that abort the process, so every query runs in a
forked child; the parent reads its answer (or the assertion text) through a pipe. ``--sample K``
asks about every K-th parameter set only (the live test in ``tests/test_gluon.py`` uses it).

Entries are plain JSON so tilesim can read them without Triton: one line per spec, with the
tensor shapes it was asked for::

    {"spec": {"layout": "AMDMFMALayout", "version": 3, ...}, "cases": [
        {"shape": [64, 64], "bases": {"register": [[1, 0], ...], "lane": [...], "warp": [...], "block": []}},
        {"shape": [48, 64], "rejected": "Assertion `...' failed."}]}

``AMDWMMALayout`` specs are written with the parameters tilesim takes (``warps_per_cta``,
``tiles_per_warp``); Triton 3.9's class takes ``warp_bases``/``reg_bases`` instead, and
:func:`wmma_bases` converts (warps and tiles with dim 1 fastest, in units of instruction tiles —
the conversion ``tilesim.frameworks.gluon.AMDWMMALayout`` documents).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "triton_layouts"


# --------------------------------------------------------------------------- Triton side
def _triton():
    from triton._C.libtriton import gluon_ir, ir  # noqa: PLC0415

    ctx = ir.context()
    ir.load_dialects(ctx)
    return ctx, gluon_ir.GluonOpBuilder(ctx)


def _log2(n: int) -> int:
    return n.bit_length() - 1


def wmma_bases(warps_per_cta: list[int], tiles_per_warp: list[int] | None) -> tuple[list, list]:
    """warp_bases/reg_bases (instruction-tile units) for warps_per_cta/tiles_per_warp, last dim fastest."""
    rank = len(warps_per_cta)
    tiles = tiles_per_warp or [1] * rank

    def unit(d: int, x: int) -> list[int]:
        return [x if i == d else 0 for i in range(rank)]

    reg = [unit(d, 1 << i) for d in reversed(range(rank)) for i in range(_log2(tiles[d]))]
    warp = [unit(d, tiles[d] << i) for d in reversed(range(rank)) for i in range(_log2(warps_per_cta[d]))]
    return warp, reg


def build(spec: dict):
    """The Triton Gluon layout object for a JSON spec."""
    import triton.experimental.gluon.language as gl  # noqa: PLC0415
    from triton.experimental.gluon.language.amd import AMDMFMALayout, AMDWMMALayout  # noqa: PLC0415

    p = {k: v for k, v in spec.items() if k != "layout"}
    kind = spec["layout"]
    if kind == "AMDMFMALayout":
        return AMDMFMALayout(**p)
    if kind == "AMDWMMALayout":
        warp, reg = wmma_bases(p.pop("warps_per_cta"), p.pop("tiles_per_warp", None))
        return AMDWMMALayout(p["version"], p["transposed"], warp, reg, p.get("instr_shape"), p.get("cga_layout", []),
                             len(spec["warps_per_cta"]))
    if kind == "BlockedLayout":
        return gl.BlockedLayout(**p)
    if kind == "SliceLayout":
        return gl.SliceLayout(p["dim"], build(p["parent"]))
    if kind == "DotOperandLayout":
        return gl.DotOperandLayout(p["operand_index"], build(p["parent"]), p["k_width"])
    if kind == "NVMMADistributedLayout":
        return gl.NVMMADistributedLayout(**p)
    if kind == "SwizzledSharedLayout":
        return gl.SwizzledSharedLayout(**p)
    raise ValueError(kind)


def _parse(text: str) -> dict:
    # DistributedLinearLayout(reg_bases=[[...]], lane_bases=..., warp_bases=..., block_bases=..., shape=[...])
    import ast  # noqa: PLC0415

    body = text[text.index("(") + 1:text.rindex(")")]
    out = {}
    for part in ("reg_bases", "lane_bases", "warp_bases", "block_bases", "shape", "offset_bases"):
        if part + "=" not in body:  # SharedLinearLayout has offset_bases and no shape
            continue
        start = body.index(part + "=") + len(part) + 1
        depth, i = 0, start
        while True:
            depth += body[i] == "["
            depth -= body[i] == "]"
            i += 1
            if depth == 0:
                break
        out[part] = ast.literal_eval(body[start:i])
    return out


def query(builder, spec: dict, shape: list[int]) -> dict:
    """Triton's answer for one parameter set, in a forked child (C++ asserts abort)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        os.dup2(w, 2)
        try:
            lay = build(spec)
            res = {"ok": repr(builder.to_linear_layout(lay._to_ir(builder), shape))}
        except BaseException as e:  # noqa: BLE001 - every rejection is data
            res = {"err": f"{type(e).__name__}: {e}".strip()}
        os.write(w, b"\0" + json.dumps(res).encode())
        os._exit(0)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 1 << 16):
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    data = b"".join(chunks).decode(errors="replace")
    if "\0" in data:
        res = json.loads(data.rsplit("\0", 1)[1])
    else:  # aborted: keep the assertion / fatal-error line
        lines = [x for x in data.splitlines() if "Assertion" in x or "ERROR" in x or "error" in x]
        res = {"err": (lines[0] if lines else data.strip()[:300] or "process aborted")}
    if "ok" in res:
        got = _parse(res["ok"])
        if "offset_bases" in got:
            return {"bases": {"offset": got["offset_bases"], "block": got["block_bases"]}}
        if got["shape"] != list(shape):
            return {"rejected": f"Triton returned shape {got['shape']} for requested {shape}"}
        return {"bases": {"register": got["reg_bases"], "lane": got["lane_bases"],
                          "warp": got["warp_bases"], "block": got["block_bases"]}}
    msg = res["err"]
    if "/project/" in msg:  # strip the build path, keep the message
        msg = msg.split(": ", 1)[-1] if msg.startswith("python:") else msg
    return {"rejected": msg[:300]}


# --------------------------------------------------------------------------- the sweep
WARPS = [[1, 1], [2, 2], [4, 1], [1, 4]]
MAX_SAME_REJECTION = 12


def _shapes(base0: int, base1: int) -> list[list[int]]:
    """Tensor shapes around a CTA tile: equal, larger in each dim, smaller (broadcast)."""
    out = [[base0, base1], [base0 * 2, base1 * 4], [base0 * 4, base1], [max(base0 // 4, 1), max(base1 // 2, 1)]]
    uniq = []
    for s in out:
        if s not in uniq:
            uniq.append(s)
    return uniq


def mfma_specs():
    # K does not change the result layout (Triton only checks M x N), so each M x N shape is swept
    # with one K per version, cycling through the K values the instructions have.
    ks = {(32, 32): [4, 8, 16, 64], (16, 16): [4, 16, 32, 128], (64, 4): [4, 4, 4, 4], (4, 64): [4, 4, 4, 4]}
    for version, (mn, kk), transposed in itertools.product(range(1, 5), ks.items(), (False, True)):
        k = kk[version - 1]
        if mn == (64, 4) and not transposed:  # Triton rejects this one; keep a few of its rejections
            grid = [([2, 2], None)]
        else:
            grid = list(itertools.product(WARPS, (None, [2, 2], [1, 2], [2, 1])))
        for ebw in (None, 32, 64):
            for warps, tiles in grid:
                if ebw is not None and (warps, tiles) not in (([2, 2], None), ([1, 4], [2, 1]), ([1, 1], [1, 2])):
                    continue
                spec = {"layout": "AMDMFMALayout", "version": version, "instr_shape": [*mn, k],
                        "transposed": transposed, "warps_per_cta": warps}
                if ebw is not None:
                    spec["element_bitwidth"] = ebw
                if tiles is not None:
                    spec["tiles_per_warp"] = tiles
                t = tiles or [1, 1]
                for shape in _shapes(mn[0] * warps[0] * t[0], mn[1] * warps[1] * t[1]):
                    yield spec, shape


def mfma_rejects():
    good = {"layout": "AMDMFMALayout", "version": 3, "instr_shape": [32, 32, 8], "transposed": False,
            "warps_per_cta": [1, 1]}
    for change in ({"version": 0}, {"version": 5}, {"instr_shape": [8, 8, 4]}, {"instr_shape": [32, 16, 8]},
                   {"instr_shape": [32, 32]}, {"element_bitwidth": 16}, {"warps_per_cta": [3, 1]},
                   {"tiles_per_warp": [3, 1]}):
        yield {**good, **change}, [64, 64]
    yield good, [48, 64]


def wmma_specs():
    for version, instr, transposed in itertools.product((1, 2, 3), ([16, 16, 16], [16, 16, 32], [16, 16, 4],
                                                                    [16, 16, 64], [16, 16, 128], [32, 16, 32]),
                                                        (False, True)):
        for warps, tiles in itertools.product(WARPS, (None, [2, 2], [2, 1])):
            spec = {"layout": "AMDWMMALayout", "version": version, "transposed": transposed,
                    "warps_per_cta": warps, "instr_shape": instr}
            if tiles is not None:
                spec["tiles_per_warp"] = tiles
            t = tiles or [1, 1]
            for shape in _shapes(instr[0] * warps[0] * t[0], instr[1] * warps[1] * t[1]):
                yield spec, shape
    for version in (1, 2, 3, 4):  # instr_shape left to Triton's default
        yield {"layout": "AMDWMMALayout", "version": version, "transposed": False, "warps_per_cta": [2, 1]}, [32, 16]


def _mfma(version, mnk, transposed=False, warps=(2, 2)):
    return {"layout": "AMDMFMALayout", "version": version, "instr_shape": list(mnk), "transposed": transposed,
            "warps_per_cta": list(warps)}


def _wmma(version, instr, transposed=False, warps=(2, 2)):
    return {"layout": "AMDWMMALayout", "version": version, "transposed": transposed, "warps_per_cta": list(warps),
            "instr_shape": list(instr)}


def _blocked(spt, tpw, wpc, order):
    return {"layout": "BlockedLayout", "size_per_thread": spt, "threads_per_warp": tpw, "warps_per_cta": wpc,
            "order": order}


def _nvmma(warps, instr=(16, 8)):
    return {"layout": "NVMMADistributedLayout", "version": [2, 0], "warps_per_cta": list(warps),
            "instr_shape": list(instr)}


def _wmma_tiled(version, instr, transposed, warps, tiles):
    spec = _wmma(version, instr, transposed, warps)
    spec["tiles_per_warp"] = list(tiles)
    return spec


def dot_specs():
    parents = []
    for version in range(1, 5):
        for mnk in ([32, 32, 8], [16, 16, 16], [16, 16, 32], [64, 4, 4], [4, 64, 4]):
            for transposed, warps in ((False, (2, 2)), (True, (1, 4)) if version % 2 else (False, (4, 1))):
                parents.append((_mfma(version, mnk, transposed, warps), mnk))
    for version, mnk in ((3, [32, 32, 8]), (4, [16, 16, 32])):
        for extra in ({"tiles_per_warp": [2, 2]}, {"tiles_per_warp": [1, 2]}, {"element_bitwidth": 64},
                      {"tiles_per_warp": [2, 1], "element_bitwidth": 64}):
            parents.append(({**_mfma(version, mnk, False, (2, 2)), **extra}, mnk))
    # Only the instruction shapes each WMMA version has (the others are the wmma family's rejections).
    for version, instrs in ((1, ([16, 16, 16],)), (2, ([16, 16, 16], [16, 16, 32])),
                            (3, ([16, 16, 4], [16, 16, 32], [16, 16, 64], [16, 16, 128]))):
        for instr in instrs:
            for transposed, warps in ((False, (2, 2)), (True, (4, 1))):
                parents.append((_wmma(version, instr, transposed, warps), instr))
            parents.append((_wmma_tiled(version, instr, False, (2, 1), (2, 2)), instr))
            parents.append((_wmma_tiled(version, instr, True, (1, 2), (1, 2)), instr))
    for warps in ((1, 1), (2, 2), (4, 1), (1, 4)):
        parents.append((_nvmma(warps), [16, 8, 16]))
    for spt, tpw, wpc, order in (([1, 4], [8, 8], [2, 2], [1, 0]), ([2, 2], [4, 8], [1, 4], [0, 1]),
                                 ([4, 1], [16, 4], [4, 1], [0, 1]), ([1, 1], [8, 4], [2, 2], [1, 0])):
        parents.append((_blocked(spt, tpw, wpc, order), [16, 16, 16]))
    for (parent, mnk), op, kw in itertools.product(parents, (0, 1), (0, 1, 2, 4, 8, 16, 32)):
        spec = {"layout": "DotOperandLayout", "operand_index": op, "parent": parent, "k_width": kw}
        w = parent["warps_per_cta"]
        t = parent.get("tiles_per_warp", [1, 1])
        m, n = mnk[0] * w[0] * t[0], mnk[1] * w[1] * t[1]
        kk = max(mnk[2], 8)
        shapes = ([[m, kk], [2 * m, 4 * kk], [max(m // 4, 1), kk // 2]] if op == 0
                  else [[kk, n], [4 * kk, 2 * n], [kk // 2, max(n // 4, 1)]])
        for shape in shapes:
            yield spec, shape


def blocked_specs():
    spts = ([1, 1], [1, 4], [2, 2], [4, 1], [1, 8])
    tpws = ([8, 8], [4, 16], [16, 4], [2, 32], [1, 64], [4, 8], [8, 4], [32, 1])
    for spt, tpw, wpc, order in itertools.product(spts, tpws, ([1, 1], [2, 2], [4, 1], [1, 4]), ([1, 0], [0, 1])):
        c0, c1 = spt[0] * tpw[0] * wpc[0], spt[1] * tpw[1] * wpc[1]
        for shape in ([c0, c1], [2 * c0, 4 * c1], [max(c0 // 4, 1), max(c1 // 2, 1)], [1, 1]):
            yield _blocked(spt, tpw, wpc, order), shape
    for spt, tpw, wpc in (([4], [64], [2]), ([2], [32], [4]), ([1], [32], [1])):
        for shape in ([64], [1024], [8]):
            yield _blocked(spt, tpw, wpc, [0]), shape
    for order in ([2, 1, 0], [0, 1, 2], [1, 2, 0]):
        for shape in ([4, 8, 16], [2, 64, 64]):
            yield _blocked([1, 2, 4], [2, 4, 4], [2, 1, 2], order), shape
    for bad in (_blocked([1, 3], [8, 8], [1, 1], [1, 0]), _blocked([1, 1], [8, 8], [1, 1], [0, 0]),
                _blocked([1, 1], [8, 8], [1, 1], [1, 0, 2]), _blocked([1, 1], [8, 8, 1], [1, 1], [1, 0])):
        yield bad, [16, 16]


def slice_specs():
    parents = [_blocked([1, 4], [8, 8], [2, 2], [1, 0]), _blocked([2, 1], [4, 8], [1, 4], [0, 1]),
               _blocked([1, 1], [32, 2], [4, 1], [1, 0])]
    for v in (1, 2, 3, 4):
        parents += [_mfma(v, [32, 32, 8]), _mfma(v, [16, 16, 16], True, (4, 1))]
    for v in (1, 2, 3):
        parents += [_wmma(v, [16, 16, 16] if v < 3 else [16, 16, 32]),
                    _wmma(v, [16, 16, 16] if v < 3 else [16, 16, 32], True, (1, 4))]
    parents += [_nvmma((2, 2)), {"layout": "NVMMADistributedLayout", "version": [3, 0], "warps_per_cta": [4, 2],
                                 "instr_shape": [16, 64, 16]}]
    parents += [{"layout": "DotOperandLayout", "operand_index": op, "parent": _mfma(3, [16, 16, 16]), "k_width": 4}
                for op in (0, 1)]
    for parent, dim in itertools.product(parents, (0, 1)):
        for n in (1, 4, 16, 64, 256):
            yield {"layout": "SliceLayout", "dim": dim, "parent": parent}, [n]
    blocked3 = _blocked([1, 2, 4], [2, 4, 4], [2, 1, 2], [2, 1, 0])
    for outer, inner in ((0, 1), (1, 0), (2, 1), (1, 1)):
        nested = {"layout": "SliceLayout", "dim": inner, "parent": {"layout": "SliceLayout", "dim": outer,
                                                                    "parent": blocked3}}
        for n in (2, 32, 128):
            yield nested, [n]
        for shape in ([4, 8], [64, 16]):
            yield {"layout": "SliceLayout", "dim": outer, "parent": blocked3}, shape
    for dim, parent in ((2, parents[0]), (-1, parents[0]), (0, _blocked([4], [64], [2], [0]))):
        yield {"layout": "SliceLayout", "dim": dim, "parent": parent}, [64]


def nvmma_specs():
    for warps in ([1, 1], [2, 2], [4, 1], [1, 4], [2, 4]):
        for shape in ([16, 8], [64, 64], [16 * warps[0], 8 * warps[1]], [8, 8], [128, 32]):
            yield _nvmma(warps), shape
    for instr, shape in (((16, 16), [64, 64]), ((16, 32), [64, 128]), ((16, 16), [8, 8]), ((32, 8), [64, 64]),
                         ((16, 8, 16), [64, 64])):
        yield _nvmma([2, 2], instr), shape
    for warps, n in (([4, 1], 64), ([4, 1], 256), ([8, 1], 128), ([4, 2], 32), ([2, 2], 64), ([1, 4], 64)):
        for shape in ([64, 64], [16 * warps[0], n * warps[1]], [256, 512], [16, 16]):
            yield {"layout": "NVMMADistributedLayout", "version": [3, 0], "warps_per_cta": warps,
                   "instr_shape": [16, n, 16]}, shape
    for bad in ([1, 0], [4, 0], [2, 1], [3]):
        yield {"layout": "NVMMADistributedLayout", "version": bad, "warps_per_cta": [2, 2], "instr_shape": [16, 8]}, \
            [64, 64]
    for op in (0, 1):  # Hopper: A may come from registers, B only from shared memory
        parent = {"layout": "NVMMADistributedLayout", "version": [3, 0], "warps_per_cta": [4, 1],
                  "instr_shape": [16, 64, 16]}
        for kw in (1, 2, 4):
            yield {"layout": "DotOperandLayout", "operand_index": op, "parent": parent, "k_width": kw}, [64, 64]


def shared_specs():
    for vec, per_phase, max_phase in itertools.product((1, 2, 4, 8, 16), (1, 2, 4), (1, 2, 4, 8)):
        for order in ([1, 0], [0, 1]):
            spec = {"layout": "SwizzledSharedLayout", "vec": vec, "per_phase": per_phase, "max_phase": max_phase,
                    "order": order}
            for shape in ([16, 32], [64, 8], [4, 4], [128, 64]):
                yield spec, shape
    for order, shape in (([0], [64]), ([2, 1, 0], [2, 16, 32]), ([0, 2, 1], [8, 4, 16]), ([1, 0, 2], [4, 32, 2])):
        yield {"layout": "SwizzledSharedLayout", "vec": 4, "per_phase": 2, "max_phase": 4, "order": order}, shape
    for bad in ({"vec": 3}, {"per_phase": 0}, {"max_phase": 6}, {"order": [0, 0]}):
        yield {"layout": "SwizzledSharedLayout", "vec": 4, "per_phase": 1, "max_phase": 4, "order": [1, 0], **bad}, \
            [16, 16]


def cga_specs():
    """Layouts spread over a grid of CTAs (``cga_layout``: block bases in CTA units), incl. broadcast."""
    grids = ([[1, 0]], [[0, 1]], [[0, 1], [1, 0]], [[1, 0], [2, 0]], [[0, 0]], [[0, 1], [0, 0]])
    bases = [(_blocked([1, 4], [8, 8], [2, 2], [1, 0]), [32, 32]), (_blocked([2, 1], [4, 8], [1, 4], [0, 1]), [8, 32]),
             (_mfma(3, [32, 32, 8]), [64, 64]), (_mfma(4, [16, 16, 32], True, (1, 4)), [16, 64]),
             (_wmma(2, [16, 16, 16]), [32, 32]), (_wmma(1, [16, 16, 16], True, (4, 1)), [64, 16]),
             (_nvmma((2, 2)), [32, 16])]
    for (base, tile), grid in itertools.product(bases, grids):
        spec = {**base, "cga_layout": grid}
        for shape in (tile, [tile[0] * 4, tile[1] * 2], [max(tile[0] // 4, 1), tile[1]], [2, 2]):
            yield spec, shape
        for op in (0, 1):
            if base["layout"] != "BlockedLayout":
                kw = 8 if base["layout"] == "AMDWMMALayout" else 4
                yield {"layout": "DotOperandLayout", "operand_index": op, "parent": spec, "k_width": kw}, \
                    [tile[0] * 2, 64] if op == 0 else [64, tile[1] * 2]
            else:
                yield {"layout": "DotOperandLayout", "operand_index": op, "parent": spec, "k_width": 0}, [64, 64]
        for dim in (0, 1):
            yield {"layout": "SliceLayout", "dim": dim, "parent": spec}, [tile[1 - dim] * 2]
    yield {**_blocked([1, 4], [8, 8], [2, 2], [1, 0]), "cga_layout": [[1, 0, 0]]}, [32, 32]
    yield {**_blocked([1, 4], [8, 8], [2, 2], [1, 0]), "cga_layout": [[3, 0]]}, [32, 32]


def batched_specs():
    """Rank-3 (batch, M, N) layouts: MFMA and mma.sync results and operands, and their slices."""
    for version, mnk, transposed in ((1, [32, 32, 8], False), (2, [16, 16, 16], True), (3, [32, 32, 8], True),
                                     (4, [16, 16, 32], False), (3, [4, 64, 4], False)):
        for warps, tiles in (([2, 2, 1], None), ([1, 2, 2], [1, 2, 1]), ([4, 1, 1], [1, 1, 2]), ([1, 1, 4], None)):
            spec = {"layout": "AMDMFMALayout", "version": version, "instr_shape": mnk, "transposed": transposed,
                    "warps_per_cta": warps}
            if tiles:
                spec["tiles_per_warp"] = tiles
            t = tiles or [1, 1, 1]
            tile = [warps[0], mnk[0] * warps[1] * t[1], mnk[1] * warps[2] * t[2]]
            for shape in (tile, [tile[0] * 4, tile[1] * 2, tile[2]], [1, max(tile[1] // 2, 1), tile[2] * 2]):
                yield spec, shape
            for op, kw in ((0, 4), (1, 8)):
                shape = [tile[0] * 2, tile[1], 64] if op == 0 else [tile[0], 64, tile[2] * 2]
                yield {"layout": "DotOperandLayout", "operand_index": op, "parent": spec, "k_width": kw}, shape
            yield {"layout": "SliceLayout", "dim": 0, "parent": spec}, tile[1:]
    for warps in ([2, 2, 1], [1, 2, 2], [4, 1, 1]):
        spec = {"layout": "NVMMADistributedLayout", "version": [2, 0], "warps_per_cta": warps,
                "instr_shape": [1, 16, 8]}
        for shape in ([4, 32, 32], [1, 16, 8], [2, 64, 16]):
            yield spec, shape
        for op in (0, 1):
            yield {"layout": "DotOperandLayout", "operand_index": op, "parent": spec, "k_width": 2}, [2, 32, 32]
    for version, instr in ((1, [16, 16, 16]), (2, [16, 16, 32]), (3, [16, 16, 64])):
        for warps, tiles, transposed in (([2, 2, 1], None, False), ([1, 2, 2], [1, 1, 2], True),
                                         ([4, 1, 1], [2, 1, 1], False)):
            spec = {"layout": "AMDWMMALayout", "version": version, "transposed": transposed, "warps_per_cta": warps,
                    "instr_shape": instr}
            if tiles:
                spec["tiles_per_warp"] = tiles
            for shape in ([4, 32, 32], [1, 16, 16], [8, 64, 16]):
                yield spec, shape
            for op in (0, 1):
                yield {"layout": "DotOperandLayout", "operand_index": op, "parent": spec, "k_width": 8}, [4, 32, 64]
    yield {"layout": "NVMMADistributedLayout", "version": [2, 0], "warps_per_cta": [2, 2, 1],
           "instr_shape": [16, 8]}, [4, 32, 32]
    for order in ([2, 1, 0], [1, 2, 0], [0, 1, 2]):
        parent = _blocked([1, 2, 4], [2, 4, 4], [2, 1, 2], order)
        for op, shape in ((0, [4, 32, 16]), (1, [4, 16, 32]), (0, [1, 4, 4])):
            yield {"layout": "DotOperandLayout", "operand_index": op, "parent": parent, "k_width": 0}, shape
    for op in (0, 1):
        yield {"layout": "DotOperandLayout", "operand_index": op, "parent": _blocked([4], [64], [2], [0]),
               "k_width": 0}, [64]


FAMILIES = {
    "mfma": lambda: itertools.chain(mfma_specs(), mfma_rejects()),
    "wmma": wmma_specs,
    "dot_operand": dot_specs,
    "blocked": blocked_specs,
    "slice": slice_specs,
    "nvmma": nvmma_specs,
    "shared": shared_specs,
    "cga": cga_specs,
    "batched": batched_specs,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--only", choices=sorted(FAMILIES), action="append")
    ap.add_argument("--sample", type=int, default=1, metavar="K",
                    help="ask Triton about every K-th parameter set only (a quick live check)")
    args = ap.parse_args(argv)
    import triton  # noqa: PLC0415

    _, builder = _triton()
    args.out.mkdir(parents=True, exist_ok=True)
    total = {}
    for name in args.only or FAMILIES:
        groups: dict[str, dict] = {}
        rejections: dict[str, int] = {}
        for i, (spec, shape) in enumerate(FAMILIES[name]()):
            if i % args.sample:
                continue
            key = json.dumps(spec, sort_keys=True)
            if key in groups and any(c["shape"] == shape for c in groups[key]["cases"]):
                continue
            answer = query(builder, spec, shape)
            if "rejected" in answer:
                # The same reason over and over adds size, not coverage: keep a few of each.
                rejections[answer["rejected"]] = rejections.get(answer["rejected"], 0) + 1
                if rejections[answer["rejected"]] > MAX_SAME_REJECTION:
                    continue
            groups.setdefault(key, {"spec": spec, "cases": []})["cases"].append({"shape": shape, **answer})
        doc = {"triton_version": triton.__version__, "generator": "tools/gen_triton_golden.py",
               "family": name}
        path = args.out / f"{name}.json"
        # one spec per line (its cases on that line): compact, and small diffs when regenerated
        with path.open("w") as f:
            f.write("{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in doc.items()))
            f.write(', "entries": [\n' + ",\n".join(json.dumps(g, separators=(",", ":")) for g in groups.values())
                    + "\n]}\n")
        entries = [c for g in groups.values() for c in g["cases"]]
        ok = sum("bases" in e for e in entries)
        total[name] = (ok, len(entries) - ok)
        print(f"{name}: {ok} accepted, {len(entries) - ok} rejected -> {path}", flush=True)
    print(f"total: {sum(a for a, _ in total.values())} accepted, {sum(b for _, b in total.values())} rejected "
          f"(Triton {triton.__version__})", flush=True)
    sys.stdout.flush()
    os._exit(0)  # skip nanobind's leak report at interpreter exit


if __name__ == "__main__":
    main()
