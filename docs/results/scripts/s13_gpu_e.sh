#!/bin/bash
# 4x H100, session 13 e: the exchange kernel's coarse cut (reducing
# exchanges that are not a chain, 4 ranks or more: 32 blocks of 4x larger
# slots, coll_gpu_xchg_reduce_nblocks; its own flag counters, and a wait
# for the other cut's hand-overs before a block first writes a slot):
# correctness (test_gpu_colls np 4, test_conform full np 4, quick np 8 and
# np 4 on 2 GPUs, the neighbourhood suite np 4, the reliability scenarios at
# 4 MiB np 4), the verbose line naming it, and gpucoll_bench reduce_scatter,
# reduce and allgather 256 KiB-256 MiB against NCCL with it and without it
# (coll_gpu_xchg_reduce_nblocks 0) in the same session.  Logs in $OUT/e.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s13e; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/e.tgz -C /tmp s13e' EXIT
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
t colls_np4 120 $M -np 4 $G/test/gpu/test_gpu_colls
t conform_np4_full 120 $M -np 4 $G/test/conform/test_conform
t conform_np8 100 $M -np 8 $G/test/conform/test_conform --quick
t conform_np4_2gpu 100 env CUDA_VISIBLE_DEVICES=0,1 $M -np 4 -x CUDA_VISIBLE_DEVICES $G/test/conform/test_conform --quick
t nbr_np4 100 $M -np 4 $G/test/conform/test_conform_nbr --quick
echo "elapsed $(( $(date +%s) - t0 )) s"
timeout 60 $M -np 4 --mca coll_gpu_verbose 20 $G/test/bench/gpucoll_bench -c reduce_scatter -b 16777216 \
  -e 16777216 -n 2 -r 1 --no-nccl > $L/verbose_rs.log 2>&1
echo "verbose 20, reduce_scatter 16 MiB: $(grep -c 'coarse slots' $L/verbose_rs.log) lines name the coarse cut"
grep -m1 "coarse slots" $L/verbose_rs.log | cut -c1-200
b() { # tag coll lo hi [nccl|-] mca args...
  local tag=$1 coll=$2 lo=$3 hi=$4 nc=$5; shift 5
  local x="--no-nccl"; [ "$nc" = nccl ] && x=""
  timeout 60 $M -np 4 -x NCCL_NVLS_ENABLE "$@" $G/test/bench/gpucoll_bench -n 10 -r 3 $x -c $coll -b $lo -e $hi > $L/$coll.$tag.log 2>&1
  local rc=$?
  printf '%-14s %-8s rc=%d ' $coll $tag $rc
  if [ "$nc" = nccl ]; then awk '/^ +[0-9]+ /{printf "%dK:%s/%s ", $1/1024, $2, $5}' $L/$coll.$tag.log
  else awk '/^ +[0-9]+ /{printf "%dK:%s ", $1/1024, $2}' $L/$coll.$tag.log; fi
  echo
}
for c in reduce_scatter reduce allgather; do
  b coarse $c 262144 268435456 nccl
  b fine $c 262144 268435456 - --mca coll_gpu_xchg_reduce_nblocks 0
done
echo "elapsed $(( $(date +%s) - t0 )) s"
left=$(( 400 - ($(date +%s) - t0) ))
if [ $left -gt 60 ]; then
  export OMPI_MCA_mca_base_component_path="$P0"
  RELIABILITY_NP="4" RELIABILITY_SIZES="4194304" RELIABILITY_WATCHDOG=60 \
    timeout $left sh test/gpu/run_reliability.sh $G > $L/reliability_np4_4MiB.txt 2>&1
  echo "reliability np 4 4 MiB: rc=$? $(grep -c ^PASS $L/reliability_np4_4MiB.txt) PASS"
  grep -E "^FAIL|watchdog|passed, .* failed$" $L/reliability_np4_4MiB.txt | tail -8
fi
echo "elapsed $(( $(date +%s) - t0 )) s"
