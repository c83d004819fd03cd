# 2026-11-22: altD (no per-receiver fence, s11b) against altF = altD whose
# senders take adjacent line pairs (both loads before either store) when a piece
# has more lines than sender threads; then the resident-kernel GPU suites on altF
. .gpuhost/setup.sh >/dev/null 2>&1
BASE="$OMPI_MCA_mca_base_component_path"
B=$(pwd)/build
(cd $B && tar xzf ab.tgz)
for round in 1 2; do
for v in altD altF; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
for c in allreduce reduce allgather; do
r=$(timeout 60 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c $c -b 8 -e 262144 -n 2000 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v $c: $r"
done
done
done
export OMPI_MCA_mca_base_component_path="$BASE:$B/altF"
for cfg in "test_gpu_allreduce 2" "test_gpu_colls 2" "test_gpu_colls 2 --mca coll_gpu_persist_piece_bytes 8" "test_gpu_allreduce 4 --mca coll_gpu_persist 1" "test_gpu_colls 4 --mca coll_gpu_persist 1"; do
set -- $cfg; prog=$1; np=$2; shift 2
echo "$cfg: $(timeout 150 mpirun --bind-to none --oversubscribe -np $np "$@" $B/test/gpu/$prog 2>&1 | grep -E "passed|FAIL" | head -5 | tr '\n' ' ')"
done
