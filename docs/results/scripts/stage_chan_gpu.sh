#!/bin/bash
# Issue 39 item 1: the staged inter-node pipeline on channel threads
# (coll_gpu_net_channels), 2 GPUs as 2 virtual nodes (one rank per node and
# GPU), Debian's UCX 1.13 (no CUDA: device buffers staged through pinned host
# slots), against NCCL in the same run on its staged paths:
#   UCX_TLS=sm  vs NCCL_P2P_DISABLE=1 (NCCL's SHM transport)
#   UCX_TLS=tcp vs NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 (NCCL's socket transport)
# Ranks are not bound to one core (--bind-to none): channel threads need cores.
# GPU host, repo root, gpurun/ carried:
#   . .gpuhost/setup.sh && bash docs/results/scripts/stage_chan_gpu.sh OUT [check|sm|tcp|colls|all] [CHANNELS...]
set -u
OUT=${1:?usage: stage_chan_gpu.sh OUT [check|sm|tcp|colls|all] [channels...]}; WHAT=${2:-all}
shift 2 2>/dev/null; CHS=${*:-1 4 8}
[ -n "${OPAL_PREFIX:-}" ] || . .gpuhost/setup.sh
G=$PWD/gpurun; T0=$(date +%s); BUDGET=${BUDGET:-560}
mkdir -p "$OUT/logs"
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1}
S=$OUT/summary.txt
say() { echo "$*" | tee -a "$S"; }
# run TAG LIMIT NP TLS NCCL-ENV MPIRUN-ARGS...
run() {
  local tag=$1 lim=$2 np=$3 tls=$4 nenv=$5 left rc t
  shift 5
  left=$((BUDGET - ($(date +%s) - T0)))
  if [ $left -lt 15 ]; then say "$(printf '%-36s skipped: budget spent' "$tag")"; return; fi
  [ "$lim" -gt "$left" ] && lim=$left
  echo "+ UCX_TLS=$tls $nenv mpirun --bind-to ${BIND:-none} -np $np --mca coll_gpu_virtual_nodes 2 $*" > "$OUT/logs/$tag.log"
  t=$(date +%s)
  env UCX_TLS=$tls $nenv timeout -k 5 "$lim" mpirun --bind-to ${BIND:-none} --oversubscribe -np "$np" \
    -x LD_LIBRARY_PATH -x CUDA_VISIBLE_DEVICES -x UCX_TLS ${nenv:+$(for e in $nenv; do printf -- '-x %s ' "$e"; done)} \
    --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_verbose 1 "$@" >> "$OUT/logs/$tag.log" 2>&1
  rc=$?
  say "$(printf '%-36s rc %-3s %4ss  %s  %s' "$tag" "$rc" "$(($(date +%s) - t))" \
        "$(grep -m1 -oE '[0-9]+ passed, [0-9]+ failed' "$OUT/logs/$tag.log")" \
        "$(grep -m1 -oE '[0-9]+ channels?' "$OUT/logs/$tag.log")")"
}
SM_NCCL="NCCL_P2P_DISABLE=1 NCCL_NVLS_ENABLE=0"
TCP_NCCL="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0"
B="$G/test/bench/gpucoll_bench -n 20 -r 3"
case $WHAT in check|all)
  for ch in $CHS; do
    run "allreduce_np2_ch$ch" 90 2 sm,self "" --mca coll_gpu_net_channels $ch $G/test/gpu/test_gpu_allreduce
    run "colls_np2_ch$ch" 120 2 sm,self "" --mca coll_gpu_net_channels $ch $G/test/gpu/test_gpu_colls
  done
  run "colls_np4_vn2_ch4" 150 4 sm,self "" --mca coll_gpu_net_channels 4 $G/test/gpu/test_gpu_colls
  run "allreduce_np2_tcp_ch4" 120 2 tcp,self "" --mca coll_gpu_net_channels 4 $G/test/gpu/test_gpu_allreduce
  run "allreduce_np2_smallslice_ch4" 120 2 sm,self "" --mca coll_gpu_net_channels 4 --mca coll_gpu_net_slot_bytes 65536 $G/test/gpu/test_gpu_allreduce
  BIND=core run "allreduce_np2_bound_core" 90 2 sm,self "" --mca coll_gpu_net_channels 4 $G/test/gpu/test_gpu_allreduce
;; esac
case $WHAT in sm|all)
  for ch in $CHS; do
    run "bench_sm_allreduce_ch$ch" 120 2 sm,self "$SM_NCCL" --mca coll_gpu_net_channels $ch $B -c allreduce -b 65536 -e 67108864
  done
;; esac
case $WHAT in tcp|all)
  for ch in $CHS; do
    run "bench_tcp_allreduce_ch$ch" 150 2 tcp,self "$TCP_NCCL" --mca coll_gpu_net_channels $ch $B -c allreduce -b 8 -e 67108864
  done
;; esac
case $WHAT in colls|all)
  for c in bcast allgather reduce_scatter; do
    run "bench_sm_${c}_ch${CHS##* }" 120 2 sm,self "$SM_NCCL" --mca coll_gpu_net_channels ${CHS##* } $B -c $c -b 65536 -e 67108864
  done
;; esac
say "total $(($(date +%s) - T0)) s"
for f in "$OUT"/logs/bench_*.log; do [ -f "$f" ] && { echo "== $(basename "$f" .log)"; grep -vE '^\[|^ *$|coll/gpu|^\+' "$f"; } >> "$OUT/bench.txt"; done
exit 0
