#!/bin/bash
# The review commits of stop 29 (6bb0ebf, e2e3ff8: IPC cache free checks,
# growth parking the resident kernel, one allocation per nonblocking rank-0
# call) on a GPU: test_gpu_direct, the communicator memory test and the
# reliability suite.  WHERE=x2: a GPU per rank (2 GPUs); plain: ranks
# sharing GPU 0 without MPS; mps: sharing GPU 0 under MPS (defaults).
# GPU host: . .gpuhost/setup.sh && WHERE=plain bash docs/results/scripts/review_gpu.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gcarry}; WHERE=${WHERE:-plain}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
X=""
case $WHERE in
  plain) export CUDA_VISIBLE_DEVICES=0 ;;
  mps) export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
       mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1; X="-x CUDA_MPS_PIPE_DIRECTORY" ;;
esac
M="mpirun --oversubscribe --bind-to none $X"
T() { # label, seconds, np, command...
  l=$1; s=$2; np=$3; shift 3; t0=$(date +%s.%N)
  o=$(timeout $s $M -np $np "$@" 2>&1); rc=$?
  printf '%-36s rc %3d %6.1f s  %s\n' "$l" $rc "$(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{print b-a}')" \
    "$(echo "$o" | grep 'passed,' | tail -1)"
  echo "$o" | grep -E "^FAIL|MiB more|rror" | head -8
}
{
  echo "== $WHERE: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-all}"
  if [ $WHERE != x2 ]; then
    T "test_gpu_direct np 2" 120 2 $G/test/gpu/test_gpu_direct
    T "test_gpu_direct np 4" 150 4 $G/test/gpu/test_gpu_direct 200
  fi
  T "comm memory 100 live, 1000 cycles" 200 2 $G/test/gpu/test_gpu_comm_memory 100 1000 8
  [ $WHERE = mps ] && for np in 2 4; do T "test_gpu_enqueue np $np" 150 $np $G/test/gpu/test_gpu_enqueue; done
  NP="2 4"; [ $WHERE = x2 ] && NP=2
  RELIABILITY_NP="$NP" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 \
    sh test/gpu/run_reliability.sh $G $X > "$OUT/rel_$WHERE.log" 2>&1
  echo "reliability suite ($WHERE, np $NP, 8 B and 256 KiB):"
  grep -E "^FAIL" "$OUT/rel_$WHERE.log" | head; tail -1 "$OUT/rel_$WHERE.log"
} 2>&1 | tee "$OUT/review_$WHERE.log"
[ $WHERE = mps ] && { echo quit | nvidia-cuda-mps-control; sleep 1; }
exit 0
