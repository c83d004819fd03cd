#!/usr/bin/env python3
"""A real client on coll/gpu: mpi4py with CuPy (and PyTorch) device arrays.

    mpirun -np N python3 test/gpu/test_mpi4py_gpu.py [LIBGPUCOLL]

What a Python user passes, against answers computed on the host:
  - half precision (issue 38): MPIX_C_FLOAT16 on CuPy float16 arrays and
    MPIX_BFLOAT16 on PyTorch bfloat16 tensors (passed as their 16-bit
    words with the datatype named), Allreduce with SUM, PROD, MAX and MIN,
    Reduce to the last rank, Reduce_scatter_block, Bcast, Allgather; 1 to
    2^20 elements.  mpi4py on Open MPI 4.1 has no name for these types, so
    the handle comes from libgpucoll (gpucoll_mpix_half_type, as MPICH's
    MPIX_C_FLOAT16 macro in mpix_gpu.h does) through MPI_Type_c2f;
  - float32 and complex64 CuPy arrays: Allreduce in place, Allgatherv and
    Alltoallv with zero counts and displacements out of order, Gatherv and
    Scatterv whose counts exist only at the root, a NULL-sized rank.
Outputs are poisoned before each call.  SUM and PROD of half types may
differ from the fp32-accumulated reference by rounding at each step (host
paths, nonblocking forms), so they are compared within a few units in
the last place; MAX and MIN and every copy exactly.
Prints a PASS or FAIL line per check and "test_mpi4py_gpu: N passed, N
failed" on rank 0; SKIP (exit 77) without mpi4py, CuPy or a GPU.
"""
import ctypes
import ctypes.util
import os
import sys


def skip(why):
    print("SKIP test_mpi4py_gpu: " + why, flush=True)
    sys.exit(77)


try:
    from mpi4py import MPI
except ImportError as e:
    skip("no mpi4py (%s)" % e)
try:
    import numpy as np
    import cupy as cp
    if cp.cuda.runtime.getDeviceCount() < 1:
        skip("no CUDA device")
except Exception as e:  # CuPy raises its own errors without a driver
    skip("no CuPy or no CUDA device (%s)" % e)
try:
    import torch
    if not torch.cuda.is_available():
        torch = None
except Exception:
    torch = None

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
cp.cuda.Device(rank % cp.cuda.runtime.getDeviceCount()).use()
if torch is not None:
    torch.cuda.set_device(rank % torch.cuda.device_count())
passed = failed = 0


def check(name, ok):
    """every rank's verdict, reported once"""
    global passed, failed
    ok = comm.allreduce(bool(ok), op=MPI.LAND)
    if ok:
        passed += 1
    else:
        failed += 1
    if rank == 0:
        print("%s %s" % ("PASS" if ok else "FAIL", name), flush=True)


def half_types():
    """MPIX_C_FLOAT16 and MPIX_BFLOAT16 as mpi4py datatypes"""
    path = sys.argv[1] if len(sys.argv) > 1 else "libgpucoll.so"
    lib = ctypes.CDLL(path)
    lib.gpucoll_mpix_half_type.restype = ctypes.c_void_p
    lib.gpucoll_mpix_half_type.argtypes = [ctypes.c_int]
    mpi = ctypes.CDLL(ctypes.util.find_library("mpi") or "libmpi.so.40")
    mpi.MPI_Type_c2f.restype = ctypes.c_int
    mpi.MPI_Type_c2f.argtypes = [ctypes.c_void_p]
    out = []
    for which in (0, 1):
        h = lib.gpucoll_mpix_half_type(which)
        if not h:
            return None
        out.append(MPI.Datatype.f2py(mpi.MPI_Type_c2f(h)))
    # binary16 by the name the binding or the library gives it, where one
    # does: mpi4py's MPI.FLOAT16_T (built against an MPI with MPIX_C_FLOAT16),
    # else Open MPI 5.0's own MPIX_C_FLOAT16 (its shortfloat extension, the
    # handle mpi4py built against 5.0 names), else libgpucoll's
    own = getattr(MPI, "FLOAT16_T", MPI.DATATYPE_NULL)
    src = "mpi4py's MPI.FLOAT16_T"
    if own == MPI.DATATYPE_NULL:
        try:
            addr = ctypes.addressof(ctypes.c_char.in_dll(mpi, "ompi_mpi_short_float"))
            own = MPI.Datatype.f2py(mpi.MPI_Type_c2f(addr))
            src = "Open MPI's own MPIX_C_FLOAT16 (ompi_mpi_short_float)"
        except ValueError:
            own, src = out[0], "libgpucoll's MPIX_C_FLOAT16"
    out[0] = own
    return out, src


def inputs(n, r, k):
    """rank r's values for check k: positive, so sums do not cancel"""
    rng = np.random.default_rng(1000 * k + r)
    return (0.5 + rng.random(n)).astype(np.float32)


