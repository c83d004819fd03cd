# 2026-11-22: A/C/E of the resident kernel's warp split: altA = the
# the previous run's final code; altC = a one-sided block gives that side
# every warp but one, a two-sided block a quarter of its warps to the
# senders; altE = the same with an eighth; then altC/altE reducing up to
# 2 MiB in the resident kernel (coll_gpu_persist_reduce_max_bytes); then the
# GPU suites that exercise the resident kernel on $TESTS
. .gpuhost/setup.sh >/dev/null 2>&1
BASE="$OMPI_MCA_mca_base_component_path"
B=$(pwd)/build
(cd $B && tar xzf ab.tgz)
for round in 1 2; do
for v in altA altC altE; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
for c in allreduce reduce allgather reduce_scatter alltoall; do
r=$(timeout 60 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c $c -b 8 -e 1048576 -n 2000 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v $c: $r"
done
done
done
for v in altA altC altE; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
for c in allreduce reduce; do
r=$(timeout 60 mpirun --bind-to none -np 2 --mca coll_gpu_persist_reduce_max_bytes 2097152 $B/test/bench/gpucoll_bench -c $c -b 262144 -e 2097152 -n 2000 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v $c persist_reduce_max 2M, 256K-2M: $r"
done
done
for v in $TESTS; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
for cfg in "test_gpu_allreduce 2" "test_gpu_colls 2" "test_gpu_colls 4 --mca coll_gpu_persist 1"; do
set -- $cfg; prog=$1; np=$2; shift 2
t0=$(date +%s)
echo "$v $cfg: $(timeout 150 mpirun --bind-to none --oversubscribe -np $np "$@" $B/test/gpu/$prog 2>&1 | grep -E "passed|FAIL" | head -5 | tr '\n' ' ') ($(( $(date +%s) - t0 )) s)"
done
done
