#!/bin/bash
# 2026-11-26, 2 GPUs (nvidia-h200-x2 asked), this run's build (G, sm_90):
#  PART app: the application benchmark's grid (20/200/2000 us triad x 8 B
#    allreduce, 4 MiB allreduce, alltoall 1 MiB per peer), blocking MPI,
#    staged and NCCL, then the stream-ordered MPIX enqueue form against NCCL;
#    the engine's stamps of the blocking 8 B call next to the 20 us triad;
#    stage_probe (what one launch costs right after the application kernel).
#  PART final: s33_final.sh (the first 2-GPU run of commits 5e4c6f3..).
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/s34_x2.sh $OUT app|final
set -u
OUT=$1; PART=$2; G=${G:-$(pwd)/gnew}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none -np 2"
if [ "$PART" = app ]; then {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nvidia-smi topo -m | head -3
  echo "== blocking MPI, staged, NCCL"
  timeout 250 $M $G/test/bench/gpucoll_appbench -r 3 --csv $OUT/grid_mpi.csv 2>&1 | grep -v "^\[" 
  echo "== MPIX enqueue against NCCL"
  timeout 200 $M $G/test/bench/gpucoll_appbench -r 3 --enqueue --csv $OUT/grid_enqueue.csv 2>&1 | grep -v "^\["
  echo "== stamps of the blocking 8 B allreduce next to the 20 us triad (verbose 10)"
  timeout 100 $M --mca coll_gpu_verbose 10 $G/test/bench/gpucoll_appbench -k 20 -w allreduce8 -r 2 \
    --no-nccl 2>&1 | grep -E "persistent engine ran|allreduce8" | sed 's/.*coll\/gpu: //'
  echo "== stage_probe, GPU 0"
  CUDA_VISIBLE_DEVICES=0 timeout 60 $G/stage_probe 1000
  python3 -c "import matplotlib" 2>/dev/null && for f in mpi enqueue; do
    python3 test/bench/plot_appbench.py $OUT/grid_$f.png $OUT/grid_$f.csv; done
} 2>&1 | tee "$OUT/s34_app.log"; fi
if [ "$PART" = final ]; then
  bash docs/results/scripts/s33_final.sh $OUT
fi
exit 0