# (op, its name, its fold); mpi4py's Op is not hashable, so no dict
OPS = ((MPI.SUM, "SUM", np.add), (MPI.PROD, "PROD", np.multiply),
       (MPI.MAX, "MAX", np.maximum), (MPI.MIN, "MIN", np.minimum))


def op_entry(op):
    return next(e for e in OPS if e[0] == op)


def fp32_fold(op, n, k, rnd):
    """the reference: every rank's rounded input folded in fp32 in rank order"""
    acc = rnd(inputs(n, 0, k))
    for r in range(1, size):
        acc = op_entry(op)[2](acc, rnd(inputs(n, r, k)))
    return acc


class Half:
    """one half type: a device array of it from fp32, and back"""

    def __init__(self, name, dt):
        self.name, self.dt = name, dt

    def close(self, got, want, op):
        if op == MPI.MAX or op == MPI.MIN:
            return np.array_equal(got, self.round(want))
        rtol = (4 if op == MPI.SUM else 2 * size) * self.eps
        return np.allclose(got, want, rtol=rtol, atol=0)


class F16(Half):
    eps = 2.0 ** -10

    def round(self, x):
        return x.astype(np.float16).astype(np.float32)

    def dev(self, x):
        return cp.asarray(x.astype(np.float16))

    def empty(self, n):
        return cp.full(n, -7.0, dtype=cp.float16)   # poison

    def buf(self, a):
        return [a, self.dt]

    def host(self, a):
        return cp.asnumpy(a).astype(np.float32)


class BF16(Half):
    eps = 2.0 ** -7

    def round(self, x):
        return torch.from_numpy(x).to(torch.bfloat16).float().numpy()

    def dev(self, x):
        return torch.from_numpy(x).to(torch.bfloat16).cuda()

    def empty(self, n):
        return torch.full((n,), -7.0, dtype=torch.bfloat16, device="cuda")

    def buf(self, t):
        # mpi4py reads __cuda_array_interface__, which bfloat16 lacks: the
        # same bytes as int16, with the datatype named
        return [cp.asarray(t.view(torch.int16)), self.dt]

    def host(self, t):
        return t.float().cpu().numpy()


def sync():
    cp.cuda.Device().synchronize()
    if torch is not None:
        torch.cuda.synchronize()


def half_checks(h):
    k = 0
    for n in (1, 7, 4096, 1 << 20):
        for op, _, _ in OPS:
            k += 1
            s, r = h.dev(inputs(n, rank, k)), h.empty(n)
            sync()
            comm.Allreduce(h.buf(s), h.buf(r), op=op)
            sync()
            want = fp32_fold(op, n, k, h.round)
            check("Allreduce %s %s x %d" % (h.name, op_entry(op)[1], n),
                  h.close(h.host(r), want, op))
        k += 1
        root = size - 1
        s, r = h.dev(inputs(n, rank, k)), h.empty(n)
        sync()
        comm.Reduce(h.buf(s), h.buf(r) if rank == root else None, op=MPI.SUM, root=root)
        sync()
        ok = rank != root or h.close(h.host(r), fp32_fold(MPI.SUM, n, k, h.round), MPI.SUM)
        check("Reduce %s SUM x %d to rank %d" % (h.name, n, root), ok)
        k += 1
        s, r = h.dev(inputs(n * size, rank, k)), h.empty(n)
        sync()
        comm.Reduce_scatter_block(h.buf(s), h.buf(r), op=MPI.MAX)
        sync()
        want = fp32_fold(MPI.MAX, n * size, k, h.round)[rank * n:(rank + 1) * n]
        check("Reduce_scatter_block %s MAX x %d" % (h.name, n), h.close(h.host(r), want, MPI.MAX))
        k += 1
        b = h.dev(inputs(n, 0, k)) if rank == 0 else h.empty(n)
        sync()
        comm.Bcast(h.buf(b), root=0)
        sync()
        check("Bcast %s x %d" % (h.name, n),
              np.array_equal(h.host(b), h.round(inputs(n, 0, k))))
        k += 1
        s, r = h.dev(inputs(n, rank, k)), h.empty(n * size)
        sync()
        comm.Allgather(h.buf(s), h.buf(r))
        sync()
        want = np.concatenate([h.round(inputs(n, q, k)) for q in range(size)])
        check("Allgather %s x %d" % (h.name, n), np.array_equal(h.host(r), want))


