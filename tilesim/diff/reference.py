"""The float64 reference: how far a result may be from it, and the comparison every verdict uses.

The tolerance is built from the numerics model (:func:`tilesim.matrix.numerics.tolerance`: ``k``
roundings of each matrix instruction's accumulator over the program's whole K for a device's
result, one per instruction, K / k, for the simulator's own: ``check_reference``) plus one rounding
of every narrower float type of an output tensor. Errors are measured per element against ``atol + rtol * scale``: relative to
the data, with no allowance in the data's own units (``rtol * (scale + 1)`` passed a bf16 GEMM that
stores zeros once its inputs were of size 0.01). ``atol`` is the instruction's own floor plus the
spacing of the subnormal numbers of those types (below its smallest normal number a type keeps an
absolute, not a relative, precision). A ``cast`` inside the program is the code under test, not the
interface: against the float64 reference it widens nothing (a kernel that rounds its inputs or its
accumulator through bf16 or fp8 is judged as what it computes; a ``reference()`` that rounds where the
kernel does judges it). A device compared with the simulator counts the casts: both round there.

The scale: a matrix instruction's rounding error in ``C_ij`` is bounded by ``(|A| |B|)_ij + |C0_ij|``
(the standard bound), not by ``|C_ij|`` (which cancellation can make 0). Where the program is a
chain of monotone operations — loads, stores, copies, mma, adds, products, sums, maxima (relu), casts;
no subtraction, negation, negative constant or nonlinear function — the same math evaluated on ``|inputs|`` *is* that bound
for every element, so the caller evaluates ``reference()`` there (:func:`magnitude_inputs` says when it
may) and passes it as ``magnitude``; the scale is ``max(|reference|, magnitude)`` per element. A
magnitude below ``|reference|`` anywhere shows the reference is not monotone after all: that output
falls back to the tile's scale, ``max |reference|``. An output without a magnitude (``--expect`` data,
a ``reference=`` dict) takes the program itself simulated on ``|inputs|`` (:func:`program_magnitude`),
capped at the tile's scale (:func:`bounded_scale`: the code under test may tighten its bound, never
loosen it); without inputs, or for a program that is not monotone, the tile's scale. The
tile's scale lets a small wrong element next to a huge one pass (a row of A at 1e4 and one at 1e-2:
the error of a layout bug in the small rows is below ``rtol`` times the large rows' values); the
per-element one does not.

A layout bug moves whole elements: its error is of the order of the data itself, far above
these bounds (a gfx1100 GEMM declared with RDNA4's accumulator rows: 26.6 against a bound of
about 2e-4), so the bound can afford to be generous without hiding one. Inputs that are not exactly
representable in their declared types (:func:`inexact_inputs`: the kernel reads them rounded, a
reference computed from the caller's floats did not) widen nothing: a widening of ``2 eps sqrt(K)``
per input (bf16, K=1024: rtol 1.0) passed a GEMM 5% off and one that skips k-steps. The command line
rounds the inputs to their declared types (:func:`rounded_inputs`) before it calls ``reference()``
and the simulator; a comparison that fails with such inputs says they may be the cause
(``ReferenceCheck.inexact``), and a passing one holds under the model's own bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from tilesim.errors import TilesimError
from tilesim.ir.core import Op, Program
from tilesim.ir.ops import ELEMENTWISE, KINDS, MMA_KINDS, REDUCE
from tilesim.matrix.catalog import lookup
from tilesim.matrix.dtypes import dtype
from tilesim.matrix.numerics import quantize, tolerance
from tilesim.wave.sim import simulate

__all__ = ["RESOLUTION_LIMIT", "ReferenceCheck", "bounded_scale", "check_reference", "inexact_inputs",
           "magnitude_inputs", "program_magnitude", "resolution", "result_tolerance", "rounded_inputs",
           "usable_magnitude"]

_FLOOR = 1e-6  # programs without a matrix instruction: a few f32 roundings (exp, sums of a row); not
# for programs computed in integers only, which are compared exactly
_FLOOR64 = 16 * 2.0 ** -52  # the same for programs in f64 throughout
# A comparison whose bound lets through a result off by this fraction of the reference everywhere
# judges nothing (at 0.5 it passed C * 1.25 with an f16 accumulator over K=1024): such an output is
# not judged (:func:`resolution`). Outputs of 2-bit-significand types (bf8, fp6 e3m2, fp4) round by a
# quarter or more themselves, so a reference cannot judge them either.
RESOLUTION_LIMIT = 0.25


def _eps(name: str) -> float:
    d = dtype(name)
    if d.kind != "float":
        return 0.0
    if d.truncated_f32:  # f32 storage, 10 explicit mantissa bits in the math
        return 2.0 ** -10
    return float(ml_dtypes.finfo(d.np).eps)


def _subnormal(name: str) -> float:
    """The spacing of ``name``'s subnormal numbers (its absolute precision near 0); 0 for integers."""
    d = dtype(name)
    if d.kind != "float" or d.truncated_f32:
        return float(np.finfo(np.float32).smallest_subnormal) if d.kind == "float" else 0.0
    return float(ml_dtypes.finfo(d.np).smallest_subnormal)


