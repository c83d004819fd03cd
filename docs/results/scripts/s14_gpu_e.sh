#!/bin/bash
# 4x H100, session 14 e: issue 39's 4-GPU node layouts, not measured before:
# 4 GPUs as 2 virtual nodes x 2 and as 4 x 1 (coll_gpu_virtual_nodes), one
# rank per GPU, Debian's UCX 1.13 (device buffers staged through pinned host
# slots, the default 16 channels), allreduce against NCCL in the same run on
# its staged paths: UCX_TLS=sm vs NCCL_P2P_DISABLE=1 (NCCL's SHM transport),
# UCX_TLS=tcp vs NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 (its sockets); first
# test_gpu_colls at both layouts over sm.  Logs: $OUT/e.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s14e; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/e.tgz -C /tmp s14e' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
t0=$(date +%s)
SM_NCCL="NCCL_P2P_DISABLE=1 NCCL_NVLS_ENABLE=0"
TCP_NCCL="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0"
r() { # tag limit vnodes tls nccl-env args...
  local tag=$1 lim=$2 vn=$3 tls=$4 nenv=$5; shift 5
  local left=$(( 540 - ($(date +%s) - t0) ))
  [ $left -lt 20 ] && { echo "$tag: skipped, budget spent"; return; }
  [ $lim -gt $left ] && lim=$left
  env UCX_TLS=$tls $nenv timeout -k 5 $lim mpirun --bind-to none --oversubscribe -np 4 \
    -x LD_LIBRARY_PATH -x UCX_TLS $(for e in $nenv; do printf -- '-x %s ' "${e%%=*}"; done) \
    --mca coll_gpu_virtual_nodes $vn "$@" > $L/$tag.log 2>&1
  local rc=$?
  echo "$tag: rc=$rc $(grep -m1 -oE '[0-9]+ passed, [0-9]+ failed' $L/$tag.log)"
  grep -E '^ +[0-9]+ ' $L/$tag.log | awk '{printf "  %10d %9.1f us  nccl %9.1f  x%.2f\n", $1, $2, $5, $7}'
}
r colls_vn2_sm 90 2 sm,self "" $G/test/gpu/test_gpu_colls --quick
r colls_vn4_sm 90 4 sm,self "" $G/test/gpu/test_gpu_colls --quick
B="$G/test/bench/gpucoll_bench -n 10 -r 3 -c allreduce"
r bench_vn2_sm 100 2 sm,self "$SM_NCCL" $B -b 65536 -e 67108864
r bench_vn4_sm 100 4 sm,self "$SM_NCCL" $B -b 65536 -e 67108864
r bench_vn2_tcp 120 2 tcp,self "$TCP_NCCL" $B -b 8 -e 16777216
r bench_vn4_tcp 120 4 tcp,self "$TCP_NCCL" $B -b 8 -e 16777216
echo "elapsed $(( $(date +%s) - t0 )) s"
