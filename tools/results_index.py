#!/usr/bin/env python3
"""Write docs/results/README.md, the current performance against NCCL per
machine kind, from the newest committed benchmark runs, and the README's one
table (2 and 4 GPUs) between its results_index markers.

A run is a folder docs/results/<kind>_<YYYY-MM-DD>_<subject>/ (kind: h200x2,
h100x4, h100 for one GPU, cpu for the build machine) whose README.md gives the
commands.  A benchmark output is a gpucoll_bench listing (bench_*.log or
bench_*.txt) whose first line is the benchmark's own header with a GPU per rank
and NCCL in the same run; files with anything before the header (a command line
with other settings) are not the defaults and are left out.  For each kind and
collective the newest run wins (by folder date; in one folder, the listing with
more sizes).  Nothing here is typed by hand: change a run, rerun this script.

Usage: results_index.py [--check] [--root DIR]
  --check  write nothing; exit 1 and show the difference where either file is
           not what this script would write (make check runs this)
"""
import difflib
import os
import subprocess
import re
import sys

KIND_RE = re.compile(r"^(h100|h200|cpu)(?:x(\d+))?_(\d{4}-\d{2}-\d{2})_([A-Za-z0-9_]+)$")
HEAD_RE = re.compile(r"^# MPI_(\w+) \(float, sum, device buffers\), (\d+) ranks, (\d+) GPU\(s\) "
                     r"per node visible, median of (\d+) timed loops, NCCL (\d+)$")
ROW_RE = re.compile(r"^\s*(\d+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s")
# the kinds the issue asks for, in this order, then any other that has runs
KINDS = ["h200x2", "h200x4", "h100x2", "h100x4"]
COLUMNS = [8, 4096, 65536, 262144, 1 << 20, 16 << 20, 256 << 20]
README_COLUMNS = [8, 4096, 262144, 1 << 20, 16 << 20]
README_COLLS = ["allreduce", "bcast", "reduce", "allgather", "reduce_scatter",
                "alltoall", "neighbor_alltoall"]
COLL_NAMES = {"allreduce": "Allreduce", "bcast": "Bcast", "reduce": "Reduce",
              "allgather": "Allgather", "alltoall": "Alltoall",
              "reduce_scatter": "Reduce_scatter",
              "neighbor_alltoall": "Neighbor_alltoall, 2x2 periodic grid"}
COLL_ORDER = ["allreduce", "bcast", "reduce", "allgather", "reduce_scatter", "alltoall",
              "neighbor_alltoall"]
BEGIN = "<!-- results_index: begin (tools/results_index.py writes this table) -->"
END = "<!-- results_index: end -->"


def kind_words(kind):
    m = re.match(r"^(h100|h200|cpu)(?:x(\d+))?$", kind)
    if m.group(1) == "cpu":
        return "build machine (no GPU)"
    return "%sx %s" % (m.group(2) or "1", m.group(1).upper())


def size_words(b):
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return "%d %s" % (b // n, unit)
    return "%d B" % b


def read_runs(res):
    runs = []
    for name in sorted(os.listdir(res)):
        m = KIND_RE.match(name)
        if not m or not os.path.isdir(os.path.join(res, name)):
            continue
        readme = os.path.join(res, name, "README.md")
        title = ""
        if os.path.isfile(readme):
            with open(readme, encoding="utf-8") as f:
                for line in f:
                    if line.startswith("# "):
                        title = line[2:].strip()
                        break
        runs.append({"dir": name, "kind": m.group(1) + ("x" + m.group(2) if m.group(2) else ""),
                     "gpus": int(m.group(2) or (0 if m.group(1) == "cpu" else 1)),
                     "date": m.group(3), "title": title,
                     "readme": os.path.isfile(readme)})
    return runs


def read_bench(path, gpus):
    """The listing's collective and {bytes: (ours, nccl)}, or None where the
    file is not a default gpucoll_bench run with a GPU per rank against NCCL."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    m = HEAD_RE.match(lines[0]) if lines else None
    if not m or int(m.group(2)) != gpus or int(m.group(3)) != gpus:
        return None
    rows = {}
    for line in lines[2:]:
        r = ROW_RE.match(line)
        if not r:
            break
        rows[int(r.group(1))] = (r.group(2), r.group(3))
    return (m.group(1), rows, int(m.group(4)), m.group(5)) if rows else None


def in_git(root):
    try:
        return subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=root,
                              capture_output=True, check=False).returncode == 0
    except OSError:
        return False


def commit_time(d, fname):
    """When git last committed the listing (a later run of the same day and
    sizes wins); one not committed yet is the newest of all."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%ct", "--", fname], cwd=d,
                             capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return 0
    if not out:
        tracked = subprocess.run(["git", "ls-files", "--error-unmatch", fname], cwd=d,
                                 capture_output=True, check=False).returncode == 0
        return 0 if tracked else float("inf")
    return int(out)


def newest(res, runs):
    """{(kind, coll): entry}: the newest run's listing for each."""
    best = {}
    for run in runs:
        if run["gpus"] < 2:
            continue
        d = os.path.join(res, run["dir"])
        for fname in sorted(os.listdir(d)):
            if not re.match(r"^bench_.*\.(log|txt)$", fname):
                continue
            got = read_bench(os.path.join(d, fname), run["gpus"])
            if not got:
                continue
            coll, rows, loops, nccl = got
            key = (run["kind"], coll)
            rank = (run["date"], len(rows), commit_time(d, fname), fname)
            if key not in best or rank > best[key]["rank"]:
                best[key] = {"rank": rank, "run": run, "file": fname, "rows": rows,
                             "loops": loops, "nccl": nccl}
    return best


