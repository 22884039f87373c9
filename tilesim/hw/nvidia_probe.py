"""Real-silicon check of the catalog's NVIDIA ``mma.sync`` fragments (needs CuPy and an NVIDIA GPU).

For one catalog row, one kernel launch runs many warps; warp ``w`` loads *its own* register
image (packed in Python through the catalog's layouts), executes the ``mma.sync`` instruction
through inline PTX, and stores D's registers. The probes are:

* one warp per A element ``(i, k)``: A = one-hot at (i, k), B = distinct small integers, C = 0,
  so the hardware's D row ``i`` must be ``B[k, :]`` and every other row zero;
* one warp per B element ``(k, j)``: B one-hot, A distinct integers: D column ``j`` = ``A[:, k]``;
* one warp of random integers for A, B, C together.

A wrong (lane, slot) for any element shows up as a wrong row/column, and the blame names it.
Random data alone cannot see a K permutation shared by A and B; the one-hot probes can.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilesim.errors import DeviceError
from tilesim.matrix.catalog_nvidia import mma_sync_asm
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.matrix.registers import pack, unpack

__all__ = ["ProbeResult", "probe_inputs", "kernel_source", "run_probes"]


@dataclass(frozen=True)
class ProbeResult:
    mnemonic: str
    probes: int
    mismatches: list[str]

    @property
    def ok(self) -> bool:
        return not self.mismatches


def probe_inputs(row: MatrixInstruction, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Logical A, B, C stacks (one per warp) and a label per warp."""
    m, n, k = row.m, row.n, row.k
    rng = np.random.default_rng(seed)
    unsigned = row.types[0].startswith("u")
    lo = 0 if unsigned else -3
    A, B, C, labels = [], [], [], []
    base_b = (np.arange(k * n).reshape(k, n) % 7 + 1).astype(np.float64)  # distinct non-zero rows
    base_a = (np.arange(m * k).reshape(m, k) % 5 + 1).astype(np.float64)
    for i in range(m):
        for kk in range(k):
            a = np.zeros((m, k))
            a[i, kk] = 1
            A.append(a), B.append(base_b), C.append(np.zeros((m, n))), labels.append(f"A[{i}][{kk}]")
    for kk in range(k):
        for j in range(n):
            b = np.zeros((k, n))
            b[kk, j] = 1
            A.append(base_a), B.append(b), C.append(np.zeros((m, n))), labels.append(f"B[{kk}][{j}]")
    A.append(rng.integers(lo, 4, (m, k)).astype(np.float64))
    B.append(rng.integers(lo, 4, (k, n)).astype(np.float64))
    C.append(rng.integers(-3, 4, (m, n)).astype(np.float64))
    labels.append("random")
    return np.stack(A), np.stack(B), np.stack(C), labels


def kernel_source(row: MatrixInstruction) -> str:
    regs = row.registers_for(32)
    wide = row.types[0] == "f64"
    na, nb, nc = (regs[o] // (2 if wide else 1) for o in "ABC")
    t = "unsigned long long" if wide else "unsigned int"
    text, outs, ins = mma_sync_asm(row, "d", "a", "b", "c")
    return f"""
extern "C" __global__ void probe(const {t}* A, const {t}* B, const {t}* C, {t}* D) {{
  const int w = blockIdx.x, lane = threadIdx.x;
  {t} a[{na}], b[{nb}], c[{nc}], d[{nc}];
  for (int i = 0; i < {na}; ++i) a[i] = A[(w * 32 + lane) * {na} + i];
  for (int i = 0; i < {nb}; ++i) b[i] = B[(w * 32 + lane) * {nb} + i];
  for (int i = 0; i < {nc}; ++i) c[i] = C[(w * 32 + lane) * {nc} + i];
  asm volatile({text}
               : {outs} : {ins});
  for (int i = 0; i < {nc}; ++i) D[(w * 32 + lane) * {nc} + i] = d[i];
}}
"""


def _images(row: MatrixInstruction, op: str, mats: np.ndarray) -> np.ndarray:
    imgs = np.stack([pack(row, op, m, wave_size=32) for m in mats])  # (warps, 32, regs) uint32
    if row.types[0] == "f64":
        imgs = imgs.view(np.uint64)
    return np.ascontiguousarray(imgs)


def run_probes(row: MatrixInstruction, seed: int = 0) -> ProbeResult:
    """Run the probes for one NVIDIA row on the current CUDA device (CuPy)."""
    try:
        import cupy as cp
    except ImportError as e:  # pragma: no cover - exercised only where CuPy is missing
        raise DeviceError(f"the NVIDIA probe needs CuPy: {e}") from None
    if row.kind != "mma_sync":
        raise DeviceError(f"{row.mnemonic} is not an NVIDIA mma.sync row")
    A, B, C, labels = probe_inputs(row, seed)
    ia, ib, ic = (_images(row, op, x) for op, x in (("A", A), ("B", B), ("C", C)))
    fn = cp.RawKernel(kernel_source(row), "probe", options=("-std=c++17",))
    dA, dB, dC = (cp.asarray(x) for x in (ia, ib, ic))
    dD = cp.zeros_like(dC)
    fn((len(labels),), (32,), (dA, dB, dC, dD))
    out = cp.asnumpy(dD)
    if row.types[0] == "f64":
        out = out.view(np.uint32)
    mismatches = []
    for w, label in enumerate(labels):
        got = unpack(row, "D", out[w].reshape(32, -1), wave_size=32).values[0]
        want = A[w] @ B[w] + C[w]
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)
            i, j = (int(x) for x in bad[0])
            mismatches.append(f"{label}: D[{i}][{j}] = {got[i, j]:g} on the GPU, {want[i, j]:g} expected "
                              f"({len(bad)} elements differ)")
    return ProbeResult(row.mnemonic, len(labels), mismatches)
