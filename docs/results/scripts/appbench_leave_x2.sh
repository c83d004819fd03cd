#!/bin/bash
# Issue 22 item 2, a GPU per rank: gpucoll_appbench (with NCCL and the
# MPIX enqueue mode) with the resident kernel leaving 3 us after a call
# (default), 1 us and at once (coll_gpu_persist_leave_us), the enqueue
# mode (MPI_THREAD_MULTIPLE, a run of its own), then the
# persistent engine's own timing stamps (verbose 10) for the 20 us kernel
# and the 8 B allreduce, leaving or staying.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/appbench_leave_x2.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gcarry}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none -np 2"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for cfg in "leave3:" "leave0:--mca coll_gpu_persist_leave_us 0" "leave1:--mca coll_gpu_persist_leave_us 1"; do
    name=${cfg%%:*}; args=${cfg#*:}
    echo "-- appbench $name $args"
    timeout 120 $M $args $G/test/bench/gpucoll_appbench -r 3 -t 150 --csv $OUT/appbench_$name.csv 2>&1 \
      | grep -v "^ *$"
  done
  echo "-- appbench --enqueue (MPI_THREAD_MULTIPLE: NCCL and MPIX_<coll>_enqueue only)"
  timeout 120 $M $G/test/bench/gpucoll_appbench --enqueue -r 3 -t 150 --csv $OUT/appbench_enqueue.csv 2>&1 \
    | grep -v "^ *$"
  echo "-- stamps: 20 us kernel, allreduce 8 B, mpi mode only (verbose 10)"
  for a in "" "--mca coll_gpu_persist_leave_us 0" "--mca coll_gpu_persist_gap_us 0"; do
    echo "config: ${a:-default}"
    timeout 60 $M $a --mca coll_gpu_verbose 10 $G/test/bench/gpucoll_appbench -k 20 -w allreduce8 \
      -r 2 -t 100 --no-nccl 2>&1 | grep -E "persistent engine ran|allreduce8|alone" | cut -c1-420
  done
} 2>&1 | tee "$OUT/appbench_leave_x2.log"
