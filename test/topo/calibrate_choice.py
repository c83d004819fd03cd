#!/usr/bin/env python3
"""Fit the cost model's constants (topo/gpu_topo_plan.c) for one node of L
GPUs to a committed sweep (gpucoll_bench CSVs, docs/results/*_sweep), each
measured size priced as the kernel the choice names for it
(`gpucoll-topo --terms`, topo/gpu_topo_choice.h): so a class is fitted on
the sizes its kernel ran, and a threshold moved since is seen as a point
in another class.  Single-run spikes are left out as test_topo_plan does.
Model per class: t = lat + wire / (B * eff) + fill * (1 - exp(-wire / w)),
B = 18 NVLinks x 20.6 GB/s.  Prints each class's constants and worst
relative error; paste them into the model of that node (gpu_topo_model_h100x4
for 4 GPUs).  The 2-GPU fit of the older run is test/topo/calibrate.py.

    calibrate_choice.py GPUCOLL_TOPO SWEEP_DIR [GPUS]     (GPUS: 4)
"""
import csv
import os
import subprocess
import sys

from model_fit import fit, spike

topo = sys.argv[1]
d = sys.argv[2]
L = int(sys.argv[3]) if len(sys.argv) > 3 else 4
fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "dgx_h100.xml")


def load(coll):
    rows = [(int(r["bytes"]), float(r["time_us"])) for r in csv.DictReader(open(os.path.join(d, "bench_%s_%dgpu.csv" % (coll, L))))]
    return [r for i, r in enumerate(rows) if not spike(rows, i)]


def labels(coll):
    out = subprocess.run([topo, "--file", fixture, "--gpus-per-node", str(L), "--terms", coll, "--min", "8", "--max", str(1<<30)], capture_output=True, text=True, check=True).stdout
    return {int(l.split()[0]): l.split()[2].split("|")[0] for l in out.splitlines() if not l.startswith("#")}


# each label's class and the bytes on the busiest rank's links per nccl-tests byte
WIRE = {"allreduce": {"persistent": ("res 0", L - 1), "two-shot": (1, 2 * (L - 1) / L), "one-shot": (0, L - 1)},
        "bcast": {"persistent": ("res 1", 1), "put": (6, 1), "chain": (2, 1), "exchange-copy": (2, 1)},
        "allgather": {"persistent": ("res 2", (L - 1) / L), "put": (4, (L - 1) / L), "exchange-copy": (3, (L - 1) / L)},
        "reduce_scatter": {"persistent": ("res 3", (L - 1) / L), "put": (5, (L - 1) / L), "exchange-reduce": (3, (L - 1) / L)}}
pts = {}
for coll, m in WIRE.items():
    lab = labels(coll)
    for b, t in load(coll):
        k, f = m[lab[b]]
        pts.setdefault(k, []).append((b * f, t, coll, b))
for k in sorted(pts, key=str):
    ps = pts[k]
    eff_min = 0.02 if str(k).startswith("res") else 0.1
    best, be = fit(ps, eff_min)
    print("class %-5s lat %.2f eff %.4f fill %.2f fill_bytes %.0f worst %.1f%% over %d (%s)" % (k, best[0], best[1], best[2], best[3], 100 * be, len(ps), sorted(set(c for *_, c, b in ps))))
