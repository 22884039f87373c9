"""The numba kernels of :mod:`tilesim.wave.kernels`, in their own module so that importing tilesim
does not import numba (about 0.35 s): :func:`tilesim.wave.kernels._jit` imports this on first use.
Compiled on first call and cached on disk (``cache=True``). None uses numba's thread pool
(``parallel=True``): on a shared two-core machine its hand-offs made the per-op batched dot product
40x slower than a plain loop (10 ms vs 0.24 ms for 256 waves), and its workers spin at each
parallel region's barrier; a large mma chain or step runs the one-thread kernel on Python threads
instead (:func:`tilesim.wave.kernels.mma_chain`)."""

import functools

import llvmlite.binding as llvm
import numba
import numba.core.cgutils
import numba.core.config
import numba.extending
import numpy as np
from llvmlite import ir


@numba.njit(cache=True, nogil=True)
def _batched_dot_jit(a, b, c):  # pragma: no cover - compiled
    G, M, K = a.shape
    N = b.shape[2]
    out = np.empty((G, M, N), np.float64)
    nan = np.zeros(G, np.bool_)
    for g in range(G):
        acc = np.empty(N, np.float64)
        for m in range(M):
            acc[:] = 0.0
            for k in range(K):
                x = a[g, m, k]
                for n in range(N):
                    acc[n] = acc[n] + x * b[g, k, n]
            for n in range(N):
                v = acc[n] + c[g, m, n]
                out[g, m, n] = v
                if v != v:
                    nan[g] = True
    return out, nan.any()


# The MAC kernel below computes each output element as ``s = 0.0; s += a[k] * b[k] for k in order;
# d = s + c``: one chain per element, in k order. The tile shape is a compile-time constant, and
# :func:`_tile_mac` writes the tile's arithmetic out as LLVM vector code (``<W x double>`` across
# output columns), a block of rows at a time with the block's accumulators held in registers
# (SSA values, so no memory and no alias checks): for each k, the B row is loaded once and each
# row's A value broadcast against it. Within an element nothing changes (k order, one multiply and
# one add, or one FMA, per term); the many independent elements keep both FMA ports busy. (The
# earlier loop form, four vector chains of 16 dependent adds per row with the sums in memory ran at
# about a quarter of that: 5.9 G MAC/s on a 16x16x16 GEMM against 24 in a micro-benchmark.)
#
# FMA: with ``contract``, ``s + a * b`` is one fused multiply-add. That gives the same bits as the
# separate multiply and add whenever ``a * b`` is exact in float64, because then the FMA's one
# rounding of ``s + a*b`` and the add's rounding of ``s + fl(a*b)`` round the same real number.
# ``a * b`` is exact when both are float32 values (the callers' operands are 8- or 16-bit floats,
# all float32 values; :func:`tilesim.wave.kernels.mma_chain` checks): 24 + 24 significand bits fit
# in 53, and |a*b| lies in [2**-298, 2**256) or is 0, inside float64's normal range, so no overflow,
# underflow or subnormal rounding; 0, -0, Inf and NaN products are the same values either way
# (inf * 0 is NaN in both). Without ``contract``, a plain ``fmul`` and ``fadd`` (no fast-math
# flags: LLVM may not fuse, reassociate or drop the ``0.0 +``). tests/test_mac_kernel.py checks
# both on adversarial spreads.


def _vector_shape() -> tuple[int, int]:
    """(doubles per vector register, vector registers) of the CPU numba compiles for: 8 and 32 with
    AVX-512, else 4 and 16 (AVX2; narrower machines split the vectors, same bits)."""
    features = numba.core.config.CPU_FEATURES
    if features is None:
        try:
            features = llvm.get_host_cpu_features().flatten()
        except RuntimeError:  # a platform llvmlite cannot ask: the narrower plan (same bits)
            features = ""
    return (8, 32) if "+avx512f" in features.split(",") else (4, 16)


