#!/bin/bash
# 4x H100, session 13 b: MPI_Reduce's two-shot with the root folding
# nothing (the n-1 other ranks own the shards; every rank's links carry one
# message in and one out) and coll_gpu_reduce_chain_min 64 MiB:
# test_gpu_colls at np 4 and 3 (rooted cases 1-48 MiB two-shot, 72 MiB
# chain; bit for bit against the device allreduce below the chain) and at
# np 4 with the chain threshold raised to 256 MiB (72 MiB two-shot);
# test_conform --quick --mem device at np 3, 4 and 8; gpucoll_bench reduce
# 256 KiB-256 MiB at np 4 against NCCL, the two-shot to 256 MiB, and the
# default; the timing file's labels.  Logs in $OUT/b.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s13b; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/b.tgz -C /tmp s13b' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
t0=$(date +%s)
t() { local tag=$1 lim=$2 t1=$(date +%s); shift 2
  timeout $lim "$@" > $L/$tag.log 2>&1
  echo "$tag: rc=$? $(( $(date +%s) - t1 )) s; $(grep -E 'passed, [0-9]+ failed' $L/$tag.log | tail -1)"
  grep -h "^FAIL\|Error\|error" $L/$tag.log | head -5 | cut -c1-250; }
t colls_np4 120 $M -np 4 $G/test/gpu/test_gpu_colls
t colls_np3 120 $M -np 3 $G/test/gpu/test_gpu_colls
t colls_np4_chain256 120 $M -np 4 --mca coll_gpu_reduce_chain_min 268435456 $G/test/gpu/test_gpu_colls
for np in 3 4 8; do
  t conform_np$np 100 $M -np $np $G/test/conform/test_conform --quick --mem device
done
echo "elapsed $(( $(date +%s) - t0 )) s"
tf=$L/tf; mkdir -p $tf
timeout 60 $M -np 4 --mca coll_gpu_timing_file $tf/r $G/test/bench/gpucoll_bench -c reduce \
  -b 524288 -e 134217728 -n 2 -r 1 --no-nccl > /dev/null 2>&1
echo "reduce labels (np 4, defaults):"
grep -o '"coll":"reduce","algo":"[^"]*","bytes":[0-9]*' $tf/r.0.jsonl | sort -t: -k4 -n | uniq | head -12
BN="$G/test/bench/gpucoll_bench -c reduce -b 262144 -e 268435456 -n 20 -r 3"
timeout 120 $M -np 4 -x NCCL_NVLS_ENABLE --mca coll_gpu_reduce_chain_min 536870912 $BN > $L/bench_reduce_ts.log 2>&1
echo "reduce, two-shot (root folds nothing) to 256 MiB: rc=$?"; grep -E '^ +[0-9]+ ' $L/bench_reduce_ts.log
echo "elapsed $(( $(date +%s) - t0 )) s"
if [ $(( $(date +%s) - t0 )) -lt 330 ]; then
  timeout 120 $M -np 4 -x NCCL_NVLS_ENABLE $BN -b 16777216 > $L/bench_reduce_default.log 2>&1
  echo "reduce, default (chain from 64 MiB): rc=$?"; grep -E '^ +[0-9]+ ' $L/bench_reduce_default.log
fi
echo "elapsed $(( $(date +%s) - t0 )) s"
