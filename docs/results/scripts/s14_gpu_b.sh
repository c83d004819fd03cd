#!/bin/bash
# 4x H100, session 14 b: reduce_scatter 1-256 MiB, the default against NCCL
# and the put fold at 32 / 64 blocks (coll_gpu_put_fold_nblocks); what the
# 2 MiB holes of reduce_scatter, bcast and reduce on 4 GPUs are made of:
# each path's knob at 1-8 MiB; the path each size takes (timing file).
# gpucoll_bench -n 10 -r 3, one rank per GPU.  Logs: $OUT/b.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s14b; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/b.tgz -C /tmp s14b' EXIT
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
# the path each reduce_scatter size takes, default and fold 32
for v in default fold32; do
  tf=$L/tf_$v; mkdir -p $tf; x=""; [ $v = fold32 ] && x="$F32"
  timeout 60 $M $x --mca coll_gpu_timing_file $tf/r $G/test/bench/gpucoll_bench -c reduce_scatter \
    -b 1048576 -e 16777216 -n 2 -r 1 --no-nccl > /dev/null 2>&1
  echo "reduce_scatter paths ($v): $(grep -o '"algo":"[^"]*","bytes":[0-9]*' $tf/r.0.jsonl | sort -u | tr '\n' ' ')"
done
echo "elapsed $(( $(date +%s) - t0 )) s"
S="reduce_scatter 1048576 268435456"
b default $S nccl
b fold32 $S - $F32
b fold64 $S - --mca coll_gpu_put_fold_nblocks 64
b fold32_256K reduce_scatter 1048576 8388608 - $F32 --mca coll_gpu_put_min 262144
b rmax512K reduce_scatter 1048576 8388608 - --mca coll_gpu_persist_reduce_max_bytes 524288
b nth512 reduce_scatter 1048576 8388608 - --mca coll_gpu_nthreads 512
b xnb32 reduce_scatter 1048576 8388608 - --mca coll_gpu_xchg_nblocks 32 --mca coll_gpu_put_min 0
echo "elapsed $(( $(date +%s) - t0 )) s"
B="bcast 1048576 8388608"
b default $B nccl
b xchg $B - --mca coll_gpu_put_min 16777216
b res2M $B - --mca coll_gpu_persist_max_bytes 2097152
b chain $B - --mca coll_gpu_bcast_chain_min 1048576
R="reduce 524288 8388608"
b default $R nccl
b direct $R - --mca coll_gpu_reduce_twoshot_min 0
b direct_f32 $R - --mca coll_gpu_reduce_twoshot_min 0 $F32
b rmax1M $R - --mca coll_gpu_persist_reduce_max_bytes 1048576
echo "elapsed $(( $(date +%s) - t0 )) s"
