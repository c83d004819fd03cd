#!/bin/bash
# Check on the GPU host (4x H100) the point-to-point enqueue fixes of c9cb902 and e52c3d6 and the
# pair-type reductions on the stream kernels (libgpucoll, plain MPI_Init):
#   bash docs/results/scripts/p2p_fix_gpu.sh OUTDIR    (repository root, gpurun/ = a build of HEAD)
# Before the fixes (s6b): test_mpix_stream's halo passed at 5 doubles and gave no answer at 150000
# (np 2 and 4); test_gpu_halo's eager 0-byte iteration took 1142 us (graph 66 us).
# Expect: every test_mpix_stream run 'N passed, 0 failed' (halo at 150000 PASS); test_gpu_halo
# eager 0 B well below 1142 us and near its graph time, all sizes PASS; test_gpu_pairs 64 with
# the lines 'gpucoll: MPIX_Reduce_enqueue of a pair type: coll/gpu's stream kernels' and the
# same for MPIX_Reduce_scatter_block_enqueue, 0 failed.  A run that gets no answer leaves its
# ranks' thread stacks in OUTDIR/TAG.stacks.PID (mpix_gpu.sh's run).
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
mkdir -p "$OUT"
export GPUCOLL_STREAM_VERBOSE=1
T0=$(date +%s)
{
# the whole libgpucoll GPU set: stream test and demo np 2/4, halo malloc/async/staged/mixed,
# test_mpix_p2p, 4 ranks on 2 GPUs with and without MPS, the timeout case
LIMIT=120 sh test/gpu/mpix_gpu.sh "$G" "$OUT/mpix"
# the point-to-point part alone, np 2 and 4
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none -x LD_LIBRARY_PATH -x GPUCOLL_STREAM_VERBOSE"
for np in 2 4; do
  timeout 60 $M -np $np stdbuf -oL $G/test/mpi/test_mpix_stream p2p > $OUT/p2p_np$np.log 2>&1
  echo "test_mpix_stream p2p np $np: rc=$? $(grep -E 'halo.*150000' $OUT/p2p_np$np.log | head -2 | tr '\n' ' ') $(grep -oE 'test_mpix_stream: [0-9]+ passed, [0-9]+ failed' $OUT/p2p_np$np.log)"
done
# eager and graph time per halo iteration, every size
for np in 2 4; do
  timeout 300 $M -np $np stdbuf -oL $G/test/gpu/test_gpu_halo malloc > $OUT/halo_np$np.log 2>&1
  echo "test_gpu_halo np $np: rc=$?"; grep -E '^halo|passed' $OUT/halo_np$np.log
done
# enqueued pair-type reduce and reduce_scatter_block on the kernels
timeout 300 $M -np 2 $G/test/gpu/test_gpu_pairs 64 > $OUT/pairs_np2.log 2>&1
echo "test_gpu_pairs 64 np 2: rc=$? $(grep -c "of a pair type: coll/gpu's stream kernels" $OUT/pairs_np2.log) kernel lines (want 2) $(grep -oE 'test_gpu_pairs: [0-9]+ passed, [0-9]+ failed' $OUT/pairs_np2.log)"
timeout 300 $M -np 4 $G/test/gpu/test_gpu_pairs 64 enqueue > $OUT/pairs_np4.log 2>&1
echo "test_gpu_pairs 64 enqueue np 4: rc=$? $(grep -oE 'test_gpu_pairs: [0-9]+ passed, [0-9]+ failed' $OUT/pairs_np4.log)"
echo "[$(( $(date +%s) - T0 )) s]"
} 2>&1 | tee $OUT/summary.txt
