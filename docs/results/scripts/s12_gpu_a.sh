#!/bin/bash
# 4x H100, session 12 a: does the progress thread's early CUDA work
# (gc_prog_warm, c9ec7a2) remove the stall of s11 at the first receive the
# thread copies?  The whole mpix_gpu.sh set (test_mpix_types np 2, 4 and
# across 2 virtual nodes among it), bound 60 s a run; test_mpix_types
# point to point under MPI_THREAD_MULTIPLE and 4 ranks on 2 GPUs under MPS;
# then the hierarchy's GPU suite (run_gpu_tests.sh ONLY_HIER=1: the device
# fold of 2 nodes, test_null_sides' 'hier pairs' across 2 virtual nodes).
# Logs in $OUT/a.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s12a; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/a.tgz -C /tmp s12a' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
LIMIT=60 timeout 330 sh test/gpu/mpix_gpu.sh $G $L/mpix > $L/mpix.out 2>&1
echo "mpix_gpu.sh: rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^PASS" $L/mpix.out | head -30; tail -1 $L/mpix.out
(
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
T=$G/test/mpi/test_mpix_types
t() { local tag=$1 lim=$2 t1=$(date +%s); shift 2
  timeout $lim "$@" > $L/$tag.log 2>&1
  echo "$tag: rc=$? $(( $(date +%s) - t1 )) s; $(grep -E 'passed, [0-9]+ failed' $L/$tag.log | tail -1)"; }
t types_multiple_np2 40 $M -np 2 -x GPUCOLL_STREAM_VERBOSE=1 $T multiple
grep -h "warm" $L/types_multiple_np2.log | head -2
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
mkdir -p /tmp/mps /tmp/mpslog && nvidia-cuda-mps-control -d
CUDA_VISIBLE_DEVICES=0,1 t types_np4_2gpu_mps 60 $M -np 4 -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY $T
echo quit | nvidia-cuda-mps-control
)
t1=$(date +%s)
ONLY_HIER=1 timeout $(( 560 - (t1 - t0) )) sh test/run_gpu_tests.sh $G > $L/hier.out 2>&1
echo "run_gpu_tests ONLY_HIER: rc=$? $(( $(date +%s) - t1 )) s"; grep -E "^(==|FAIL|PASS)|passed, [0-9]+ failed" $L/hier.out | grep -v "^PASS" | cut -c1-200 | tail -40
