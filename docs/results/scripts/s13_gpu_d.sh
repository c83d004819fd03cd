#!/bin/bash
# 4x H100, session 13 d (c/ continued on the same warm machine): the
# exchange kernel's block count per collective, reduce_scatter 256 KiB-
# 256 MiB at 16-128 blocks, allgather and alltoall at 32 and 128.
# (c: where reduce, bcast and reduce_scatter trail NCCL
# on 4 GPUs (from 1-16 MiB), the knobs that exist, one rank per GPU,
# gpucoll_bench -n 10 -r 3: the default with NCCL in the same run, then
# each variant without NCCL (same session).  One line per run: size:us.
# Logs in $OUT/d.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s13d; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/d.tgz -C /tmp s13d' EXIT
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
S="reduce_scatter 262144 268435456"
b default $S nccl
for nb in 16 24 32 48 64; do b nb$nb $S - --mca coll_gpu_xchg_nblocks $nb; done
echo "elapsed $(( $(date +%s) - t0 )) s"
for c in allgather alltoall; do
  b default "$c" 262144 268435456 nccl
  b nb32 "$c" 262144 268435456 - --mca coll_gpu_xchg_nblocks 32
  b nb64 "$c" 262144 268435456 - --mca coll_gpu_xchg_nblocks 64
done
echo "elapsed $(( $(date +%s) - t0 )) s"
