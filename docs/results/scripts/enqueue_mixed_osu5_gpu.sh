#!/bin/bash
# One device call on one GPU, 2 and 4 ranks sharing it, without and under MPS:
#  0. Open MPI 4.1.4 (gslim): the stream extension (test_gpu_enqueue np 2 and
#     4, its timeout mode, the MPICH-style demo with its graph-replay time);
#     under MPS small enqueued allreduces now run as one kernel on the stream
#     (verbose 1 says so), without MPS they keep the host-function path;
#  1. Open MPI 4.1.4 (gslim): test_gpu_mixed, which now also runs persistent
#     requests with mixed memory kinds and host nonblocking neighborhood
#     collectives behind a queued mixed-kind call (8 B and 256 KiB, np 2, 4);
#  2. Open MPI 5.0.9 (build5): OSU osu_allreduce and osu_bcast -d cuda -c
#     (unmodified OMB benchmarks built against 5.0.9) and test_gpu_mixed np 2;
#  3. Open MPI 4.1.4: the reliability suite (np 2 and 4, 8 B and 256 KiB).
# At most 8 files come back: every step appends to one log per part.
# Build machine (repo root), see docs/results/README.md for the commands.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/enqueue_mixed_osu5_gpu.sh $OUT
set -u
OUT=$1
G=$(pwd)/gslim B5=$(pwd)/build5
BASE41=$OMPI_MCA_mca_base_component_path
mps_on() { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog;
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; unset CUDA_MPS_PIPE_DIRECTORY; }
X() { [ "$1" = mps ] && echo "-x CUDA_MPS_PIPE_DIRECTORY"; }
S="$OUT/summary.log"
mixed() { # label, build, log, nps, sizes, extra args
  for np in $4; do
    for by in $5; do
      t0=$(date +%s.%N)
      log=$(timeout 100 mpirun --oversubscribe --bind-to none -np $np --mca coll_gpu_timeout 20 $6 \
        "$2/test/gpu/test_gpu_mixed" mixed $by 2>&1); rc=$?
      t1=$(date +%s.%N)
      { echo "=== $1 np $np $by B rc $rc"; echo "$log"; } >> "$3"
      printf '%-14s np %d %7s B: rc %3d %6.1f s  %s\n' "$1" $np $by $rc \
        "$(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')" "$(echo "$log" | grep 'passed,' | tail -1)"
      echo "$log" | grep -E "^FAIL|rror" | head -5
    done
  done
}
enq() { # mode; a failing first run skips the rest of the mode (each hang costs a timeout)
  R="mpirun --oversubscribe --bind-to none -np 2 $(X $1)"
  for np in 2 4; do
    r=$(timeout 45 mpirun --oversubscribe --bind-to none -np $np $(X $1) --mca coll_gpu_timeout 10 \
      "$G/test/gpu/test_gpu_enqueue" 2>&1 | tee -a "$OUT/enqueue.log" | grep -E "passed|FAIL" | tr '\n' ' ')
    echo "-- $1 test_gpu_enqueue np $np: $r"
    case "$r" in *" 0 failed"*) ;; *) echo "-- $1: stopped here"; return ;; esac
  done
  echo "-- $1 timeout: $(GPUCOLL_TEST_ENQUEUE=timeout timeout 40 $R --mca coll_gpu_timeout 3 \
    "$G/test/gpu/test_gpu_enqueue" 2>&1 | tee -a "$OUT/enqueue.log" | grep -E "timeout:|passed|FAIL" | tr '\n' ' ')"
  echo "-- $1 demo (verbose 1): $(timeout 40 $R --mca coll_gpu_timeout 10 --mca coll_gpu_verbose 1 "$G/demo/mpix_enqueue_demo" 2>&1 | \
    tee -a "$OUT/enqueue.log" | grep -E "stream-ordered allreduce kernel|MPIX stream demo|graph replay" | sed 's/^.*coll_gpu//' | sort | uniq -c | tr '\n' ' ')"
  for r in 1 2; do
    echo "-- $1 demo run $r: $(timeout 40 $R --mca coll_gpu_timeout 10 "$G/demo/mpix_enqueue_demo" 2>&1 | tail -1)"
  done
}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo quit | nvidia-cuda-mps-control > /dev/null 2>&1; sleep 1
  export OMPI_MCA_mca_base_component_path=$BASE41:$G/.libs
  export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
  # 0. the stream extension
  mps_on
  enq mps
  mps_off
  enq plain
  # 1. Open MPI 4.1.4
  for mode in plain mps; do
    [ $mode = mps ] && mps_on
    mixed "4.1 $mode" "$G" "$OUT/mixed41.log" "2 4" "8 262144" "$(X $mode)"
    [ $mode = mps ] && mps_off
  done
  # 2. Open MPI 5.0.9 (carried install; Debian's hwloc, libevent and UCX
  # come from .gpuhost)
  (
    [ -x /opt/ompi5/bin/mpirun ] || tar -C /opt -xJf .ompi5/openmpi-5.0.9-debian12.tar.xz
    unset PMIX_MCA_mca_base_component_path PMIX_MCA_pcompress OMPI_MCA_btl_vader_single_copy_mechanism
    export OPAL_PREFIX=/opt/ompi5 PATH=/opt/ompi5/bin:$PATH
    export LD_LIBRARY_PATH=/opt/ompi5/lib:$LD_LIBRARY_PATH
    export OMPI_MCA_mca_base_component_path=/opt/ompi5/lib/openmpi:$B5/.libs
    mpirun --version | head -1
    for mode in plain mps; do
      [ $mode = mps ] && mps_on
      for b in osu_allreduce osu_bcast; do
        t0=$(date +%s)
        log=$(timeout 90 mpirun --oversubscribe --bind-to none -np 2 --mca coll_gpu_timeout 20 $(X $mode) \
          "$B5/osu/$b" -d cuda -c -m 1:1048576 -i 100 -x 10 2>&1); rc=$?
        { echo "=== 5.0.9 $mode $b -d cuda -c -m 1:1048576 -i 100 -x 10: rc $rc"; echo "$log"; } >> "$OUT/osu50.log"
        printf '5.0.9 %-5s %-14s rc %3d %4d s  %2d sizes Pass, %d Fail\n' $mode $b $rc $(( $(date +%s) - t0 )) \
          "$(echo "$log" | grep -c -E '^[0-9]+ .*Pass$')" "$(echo "$log" | grep -c -E 'Fail$')"
      done
      mixed "5.0.9 $mode" "$B5" "$OUT/mixed50.log" "2" "8" "$(X $mode)"
      [ $mode = mps ] && mps_off
    done
  )
  # 3. the reliability suite on 4.1.4
  for mode in plain mps; do
    [ $mode = mps ] && mps_on
    echo "== reliability suite 4.1 $mode: $(RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 \
      timeout 150 sh test/gpu/run_reliability.sh "$G" $(X $mode) > "$OUT/rel_$mode.log" 2>&1; tail -1 "$OUT/rel_$mode.log")"
    grep -E "^FAIL" "$OUT/rel_$mode.log" | head -12
    [ $mode = mps ] && mps_off
  done
} 2>&1 | tee "$S"
