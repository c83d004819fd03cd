#!/bin/bash
# Issue 39, item 2: the inter-node path (2 ranks on 2 GPUs as 2 virtual nodes,
# --mca coll_gpu_virtual_nodes 2) with Debian's UCX 1.13 (no CUDA support:
# device buffers staged through pinned host slots) against a CUDA-capable UCX
# built from source and carried as ucxcuda/ (lib/libuc*.so*, lib/ucx/ modules,
# bin/ucx_info), picked at run time: LD_LIBRARY_PATH=$PWD/ucxcuda/lib and
# UCX_MODULE_DIR=$PWD/ucxcuda/lib/ucx, both exported to the ranks.  Debian's
# stays the default; nothing is rebuilt (same libucp.so.0 soname and ABI).
#   (a) Debian UCX: the virtual-node correctness tests, default transports
#   (b) CUDA UCX: ucx_info; the same tests with coll_gpu_net_direct 1 (device
#       memory straight to UCX or fail), default transports and TCP (with
#       cuda_copy, which UCX needs to touch device memory over TCP)
#   both: gpucoll_bench allreduce, bcast, allgather, reduce_scatter 8 B .. 64 MiB,
#       NCCL beside on its network path (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1),
#       UCX_TLS default and TCP.  Between virtual nodes of one host the CUDA UCX's
#       default transports include cuda_ipc (NVLink); the TCP rows are the ones
#       that resemble a network.
# Which path ran: every run has --mca coll_gpu_verbose 1, whose line on rank 0
# names the hierarchy ("inter-node on device memory" or "staged through
# pinned host") and the UCX that answered ("UCX <version>, CUDA memory
# direct | supported, not used | unsupported: staged"); the summary quotes it.
# GPU host, repo root, gpurun/ as for put_gpu.sh and ucxcuda/ carried:
#   . .gpuhost/setup.sh && bash docs/results/scripts/ucx_cuda_gpu.sh OUT [conform|bench|all]
# Every run is bounded; a run that would pass the budget (BUDGET, 500 s) is
# skipped and says so.  Results: OUT/summary.txt, OUT/bench.txt,
# OUT/ucx_info.txt, OUT/logs.tgz.
set -u
OUT=${1:?usage: ucx_cuda_gpu.sh OUT [conform|bench|all]}; WHAT=${2:-all}
[ -n "${OPAL_PREFIX:-}" ] || . .gpuhost/setup.sh
G=$PWD/gpurun; U=$PWD/ucxcuda
T0=$(date +%s); BUDGET=${BUDGET:-500}
mkdir -p "$OUT/logs"
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1}
DEB_LD=$G/.libs:$LD_LIBRARY_PATH; DEB_MOD=${UCX_MODULE_DIR:-}
S=$OUT/summary.txt
say() { echo "$*" | tee -a "$S"; }
use() { # deb | cuda: which UCX this process and the ranks load
  if [ "$1" = cuda ]; then
    export LD_LIBRARY_PATH=$U/lib:$DEB_LD UCX_MODULE_DIR=$U/lib/ucx
  else
    export LD_LIBRARY_PATH=$DEB_LD
    if [ -n "$DEB_MOD" ]; then export UCX_MODULE_DIR=$DEB_MOD; else unset UCX_MODULE_DIR; fi
  fi
}
# the component's verbose-1 line: hierarchy placement and the UCX behind it
path_of() {
  local l
  l=$(grep -m1 -oE 'inter-node (on device memory|staged through pinned host).*' "$1")
  if [ -n "$l" ]; then
    echo "$l" | sed -E 's/inter-node (on device memory|staged through pinned host).*; (UCX [^,]*), CUDA memory ([^,]*),.*/\1; \2; CUDA memory \3/'
  elif grep -q 'was required but this UCX has no' "$1"; then
    echo "direct required, UCX has no CUDA: staged through the previous component"
  elif grep -q 'the hierarchy could not be set up' "$1"; then
    echo "no hierarchy: $(grep -m1 -oE 'node engine .* on this rank' "$1")"
  else
    echo "no hierarchy line"
  fi
}
# run TAG LIMIT TLS(default|list) MPIRUN-ARGS... : one mpirun, 2 ranks, 2 virtual nodes
run() {
  local tag=$1 lim=$2 tls=$3 left t rc res
  shift 3
  left=$((BUDGET - ($(date +%s) - T0)))
  if [ $left -lt 20 ]; then
    printf '%-34s skipped: budget of %ds spent\n' "$tag" "$BUDGET" | tee -a "$S"
    return
  fi
  [ "$lim" -gt "$left" ] && lim=$left
  t=$(date +%s)
  if [ "$tls" = default ]; then unset UCX_TLS; else export UCX_TLS=$tls; fi
  echo "+ UCX_TLS=${UCX_TLS:-(default)} LD_LIBRARY_PATH=$LD_LIBRARY_PATH UCX_MODULE_DIR=${UCX_MODULE_DIR:-}" \
    > "$OUT/logs/$tag.log"
  echo "+ mpirun -np 2 ... $*" >> "$OUT/logs/$tag.log"
  timeout -k 5 "$lim" mpirun --bind-to none --oversubscribe -np 2 -x LD_LIBRARY_PATH \
    ${UCX_MODULE_DIR:+-x UCX_MODULE_DIR} -x CUDA_VISIBLE_DEVICES ${UCX_TLS:+-x UCX_TLS} \
    -x NCCL_P2P_DISABLE=1 -x NCCL_SHM_DISABLE=1 \
    --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_verbose 1 "$@" >> "$OUT/logs/$tag.log" 2>&1
  rc=$?
  unset UCX_TLS
  res=$(grep -oE '[0-9]+ passed, [0-9]+ failed' "$OUT/logs/$tag.log" | tail -1)
  if [ -z "$res" ]; then   # a benchmark: the 8 B and 64 MiB rows, ours against NCCL (us)
    res=$(awk '$1 == 8 || $1 == 67108864 { printf "%s B %s us (nccl %s) ", $1, $2, $5 }' \
          "$OUT/logs/$tag.log")
  fi
  [ -z "$res" ] && grep -q 'SKIP' "$OUT/logs/$tag.log" && res=$(grep -m1 -oE 'SKIP.{0,36}' "$OUT/logs/$tag.log")
  grep -hE '^FAIL' "$OUT/logs/$tag.log" | sed "s/^/$tag: /" | head -10 >> "$OUT/failures.txt"
  printf '%-34s %-44s rc=%-3d %3ds  [%s]\n' "$tag" "${res:-no tally}" $rc $(($(date +%s) - t)) \
    "$(path_of "$OUT/logs/$tag.log")" | tee -a "$S"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c | tee -a "$S"
[ -x "$U/bin/ucx_info" ] || { say "no $U/bin/ucx_info: carry ucxcuda/ (see the report of issue 39)"; exit 1; }
use cuda
{
  echo "== ucx_info -v (CUDA UCX)"; "$U/bin/ucx_info" -v
  echo "== ucx_info -d | grep -i -E 'cuda|Transport'"; "$U/bin/ucx_info" -d | grep -i -E 'cuda|Transport'
  echo "== ldd mca_coll_gpu.so | grep uc (CUDA UCX)"; ldd "$G/.libs/mca_coll_gpu.so" | grep -E 'libuc[pst]'
  use deb
  echo "== ldd mca_coll_gpu.so | grep uc (Debian UCX)"; ldd "$G/.libs/mca_coll_gpu.so" | grep -E 'libuc[pst]'
} > "$OUT/ucx_info.txt" 2>&1
say "CUDA UCX: $(grep -m1 -oE 'Library version: [0-9.]+' "$OUT/ucx_info.txt");" \
  "cuda transports listed: $(grep -ciE 'Transport: *(cuda|gdr)' "$OUT/ucx_info.txt")"
TESTS=${TESTS:-"test/gpu/test_gpu_allreduce:--quick test/gpu/test_gpu_colls:--quick
test/gpu/test_gpu_mixed:mixed:262144 test/conform/test_conform:--quick"}
conform() { # ucx-tag tls extra-mca...
  local ut=$1 tls=$2 spec prog
  shift 2
  for spec in $TESTS; do
    prog=${spec%%:*}
    run "${ut}_$(basename "$prog")" 80 "$tls" "$@" "$G/$prog" $(echo "${spec#*:}" | tr ':' ' ')
  done
}
if [ "$WHAT" != bench ]; then
  say "== correctness, 2 ranks, 2 GPUs, 2 virtual nodes"
  use deb;  conform a_deb default
  use cuda; conform b_cuda_direct1 default --mca coll_gpu_net_direct 1
  use cuda; conform b_cuda_direct1_tcp tcp,cuda_copy,self --mca coll_gpu_net_direct 1
  # TCP without cuda_copy, coll_gpu_net_direct at its default (-1): whether this
  # UCX still reports CUDA memory there; either way the run must pass (direct or staged)
  use cuda; run b_cuda_auto_tcp_only_allreduce 60 tcp,self "$G/test/gpu/test_gpu_allreduce" --quick
fi
if [ "$WHAT" != conform ]; then
  say "== gpucoll_bench 8 B .. 64 MiB across 2 virtual nodes (-n 20 -r 3), NCCL on its network path"
  B="$G/test/bench/gpucoll_bench -b 8 -e 67108864 -n 20 -r 3"
  for c in ${COLLS:-allreduce bcast allgather reduce_scatter}; do
    for cfg in a_deb:default:deb a_deb_tcp:tcp,self:deb b_cuda:default:cuda \
               b_cuda_tcp:tcp,cuda_copy,self:cuda; do
      IFS=: read -r tag tls ucx <<< "$cfg"
      use "$ucx"
      run "bench_${tag}_$c" 75 "$tls" $B -c "$c" --csv "$OUT/logs/bench_${tag}_$c.csv"
      { echo "== $c $tag UCX_TLS=$tls"; grep -vE '^\[|^ *$|coll/gpu' "$OUT/logs/bench_${tag}_$c.log"; } \
        >> "$OUT/bench.txt"
    done
  done
fi
say "total $(($(date +%s) - T0)) s; failures: $(cat "$OUT/failures.txt" 2>/dev/null | wc -l)"
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
exit 0
