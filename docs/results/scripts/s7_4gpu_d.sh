#!/bin/bash
# Session 7, 4x H100, run D: libgpucoll's point-to-point enqueue after c9cb902/e52c3d6/0963476
# (IPC mappings closed on the application's thread, pinned staging kept) and the enqueued
# pair-type reduce/reduce_scatter_block on the stream kernels (39ce542), plain MPI_Init; the
# pool's lease voted on the memory-kind board (62b4c9a): allreduce with the pool on and off,
# the lease counts, test_gpu_comm_memory with the pool.
#   bash docs/results/scripts/s7_4gpu_d.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GPUCOLL_STREAM_VERBOSE=1
M="mpirun --bind-to none -x LD_LIBRARY_PATH -x GPUCOLL_STREAM_VERBOSE -x CUDA_VISIBLE_DEVICES"
B=$G/test/bench/gpucoll_bench
mkdir -p $OUT
T0=$(date +%s)
gpus() { if [ $1 = 2 ]; then export CUDA_VISIBLE_DEVICES=0,1; else export CUDA_VISIBLE_DEVICES=0,1,2,3; fi; }
{
for np in 2 4; do gpus $np
  timeout 60 $M -np $np stdbuf -oL $G/test/mpi/test_mpix_stream p2p > $OUT/p2p_np$np.log 2>&1
  echo "test_mpix_stream p2p np $np: rc=$? $(grep -E 'halo' $OUT/p2p_np$np.log | cut -c1-60 | tr '\n' ' ') $(grep -oE 'test_mpix_stream: [0-9]+ passed, [0-9]+ failed' $OUT/p2p_np$np.log)"
  timeout 90 $M -np $np stdbuf -oL $G/test/mpi/test_mpix_stream > $OUT/stream_np$np.log 2>&1
  echo "test_mpix_stream np $np: rc=$? $(grep -oE 'test_mpix_stream: [0-9]+ passed, [0-9]+ failed' $OUT/stream_np$np.log)"
done
gpus 2
timeout 120 $M -np 2 stdbuf -oL $G/test/gpu/test_gpu_halo malloc > $OUT/halo_np2.log 2>&1
echo "test_gpu_halo np 2: rc=$?"; grep -E '^halo|passed' $OUT/halo_np2.log | head -12
timeout 120 $M -np 2 $G/test/gpu/test_gpu_pairs 64 > $OUT/pairs_np2.log 2>&1
echo "test_gpu_pairs 64 np 2: rc=$? $(grep -c "of a pair type: coll/gpu's stream kernels" $OUT/pairs_np2.log) kernel lines (want 2) $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/pairs_np2.log | tail -1)"
echo "[$(( $(date +%s) - T0 )) s]"
} 2>&1 | tee $OUT/summary.txt
for np in 2 4; do gpus $np; for pool in 1 0; do
  echo "== allreduce np $np, coll_gpu_pool $pool"
  timeout 60 $M -np $np --mca coll_gpu_pool $pool $B -c allreduce -e 8388608 2>&1 | grep -E "^ +[0-9]"
done; done 2>&1 | tee $OUT/allreduce_pool.txt | awk '/^==/ || $1 >= 65536'
for np in 2 4; do gpus $np
  echo "== np $np, coll_gpu_pool 1, verbose 10: how the large calls leased the pool"
  timeout 60 $M -np $np --mca coll_gpu_pool 1 --mca coll_gpu_verbose 10 \
    $B -c allreduce -b 4194304 -e 8388608 -n 20 -r 1 --no-nccl 2>&1 | grep -E "leased by|pool was busy|pool of" | head -4
done 2>&1 | tee $OUT/pool_leases.txt
gpus 4
timeout 90 $M -np 4 --mca coll_gpu_pool 1 $G/test/gpu/test_gpu_comm_memory 0 0 > $OUT/comm_memory_np4.txt 2>&1
echo "test_gpu_comm_memory np 4 pool 1: rc=$?"; grep -E "passed|^FAIL|MiB" $OUT/comm_memory_np4.txt | tail -8
echo "[$(( $(date +%s) - T0 )) s]"
