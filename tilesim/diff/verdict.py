"""Check, simulate, emit, compile, run where a device exists, and judge: ``run(prog, **arrays)``.

Verdicts fail closed — a wrong program never passes, whatever the device situation, and never
MATCH without a device run. Exit statuses (:data:`EXIT_STATUS`; ``Verdict.ok`` is "exit 0"):

=====================  ====  ============================================================
verdict                exit  meaning
=====================  ====  ============================================================
``MATCH``              0     the device ran; its outputs equal the simulator's (and the
                             float64 reference's, when given) within the tolerance
``COMPILE_ONLY``       0     simulation right by the reference; compiled (AMD, offline
                             clang); no device
``SIMULATED_ONLY``     0     simulation right by the reference; not compiled or not run
                             (emit refused the program, NVIDIA needs NVRTC, i.e. a CUDA
                             device), reason given
``EMULATED_MATCH``     0     ``device="emulator"``: tilesim's AMDGPU ISA emulator ran the
                             compiled code (not AMD hardware) and it equals the simulator
                             bit for bit (within the tolerance for ``exp``, the one op not
                             exact in C) and the reference within the tolerance; no LDS race
``MISMATCH``           1     the device ran and differs from the simulator or the reference;
                             blame names the lane/VGPR that stored each wrong element
``SIM_MISMATCH``       1     no device verdict, and the simulated result differs from the
                             float64 reference beyond the numerics model's tolerance
``CHECK_FAILED``       1     ``tilesim check`` reports an error in the program
``EMULATED_MISMATCH``  1     the emulated compiled code differs from the simulator or the
                             reference (blame as for MISMATCH), or it raced on LDS
``DEVICE_ERROR``       3     a device run was attempted and failed (launch failure, out of
                             memory, crash, hang past the watchdog, unjudgeable outputs)
``NOT_JUDGED``         4     nothing independent of the program compared its outputs: no
                             reference (or none for some output), no device run, no
                             emulator run (where COMPILE_ONLY or SIMULATED_ONLY would be);
                             the reason names the paths taken and how to get a judgement
=====================  ====  ============================================================

Precedence for one program: ``MISMATCH`` / ``EMULATED_MISMATCH`` (evidence from the compiled
code), then ``SIM_MISMATCH``, then
``CHECK_FAILED``, then ``DEVICE_ERROR``, then ``NOT_JUDGED``, then what the device path gave. Without
a ``reference`` the simulation cannot be judged: a device or emulator run that agrees with the simulator
(MATCH, EMULATED_MATCH) says so in its reason and exits 0 (the compiled code was judged against the
model); with neither, the verdict is NOT_JUDGED (exit 4). Over several programs (:func:`exit_status`):
1 if any verdict is 1, else 3 if any is 3, else 4 if any is 4, else 0. Each verdict lists the paths the program took
(``simulated``, ``emitted``, ``compiled``, ``device-run`` or ``emulated``) and why it stopped
where it did. An emulated run never gives MATCH: MATCH is reserved for silicon.

The device step runs in a child process under a watchdog (:mod:`tilesim.hw.watchdog`), so a hung
kernel cannot hang tilesim and the caller's script is never re-run. With ``device="auto"`` an NVIDIA
target runs through CuPy (:func:`tilesim.hw.nvidia.run_nvidia`) and an AMD target through hip-python
(:func:`tilesim.hw.amd.run_amd`: the device's gcnArchName must be the target; never run on AMD
hardware by this project, tested against a fake ``hip`` whose device name says so). A runner's result must name
every output tensor with its shape, or it is a DEVICE_ERROR too.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilesim.codegen.hip import CodegenError, emit_hip
from tilesim.diff.blame import blame
from tilesim.diff.judge import (HOW_TO_JUDGE, check_errors as _check_errors, combined_status, loose_note,
                                simulation_errors, vacuous_note)
from tilesim.diff.reference import (RESOLUTION_LIMIT, ReferenceCheck, beyond, check_reference, inexact_inputs,
                                    resolution, result_tolerance)
from tilesim.errors import DeviceError, TilesimError, ToolchainError
from tilesim.hw import amd, nvidia, offline  # module attributes, looked up at call time (tests replace them)
from tilesim.hw.watchdog import Opaque, guarded_call
from tilesim.hw.watchdog import device_timeout as _device_timeout
from tilesim.ir.core import Program
from tilesim.ir.ops import ELEMENTWISE, TENSOR_KINDS
from tilesim.isa import IsaError, emulate_program
from tilesim.isa.launch import SUPPORTED_FAMILIES
from tilesim.layouts.pictures import svg_heatmap
from tilesim.matrix.catalog import ISA_PREFIXES
from tilesim.matrix.dtypes import dtype
from tilesim.matrix.numerics import quantize
from tilesim.targets import get_target
from tilesim.wave.sim import SimResult, simulate

__all__ = ["run", "Verdict", "VERDICTS", "EXIT_STATUS", "PATHS", "DEVICES", "blame", "exit_status"]

EXIT_STATUS: dict[str, int] = {
    "MATCH": 0, "COMPILE_ONLY": 0, "SIMULATED_ONLY": 0, "EMULATED_MATCH": 0,
    "MISMATCH": 1, "SIM_MISMATCH": 1, "CHECK_FAILED": 1, "EMULATED_MISMATCH": 1,
    "DEVICE_ERROR": 3, "NOT_JUDGED": 4,
}
VERDICTS = tuple(EXIT_STATUS)
PATHS = ("simulated", "emitted", "compiled", "device-run", "emulated")
DEVICES = ("auto", "none", "emulator")
_DEVICE_VERDICTS = ("MATCH", "MISMATCH", "EMULATED_MATCH", "EMULATED_MISMATCH")
_PASSING_RUNS = ("MATCH", "EMULATED_MATCH")  # still fail closed on a wrong simulation or a check error
_NO_RUN = ("COMPILE_ONLY", "SIMULATED_ONLY")  # without a reference nothing judged these: NOT_JUDGED
# who ran the compiled code -> (agrees, disagrees)
_RUN_VERDICTS = {"device-run": ("MATCH", "MISMATCH"), "emulated": ("EMULATED_MATCH", "EMULATED_MISMATCH")}


def exit_status(verdicts: Iterable[Verdict]) -> int:
    """The command's status over several verdicts: 1 if any fails, else 3 if any device error, else 4 if
    any was not judged, else 0."""
    return combined_status(EXIT_STATUS[v.status] for v in verdicts)


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
    # per output, the least uniform relative error the reference comparison rejects (None: no nonzero value)
    resolution: dict[str, float | None] = field(default_factory=dict)
    device_vs_sim: dict[str, float] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    mismatch_counts: np.ndarray | None = None  # int[lane, vgpr]: wrong elements each register stored
    device_error: dict[str, Any] | None = None  # DEVICE_ERROR: kind, exit_status, timeout_s
    paths: tuple[str, ...] = ()  # taken, in order (PATHS)
    not_taken: dict[str, str] = field(default_factory=dict)  # path -> why not
    check_errors: list[str] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.status]

    @property
    def ok(self) -> bool:
        """True exactly when the CLI exits 0 for this verdict."""
        return self.exit_status == 0

    def __bool__(self) -> bool:  # `assert ts.run(prog)` must not pass a verdict that does not (was always true)
        return self.ok

    def heatmap_svg(self) -> str:
        """A lane x VGPR heatmap of the wrong elements (MISMATCH and SIM_MISMATCH verdicts)."""
        if self.mismatch_counts is None:
            raise TilesimError(f"no mismatches to draw: the verdict is {self.status}")
        return svg_heatmap(self.mismatch_counts, f"{self.program.name} on {self.program.target}: wrong elements "
                                                 "per lane and VGPR that stored them")

    def __post_init__(self) -> None:
        if self.status not in VERDICTS:
            raise TilesimError(f"verdict {self.status!r}; valid: {VERDICTS}")
        if self.status in _DEVICE_VERDICTS and self.device is None:
            raise TilesimError("fail closed: MATCH/MISMATCH need a device run")
        for path, names in _RUN_VERDICTS.items():  # MATCH only from silicon, EMULATED_* only from the emulator
            if self.status in names and path not in self.paths:
                raise TilesimError(f"fail closed: a {self.status} verdict needs the {path!r} path")
        if self.status not in _DEVICE_VERDICTS and self.device is not None:
            raise TilesimError(f"fail closed: a {self.status} verdict carries no device outputs")
        if (self.status == "DEVICE_ERROR") != (self.device_error is not None):
            raise TilesimError("fail closed: device_error goes with, and only with, a DEVICE_ERROR verdict")
        if self.status == "CHECK_FAILED" and not self.check_errors:
            raise TilesimError("fail closed: a CHECK_FAILED verdict names the check's errors")
        bad = [p for p in (*self.paths, *self.not_taken) if p not in PATHS]
        if bad:
            raise TilesimError(f"unknown path {bad[0]!r}; paths: {PATHS}")

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.status, "ok": self.ok, "exit_status": self.exit_status, "program": self.program.name,
                "target": self.program.target, "reason": self.reason, "paths": list(self.paths),
                "not_taken": self.not_taken, "check_errors": self.check_errors, "device": self.device_name,
                "compile": self.compile_metadata, "isa_excerpt": self.isa_excerpt, "blame": self.blame,
                "pattern": self.pattern, "max_abs_sim_vs_reference": self.sim_vs_reference,
                "resolution": self.resolution,
                "max_abs_device_vs_sim": self.device_vs_sim, "report": self.report, "device_error": self.device_error}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    def __str__(self) -> str:
        p = self.program
        lines = [f"{self.status}: {p.name} on {p.target} — {self.reason}"]
        lines.append("  paths: " + (", ".join(self.paths) or "none")
                     + "".join(f"; {k}: no — {v}" for k, v in self.not_taken.items()))
        lines += [f"  check: {e}" for e in self.check_errors[:3]]
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
        if any(v is not None for v in self.resolution.values()):
            lines.append("  resolution: the reference comparison fails " + ", ".join(
                f"{k} scaled by 1 ± {v:.2g}" for k, v in self.resolution.items() if v is not None) + " (or more)")
        if self.device_vs_sim:
            lines.append(("  emulated vs simulator: " if self.status.startswith("EMULATED") else "  device vs simulator: ") + ", ".join(f"max |{k}| = {v:.3g}" for k, v in self.device_vs_sim.items()))
        if self.pattern:
            lines.append(f"  pattern: {self.pattern}")
        lines += [f"  blame: {b}" for b in self.blame[:5]]
        return "\n".join(lines)


def _check_device_outputs(prog: Program, dev: object) -> str | None:
    """Why a runner's result cannot be judged (None when it can): it must map every output tensor,
    and only those, to a numeric array of the tensor's shape."""
    want = {t.name: tuple(t.shape) for t in prog.tensors if t.output}

    def kind(x: object) -> str:
        return x.type_name if isinstance(x, Opaque) else type(x).__name__

    if not isinstance(dev, dict):
        return f"the runner returned a {kind(dev)}, not a dict of output tensors"
    if set(dev) != set(want):
        return f"the runner returned tensors {sorted(map(str, dev))}; outputs are {sorted(want)}"
    for name, shape in want.items():
        arr = dev[name]
        if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "fiu" or arr.shape != shape:
            got = f"{arr.dtype} {arr.shape}" if isinstance(arr, np.ndarray) else kind(arr)
            return f"the runner returned {name} as {got}; expected a numeric array of shape {shape}"
    return None


