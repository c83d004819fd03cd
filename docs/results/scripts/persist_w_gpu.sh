#!/bin/bash
# Persistent alltoallw and neighbor alltoallw (issue 21): coll/gpu's own
# requests where ranks may mix memory kinds or buffers are device memory.
# test_gpu_persistent (device alltoallw_init, its type freed after init)
# and test_gpu_mixed (both created and started behind a queued mixed-kind
# iallreduce), with this build (NEW) and the component before (OLD, c876f37;
# same test binaries).  One GPU shared by 2 and 4 ranks, with and without
# MPS, and 2 GPUs.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/persist_w_gpu.sh $OUT
set -u
OUT=$1; NEW=${NEW:-$(pwd)/gnew}; OLD=${OLD:-$(pwd)/gcarry}
base=$OMPI_MCA_mca_base_component_path
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T() { # label, component build, np, extra, program args...
  l=$1; c=$2; np=$3; x=$4; shift 4
  o=$(OMPI_MCA_mca_base_component_path=$base:$c/.libs timeout 90 mpirun --oversubscribe --bind-to none \
      -np $np $x --mca coll_gpu_timeout 4 "$@" 2>&1); rc=$?
  printf '%-44s rc %3d  %s\n' "$l" $rc "$(echo "$o" | grep 'passed,' | tail -1)"
  echo "$o" | grep -E "^FAIL|alltoallw" | head -6
}
{
  echo "== $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  for where in x2 plain mps; do
    X=""; unset CUDA_VISIBLE_DEVICES
    case $where in
      plain) export CUDA_VISIBLE_DEVICES=0 ;;
      mps) export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
           mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1; X="-x CUDA_MPS_PIPE_DIRECTORY" ;;
    esac
    NP="2 4"; [ $where = x2 ] && NP=2
    for np in $NP; do
      T "$where np $np persistent (new)" $NEW $np "$X" $NEW/test/gpu/test_gpu_persistent
      T "$where np $np mixed 8 B (new)" $NEW $np "$X" $NEW/test/gpu/test_gpu_mixed 8
    done
    if [ $where = mps ]; then
      T "$where np 2 persistent (old component)" $OLD 2 "$X" $NEW/test/gpu/test_gpu_persistent
      T "$where np 2 mixed 8 B (old component)" $OLD 2 "$X" $NEW/test/gpu/test_gpu_mixed 8
      echo quit | nvidia-cuda-mps-control; sleep 1
    fi
  done
} 2>&1 | tee "$OUT/persist_w.log"
exit 0
