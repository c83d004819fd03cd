#!/usr/bin/env python3
"""Fit the inter-node model's alpha (us per message) and beta (GB/s per rank)
to a gpucoll_bench sweep across (virtual) nodes, and print the MCA
parameters that make the runtime choose by them and the gpucoll-topo
options that make its plan price by them.

The model is gpucoll-topo's own: for each size, `gpucoll-topo --terms COLL`
prints the predicted time as fixed_us + msgs * alpha + net_bytes / beta
(node steps and exposed staging copies in fixed_us; the algorithm and the
slices chosen by the functions the runtime calls).  That is linear in alpha
and 1/beta once the choices are fixed, so the fit alternates: terms at the
current estimate, a least-squares fit of relative errors, until alpha and
beta settle.

    calibrate_net.py --topo BUILD/tools/gpucoll-topo --file NODE.xml \\
        --nodes N --gpus-per-node L [--channels C] [--direct] [--slot-bytes B] \\
        [--table K] [--out calib.txt] bench_allreduce.txt
    calibrate_net.py --topo ... --file ... --self-test
        (synthetic sweeps from known alpha and beta, with noise: recovered?)

The bench file is gpucoll_bench's text output (a '# MPI_<coll> ...' line,
then 'size(B) time(us) ...' rows; several tables: --table picks one) or its
--csv file.  Rank count and node shape are not in the file: pass the run's.
"""
import argparse
import math
import os
import random
import re
import subprocess
import sys
import tempfile


def read_bench(path, table):
    """[(coll, [(bytes, time_us)])] of every table in a gpucoll_bench text or csv file"""
    tables = []
    with open(path) as f:
        lines = f.read().splitlines()
    if lines and lines[0].startswith("coll,bytes,time_us"):
        rows = [l.split(",") for l in lines[1:] if l.strip()]
        tables.append((rows[0][0] if rows else "?", [(int(r[1]), float(r[2])) for r in rows]))
    else:
        coll, rows = None, None
        for l in lines:
            m = re.match(r"#\s*MPI_(\w+)\s", l)
            if m:
                coll, rows = m.group(1), []
                tables.append((coll, rows))
                continue
            f = l.split()
            if rows is not None and len(f) >= 2 and f[0].isdigit():
                rows.append((int(f[0]), float(f[1])))
    tables = [t for t in tables if t[1]]
    if not tables:
        sys.exit("calibrate_net: %s: no gpucoll_bench table" % path)
    if table >= len(tables):
        sys.exit("calibrate_net: %s has %d tables, no table %d" % (path, len(tables), table))
    return tables[table], len(tables)


def terms(a, coll, alpha_us, beta_gbs, lo, hi):
    """{bytes: (fixed_us, msgs, net_bytes, algorithm)} from gpucoll-topo --terms"""
    cmd = [a.topo, "--file", a.file, "--nodes", str(a.nodes), "--gpus-per-node",
           str(a.gpus_per_node), "--terms", coll, "--alpha-us", repr(alpha_us),
           "--beta-gbs", repr(beta_gbs), "--min", str(lo), "--max", str(hi),
           "--channels", str(a.channels), "--slot-bytes", str(a.slot_bytes)]
    if a.direct:
        cmd.append("--direct")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    t = {}
    for l in out.splitlines():
        if l.startswith("#"):
            continue
        f = l.split(None, 5)
        t[int(float(f[0]))] = (float(f[2]), float(f[3]), float(f[4]), f[5] if len(f) > 5 else "")
    return t


def fit(a, coll, rows):
    """alpha_us, beta_gbs, [(bytes, measured, predicted, algorithm)]"""
    alpha, beta = 10.0, 12.5
    lo, hi = min(b for b, _ in rows), max(b for b, _ in rows)
    for _ in range(60):
        tm = terms(a, coll, alpha, beta, lo, hi)
        pts = [(tm[b], t) for b, t in rows if b in tm]
        if len(pts) < 2:
            sys.exit("calibrate_net: fewer than 2 sizes of the sweep have a plan")
        # minimise sum(((fixed + m alpha + w x) - t) / t)^2, x = us per byte
        smm = sum((p[1] / t) ** 2 for p, t in pts)
        sww = sum((p[2] / t) ** 2 for p, t in pts)
        smw = sum(p[1] * p[2] / t ** 2 for p, t in pts)
        smy = sum(p[1] * (t - p[0]) / t ** 2 for p, t in pts)
        swy = sum(p[2] * (t - p[0]) / t ** 2 for p, t in pts)
        det = smm * sww - smw * smw
        na, x = (-1, 0)
        if det > 0:
            na, x = (smy * sww - swy * smw) / det, (smm * swy - smw * smy) / det
        if na < 0:
            na, x = 0.0, swy / sww if sww > 0 else 0.0
        if x <= 0:
            sys.exit("calibrate_net: the sweep shows no bandwidth term (no size long enough?)")
        nb = 1.0 / (x * 1e3)
        done = abs(na - alpha) <= 1e-4 * max(alpha, 1e-3) and abs(nb - beta) <= 1e-4 * beta
        alpha, beta = na, nb
        if done:
            break
    tm = terms(a, coll, alpha, beta, lo, hi)
    res = [(b, t, tm[b][0] + tm[b][1] * alpha + tm[b][2] / (beta * 1e3), tm[b][3])
           for b, t in rows if b in tm]
    return alpha, beta, res