def _count(res: SimResult, name: str, bad: np.ndarray, counts: np.ndarray | None) -> np.ndarray | None:
    """Add the wrong elements of ``name`` to the lane x VGPR counts of the registers that stored them."""
    prov = res.provenance.get(name)
    if prov is None:
        return counts
    nregs = max(1, int(prov[..., 3].max()) + 1)
    counts = np.zeros((res.program.wave_size, nregs), np.int64) if counts is None else counts
    hit = prov[bad]
    hit = hit[hit[:, 0] >= 0]
    np.add.at(counts, (hit[:, 2], np.minimum(hit[:, 3], counts.shape[1] - 1)), 1)
    return counts


class _Judge:
    """What is known before the device path ends: check errors and the simulation against the reference.

    ``settle`` turns the device path's candidate into the verdict, failing closed first.
    """

    def __init__(self, prog: Program, check_errors: list[str], res: SimResult | None,
                 ref: ReferenceCheck | None, reference: dict[str, Any] | None) -> None:
        self.prog, self.check_errors, self.res, self.ref = prog, check_errors, res, ref
        self.paths: list[str] = [] if res is None else ["simulated"]
        self.not_taken: dict[str, str] = {}
        self.blame: list[str] = []
        self.pattern = ""
        self.counts: np.ndarray | None = None
        self.inexact: list[str] = []  # inputs not representable in their types: the reference bound is loose
        if res is not None and ref is not None and not ref.ok:
            for name, mask in ref.bad:
                if mask.any():
                    want = np.asarray(reference[name], np.float64)  # type: ignore[index]
                    got = np.asarray(res.outputs[name], np.float64)
                    lines, pat = blame(res, name, mask, got, expected=want, got_label="simulated")
                    self.blame += lines
                    self.pattern = "; ".join(x for x in (self.pattern, pat) if x)
                    self.counts = _count(res, name, mask, self.counts)

    @property
    def sim_wrong(self) -> bool:
        return self.ref is not None and not self.ref.ok

    def settle(self, status: str, reason: str, **kw: Any) -> Verdict:
        res = self.res
        common = dict(simulated={} if res is None else res.outputs, paths=tuple(self.paths),
                      not_taken=dict(self.not_taken), check_errors=list(self.check_errors),
                      sim_vs_reference={} if self.ref is None else dict(self.ref.max_abs),
                      resolution={} if self.ref is None else {k: None if v == float("inf") else v
                                                              for k, v in self.ref.resolution},
                      report={} if res is None else res.report.summary())
        if status not in _DEVICE_VERDICTS or status in _PASSING_RUNS:
            failing = ("SIM_MISMATCH" if self.sim_wrong else "CHECK_FAILED" if self.check_errors else None)
            if failing is not None:
                why = (f"the simulated result differs from the float64 reference: {self.ref.describe()}"
                       if failing == "SIM_MISMATCH" else
                       f"check found {len(self.check_errors)} error(s): {self.check_errors[0]}")
                kw.pop("device", None), kw.pop("device_error", None), kw.pop("mismatch_counts", None)
                if failing == "SIM_MISMATCH":
                    kw.update(blame=self.blame, pattern=self.pattern, mismatch_counts=self.counts)
                return Verdict(failing, self.prog, f"{why}; {status} otherwise: {reason}", **common, **kw)
            unjudged = self.ref is None or not self.ref.max_abs
            if status in _NO_RUN and (unjudged or self.ref.unjudged):  # no reference, no run: cannot tell (exit 4)
                missing = [] if unjudged else [n for n in self.ref.unjudged if n not in self.ref.vacuous]
                what = (["nothing compared the outputs with anything independent of the program (no reference, "
                         "no device or emulator run)"] if unjudged else []) + (
                    [f"nothing compared output(s) {', '.join(missing)} (no reference for them) with anything "
                     f"independent of the program (no reference, no device or emulator run)"] if missing else []) + (
                    [f"the float64 reference cannot judge output(s) {', '.join(self.ref.vacuous)} and no device or "
                     f"emulator ran: {vacuous_note(self.ref)}"] if not unjudged and self.ref.vacuous else [])
                return Verdict("NOT_JUDGED", self.prog, f"{'; '.join(what)}; ran: "
                               f"{', '.join(self.paths) or 'nothing'}; {status} with a reference: {reason}; "
                               f"to judge it, {_how_to_judge(self.prog)}", **common, **kw)
            if EXIT_STATUS[status] == 0 and self.ref is not None and self.inexact:  # (unjudged: intent())
                reason += loose_note(self.inexact, self.ref)
        return Verdict(status, self.prog, reason, **common, **kw)

    def intent(self, v: Verdict) -> Verdict:
        """``v``, or NOT_JUDGED (exit 4) where ``v`` is a passing run (MATCH, EMULATED_MATCH) and no
        reference judged every output: the compiled code computes what the program says, but nothing
        said what the program should compute (a kernel scaling C by 1.25 was EMULATED_MATCH, exit 0,
        under ``--device emulator`` without a GPU). Applied last, so a race or a hazard still fails."""
        unjudged = self.ref is None or not self.ref.max_abs
        if v.status not in _PASSING_RUNS or not (unjudged or self.ref.unjudged):
            return v
        what = "the outputs" if unjudged else f"output(s) {', '.join(self.ref.unjudged)}"
        who = "the device" if v.status == "MATCH" else "the emulated run"
        return dataclasses.replace(v, status="NOT_JUDGED", device=None, reason=(
            f"{who} computes what the program says ({v.status} otherwise: {v.reason}), but nothing independent "
            f"of the program judged {what} (no reference{'' if unjudged else ' that can judge them'}); to judge "
            f"it, {HOW_TO_JUDGE}"))


