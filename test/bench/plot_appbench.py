#!/usr/bin/env python3
"""Plot gpucoll_appbench CSV output: for each workload (one panel) and
application kernel length (groups along x), the loop time per iteration of
coll/gpu (mpi), staged, NCCL and MPIX enqueue (when present) as bars relative to NCCL, with the
application kernel's slowdown inside the loop printed above each bar.

    plot_appbench.py OUT.png appbench.csv
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MODES = ["mpi", "staged", "nccl", "enqueue"]
LABEL = {"mpi": "coll/gpu", "staged": "staged (host copies)", "nccl": "NCCL",
         "enqueue": "coll/gpu, MPIX enqueue"}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = list(csv.DictReader(open(sys.argv[2])))
    workloads = sorted({r["workload"] for r in rows}, key=lambda w: [r["workload"] for r in rows].index(w))
    kernels = sorted({float(r["kernel_target_us"]) for r in rows})
    fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 4.5), squeeze=False)
    for ax, w in zip(axes[0], workloads):
        mine = {(float(r["kernel_target_us"]), r["mode"]): r for r in rows if r["workload"] == w}
        modes = [m for m in MODES if any(k[1] == m for k in mine)]
        width = 0.8 / len(modes)
        for i, m in enumerate(modes):
            xs, ys, notes = [], [], []
            for j, k in enumerate(kernels):
                r = mine.get((k, m))
                base = mine.get((k, "nccl"))
                if r is None:
                    continue
                loop = float(r["loop_us"])
                xs.append(j + (i - (len(modes) - 1) / 2) * width)
                ys.append(loop / float(base["loop_us"]) if base else loop)
                notes.append("%+.1f%%" % float(r["slowdown_pct"]))
            bars = ax.bar(xs, ys, width, label=LABEL[m], color="C%d" % i)
            for b, t in zip(bars, notes):
                ax.annotate(t, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                            va="bottom", fontsize=7)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xticks(range(len(kernels)))
        ax.set_xticklabels(["%g us kernel" % k for k in kernels])
        ax.set_title(w)
        ax.set_ylabel("loop time / NCCL's (lower is better)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("application loop: kernel + one collective per iteration "
                 "(numbers: kernel slowdown inside the loop)", fontsize=10)
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=120)


if __name__ == "__main__":
    main()
