#!/bin/bash
# 4 GPUs: which path is fastest for the copy collectives at 256 KiB - 4 MiB
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$PWD/gpurun/.libs"
export LD_LIBRARY_PATH=$PWD/gpurun/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p $OUT
nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tee $OUT/gpus.txt
B=gpurun/test/bench/gpucoll_bench
run() { local label=$1; shift; echo "== $label"; timeout 60 mpirun --bind-to none -np 4 -x LD_LIBRARY_PATH "$@" 2>&1 | grep -E "^ +[0-9]|rror" ; }
T0=$(date +%s)
for c in neighbor_alltoall allgather bcast alltoall; do
  run "$c default" $B -c $c -b 262144 -e 4194304
  run "$c persist_max_bytes 1M" --mca coll_gpu_persist_max_bytes 1048576 $B -c $c -b 262144 -e 4194304
  run "$c persist_max_bytes 512K" --mca coll_gpu_persist_max_bytes 524288 $B -c $c -b 262144 -e 4194304
done 2>&1 | tee $OUT/paths.txt
echo "[$(( $(date +%s) - T0 )) s]"
timeout 60 mpirun --bind-to none -np 4 -x LD_LIBRARY_PATH --mca coll_gpu_timing_file $OUT/tf $B -c neighbor_alltoall -b 524288 -e 2097152 -n 50 -r 1 --no-nccl > /dev/null 2>&1
timeout 60 mpirun --bind-to none -np 4 -x LD_LIBRARY_PATH --mca coll_gpu_persist_max_bytes 524288 --mca coll_gpu_timing_file $OUT/tfp $B -c neighbor_alltoall -b 524288 -e 2097152 -n 50 -r 1 --no-nccl > /dev/null 2>&1
python3 - $OUT <<'PY'
import json, sys, glob, statistics as s, collections
for pre in ("tf", "tfp"):
    d = collections.defaultdict(list)
    for f in glob.glob(sys.argv[1] + "/" + pre + ".0.jsonl"):
        for l in open(f):
            try: j = json.loads(l)
            except Exception: continue
            d[(j.get("coll"), j.get("bytes"), j.get("algo"))].append((j.get("prep_us", 0), j.get("submit_us", 0), j.get("done_us", 0)))
    for k, v in sorted(d.items(), key=lambda kv: (str(kv[0][0]), kv[0][1] or 0)):
        print(pre, k, len(v), "prep %.1f submit %.1f done %.1f" % tuple(s.median(x[i] for x in v) for i in range(3)))
PY
echo "[$(( $(date +%s) - T0 )) s]"