def _how_to_judge(prog: Program) -> str:
    """HOW_TO_JUDGE, and the runs that would judge the compiled code: a device, the emulator where it models the target."""
    t = get_target(prog.target)
    runs = "run it on a device (NVIDIA: CuPy; AMD: hip-python)"
    if t.vendor == "amd" and t.family in SUPPORTED_FAMILIES:
        runs += " or in tilesim's ISA emulator (--device emulator; Python: device=\"emulator\"; not AMD hardware)"
    return f"{HOW_TO_JUDGE}; or {runs}"


def run(prog: Program, *, device: str = "auto", reference: dict[str, np.ndarray] | None = None,
        runner: Callable[..., dict[str, np.ndarray]] | None = None, device_timeout: float | None = None,
        reference_magnitude: dict[str, np.ndarray] | None = None, **arrays: np.ndarray) -> Verdict:
    """Check, simulate, emit, compile, run on a device if one is present and usable, and judge.

    ``reference``: the expected outputs (float64), ``{output tensor: array}``; without one for every
    output, and without a device or emulator run, the verdict is NOT_JUDGED (exit 4, ``ok`` False).

    ``runner(emitted, arrays) -> {output name: values}`` replaces the vendor's device runner (a
    module-level function in an importable module, not the script run as ``__main__``: it runs in
    a child process that imports it by name); ``device_timeout`` (seconds; default
    ``TILESIM_DEVICE_TIMEOUT`` or 300) is the watchdog limit for the device step.
    ``reference_magnitude``: the reference evaluated on :func:`tilesim.diff.magnitude_inputs` (where it
    is not None), which makes the simulation's bound per element (tilesim/diff/reference.py).
    """
    if device not in DEVICES:
        raise TilesimError(f"device must be one of {', '.join(DEVICES)}; got {device!r}")
    if runner is not None and not callable(runner):
        raise DeviceError(f"runner must be a function (emitted, arrays) -> outputs, got {type(runner).__name__}")
    limit = _device_timeout(device_timeout)
    t = get_target(prog.target)
    if device == "emulator" and t.vendor != "amd":
        raise TilesimError(f"device 'emulator' runs AMDGPU code only; {t.name} is {t.vendor.upper()} "
                           "(use device 'auto' for an NVIDIA GPU)")
    # a check that cannot finish is a failed check, not a pass; its per-byte LDS passes are left to the
    # simulation below, which sees the same accesses and whose findings fail the verdict (simulation_errors)
    check_errors = _check_errors(prog, lds_state=False)
    try:
        res = simulate(prog, verify=False, **arrays)  # checked just above
    except TilesimError as e:
        if not check_errors:
            raise
        judge = _Judge(prog, check_errors, None, None, None)
        judge.not_taken["simulated"] = f"{type(e).__name__}: {e}"
        return judge.settle("SIMULATED_ONLY", "not simulated")
    ref = None if reference is None else check_reference(prog, res.outputs, reference, arrays, reference_magnitude)
    # an LDS race or disagreeing replicas the simulator saw leave the device's result undefined
    judge = _Judge(prog, check_errors + simulation_errors(res), res, ref, reference)
    judge.inexact = inexact_inputs(prog, arrays) if reference is not None else []
    run_arrays = {**arrays, **_unwritten_marks(prog, res)}  # what the device / emulator starts from
    try:
        em = emit_hip(prog)
    except CodegenError as e:
        judge.not_taken["emitted"] = str(e)
        return judge.settle("SIMULATED_ONLY", f"not emitted: {e}")
    judge.paths.append("emitted")
    probe, min_cc, md, isa = None, 0, {}, []
    if t.vendor == "amd":
        try:
            comp = offline.compile_hip(em.source, t.name, wave_size=prog.wave_size)
        except ToolchainError as e:
            judge.not_taken["compiled"] = str(e)
            return judge.settle("SIMULATED_ONLY", f"compile failed: {e}")
        judge.paths.append("compiled")
        md = comp.metadata
        isa = [ln.strip() for ln in comp.isa.splitlines()
               if ln.strip().startswith(ISA_PREFIXES)][:3]
        if device == "emulator":
            return _emulate(prog, judge, reference, run_arrays, md, isa)
        why = "--device none" if device == "none" else None if runner is not None else amd.hip_runtime_missing()
        if why is not None:
            judge.not_taken["device-run"] = why
            return judge.settle("COMPILE_ONLY", f"compiled offline for {t.name}; not run on AMD hardware ({why})",
                                compile_metadata=md, isa_excerpt=isa)
        if runner is not None:  # an injected runner is judged like any device run
            fn, desc = runner, getattr(runner, "__name__", "runner")
        else:  # hip-python: the device process probes (amd_probe), checks the arch and runs (run_amd)
            fn, desc, probe = amd.run_amd, "", amd.amd_probe
    elif runner is not None and device == "auto":
        fn, desc = runner, getattr(runner, "__name__", "runner")
    else:
        why = "--device none" if device == "none" else nvidia.cuda_runtime_missing()
        if why is not None:
            judge.not_taken["compiled"] = judge.not_taken["device-run"] = why
            return judge.settle("SIMULATED_ONLY", f"emitted; not compiled or run: {why}")
        # the device process probes (once, there): this process never initialises CUDA
        fn, desc, probe, min_cc = nvidia.run_nvidia, "", nvidia.cuda_device, int(re.sub(r"\D", "", t.name) or 0)
    try:
        dr = guarded_call(fn, em, run_arrays, timeout_s=limit, what=em.kernel + (f" on {desc}" if desc else ""),
                          probe=probe, min_cc=min_cc, target=t.name)
        if dr.unavailable is not None:
            judge.not_taken["device-run"] = dr.unavailable
            if t.vendor == "amd":  # compiled offline already; only the run is missing
                return judge.settle("COMPILE_ONLY", f"compiled offline for {t.name}; not run on AMD hardware "
                                    f"({dr.unavailable})", compile_metadata=md, isa_excerpt=isa)
            if probe is not None:
                judge.not_taken["compiled"] = dr.unavailable
            return judge.settle("SIMULATED_ONLY", f"emitted; not run: {dr.unavailable}", compile_metadata=md,
                                isa_excerpt=isa)
        desc = dr.device or desc
        # an AMD probe's description names the device's gcnArchName already
        cc_text = "" if t.vendor == "amd" and probe is not None else f"sm_{dr.cc}" if dr.cc is not None else t.name
        bad_out = _check_device_outputs(prog, dr.outputs)
        if bad_out is not None:
            raise DeviceError(f"{em.kernel} on {desc}: {bad_out}", kind="bad_output", exit_status=0)
    except DeviceError as e:
        judge.not_taken["device-run"] = f"{e.kind}: {e}"
        return judge.settle("DEVICE_ERROR", str(e), device_name=desc or None, compile_metadata=md, isa_excerpt=isa,
                            device_error={"kind": e.kind, "exit_status": e.exit_status, "timeout_s": e.timeout_s})
    if probe is not None and t.vendor != "amd":
        judge.paths.append("compiled")  # NVRTC compiled it in the device process
    judge.paths.append("device-run")
    return judge.intent(_judge_device(prog, judge, {k: np.asarray(v, np.float64) for k, v in dr.outputs.items()},
                                      reference, arrays, desc, cc_text, md, isa))


