#!/usr/bin/env python3
"""Plot gpucoll_bench CSV output: busbw (top) and latency (bottom) against
message size, ours solid and NCCL dashed, one colour per collective.

    plot_bench.py OUT.png bench_allreduce.csv [bench_bcast.csv ...]
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    rows = list(csv.DictReader(open(path)))
    return rows[0]["coll"] if rows else path, rows


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    fig, (bw, lat) = plt.subplots(2, 1, figsize=(9, 10))
    for i, path in enumerate(sys.argv[2:]):
        coll, rows = load(path)
        colour = "C%d" % i
        x = [int(r["bytes"]) for r in rows]
        bw.plot(x, [float(r["busbw_GBs"]) for r in rows], colour + "-o", ms=3, label=coll + " coll/gpu")
        small = [r for r in rows if int(r["bytes"]) <= 1 << 20]
        lat.plot([int(r["bytes"]) for r in small], [float(r["time_us"]) for r in small], colour + "-o", ms=3,
                 label=coll + " coll/gpu")
        if rows and rows[0].get("nccl_time_us"):
            bw.plot(x, [float(r["nccl_busbw_GBs"]) for r in rows], colour + "--", label=coll + " NCCL")
            lat.plot([int(r["bytes"]) for r in small], [float(r["nccl_time_us"]) for r in small], colour + "--",
                     label=coll + " NCCL")
        if rows and float(rows[0].get("nccl_graph_us") or 0) > 0:
            lat.plot([int(r["bytes"]) for r in small], [float(r["nccl_graph_us"]) for r in small], colour + ":",
                     label=coll + " NCCL graph replay")
    for ax in (bw, lat):
        ax.set_xscale("log", base=2)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_xlabel("message size (bytes)")
        ax.legend(fontsize=7, ncol=2)
    bw.set_ylabel("bus bandwidth (GB/s)")
    bw.set_title("coll/gpu vs NCCL, device buffers, float sum, blocking")
    lat.set_ylabel("time per call (us), up to 1 MiB")
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=110)


if __name__ == "__main__":
    main()
