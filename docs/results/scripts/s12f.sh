# 2026-11-22, final code (warp split by line counts, 64 resident blocks,
# the resident kernel reducing up to 1 MiB): single-node GPU suites, then every
# collective against NCCL over the full range (gpuhost_run.sh bench: median of
# 3 timed loops per side, 8 B to 2 GiB)
. .gpuhost/setup.sh >/dev/null 2>&1
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
R=/tmp/res; mkdir -p $R
start=$(date +%s)
SKIP_HIER=1 MPIRUN="timeout 250 mpirun --bind-to none" sh test/run_gpu_tests.sh $B > $R/gpu_tests.log 2>&1
grep -E "passed, .* failed$" $R/gpu_tests.log | tail -1; grep -E "FAIL|crash" $R/gpu_tests.log | head
echo "suite $(( $(date +%s) - start )) s"
timeout 200 bash test/gpu/gpuhost_run.sh bench $R/bench > $R/bench_run.log 2>&1
for c in allreduce bcast reduce allgather reduce_scatter alltoall; do echo "== $c"; grep -E "^ +[0-9]" $R/bench/bench_$c.log | awk '{printf "%s:%s/%s ", $1, $2, $NF} END {print ""}'; done
cd $R && tar czf $OUT/res.tgz * && echo "total $(( $(date +%s) - start )) s"