_MARKS = (-12345.5, 31337.25, -1e30, 1e30, -448.0, 448.0, -6.0, 6.0, -4.0, 4.0, -3.0, 3.0, -2.0, 2.0, -1.5, 1.5,
          -1.0, 1.0, -0.5, 0.5)  # first tried: values a result seldom holds


def _unwritten_marks(prog: Program, res: SimResult) -> dict[str, np.ndarray]:
    """Initial values for the device's (or emulator's) output buffers: each output the program never reads
    starts, where the simulation wrote it, at a value its simulated result holds nowhere, so an element the
    compiled code leaves unwritten differs from the simulation. Zeros (what the runners start from) let code that skips stores pass
    wherever the right value is 0 (a relu's zeros, a zero-padded edge). An output the program reads
    (accumulating through it) starts as the simulation did; one whose result holds every candidate keeps zeros."""
    read = {op.attr("tensor") for op in prog.walk() if op.kind in TENSOR_KINDS and op.kind != "store"}
    out = {}
    for t in prog.tensors:
        if not t.output or t.name in read:
            continue
        d = dtype(t.dtype)
        held = np.unique(np.asarray(res.outputs[t.name], np.float64))
        if d.kind == "float":
            with np.errstate(all="ignore"):
                cands = np.asarray(quantize(np.array(_MARKS), d.name), np.float64)
        else:
            lo, hi = (0, (1 << d.bits) - 1) if d.kind == "uint" else (-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1)
            cands = np.array([lo, hi, lo + 1, hi - 1, *(v for v in _MARKS if lo <= v <= hi and v == int(v))], np.float64)
        free = [c for c in cands if np.isfinite(c) and c != 0 and not np.isin(c, held)]
        if free:  # only where the simulation wrote: an element it left unwritten starts at its zero, as there
            prov = res.provenance.get(t.name)
            written = np.ones(t.shape, bool) if prov is None else prov[..., 0] >= 0
            out[t.name] = np.where(written, free[0], 0.0)
    return out


