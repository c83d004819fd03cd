#!/bin/bash
# 4x H100: MPI_Neighbor_alltoall (2x2 periodic) from 1 MiB per neighbour
# under the exchange kernel's run-time knobs, alltoall beside it.
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
B="$G/test/bench/gpucoll_bench -b 1048576 -e 67108864"
for cfg in "" "--mca coll_gpu_xchg_split 1" "--mca coll_gpu_xchg_nblocks 64" \
    "--mca coll_gpu_xchg_nblocks 64 --mca coll_gpu_xchg_split 1" \
    "--mca coll_gpu_xchg_scratch_bytes 67108864" \
    "--mca coll_gpu_xchg_scratch_bytes 67108864 --mca coll_gpu_xchg_split 1" \
    "--mca coll_gpu_xchg_scratch_bytes 536870912 --mca coll_gpu_xchg_split 1"; do
  echo "== neighbor_alltoall ${cfg:-default}"
  timeout 90 $M -np 4 $cfg $B -c neighbor_alltoall | tail -7
done
echo "== alltoall default"
timeout 90 $M -np 4 $B -c alltoall | tail -7
