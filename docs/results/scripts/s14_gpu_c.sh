#!/bin/bash
# 4x H100, session 14 c: the new defaults from 4 ranks -- the resident kernel
# reduces to 512 KiB a peer (was 256 KiB) and the put fold runs in 32 blocks
# (was: reductions took the exchange kernel) -- against the old values in
# the same session and NCCL: allreduce, reduce, reduce_scatter; reduce_scatter
# at 3 ranks with the fold at 32 blocks; then checked: test_gpu_colls,
# test_gpu_allreduce, test_conform (full) at np 4, test_conform at np 8, the
# reliability scenarios at np 4 (4 MiB) as time allows.  Logs: $OUT/c.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s14c; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/c.tgz -C /tmp s14c' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
P0="$OMPI_MCA_mca_base_component_path"
export OMPI_MCA_mca_base_component_path="$P0:$G/.libs"
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -np 4"
t0=$(date +%s)
t() { local tag=$1 lim=$2 t1=$(date +%s); shift 2
  timeout $lim "$@" > $L/$tag.log 2>&1
  echo "$tag: rc=$? $(( $(date +%s) - t1 )) s; $(grep -E 'passed, [0-9]+ failed' $L/$tag.log | tail -1)"
  grep -h "^FAIL\|Error\|error" $L/$tag.log | head -5 | cut -c1-250; }
b() { # tag coll lo hi [nccl|-] mca args...
  local tag=$1 coll=$2 lo=$3 hi=$4 nc=$5; shift 5
  local x="--no-nccl"; [ "$nc" = nccl ] && x=""
  timeout 60 $M "$@" $G/test/bench/gpucoll_bench -n 10 -r 3 $x -c $coll -b $lo -e $hi > $L/$coll.$tag.log 2>&1
  local rc=$?
  printf '%-10s %-16s rc=%d ' $coll $tag $rc
  if [ "$nc" = nccl ]; then
    awk '/^ +[0-9]+ /{printf "%dK:%s/%s ", $1/1024, $2, $5}' $L/$coll.$tag.log
  else
    awk '/^ +[0-9]+ /{printf "%dK:%s ", $1/1024, $2}' $L/$coll.$tag.log
  fi
  echo
}
OLD="--mca coll_gpu_persist_reduce_max_bytes 262144 --mca coll_gpu_put_fold_nblocks 0"
A="allreduce 131072 4194304"
b default $A nccl
b old $A - $OLD
S="reduce_scatter 524288 268435456"
b default $S nccl
b old $S - $OLD
R="reduce 131072 4194304"
b default $R nccl
b old $R - $OLD
M3="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x CUDA_VISIBLE_DEVICES -np 3"
export CUDA_VISIBLE_DEVICES=0,1,2
M0="$M"; M="$M3"
b np3_default reduce_scatter 1048576 268435456 nccl
b np3_fold32 reduce_scatter 1048576 268435456 - --mca coll_gpu_put_fold_nblocks 32
M="$M0"; unset CUDA_VISIBLE_DEVICES
echo "elapsed $(( $(date +%s) - t0 )) s"
t colls_np4 120 $M $G/test/gpu/test_gpu_colls
t allreduce_np4 120 $M $G/test/gpu/test_gpu_allreduce
t conform_np4_full 120 $M $G/test/conform/test_conform
t conform_np8 120 ${M/-np 4/-np 8} $G/test/conform/test_conform --quick
echo "elapsed $(( $(date +%s) - t0 )) s"
left=$(( 520 - ($(date +%s) - t0) ))
if [ $left -gt 60 ]; then
  RELIABILITY_NP="4" RELIABILITY_SIZES="4194304" RELIABILITY_WATCHDOG=60 \
    timeout $left sh test/gpu/run_reliability.sh $G > $L/reliability_np4_4MiB.txt 2>&1
  echo "reliability np 4 4 MiB: rc=$? $(grep -c ^PASS $L/reliability_np4_4MiB.txt) PASS"
  grep -E "^FAIL|watchdog|passed, .* failed$" $L/reliability_np4_4MiB.txt | tail -8
fi
echo "elapsed $(( $(date +%s) - t0 )) s"