def _emulate(prog: Program, judge: _Judge, reference: dict[str, Any] | None, arrays: dict[str, np.ndarray],
             md: dict[str, int], isa: list[str]) -> Verdict:
    """EMULATED_MATCH / EMULATED_MISMATCH: the compiled code run by tilesim's ISA emulator, judged as a device."""
    desc = f"tilesim's {prog.target} ISA emulator (not AMD hardware)"
    try:
        em = emulate_program(prog, arrays)
    except IsaError as e:  # not modelled: the emulator cannot tell, and says so (exit 3), never a guess
        judge.not_taken["emulated"] = str(e)
        return judge.settle("DEVICE_ERROR", f"the emulator cannot run this kernel: {e}", device_name=desc,
                            compile_metadata=md, isa_excerpt=isa,
                            device_error={"kind": "emulator", "exit_status": None, "timeout_s": None})
    judge.paths.append("emulated")
    dev = {k: np.asarray(v, np.float64) for k, v in em.outputs.items()}
    v = _judge_device(prog, judge, dev, reference, arrays, desc, prog.target, md, isa, ran="emulated")
    off = _bits_off(prog, judge, dev) if v.status == "EMULATED_MATCH" else None
    # a race, a hazard, an unwritten read or differing replicas fail a run that agreed, or that nothing could judge
    passing = v.status in ("EMULATED_MATCH", "NOT_JUDGED")
    if off is not None:  # within the tolerance, but the emulator runs the simulator's own arithmetic
        return judge.settle("EMULATED_MISMATCH", off, device=dev, device_name=desc, compile_metadata=md,
                            isa_excerpt=isa, device_vs_sim=v.device_vs_sim)
    if em.races and passing:  # right by luck of the interleaving is still a race
        races = [str(r) for r in em.races[:3]]
        return judge.settle("EMULATED_MISMATCH", f"{len(em.races)} LDS race(s) in the compiled code: {races[0]}",
                            blame=races, device=dev, device_name=desc, compile_metadata=md, isa_excerpt=isa,
                            device_vs_sim=v.device_vs_sim)
    if em.hazards and passing:  # the emulator's loads land at once; the hardware's do not
        return judge.settle("EMULATED_MISMATCH", f"{len(em.hazards)} register(s) used while their load may be in "
                            f"flight (a missing s_waitcnt) in the compiled code: {em.hazards[0]}",
                            blame=list(em.hazards[:3]), device=dev, device_name=desc, compile_metadata=md,
                            isa_excerpt=isa, device_vs_sim=v.device_vs_sim)
    if em.unwritten and passing:  # zeros in the emulator, leftovers on the hardware
        return judge.settle("EMULATED_MISMATCH", f"the compiled code reads LDS bytes no store wrote (the emulator's "
                            f"are zeros, the hardware's what an earlier workgroup left): {em.unwritten[0]}",
                            blame=list(em.unwritten[:3]), device=dev, device_name=desc, compile_metadata=md,
                            isa_excerpt=isa, device_vs_sim=v.device_vs_sim)
    if em.notes and passing:  # the emulator took one copy; the hardware may read another
        return judge.settle("EMULATED_MISMATCH", f"the compiled code feeds a matrix instruction replicated copies "
                            f"that differ (which one the hardware reads is unknown): {em.notes[0]}",
                            blame=list(em.notes[:3]), device=dev, device_name=desc, compile_metadata=md,
                            isa_excerpt=isa, device_vs_sim=v.device_vs_sim)
    return judge.intent(v)


