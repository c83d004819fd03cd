#!/bin/bash
# Session 7, 4x H100, run B: where a bcast's time goes on 4 GPUs, 1-64 MiB: the timing
# records' algorithm labels and times (rank 0 = root, rank 1), and the spread kernel's block
# count (coll_gpu_xchg_nblocks) and thread count (coll_gpu_nthreads).
#   bash docs/results/scripts/s7_4gpu_b.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none -x LD_LIBRARY_PATH"
B=$G/test/bench/gpucoll_bench
mkdir -p $OUT
T0=$(date +%s)
timeout 60 $M -np 4 --mca coll_gpu_timing_file $OUT/tb $B -c bcast -b 1048576 -e 67108864 -n 20 -r 1 --no-nccl > /dev/null 2>&1
python3 - $OUT <<'PY' | tee $OUT/bcast_timing.txt
import json, sys, glob, statistics as s, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/tb.*.jsonl")):
    r = f.split(".")[-2]
    for l in open(f):
        j = json.loads(l)
        d[(r, j["bytes"], j["algo"])].append((j["prep_us"], j["submit_us"], j["done_us"]))
for k, v in sorted(d.items()):
    if k[0] in ("0", "1"):
        print("rank %s %9d B %-10s n %3d  prep %.1f  submit %.1f  done %.1f us" % (k + (len(v),) + tuple(s.median(x[i] for x in v) for i in range(3))))
PY
rm -f $OUT/tb.*.jsonl
echo "[$(( $(date +%s) - T0 )) s]"
for cfg in "xchg_nblocks 32" "xchg_nblocks 64" "nthreads 1024" "nthreads 256"; do
  echo "== bcast np 4, coll_gpu_$cfg"
  timeout 60 $M -np 4 --mca coll_gpu_${cfg% *} ${cfg#* } $B -c bcast -b 1048576 -e 67108864 --no-nccl 2>&1 | grep -E "^ +[0-9]"
done 2>&1 | tee $OUT/bcast_params.txt
echo "[$(( $(date +%s) - T0 )) s]"
