#!/bin/bash
# 4x H100, session 14 a: reductions among 4 ranks on the exchange kernel
# instead of the put fold (cbadb7f) and the put fold in a grid of its own
# (coll_gpu_put_fold_nblocks; the put kernels' tickets count each call's
# grid), checked: test_gpu_colls at np 4 with the fold at 32 blocks, and the
# conformance matrix (test/gpu/conform_gpu.sh, which now also runs the fold
# at 32 blocks beside 128-block copies at np 2, 3, 4).  Logs: $OUT/a.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s14a; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/a.tgz -C /tmp s14a' EXIT
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
F32="--mca coll_gpu_put_fold_nblocks 32"
t colls_np4_fold32 120 $M $F32 $G/test/gpu/test_gpu_colls
export OMPI_MCA_mca_base_component_path="$P0"   # conform_gpu.sh appends the build itself
left=$(( 500 - ($(date +%s) - t0) ))
LIMIT=60 timeout $left bash test/gpu/conform_gpu.sh $G $L/conf > /dev/null 2>&1
echo "conform_gpu.sh: rc=$?"; cat $L/conf/summary.txt; head -20 $L/conf/failures.txt 2>/dev/null
echo "elapsed $(( $(date +%s) - t0 )) s"