def cell(rows, b):
    if b not in rows:
        return "-"
    ours, nccl = rows[b]
    text = "%s / %s" % (ours, nccl)
    return "**%s**" % text if float(ours) > float(nccl) else text


def nccl_version(v):
    v = int(v)
    return "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100)


def index_text(res, runs, best):
    out = ["# Results", "",
           "Written by `tools/results_index.py` from the newest committed runs; do not edit by",
           "hand (`python3 tools/results_index.py` rewrites it, `make check` fails where it is "
           "stale).", "",
           "Blocking MPI collectives on device buffers (float, sum), `gpucoll_bench` with its "
           "defaults, a", "GPU per rank, NCCL in the same run. Time in us, coll/gpu / NCCL; bold "
           "where NCCL is faster.", "Each run's folder holds its logs and, in its `README.md`, "
           "the commands that made them.", "",
           "A new run goes in a folder `<kind>_<YYYY-MM-DD>_<subject>/` (kind: `h200x2`, "
           "`h100x4`, ...;", "`h100` for one GPU) with that `README.md` and the benchmark's "
           "listings (`bench_<collective>*.log`", "or `.txt`, as `gpucoll_bench` prints them); "
           "then rerun the script.", ""]
    kinds = KINDS + sorted({k for k, _ in best} - set(KINDS))
    for kind in kinds:
        out.append("## %s" % kind_words(kind))
        out.append("")
        colls = sorted({c for k, c in best if k == kind},
                       key=lambda c: (COLL_ORDER.index(c) if c in COLL_ORDER else 99, c))
        if not colls:
            out.append("No committed benchmark run against NCCL on this kind.")
            out.append("")
            continue
        out.append("| collective | " + " | ".join(size_words(b) for b in COLUMNS) +
                   " | run (commands: its README.md) | file |")
        out.append("| --- " * (len(COLUMNS) + 3) + "|")
        for c in colls:
            e = best[(kind, c)]
            d = e["run"]["dir"]
            out.append("| %s | %s | [%s/](%s/) | [%s](%s/%s) |" % (
                COLL_NAMES.get(c, c), " | ".join(cell(e["rows"], b) for b in COLUMNS),
                d, d, e["file"], d, e["file"]))
        loops = sorted({"%d" % best[(kind, c)]["loops"] for c in colls})
        nccl = sorted({nccl_version(best[(kind, c)]["nccl"]) for c in colls})
        out.append("")
        out.append("Median of %s timed loops per side; NCCL %s." % (" or ".join(loops),
                                                                   ", ".join(nccl)))
        out.append("")
    out += ["## Every run, newest first", "",
            "| date | machine | folder | what it measured |", "| --- | --- | --- | --- |"]
    for run in sorted(runs, key=lambda r: (r["date"], r["dir"]), reverse=True):
        out.append("| %s | %s | [%s/](%s/) | %s |" % (run["date"], kind_words(run["kind"]),
                                                      run["dir"], run["dir"],
                                                      run["title"] or "(no README.md)"))
    out += ["", "Scripts that ran on the GPU hosts: [scripts/](scripts/). Older material "
            "(earlier figures, the", "hand-written index these tables replace): "
            "[archive/](archive/).", ""]
    return "\n".join(out)


def readme_block(best):
    out = [BEGIN,
           "| collective | GPUs (card) | " + " | ".join(size_words(b) for b in README_COLUMNS) +
           " | from |",
           "| --- " * (len(README_COLUMNS) + 3) + "|"]
    for gpus in (2, 4):
        for c in README_COLLS:
            found = [e for (k, cc), e in best.items() if cc == c and e["run"]["gpus"] == gpus]
            if not found:
                continue
            e = max(found, key=lambda e: e["rank"])
            card = e["run"]["kind"].split("x")[0].upper()
            path = "docs/results/%s/%s" % (e["run"]["dir"], e["file"])
            out.append("| %s | %d (%s) | %s | [%s/%s](%s) |" % (
                COLL_NAMES.get(c, c), gpus, card,
                " | ".join(cell(e["rows"], b) for b in README_COLUMNS),
                e["run"]["dir"], e["file"], path))
    out.append(END)
    return "\n".join(out)


def replace_block(text, block):
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < i:
        raise SystemExit("results_index.py: README.md has no '%s' ... '%s' block" % (BEGIN, END))
    return text[:i] + block + text[j + len(END):]


def main(argv):
    check = "--check" in argv
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    if "--root" in argv:
        root = argv[argv.index("--root") + 1]
    res = os.path.join(root, "docs", "results")
    if check and not in_git(root):
        # the newest of two same-day runs is the later commit's
        print("results_index.py: not a git checkout, the index is not checked")
        return 0
    runs = read_runs(res)
    best = newest(res, runs)
    if not best:
        raise SystemExit("results_index.py: no benchmark run found under %s" % res)
    targets = [(os.path.join(res, "README.md"), lambda old: index_text(res, runs, best)),
               (os.path.join(root, "README.md"),
                lambda old: replace_block(old, readme_block(best)))]
    stale = 0
    for path, make in targets:
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        new = make(old)
        if new == old:
            continue
        if check:
            stale += 1
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                       path, "what tools/results_index.py writes"))
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            print("wrote %s" % path)
    if stale:
        print("stale: run python3 tools/results_index.py and commit the result")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
