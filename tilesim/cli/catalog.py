"""Commands that look things up: targets, instructions, explain, layout (with calculator queries),
check-layout, gallery, devices, demo."""

from __future__ import annotations

import argparse
import io
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tilesim.cli.parser import UsageError
from tilesim.demo import tour
from tilesim.errors import TilesimError
from tilesim.files import refuse_link, write_output
from tilesim.gallery import build_gallery
from tilesim.hw.amd import amd_device
from tilesim.hw.nvidia import cuda_device
from tilesim.layouts.pictures import png, svg, svg_compare
from tilesim.layouts.render import render, render_registers
from tilesim.matrix.catalog import instructions, lookup, rows
from tilesim.matrix.explain import explain, row_summary
from tilesim.matrix.query import INDEX_NAMES, element_owners, formulas, register_contents
from tilesim.matrix.sparse import meta_layout, values_layout
from tilesim.targets import TARGETS, get_target


def cmd_targets(args: argparse.Namespace) -> str:
    if args.format == "json":
        return json.dumps([_target_json(t) for t in TARGETS.values()], indent=1)
    hdr = f"{'target':8} {'family':8} {'waves':7} {'VGPRs':>5} {'LDS':>7} {'banks':>5}  {'matrix path':11} {'fp8':5} product"
    lines = [hdr, "-" * len(hdr)]
    for t in TARGETS.values():
        waves = "/".join(map(str, t.wave_sizes))
        lines.append(
            f"{t.name:8} {t.family:8} {waves:7} {t.vgprs_per_simd:>5} {t.lds_bytes // 1024:>5}Ki {t.lds_banks:>5}  "
            f"{t.matrix_path:11} {t.fp8 or '-':5} {t.marketing}"
        )
    return "\n".join(lines)


def _target_json(t: object) -> dict[str, object]:
    d = asdict(t)  # type: ignore[call-overload]
    d["features"] = sorted(d["features"])
    return d


def cmd_instructions(args: argparse.Namespace) -> str:
    t = get_target(args.arch)
    names = instructions(t.name)
    if args.format == "json":
        return json.dumps([row_summary(lookup(n, t.name)) for n in names], indent=1)
    if not names:
        return f"{t.name} ({t.family}) has no matrix instructions (matrix path: {t.matrix_path})"
    lines = [f"{t.name} ({t.family}): {len(names)} matrix instructions", ""]
    for n in names:
        r = lookup(n, t.name)
        shape = f"{r.m}x{r.n}x{r.k}" + (f" x{r.blocks}b" if r.blocks > 1 else "")
        waves = "/".join(f"w{w}" for w in r.wave_sizes)
        lines.append(f"  {n:44} {shape:14} {r.types[0]:>8} -> {r.types[3]:<4} {waves}")
    return "\n".join(lines)


def cmd_explain(args: argparse.Namespace) -> str:
    row = lookup(args.mnemonic, args.arch)
    if args.format == "json":
        return json.dumps(explain(row, wave_size=args.wave, as_dict=True), indent=1)
    return str(explain(row, wave_size=args.wave))


