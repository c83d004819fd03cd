# 2026-11-22: altA = the previous run's final code; altF = the warp
# split by each block's line counts (split_warps in kernels/gpu_ll.cu: even
# up to one line per thread of a half, else a one-sided block gives its side
# every warp but one and a two-sided block 3/4 to its receivers), resident
# kernel allowed 64 blocks; run as is ("F"), reducing up to 1 MiB in the
# resident kernel ("F1M"), and that with 64 blocks ("F64"); then the GPU
# suites that exercise the resident kernel on altF
. .gpuhost/setup.sh >/dev/null 2>&1
BASE="$OMPI_MCA_mca_base_component_path"
B=$(pwd)/build
(cd $B && tar xzf ab.tgz)
for round in 1 2 3; do
for v in A F1M F64; do
case $v in
A) lib=altA; opt="" ;;
F1M) lib=altF; opt="--mca coll_gpu_persist_reduce_max_bytes 1048576" ;;
F64) lib=altF; opt="--mca coll_gpu_persist_reduce_max_bytes 1048576 --mca coll_gpu_persist_blocks 64" ;;
esac
export OMPI_MCA_mca_base_component_path="$BASE:$B/$lib"
for c in allreduce reduce bcast allgather reduce_scatter alltoall; do
r=$(timeout 60 mpirun --bind-to none -np 2 $opt $B/test/bench/gpucoll_bench -c $c -b 8 -e 2097152 -n 2000 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v $c: $r"
done
done
done
export OMPI_MCA_mca_base_component_path="$BASE:$B/altF"
for cfg in "test_gpu_allreduce 2" "test_gpu_colls 2" "test_gpu_colls 4 --mca coll_gpu_persist 1" "test_gpu_colls 2 --mca coll_gpu_persist_blocks 64" "test_gpu_allreduce 2 --mca coll_gpu_persist_reduce_max_bytes 1048576" "test_gpu_colls 2 --mca coll_gpu_persist_piece_bytes 8" "test_gpu_persistent 2"; do
set -- $cfg; prog=$1; np=$2; shift 2
t0=$(date +%s)
echo "altF $cfg: $(timeout 150 mpirun --bind-to none --oversubscribe -np $np "$@" $B/test/gpu/$prog 2>&1 | grep -E "passed|FAIL" | head -5 | tr '\n' ' ') ($(( $(date +%s) - t0 )) s)"
done
