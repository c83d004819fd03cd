#!/bin/bash
# 4x H100, session 13 a: MPI_Reduce by the two-shot kernel to the root
# (604473e, 97d432f) beyond its first run: test_gpu_colls at np 4 and 3 with
# coll_gpu_reduce_chain_min raised to 256 MiB (its rooted cases reach 24 and
# 48 MiB: the two-shot checked where the chain runs today), gpucoll_bench
# reduce 16-256 MiB with the chain threshold raised and at its default,
# same session, against NCCL; the conformance matrix (test/gpu/conform_gpu.sh:
# 2 GPUs np 1-4 and under MPS, 4 GPUs np 4 full and np 8, the put path);
# the reliability suite's scenarios at 4 MiB, np 4 (bounded).  Logs in
# $OUT/a.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s13a; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/a.tgz -C /tmp s13a' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
P0="$OMPI_MCA_mca_base_component_path"
export OMPI_MCA_mca_base_component_path="$P0:$G/.libs"
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
t0=$(date +%s)
t() { local tag=$1 lim=$2 t1=$(date +%s); shift 2
  timeout $lim "$@" > $L/$tag.log 2>&1
  echo "$tag: rc=$? $(( $(date +%s) - t1 )) s; $(grep -E 'passed, [0-9]+ failed' $L/$tag.log | tail -1)"
  grep -h "^FAIL\|Error\|error" $L/$tag.log | head -5 | cut -c1-250; }
CH="--mca coll_gpu_reduce_chain_min 268435456"
t colls_np4_chain256 120 $M -np 4 $CH $G/test/gpu/test_gpu_colls
t colls_np3_chain256 120 $M -np 3 $CH $G/test/gpu/test_gpu_colls
tf=$L/tf; mkdir -p $tf
timeout 60 $M -np 4 $CH --mca coll_gpu_timing_file $tf/r $G/test/bench/gpucoll_bench -c reduce \
  -b 16777216 -e 268435456 -n 2 -r 1 --no-nccl > /dev/null 2>&1
echo "reduce labels (np 4, chain from 256 MiB):"
grep -o '"coll":"reduce","algo":"[^"]*","bytes":[0-9]*' $tf/r.0.jsonl | sort -u | head -12
echo "elapsed $(( $(date +%s) - t0 )) s"
BN="$G/test/bench/gpucoll_bench -c reduce -b 16777216 -e 268435456 -n 20 -r 3"
timeout 100 $M -np 4 -x NCCL_NVLS_ENABLE $CH $BN > $L/bench_reduce_chain256.log 2>&1
echo "reduce, two-shot to root up to 256 MiB: rc=$?"; grep -E '^ +[0-9]+ ' $L/bench_reduce_chain256.log
timeout 100 $M -np 4 -x NCCL_NVLS_ENABLE $BN > $L/bench_reduce_default.log 2>&1
echo "reduce, default (chain from 16 MiB): rc=$?"; grep -E '^ +[0-9]+ ' $L/bench_reduce_default.log
echo "elapsed $(( $(date +%s) - t0 )) s"
export OMPI_MCA_mca_base_component_path="$P0"   # conform_gpu.sh appends the build itself
LIMIT=60 timeout 300 bash test/gpu/conform_gpu.sh $G $L/conf > /dev/null 2>&1
echo "conform_gpu.sh: rc=$?"; cat $L/conf/summary.txt; head -20 $L/conf/failures.txt 2>/dev/null
echo "elapsed $(( $(date +%s) - t0 )) s"
left=$(( 520 - ($(date +%s) - t0) ))
if [ $left -gt 60 ]; then
  RELIABILITY_NP="4" RELIABILITY_SIZES="4194304" RELIABILITY_WATCHDOG=60 \
    timeout $left sh test/gpu/run_reliability.sh $G > $L/reliability_np4_4MiB.txt 2>&1
  echo "reliability np 4 4 MiB: rc=$? $(grep -c ^PASS $L/reliability_np4_4MiB.txt) PASS"
  grep -E "^FAIL|watchdog|passed, .* failed$" $L/reliability_np4_4MiB.txt | tail -8
fi
echo "elapsed $(( $(date +%s) - t0 )) s"
