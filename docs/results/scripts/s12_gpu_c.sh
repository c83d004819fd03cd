#!/bin/bash
# 4x H100, session 12 c: after 0001abe (a receive's copy event made on the
# application's thread, not on libgpucoll's progress thread): the whole
# mpix_gpu.sh set (test_mpix_types as is at np 2, 4 and across 2 virtual
# nodes among it), bound 60 s a run; test_mpix_types under
# MPI_THREAD_MULTIPLE and 4 ranks on 2 GPUs under MPS; then the fold of 2
# nodes on the device (coll_gpu_net_device_fold 1: test_gpu_allreduce and
# test_gpu_colls at np 2 and 4 across 2 virtual nodes) and test_null_sides'
# alltoallv with a NULL send side on the hierarchy ('hier pairs').
# Logs in $OUT/c.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s12c; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/c.tgz -C /tmp s12c' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
LIMIT=60 timeout 330 sh test/gpu/mpix_gpu.sh $G $L/mpix > $L/mpix.out 2>&1
echo "mpix_gpu.sh: rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^PASS" $L/mpix.out | grep -v "^    gpucoll" | head -30; tail -1 $L/mpix.out
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
T=$G/test/mpi/test_mpix_types
t() { local tag=$1 lim=$2 t1=$(date +%s); shift 2
  timeout $lim "$@" > $L/$tag.log 2>&1
  echo "$tag: rc=$? $(( $(date +%s) - t1 )) s; $(grep -E 'passed, [0-9]+ failed' $L/$tag.log | tail -1)"; }
t types_multiple_np2 40 $M -np 2 $T multiple
(
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
mkdir -p /tmp/mps /tmp/mpslog && nvidia-cuda-mps-control -d
CUDA_VISIBLE_DEVICES=0,1 t types_np4_2gpu_mps 60 $M -np 4 -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY $T
echo quit | nvidia-cuda-mps-control
)
V="--mca coll_gpu_virtual_nodes 2"
for np in 2 4; do
  for p in test_gpu_allreduce test_gpu_colls; do
    [ $(( $(date +%s) - t0 )) -gt 470 ] && { echo "skipped $p np $np: time"; continue; }
    t devfold_${p}_np$np 90 $M -np $np $V --mca coll_gpu_net_device_fold 1 --mca coll_gpu_verbose 1 $G/test/gpu/$p
    grep -m2 -h "device fold\|FAIL" $L/devfold_${p}_np$np.log | cut -c1-200
  done
done
tf=$L/tnull; mkdir -p $tf
t null_sides_np4_vn2 60 $M -np 4 $V --mca coll_gpu_timing_file $tf/t $G/test/mpi/test_null_sides
echo "alltoallv records labelled 'hier pairs': $(cat $tf/t.* 2>/dev/null | grep -c '"coll":"alltoallv","algo":"hier pairs')"
cat $tf/t.* 2>/dev/null | grep -o '"coll":"alltoall[vw]*","algo":"[^"]*"' | sort | uniq -c | head
