#!/usr/bin/env python3
"""Fit the intra-node cost model constants (topo/gpu_topo_plan.c) to the
benchmark of the 2x H200 host
(docs/results/h200x2_2026-11-22_resident_kernel/bench_*_h200x2.csv).

Single-run spikes (a size, or a pair of adjacent sizes, more than 10% off
both sizes around it, in the same direction) are left out, as test_topo_plan
does.  Model per algorithm class: t = lat + wire / (B * eff) + fill * (1 - exp(-wire / w)),
B = the ring's slowest hop (18 NVLinks x nvlink_gbps).  Prints, per class,
the constants and the worst relative error over the measured sizes;
paste the constants into gpu_topo_model_h200.

    calibrate.py [RESULTS_DIR]
"""
import csv
import os
import sys

from model_fit import fit, spike

d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "docs", "results",
                                                          "h200x2_2026-11-22_resident_kernel")
ONESHOT_MAX = 256 * 1024


def load(coll):
    rows = [(int(r["bytes"]), float(r["time_us"])) for r in csv.DictReader(open(os.path.join(d, "bench_%s_h200x2.csv" % coll)))]
    return [r for i, r in enumerate(rows) if not spike(rows, i)]


# the resident kernel takes a message per peer up to this (coll_gpu_persist_max_bytes);
# 2 ranks: allreduce and bcast send the whole buffer, allgather (output size) and
# reduce_scatter (input size) half of it.  The launched one-shot (class 0) is not
# measured at the defaults any more: its constants stay from the run before the
# resident kernel (git history of docs/results/bench_allreduce_h200x2.csv, now in
# docs/results/h200x2_2026-11-22_resident_kernel/).
PERSIST_MAX = 2048 * 1024
PERSIST_REDUCE_MAX = 1024 * 1024   # coll_gpu_persist_reduce_max_bytes
ar, bc = load("allreduce"), load("bcast")
ag, rs = load("allgather"), load("reduce_scatter")
ex = [(b, t) for b, t in ag if b / 2 > PERSIST_MAX] + [(b, t) for b, t in rs if b / 2 > PERSIST_REDUCE_MAX]
classes = {
    1: ("two-shot allreduce", [(b * 1.0, t) for b, t in ar if b > max(ONESHOT_MAX, PERSIST_REDUCE_MAX)], 0.3),
    2: ("bcast", [(b * 1.0, t) for b, t in bc if b > PERSIST_MAX], 0.3),
    3: ("exchange", [(b * 0.5, t) for b, t in ex], 0.3),
    "res 0": ("resident allreduce", [(b * 1.0, t) for b, t in ar if b <= PERSIST_REDUCE_MAX], 0.02),
    "res 1": ("resident bcast", [(b * 1.0, t) for b, t in bc if b <= PERSIST_MAX], 0.02),
    "res 2": ("resident copy exchange", [(b * 0.5, t) for b, t in ag if b / 2 <= PERSIST_MAX], 0.02),
    "res 3": ("resident reduce exchange", [(b * 0.5, t) for b, t in rs if b / 2 <= PERSIST_REDUCE_MAX], 0.02),
}


for c, (name, pts, eff_min) in classes.items():
    best, be = fit(pts, eff_min)
    print("class %-5s %-20s lat %.2f us  eff %.4f  fill %.2f us  fill_bytes %.0f  worst error %.1f%% over %d sizes"
          % (c, name, best[0], best[1], best[2], best[3], 100 * be, len(pts)))
