#!/bin/bash
# 4x H100, session 12 g: test_gpu_colls at np 3 after its rooted reduce
# cases take their op from the case, not from a counter that differs per
# rank at an odd rank count (e/ failed 39 int cases: ranks mixed MPI_MAX and
# MPI_SUM in one call; s12_probe_reduce.c found the device right).
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
timeout 90 mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH -np 3 $G/test/gpu/test_gpu_colls 2>&1 | grep -E "^FAIL|passed" | head -8
