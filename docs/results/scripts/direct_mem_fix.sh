#!/bin/bash
# After the first run of direct_mem_gpu.sh (plain): the freed-allocation log
# of the IPC cache (test_gpu_direct's memory row), the communicator memory
# test with its whole output (it ended in an MPI error), and the two
# out-of-memory rows of the reliability suite.  No MPS.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/direct_mem_fix.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gslim}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --oversubscribe --bind-to none"
{
  for np in 2 4; do
    echo "== test_gpu_direct np $np"
    timeout 120 $M -np $np $G/test/gpu/test_gpu_direct 2>&1 | tail -8
  done
  echo "== test_gpu_comm_memory 100 1000 8 (whole output)"
  timeout 200 $M -np 2 --mca coll_gpu_verbose 1 $G/test/gpu/test_gpu_comm_memory 100 1000 8 2>&1 | \
    grep -v "rank [01] -> \|device [0-9] (\|host-paced (" | head -60
  echo "== oom rows"
  RELIABILITY_NP=2 RELIABILITY_SIZES=8 RELIABILITY_WATCHDOG=60 sh test/gpu/run_reliability.sh $G 2>&1 | \
    grep -A15 "out of GPU memory" | head -40
} 2>&1 | tee "$OUT/direct_mem_fix.log"
