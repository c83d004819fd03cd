#!/bin/sh
# libgpucoll's MPICH stream API under plain MPI_Init on a GPU host (issue 38):
#   test/gpu/mpix_gpu.sh BUILDDIR OUTDIR      (after ". .gpuhost/setup.sh")
# test_mpix_stream and demo/mpix_enqueue_demo at np 2 and 4 with a GPU per
# rank, and np 4 on 2 GPUs (CUDA_VISIBLE_DEVICES=0,1) without and with
# MPS; then the timeout case.  test_gpu_halo (a 2-D halo exchange on
# MPIX_Isend/Irecv_enqueue, 0 B-64 MiB, eager and graph) with cudaMalloc
# buffers must send by CUDA IPC (GPUCOLL_STREAM_VERBOSE's count), with
# cudaMallocAsync ones or GPUCOLL_STREAM_IPC=0 staged, and mixed; the logs
# (OUTDIR/halo_*.log) hold the time of an iteration at each size.
# One PASS/FAIL line per case (stdout and OUTDIR/summary.txt), the logs in
# OUTDIR, a last line "N passed, N failed".  stdbuf keeps rank 0's lines in
# the log when a run is cut off by LIMIT (a pipe buffers them otherwise); a
# run cut off leaves its ranks' stacks (gdb, where there is one) in
# OUTDIR/TAG.stacks.PID.
B=${1:?build dir}
OUT=${2:-/tmp/mpix_gpu}
mkdir -p "$OUT"
: > "$OUT/summary.txt"
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
export LD_LIBRARY_PATH="$B/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
LIMIT=${LIMIT:-180}
S="$B/test/mpi/test_mpix_stream"
D="$B/demo/mpix_enqueue_demo"
pass=0 fail=0
# tag, what a passing log holds (grep -E), command...
run() {
  tag=$1 want=$2; shift 2
  # WANT2: a second pattern the log must hold
  t0=$(date +%s)
  "$@" > "$OUT/$tag.log" 2>&1 &
  pid=$! waited=0
  while kill -0 $pid 2>/dev/null && [ $waited -lt "$LIMIT" ]; do
    sleep 1; waited=$((waited + 1))
  done
  if kill -0 $pid 2>/dev/null; then
    # no answer: every thread's stack of every rank (mpirun's children),
    # which names the call each waits in, then the run goes
    for r in $(pgrep -P $pid); do
      command -v gdb >/dev/null &&
        timeout 60 gdb -p "$r" -batch -ex "thread apply all bt" > "$OUT/$tag.stacks.$r" 2>&1
    done
    kill $pid; sleep 3; kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    rc=124
  else
    wait $pid
    rc=$?
  fi
  tally=$(grep -oE '[0-9]+ passed, [0-9]+ failed' "$OUT/$tag.log" | tail -1)
  if [ $rc -eq 0 ] && grep -qE "$want" "$OUT/$tag.log" &&
     { [ -z "${WANT2:-}" ] || grep -qE "$WANT2" "$OUT/$tag.log"; }; then
    verdict=PASS pass=$((pass + 1))
  else
    verdict=FAIL fail=$((fail + 1))
  fi
  [ $rc -eq 124 ] && tally="no answer in ${LIMIT}s"
  printf '%s %-28s rc=%-3d %4ds %s\n' "$verdict" "$tag" "$rc" $(($(date +%s) - t0)) \
    "${tally:-}" | tee -a "$OUT/summary.txt"
  grep -hE '^FAIL|rank [0-9]+:|waited' "$OUT/$tag.log" | head -10 | sed "s/^/    /"
}
SP='test_mpix_stream: [1-9][0-9]* passed, 0 failed'
DP='graph replays: correct'
SB="stdbuf -oL"
nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tee -a "$OUT/summary.txt"
for np in 2 4; do
  run "stream_np${np}" "$SP" $MPI -np $np $SB "$S"
  run "demo_np${np}" "$DP" $MPI -np $np $SB "$D"
done
H="$B/test/gpu/test_gpu_halo"
HP='test_gpu_halo: [1-9][0-9]* passed, 0 failed'
IPC='rank 0: point-to-point enqueue: [1-9][0-9]* sends by CUDA IPC'
NOIPC='rank 0: point-to-point enqueue: 0 sends by CUDA IPC, [1-9][0-9]* staged'
V="env GPUCOLL_STREAM_VERBOSE=1"
# tag, the second pattern, command...
halo() {
  tag=$1 WANT2=$2; shift 2
  run "$tag" "$HP" "$@"
  WANT2=
}
for np in 2 4; do
  halo "halo_np${np}_malloc" "$IPC" $V $MPI -np $np $SB "$H" malloc
