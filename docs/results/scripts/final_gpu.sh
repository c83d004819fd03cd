#!/bin/bash
# 4x H100, the session's last batch: libgpucoll under plain MPI_Init
# (test/gpu/mpix_gpu.sh), then bcast and reduce 8 B-1 GiB with the chains'
# new 16 MiB defaults (4 GPUs, NCCL blocking and graph beside them).
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
LIMIT=45 sh test/gpu/mpix_gpu.sh $G $OUT/mpix > $OUT/mpix_summary.txt 2>&1
cat $OUT/mpix_summary.txt
tar czf $OUT/mpix_logs.tgz -C $OUT/mpix . && rm -rf $OUT/mpix
for c in bcast reduce; do
  timeout 120 $M -np 4 $G/test/bench/gpucoll_bench -c $c -e 1073741824 --graph \
    --csv $OUT/bench_${c}_4gpu.csv > $OUT/bench_${c}_4gpu.txt 2>&1
  cut -c1-100 $OUT/bench_${c}_4gpu.txt | sed -n '1p;16,30p'
done
