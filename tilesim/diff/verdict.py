"""Simulate, emit, compile, run where a device exists, and judge: ``run(prog, **arrays)``.

Verdicts — never MATCH without a device run:

* ``MATCH`` — the device ran and its outputs equal the simulator's within the catalog tolerance;
* ``MISMATCH`` — the device ran and differs; blame names, for the first differing elements, the
  (workgroup, wave, lane, VGPR, bits) that stored them, the instruction and operand lanes that
  computed them, and the pattern over all differences ("only lanes 16-31", "rows permuted");
* ``COMPILE_ONLY`` — compiled (AMD, offline clang) but no device to run on;
* ``SIMULATED_ONLY`` — simulated, nothing compiled (NVIDIA targets need NVRTC, i.e. a CUDA device);
* ``DEVICE_ERROR`` — a device run was attempted and failed: NVRTC error, launch failure, out of
  memory, a crash of the device process, or a hang past the watchdog (``device_timeout``,
  :mod:`tilesim.hw.watchdog`); the reason, the kind and the device process's exit status are kept.

The device step runs in a child process under a watchdog, so a hung kernel cannot hang tilesim.
A runner's result must name every output tensor with its shape, or it is a DEVICE_ERROR too.

When a ``reference`` (float64 outputs) is given, the simulator is compared with it too.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

import numpy as np

from tilesim.codegen.hip import CodegenError, emit_hip
from tilesim.errors import DeviceError, TilesimError, ToolchainError
from tilesim.targets import get_target
from tilesim.hw.watchdog import device_timeout as _device_timeout
from tilesim.hw.watchdog import guarded_call
from tilesim.ir.core import Program, Value
from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import dtype
from tilesim.matrix.numerics import tolerance
from tilesim.wave.sim import SimResult, simulate

__all__ = ["run", "Verdict", "VERDICTS", "blame"]

VERDICTS = ("MATCH", "MISMATCH", "SIMULATED_ONLY", "COMPILE_ONLY", "DEVICE_ERROR")


@dataclass
class Verdict:
    status: str
    program: Program
    reason: str
    simulated: dict[str, np.ndarray]
    device: dict[str, np.ndarray] | None = None
    device_name: str | None = None
    compile_metadata: dict[str, int] = field(default_factory=dict)
    isa_excerpt: list[str] = field(default_factory=list)
    blame: list[str] = field(default_factory=list)
    pattern: str = ""
    sim_vs_reference: dict[str, float] = field(default_factory=dict)
    device_vs_sim: dict[str, float] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    mismatch_counts: np.ndarray | None = None  # int[lane, vgpr]: wrong elements each register stored
    device_error: dict[str, Any] | None = None  # DEVICE_ERROR: kind, exit_status, timeout_s

    def heatmap_svg(self) -> str:
        """A lane x VGPR heatmap of the mismatching elements (MISMATCH verdicts only)."""
        from tilesim.layouts.pictures import svg_heatmap

        if self.mismatch_counts is None:
            raise TilesimError(f"no mismatches to draw: the verdict is {self.status}")
        return svg_heatmap(self.mismatch_counts, f"{self.program.name} on {self.program.target}: wrong elements "
                                                 "per lane and VGPR that stored them")

    def __post_init__(self) -> None:
        if self.status not in VERDICTS:
            raise TilesimError(f"verdict {self.status!r}; valid: {VERDICTS}")
        if self.status in ("MATCH", "MISMATCH") and self.device is None:
            raise TilesimError("fail closed: MATCH/MISMATCH need a device run")
        if self.status != "MATCH" and self.status != "MISMATCH" and self.device is not None:
            raise TilesimError(f"fail closed: a {self.status} verdict carries no device outputs")
        if (self.status == "DEVICE_ERROR") != (self.device_error is not None):
            raise TilesimError("fail closed: device_error goes with, and only with, a DEVICE_ERROR verdict")

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.status, "program": self.program.name, "target": self.program.target,
                "reason": self.reason, "device": self.device_name, "compile": self.compile_metadata,
                "isa_excerpt": self.isa_excerpt, "blame": self.blame, "pattern": self.pattern,
                "max_abs_sim_vs_reference": self.sim_vs_reference, "max_abs_device_vs_sim": self.device_vs_sim,
                "report": self.report, "device_error": self.device_error}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    def __str__(self) -> str:
        p = self.program
        lines = [f"{self.status}: {p.name} on {p.target} — {self.reason}"]
        if self.device_error is not None:
            de = self.device_error
            lines.append(f"  device error: {de.get('kind')}, device process exit status {de.get('exit_status')}"
                         + (f", watchdog {de['timeout_s']:g} s" if de.get("timeout_s") else ""))
        if self.compile_metadata:
            md = self.compile_metadata
            lines.append(f"  compiled: {md.get('vgpr_count', '?')} VGPRs, {md.get('sgpr_count', '?')} SGPRs, "
                         f"LDS {md.get('lds_bytes', 0)} B, scratch {md.get('scratch_bytes', 0)} B, "
                         f"wave{md.get('wavefront_size', '?')}")
        lines += [f"  isa: {x}" for x in self.isa_excerpt[:3]]
        if self.sim_vs_reference:
            lines.append("  simulator vs float64 reference: " +
                         ", ".join(f"max |{k}| = {v:.3g}" for k, v in self.sim_vs_reference.items()))
        if self.device_vs_sim:
            lines.append("  device vs simulator: " + ", ".join(f"max |{k}| = {v:.3g}" for k, v in self.device_vs_sim.items()))
        if self.pattern:
            lines.append(f"  pattern: {self.pattern}")
        lines += [f"  blame: {b}" for b in self.blame[:5]]
        return "\n".join(lines)


def _tol(prog: Program) -> tuple[float, float]:
    rtol = atol = 0.0
    k_total = max([s for d, s in prog.sizes if d == "K"] or [1])
    for op in prog.walk():
        if op.kind == "mma":
            row = lookup(op.attr("instr"), prog.target)
            r, a = tolerance(row, k_terms=k_total)
            rtol, atol = max(rtol, r), max(atol, a)
    return (rtol or 1e-6), atol


def _ranges(xs: list[int]) -> str:
    xs = sorted(set(xs))
    out, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(f"{xs[i]}-{xs[j]}" if j > i else f"{xs[i]}")
        i = j + 1
    return ", ".join(out)


def blame(res: SimResult, name: str, bad: np.ndarray, got: np.ndarray, limit: int = 5,
          expected: np.ndarray | None = None) -> tuple[list[str], str]:
    """Blame lines for the first differing elements of output ``name``, and the pattern over all."""
    prov = res.provenance.get(name)
    want = np.asarray(res.outputs[name], np.float64) if expected is None else expected
    idx = np.argwhere(bad)
    if prov is None or idx.size == 0:
        return [], ""
    producers = {op.out.id: op for op in res.program.walk() if op.out is not None and op.kind == "mma"}
    lines = []
    for i, j in idx[:limit]:
        wg, wave, lane, vgpr, lo, vid = (int(x) for x in prov[i, j])
        if wg < 0:
            lines.append(f"{name}[{i}][{j}]: device {got[i, j]:g}, expected {want[i, j]:g}; never stored by the program")
            continue
        val = res.values.get(vid)
        bits = dtype(val.dtype).reg_bits if val is not None else 32
        line = (f"{name}[{i}][{j}]: device {got[i, j]:g}, expected {want[i, j]:g}; stored by workgroup {wg}, "
                f"wave {wave}, lane {lane}, VGPR {vgpr}" + (f", bits {lo}-{lo + bits - 1}" if bits < 32 else ""))
        op = producers.get(vid)
        if op is not None and val is not None:
            row = lookup(op.attr("instr"), res.program.target)
            tile = val.layout.apply(lane=lane, slot=(vgpr * 32 + lo) // bits)
            a = row.layout("A", wave_size=res.program.wave_size)
            b = row.layout("B", wave_size=res.program.wave_size)
            a_l = sorted({o["lane"] for k in range(row.k) for o in a.owners_of(block=0, row=tile["row"], col=k)})
            b_l = sorted({o["lane"] for k in range(row.k) for o in b.owners_of(block=0, row=k, col=tile["col"])})
            line += (f"; computed by {row.mnemonic} as D[{tile['row']}][{tile['col']}] from A lanes {_ranges(a_l)} "
                     f"and B lanes {_ranges(b_l)}")
        lines.append(line)
    lanes = sorted({int(prov[i, j, 2]) for i, j in idx if prov[i, j, 0] >= 0})
    vgprs = sorted({int(prov[i, j, 3]) for i, j in idx if prov[i, j, 0] >= 0})
    W = res.program.wave_size
    parts = [f"{len(idx)} of {bad.size} elements differ", f"lanes {_ranges(lanes)}" + (" only" if len(lanes) < W else ""),
             f"VGPRs {_ranges(vgprs)}"]
    # rows permuted: every differing row of the device output equals some other row of the simulated one
    rows = sorted({int(i) for i, _ in idx})
    sim_rows = {tuple(np.round(want[r], 3)) for r in range(want.shape[0])}
    if rows and all(tuple(np.round(got[r], 3)) in sim_rows for r in rows):
        parts.append("rows permuted (each wrong row is another row of the right answer)")
    return lines, "; ".join(parts)


def _check_device_outputs(prog: Program, dev: object) -> str | None:
    """Why a runner's result cannot be judged (None when it can): it must map every output tensor,
    and only those, to a numeric array of the tensor's shape."""
    want = {t.name: tuple(t.shape) for t in prog.tensors if t.output}
    if not isinstance(dev, dict):
        return f"the runner returned a {type(dev).__name__}, not a dict of output tensors"
    if set(dev) != set(want):
        return f"the runner returned tensors {sorted(map(str, dev))}; outputs are {sorted(want)}"
    for name, shape in want.items():
        arr = dev[name]
        if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "fiu" or arr.shape != shape:
            got = f"{arr.dtype} {arr.shape}" if isinstance(arr, np.ndarray) else type(arr).__name__
            return f"the runner returned {name} as {got}; expected a numeric array of shape {shape}"
    return None


