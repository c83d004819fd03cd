# 2026-11-22, final code: virtual-node (hier) GPU suites, then repeated small-size runs
# of the collectives that showed single-size spikes
set -u
. .gpuhost/setup.sh >/dev/null 2>&1
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
R=/tmp/res; mkdir -p $R
start=$(date +%s)
ONLY_HIER=1 MPIRUN="timeout 100 mpirun --bind-to none" timeout 430 sh test/run_gpu_tests.sh $B > $R/gpu_tests_hier.log 2>&1
cp $R/gpu_tests_hier.log $OUT/
grep -E "passed, .* failed$" $R/gpu_tests_hier.log | tail -1; grep -E "FAIL|crash|PASS" $R/gpu_tests_hier.log | head
echo "hier suite $(( $(date +%s) - start )) s"
for i in 1 2 3; do
for c in bcast allgather alltoall reduce_scatter reduce; do
r=$(timeout 30 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c $c -b 8 -e 4096 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s:%s/%s ", $1, $2, $NF}')
echo "run $i $c: $r"
done
done | tee $R/spikes.log
cp $R/spikes.log $OUT/
echo "total $(( $(date +%s) - start )) s"
