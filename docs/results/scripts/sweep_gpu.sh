#!/bin/bash
# Every collective 8 B-1 GiB, one rank per GPU, on 4 GPUs and on 2, against
# NCCL's blocking call and its graph replay in the same run (--graph);
# neighbor_alltoall (2x2 periodic) on 4.  Listings and CSVs into $OUT.
# NS picks the GPU counts (default "4 2"), COLLS the collectives, NBR=0
# leaves neighbor_alltoall out.
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
for n in ${NS:-4 2}; do
  [ $n = 2 ] && export CUDA_VISIBLE_DEVICES=0,1 && M="$M -x CUDA_VISIBLE_DEVICES"
  for c in ${COLLS:-allreduce bcast reduce allgather reduce_scatter alltoall}; do
    echo "[$SECONDS s] $c ${n} GPUs"
    timeout 150 $M -np $n $G/test/bench/gpucoll_bench -c $c -e 1073741824 --graph \
      --csv $OUT/bench_${c}_${n}gpu.csv > $OUT/bench_${c}_${n}gpu.txt 2>&1
  done
done
unset CUDA_VISIBLE_DEVICES; M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
echo "[$SECONDS s] neighbor_alltoall 4 GPUs"
[ "${NS:-4 2}" != 2 ] && [ "${NBR:-1}" = 1 ] && timeout 150 $M -np 4 $G/test/bench/gpucoll_bench -c neighbor_alltoall -e 67108864 --graph \
  --csv $OUT/bench_neighbor_alltoall_4gpu.csv > $OUT/bench_neighbor_alltoall_4gpu.txt 2>&1
echo "[$SECONDS s] done"
tar czf $OUT/sweep.tgz -C $OUT $(cd $OUT && ls bench_*) && rm -f $OUT/bench_*
tar xzf $OUT/sweep.tgz -O --wildcards "*.txt" | grep -E "^#|^ *(8|1048576|67108864|1073741824) "
