set -u
. .gpuhost/setup.sh >/dev/null 2>&1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$(pwd)/build/.libs"
start=$(date +%s)
SKIP_HIER=1 MPIRUN="timeout 250 mpirun --bind-to none" sh test/run_gpu_tests.sh $(pwd)/build > $OUT/gpu_tests.log 2>&1
grep -E "NVTX|passed, [0-9]+ failed$|FAIL" $OUT/gpu_tests.log | tail -8
echo "suite $(( $(date +%s) - start )) s"
