"""Benchmark harness: ``python -m benchmarks [--quick | --full] [--out PATH] [--only NAME,...]``.

Each figure is measured in this run together with its baseline and reported as a ratio
(figure / baseline), with both absolute values; figures with an absolute budget (the issue's
"≤ 2 s", "≤ 1 s", "≤ 60 s") carry it as ``target``. Times are ``time.perf_counter`` over a few
repeats, reported as min and median (the ratio of mins and of medians); every row carries the
1-minute load average at its start and end (the machine may be shared). The numpy baseline runs on
as many BLAS threads as the simulator uses for that GEMM (threadpoolctl): its numba pool where the
fused mma chain may reach the threaded kernel's size, else one. Peak memory is measured in a
separate, untimed run under ``tracemalloc`` (numpy reports its buffers to it). Writes JSON
(``--out``, default ``benchmarks/results.json``) and prints a table. No figure is asserted here:
the table says whether each target is met.
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

from benchmarks.cold import bench_cold
from benchmarks.rows import _figure, _load

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "tilesim.bench/1"
GEMMS = [("gfx1201", "v_wmma_f32_16x16x16_f16"), ("gfx942", "v_mfma_f32_32x32x8f16")]
GROUPS = ("gemm", "lds", "run", "isa", "jit", "cold", "export", "proofs", "cuda")
SLOW_GROUPS = ("jit", "cold", "proofs")  # left out of --quick: nothing smaller to run
CUDA_RESULTS = ROOT / "benchmarks" / "cuda_results.json"


def _times(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    """Seconds of each of ``repeat`` calls, and the last call's result."""
    times, out = [], None
    for _ in range(max(1, repeat)):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return times, out


def sim_threads() -> int:
    """Threads the simulator may use: numba's pool (its large fused mma chains run on it)."""
    try:
        import numba

        return int(numba.get_num_threads())
    except ImportError:
        return 1


def gemm_threads(macs: int) -> int:
    """Threads the simulator uses for a GEMM of ``macs`` multiply-adds: a fused chain runs on numba's
    thread count (as Python threads) only from ``_PARALLEL_MACS`` on (one chain is at most the whole
    GEMM), else on one thread."""
    from tilesim.wave.kernels import _PARALLEL_MACS

    return sim_threads() if macs >= _PARALLEL_MACS else 1