def run(prog: Program, *, device: str = "auto", reference: dict[str, np.ndarray] | None = None,
        runner: Callable[..., dict[str, np.ndarray]] | None = None, device_timeout: float | None = None,
        **arrays: np.ndarray) -> Verdict:
    """Simulate, emit, compile, run on a device if one is present and usable, and judge.

    ``runner(emitted, arrays) -> {output name: values}`` replaces the vendor's device runner (a
    module-level function: it runs in a child process); ``device_timeout`` (seconds; default
    ``TILESIM_DEVICE_TIMEOUT`` or 300) is the watchdog limit for the device step.
    """
    if device not in ("auto", "none"):
        raise TilesimError(f"device must be 'auto' or 'none', got {device!r}")
    if runner is not None and not callable(runner):
        raise DeviceError(f"runner must be a function (emitted, arrays) -> outputs, got {type(runner).__name__}")
    limit = _device_timeout(device_timeout)
    t = get_target(prog.target)
    res = simulate(prog, **arrays)
    rep = res.report.summary()
    sim_ref = {}
    if reference is not None:
        sim_ref = {k: float(np.nanmax(np.abs(np.asarray(res.outputs[k], np.float64) - v))) for k, v in reference.items()}
    try:
        em = emit_hip(prog)
    except CodegenError as e:
        return Verdict("SIMULATED_ONLY", prog, f"not emitted: {e}", res.outputs, sim_vs_reference=sim_ref, report=rep)
    if t.vendor == "amd":
        from tilesim.hw.offline import compile_hip

        try:
            comp = compile_hip(em.source, t.name, wave_size=prog.wave_size)
        except ToolchainError as e:
            return Verdict("SIMULATED_ONLY", prog, f"compile failed: {e}", res.outputs, sim_vs_reference=sim_ref,
                           report=rep)
        isa = [ln.strip() for ln in comp.isa.splitlines()
               if ln.strip().startswith(("v_mfma", "v_wmma", "v_smfmac", "v_swmmac"))]
        from tilesim.hw.amd import amd_device

        # the hip-python runner (tilesim.hw.amd.run_amd) is not wired in: it has never run on AMD
        # hardware; an injected runner is judged like any device run
        ok, why = amd_device() if device == "auto" else (False, "--device none")
        if runner is None or device == "none":
            return Verdict("COMPILE_ONLY", prog, f"compiled offline for {t.name}; not run on AMD hardware ({why})",
                           res.outputs, compile_metadata=comp.metadata, isa_excerpt=isa[:3],
                           sim_vs_reference=sim_ref, report=rep)
        desc, cc_text = getattr(runner, "__name__", "runner"), t.name
    elif runner is not None and device == "auto":
        desc, cc_text = getattr(runner, "__name__", "runner"), t.name
        comp, isa = None, []
    else:
        from tilesim.hw.nvidia import cuda_device, run_nvidia

        cc, desc = cuda_device() if device == "auto" else (None, "--device none")
        if cc is None:
            return Verdict("SIMULATED_ONLY", prog, f"emitted; not compiled or run: {desc}", res.outputs,
                           sim_vs_reference=sim_ref, report=rep)
        want = int(re.sub(r"\D", "", t.name) or 0)
        if cc < want:
            return Verdict("SIMULATED_ONLY", prog, f"emitted; not run: the device ({desc}) is sm_{cc}, "
                           f"older than {t.name}", res.outputs, sim_vs_reference=sim_ref, report=rep)
        runner, cc_text, comp, isa = run_nvidia, f"sm_{cc}", None, []
    md = comp.metadata if comp is not None else {}
    try:
        # the child gets the program through its JSON form: exactly what a runner needs, and
        # picklable whatever else a Program carries (a DSL program keeps its kernel function)
        em_child = dataclasses.replace(em, program=Program.from_json(prog.to_json()))
        dev = guarded_call(runner, em_child, arrays, timeout_s=limit, what=f"{em.kernel} on {desc}")
        bad_out = _check_device_outputs(prog, dev)
        if bad_out is not None:
            raise DeviceError(f"{em.kernel} on {desc}: {bad_out}", kind="bad_output", exit_status=0)
    except DeviceError as e:
        return Verdict("DEVICE_ERROR", prog, str(e), res.outputs, device_name=desc, compile_metadata=md,
                       isa_excerpt=isa[:3], sim_vs_reference=sim_ref, report=rep,
                       device_error={"kind": e.kind, "exit_status": e.exit_status, "timeout_s": e.timeout_s})
    dev = {k: np.asarray(v, np.float64) for k, v in dev.items()}
    rtol, atol = _tol(prog)
    diffs, blames, patterns, why = {}, [], [], []
    counts: np.ndarray | None = None
    for name, got in dev.items():
        want = np.asarray(res.outputs[name], np.float64)
        diffs[name] = float(np.nanmax(np.abs(got - want))) if got.size else 0.0
        # the device must equal the simulator (the model) and, when given, the float64 reference
        # (the program's intent); tolerance: k roundings of the accumulator, relative to the tile's scale
        for label, ref in (("simulator", want), ("reference", None if reference is None else reference.get(name))):
            if ref is None:
                continue
            ref = np.asarray(ref, np.float64)
            bad = ~(np.abs(got - ref) <= atol + rtol * (np.nanmax(np.abs(ref)) + 1.0)) & ~(np.isnan(got) & np.isnan(ref))
            if bad.any():
                why.append(f"{name}: device differs from the {label} in {int(bad.sum())} elements")
                prov = res.provenance.get(name)
                if prov is not None:
                    nregs = max(1, int(prov[..., 3].max()) + 1)
                    counts = np.zeros((prog.wave_size, nregs), np.int64) if counts is None else counts
                    hit = prov[bad]
                    hit = hit[hit[:, 0] >= 0]
                    np.add.at(counts, (hit[:, 2], np.minimum(hit[:, 3], counts.shape[1] - 1)), 1)
                b, pat = blame(res, name, bad, got, expected=ref)
                blames += b
                patterns.append(pat)
                break
    status = "MISMATCH" if why else "MATCH"
    extra = "" if reference is None else " and the float64 reference"
    reason = (f"ran on {desc} ({cc_text}); device equals the simulator{extra} within rtol {rtol:.2g}" if not why
              else f"ran on {desc} ({cc_text}); " + "; ".join(why))
    return Verdict(status, prog, reason, res.outputs, device=dev, device_name=desc, blame=blames,
                   compile_metadata=md, isa_excerpt=isa[:3],
                   pattern="; ".join(patterns), sim_vs_reference=sim_ref, device_vs_sim=diffs, report=rep,
                   mismatch_counts=counts)
