#!/bin/bash
# 4x H100, session 13 f (e/'s warm machine and build): the exchange kernel
# alone (coll_gpu_put_min 0: no put path), reduce_scatter 1-64 MiB, the
# coarse cut (default) against the fine one (coll_gpu_xchg_reduce_nblocks
# 0), same session, and the verbose line naming the cut.
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH -np 4 --mca coll_gpu_put_min 0"
BN="$G/test/bench/gpucoll_bench -n 10 -r 3 --no-nccl -c reduce_scatter -b 1048576 -e 67108864"
timeout 30 $M --mca coll_gpu_verbose 20 $G/test/bench/gpucoll_bench -n 1 -r 1 --no-nccl -c reduce_scatter \
  -b 16777216 -e 16777216 2>&1 | grep -c "coarse slots" | sed 's/^/verbose lines naming the coarse cut: /'
for v in 32 0 32 0; do
  echo "xchg_reduce_nblocks $v: $(timeout 30 $M --mca coll_gpu_xchg_reduce_nblocks $v $BN 2>&1 | awk '/^ +[0-9]+ /{printf "%dK:%s ", $1/1024, $2}')"
done
