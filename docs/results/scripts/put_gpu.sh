#!/bin/bash
# 4 (or 2) GPUs: the put path (engine/gpu_engine_put.c) forced on every copy plan
# (coll_gpu_put_min 1) through the conformance tests, then the collectives
# it takes from 8 KiB to 64 MiB with the default threshold (1 MiB pairs)
# against the exchange kernel alone (coll_gpu_put_min 0), NCCL beside.
#   bash docs/results/scripts/put_gpu.sh OUT [conform|bench|all]
OUT=${1:?out}; WHAT=${2:-all}
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
TWO="env CUDA_VISIBLE_DEVICES=0,1"
mkdir -p $OUT/logs
run() { # tag, limit, command...
  tag=$1 lim=$2; shift 2
  t0=$(date +%s)
  timeout $lim "$@" > $OUT/logs/$tag.log 2>&1
  rc=$?
  res=$(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/logs/$tag.log | tail -1)
  grep -hE '^(FAIL|conform: rank)' $OUT/logs/$tag.log | sed "s/^/$tag: /" | head -20 >> $OUT/failures.txt
  printf '%-26s %-26s rc=%-3d %4ds\n' "$tag" "${res:-no tally}" $rc $(($(date +%s) - t0)) | tee -a $OUT/summary.txt
}
P="--mca coll_gpu_put_min 1 --mca coll_gpu_persist 0"
NG=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
NP=${NP:-$NG}
if [ "$WHAT" != bench ]; then
  nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tee -a $OUT/summary.txt
  if [ $NG -ge 4 ]; then
  run put1_4gpu_np4_nbr_full 150 $M -np 4 $P gpurun/test/conform/test_conform_nbr
  run put1_4gpu_np4_intra 150 $M -np 4 $P gpurun/test/conform/test_conform --quick
  run put1_4gpu_np4_colls 120 $M -np 4 $P gpurun/test/gpu/test_gpu_colls --quick
  run put1r_4gpu_np4_nbr_full 150 $M -np 4 $P --mca coll_gpu_put_read 1 gpurun/test/conform/test_conform_nbr
  fi
  run put1_2gpu_np2_intra 120 $TWO $M -np 2 -x CUDA_VISIBLE_DEVICES $P gpurun/test/conform/test_conform --quick
  run put1_2gpu_np2_nbr 120 $TWO $M -np 2 -x CUDA_VISIBLE_DEVICES $P gpurun/test/conform/test_conform_nbr --quick
  run put1_2gpu_np2_reuse 120 $TWO $M -np 2 -x CUDA_VISIBLE_DEVICES $P gpurun/test/conform/test_conform_reuse
  run put1_2gpu_np2_colls 120 $TWO $M -np 2 -x CUDA_VISIBLE_DEVICES $P gpurun/test/gpu/test_gpu_colls --quick
  run put1_2gpu_np2_mixed 120 $TWO $M -np 2 -x CUDA_VISIBLE_DEVICES $P gpurun/test/gpu/test_gpu_mixed
  R="$P --mca coll_gpu_put_read 1"
  run put1r_2gpu_np2_intra 120 $TWO $M -np 2 -x CUDA_VISIBLE_DEVICES $R gpurun/test/conform/test_conform --quick
  run put1r_2gpu_np2_colls 120 $TWO $M -np 2 -x CUDA_VISIBLE_DEVICES $R gpurun/test/gpu/test_gpu_colls --quick
  # the path is taken: one line per call at verbose 20
  $TWO $M -np 2 -x CUDA_VISIBLE_DEVICES $P --mca coll_gpu_verbose 20 gpurun/test/conform/test_conform --quick > $OUT/logs/verbose_conform.log 2>&1
  echo "test_conform np 2 forced: $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/logs/verbose_conform.log | tail -1); calls through the put path: $(grep -c ': put (' $OUT/logs/verbose_conform.log) ($(grep ': put (' $OUT/logs/verbose_conform.log | grep -oE 'rank [0-9]+: [a-z_]+' | awk '{print $3}' | sort | uniq -c | tr '\n' ' '))" | tee -a $OUT/summary.txt
  $TWO $M -np 2 -x CUDA_VISIBLE_DEVICES $P --mca coll_gpu_verbose 20 gpurun/test/bench/gpucoll_bench \
    -c alltoall -b 16777216 -e 16777216 -n 2 -r 1 --no-nccl > $OUT/logs/verbose.log 2>&1
  echo "put calls logged at verbose 20: $(grep -c ': put (write)' $OUT/logs/verbose.log)" | tee -a $OUT/summary.txt
  $TWO $M -np 2 -x CUDA_VISIBLE_DEVICES $P --mca coll_gpu_verbose 20 gpurun/test/bench/gpucoll_bench \
    -c reduce -b 16777216 -e 16777216 -n 2 -r 1 --no-nccl > $OUT/logs/verbose_reduce.log 2>&1
  echo "reduce put calls logged at verbose 20: $(grep -c ': put (read), 0 segments, 2 sources' $OUT/logs/verbose_reduce.log)" | tee -a $OUT/summary.txt
  # ranks sharing a GPU under MPS run the launched kernels: np 3 and 4 take
  # the put path's spread bcast there
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog && nvidia-cuda-mps-control -d
  for np in 3 4; do
    run put1_2gpu_np${np}_intra_mps 150 $TWO $M -np $np -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY $P gpurun/test/conform/test_conform --quick
    run put1_2gpu_np${np}_nbr_mps 150 $TWO $M -np $np -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY $P gpurun/test/conform/test_conform_nbr --quick
  done
  $TWO $M -np 4 -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY $P --mca coll_gpu_verbose 20 gpurun/test/bench/gpucoll_bench \
    -c bcast -b 16777216 -e 16777216 -n 2 -r 1 --no-nccl > $OUT/logs/verbose_spread.log 2>&1
  echo "spread bcast calls logged at verbose 20 (np 4, MPS): $(grep -c 'spread, ' $OUT/logs/verbose_spread.log)" | tee -a $OUT/summary.txt
  echo quit | nvidia-cuda-mps-control; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; sleep 1
  if [ $NG -ge 4 ]; then
    run put1_4gpu_np3_intra 120 $M -np 3 $P gpurun/test/conform/test_conform --quick
    run put1_4gpu_np8_nbr 150 $M -np 8 $P gpurun/test/conform/test_conform_nbr --quick
  fi
fi
if [ "$WHAT" != conform ]; then
  B="gpurun/test/bench/gpucoll_bench -b 8192 -e 67108864"
  for c in ${COLLS:-neighbor_alltoall alltoall allgather bcast gather scatter}; do
    IFS=';' read -ra CF <<< "${CFGS:-;--mca coll_gpu_put_min 0}"
    for cfg in "${CF[@]}"; do
      echo "== $c ${cfg:-default (put from 1 MiB pairs)}" >> $OUT/bench.txt
      timeout 100 $M -np $NP $cfg $B -c $c >> $OUT/bench.txt 2>&1
    done
  done
fi
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
cat $OUT/summary.txt 2>/dev/null; grep -A40 "== neighbor" $OUT/bench.txt 2>/dev/null | head -60
