#!/bin/bash
# Device calls on the GPU host (repo root, after ". .gpuhost/setup.sh"):
#   test/gpu/gpuhost_run.sh tests OUTDIR   demo + both GPU correctness suites
#   test/gpu/gpuhost_run.sh bench OUTDIR   every collective vs NCCL, timing file, plot data
#   test/gpu/gpuhost_run.sh hier OUTDIR    virtual-node suites + hierarchical allreduce over UCX
#                                          vs NCCL on its network path (P2P and SHM off)
# QUICK=--quick shortens the suites; COLLS picks benchmarks; BENCH_MAX the largest size.
set -u
what=${1:-tests}
OUTDIR=${2:-/tmp/out}
B=$(pwd)/build
mkdir -p "$OUTDIR"
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [ "$what" = hier ]; then
  ONLY_HIER=1 MPIRUN="mpirun --bind-to none" sh test/run_gpu_tests.sh "$B" ${QUICK:-} 2>&1 | tee "$OUTDIR/gpu_tests_hier.log" | tail -30
  for tls in default tcp,self; do
    tag=$(echo $tls | tr -d ',')
    env $( [ $tls = default ] || echo UCX_TLS=$tls ) mpirun --bind-to none -np 2 --mca coll_gpu_virtual_nodes 2 \
      -x NCCL_P2P_DISABLE=1 -x NCCL_SHM_DISABLE=1 -x UCX_TLS \
      "$B/test/bench/gpucoll_bench" -c allreduce -e ${BENCH_MAX:-268435456} \
      --csv "$OUTDIR/bench_hier_$tag.csv" 2>&1 | tee "$OUTDIR/bench_hier_$tag.log"
  done
elif [ "$what" = tests ]; then
  NP=2 MPIRUN="mpirun --bind-to none" sh demo/run_demo.sh "$B" 2>&1 | tee "$OUTDIR/demo.log"
  MPIRUN="mpirun --bind-to none" sh test/run_gpu_tests.sh "$B" ${QUICK:-} 2>&1 | tee "$OUTDIR/gpu_tests.log" | tail -40
else
  for c in ${COLLS:-allreduce bcast reduce allgather reduce_scatter alltoall}; do
    mpirun --bind-to none -np 2 "$B/test/bench/gpucoll_bench" -c $c -e ${BENCH_MAX:-2147483648} \
      --csv "$OUTDIR/bench_$c.csv" --json "$OUTDIR/bench_$c.json" 2>&1 | tee "$OUTDIR/bench_$c.log"
  done
  # the per-collective timing file, and that every line is a JSON object
  mpirun --bind-to none -np 2 --mca coll_gpu_timing_file "$OUTDIR/timing" \
    "$B/test/bench/gpucoll_bench" -c allreduce -e 1048576 -n 20 --no-nccl > /dev/null 2>&1
  python3 -c "import json,sys; n=sum(1 for f in sys.argv[1:] for l in open(f) if json.loads(l)['coll']); print('timing records:', n)" "$OUTDIR"/timing.*.jsonl
  command -v nsys > /dev/null && echo "nsys present" || echo "nsys not installed on this host"
fi