def layout_checks():
    """v collectives as a client writes them: zero counts, gaps, root-only"""
    POISON = -99.0
    for dtype, mdt in ((np.float32, MPI.FLOAT), (np.complex64, MPI.C_FLOAT_COMPLEX)):
        tag = np.dtype(dtype).name

        def val(q, i):
            return np.asarray(1000 * q + i, dtype=np.float32).astype(dtype)

        # Allreduce in place
        x = cp.asarray(inputs(4096, rank, 99).astype(dtype))
        sync()
        comm.Allreduce(MPI.IN_PLACE, [x, mdt], op=MPI.SUM)
        sync()
        want = sum(inputs(4096, q, 99).astype(np.float64) for q in range(size))
        check("Allreduce %s SUM in place" % tag,
              np.allclose(cp.asnumpy(x).real, want, rtol=1e-5))
        # Allgatherv: rank q gives q % 3 elements (rank 0 none), stored in
        # reverse rank order with a gap of 2 between blocks
        counts = [q % 3 for q in range(size)]
        displs, at = [0] * size, 0
        for q in reversed(range(size)):
            displs[q] = at
            at += counts[q] + 2
        mine = cp.asarray(np.array([val(rank, i) for i in range(counts[rank])], dtype=dtype))
        r = cp.full(at, POISON, dtype=dtype)
        sync()
        comm.Allgatherv([mine, counts[rank], mdt], [r, (counts, displs), mdt])
        sync()
        want = np.full(at, POISON, dtype=dtype)
        for q in range(size):
            for i in range(counts[q]):
                want[displs[q] + i] = val(q, i)
        check("Allgatherv %s zero counts, reversed, gaps" % tag,
              np.array_equal(cp.asnumpy(r), want))
        # Alltoallv: rank p sends (p + q) % 2 elements to q, receive blocks
        # reversed with gaps
        sc = [(rank + q) % 2 for q in range(size)]
        sd = [sum(sc[:q]) for q in range(size)]
        rc = [(q + rank) % 2 for q in range(size)]
        rd, at = [0] * size, 0
        for q in reversed(range(size)):
            rd[q] = at
            at += rc[q] + 1
        s = cp.asarray(np.array([val(rank, 10 * q) for q in range(size) for _ in range(sc[q])],
                                dtype=dtype))
        r = cp.full(max(at, 1), POISON, dtype=dtype)
        sync()
        comm.Alltoallv([s, (sc, sd), mdt], [r, (rc, rd), mdt])
        sync()
        want = np.full(max(at, 1), POISON, dtype=dtype)
        for q in range(size):
            for i in range(rc[q]):
                want[rd[q] + i] = val(q, 10 * rank)
        check("Alltoallv %s zero counts, reversed, gaps" % tag,
              np.array_equal(cp.asnumpy(r), want))
        # Gatherv / Scatterv: counts and displacements only at the root
        root = size - 1
        cnt = [2 * q for q in range(size)]
        dsp = [sum(cnt[q + 1:]) for q in range(size)]   # reverse rank order
        total = sum(cnt)
        mine = cp.asarray(np.array([val(rank, i) for i in range(cnt[rank])], dtype=dtype))
        r = cp.full(max(total, 1), POISON, dtype=dtype) if rank == root else None
        sync()
        comm.Gatherv([mine, cnt[rank], mdt],
                     [r, (cnt, dsp), mdt] if rank == root else None, root=root)
        sync()
        ok = True
        if rank == root:
            want = np.full(max(total, 1), POISON, dtype=dtype)
            for q in range(size):
                for i in range(cnt[q]):
                    want[dsp[q] + i] = val(q, i)
            ok = np.array_equal(cp.asnumpy(r), want)
        check("Gatherv %s counts at the root only" % tag, ok)
        src = None
        if rank == root:
            h = np.zeros(max(total, 1), dtype=dtype)
            for q in range(size):
                for i in range(cnt[q]):
                    h[dsp[q] + i] = val(q, i)
            src = cp.asarray(h)
        r = cp.full(max(cnt[rank], 1), POISON, dtype=dtype)
        sync()
        comm.Scatterv([src, (cnt, dsp), mdt] if rank == root else None,
                      [r, cnt[rank], mdt], root=root)
        sync()
        want = np.full(max(cnt[rank], 1), POISON, dtype=dtype)
        for i in range(cnt[rank]):
            want[i] = val(rank, i)
        check("Scatterv %s counts at the root only" % tag, np.array_equal(cp.asnumpy(r), want))


def main():
    if rank == 0:
        print("test_mpi4py_gpu: %d ranks, mpi4py %s, CuPy %s, PyTorch %s, %s" % (
            size, __import__("mpi4py").__version__, cp.__version__,
            torch.__version__ if torch is not None else "none",
            MPI.Get_library_version().splitlines()[0]), flush=True)
    layout_checks()
    halves, src = half_types() or (None, None)
    if rank == 0 and halves is not None:
        print("float16 datatype: %s" % src, flush=True)
    if halves is None:
        check("half types from libgpucoll", False)
    else:
        half_checks(F16("float16", halves[0]))
        if torch is not None:
            half_checks(BF16("bfloat16", halves[1]))
        elif rank == 0:
            print("(no PyTorch with CUDA: bfloat16 not run)", flush=True)
    if rank == 0:
        print("test_mpi4py_gpu: %d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
