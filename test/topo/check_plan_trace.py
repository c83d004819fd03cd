#!/usr/bin/env python3
"""The plan gpucoll-topo prints before a run is what the run does: every
hierarchical call in a run's timing files (coll_gpu_timing_file: one JSON
record per call with its collective, algorithm label and bytes) carries the
label `gpucoll-topo --terms` gives that collective and size for the run's
shape and parameters.  Ends with "N passed, N failed"; fails when no call
was hierarchical.

    check_plan_trace.py --topo BUILD/tools/gpucoll-topo --file NODE.xml --nodes N \\
        --gpus-per-node L [--channels C] [gpucoll-topo options...] TIMING_FILE...

Record bytes are what the hierarchy takes (allgather: one rank's block), the
tool's sizes gpucoll_bench's (allgather: the output): converted with the
rank count nodes x L.
"""
import argparse
import json
import subprocess
import sys


def plan_labels(a, coll, extra):
    cmd = [a.topo, "--file", a.file, "--nodes", str(a.nodes), "--gpus-per-node",
           str(a.gpus_per_node), "--channels", str(a.channels), "--terms", coll,
           "--min", "8", "--max", str(1 << 31)] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    labels = {}
    for line in out.splitlines():
        if not line.startswith("#"):
            f = line.split(None, 5)
            labels[int(float(f[0]))] = f[5]
    return labels


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--topo", required=True)
    p.add_argument("--file", required=True)
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--gpus-per-node", type=int, required=True)
    p.add_argument("--channels", type=int, default=8)
    p.add_argument("files", nargs="+")
    a, extra = p.parse_known_args()
    ranks = a.nodes * a.gpus_per_node
    plans, npass, nfail = {}, 0, 0
    for path in a.files:
        for line in open(path):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if not r.get("algo", "").startswith("hier "):
                continue
            coll = r["coll"]
            if coll not in plans:
                plans[coll] = plan_labels(a, coll, extra)
            size = r["bytes"] * (ranks if coll in ("allgather", "reduce_scatter_block") else 1)
            want = plans[coll].get(size)
            if want is None:
                continue   # a size the x2 sweep of the plan does not hold
            if want == r["algo"]:
                npass += 1
            else:
                nfail += 1
                print("FAIL %s %d B: the run says \"%s\", the plan \"%s\"" % (coll, r["bytes"],
                                                                            r["algo"], want))
    if 0 == npass + nfail:
        print("FAIL no hierarchical call of a planned size in %s" % " ".join(a.files))
        nfail = 1
    print("%d passed, %d failed" % (npass, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
