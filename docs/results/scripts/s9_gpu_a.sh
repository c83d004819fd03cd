#!/bin/bash
# Session 9, 4x H100, run A: (1) nonblocking/persistent gather(v), scatter(v), allgatherv,
# alltoall(v,w), reduce_scatter, (ex)scan on the hierarchy's thread across 2 and 4 virtual
# nodes (test_hier_nbv) and the five of before (test_hier_nb); (2) libgpucoll after the
# bounce's fixes: test_gpu_halo np 2 (its 16 MiB eager run stalled in s8), np 4,
# test_mpix_p2p / test_mpix_stream np 4, and 4 ranks on 2 GPUs with and without MPS.
#   bash docs/results/scripts/s9_gpu_a.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH -x GPUCOLL_STREAM_VERBOSE -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY"
mkdir -p $OUT
T0=$(date +%s)
# run LOG LIMIT cmd...: the command under a limit; a run still there after LIMIT-5 s leaves
# where each thread of the test's processes waits (LOG.stacks)
run() {
  local log=$1 lim=$2; shift 2
  if [ $(( $(date +%s) - T0 + lim )) -gt 570 ]; then echo "(skipped: the call's 600 s)" > $OUT/$log; return 99; fi
  timeout $lim "$@" > $OUT/$log 2>&1 &
  local pid=$! t=0
  while kill -0 $pid 2>/dev/null && [ $t -lt $((lim - 5)) ]; do sleep 1; t=$((t + 1)); done
  if kill -0 $pid 2>/dev/null; then
    for p in $(pgrep -f "$G/test/"); do
      echo "== pid $p $(tr '\0' ' ' < /proc/$p/cmdline | cut -c1-80)"
      for t in /proc/$p/task/*; do echo "$(basename $t) $(cat $t/comm) $(cat $t/wchan)"; done
    done > $OUT/$log.stacks 2>&1
  fi
  wait $pid; return $?
}
sum() {
  echo "$(grep -oE '[0-9]+ passed, [0-9]+ failed' $1 | tail -1); $(grep -c 'already mapped\|invalid argument' $1) mapping errors; $(grep -c 'comes through host memory' $1) through host memory"
}
{
export CUDA_VISIBLE_DEVICES=0,1,2,3
for nv in 2 4; do
  run nbv_vn$nv.log 120 $M -np 4 --mca coll_gpu_virtual_nodes $nv --mca coll_gpu_verbose 10 $G/test/mpi/test_hier_nbv
  rc=$?; miss=""
  for c in gather gatherv scatter scatterv allgatherv alltoall alltoallv alltoallw reduce_scatter scan exscan; do
    grep -q "nonblocking $c ran on the hierarchy's thread (hier .*): success" $OUT/nbv_vn$nv.log || miss="$miss $c"
  done
  echo "test_hier_nbv np 4, $nv virtual nodes: rc=$rc $(grep -oE '^[0-9]+ passed, [0-9]+ failed' $OUT/nbv_vn$nv.log); thread runs: $(grep -c "ran on the hierarchy's thread" $OUT/nbv_vn$nv.log); not on the thread:${miss:- none}"
done
run nb_vn2.log 120 $M -np 4 --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_verbose 10 $G/test/mpi/test_hier_nb
echo "test_hier_nb np 4, 2 virtual nodes: rc=$? $(grep -oE '^[0-9]+ passed, [0-9]+ failed' $OUT/nb_vn2.log); thread runs: $(grep -c "ran on the hierarchy's thread" $OUT/nb_vn2.log)"
echo "[$(( $(date +%s) - T0 )) s]"
export GPUCOLL_STREAM_VERBOSE=1
for np in 2 4; do
  if [ $np = 2 ]; then export CUDA_VISIBLE_DEVICES=0,1; else export CUDA_VISIBLE_DEVICES=0,1,2,3; fi
  run halo_np$np.log 100 $M --mca coll_gpu_timeout 8 -np $np stdbuf -oL $G/test/gpu/test_gpu_halo malloc
  echo "test_gpu_halo malloc np $np: rc=$? $(sum $OUT/halo_np$np.log); $(grep -E '16777216 B|67108864 B' $OUT/halo_np$np.log | tr -s ' ' | tr '\n' ';' | cut -c1-300)"
done
for t in p2p stream; do
  run ${t}_np4.log 60 $M -np 4 stdbuf -oL $G/test/mpi/test_mpix_$t
  echo "test_mpix_$t np 4: rc=$? $(sum $OUT/${t}_np4.log)"
done
echo "[$(( $(date +%s) - T0 )) s]"
export CUDA_VISIBLE_DEVICES=0,1
for mps in 0 1; do
  if [ $mps = 1 ]; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
    mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d
  fi
  run halo_shared_mps$mps.log 100 $M --mca coll_gpu_timeout 8 -np 4 stdbuf -oL $G/test/gpu/test_gpu_halo malloc
  echo "test_gpu_halo malloc np 4 on 2 GPUs, MPS $mps: rc=$? $(sum $OUT/halo_shared_mps$mps.log)"
  run p2p_shared_mps$mps.log 60 $M -np 4 stdbuf -oL $G/test/mpi/test_mpix_p2p
  echo "test_mpix_p2p np 4 on 2 GPUs, MPS $mps: rc=$? $(sum $OUT/p2p_shared_mps$mps.log)"
  if [ $mps = 1 ]; then echo quit | nvidia-cuda-mps-control; unset CUDA_MPS_PIPE_DIRECTORY; fi
done
echo "[$(( $(date +%s) - T0 )) s]"
} 2>&1 | tee $OUT/summary.txt
(cd $OUT && tar czf logs.tgz *.log *.stacks 2>/dev/null; rm -f *.log *.stacks)
