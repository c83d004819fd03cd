#!/bin/bash
# The kind check moved off the fast path (issue 21): a blocking device
# allreduce/allgather/alltoall/reduce_scatter_block starts in the resident
# kernel before the peers' kinds are read and is dropped when one went
# host.  Runs test_gpu_mixed (with its late-host-rank rows) and the
# reliability suite, and the device fast path before/after alternating
# (OLD: build of c876f37, NEW: this one), 8 B - 4 KiB.
#   WHERE=x2: a GPU per rank (2 GPUs); mps: 2 and 4 ranks share GPU 0 under
#   MPS; plain: they share it without MPS; ab: 2 GPUs, only the before/after
#   figures, 6 rounds, and the host-buffer 8 B allreduce (new, old, no coll/gpu).
# GPU host: . .gpuhost/setup.sh && WHERE=x2 bash docs/results/scripts/kind_guess_gpu.sh $OUT
set -u
OUT=$1; NEW=${NEW:-$(pwd)/gnew}; OLD=${OLD:-$(pwd)/gcarry}; WHERE=${WHERE:-x2}
base=$OMPI_MCA_mca_base_component_path
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
X=""
case $WHERE in
  plain) export CUDA_VISIBLE_DEVICES=0 ;;
  mps) export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
       mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1; X="-x CUDA_MPS_PIPE_DIRECTORY" ;;
esac
NP="2 4"; [ $WHERE = x2 ] && NP=2
M="mpirun --oversubscribe --bind-to none $X"
ab_rounds() { # round numbers: the device allreduce, old then new build
  for round in "$@"; do
    for v in old new; do
      [ $v = old ] && d=$OLD || d=$NEW
      echo "-- $v round $round"
      OMPI_MCA_mca_base_component_path=$base:$d/.libs timeout 60 $M -np 2 \
        "$d/test/bench/gpucoll_bench" -c allreduce -b 8 -e 4096 -r 3 --no-nccl 2>&1 | grep -v "^#"
    done
  done
}
if [ $WHERE = ab ]; then
  {
    echo "== device allreduce on 2 GPUs, old (c876f37) and new alternating, np 2 (us)"
    ab_rounds 1 2 3 4 5 6
    echo "== host-buffer allreduce 8 B, 2 ranks: new, old, no coll/gpu (medians of 7 x 50000)"
    for round in 1 2 3; do
      for sel in new old none; do
        case $sel in new) p=$base:$NEW/.libs; x="";; old) p=$base:$OLD/.libs; x="";; none) p=$base; x="--mca coll ^gpu";; esac
        echo "-- round $round $sel: $(OMPI_MCA_mca_base_component_path=$p timeout 60 $M -np 2 $x \
          "$NEW/test/bench/host_allreduce_lat" -s 8 -n 50000 -r 7 2>&1 | tail -1)"
      done
    done
  } 2>&1 | tee "$OUT/kind_guess_ab.log"
  exit 0
fi
{
  echo "== $WHERE: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-all}"
  for np in $NP; do
    for by in 8 262144; do
      echo "-- test_gpu_mixed np $np $by B (calls dropped for a host peer, per rank):"
      OMPI_MCA_mca_base_component_path=$base:$NEW/.libs timeout 200 $M -np $np \
        --mca coll_gpu_verbose 10 --mca coll_gpu_timeout 4 $NEW/test/gpu/test_gpu_mixed $by 2>&1 |
        grep -E "^FAIL|passed,|persistent engine ran [0-9]+ calls \([1-9]" | sed 's/ with .*launches.*//' | sort | uniq -c | head -12
    done
  done
  if [ $WHERE != plain ]; then
    echo "== device allreduce, old (c876f37) and new alternating, np 2 (us)"
    ab_rounds 1 2 3
  fi
  OMPI_MCA_mca_base_component_path=$base RELIABILITY_NP="$NP" RELIABILITY_SIZES="8 262144" \
    RELIABILITY_WATCHDOG=60 timeout 330 sh test/gpu/run_reliability.sh $NEW $X > "$OUT/rel_$WHERE.log" 2>&1
  echo "reliability suite ($WHERE, np $NP, 8 B and 256 KiB):"
  grep -E "^FAIL" "$OUT/rel_$WHERE.log" | head; tail -1 "$OUT/rel_$WHERE.log"
} 2>&1 | tee "$OUT/kind_guess_$WHERE.log"
[ $WHERE = mps ] && { echo quit | nvidia-cuda-mps-control; sleep 1; }
exit 0
