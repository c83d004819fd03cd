# 2026-11-22, final code: the NVTX check of the single-node suite with
# its new expectation (a 1 MiB allreduce runs in the resident kernel, 2 MiB
# two-shot), the OSU benchmarks with validation, the virtual-node suites
. .gpuhost/setup.sh >/dev/null 2>&1
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
start=$(date +%s)
sed -n '/^# NVTX: every device/,/^rm -rf "\$rec"/p' test/run_gpu_tests.sh > /tmp/nvtx.sh
(pass=0; fail=0; MPIRUN="timeout 60 mpirun --bind-to none"; . /tmp/nvtx.sh) 2>&1 | tee $OUT/nvtx.log
timeout 250 sh test/osu/osu_run.sh run $B/osu > $OUT/osu_run.log 2>&1; tail -3 $OUT/osu_run.log
(cd $B/osu && tar czf $OUT/osu_logs.tgz *.log)
echo "osu $(( $(date +%s) - start )) s"
ONLY_HIER=1 MPIRUN="timeout 100 mpirun --bind-to none" timeout 230 sh test/run_gpu_tests.sh $B > $OUT/gpu_tests_hier.log 2>&1
grep -E "passed, .* failed$" $OUT/gpu_tests_hier.log | tail -1; grep -E "FAIL|crash" $OUT/gpu_tests_hier.log | head
echo "total $(( $(date +%s) - start )) s"
