#!/bin/bash
# 2026-11-26, 2 GPUs: the application grid once more with the triad alone
# measured over about 60 ms (commit 16686a0): blocking MPI / staged / NCCL,
# then MPIX enqueue against NCCL.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/s34_grid2.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gnew}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none -np 2"
{
  nvidia-smi --query-gpu=name --format=csv,noheader
  echo "== blocking MPI, staged, NCCL"
  timeout 250 $M $G/test/bench/gpucoll_appbench -r 3 --csv $OUT/grid2_mpi.csv 2>&1 | grep -v "^\["
  echo "== MPIX enqueue against NCCL"
  timeout 200 $M $G/test/bench/gpucoll_appbench -r 3 --enqueue --csv $OUT/grid2_enqueue.csv 2>&1 | grep -v "^\["
  python3 -c "import matplotlib" 2>/dev/null && for f in mpi enqueue; do
    python3 test/bench/plot_appbench.py $OUT/grid2_$f.png $OUT/grid2_$f.csv; done
} 2>&1 | tee "$OUT/s34_grid2.log"
exit 0