def _computed_alike(prog: Program) -> bool:
    """Whether the emulator and the simulator compute every op of ``prog`` the same way (the catalog's
    numerics and IEEE ops; not a library function such as expf: ``Elementwise.exact_in_code``)."""
    return not any(op.kind == "elementwise" and not ELEMENTWISE[op.attr("op")].exact_in_code for op in prog.walk())


def _bits_off(prog: Program, judge: _Judge, dev: dict[str, np.ndarray]) -> str | None:
    """Why an emulated run is not the simulation bit for bit, when every op of ``prog`` is computed the
    same way by both (the emulator executes the catalog's numerics and IEEE ops; only a library function
    such as expf is not: ``Elementwise.exact_in_code``), else None. A difference within the tolerance
    there is the code generator's (a fused multiply-add moved 479 of 1024 elements by an ulp)."""
    if not _computed_alike(prog):
        return None
    assert judge.res is not None
    for name, got in dev.items():
        want = np.asarray(judge.res.outputs[name], np.float64)
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        if not same.all():
            return (f"{name}: the emulated run differs from the simulation in {int((~same).sum())} elements (at most "
                    f"{float(np.nanmax(np.abs(got - want))):.3g}), where both compute every op the same way and must "
                    f"agree bit for bit: the compiled code does not compute what the program says")
    return None


