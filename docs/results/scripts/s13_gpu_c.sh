#!/bin/bash
# 4x H100, session 13 c: where reduce, bcast and reduce_scatter trail NCCL
# on 4 GPUs (from 1-16 MiB), the knobs that exist, one rank per GPU,
# gpucoll_bench -n 10 -r 3: the default with NCCL in the same run, then
# each variant without NCCL (same session).  One line per run: size:us.
# Logs in $OUT/c.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s13c; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/c.tgz -C /tmp s13c' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -np 4"
t0=$(date +%s)
b() { # tag coll lo hi [nccl|-] mca args...
  local tag=$1 coll=$2 lo=$3 hi=$4 nc=$5; shift 5
  local x="--no-nccl"; [ "$nc" = nccl ] && x=""
  timeout 60 $M "$@" $G/test/bench/gpucoll_bench -n 10 -r 3 $x -c $coll -b $lo -e $hi > $L/$coll.$tag.log 2>&1
  local rc=$?
  printf '%-10s %-26s rc=%d ' $coll $tag $rc
  if [ "$nc" = nccl ]; then
    awk '/^ +[0-9]+ /{printf "%dK:%s/%s ", $1/1024, $2, $5}' $L/$coll.$tag.log
  else
    awk '/^ +[0-9]+ /{printf "%dK:%s ", $1/1024, $2}' $L/$coll.$tag.log
  fi
  echo
}
R="reduce 16777216 268435456"
b default $R nccl
b chain16 $R - --mca coll_gpu_reduce_chain_min 16777216
b chain16_nb64 $R - --mca coll_gpu_reduce_chain_min 16777216 --mca coll_gpu_xchg_nblocks 64
b chain16_nb32 $R - --mca coll_gpu_reduce_chain_min 16777216 --mca coll_gpu_xchg_nblocks 32
b chain16_split $R - --mca coll_gpu_reduce_chain_min 16777216 --mca coll_gpu_xchg_split 1
b chain16_split_nb64 $R - --mca coll_gpu_reduce_chain_min 16777216 --mca coll_gpu_xchg_split 1 --mca coll_gpu_xchg_nblocks 64
echo "elapsed $(( $(date +%s) - t0 )) s"
B="bcast 1048576 268435456"
b default $B nccl
b ce1 $B - --mca coll_gpu_put_ce 1
b ce0 $B - --mca coll_gpu_put_ce 0
b read $B - --mca coll_gpu_put_read 1
b chain1M $B - --mca coll_gpu_bcast_chain_min 1048576
b chain1M_split $B - --mca coll_gpu_bcast_chain_min 1048576 --mca coll_gpu_xchg_split 1
b chain1M_nb64 $B - --mca coll_gpu_bcast_chain_min 1048576 --mca coll_gpu_xchg_nblocks 64
echo "elapsed $(( $(date +%s) - t0 )) s"
S="reduce_scatter 4194304 268435456"
b default $S nccl
b split $S - --mca coll_gpu_xchg_split 1
b nb64 $S - --mca coll_gpu_xchg_nblocks 64
b nb32 $S - --mca coll_gpu_xchg_nblocks 32
echo "elapsed $(( $(date +%s) - t0 )) s"
