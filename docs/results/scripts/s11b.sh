# 2026-11-22: A/B/C/D of the resident kernel's per-call costs against the
# the previous run's code (altA): altC = no third pointer query on the host (timing
# only: managed outputs would lose their system fence), altD = no per-receiver
# fence (the reporting thread's fence after the block barrier alone orders every
# receiver's results), altE = both; then the GPU suites that exercise the
# resident kernel, on altD
. .gpuhost/setup.sh >/dev/null 2>&1
BASE="$OMPI_MCA_mca_base_component_path"
B=$(pwd)/build
(cd $B && tar xzf ab.tgz)
for round in 1 2; do
for v in altA altC altD altE; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
for c in allreduce reduce allgather; do
r=$(timeout 60 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c $c -b 8 -e 262144 -n 2000 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v $c: $r"
done
done
done
export OMPI_MCA_mca_base_component_path="$BASE:$B/altD"
for cfg in "test_gpu_allreduce 2" "test_gpu_colls 2" "test_gpu_colls 2 --mca coll_gpu_persist_piece_bytes 8" "test_gpu_allreduce 4 --mca coll_gpu_persist 1" "test_gpu_persistent 2"; do
set -- $cfg; prog=$1; np=$2; shift 2
echo "$cfg: $(timeout 150 mpirun --bind-to none --oversubscribe -np $np "$@" $B/test/gpu/$prog 2>&1 | grep -E "passed|FAIL" | head -5 | tr '\n' ' ')"
done
