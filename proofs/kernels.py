"""Proof obligations for generated code and example kernels.

* **emitted index maps** — for every catalog layout (instruction, operand, wave size), the index
  expressions the code generator emits, evaluated as text on every (lane, slot), equal the layout
  table; exhaustive over the finite domain;
* **kernels** — for each example kernel and every size in a stated range, every output element is
  written exactly once (per wave and store) and no load or store leaves the tensors (no masked
  lane). Exhaustive over the stated sizes, by running the lane-accurate simulator;
* **kernels, static** — the same property over a wider stated range (:data:`STATIC_SIZES`: one to
  eight tiles per output dimension, one to four k-steps, every target of each example, LDS
  kernels included, where LDS races are also excluded), from the static access analysis
  ``check`` runs (:mod:`tilesim.ir.accesses`: store layouts x grid x loop trips), no simulation.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import numpy as np

from proofs.catalog import Case, cases
from tilesim.codegen.mma_forms import stack_blocks
from tilesim.layouts.expr import expressions
from tilesim.layouts.layout import Layout
from tilesim.matrix.sparse import meta_layout, values_layout

__all__ = ["emitted_index_maps", "kernel_cases", "prove_kernel", "SIZES", "STATIC_SIZES", "static_kernel_cases",
           "prove_kernel_static"]

# Stated ranges: every multiple of the instruction tile from one to four tiles per dimension.
SIZES = {
    "gemm": [(m, n, k) for m in (1, 2, 4) for n in (1, 3) for k in (1, 2, 4)],
    "gemm_abt": [(m, n, k) for m in (1, 2) for n in (1, 3) for k in (1, 4)],
    "int8_gemm": [(m, n, k) for m in (1, 2) for n in (1, 2) for k in (1, 2)],
}


# Stated ranges of the static obligation: tiles per output dimension (M, N) and k-steps.
STATIC_SIZES = [(m, n, k) for m in range(1, 9) for n in range(1, 9) for k in range(1, 5)]
STATIC_MODULES = ("gemm", "gemm_abt", "int8_gemm", "fp8_gemm", "lds_gemm")


def emitted_index_maps(case: Case) -> list[str]:
    """The generator's C text for row/col (``slot`` -> ``s``), evaluated in Python on every slot:
    for the catalog layout, the blocks-stacked-as-rows form the generator addresses memory with
    (multi-block rows), and the compressed-values and metadata forms of a sparse A / K."""
    lay = case.layout()
    out = _index_map(case.name, lay)
    if dict(lay.out_dims).get("block", 1) > 1 and lay.is_function():
        stacked = stack_blocks(lay)
        hw, lg = lay.pairs()
        names = lay.out_names
        want = lg[:, names.index("block")] * dict(lay.out_dims)["row"] + lg[:, names.index("row")]
        shw, slg = stacked.pairs()
        if set(map(tuple, np.c_[hw, want, lg[:, names.index("col")]].tolist())) != set(map(tuple, np.c_[shw, slg].tolist())):
            out.append(f"{case.name}: blocks stacked as rows is not block*rows + row")
        out += _index_map(f"{case.name} (blocks stacked)", stacked)
    if case.row.sparse and case.op in ("A", "K"):
        derived = (values_layout if case.op == "A" else meta_layout)(case.row, case.wave, **dict(case.mods))
        out += _index_map(f"{case.name} ({'compressed values' if case.op == 'A' else 'metadata bytes'})", derived)
    return out


def _index_map(name: str, lay: Layout) -> list[str]:
    if not lay.is_function():
        return []  # broadcast reads are never loaded or stored through; the generator refuses them
    hw, lg = lay.pairs()
    env = {"lane": hw[:, lay.in_names.index("lane")], "s": hw[:, lay.in_names.index("slot")]}
    out = []
    for d, (dim, e) in enumerate(expressions(lay).items()):
        if e.table is not None:
            got = np.asarray(e.table)[env["lane"] + dict(lay.in_dims)["lane"] * env["s"]]
        else:
            got = eval(e.py().replace("slot", "s"), {}, env)  # noqa: S307 - our own generated text
        if not np.array_equal(np.broadcast_to(got, lg[:, d].shape), lg[:, d]):
            out.append(f"{name}: emitted {dim} = {e.text} differs from the layout")
    return out


def kernel_cases() -> Iterator[tuple[str, object, tuple[int, int, int]]]:
    for mod, sizes in SIZES.items():
        m = importlib.import_module(f"examples.{mod}")
        for prog in m.programs():
            tiles = {}
            for op in prog.walk():
                if op.kind == "mma":
                    from tilesim.matrix.catalog import lookup

                    row = lookup(op.attr("instr"), prog.target)
                    tiles = {"M": row.m, "N": row.n, "K": row.k}
            kern = getattr(m, mod)
            opts = {k: v for k, v in kern.options.items() if k == "mma"}
            for mm, nn, kk in sizes:
                mma = next(op.attr("instr") for op in prog.walk() if op.kind == "mma")
                yield mod, kern, (prog.target, mma, tiles["M"] * mm, tiles["N"] * nn, tiles["K"] * kk, opts)


def prove_kernel(mod: str, kern: object, spec: tuple) -> list[str]:
    from tilesim.wave.sim import simulate

    target, mma, M, N, K, _ = spec
    sizes = {"M": M, "N": N, "K": K}
    p = kern.specialize(target=target, mma=mma, **{d: sizes[d] for d in sorted({d for _, tt in kern.tensors for d in tt.dims})})
    m = importlib.import_module(f"examples.{mod}")
    res = simulate(p, verify=False, **m.inputs(p))  # write-once only: default options (e.g. int8 neg=0) need not be right
    out = []
    for name, counts in res.write_counts.items():
        if not (counts == 1).all():
            bad = np.argwhere(counts != 1)[0]
            out.append(f"{mod} {target} M={M} N={N} K={K}: {name}{tuple(int(x) for x in bad)} written "
                       f"{int(counts[tuple(bad)])} times")
    if res.report.oob_count:
        out.append(f"{mod} {target} M={M} N={N} K={K}: {res.report.oob_count} out-of-bounds lanes: {res.report.oob[0]}")
    return out


def all_index_map_cases() -> list[Case]:
    return list(cases(full=False))


STATIC_SLICE = [(m, n, k) for m in (1, 3, 8) for n in (1, 2, 7) for k in (1, 4)]  # CI's share of the range


def static_kernel_cases(full: bool = True) -> Iterator[tuple[str, object, dict]]:
    """(example, kernel, specialisation) for every example program's target and the static range
    (``full=False``: :data:`STATIC_SLICE`); the tile sizes come from each program's instruction
    (and its waves per workgroup for LDS)."""
    from tilesim.matrix.catalog import lookup

    for mod in STATIC_MODULES:
        m = importlib.import_module(f"examples.{mod}")
        for prog in m.programs():
            row = lookup(next(op.attr("instr") for op in prog.walk() if op.kind == "mma"), prog.target)
            kern = prog.origin.kernel
            opts = dict(prog.origin.options)
            tm = row.m * (opts.get("waves_m", 1))
            tn = row.n * (opts.get("waves_n", 1))
            for mm, nn, kk in (STATIC_SIZES if full else STATIC_SLICE):
                yield mod, kern, {"target": prog.target, **opts, "M": tm * mm, "N": tn * nn, "K": row.k * kk}


def prove_kernel_static(mod: str, kern: object, spec: dict) -> list[str]:
    """Every output element written exactly once, nothing out of bounds, no LDS race: the static
    analysis reports nothing at all for the specialised program."""
    from tilesim.ir.accesses import analyse

    prog = kern.specialize(**spec)
    notes, races = analyse(prog)
    sizes = f"M={spec['M']} N={spec['N']} K={spec['K']}"
    return [f"{mod} {spec['target']} {sizes}: {n.severity}: {n.where}: {n.message}" for n in notes]
