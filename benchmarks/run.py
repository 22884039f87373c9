"""Benchmark harness: ``python -m benchmarks [--quick | --full] [--out PATH] [--only NAME,...]``.

Each figure is measured in this run together with its baseline and reported as a ratio
(figure / baseline), with both absolute values; figures with an absolute budget (the issue's
"≤ 2 s", "≤ 1 s", "≤ 60 s") carry it as ``target``. Times are the best of a few runs
(``time.perf_counter``); peak memory is measured in a separate, untimed run under
``tracemalloc`` (numpy reports its buffers to it). Writes JSON (``--out``, default
``benchmarks/results.json``) and prints a table. No figure is asserted here: the table says
whether each target is met.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "tilesim.bench/1"
GEMMS = [("gfx1201", "v_wmma_f32_16x16x16_f16"), ("gfx942", "v_mfma_f32_32x32x8f16")]
GROUPS = ("gemm", "lds", "run", "jit", "export", "proofs", "cuda")
CUDA_RESULTS = ROOT / "benchmarks" / "cuda_results.json"


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(max(1, repeat)):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _peak_bytes(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def _figure(fid: str, what: str, value: float, unit: str, baseline_what: str, baseline: float | None, *,
            target: dict[str, float] | None = None, **extra: Any) -> dict[str, Any]:
    ratio = value / baseline if baseline else None
    met = None
    if target:
        met = all((ratio is not None and ratio <= v) if k == "max_ratio" else value <= v for k, v in target.items())
    return {"id": fid, "what": what, "value": value, "unit": unit,
            "baseline": {"what": baseline_what, "value": baseline}, "ratio": ratio, "target": target, "met": met,
            "extra": extra}


# ---------------------------------------------------------------------------------------- machine
def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                            "numpy": np.__version__}
    if hasattr(os, "sched_getaffinity"):
        info["cores_usable"] = len(os.sched_getaffinity(0))
    try:
        cpu = [ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
               if ln.startswith("model name")]
        info["cpu"] = cpu[0] if cpu else platform.processor()
        mem = [ln for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal")]
        info["memory_gib"] = round(int(mem[0].split()[1]) / 2**20, 1) if mem else None
    except OSError:
        info["cpu"] = platform.processor()
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        info["blas"] = {k: blas.get(k) for k in ("name", "version", "openblas configuration") if k in blas}
    except (TypeError, AttributeError):  # numpy < 1.25: no dict mode
        info["blas"] = {"name": str(getattr(np.__config__, "blas_opt_info", "unknown"))}
    try:
        import numba

        info["numba"] = numba.__version__
    except ImportError:
        info["numba"] = None
    try:
        from tilesim.wave import kernels

        info["simulator_jit"] = kernels.HAVE_NUMBA
    except ImportError:  # a tilesim without compiled kernels
        info["simulator_jit"] = False
    if hasattr(os, "getloadavg"):
        info["load_average_1min"] = round(os.getloadavg()[0], 2)  # other work on the cores skews times
    return info


# ---------------------------------------------------------------------------------------- figures
def _gemm_inputs(M: int, N: int, K: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"A": rng.standard_normal((M, K)).astype(np.float16), "B": rng.standard_normal((K, N)).astype(np.float16)}


def _numpy_f32(arrays: dict[str, np.ndarray], repeat: int = 10) -> float:
    a, b = arrays["A"].astype(np.float32), arrays["B"].astype(np.float32)
    return _best(lambda: a @ b, repeat)[0]


def bench_gemm(sizes: list[int], memory: bool) -> list[dict[str, Any]]:
    import tilesim as ts
    from examples.gemm import gemm

    out = []
    for target, mma in GEMMS:
        for n in sizes:
            prog = gemm.specialize(target=target, M=n, N=n, K=n, mma=mma)
            arrays = _gemm_inputs(n, n, n)
            base = _numpy_f32(arrays)
            ts.simulate(gemm.specialize(target=target, M=64, N=64, K=64, mma=mma), **_gemm_inputs(64, 64, 64))  # warm
            t, res = _best(lambda: ts.simulate(prog, **arrays), 3 if n <= 512 else 2 if n <= 1024 else 1)
            base = min(base, _numpy_f32(arrays))  # best of runs before and after: other load on the cores
            ref = arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)
            err = float(np.abs(res["C"] - ref).max() / (np.abs(ref).max() + 1e-30))
            macs = n ** 3
            out.append(_figure(f"gemm/{target}/{n}", f"simulate GEMM {n}³ f16→f32, {mma} ({target}, wave{prog.wave_size})",
                               t, "s", f"numpy float32 matmul {n}³", base,
                               target={"max_ratio": 10.0} if n == 1024 else None,
                               simulated_macs_per_s=macs / t, numpy_macs_per_s=macs / base,
                               max_rel_error_vs_float64=err, workgroups=prog.workgroups,
                               mma_ops=int(res.report.ops["mma"]) * prog.workgroups * prog.waves_per_workgroup))
            if memory:
                peak = _peak_bytes(lambda: ts.simulate(prog, **arrays))
                operands = arrays["A"].nbytes + arrays["B"].nbytes + n * n * 4
                out.append(_figure(f"gemm-memory/{target}/{n}", f"peak traced memory of that simulation", peak, "bytes",
                                   "operand bytes (A, B f16 + C f32)", operands,
                                   target={"max_ratio": 2.0} if n == 1024 else None))
    return out


def bench_lds(n: int) -> list[dict[str, Any]]:
    import tilesim as ts
    from examples.gemm import gemm
    from examples.lds_gemm import CONFIGS, SMEM, lds_gemm

    out = []
    for target, mma in CONFIGS:
        lds = lds_gemm.specialize(target=target, M=n, N=n, K=n, mma=mma, **SMEM["swizzled"])
        plain = gemm.specialize(target=target, M=n, N=n, K=n, mma=mma)
        arrays = _gemm_inputs(n, n, n)
        ts.simulate(lds_gemm.specialize(target=target, M=64, N=64, K=64, mma=mma), **_gemm_inputs(64, 64, 64))
        tp, _ = _best(lambda: ts.simulate(plain, **arrays), 3)
        tl, res = _best(lambda: ts.simulate(lds, **arrays), 3)
        r = res.report
        out.append(_figure(f"lds/{target}/{n}", f"LDS double-buffered GEMM {n}³ ({mma}, 2x2 waves, swizzled; "
                           "bank conflicts + race detector on)", tl, "s", f"plain GEMM {n}³, same instruction", tp,
                           target={"max_ratio": 2.0}, lds_accesses=r.lds_accesses,
                           bank_conflict_cycles=r.lds_bank_conflict_cycles, races=r.race_count))
    return out


def bench_run(n: int) -> list[dict[str, Any]]:
    import tilesim as ts
    from examples.gemm import gemm
    from tilesim.diff import run

    prog = gemm.specialize(target="gfx1201", M=n, N=n, K=n, mma="v_wmma_f32_16x16x16_f16")
    arrays = _gemm_inputs(n, n, n)
    ts.simulate(prog, **arrays)
    t_sim, _ = _best(lambda: ts.simulate(prog, **arrays), 3)
    old = os.environ.get("TILESIM_NO_CACHE")
    os.environ["TILESIM_NO_CACHE"] = "1"
    try:
        t_cold, v_cold = _best(lambda: run(prog, device="none", **arrays), 1)
    finally:
        if old is None:
            del os.environ["TILESIM_NO_CACHE"]
        else:
            os.environ["TILESIM_NO_CACHE"] = old
    run(prog, device="none", **arrays)  # fill the compile cache
    t_warm, v_warm = _best(lambda: run(prog, device="none", **arrays), 3)
    return [
        _figure(f"run/warm/{n}", f"tilesim.diff.run GEMM {n}³ gfx1201, no device (simulate+emit+compile, warm cache)",
                t_warm, "s", "simulate only", t_sim, target={"max_seconds": 2.0}, verdict=v_warm.status),
        _figure(f"run/cold/{n}", "the same with TILESIM_NO_CACHE=1 (cold compile)", t_cold, "s",
                "warm-cache run", t_warm, verdict=v_cold.status),
    ]


_JIT_CHILD = """
import time, numpy as np
t0 = time.perf_counter()
import tilesim as ts
from examples.gemm import gemm
prog = gemm.specialize(target="gfx1201", M=32, N=32, K=32)
t1 = time.perf_counter()
ts.simulate(prog, A=np.ones((32, 32), np.float16), B=np.ones((32, 32), np.float16))
print(time.perf_counter() - t1)
"""


def bench_jit() -> list[dict[str, Any]]:
    """First simulate in a fresh process with an empty numba cache, then in a second process."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        times = []
        for _ in range(2):
            p = subprocess.run([sys.executable, "-c", _JIT_CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
                               check=True)
            times.append(float(p.stdout.strip().splitlines()[-1]))
    return [_figure("jit/second-process", "first simulate in a second process (numba cache on disk)", times[1], "s",
                    "first simulate in a first process (empty cache: compiles)", times[0])]


_EXPORT_CHILD = """
import json, time
from tilesim.layouts import to_json
from tilesim.matrix.catalog import rows
def export():
    n = size = 0
    for r in rows():
        for w in r.wave_sizes:
            for op in r.operands:
                s = to_json(r.layout(op, wave_size=w), instruction=r.mnemonic, operand=op, wave_size=w)
                n += 1
                size += len(s)
    return n, size
t = time.perf_counter(); n, size = export(); cold = time.perf_counter() - t
t = time.perf_counter(); export(); warm = time.perf_counter() - t
print(json.dumps({"cold": cold, "warm": warm, "layouts": n, "bytes": size, "rows": len(rows())}))
"""


def bench_export() -> list[dict[str, Any]]:
    p = subprocess.run([sys.executable, "-c", _EXPORT_CHILD], cwd=ROOT, capture_output=True, text=True, check=True)
    d = json.loads(p.stdout.strip().splitlines()[-1])
    return [_figure("export/catalog", f"every catalog layout to JSON ({d['rows']} rows, {d['layouts']} "
                    "row/operand/wave layouts, fresh process: builds them)", d["cold"], "s", "budget", 1.0,
                    target={"max_seconds": 1.0}, layouts=d["layouts"], json_bytes=d["bytes"],
                    warm_seconds=d["warm"])]


def bench_proofs(quick: bool) -> list[dict[str, Any]]:
    cmd = [sys.executable, "-m", "proofs"] + (["--defaults-only"] if quick else [])
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    dt = time.perf_counter() - t
    what = "python -m proofs" + (" --defaults-only" if quick else "") + " (fresh process)"
    return [_figure("proofs/" + ("defaults" if quick else "all"), what, dt, "s", "budget", 60.0,
                    target=None if quick else {"max_seconds": 60.0}, proved=p.returncode == 0)]


def bench_cuda() -> list[dict[str, Any]]:
    """The NVIDIA figures, read from ``benchmarks/cuda_results.json`` (written by ``python -m
    benchmarks.cuda`` on a machine with an sm_90 GPU; nothing runs here). Empty when absent."""
    if not CUDA_RESULTS.exists():
        return []
    d = json.loads(CUDA_RESULTS.read_text())
    if "figures" not in d:
        return []
    f, n, dev = d["figures"], d["size"], d["device"]
    src = {"measured_on": dev, "source": "benchmarks/cuda_results.json (python -m benchmarks.cuda)"}
    out = [_figure(f"cuda/emitted-vs-hand/{n}", f"emitted sm_90 GEMM {n}³ (examples/gemm.py, mma.sync m16n8k16) "
                   f"on {dev}", f["emitted_gemm"]["median_s"], "s", "hand-written mma.sync kernel, same tiling",
                   f["hand_gemm"]["median_s"], target={"max_ratio": 1 / 0.95},
                   speed_fraction=f["emitted_vs_hand"]["speed_fraction"], same_bits=f["emitted_vs_hand"]["same_bits"],
                   tflops=f["emitted_gemm"]["tflops"], **src)]
    if "median_s" in f.get("torch_matmul_fp16", {}):
        out.append(_figure(f"cuda/lds-vs-torch/{n}", f"LDS-pipelined example {n}³ (examples/lds_gemm.py, swizzled) "
                           f"on {dev}", f["lds_gemm"]["median_s"], "s", "torch.matmul fp16, same size",
                           f["torch_matmul_fp16"]["median_s"], tflops=f["lds_gemm"]["tflops"],
                           torch_tflops=f["torch_matmul_fp16"]["tflops"], fraction_of_torch=f["lds_vs_torch"]["fraction"],
                           **src))
    return out


# ---------------------------------------------------------------------------------------- report
def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "bytes":
        return f"{v / 2**20:.1f} MiB"
    return f"{v * 1e3:.1f} ms" if v < 1 else f"{v:.2f} s"


def table(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    head = (f"tilesim benchmarks ({doc['mode']}) — {m.get('cpu')}, {m['cores']} cores, numpy {m['numpy']} "
            f"({m['blas'].get('name')} {m['blas'].get('version', '')}), numba {m.get('numba')}, "
            f"JIT {'on' if m.get('simulator_jit') else 'off'}")
    rows = [("figure", "value", "baseline", "baseline value", "ratio", "target", "met")]
    for f in doc["figures"]:
        tgt = f["target"] or {}
        tgt_s = ", ".join(f"≤{v:.3g}×" if k == "max_ratio" else f"≤{v:g} s" for k, v in tgt.items()) or "-"
        rows.append((f["id"], _fmt(f["value"], f["unit"]), f["baseline"]["what"][:34],
                     _fmt(f["baseline"]["value"], f["unit"]), "-" if f["ratio"] is None else f"{f['ratio']:.2f}×",
                     tgt_s, {True: "yes", False: "NO", None: ""}[f["met"]]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [head, ""] + ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    for f in doc["figures"]:
        if "measured_on" in f["extra"]:
            e = f["extra"]
            more = (f"speed {e['speed_fraction']:.3f} of the hand-written kernel (target ≥ 0.95), same bits: "
                    f"{e['same_bits']}" if "speed_fraction" in e else
                    f"{e['fraction_of_torch']:.3f} of torch.matmul ({e['torch_tflops']:.0f} TFLOP/s)")
            lines.append(f"  {f['id']}: {e['tflops']:.1f} TFLOP/s, {more} (from {e['source'].split()[0]})")
        if "simulated_macs_per_s" in f["extra"]:
            lines.append(f"  {f['id']}: {f['extra']['simulated_macs_per_s'] / 1e6:.0f} M simulated MAC/s "
                         f"(numpy {f['extra']['numpy_macs_per_s'] / 1e9:.1f} G MAC/s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="smallest sizes only (CI slice, < 20 s)")
    mode.add_argument("--full", action="store_true", help="also GEMM 2048³ and the LDS GEMM at 1024³")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results.json"), help="JSON output path")
    ap.add_argument("--only", default=None, help=f"comma-separated groups: {','.join(GROUPS)} (default: all; "
                    "--quick leaves out jit and proofs, which have nothing smaller to run)")
    ap.add_argument("--no-memory", action="store_true", help="skip the (untimed) peak-memory runs")
    args = ap.parse_args(argv)
    only = args.only or ",".join(g for g in GROUPS if not (args.quick and g in ("jit", "proofs")))
    groups = [g for g in only.split(",") if g]
    unknown = sorted(set(groups) - set(GROUPS))
    if unknown:
        ap.error(f"unknown group(s) {unknown}; groups: {', '.join(GROUPS)}")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # examples/ is imported as a package
    mode_name = "quick" if args.quick else "full" if args.full else "default"
    sizes = [128] if args.quick else [256, 512, 1024] + ([2048] if args.full else [])
    t0 = time.perf_counter()
    figures: list[dict[str, Any]] = []
    plan = {"gemm": lambda: bench_gemm(sizes, not args.no_memory),
            "lds": lambda: bench_lds(128 if args.quick else 1024 if args.full else 512),
            "run": lambda: bench_run(256),
            "jit": bench_jit,
            "export": bench_export,
            "proofs": lambda: bench_proofs(args.quick),
            "cuda": bench_cuda}
    for g in GROUPS:
        if g in groups:
            print(f"running {g} ...", file=sys.stderr, flush=True)
            figures += plan[g]()
    doc = {"schema": SCHEMA, "mode": mode_name, "machine": machine(), "figures": figures,
           "wall_seconds": time.perf_counter() - t0,
           "not_run": [] if any(f["id"].startswith("cuda/") for f in figures) else [
               "NVIDIA: emitted sm_90 GEMM vs hand-written CUDA mma.sync, LDS-pipelined TFLOP/s vs torch.matmul "
               "(run python -m benchmarks.cuda --out benchmarks/cuda_results.json on a machine with an sm_90 GPU)"]}
    print(table(doc))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"\nwrote {out}")
    return 0