def _judge_device(prog: Program, judge: _Judge, dev: dict[str, np.ndarray], reference: dict[str, Any] | None,
                  arrays: dict[str, np.ndarray], desc: str, cc_text: str, md: dict[str, int],
                  isa: list[str], ran: str = "device-run") -> Verdict:
    """MATCH or MISMATCH (EMULATED_* when ``ran`` is ``emulated``): the compiled code's outputs against the
    simulator (the model) and the reference (the intent)."""
    agree, disagree = _RUN_VERDICTS[ran]
    res = judge.res
    assert res is not None
    rtol, atol = result_tolerance(prog)
    diffs, blames, patterns, why = {}, [], [], []
    counts: np.ndarray | None = None
    finest: dict[str, float] = {}  # per output, the least uniform relative error its comparisons reject
    for name, got in dev.items():
        want = np.asarray(res.outputs[name], np.float64)
        diffs[name] = float(np.nanmax(np.abs(got - want))) if got.size else 0.0
        exact = None if reference is None else reference.get(name)
        # the per-element scale of the exact value; the simulator and the device each within rtol of it: 2x
        scale = None if exact is None or judge.ref is None else dict(judge.ref.scales).get(name)
        for label, ref in (("simulator", want), ("reference", exact)):
            if ref is None:
                continue
            ref = np.asarray(ref, np.float64)
            used = None if scale is None else scale * (2.0 if label == "simulator" else 1.0)
            bad = beyond(got, ref, rtol, atol, used)
            finest[name] = min(finest.get(name, float("inf")), resolution(ref, rtol, atol, used))
            if bad.any():
                why.append(f"{name}: {'device' if ran == 'device-run' else 'emulated run'} differs from the {label} "
                           f"in {int(bad.sum())} elements")
                counts = _count(res, name, bad, counts)
                b, pat = blame(res, name, bad, got, expected=ref)
                blames += b
                patterns.append(pat)
                break
    extra = "" if reference is None else " and the float64 reference"
    common = dict(device=dev, device_name=desc, compile_metadata=md, isa_excerpt=isa, device_vs_sim=diffs)
    if why:
        where = f"ran on {desc}" + (f" ({cc_text})" if cc_text else "") if ran == "device-run" else f"ran in {desc}"
        return judge.settle(disagree, f"{where}; " + "; ".join(why), blame=blames,
                            pattern="; ".join(patterns), mismatch_counts=counts, **common)
    where, who = ((f"ran on {desc}" + (f" ({cc_text})" if cc_text else ""), "device") if ran == "device-run"
                  else (f"ran in {desc}", "emulated run"))
    # a bound that passes a result off by a quarter everywhere judged nothing (an f16 accumulator over
    # K=1024 may round 1024 times: rtol 1.0), unless the emulated run is then held to the bit
    vacuous = {n: r for n, r in finest.items() if RESOLUTION_LIMIT <= r < float("inf")}
    if vacuous and not (ran == "emulated" and _computed_alike(prog)):
        return judge.settle("NOT_JUDGED", f"{where}; the {who} is within the bound of the simulator{extra}, but that "
                            f"bound (rtol {rtol:.2g}: the accumulator rounded once per product, as the {who} may) "
                            f"passes a result off by {', '.join(f'{r:.0%} in {n}' for n, r in vacuous.items())} "
                            f"everywhere (a quarter or more): the run judged nothing there; a shorter K per accumulator or "
                            f"a wider accumulator makes it judgeable",
                            **{k: v for k, v in common.items() if k != "device"})  # (no MATCH: no device outputs)
    return judge.settle(agree, f"{where}; {who} equals the simulator{extra} within rtol {rtol:.2g}",
                        **common)
