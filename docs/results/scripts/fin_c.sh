set -u
. .gpuhost/setup.sh >/dev/null 2>&1
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
mkdir -p /tmp/res
COLLS="bcast reduce reduce_scatter alltoall" bash test/gpu/gpuhost_run.sh bench /tmp/res > /tmp/res/run.log 2>&1
for c in bcast reduce reduce_scatter alltoall; do echo "== $c"; grep -E "^ +[0-9]" /tmp/res/bench_$c.log | awk '{printf "%s:%s/%s ", $1, $2, $NF} END {print ""}'; done
for s in 8 4096; do
mpirun --bind-to none -np 2 --mca coll_gpu_verbose 10 $B/test/bench/gpucoll_bench -c allreduce -b $s -e $s -n 4000 --no-nccl 2>&1 | grep -E "^ +[0-9]|persistent engine ran" > /tmp/res/phases_$s.log
done
cd /tmp/res && tar czf $OUT/res.tgz bench_* phases_* && ls -la $OUT
