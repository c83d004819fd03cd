#!/usr/bin/env python3
"""Plot a sweep of gpucoll_bench CSVs (--csv, --graph) as one SVG: for each
collective, NCCL's time over ours against the message size, solid for
NCCL's blocking call + stream synchronize, dotted for its CUDA-graph
replay.  Above 1: coll/gpu is faster.  No plotting library needed.

    plot_sweep.py OUT.svg "title" bench_allreduce_4gpu.csv [more.csv ...]
"""
import csv
import math
import sys

W, H = 900, 520
L, R, T, B = 70, 190, 40, 60          # margins
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
YMAX = 3.0


def series(path):
    rows = list(csv.DictReader(open(path, encoding="utf-8")))
    if not rows:
        return None, [], []
    blocking, graph = [], []
    for r in rows:
        b, ours = int(r["bytes"]), float(r["time_us"])
        if ours <= 0:
            continue
        if float(r.get("nccl_time_us") or 0) > 0:
            blocking.append((b, float(r["nccl_time_us"]) / ours))
        if float(r.get("nccl_graph_us") or 0) > 0:
            graph.append((b, float(r["nccl_graph_us"]) / ours))
    return rows[0]["coll"], blocking, graph


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out, title, paths = argv[0], argv[1], argv[2:]
    data = [series(p) for p in paths]
    sizes = [b for _, s, g in data for b, _ in s + g]
    if not sizes:
        sys.exit("plot_sweep.py: no rows with NCCL times")
    x0, x1 = math.log2(min(sizes)), math.log2(max(sizes))
    x1 = x1 if x1 > x0 else x0 + 1

    def px(b):
        return L + (math.log2(b) - x0) / (x1 - x0) * (W - L - R)

    def py(v):
        return T + (1 - min(v, YMAX) / YMAX) * (H - T - B)

    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="15">%s</text>' % (L, title)]
    for k in range(int(YMAX * 2) + 1):        # horizontal grid every 0.5
        v = k / 2
        svg.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="%s"/>'
                   % (L, py(v), W - R, py(v), "#444" if v == 1 else "#ddd",
                      1.5 if v == 1 else 1))
        svg.append('<text x="%d" y="%.1f" text-anchor="end">%.1f</text>' % (L - 6, py(v) + 4, v))
    for e in range(int(x0), int(x1) + 1, 2):   # vertical grid every 4x in size
        b = 1 << e
        label = ("%d GiB" % (b >> 30) if b >= 1 << 30 else "%d MiB" % (b >> 20)
                 if b >= 1 << 20 else "%d KiB" % (b >> 10) if b >= 1 << 10 else "%d B" % b)
        svg.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>'
                   % (px(b), T, px(b), H - B))
        svg.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (px(b), H - B + 16, label))
    svg.append('<text x="%d" y="%d" text-anchor="middle">message size</text>'
               % ((L + W - R) // 2, H - 18))
    svg.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">'
               'NCCL time / coll/gpu time (above 1: coll/gpu faster; capped at %.0f)</text>'
               % ((T + H - B) // 2, (T + H - B) // 2, YMAX))
    for i, (coll, blocking, graph) in enumerate(data):
        c = COLOURS[i % len(COLOURS)]
        for pts, dash in ((blocking, ""), (graph, ' stroke-dasharray="2,3"')):
            if pts:
                path = " ".join("%.1f,%.1f" % (px(b), py(v)) for b, v in pts)
                svg.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>'
                           % (path, c, dash))
        y = T + 10 + 18 * i
        svg.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>'
                   % (W - R + 12, y, W - R + 36, y, c))
        svg.append('<text x="%d" y="%d">%s</text>' % (W - R + 42, y + 4, coll))
    y = T + 10 + 18 * (len(data) + 1)
    svg.append('<text x="%d" y="%d">solid: NCCL blocking</text>' % (W - R + 12, y))
    svg.append('<text x="%d" y="%d">dotted: NCCL graph</text>' % (W - R + 12, y + 16))
    svg.append('</svg>')
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