def report(a, coll, alpha, beta, res, what):
    errs = sorted(abs(p - t) / t for _, t, p, _ in res)
    worst = max(res, key=lambda r: abs(r[2] - r[1]) / r[1])
    print("%s: %s, %d nodes x %d GPUs, %d sizes" % (what, coll, a.nodes, a.gpus_per_node, len(res)))
    print("alpha %.3f us per message, beta %.3f GB/s per rank; error median %.1f%%, worst %.1f%% "
          "at %d B" % (alpha, beta, 100 * errs[len(errs) // 2], 100 * errs[-1], worst[0]))
    print("runtime: --mca coll_gpu_net_latency_us %.3f --mca coll_gpu_net_bandwidth %.3f"
          % (alpha, beta))
    print("plan:    gpucoll-topo --alpha-us %.3f --beta-gbs %.3f   (or --calibration FILE)"
          % (alpha, beta))


def synthetic(a, coll, alpha, beta, noise, seed, path):
    """a gpucoll_bench text file the model at (alpha, beta) would measure, with noise"""
    rng = random.Random(seed)
    tm = terms(a, coll, alpha, beta, 8, 256 << 20)
    with open(path, "w") as f:
        f.write("# MPI_%s (float, sum, device buffers), synthetic: alpha %g us, beta %g GB/s\n"
                % (coll, alpha, beta))
        f.write("%12s %10s %10s %10s\n" % ("size(B)", "time(us)", "algbw", "busbw"))
        for b in sorted(tm):
            fx, m, w, _ = tm[b]
            t = (fx + m * alpha + w / (beta * 1e3)) * (1 + rng.uniform(-noise, noise))
            f.write("%12d %10.2f %10.2f %10.2f\n" % (b, t, b / t / 1e3, 0.0))


def self_test(a):
    """known alpha and beta back from synthetic sweeps, with and without noise,
    across shapes where the allreduce changes algorithm within the sweep"""
    fails = 0
    cases = [(2, 1, "allreduce", 3.0, 20.0, 0.0), (2, 1, "allreduce", 25.0, 2.5, 0.03),
             (4, 2, "allreduce", 8.0, 12.0, 0.03), (4, 2, "allgather", 5.0, 40.0, 0.03),
             (3, 2, "bcast", 12.0, 6.0, 0.03)]
    with tempfile.TemporaryDirectory() as d:
        for i, (nodes, gpn, coll, alpha, beta, noise) in enumerate(cases):
            a.nodes, a.gpus_per_node = nodes, gpn
            path = os.path.join(d, "bench_%d.txt" % i)
            synthetic(a, coll, alpha, beta, noise, i + 1, path)
            (c, rows), _ = read_bench(path, 0)
            fa, fb, res = fit(a, c, rows)
            algos = sorted({r[3] for r in res})
            tol = 1e-3 if noise == 0 else 0.10
            ok = abs(fa - alpha) <= tol * alpha and abs(fb - beta) <= tol * beta
            print("%s %s %d x %d, alpha %g beta %g noise %g%%: fitted alpha %.3f beta %.3f (%s)"
                  % ("PASS" if ok else "FAIL", coll, nodes, gpn, alpha, beta, 100 * noise, fa, fb,
                     "; ".join(algos)))
            fails += not ok
    print("calibrate_net self-test: %d passed, %d failed" % (len(cases) - fails, fails))
    return 1 if fails else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("bench", nargs="?")
    p.add_argument("--topo", required=True, help="the gpucoll-topo program")
    p.add_argument("--file", required=True, help="the node's topology (hwloc XML)")
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--gpus-per-node", type=int, default=1)
    p.add_argument("--coll", help="the collective (default: the table's)")
    p.add_argument("--channels", type=int, default=16,
                   help="the run's coll_gpu_net_channels (default 16, the runtime's; a rank's "
                   "CPUs cap it)")
    p.add_argument("--slot-bytes", type=int, default=4 << 20)
    p.add_argument("--direct", action="store_true")
    p.add_argument("--table", type=int, default=0)
    p.add_argument("--min-bytes", type=int, default=0, help="leave smaller sizes out")
    p.add_argument("--out", help="write a calibration file for gpucoll-topo --calibration")
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args()
    if a.self_test:
        return self_test(a)
    if not a.bench:
        p.error("a bench file, or --self-test")
    (coll, rows), ntables = read_bench(a.bench, a.table)
    coll = a.coll or coll
    rows = [r for r in rows if r[0] >= a.min_bytes]
    alpha, beta, res = fit(a, coll, rows)
    report(a, coll, alpha, beta, res, "%s (table %d of %d)" % (a.bench, a.table, ntables))
    if a.out:
        with open(a.out, "w") as f:
            f.write("# gpucoll-topo calibration: calibrate_net.py %s, %s, %d nodes x %d GPUs\n"
                    % (os.path.basename(a.bench), coll, a.nodes, a.gpus_per_node))
            f.write("alpha_us %.4f\nbeta_gbs %.4f\n" % (alpha, beta))
        print("wrote %s" % a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
