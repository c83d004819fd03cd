# 2026-11-22, final code: the virtual-node (hier) GPU suites
. .gpuhost/setup.sh >/dev/null 2>&1
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
start=$(date +%s)
ONLY_HIER=1 MPIRUN="timeout 100 mpirun --bind-to none" timeout 255 sh test/run_gpu_tests.sh $B > $OUT/gpu_tests_hier.log 2>&1
grep -E "passed, .* failed$" $OUT/gpu_tests_hier.log | tail -1; grep -E "FAIL|crash" $OUT/gpu_tests_hier.log | head
echo "hier suite $(( $(date +%s) - start )) s"
