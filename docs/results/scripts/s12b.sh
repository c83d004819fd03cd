# 2026-11-22: A/B of the resident kernel's warp split, against the
# the previous run's final code (altA): altB = a block with one side only
# (a reduce's root, a bcast's receivers) gives that side every warp but one;
# altC = altB + a block with both sides gives a quarter of its warps to the
# senders (128 of 512 threads) instead of half; altD = altB + 3/8 (192);
# then (TESTS="altB ...") the GPU suites that exercise the resident kernel
. .gpuhost/setup.sh >/dev/null 2>&1
BASE="$OMPI_MCA_mca_base_component_path"
B=$(pwd)/build
(cd $B && tar xzf ab.tgz)
for round in $ROUNDS; do
for v in altA altB altC altD; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
for c in allreduce reduce bcast allgather; do
r=$(timeout 60 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c $c -b 8 -e 1048576 -n 2000 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v $c: $r"
done
done
done
for v in $TESTS; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
for cfg in "test_gpu_allreduce 2" "test_gpu_colls 2" "test_gpu_colls 4 --mca coll_gpu_persist 1"; do
set -- $cfg; prog=$1; np=$2; shift 2
echo "$v $cfg: $(timeout 150 mpirun --bind-to none --oversubscribe -np $np "$@" $B/test/gpu/$prog 2>&1 | grep -E "passed|FAIL" | head -5 | tr '\n' ' ')"
done
done
