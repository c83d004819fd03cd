# resident kernel: smallest piece per block (coll_gpu_persist_piece_bytes) 1024/2048/4096
# with the converged fence (altB), against the previous build (altA, pieces of 4096)
set -u
. .gpuhost/setup.sh >/dev/null 2>&1
BASE="$OMPI_MCA_mca_base_component_path"
B=$(pwd)/build
(cd $B && tar xzf ab.tgz)
for round in 1 2; do
for v in altA:4096 altB:4096 altB:2048 altB:1024; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/${v%:*}"
for c in allreduce allgather bcast reduce_scatter alltoall; do
e=2097152; [ $c = allreduce ] && e=1048576
r=$(timeout 60 mpirun --bind-to none -np 2 --mca coll_gpu_persist_piece_bytes ${v#*:} $B/test/bench/gpucoll_bench -c $c -b 8 -e $e -n 1500 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v $c: $r"
done
done
done
export OMPI_MCA_mca_base_component_path="$BASE:$B/altB"
for cfg in "test_gpu_colls 2 --mca coll_gpu_persist_piece_bytes 8" "test_gpu_allreduce 2 --mca coll_gpu_persist_piece_bytes 8" "test_gpu_colls 2" "test_gpu_allreduce 4 --mca coll_gpu_persist 1"; do
set -- $cfg; prog=$1; np=$2; shift 2
echo "$cfg: $(timeout 120 mpirun --bind-to none --oversubscribe -np $np "$@" $B/test/gpu/$prog 2>&1 | grep -E "passed|FAIL" | head -5 | tr '\n' ' ')"
done
