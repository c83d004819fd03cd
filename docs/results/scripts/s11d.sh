# 2026-11-22, final code (no per-receiver fence in the resident kernel):
# single-node GPU suites, then every collective against NCCL from 8 B to 1 MiB
# (the resident kernel's sizes; larger sizes run code unchanged since commit
# 3aecbf7), median of 3 timed loops per side; phases of the 8 B and 4 KiB allreduce
. .gpuhost/setup.sh >/dev/null 2>&1
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
R=/tmp/res; mkdir -p $R
start=$(date +%s)
SKIP_HIER=1 MPIRUN="timeout 250 mpirun --bind-to none" sh test/run_gpu_tests.sh $B > $R/gpu_tests.log 2>&1
grep -E "passed, .* failed$" $R/gpu_tests.log | tail -1; grep -E "FAIL|crash" $R/gpu_tests.log | head
echo "suite $(( $(date +%s) - start )) s"
for c in allreduce bcast reduce allgather reduce_scatter alltoall; do
  timeout 90 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c $c -e 1048576 \
    --csv $R/bench_small_$c.csv > $R/bench_small_$c.log 2>&1
  echo "== $c"; grep -E "^ +[0-9]" $R/bench_small_$c.log | awk '{printf "%s:%s/%s ", $1, $2, $NF} END {print ""}'
done
for s in 8 4096; do
mpirun --bind-to none -np 2 --mca coll_gpu_verbose 10 $B/test/bench/gpucoll_bench -c allreduce -b $s -e $s -n 4000 --no-nccl 2>&1 | grep -E "^ +[0-9]|persistent engine ran" > $R/phases_$s.log
done
cat $R/phases_*.log | sed 's/.*next post://'
cd $R && tar czf $OUT/res.tgz * && echo "total $(( $(date +%s) - start )) s"