done
halo "halo_np2_async" "$NOIPC" $V $MPI -np 2 $SB "$H" async
halo "halo_np2_malloc_staged" "$NOIPC" $V GPUCOLL_STREAM_IPC=0 $MPI -np 2 $SB "$H" malloc
halo "halo_np4_mixed" 'sends by CUDA IPC' $V $MPI -np 4 $SB "$H" mixed
# test_mpix_p2p: point to point within the node by CUDA IPC; across 2
# virtual nodes the data arrive over coll/gpu's network
P="$B/test/mpi/test_mpix_p2p"
PP='test_mpix_p2p: [1-9][0-9]* passed, 0 failed'
run "p2p_np4" "$PP" $MPI -np 4 $SB "$P"
WANT2='across the nodes moved the data'
run "p2p_np4_vnodes" "$PP" $MPI -np 4 --mca coll_gpu_virtual_nodes 2 $SB "$P" nodes
WANT2=
TWO="env CUDA_VISIBLE_DEVICES=0,1"
# across 2 virtual nodes (plain MPI_Init): libgpucoll's host transport over
# coll/gpu's network (UCX) must carry every stream communicator
VN="--mca coll_gpu_virtual_nodes 2"
NET="rank 0: host transport of a stream communicator: coll/gpu's network"
for np in 2 4; do
  WANT2=$NET run "stream_np${np}_vn2" "$SP" $V $MPI -np $np $VN $SB "$S"
  run "demo_np${np}_vn2" "$DP" $MPI -np $np $VN $SB "$D"
  halo "halo_np${np}_vn2" "$NOIPC" $V $MPI -np $np $VN $SB "$H" malloc
done
run "pairs_np3_vn2" 'test_gpu_pairs: 96 passed, 0 failed' $MPI -np 3 $VN $SB "$B/test/gpu/test_gpu_pairs" 17 enqueue
# datatypes with gaps in every enqueued collective and point to point,
# against Open MPI's host answers: one node (np 2, 4) and 2 virtual nodes
TP='test_mpix_types: [1-9][0-9]* passed, 0 failed'
for np in 2 4; do
  run "types_np${np}" "$TP" $MPI -np $np $SB "$B/test/mpi/test_mpix_types"
done
run "types_np4_vn2" "$TP" $MPI -np 4 $VN $SB "$B/test/mpi/test_mpix_types"
run "stream_np3_vn2_timeout" "MPIX_Allgather_enqueue on .*waited 2 s for rank 1" $MPI -np 3 \
  --mca coll_gpu_timeout 2 $VN $SB "$S" timeout
WANT2=
run "stream_np4_2gpu" "$SP" $TWO $MPI -np 4 -x CUDA_VISIBLE_DEVICES $SB "$S"
run "demo_np4_2gpu" "$DP" $TWO $MPI -np 4 -x CUDA_VISIBLE_DEVICES $SB "$D"
halo "halo_np4_2gpu_malloc" "$IPC" $TWO $V $MPI -np 4 -x CUDA_VISIBLE_DEVICES $SB "$H"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
mkdir -p /tmp/mps /tmp/mpslog && nvidia-cuda-mps-control -d
M="-x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY"
run "stream_np4_2gpu_mps" "$SP" $TWO $MPI -np 4 $M $SB "$S"
run "demo_np4_2gpu_mps" "$DP" $TWO $MPI -np 4 $M $SB "$D"
halo "halo_np4_2gpu_mps_malloc" "$IPC" $TWO $V $MPI -np 4 $M $SB "$H"
WANT2=$NET run "stream_np4_2gpu_mps_vn2" "$SP" $TWO $V $MPI -np 4 $M $VN $SB "$S"
WANT2=
echo quit | nvidia-cuda-mps-control
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
sleep 1
run "stream_np3_timeout" "waited 2 s for rank 1" $MPI -np 3 --mca coll_gpu_timeout 2 $SB "$S" \
  timeout
echo "$pass passed, $fail failed" | tee -a "$OUT/summary.txt"
