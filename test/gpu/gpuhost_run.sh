#!/bin/bash
# One device call on the GPU host: demo, GPU correctness suites, benchmark of every
# collective against NCCL.  QUICK=--quick shortens the suites; COLLS picks benchmarks.
# Usage (repo root, after ". .gpuhost/setup.sh"): test/gpu/gpuhost_run.sh OUTDIR
set -u
OUTDIR=${1:-/tmp/out}
B=$(pwd)/build
mkdir -p "$OUTDIR"
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
nvidia-smi topo -m 2>/dev/null | head -5
NP=2 MPIRUN="mpirun --bind-to none" sh demo/run_demo.sh "$B" 2>&1 | tee "$OUTDIR/demo.log"
MPIRUN="mpirun --bind-to none" sh test/run_gpu_tests.sh "$B" ${QUICK:-} 2>&1 | tee "$OUTDIR/gpu_tests.log" | tail -25
for c in ${COLLS:-allreduce bcast reduce allgather reduce_scatter alltoall}; do
  mpirun --bind-to none -np 2 "$B/test/bench/gpucoll_bench" -c $c -e ${BENCH_MAX:-2147483648} \
    --csv "$OUTDIR/bench_$c.csv" 2>&1 | tee "$OUTDIR/bench_$c.log"
done
