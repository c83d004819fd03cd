#!/bin/bash
# 4x H100: the last refactors (large areas in engine/gpu_engine_big.c, MPICH's
# stream objects in mpix/gpucoll_mpix_stream.c): conformance np 4, the large
# areas grown by 64 MiB calls, the pool joined and leased, libgpucoll np 2.
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
timeout 100 $M -np 4 $G/test/conform/test_conform --quick 2>&1 | grep -E "FAIL|passed" | head -5
timeout 60 $M -np 4 $G/test/bench/gpucoll_bench -c alltoall -b 67108864 -e 67108864 -n 5 --no-nccl | tail -1
timeout 60 $M -np 4 --mca coll_gpu_pool 1 $G/test/bench/gpucoll_bench -c allgather -b 67108864 -e 67108864 -n 5 --no-nccl | tail -1
timeout 60 $M -np 2 $G/test/mpi/test_mpix_stream 2>&1 | tail -1