def cmd_layout(args: argparse.Namespace) -> str:
    row = lookup(args.instr, args.arch)
    lay = _operand_layout(row, args)
    if args.format == "table" and args.out and Path(args.out).suffix.lower() in (".svg", ".png"):
        args.format = Path(args.out).suffix.lower()[1:]  # `--out x.svg` says the format
    _refuse_ignored_layout_flags(args)
    if args.get_register or args.matrix_entry:
        return _layout_query(args, lay)
    if args.format in ("svg", "png"):

        title = f"{row.mnemonic} {args.operand.upper()} on {args.arch} (wave{args.wave or row.wave_sizes[0]})"
        if args.compare:
            other = _operand_layout(lookup(args.instr, args.compare), args, mods=False)
            text = svg_compare(lay, other, f"{args.arch}", f"{args.compare}")
        else:
            text = svg(lay, title)
        if args.format == "png":
            if not args.out:
                raise TilesimError("--format png needs --out FILE")


            refuse_link(args.out, "--out")  # before rendering
            buf = io.BytesIO()
            png(text, buf)
            write_output(args.out, buf.getvalue(), "--out")
            return f"wrote {args.out}"
        if args.out:

            write_output(args.out, text, "--out")
            return f"wrote {args.out}"
        return text
    if args.view == "registers" and args.format in ("table", "markdown"):
        return render_registers(lay, args.format)

    meta = {"arch": get_target(args.arch).name, "instruction": row.mnemonic, "operand": args.operand.upper(),
            "wave": args.wave or row.wave_sizes[0], "cbsz": args.cbsz, "abid": args.abid, "blgp": args.blgp,
            "opsel": args.opsel}
    return render(lay, args.format, **meta) if args.format == "json" else render(lay, args.format)


def _operand_layout(row: Any, args: argparse.Namespace, mods: bool = True) -> Any:
    """The layout of ``--operand``: A, B, C, D, K from the row; for a sparse row also ``values`` (the
    compressed A a tile program loads) and ``index`` (its metadata bytes), tilesim.matrix.sparse."""
    m = dict(cbsz=args.cbsz, abid=args.abid, blgp=args.blgp, opsel=args.opsel) if mods else {}
    if str(args.operand).lower() in ("values", "index"):

        make = values_layout if args.operand.lower() == "values" else meta_layout
        return make(row, args.wave, **{k: v for k, v in m.items() if k != "blgp"})
    return row.layout(args.operand, wave_size=args.wave, **m)


def _refuse_ignored_layout_flags(args: argparse.Namespace) -> None:
    """A flag the chosen output would silently ignore is a usage error, not a surprise."""

    query = args.get_register or args.matrix_entry
    bad = []
    if args.get_register and args.matrix_entry:
        bad.append("--get-register and --matrix-entry together (ask one question at a time)")
    if args.compare and args.format not in ("svg", "png"):
        bad.append("--compare needs --format svg or png (or --out FILE.svg/.png)")
    if args.view == "registers" and args.format not in ("table", "markdown"):
        bad.append(f"--view registers has no {args.format} form (use --format table or markdown)")
    if args.out and args.format not in ("svg", "png"):
        bad.append(f"--out writes pictures only (svg/png); for {args.format}, redirect stdout")
    if query and args.format not in ("table", "json"):
        bad.append("a single-element query prints text (--format table) or json")
    if not query and (args.i, args.j, args.k, args.register, args.lane) != (None,) * 5:
        bad.append("-I/-J/-K/-r/-l need --get-register or --matrix-entry")
    if not query and args.output_calculation:
        bad.append("--output-calculation goes with --get-register or --matrix-entry")
    if bad:
        raise TilesimError("; ".join(bad))


def _layout_query(args: argparse.Namespace, lay: object) -> str:
    op = args.operand.upper()
    if args.get_register:
        names = INDEX_NAMES.get(op, ("i", "k"))
        given = {"i": args.i, "j": args.j, "k": args.k}
        missing = [n.upper() for n in names if given[n] is None]
        extra = [n.upper() for n in given if given[n] is not None and n not in names]
        if missing or extra:
            raise TilesimError(f"--get-register on {op} takes -{' -'.join(n.upper() for n in names)}"
                               + (f"; missing {', '.join('-' + m for m in missing)}" if missing else "")
                               + (f"; {', '.join('-' + x for x in extra)} is not an index of {op}" if extra else ""))
        answers = element_owners(lay, op, row=given[names[0]], col=given[names[1]], block=args.block)
    else:
        if args.register is None or args.lane is None:
            raise TilesimError("--matrix-entry needs -r REGISTER and -l LANE")
        answers = register_contents(lay, op, lane=args.lane, vgpr=args.register)
    calc = formulas(lay, op) if args.output_calculation else {}
    if args.format == "json":
        return json.dumps({"answers": [a.as_dict() for a in answers], **({"calculation": calc} if calc else {})},
                          indent=2)
    lines = [a.text() for a in answers] or [f"lane {args.lane}, v{args.register} holds no element of {op}"]
    lines += [f"  {k.replace('_', ' ')}: {v}" for k, v in calc.items()]
    return "\n".join(lines)


