#!/bin/bash
# Session 8, 4x H100, run A: CUDA IPC facts (probes), libgpucoll's halo with buffers
# reallocated per size after the mapping cache keys on the handle and closes only while no
# receive is under way; test_mpix_stream/test_mpix_p2p; the conformance test across virtual
# nodes with in-place alltoall(v) on the hierarchy (timing labels).
#   bash docs/results/scripts/s8_4gpu_a.sh OUTDIR     (repository root, gpurun/ = the build,
#   gpurun/probe/ = the probes of docs/results/h100x4_2026-11-27_s8/probes, built as they say)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GPUCOLL_STREAM_VERBOSE=1
M="mpirun --bind-to none -x LD_LIBRARY_PATH -x GPUCOLL_STREAM_VERBOSE -x CUDA_VISIBLE_DEVICES"
mkdir -p $OUT
T0=$(date +%s)
gpus() { if [ $1 = 2 ]; then export CUDA_VISIBLE_DEVICES=0,1; else export CUDA_VISIBLE_DEVICES=0,1,2,3; fi; }
{
gpus 2
for p in probe_ipc probe_ipc2 probe_ipc3; do
  timeout 30 mpirun -np 2 $G/probe/$p > $OUT/$p.log 2>&1; echo "$p: rc=$?"
done
for mode in malloc mixed; do for np in 2 4; do gpus $np
  timeout 150 $M -np $np stdbuf -oL $G/test/gpu/test_gpu_halo $mode > $OUT/halo_${mode}_np$np.log 2>&1
  echo "test_gpu_halo $mode np $np: rc=$? $(grep -oE 'test_gpu_halo: [0-9]+ passed, [0-9]+ failed' $OUT/halo_${mode}_np$np.log) $(grep -c 'already mapped\|invalid argument' $OUT/halo_${mode}_np$np.log) mapping errors; $(grep -m1 -oE '[0-9]+ sends by CUDA IPC, [0-9]+ staged' $OUT/halo_${mode}_np$np.log)"
done; done
for np in 2 4; do gpus $np
  timeout 90 $M -np $np stdbuf -oL $G/test/mpi/test_mpix_stream > $OUT/stream_np$np.log 2>&1
  echo "test_mpix_stream np $np: rc=$? $(grep -oE 'test_mpix_stream: [0-9]+ passed, [0-9]+ failed' $OUT/stream_np$np.log)"
  timeout 90 $M -np $np stdbuf -oL $G/test/mpi/test_mpix_p2p > $OUT/p2p_np$np.log 2>&1
  echo "test_mpix_p2p np $np: rc=$? $(grep -oE 'test_mpix_p2p: [0-9]+ passed, [0-9]+ failed' $OUT/p2p_np$np.log)"
done
echo "[$(( $(date +%s) - T0 )) s]"
gpus 4
for vn in 2 4; do
  d=$OUT/t_vn$vn; mkdir -p $d
  timeout 150 $M -np 4 --mca coll_gpu_virtual_nodes $vn --mca coll_gpu_timeout 10 --mca coll_gpu_timing_file $d/t \
    $G/test/conform/test_conform --quick --mem device > $OUT/conform_vn$vn.log 2>&1
  echo "conform --mem device np 4, $vn virtual nodes: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/conform_vn$vn.log | tail -1)"
  grep -h "^FAIL\|HANG\|CRASH" $OUT/conform_vn$vn.log | head -5
  cat $d/t.*.jsonl 2>/dev/null | grep -oE '"coll":"alltoallv?","algo":"[^"]*"' | sort | uniq -c | sort -rn > $OUT/labels_alltoall_vn$vn.txt
  cat $OUT/labels_alltoall_vn$vn.txt; rm -rf $d
done
echo "[$(( $(date +%s) - T0 )) s]"
} 2>&1 | tee $OUT/summary.txt
