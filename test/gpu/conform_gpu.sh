#!/bin/sh
# The conformance tests (test/conform) on a GPU host, every rank count the
# collectives issue asks for, and the device suites the routing must keep:
#   test/gpu/conform_gpu.sh BUILDDIR OUTDIR      (after ". .gpuhost/setup.sh")
# 2 GPUs (CUDA_VISIBLE_DEVICES=0,1): np 1-4, np 3 and 4 also under MPS;
# all GPUs: np 4 (full, not --quick) and np 8; the put path forced.  One line per run in
# OUTDIR/summary.txt, every FAIL/HANG line in OUTDIR/failures.txt, the
# logs in OUTDIR/logs.tgz.
B=${1:?build dir}
OUT=${2:-/tmp/conform}
mkdir -p "$OUT"
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --bind-to none --oversubscribe"
LIMIT=${LIMIT:-150}
run() { # tag, command...
  tag=$1; shift
  t0=$(date +%s)
  timeout "$LIMIT" "$@" > "$OUT/$tag.log" 2>&1
  rc=$?
  res=$(grep -oE '[0-9]+ passed, [0-9]+ failed' "$OUT/$tag.log" | tail -1)
  grep -hE '^(FAIL|conform: rank)' "$OUT/$tag.log" | sed "s/^/$tag: /" | head -20 >> "$OUT/failures.txt"
  printf '%-22s %-26s rc=%-3d %4ds\n' "$tag" "${res:-no tally}" "$rc" $(($(date +%s) - t0)) |
    tee -a "$OUT/summary.txt"
}
mps_on() {
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog && nvidia-cuda-mps-control -d
}
mps_off() {
  echo quit | nvidia-cuda-mps-control
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  sleep 1
}
C="$B/test/conform/test_conform"
N="$B/test/conform/test_conform_nbr"
nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tee "$OUT/summary.txt"
TWO="env CUDA_VISIBLE_DEVICES=0,1"
for np in 2 4 1 3; do
  run "2gpu_np${np}_intra" $TWO $MPI -np $np -x CUDA_VISIBLE_DEVICES "$C" --quick
  run "2gpu_np${np}_nbr" $TWO $MPI -np $np -x CUDA_VISIBLE_DEVICES "$N" --quick
done
run "4gpu_np4_intra_full" $MPI -np 4 "$C"
run "4gpu_np4_nbr_full" $MPI -np 4 "$N"
run "4gpu_np8_intra" $MPI -np 8 "$C" --quick
run "4gpu_np8_nbr" $MPI -np 8 "$N" --quick
run "4gpu_np4_colls" $MPI -np 4 "$B/test/gpu/test_gpu_colls" --quick
run "2gpu_np2_mixed" $TWO $MPI -np 2 -x CUDA_VISIBLE_DEVICES "$B/test/gpu/test_gpu_mixed"
run "2gpu_np2_reuse" $TWO $MPI -np 2 -x CUDA_VISIBLE_DEVICES "$B/test/conform/test_conform_reuse"
# the put path (engine/gpu_engine_put.c) forced on every plan whose size every rank knows
# (the resident kernel, which comes first, off), written and read
run "2gpu_np2_put" $TWO $MPI -np 2 -x CUDA_VISIBLE_DEVICES --mca coll_gpu_put_min 1 --mca coll_gpu_persist 0 "$C" --quick
run "2gpu_np2_put_read" $TWO $MPI -np 2 -x CUDA_VISIBLE_DEVICES --mca coll_gpu_put_min 1 --mca coll_gpu_persist 0 --mca coll_gpu_put_read 1 "$C" --quick
run "2gpu_np2_put_mixed" $TWO $MPI -np 2 -x CUDA_VISIBLE_DEVICES --mca coll_gpu_put_min 1 --mca coll_gpu_persist 0 "$B/test/gpu/test_gpu_mixed"
run "4gpu_np4_nbr_put" $MPI -np 4 --mca coll_gpu_put_min 1 --mca coll_gpu_persist 0 "$N"
# a bcast among 3 or more ranks is spread over them (kernels/gpu_put.h): every size, 3 and 4 ranks
run "4gpu_np3_put" $MPI -np 3 --mca coll_gpu_put_min 1 --mca coll_gpu_persist 0 "$C" --quick
run "4gpu_np4_put" $MPI -np 4 --mca coll_gpu_put_min 1 --mca coll_gpu_persist 0 "$C" --quick
# a reduction's fold in a grid of its own (coll_gpu_put_fold_nblocks) beside copies in
# coll_gpu_xchg_nblocks blocks: the put kernels' completion tickets count each call's grid
F32="--mca coll_gpu_put_min 1 --mca coll_gpu_persist 0 --mca coll_gpu_put_fold_nblocks 32"
run "2gpu_np2_put_fold32" $TWO $MPI -np 2 -x CUDA_VISIBLE_DEVICES $F32 "$C" --quick
run "4gpu_np3_put_fold32" $MPI -np 3 $F32 "$C" --quick
run "4gpu_np4_put_fold32" $MPI -np 4 $F32 "$C" --quick
run "2gpu_np2_timeout" $TWO $MPI -np 2 -x CUDA_VISIBLE_DEVICES --mca coll_gpu_timeout 2 "$B/test/conform/test_conform_timeout"
[ -x "$B/test/bench/gpucoll_bench" ] && $MPI -np 4 "$B/test/bench/gpucoll_bench" -c allreduce -e 1048576 > "$OUT/bench_allreduce_4gpu.txt" 2>&1
mps_on
for np in 3 4; do
  run "2gpu_np${np}_intra_mps" $TWO $MPI -np $np -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY "$C" --quick
  run "2gpu_np${np}_nbr_mps" $TWO $MPI -np $np -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY "$N" --quick
done
mps_off
# what comes back from a lent machine is a handful of files: the logs in one
(cd "$OUT" && tar czf logs.tgz *.log && rm -f *.log)
cat "$OUT/summary.txt"
