# 4 GPUs: issue 36's neighbour target, then the conformance matrix (test/gpu/conform_gpu.sh)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$PWD/gpurun/.libs"
export LD_LIBRARY_PATH=$PWD/gpurun/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p $OUT
nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c > $OUT/gpus.txt
timeout 90 mpirun --bind-to none -np 4 -x LD_LIBRARY_PATH gpurun/test/bench/gpucoll_bench -c neighbor_alltoall -e 67108864 > $OUT/bench_neighbor_alltoall_4gpu.txt 2>&1
grep -E "^ +[0-9]|^#" $OUT/bench_neighbor_alltoall_4gpu.txt
LIMIT=60 sh test/gpu/conform_gpu.sh $PWD/gpurun $OUT/conf > /dev/null 2>&1
cat $OUT/conf/summary.txt; echo "failures:"; head -20 $OUT/conf/failures.txt 2>/dev/null
(cd $OUT/conf && tar czf logs.tgz *.log 2>/dev/null && rm -f *.log)
