set -u
. .gpuhost/setup.sh >/dev/null 2>&1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$(pwd)/build/.libs"
mkdir -p /tmp/res
start=$(date +%s)
SKIP_HIER=1 MPIRUN="timeout 250 mpirun --bind-to none" sh test/run_gpu_tests.sh $(pwd)/build > /tmp/res/gpu_tests.log 2>&1
grep -E "^== |passed|FAIL|crash" /tmp/res/gpu_tests.log | tail -60
echo "suite $(( $(date +%s) - start )) s"
cp /tmp/res/* $OUT/