def _blocking(M: int, N: int) -> tuple[int, int, int]:
    """(vector width ``W`` dividing ``N``, rows, vectors) of a block: ``rows`` (dividing ``M``) by
    ``vectors`` (dividing ``N / W``) accumulators, the most that leave registers for one B row
    piece and a broadcast; of those, the fewest loads a term (``rows + vectors``)."""
    W, regs = _vector_shape()
    while N % W:
        W //= 2
    fits = [(r * v, -(r + v), r, v) for r in range(1, M + 1) if M % r == 0
            for v in range(1, N // W + 1) if (N // W) % v == 0 and r * v + v + 2 <= regs]
    _, _, rows, vectors = max(fits)
    return W, rows, vectors


@numba.extending.intrinsic(prefer_literal=True)
def _tile_mac(typingctx, a, a0, b, b0, c, c0, M, N, K, contract):  # pragma: no cover - compiled
    """One step of one tile: for ``m < M``, ``n < N``, ``c[c0 + m*N + n] = f32(s + c[...])`` with
    ``s = sum_k a[a0 + k*M + m] * b[b0 + k*N + n]`` from +0 in k order in float64 (``a`` k-major,
    ``b`` row-major float64, ``c`` float32; flat arrays; the shape and ``contract`` literals)."""
    sig = numba.types.void(a, a0, b, b0, c, c0, M, N, K, contract)
    M, N, K, fused = M.literal_value, N.literal_value, K.literal_value, contract.literal_value
    W, rows, vecs = _blocking(M, N)
    # up to 16 terms straight-line code; more (K of 32-128) as a loop of 8 a pass: unrolled, a
    # 32x32x64 tile took LLVM 9 s to compile
    unroll = K if K <= 16 else next(u for u in (8, 4, 2, 1) if K % u == 0)

    def codegen(context, builder, signature, args):
        f64, i32, i64 = ir.DoubleType(), ir.IntType(32), ir.IntType(64)
        vd, vf = ir.VectorType(f64, W), ir.VectorType(ir.FloatType(), W)
        pa, pb, pc = (builder.gep(context.make_array(signature.args[i])(context, builder, args[i]).data,
                                  [args[i + 1]]) for i in (0, 2, 4))
        fma = numba.core.cgutils.get_or_insert_function(builder.module, ir.FunctionType(vd, [vd] * 3),
                                                        f"llvm.fma.v{W}f64")
        undef, splat = ir.Constant(vd, ir.Undefined), ir.Constant(ir.VectorType(i32, W), [0] * W)

        def at(base, k, stride, offset, ty):  # &base[k * stride + offset] as a ``ty`` pointer
            i = builder.add(builder.mul(k, ir.Constant(i64, stride)), ir.Constant(i64, offset))
            return builder.bitcast(builder.gep(base, [i]), ty.as_pointer())

        def terms(s, ks, a, b):  # the block's sums ``s`` after the terms ``k`` in ``ks``, in order
            for k in ks:
                brow = [builder.load(at(b, k, N, v * W, vd), align=8) for v in range(vecs)]
                for i in range(rows):
                    x = builder.insert_element(undef, builder.load(at(a, k, M, i, f64), align=8), ir.Constant(i32, 0))
                    x = builder.shuffle_vector(x, undef, splat)
                    for v in range(vecs):
                        s[i][v] = (builder.call(fma, [x, brow[v], s[i][v]]) if fused
                                   else builder.fadd(s[i][v], builder.fmul(x, brow[v])))
            return s

        def loop(count, carried, body):
            """``carried = body(i, carried)`` for ``i < count`` as an LLVM loop (values carried in
            phi nodes); returns the last ``carried``."""
            entry, head = builder.block, builder.append_basic_block("loop")
            builder.branch(head)
            builder.position_at_end(head)
            i = builder.phi(i64)
            phis = [builder.phi(x.type) for x in carried]
            out = body(i, phis)
            i_next = builder.add(i, ir.Constant(i64, 1))
            for phi, first, last in zip([i, *phis], [ir.Constant(i64, 0), *carried], [i_next, *out]):
                phi.add_incoming(first, entry)
                phi.add_incoming(last, builder.block)
            done = builder.append_basic_block("loop_done")
            builder.cbranch(builder.icmp_signed("<", i_next, ir.Constant(i64, count)), head, done)
            builder.position_at_end(done)
            return out

        # the blocks as a loop, not straight-line code: unrolled, LLVM interleaved the blocks and
        # spilled accumulators (five times the stack traffic on a 32x32x8 tile)
        col_blocks = N // W // vecs

        def block(bi, _):
            m0 = builder.mul(builder.udiv(bi, ir.Constant(i64, col_blocks)), ir.Constant(i64, rows))
            n0 = builder.mul(builder.urem(bi, ir.Constant(i64, col_blocks)), ir.Constant(i64, vecs * W))
            a, b = builder.gep(pa, [m0]), builder.gep(pb, [n0])
            zero = [ir.Constant(vd, [0.0] * W)] * (rows * vecs)

            def chunk(j, flat):  # ``unroll`` terms from ``j * unroll``, the sums flat (row-major)
                k0 = builder.mul(j, ir.Constant(i64, unroll))
                s = terms([flat[i * vecs:(i + 1) * vecs] for i in range(rows)],
                          [builder.add(k0, ir.Constant(i64, u)) for u in range(unroll)], a, b)
                return [x for row in s for x in row]

            # up to 16 terms straight-line code, more as a loop (the sums carried in phi nodes)
            flat = chunk(ir.Constant(i64, 0), zero) if unroll == K else loop(K // unroll, zero, chunk)
            s = [flat[i * vecs:(i + 1) * vecs] for i in range(rows)]
            c = builder.gep(pc, [builder.add(builder.mul(m0, ir.Constant(i64, N)), n0)])
            for i in range(rows):  # d = f32(s + c), the accumulator read as f32 and widened
                for v in range(vecs):
                    out = at(c, ir.Constant(i64, 0), 0, i * N + v * W, vf)
                    d = builder.fadd(s[i][v], builder.fpext(builder.load(out, align=4), vd))
                    builder.store(builder.fptrunc(d, vf), out, align=4)
            return []

        loop(M // rows * col_blocks, [], block)
        return context.get_dummy_value()

    return sig, codegen


def _compile(fn, M: int, N: int, K: int, contract: bool):
    """``fn`` compiled under a name of its own per variant: numba names a cache file and the
    machine-code symbols after the qualified name, and variants of one closure sharing them could
    collide (a symbol loaded from the disk cache against one compiled in this process)."""
    fn.__qualname__ = fn.__name__ = f"{fn.__name__}_{M}x{N}x{K}_{'fma' if contract else 'nofma'}"
    return numba.njit(cache=True, nogil=True)(fn)


@functools.lru_cache(maxsize=None)
def mma_chain_kernel(M: int, N: int, K: int, contract: bool):
    """The fused chain for ``M x N x K`` tiles (see :func:`tilesim.wave.kernels.mma_chain`):
    ``kernel(ta, ia, tb, ib, acc)`` runs steps ``t`` of waves ``g``: A tile ``ta[ia[t, g]]``
    (k-major, ``[k*M + m]``), B tile ``tb[ib[t, g]]`` (row-major, ``[k*N + n]``), ``acc[g]`` (float32
    ``[M, N]``, updated in place) ``= f32(sum_k a*b + acc)``, each sum from +0 in k order in float64.
    Returns True when a result was NaN. One thread (the caller runs ranges of waves on threads).
    ``contract``: FMA allowed, for operands that are all float32 values (see above)."""
    size_a, size_b, size_c = M * K, K * N, M * N

    def chain(ta, ia, tb, ib, acc):  # pragma: no cover - compiled
        # M, N, K and contract are closure cells, so numba's disk cache keys on them
        T, G = ia.shape
        fa, fb, fc = ta.reshape(-1), tb.reshape(-1), acc.reshape(-1)
        nan = 0
        for g in range(G):
            for t in range(T):
                _tile_mac(fa, ia[t, g] * size_a, fb, ib[t, g] * size_b, fc, g * size_c, M, N, K, contract)
            # a NaN result stays NaN through every later step (each adds the accumulator), so the
            # wave's final accumulator holds a NaN exactly when some step's result was NaN: tested
            # once per wave instead of per step
            for x in range(g * size_c, (g + 1) * size_c):
                nan += fc[x] != fc[x]
        return nan > 0

    return _compile(chain, M, N, K, contract)


@numba.njit(cache=True, nogil=True)
def _gather_decoded(bits, lut, starts, off):  # pragma: no cover - compiled
    """``lut[bits[starts[u] + off[e]]]`` as float64 ``[u, e]`` (0 where ``off[e] < 0``): the operand
    windows of a fused chain decoded in one pass (numpy took an int64 index array, a gather and a
    conversion, each as large as the windows)."""
    out = np.empty((starts.size, off.size), np.float64)
    for u in range(starts.size):
        s0 = starts[u]
        for e in range(off.size):
            o = off[e]
            out[u, e] = lut[bits[s0 + o]] if o >= 0 else 0.0
    return out


@numba.njit(cache=True, nogil=True)
def _races_jit(addr, eb, wg_of, wave_of, active, write, epoch, last_writer, write_epoch, read_epoch, seen_op,
               seen_wave, op_id):  # pragma: no cover - compiled
    """Race check of one LDS op over its bytes in (wave, record, byte) order, active waves only:
    see :func:`tilesim.wave.kernels.lds_races`. Returns (races, workgroup, wave, byte of the first,
    the other wave of its race, whether that other access was a write)."""
    G, R = addr.shape
    W = read_epoch.shape[1]
    count = 0
    f_wg = f_wave = f_byte = f_other = -1
    f_kind = False
    for g in range(G):  # conflicts are judged against the state before this op
        if not active[g]:
            continue
        wg, w = wg_of[g], wave_of[g]
        for r in range(R):
            for e in range(eb):
                x = addr[g, r] + e
                hit = False
                other = -1
                kind = False
                lw = last_writer[wg, x]
                if lw >= 0 and lw != w and write_epoch[wg, x] == epoch:
                    hit, other, kind = True, lw, True
                elif write:
                    for o in range(W):
                        if o != w and read_epoch[wg, o, x] == epoch:
                            hit, other = True, o
                            break
                if write:  # two waves of one workgroup writing this byte in this op: the later one races
                    if seen_op[wg, x] == op_id and seen_wave[wg, x] != w and not hit:
                        hit, other, kind = True, seen_wave[wg, x], True
                    seen_op[wg, x] = op_id
                    seen_wave[wg, x] = w
                if hit:
                    if count == 0:
                        f_wg, f_wave, f_byte, f_other, f_kind = wg, w, x, other, kind
                    count += 1
    for g in range(G):  # then the state: the last writer of a byte in access order wins
        if not active[g]:
            continue
        wg, w = wg_of[g], wave_of[g]
        for r in range(R):
            for e in range(eb):
                x = addr[g, r] + e
                if write:
                    last_writer[wg, x] = w
                    write_epoch[wg, x] = epoch
                else:
                    read_epoch[wg, w, x] = epoch
    return count, f_wg, f_wave, f_byte, f_other, f_kind


@numba.njit(cache=True, nogil=True)
def _bank_cycles(addr, rec_of_vgpr, starts, banks, active):  # pragma: no cover - compiled
    """Sum over active waves and VGPR instructions of (most distinct dwords in one bank) - 1.
    ``rec_of_vgpr[starts[v]:starts[v + 1]]`` are the records (columns of ``addr``) of instruction ``v``."""
    G = addr.shape[0]
    V = starts.size - 1
    total = 0
    width = 1
    for v in range(V):
        width = max(width, starts[v + 1] - starts[v])
    seen = np.empty((banks, width), np.int64)  # the distinct dwords met in each bank so far
    count = np.zeros(banks, np.int64)
    for g in range(G):
        if not active[g]:
            continue
        for v in range(V):
            count[:] = 0
            most = 0
            for j in range(starts[v], starts[v + 1]):
                dw = addr[g, rec_of_vgpr[j]] // 4
                bk = dw % banks
                new = True
                for q in range(count[bk]):
                    if seen[bk, q] == dw:
                        new = False
                        break
                if new:
                    seen[bk, count[bk]] = dw
                    count[bk] += 1
                    if count[bk] > most:
                        most = count[bk]
            total += max(most, 1) - 1
    return total
