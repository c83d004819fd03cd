#!/bin/bash
# The staged inter-node pipeline against NCCL's staged paths, same run (issue 39):
#   test/bench/stage_bench.sh BUILDDIR OUTDIR [GPUS [NODES]]   (after ". .gpuhost/setup.sh")
# GPUS ranks (default 2, one per GPU) as NODES virtual nodes (default 2), device buffers,
# Debian's UCX (no CUDA: the pipeline stages through pinned host slots), ranks not bound
# (the channel threads need cores).  Allreduce 64 KiB-64 MiB over UCX sm beside NCCL's SHM
# transport (NCCL_P2P_DISABLE=1), and over UCX tcp beside NCCL's socket transport (P2P and
# SHM off), each with the host fold and with the fold on the device
# (coll_gpu_net_device_fold 1); then where a 64 MiB call's time goes (coll_gpu_verbose 20).
# Prints one table per run (gpucoll_bench's), logs in OUTDIR; a run that fails says so.
B=${1:?build dir}
OUT=${2:?output dir}
NP=${3:-2}
NODES=${4:-2}
mkdir -p "$OUT"
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
export LD_LIBRARY_PATH="$B/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if ! nvidia-smi -L > /dev/null 2>&1; then
  echo "SKIP stage_bench: no GPU"
  exit 0
fi
BN="$B/test/bench/gpucoll_bench -n 20 -r 3 -c allreduce"
X="-x LD_LIBRARY_PATH -x UCX_TLS -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE -x NCCL_NVLS_ENABLE
   --mca coll_gpu_virtual_nodes $NODES --mca coll_gpu_verbose 1"
bad=0
# tag, UCX_TLS, NCCL's SHM off (0/1), smallest size, extra mpirun arguments...
run() {
  local tag=$1 tls=$2 shm_off=$3 min=$4
  shift 4
  env UCX_TLS=$tls NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=$shm_off NCCL_NVLS_ENABLE=0 \
    timeout 200 mpirun --bind-to none --oversubscribe -np "$NP" $X "$@" $BN -b "$min" \
    -e 67108864 > "$OUT/$tag.log" 2>&1
  local rc=$?
  echo "== $tag (UCX_TLS=$tls, $NP ranks as $NODES nodes): rc $rc" \
       "$(grep -m1 -oE '[0-9]+ channels?' "$OUT/$tag.log")"
  grep -E '^ +[0-9]+ ' "$OUT/$tag.log"
  [ $rc -eq 0 ] || bad=$((bad + 1))
}
run sm_host sm,self 0 65536
run sm_devfold sm,self 0 65536 --mca coll_gpu_net_device_fold 1
run tcp_host tcp,self 1 8
run tcp_devfold tcp,self 1 8 --mca coll_gpu_net_device_fold 1
for f in 0 1; do
  env UCX_TLS=sm,self timeout 60 mpirun --bind-to none --oversubscribe -np "$NP" \
    -x LD_LIBRARY_PATH -x UCX_TLS --mca coll_gpu_virtual_nodes "$NODES" \
    --mca coll_gpu_verbose 20 --mca coll_gpu_net_device_fold $f \
    $BN -n 5 -r 1 --no-nccl -b 67108864 -e 67108864 > "$OUT/sm_v20_fold$f.log" 2>&1
  echo "== where a 64 MiB call's time went, device fold $f:"
  grep -h "staged stage" "$OUT/sm_v20_fold$f.log" | tail -2 | sed 's/.*rank/rank/'
done
echo "stage_bench: $bad run(s) failed"
[ $bad -eq 0 ]
