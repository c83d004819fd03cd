#!/bin/bash
# The nonblocking allreduce run by rank 0 for every rank (ranks sharing the
# GPU without MPS): latency of iallreduce + wait against the previous path
# (host-paced rounds from progress: coll_gpu_shared_direct 0), then every
# suite that starts nonblocking or persistent calls, the reliability suite
# and the communicator memory test, without MPS.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/direct_nb_gpu.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gcarry}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --oversubscribe --bind-to none"
T() { # label, seconds, np, command...
  l=$1; s=$2; np=$3; shift 3; t0=$(date +%s.%N)
  o=$(timeout $s $M -np $np "$@" 2>&1); rc=$?
  printf '%-40s rc %3d %6.1f s  %s\n' "$l" $rc "$(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{print b-a}')" \
    "$(echo "$o" | grep 'passed,' | tail -1)"
  echo "$o" | grep -E "^FAIL|free GPU|MiB more|rror" | head -8
}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "-- iallreduce + wait latency (us): default, then coll_gpu_shared_direct 0"
  for np in 2 4; do
    for a in "" "--mca coll_gpu_shared_direct 0"; do
      echo "np $np ${a:-default}"
      timeout 120 $M -np $np $a $G/test/bench/gpucoll_bench -c allreduce --nonblocking \
        -b 8 -e 16777216 --no-nccl -r 3 -n 100 2>&1 | grep -E "^ *[0-9]" | awk '{print "   " $1, $2}' | tr '\n' ' '
      echo
    done
  done
  T "test_gpu_direct np 2" 120 2 $G/test/gpu/test_gpu_direct
  T "test_gpu_direct np 4" 150 4 $G/test/gpu/test_gpu_direct 200
  for np in 2 4; do
    T "test_gpu_colls np $np --quick" 150 $np $G/test/gpu/test_gpu_colls --quick
    T "test_gpu_allreduce np $np --quick" 150 $np $G/test/gpu/test_gpu_allreduce --quick
    T "test_gpu_persistent np $np" 150 $np $G/test/gpu/test_gpu_persistent --quick
    for by in 8 262144; do
      T "test_gpu_mixed np $np $by B" 100 $np --mca coll_gpu_timeout 20 $G/test/gpu/test_gpu_mixed mixed $by
    done
  done
  T "comm memory 100 live, 1000 cycles" 200 2 $G/test/gpu/test_gpu_comm_memory 100 1000 8
  echo "-- reliability suite (no MPS)"
  RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 \
    sh test/gpu/run_reliability.sh $G > "$OUT/rel_plain_nb.log" 2>&1
  grep -E "^FAIL" "$OUT/rel_plain_nb.log" | head; tail -1 "$OUT/rel_plain_nb.log"
} 2>&1 | tee "$OUT/direct_nb.log"
