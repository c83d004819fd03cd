#!/bin/bash
# Session 6, 4x H100, run B1: the pool (issue 37 item 3) -- test_gpu_comm_memory with the
# pool (the default since 6c6f4a7) and without, allreduce 8 B-8 MiB with and without it at
# np 2 (GPUs 0,1) and 4; the conformance programs across virtual nodes (issue 39 item 5);
# bcast's timing records on 4 GPUs.
#   bash docs/results/scripts/s6_4gpu_b1.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none -x LD_LIBRARY_PATH -x CUDA_VISIBLE_DEVICES"
B=$G/test/bench/gpucoll_bench
mkdir -p $OUT
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tee $OUT/gpus.txt
gpus() { if [ $1 = 2 ]; then export CUDA_VISIBLE_DEVICES=0,1; else export CUDA_VISIBLE_DEVICES=0,1,2,3; fi; }
for np in 2 4; do gpus $np; for pool in 1 0; do
  echo "== test_gpu_comm_memory np $np, coll_gpu_pool $pool"
  timeout 75 $M -np $np --mca coll_gpu_pool $pool $G/test/gpu/test_gpu_comm_memory 0 0 2>&1 | tail -25
  echo "rc=$?"
done; done > $OUT/comm_memory.txt 2>&1
grep -E "^==|passed|^FAIL" $OUT/comm_memory.txt
echo "[$(( $(date +%s) - T0 )) s]"
for np in 2 4; do gpus $np; for pool in 1 0; do
  echo "== allreduce np $np, coll_gpu_pool $pool"
  timeout 60 $M -np $np --mca coll_gpu_pool $pool $B -c allreduce -e 8388608 2>&1 | grep -E "^ +[0-9]"
done; done 2>&1 | tee $OUT/allreduce_pool.txt | awk '/^==/ || $1 >= 65536'
echo "[$(( $(date +%s) - T0 )) s]"
gpus 4
for vn in 2 4; do
  timeout 100 $M -np 4 --mca coll_gpu_virtual_nodes $vn $G/test/conform/test_conform --quick > $OUT/conform_np4_vn$vn.log 2>&1
  echo "conform np 4, $vn virtual nodes: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/conform_np4_vn$vn.log | tail -1)"
  timeout 100 $M -np 4 --mca coll_gpu_virtual_nodes $vn $G/test/conform/test_conform_nbr --quick > $OUT/conform_nbr_np4_vn$vn.log 2>&1
  echo "conform_nbr np 4, $vn virtual nodes: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/conform_nbr_np4_vn$vn.log | tail -1)"
done 2>&1 | tee $OUT/conform_vnodes.txt
grep -h "^FAIL" $OUT/conform_*vn*.log | head -20
echo "[$(( $(date +%s) - T0 )) s]"
timeout 60 $M -np 4 --mca coll_gpu_timing_file $OUT/tb $B -c bcast -b 2097152 -e 8388608 -n 50 -r 1 --no-nccl > /dev/null 2>&1
python3 - $OUT <<'PY' | tee $OUT/bcast_timing.txt
import json, sys, glob, statistics as s, collections
d = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/tb.*.jsonl")):
    r = f.split(".")[-2]
    for l in open(f):
        j = json.loads(l)
        d[(r, j["bytes"], j["algo"])].append((j["prep_us"], j["submit_us"], j["done_us"]))
for k, v in sorted(d.items()):
    print("rank %s %9d B %-10s n %3d  prep %.1f  submit %.1f  done %.1f us" % (k + (len(v),) + tuple(s.median(x[i] for x in v) for i in range(3))))
PY
rm -f $OUT/tb.*.jsonl
echo "[$(( $(date +%s) - T0 )) s]"