def cmd_check_layout(args: argparse.Namespace) -> tuple[str, int]:
    from tilesim.frameworks.check import check_layout

    shape = None
    if args.shape is not None:
        try:
            shape = tuple(int(x) for x in args.shape.split(","))
        except ValueError:
            raise UsageError(f"--shape {args.shape!r}: expected sizes like 64,64") from None
    wrote = _layout_picture(args, shape) if args.picture else None
    if args.arch is None:
        if wrote is None:
            raise UsageError("check-layout needs --arch (or --picture OUT.svg for the picture alone)")
        return f"wrote {wrote}", 0
    res = check_layout(args.spec, args.arch, operand=args.operand, instr=args.instr, dtype=args.dtype, shape=shape,
                       triton_version=args.triton_version)
    if args.format == "json":
        return json.dumps({**res.to_dict(), **({"picture": wrote} if wrote else {})}, indent=1), 0 if res.ok else 1
    return str(res) + (f"\n  picture: {wrote}" if wrote else ""), 0 if res.ok else 1


def _layout_picture(args: argparse.Namespace, shape: tuple[int, ...] | None) -> str:
    """Write the thread-value picture of ``args.spec`` to ``args.picture``; the path written."""
    from tilesim.frameworks.check import parse_spec
    from tilesim.frameworks.gluon_picture import svg
    from tilesim.frameworks.ttg_text import looks_like_ttg, parse_ttg

    spec = parse_spec(args.spec)
    if shape is None:
        printed = parse_ttg(args.spec).shape if isinstance(args.spec, str) and looks_like_ttg(args.spec) else None
        shape = printed or getattr(spec, "shape", None) or (16,) * getattr(spec, "rank", 2)
    write_output(args.picture, svg(spec, shape, triton_version=args.triton_version), "--picture")
    return str(args.picture)


def cmd_gallery(args: argparse.Namespace) -> str:
    fams = sorted({r.family for r in rows()})
    bad = [f for f in (args.family or []) if f not in fams]
    if bad:
        raise TilesimError(f"unknown family {bad[0]!r}; families: {', '.join(fams)}")

    def progress(done: int, total: int) -> None:  # a terminal sees it; pipes and logs stay clean
        print(f"\r  gallery: {done}/{total} instruction pages", end="" if done < total else "\n", file=sys.stderr,
              flush=True)

    pages = build_gallery(args.outdir, args.family, progress=progress if sys.stderr.isatty() else None)
    if args.format == "json":
        files = sorted(p for p in Path(args.outdir).iterdir() if p.is_file())
        return json.dumps({"outdir": str(args.outdir), "index": str(pages[0]), "pages": [str(p) for p in pages],
                           "bytes": sum(p.stat().st_size for p in files), "files": len(files)}, indent=1)
    return f"wrote {len(pages)} pages to {args.outdir} (open {pages[0]})"


def cmd_devices(args: argparse.Namespace) -> str:
    cc, nv = cuda_device()
    ok, amd = amd_device()
    doc = {"nvidia": {"usable": cc is not None, "compute_capability": cc, "detail": nv},
           "amd": {"usable": ok, "detail": amd}}
    if args.format == "json":
        return json.dumps(doc, indent=1)
    return "\n".join([f"NVIDIA: {'sm_%d, ' % cc + nv if cc is not None else 'none — ' + nv}",
                      f"AMD:    {amd if ok else 'none — ' + amd}",
                      "Without a device, `tilesim run` compiles (AMD, offline) or simulates, and says so."])


def cmd_demo(args: argparse.Namespace) -> str:
    return tour(fmt=args.format)