def _blas_limit(threads: int) -> Any:
    """Context that pins numpy's BLAS to ``threads``, so the ratio compares like with like (on this
    loaded 2-core machine OpenBLAS on 2 threads took 23 ms for a 128³ matmul that 1 thread does in
    0.08 ms); a null context without threadpoolctl (rows then say ``blas_threads: None``)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=threads, user_api="blas")


def _pinned(threads: int) -> int | None:
    try:
        import threadpoolctl  # noqa: F401
    except ImportError:
        return None
    return threads


def _peak_bytes(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


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
    info["simulator_threads"] = sim_threads()  # numba's pool; each GEMM row says the BLAS threads it pinned
    return info


# ---------------------------------------------------------------------------------------- figures
def _gemm_inputs(M: int, N: int, K: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"A": rng.standard_normal((M, K)).astype(np.float16), "B": rng.standard_normal((K, N)).astype(np.float16)}


def _numpy_f32(arrays: dict[str, np.ndarray], threads: int, repeat: int = 10) -> list[float]:
    a, b = arrays["A"].astype(np.float32), arrays["B"].astype(np.float32)
    with _blas_limit(threads):
        return _times(lambda: a @ b, repeat)[0]


def _warm_kernels() -> None:
    """Load the compiled kernels now (tilesim loads them only once a process has done enough work,
    tilesim.wave.kernels.JIT_AFTER), so no timed run pays the import."""
    from tilesim.wave import kernels

    if hasattr(kernels, "available"):  # (tilesim before the tiered kernels loaded them on first use)
        kernels.available(1 << 62)


_RSS_CHILD = """
import json, os, resource, sys
sys.path.insert(0, os.getcwd())
import numpy as np
import tilesim as ts
from examples.gemm import gemm
from benchmarks.run import _gemm_inputs, _warm_kernels
n, target, mma = int(sys.argv[1]), sys.argv[2], sys.argv[3]
_warm_kernels()
small = gemm.specialize(target=target, M=64, N=64, K=64, mma=mma)
ts.simulate(small, **_gemm_inputs(64, 64, 64))
prog = gemm.specialize(target=target, M=n, N=n, K=n, mma=mma)
arrays = _gemm_inputs(n, n, n)
page = os.sysconf("SC_PAGE_SIZE")
before = int(open("/proc/self/statm").read().split()[1]) * page
res = ts.simulate(prog, **arrays)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"before": before, "peak": peak}))
"""


def _rss_growth(n: int, target: str, mma: str) -> int | None:
    """Peak resident memory of a fresh process over its resident memory just before the simulation
    (``ru_maxrss``; Linux). None where /proc is missing or the peak came before the simulation."""
    if not Path("/proc/self/statm").exists():
        return None
    p = subprocess.run([sys.executable, "-c", _RSS_CHILD, str(n), target, mma], cwd=ROOT, capture_output=True,
                       text=True)
    if p.returncode:
        return None
    d = json.loads(p.stdout.strip().splitlines()[-1])
    return d["peak"] - d["before"] if d["peak"] > d["before"] else None


def bench_gemm(sizes: list[int], memory: bool, memory_sizes: list[int] | None = None) -> list[dict[str, Any]]:
    import tilesim as ts
    from examples.gemm import gemm

    _warm_kernels()
    out = []
    for target, mma in GEMMS:
        for n in sorted(set(sizes) | set(memory_sizes or [] if memory else [])):
            if n not in sizes:  # a memory-only size (untimed)
                out += _memory_rows(ts, gemm, target, mma, n)
                continue
            l0 = _load()
            prog = gemm.specialize(target=target, M=n, N=n, K=n, mma=mma)
            arrays = _gemm_inputs(n, n, n)
            threads = gemm_threads(n ** 3)
            base = _numpy_f32(arrays, threads)
            ts.simulate(gemm.specialize(target=target, M=64, N=64, K=64, mma=mma), **_gemm_inputs(64, 64, 64))  # warm
            # 5 repeats up to 1024³ (was 3 above 256³): the ratio of mins sets the least of a few simulations
            # against the least of 20 numpy calls, and on a noisy host fewer draws bias it against the simulator
            t, res = _times(lambda: ts.simulate(prog, **arrays), 5 if n <= 1024 else 1)
            base += _numpy_f32(arrays, threads)  # runs before and after: other load on the cores
            ref = arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)
            err = float(np.abs(res["C"] - ref).max() / (np.abs(ref).max() + 1e-30))
            macs = n ** 3
            out.append(_figure(f"gemm/{target}/{n}", f"simulate GEMM {n}³ f16→f32, {mma} ({target}, wave{prog.wave_size})",
                               t, "s", f"numpy float32 matmul {n}³", base, load_start=l0,
                               target={"max_ratio": 10.0} if n == 1024 else None,
                               simulated_macs_per_s=macs / min(t), numpy_macs_per_s=macs / min(base),
                               blas_threads=_pinned(threads),
                               max_rel_error_vs_float64=err, workgroups=prog.workgroups,
                               mma_ops=int(res.report.ops["mma"]) * prog.workgroups * prog.waves_per_workgroup))
            if memory:
                out += _memory_rows(ts, gemm, target, mma, n)
    return out


def _memory_rows(ts: Any, gemm: Any, target: str, mma: str, n: int) -> list[dict[str, Any]]:
    """Peak memory of one simulation: traced (tracemalloc: numpy's buffers) and resident growth of a
    fresh process (``ru_maxrss``)."""
    l0 = _load()
    prog = gemm.specialize(target=target, M=n, N=n, K=n, mma=mma)
    arrays = _gemm_inputs(n, n, n)
    ts.simulate(prog, **arrays)  # caches built (layouts, codecs): not part of one simulation's peak
    peak = _peak_bytes(lambda: ts.simulate(prog, **arrays))
    operands = arrays["A"].nbytes + arrays["B"].nbytes + n * n * 4
    rss = _rss_growth(n, target, mma)
    return [_figure(f"gemm-memory/{target}/{n}", f"peak traced memory of a GEMM {n}³ simulation ({mma})", peak,
                    "bytes", "operand bytes (A, B f16 + C f32)", operands, load_start=l0,
                    target={"max_ratio": 2.0}, rss_growth_bytes=rss,
                    rss_growth_ratio=None if rss is None else rss / operands)]


def bench_lds(sizes: list[int]) -> list[dict[str, Any]]:
    import tilesim as ts
    from examples.gemm import gemm
    from examples.lds_gemm import CONFIGS, SMEM, lds_gemm

    _warm_kernels()
    out = []
    for target, mma in CONFIGS:
        for n in sizes:
            l0 = _load()
            lds = lds_gemm.specialize(target=target, M=n, N=n, K=n, mma=mma, **SMEM["swizzled"])
            plain = gemm.specialize(target=target, M=n, N=n, K=n, mma=mma)
            arrays = _gemm_inputs(n, n, n)
            ts.simulate(lds_gemm.specialize(target=target, M=64, N=64, K=64, mma=mma), **_gemm_inputs(64, 64, 64))
            # the simulator alone (verify=False), then as a user calls it (verify: check()'s static analysis first)
            for verify in (False, True):
                tp, tl = [], []
                for _ in range(3 if not verify or n <= 512 else 1):  # interleaved: both see the same load
                    tp += _times(lambda: ts.simulate(plain, verify=verify, **arrays), 1)[0]
                    t, res = _times(lambda: ts.simulate(lds, verify=verify, **arrays), 1)
                    tl += t
                r = res.report
                out.append(_figure(f"lds{'' if verify else '-sim'}/{target}/{n}",
                                   f"LDS double-buffered GEMM {n}³ ({mma}, 2x2 waves, swizzled; bank conflicts + race "
                                   f"detector on; {'with check()' if verify else 'simulate(verify=False)'})", tl, "s",
                                   f"plain GEMM {n}³, same instruction, same verify", tp, load_start=l0,
                                   target={"max_ratio": 3.0}, lds_accesses=r.lds_accesses,
                                   bank_conflict_cycles=r.lds_bank_conflict_cycles, races=r.race_count))
                l0 = _load()
    return out


def bench_run(n: int) -> list[dict[str, Any]]:
    import tilesim as ts
    from examples.gemm import gemm, reference
    from tilesim.diff import run

    l0 = _load()
    prog = gemm.specialize(target="gfx1201", M=n, N=n, K=n, mma="v_wmma_f32_16x16x16_f16")
    arrays = _gemm_inputs(n, n, n)
    ts.simulate(prog, **arrays)
    t_sim, _ = _times(lambda: ts.simulate(prog, **arrays), 3)
    ref = reference(**arrays)  # judged as a user's run is: without one the verdict is NOT_JUDGED (exit 4)
    old = os.environ.get("TILESIM_NO_CACHE")
    os.environ["TILESIM_NO_CACHE"] = "1"
    try:
        l1 = _load()
        t_cold, v_cold = _times(lambda: run(prog, device="none", reference=ref, **arrays), 1)
    finally:
        if old is None:
            del os.environ["TILESIM_NO_CACHE"]
        else:
            os.environ["TILESIM_NO_CACHE"] = old
    run(prog, device="none", reference=ref, **arrays)  # fill the compile cache
    t_warm, v_warm = _times(lambda: run(prog, device="none", reference=ref, **arrays), 3)
    return [
        _figure(f"run/warm/{n}", f"tilesim.diff.run GEMM {n}³ gfx1201, no device (simulate+emit+compile, warm cache)",
                t_warm, "s", "simulate only", t_sim, load_start=l0, target={"max_seconds": 2.0},
                verdict=v_warm.status),
        _figure(f"run/cold/{n}", "the same with TILESIM_NO_CACHE=1 (cold compile)", t_cold, "s",
                "warm-cache run", t_warm, load_start=l1, verdict=v_cold.status),
    ]


_JIT_CHILD = """
import time, numpy as np
t0 = time.perf_counter()
import tilesim as ts
from examples.gemm import gemm
prog = gemm.specialize(target="gfx1201", M=256, N=256, K=256)  # large enough to load the compiled kernels
t1 = time.perf_counter()
ts.simulate(prog, A=np.ones((256, 256), np.float16), B=np.ones((256, 256), np.float16))
print(time.perf_counter() - t1)
"""


def bench_jit() -> list[dict[str, Any]]:
    """First simulate in a fresh process with an empty numba cache, then in a second process."""
    l0 = _load()
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        times = []
        for _ in range(2):
            p = subprocess.run([sys.executable, "-c", _JIT_CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
                               check=True)
            times.append(float(p.stdout.strip().splitlines()[-1]))
    return [_figure("jit/second-process", "first simulate in a second process (numba cache on disk)", times[1], "s",
                    "first simulate in a first process (empty cache: compiles)", times[0], load_start=l0)]


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
    l0 = _load()
    p = subprocess.run([sys.executable, "-c", _EXPORT_CHILD], cwd=ROOT, capture_output=True, text=True, check=True)
    d = json.loads(p.stdout.strip().splitlines()[-1])
    return [_figure("export/catalog", f"every catalog layout to JSON ({d['rows']} rows, {d['layouts']} "
                    "row/operand/wave layouts, fresh process: builds them)", d["cold"], "s", "budget", 1.0,
                    load_start=l0, target={"max_seconds": 1.0}, layouts=d["layouts"], json_bytes=d["bytes"],
                    warm_seconds=d["warm"])]


def bench_proofs(quick: bool) -> list[dict[str, Any]]:
    cmd = [sys.executable, "-m", "proofs"] + (["--defaults-only"] if quick else [])
    l0 = _load()
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    dt = time.perf_counter() - t
    what = "python -m proofs" + (" --defaults-only" if quick else "") + " (fresh process)"
    return [_figure("proofs/" + ("defaults" if quick else "all"), what, dt, "s", "budget", 60.0, load_start=l0,
                    target=None if quick else {"max_seconds": 60.0}, proved=p.returncode == 0)]


def bench_isa(sizes: list[int], repeat: int) -> list[dict[str, Any]]:
    """The ISA emulator (issue 15) on the GEMM example, against ``tilesim.simulate`` of the same
    program in the same run. The figure is the emulator's own ``seconds`` (emulation only: the
    compile, cached, is not counted). Empty without the offline clang."""
    import tilesim as ts
    from examples.gemm import gemm, inputs
    from tilesim.errors import ToolchainError
    from tilesim.isa import emulate_program

    out = []
    for target, mma in GEMMS:
        for n in sizes:
            l0 = _load()
            prog = gemm.specialize(target=target, M=n, N=n, K=n, mma=mma)
            arrays = inputs(prog)
            try:
                runs = [emulate_program(prog, arrays) for _ in range(max(1, repeat))]
            except ToolchainError as e:
                print(f"isa: skipped ({e})", file=sys.stderr)
                return []
            ts.simulate(prog, **arrays)
            t_sim, res = _times(lambda: ts.simulate(prog, **arrays), max(3, repeat))
            same = bool(np.array_equal(runs[0]["C"], res["C"]))
            sec = [r.seconds for r in runs]
            out.append(_figure(f"isa/{target}/{n}", f"ISA emulator GEMM {n}³ {mma} ({target}; compiled, emulated)",
                               sec, "s", f"tilesim.simulate, same program", t_sim, load_start=l0,
                               wave_instructions=runs[0].instructions,
                               wave_instructions_per_s=runs[0].instructions / min(sec), bit_exact_to_simulator=same))
    return out


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
                   f["hand_gemm"]["median_s"], load_start=None, target={"max_ratio": 1 / 0.95},
                   speed_fraction=f["emitted_vs_hand"]["speed_fraction"], same_bits=f["emitted_vs_hand"]["same_bits"],
                   tflops=f["emitted_gemm"]["tflops"], **src)]
    if "median_s" in f.get("torch_matmul_fp16", {}):
        out.append(_figure(f"cuda/lds-vs-torch/{n}", f"LDS-pipelined example {n}³ (examples/lds_gemm.py, swizzled) "
                           f"on {dev}", f["lds_gemm"]["median_s"], "s", "torch.matmul fp16, same size",
                           f["torch_matmul_fp16"]["median_s"], load_start=None, tflops=f["lds_gemm"]["tflops"],
                           torch_tflops=f["torch_matmul_fp16"]["tflops"], fraction_of_torch=f["lds_vs_torch"]["fraction"],
                           **src))
    if "median_s" in f.get("torch_matmul_fp16", {}) and "block_gemm" in f:  # issue 17: >= 0.25 of torch
        out.append(_figure(f"cuda/block-vs-torch/{n}", f"block-tiled example {n}³ (examples/block_gemm.py) on {dev}",
                           f["block_gemm"]["median_s"], "s", "torch.matmul fp16, same size",
                           f["torch_matmul_fp16"]["median_s"], load_start=None, target={"max_ratio": 1 / 0.25},
                           tflops=f["block_gemm"]["tflops"], torch_tflops=f["torch_matmul_fp16"]["tflops"],
                           fraction_of_torch=f["block_vs_torch"]["fraction"], **src))
    if "median_s" in f.get("torch_matmul_fp16", {}) and "block_gemm_async" in f:  # cp.async copies
        out.append(_figure(f"cuda/block-async-vs-torch/{n}", f"block-tiled example {n}³ with cp.async copies "
                           f"(examples/block_gemm.py async_copy=True) on {dev}", f["block_gemm_async"]["median_s"], "s",
                           "torch.matmul fp16, same size", f["torch_matmul_fp16"]["median_s"], load_start=None,
                           target={"max_ratio": 1 / 0.25}, tflops=f["block_gemm_async"]["tflops"],
                           torch_tflops=f["torch_matmul_fp16"]["tflops"],
                           fraction_of_torch=f["block_async_vs_torch"]["fraction"], **src))
    for row in out:  # measured on the device machine: this machine's load says nothing about them
        row["load_average_1min"] = None
    return out


# ---------------------------------------------------------------------------------------- report
def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "bytes":
        return f"{v / 2**20:.1f} MiB"
    return f"{v * 1e3:.3g} ms" if v < 1 else f"{v:.2f} s"  # 3 digits: sub-ms baselines stay readable


def table(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    head = (f"tilesim benchmarks ({doc['mode']}) — {m.get('cpu')}, {m['cores']} cores, numpy {m['numpy']} "
            f"({m['blas'].get('name')} {m['blas'].get('version', '')}), numba {m.get('numba')}, "
            f"JIT {'on' if m.get('simulator_jit') else 'off'}")
    head += (f"\nsimulator numba pool {m.get('simulator_threads')} threads; numpy baselines pinned to the threads "
             "the simulator uses for that GEMM (below); values: min / median of the repeats; load: 1-min load "
             "average at the row's start→end")
    rows = [("figure", "value min / med", "baseline", "baseline min / med", "ratio min / med", "target", "met",
             "load")]

    def pair(a: float | None, b: float | None, fmt: Callable[[float | None], str]) -> str:
        return fmt(a) if a is None or b is None or fmt(a) == fmt(b) else f"{fmt(a)} / {fmt(b)}"

    def ratio(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}×"

    for f in doc["figures"]:
        tgt = f["target"] or {}
        tgt_s = ", ".join(f"≤{v:.3g}×" if k == "max_ratio" else f"≤{v:g} s" for k, v in tgt.items()) or "-"
        unit, base, la = f["unit"], f["baseline"], f.get("load_average_1min")
        rows.append((f["id"], pair(f["value"], f.get("median"), lambda v: _fmt(v, unit)), base["what"][:34],
                     pair(base["value"], base.get("median"), lambda v: _fmt(v, unit)),
                     pair(f["ratio"], f.get("ratio_median"), ratio), tgt_s,
                     {True: "yes", False: "NO", None: ""}[f["met"]],
                     f"{la['start']}→{la['end']}" if la else "elsewhere"))
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
            e = f["extra"]
            lines.append(f"  {f['id']}: {e['simulated_macs_per_s'] / 1e6:.0f} M simulated MAC/s (numpy "
                         f"{e['numpy_macs_per_s'] / 1e9:.1f} G MAC/s on {e.get('blas_threads') or 'UNPINNED'} "
                         "BLAS thread(s))")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="smallest sizes only (CI slice, < 20 s)")
    mode.add_argument("--full", action="store_true", help="also GEMM 2048³, the LDS GEMM at 1024³ and the ISA emulator at 256³")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results.json"), help="JSON output path")
    ap.add_argument("--only", default=None, help=f"comma-separated groups: {','.join(GROUPS)} (default: all; "
                    "--quick leaves out jit, cold and proofs, which have nothing smaller to run)")
    ap.add_argument("--no-memory", action="store_true", help="skip the (untimed) peak-memory runs")
    args = ap.parse_args(argv)
    only = args.only or ",".join(g for g in GROUPS if not (args.quick and g in SLOW_GROUPS))
    groups = [g for g in only.split(",") if g]
    unknown = sorted(set(groups) - set(GROUPS))
    if unknown:
        ap.error(f"unknown group(s) {unknown}; groups: {', '.join(GROUPS)}")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # examples/ is imported as a package
    mode_name = "quick" if args.quick else "full" if args.full else "default"
    sizes = [128] if args.quick else [256, 512, 1024] + ([2048] if args.full else [])
    memory_sizes = [128] if args.quick else [256, 512, 1024, 2048]  # the 256³…2048³ (2048 untimed)
    t0, load0 = time.perf_counter(), _load()
    figures: list[dict[str, Any]] = []
    plan = {"gemm": lambda: bench_gemm(sizes, not args.no_memory, memory_sizes),
            "lds": lambda: bench_lds([128] if args.quick else [512, 1024]),
            "run": lambda: bench_run(256),
            "isa": lambda: bench_isa([64] if args.quick else [64, 128] + ([256] if args.full else []),
                                     2 if args.quick else 3),
            "cold": lambda: bench_cold(2),
            "jit": bench_jit,
            "export": bench_export,
            "proofs": lambda: bench_proofs(args.quick),
            "cuda": bench_cuda}
    for g in GROUPS:
        if g in groups:
            print(f"running {g} ... (load {_load()})", file=sys.stderr, flush=True)
            figures += plan[g]()
    doc = {"schema": SCHEMA, "mode": mode_name, "machine": machine(), "figures": figures,
           "wall_seconds": time.perf_counter() - t0, "load_average_1min": {"start": load0, "end": _load()},
           "not_run": [] if any(f["id"].startswith("cuda/") for f in figures) else [
               "NVIDIA: emitted sm_90 GEMM vs hand-written CUDA mma.sync, LDS-pipelined TFLOP/s vs torch.matmul "
               "(run python -m benchmarks.cuda --out benchmarks/cuda_results.json on a machine with an sm_90 GPU)"]}
    print(table(doc))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"\nwrote {out}")
    return 0
