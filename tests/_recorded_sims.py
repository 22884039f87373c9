"""Recorded simulations: a fixed set of programs and inputs whose results are hashed bit for bit.

The hashes in ``tests/golden/recorded_sims.json`` were written by this module run against a
checkout of main at 4697e2b (before the issue-17 performance work; ``python -m tests._recorded_sims
--write`` from that tree, this file copied in); the tests
(``tests/test_recorded_sims.py``) recompute them and compare. A hash covers every output tensor's
bytes, every register image, every traced image, the provenance and write-count arrays, and the
report (summary less the static VGPR estimate, race, out-of-bounds and replication lines). A change
to an example changes its hashes: re-record from a tree whose simulator is known good. Cases: every example × target, two
seeds, ragged and out-of-bounds tiles, NaN/Inf/-0 and huge exponent spreads, exact mode, traced
accumulators, LDS with and without the barrier and every shared-memory layout, int8 signed and
unsigned. ``slow`` cases (larger GEMMs, threaded kernels) run with ``--full``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

GOLDEN = Path(__file__).parent / "golden" / "recorded_sims.json"


def digest(res: Any) -> str:
    h = hashlib.sha256()

    def put(tag: str, a: np.ndarray) -> None:
        a = np.ascontiguousarray(a)
        h.update(f"{tag}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.view(np.uint8).reshape(-1).tobytes())

    for k in sorted(res.outputs):
        put("out/" + k, res.outputs[k])
    for k in sorted(res.registers):
        put(f"reg/{k}", res.registers[k])
    for k in sorted(res.trace):
        for i, img in enumerate(res.trace[k]):
            put(f"trace/{k}/{i}", img)
    for k in sorted(res.provenance):
        put("prov/" + k, res.provenance[k])
    for k in sorted(res.write_counts):
        put("writes/" + k, res.write_counts[k])
    r = res.report
    summary = dict(r.summary())
    summary.pop("vgprs_estimate", None)  # a static estimate (tilesim.ir.analysis), not the simulation's result
    h.update(json.dumps([summary, r.races, r.oob, r.replication], sort_keys=True, default=str).encode())
    return h.hexdigest()


Case = tuple[str, bool, Callable[[], Any]]  # (name, slow, run)


def _spread(arrays: dict[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
    """f16 inputs over a huge exponent range with a few -0, so sums and roundings all matter."""
    rng = np.random.default_rng(100 + seed)
    out = {}
    for k, a in arrays.items():
        if a.dtype == np.float16:
            b = (rng.standard_normal(a.shape) * np.exp2(rng.integers(-14, 14, a.shape))).astype(np.float16)
            b.reshape(-1)[:: 7] = np.float16(-0.0)
            out[k] = b
        else:
            out[k] = a
    return out


def cases() -> Iterator[Case]:
    seen: dict[str, int] = {}
    for name, slow, run in _cases():
        seen[name] = seen.get(name, 0) + 1
        yield (name if seen[name] == 1 else f"{name}#{seen[name]}"), slow, run


def _cases() -> Iterator[Case]:
    import tilesim as ts
    from examples import fp8_gemm, gemm, gemm_abt, gemm_planted, int8_gemm, lds_gemm, port_cdna3, softmax

    def sim(prog: Any, arrays: dict[str, np.ndarray], **kw: Any) -> Callable[[], Any]:
        return lambda: ts.simulate(prog, **arrays, **kw)

    for seed in (0, 1):
        for mod in (gemm, gemm_abt, fp8_gemm, softmax):
            for p in mod.programs():
                yield f"{mod.__name__}/{p.target}/{p.name}/{p.wave_size}/s{seed}", False, sim(p, mod.inputs(p, seed))
        for signed in (True, False):
            for p in int8_gemm.programs(signed=signed):
                yield f"int8/{p.target}/{signed}/s{seed}", False, sim(p, int8_gemm.inputs(p, seed))
        for p in port_cdna3.programs():
            yield f"port/{p.target}/{p.name}/s{seed}", False, sim(p, gemm.inputs(p, seed))
        for i, p in enumerate(gemm_planted.programs()):
            yield f"planted/{i}/{p.target}/s{seed}", False, sim(p, gemm.inputs(p, seed))
        # longer k loops (fusion), ragged and out-of-bounds tiles, wide exponent spreads
        for target, mma in gemm.CONFIGS:
            for M, N, K in ((64, 96, 80), (48, 40, 56), (32, 32, 128)):
                p = gemm.gemm.specialize(target=target, M=M, N=N, K=K, mma=mma)
                yield f"gemm/{target}/{mma}/{M}x{N}x{K}/s{seed}", False, sim(p, gemm.inputs(p, seed))
                yield f"gemm-spread/{target}/{mma}/{M}x{N}x{K}/s{seed}", False, sim(p, _spread(gemm.inputs(p, seed), seed))
        for smem in sorted(lds_gemm.SMEM):
            for drop in (False, True):
                for p in lds_gemm.programs(64, 64, 96, smem=smem, drop_barrier=drop):
                    yield (f"lds/{p.target}/{smem}/{drop}/s{seed}", False, sim(p, lds_gemm.inputs(p, seed)))
        for p in lds_gemm.programs(32, 64, 64, smem="padded", waves_m=1, waves_n=2):
            yield f"lds-1x2/{p.target}/s{seed}", False, sim(p, _spread(lds_gemm.inputs(p, seed), seed))
    # NaN, Inf, -0; exact mode; traced accumulators
    for target, mma in gemm.CONFIGS:
        p = gemm.gemm.specialize(target=target, M=32, N=32, K=96, mma=mma)
        arrays = gemm.inputs(p)
        arrays["A"][3, 50], arrays["B"][70, 2], arrays["A"][9, 9] = np.nan, -np.inf, -0.0
        yield f"gemm-nan/{target}/{mma}", False, sim(p, arrays)
        arrays = gemm.inputs(p, 1)
        arrays["A"][5, 90] = np.inf  # read only in the last step
        yield f"gemm-inf-last/{target}/{mma}", False, sim(p, arrays)
        p = gemm.gemm.specialize(target=target, M=32, N=32, K=32, mma=mma)
        yield f"gemm-exact/{target}/{mma}", False, sim(p, _spread(gemm.inputs(p), 0), exact=True)
        acc = tuple(op.out.id for op in p.walk() if op.kind == "mma")
        yield f"gemm-trace/{target}/{mma}", False, sim(p, gemm.inputs(p), trace=acc)
    for p in lds_gemm.programs(64, 64, 96):
        arrays = lds_gemm.inputs(p)
        arrays["B"][40, 7] = np.nan
        yield f"lds-nan/{p.target}", False, sim(p, arrays)
        lds_ids = tuple(op.out.id for op in p.walk() if op.kind in ("mma", "lds_load"))
        yield f"lds-trace/{p.target}", False, sim(p, lds_gemm.inputs(p), trace=lds_ids)
    # larger: threaded fused chains, many workgroups
    for target, mma in gemm.CONFIGS[1:3]:
        p = gemm.gemm.specialize(target=target, M=256, N=256, K=256, mma=mma)
        yield f"gemm-256/{target}/{mma}", True, sim(p, gemm.inputs(p))
        p = gemm.gemm.specialize(target=target, M=192, N=160, K=264, mma=mma)
        yield f"gemm-ragged-big/{target}/{mma}", True, sim(p, gemm.inputs(p))
    for smem in sorted(lds_gemm.SMEM):
        for p in lds_gemm.programs(128, 128, 128, smem=smem):
            yield f"lds-128/{p.target}/{smem}", True, sim(p, lds_gemm.inputs(p))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests._recorded_sims")
    ap.add_argument("--write", action="store_true", help="write tests/golden/recorded_sims.json")
    ap.add_argument("--check", action="store_true", help="compare with tests/golden/recorded_sims.json")
    args = ap.parse_args(argv)
    got = {name: digest(run()) for name, _, run in cases()}
    if args.write:
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(got)} hashes to {GOLDEN}")
    if args.check:
        want = json.loads(GOLDEN.read_text())
        bad = sorted(k for k in want if got.get(k) != want[k])
        print(f"{len(want) - len(bad)}/{len(want)} identical; differ: {bad}")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
