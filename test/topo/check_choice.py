#!/usr/bin/env python3
"""The choice gpucoll-topo prints for one node is what a run does: every
blocking device call in a run's timing files (coll_gpu_timing_file: one JSON
record per call with its collective, kernel label and bytes) carries the
kernel `gpucoll-topo --terms COLL` gives for its size among the run's ranks
(one per GPU, the defaults).  Ends with "N passed, N failed"; fails when no
call was checked.

    check_choice.py --topo BUILD/tools/gpucoll-topo --file NODE.xml --ranks N TIMING_FILE...

A record's bytes are the largest pair of the call (what the engine's limits
compare); the tool prints that pair beside each size.  Calls the choice
does not describe are counted apart, not checked: the first calls of a
communicator, queued until the ranks' memory kinds are agreed, and
nonblocking ones.
"""
import argparse
import json
import subprocess
import sys

COLLS = {"allreduce": "allreduce", "bcast": "bcast", "reduce": "reduce",
         "allgather": "allgather", "reduce_scatter": "reduce_scatter",
         "reduce_scatter_block": "reduce_scatter", "alltoall": "alltoall"}


def choices(a, coll):
    cmd = [a.topo, "--file", a.file, "--gpus-per-node", str(a.ranks), "--terms", coll,
           "--min", "8", "--max", str(1 << 31)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    by_pair = {}
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        size, pair, what = line.split(None, 2)
        by_pair.setdefault(int(pair), what.split("|")[0])
    return by_pair


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--topo", required=True)
    p.add_argument("--file", required=True)
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("timing", nargs="+")
    a = p.parse_args()
    table = {c: choices(a, c) for c in set(COLLS.values())}
    passed = failed = skipped = 0
    seen = set()
    for path in a.timing:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                coll = COLLS.get(r.get("coll"))
                if coll is None or not r.get("blocking") or r["algo"].startswith("queued"):
                    skipped += 1
                    continue
                want = table[coll].get(int(r["bytes"]))
                if want is None:
                    skipped += 1
                    continue
                key = (coll, int(r["bytes"]), r["algo"])
                if key in seen:
                    continue
                seen.add(key)
                if r["algo"] == want:
                    passed += 1
                else:
                    failed += 1
                    print("FAIL %s %d B: ran %r, gpucoll-topo says %r (%s)"
                          % (coll, r["bytes"], r["algo"], want, path))
    print("checked %d distinct (collective, size, kernel) records; %d calls not described"
          % (passed + failed, skipped))
    if passed + failed == 0:
        failed += 1
        print("FAIL no call was checked")
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
