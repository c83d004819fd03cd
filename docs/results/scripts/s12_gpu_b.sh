#!/bin/bash
# 4x H100, session 12 b: why test_mpix_types stops at the first receive
# libgpucoll's progress thread copies (a/).  The test reads each answer by
# a copy into pageable memory queued on the stream right after the call
# (its calling thread then waits inside CUDA); the tests that pass
# synchronize first.  test_mpix_types p2p at np 2 with CUDA IPC and
# without, each as is and with "sync" (the stream synchronized before
# that copy), GPUCOLL_STREAM_VERBOSE=3 (the progress thread's CUDA calls,
# entered and left); then the staged pipeline with the host fold and the
# fold on the device, 2 GPUs as 2 virtual nodes (test/bench/stage_bench.sh).
# Logs in $OUT/b.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s12b; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/b.tgz -C /tmp s12b' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
(
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH -x GPUCOLL_STREAM_VERBOSE -x GPUCOLL_STREAM_IPC"
T=$G/test/mpi/test_mpix_types
t() { local tag=$1 lim=$2 t1=$(date +%s); shift 2
  timeout $lim "$@" > $L/$tag.log 2>&1
  echo "$tag: rc=$? $(( $(date +%s) - t1 )) s; $(grep -c ^PASS $L/$tag.log) PASS; $(grep -E 'passed, [0-9]+ failed' $L/$tag.log | tail -1)"
  grep "progress thread" $L/$tag.log | tail -4 | sed 's/^/    /'; }
export GPUCOLL_STREAM_VERBOSE=3
GPUCOLL_STREAM_IPC=1 t ipc_asis 25 $M -np 2 stdbuf -oL $T p2p
GPUCOLL_STREAM_IPC=1 t ipc_sync 25 $M -np 2 stdbuf -oL $T p2p sync
GPUCOLL_STREAM_IPC=0 t noipc_asis 25 $M -np 2 stdbuf -oL $T p2p
GPUCOLL_STREAM_IPC=0 t noipc_sync 25 $M -np 2 stdbuf -oL $T p2p sync
unset GPUCOLL_STREAM_VERBOSE
GPUCOLL_STREAM_IPC=1 t whole_sync_np4 60 $M -np 4 stdbuf -oL $T sync
)
echo "diagnosis: $(( $(date +%s) - t0 )) s"
timeout $(( 540 - ($(date +%s) - t0) )) bash test/bench/stage_bench.sh $G $L/sb 2 2 > $L/sb.out 2>&1
echo "stage_bench: rc=$?"; cat $L/sb.out