def _k_total(prog: Program) -> int:
    """The k-terms an output can accumulate: the size named K, but at most what the program's matrix
    instructions can sum (each one's k times the trips of the loops around it, added over all of
    them): a dim merely named K (or a JSON label) must not loosen the bound."""
    label = max([s for d, s in prog.sizes if d == "K"] or [1])
    return max(1, min(label, _k_run(prog.body, prog.target, 1)))


def _k_run(block: Any, target: str, trips: int) -> int:
    total = 0
    for op in block.ops:
        if op.kind in MMA_KINDS:
            total += trips * lookup(op.attr("instr"), target).k
        inner = trips
        if op.kind == "loop":
            args = op.args[:3]
            inner = trips * (len(range(*args)) if all(isinstance(a, int) for a in args) else 1 << 62)
        for b in op.blocks():
            total += _k_run(b, target, inner)
    return total


def result_tolerance(prog: Program, *, simulated: bool = False) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing ``prog``'s outputs with a float64 reference (see the module docstring).

    The inputs take no part: those the kernel reads rounded are the caller's to round
    (:func:`rounded_inputs`; the module docstring). ``simulated``: the bound of
    the simulator's own result, whose model rounds the accumulator once per instruction (K / k
    roundings), not once per product as a device may (K roundings: with an f16 accumulator at
    K=1024 that bound is 1.0, which passes anything).
    """
    rtol = atol = 0.0
    k = _k_total(prog)
    for op in prog.walk():
        if op.kind in MMA_KINDS:
            row = lookup(op.attr("instr"), prog.target)
            r, a = tolerance(row, k_terms=max(1, -(-k // row.k)) if simulated else k)
            rtol, atol = max(rtol, r), max(atol, a)
    # the output types are the interface the reference's author sees; a cast inside the program is the
    # code under test: against the float64 reference it buys nothing (a round trip through bf8 bought
    # rtol 0.5 and hid a kernel 30% off). A device and the simulator both round at the casts, and a
    # device accumulator one bit away may round to the neighbouring narrow value: there they count, two
    # units each. The simulator's own result is the computed value rounded once to the output type (half
    # a unit, at most eps |x| <= eps * scale): one unit (two gave bf8 outputs rtol 0.5, which cannot fail)
    narrow = {t.dtype for t in prog.tensors if t.output}
    if not simulated:
        narrow |= set(cast_types(prog))
    rtol += sum((1.0 if simulated else 2.0) * _eps(n) for n in narrow if _eps(n) > _eps("f32"))
    atol += max([_subnormal(n) for n in narrow] or [0.0])
    kinds = {(dtype(t).kind, dtype(t).bits) for t in _types(prog) if t}
    if all(k in ("int", "uint") for k, _ in kinds):  # exact: no floor (1e-6 of a full-range i32 bias let 2,000 pass)
        return rtol, atol
    if all(k != "float" or bits == 64 for k, bits in kinds):  # f64 throughout: a few f64 roundings, not f32's
        return max(rtol, _FLOOR64), atol  # (an f64 GEMM rounding A through f32 passed under 1e-6)
    return max(rtol, _FLOOR), atol


def _types(prog: Program) -> list[str]:
    """The element types of the interface (tensors) and of every matrix instruction's operands; not the
    fragments a cast or a converting load makes: those are the code under test (a round trip through f32
    must not loosen an f64 program's bound, as a cast buys nothing: the module docstring)."""
    out = [t.dtype for t in prog.tensors]
    out += [x for op in prog.walk() if op.kind in MMA_KINDS for x in lookup(op.attr("instr"), prog.target).types]
    return out


def cast_types(prog: Program) -> list[str]:
    """The float types, narrower than f32, that the program's ``cast`` ops round to (sorted)."""
    return sorted({op.out.dtype for op in prog.walk() if op.kind == "cast" and op.out is not None and op.out.dtype
                   and _eps(op.out.dtype) > _eps("f32")})


def inexact_inputs(prog: Program, arrays: dict[str, np.ndarray] | None) -> list[str]:
    """The float input tensors whose given values are not exactly representable in their declared type."""
    out = []
    for t in prog.tensors:
        arr = None if arrays is None or t.output else arrays.get(t.name)
        if arr is None or dtype(t.dtype).kind != "float":
            continue
        a64 = np.asarray(arr, np.float64)
        with np.errstate(all="ignore"):
            if not np.array_equal(np.asarray(quantize(a64, t.dtype), np.float64), a64, equal_nan=True):
                out.append(t.name)
    return out


def rounded_inputs(prog: Program, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``arrays`` with each inexact float input rounded to its declared type (the values the kernel
    reads), so that a reference computed from them needs no widened bound."""
    out = dict(arrays)
    for name in inexact_inputs(prog, arrays):
        d = dtype(prog.tensor(name).dtype)
        with np.errstate(all="ignore"):
            q = np.asarray(quantize(np.asarray(arrays[name], np.float64), d.name), np.float64)
        typed = q.astype(d.np)  # the tensor's own numpy type where numpy knows it (f16, f32), else float64
        out[name] = typed if typed.dtype.kind == "f" and np.array_equal(typed.astype(np.float64), q, equal_nan=True) \
            else q
    return out


# which ops are monotone (their value at |inputs| bounds their value's magnitude) is the op table's
# fact (tilesim/ir/ops.py: OpKind/Elementwise/Reduce.monotone); elementwise add/mul/max also need a
# fragment or a non-negative constant as operand (relu, max(x, 0): |max(a, b)| <= max(|a|, |b|)).
# An mma with a modifier that negates an operand or reads it signed (the catalog row's modifier kinds:
# neg/neg_hi on WMMA, blgp on CDNA3/4 f64 MFMA, neg as iu8 signedness) is not: its reference negates.
_NEGATING_KINDS = ("negate", "signedness")


def _negates(op: Op, target: str) -> bool:
    mods = dict(op.attr("modifiers") or ())  # given at all, as before: neg=0 counts too
    return any(m.kind in _NEGATING_KINDS and m.name in mods for m in lookup(op.attr("instr"), target).modifiers)


def _monotone(prog: Program) -> bool:
    for op in prog.walk():
        if op.kind in MMA_KINDS and _negates(op, prog.target):
            return False
        if op.kind == "reduce" and REDUCE[op.attr("op")].monotone:
            continue
        if op.kind == "elementwise" and ELEMENTWISE[op.attr("op")].monotone:
            other = op.args[1] if len(op.args) > 1 else None
            if getattr(other, "kind", None) == "frag" or (isinstance(other, (int, float)) and other >= 0):
                continue
            return False
        if not KINDS[op.kind].monotone:
            return False
    return True


def magnitude_inputs(prog: Program, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """``|arrays|`` (float tensors as their own dtype, integers as int64) when ``prog`` is a chain of
    monotone operations, so that ``reference(**magnitude_inputs(...))`` bounds each output element's
    rounding error (the module docstring); ``None`` when it is not."""
    if not _monotone(prog):
        return None
    out = {}
    for k, v in arrays.items():
        a = np.asarray(v)
        out[k] = np.abs(a) if a.dtype.kind == "f" else np.abs(a.astype(np.int64)) if a.dtype.kind in "iub" else a
    return out


def usable_magnitude(reference: object, magnitude: object, arrays: dict[str, np.ndarray] | None) -> dict:
    """``magnitude`` less the outputs where it is no bound: where some input is negative but the
    reference on ``|inputs|`` equals the reference itself, element for element (a reference that
    returns stored results, or ignores signs), it says nothing of the ``|A| |B|`` terms, and an
    element that cancels to ~0 would be judged against its own size. Those keep the tile's scale."""
    if not isinstance(magnitude, dict) or not isinstance(reference, dict):
        return {}
    signed = any(np.asarray(a).dtype.kind in "fi" and np.any(np.asarray(a) < 0) for a in (arrays or {}).values())
    out = {}
    for name, mag in magnitude.items():
        try:
            same = signed and np.array_equal(np.asarray(mag, np.float64), np.asarray(reference.get(name), np.float64),
                                             equal_nan=True)
        except (TypeError, ValueError):
            continue
        if not same:
            out[name] = mag
    return out


def per_element_scale(ref: np.ndarray, magnitude: object) -> np.ndarray | None:
    """The per-element scale ``max(|ref|, magnitude)``, or None (the tile's scale) when ``magnitude``
    is missing, misshapen, or below ``|ref|`` somewhere (the reference is not monotone)."""
    if magnitude is None:
        return None
    try:
        mag = np.abs(np.asarray(magnitude, np.float64))
    except (TypeError, ValueError):
        return None
    if mag.shape != ref.shape:
        return None
    a = np.abs(ref)
    fin = np.isfinite(a)
    with np.errstate(invalid="ignore"):
        if not np.all(np.isfinite(mag[fin])) or np.any(mag[fin] < a[fin] * (1 - 1e-9)):
            return None
    return np.where(fin, np.maximum(a, np.where(np.isfinite(mag), mag, 0.0)), 0.0)


def program_magnitude(prog: Program, arrays: dict[str, np.ndarray] | None) -> dict[str, np.ndarray]:
    """The program itself simulated on :func:`magnitude_inputs` (``{}`` where it is not monotone, without
    inputs, for integer programs, which are compared exactly, or where the simulation fails): the
    per-element scale where no reference on ``|inputs|`` gives one (``--expect`` data, a ``reference=``
    dict). It is the code under test, so :func:`bounded_scale` never lets it loosen the tile's bound;
    for a right program it is the ``|A| |B| + |C0|`` bound itself."""
    absolute = None if arrays is None else magnitude_inputs(prog, arrays)
    if absolute is None or result_tolerance(prog, simulated=True)[0] == 0.0:
        return {}
    try:
        return dict(simulate(prog, verify=False, **absolute).outputs)
    except TilesimError:
        return {}


def bounded_scale(ref: np.ndarray, magnitude: object) -> np.ndarray | None:
    """The per-element scale ``max(|ref|, |magnitude|)`` capped at the tile's, ``max |ref|`` (the tile's
    where ``magnitude`` is not finite); None when it is missing or misshapen. For a magnitude from the
    program under test (:func:`program_magnitude`): it can only tighten the tile's bound."""
    try:
        mag = np.abs(np.asarray(magnitude, np.float64))
    except (TypeError, ValueError):
        return None
    if magnitude is None or mag.shape != ref.shape:
        return None
    a = np.abs(ref)
    fin = np.isfinite(a)
    tile = float(a[fin].max()) if fin.any() else 0.0
    mag = np.where(np.isfinite(mag), mag, tile)
    return np.where(fin, np.minimum(tile, np.maximum(a, mag)), 0.0)


@dataclass(frozen=True)
class ReferenceCheck:
    """A result against the float64 reference: per output, the largest error and the elements beyond the bound."""

    max_abs: tuple[tuple[str, float], ...]
    bad: tuple[tuple[str, np.ndarray], ...]  # (output, bool mask of elements beyond the bound)
    rtol: float
    atol: float
    unjudged: tuple[str, ...] = ()  # outputs the reference leaves out, or gives no finite value: nothing was said
    per_element: tuple[str, ...] = ()  # outputs judged against the per-element scale (the module docstring)
    casts: tuple[str, ...] = ()  # narrow types the program casts to: the bound counts no rounding of theirs
    inexact: tuple[str, ...] = ()  # inputs not exactly in their types: the kernel read them rounded
    scales: tuple[tuple[str, np.ndarray], ...] = ()  # the per-element scale of each output in per_element
    # the least uniform relative error the comparison rejects, per output (:func:`resolution`), and
    # the outputs where it is RESOLUTION_LIMIT or more: compared, but not judged (also in unjudged)
    resolution: tuple[tuple[str, float], ...] = ()
    vacuous: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not any(mask.any() for _, mask in self.bad)

    def __bool__(self) -> bool:  # true only when it passes (a dataclass is always true)
        return self.ok

    def describe(self) -> str:
        return "; ".join(f"{name}: {int(mask.sum())} of {mask.size} elements differ from the float64 reference "
                         f"beyond rtol {self.rtol:.2g} (max |error| {dict(self.max_abs)[name]:.3g})"
                         for name, mask in self.bad if mask.any()) + (
            f"; the program rounds to {', '.join(self.casts)} (ts.cast) and the bound counts no cast: a "
            f"reference() that rounds where the kernel does judges it" if self.casts and not self.ok else "") + (
            f"; inputs {', '.join(self.inexact)} are not exactly representable in their tensor types: the kernel "
            f"read them rounded, the reference perhaps not (round them first: tilesim.diff.rounded_inputs, as the "
            f"command line does)" if self.inexact and not self.ok else "")


def _bound(ref: np.ndarray, rtol: float, atol: float, scale: np.ndarray | None) -> np.ndarray | float:
    """``atol + rtol * scale``; ``scale``: per element (from :func:`per_element_scale`), else the
    tile's, ``max |ref|``. No ``+ 1``: an allowance in the data's units."""
    if scale is None:
        finite = ref[np.isfinite(ref)]
        scale = float(np.abs(finite).max()) if finite.size else 0.0
    return atol + rtol * scale


def beyond(got: np.ndarray, ref: np.ndarray, rtol: float, atol: float,
           scale: np.ndarray | None = None) -> np.ndarray:
    """Elements of ``got`` farther from ``ref`` than the bound (:func:`_bound`; NaN where both are NaN is equal)."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    with np.errstate(invalid="ignore"):
        close = np.abs(got - ref) <= _bound(ref, rtol, atol, scale)
    same_special = (np.isnan(got) & np.isnan(ref)) | (np.isinf(ref) & (got == ref))
    return ~(close | same_special)


def resolution(ref: np.ndarray, rtol: float, atol: float, scale: np.ndarray | None = None) -> float:
    """The least ``r`` for which a result ``(1 + r) * ref`` (every element off by the fraction ``r``)
    fails the comparison: the least ``bound / |ref|`` over the nonzero finite reference elements;
    inf without one (no relative error to miss; a nonzero result still fails). With an f16
    accumulator over K=4096 terms the model's sound bound is above every value of C, so C * 1.5
    passed it: at :data:`RESOLUTION_LIMIT` or more the output is not judged."""
    ref = np.asarray(ref, np.float64)
    nonzero = np.isfinite(ref) & (ref != 0)
    if not nonzero.any():
        return float("inf")
    bound = np.broadcast_to(_bound(ref, rtol, atol, scale), ref.shape)
    return float((bound[nonzero] / np.abs(ref[nonzero])).min())


def check_reference(prog: Program, outputs: dict[str, np.ndarray], reference: object,
                    arrays: dict[str, np.ndarray] | None = None,
                    magnitude: dict[str, np.ndarray] | None = None) -> ReferenceCheck:
    """Compare ``outputs`` with ``reference`` (``{output name: float64 array}``); ``magnitude``: the
    reference evaluated on :func:`magnitude_inputs` (per-element scale; the module docstring).

    A reference that is not a dict, names a tensor that is not an output, or has the wrong shape is
    a :class:`~tilesim.errors.TilesimError`; outputs it leaves out, or gives no finite element of (NaN
    or inf everywhere), are not judged; nor are outputs whose bound passes a result off by
    :data:`RESOLUTION_LIMIT` everywhere (:func:`resolution`).
    """
    if not isinstance(reference, dict):
        raise TilesimError(f"the reference must be a dict of output tensors, got {type(reference).__name__}")
    shapes = {t.name: tuple(t.shape) for t in prog.tensors if t.output}
    rtol, atol = result_tolerance(prog, simulated=True)
    max_abs, bad, per_element, nan_only, scales, resolutions = [], [], [], [], [], []
    magnitude = usable_magnitude(reference, magnitude, arrays)
    derived: dict[str, np.ndarray] | None = None  # the program on |inputs|, where no magnitude is given
    for name, ref in reference.items():
        if name not in shapes:
            raise TilesimError(f"the reference names {str(name)[:80]!r}, which is not an output tensor; "
                               f"outputs: {', '.join(sorted(shapes))}")
        try:
            ref = np.asarray(ref, np.float64)
        except (TypeError, ValueError):
            raise TilesimError(f"the reference's {name} is not numeric ({type(ref).__name__})") from None
        if ref.shape != shapes[name]:
            raise TilesimError(f"the reference's {name} has shape {ref.shape}; the output is {shapes[name]}")
        if ref.size and not np.isfinite(ref).any():  # NaN = NaN, inf = inf everywhere says nothing of the
            nan_only.append(name)  # kernel (inputs that overflowed their types: any kernel giving the same passed)
            continue
        got = np.asarray(outputs[name], np.float64)
        with np.errstate(invalid="ignore"):
            diff = np.abs(got - ref)
        max_abs.append((name, float(np.nanmax(diff)) if diff.size and not np.isnan(diff).all() else 0.0))
        scale = per_element_scale(ref, magnitude.get(name))
        if scale is None and name not in magnitude and rtol > 0:  # --expect data, a reference= dict: without
            derived = program_magnitude(prog, arrays) if derived is None else derived  # it, the tile's scale
            scale = bounded_scale(ref, derived.get(name))  # hid a bug in the small rows (round five)
        if scale is not None:
            per_element.append(name)
            scales.append((name, scale))
        bad.append((name, beyond(got, ref, rtol, atol, scale)))
        resolutions.append((name, resolution(ref, rtol, atol, scale)))
    vacuous = tuple(n for n, r in resolutions if RESOLUTION_LIMIT <= r < float("inf"))
    return ReferenceCheck(tuple(max_abs), tuple(bad), rtol, atol,
                          tuple(n for n in shapes if n not in reference or n in nan_only or n in vacuous),
                          tuple(per_element), tuple(cast_types(prog)), tuple(inexact_inputs(prog, arrays)),
                          tuple(scales), tuple(resolutions), vacuous)
