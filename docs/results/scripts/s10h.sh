# 2026-11-22, final code: every collective against NCCL (median of 3 timed loops each),
# repeated small allreduce runs, resident-kernel phases at 8 B and 4 KiB
set -u
. .gpuhost/setup.sh >/dev/null 2>&1
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
R=/tmp/res; mkdir -p $R
start=$(date +%s)
bash test/gpu/gpuhost_run.sh bench $R/bench > $R/bench_run.log 2>&1
for c in allreduce bcast reduce allgather reduce_scatter alltoall; do echo "== $c"; grep -E "^ +[0-9]" $R/bench/bench_$c.log | awk '{printf "%s:%s/%s/%s ", $1, $2, $4, $NF} END {print ""}'; done
tail -3 $R/bench_run.log
(cd $R && tar czf $OUT/bench.tgz bench bench_run.log)
echo "bench $(( $(date +%s) - start )) s"
for i in 1 2 3 4; do
r=$(timeout 60 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c allreduce -b 8 -e 262144 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s:%s ", $1, $2}')
echo "run $i: $r"
done | tee $R/repeat.log
for s in 8 4096; do
mpirun --bind-to none -np 2 --mca coll_gpu_verbose 10 $B/test/bench/gpucoll_bench -c allreduce -b $s -e $s -n 4000 -r 1 --no-nccl 2>&1 | grep -E "^ +[0-9]|persistent engine ran"
done > $R/phases.log
sed 's/.*next post://' $R/phases.log
cp $R/repeat.log $R/phases.log $OUT/
echo "total $(( $(date +%s) - start )) s"
