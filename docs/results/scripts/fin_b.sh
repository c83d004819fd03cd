set -u
. .gpuhost/setup.sh >/dev/null 2>&1
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
mkdir -p /tmp/res
start=$(date +%s)
bash test/gpu/gpuhost_run.sh bench /tmp/res > /tmp/res/run.log 2>&1
for c in allreduce bcast reduce allgather reduce_scatter alltoall; do echo "== $c"; grep -E "^ +[0-9]" /tmp/res/bench_$c.log | awk '{printf "%s:%s/%s/%s ", $1, $2, $5, $NF} END {print ""}'; done
echo "bench $(( $(date +%s) - start )) s"
rec=$(mktemp -d)
for a in "-c allgather -b 4194304 -e 8388608" "-c allreduce -e 1048576"; do
NVTX_INJECTION64_PATH="$B/test/nvtx/libnvtx_recorder.so" NVTX_RECORD_FILE="$rec/nvtx" \
  mpirun --bind-to none -x NVTX_INJECTION64_PATH -x NVTX_RECORD_FILE -np 2 $B/test/bench/gpucoll_bench $a -n 5 --no-nccl > /dev/null 2>&1
done
cat $rec/nvtx.* | grep "^push" | sort | uniq -c | grep -E "allgather (2097152|4194304)|allreduce (8|1048576) B"
echo "pushes $(cat $rec/nvtx.* | grep -c '^push coll/gpu') pops $(cat $rec/nvtx.* | grep -c '^pop')"
for s in 8 4096; do
mpirun --bind-to none -np 2 --mca coll_gpu_verbose 10 $B/test/bench/gpucoll_bench -c allreduce -b $s -e $s -n 4000 --no-nccl 2>&1 | grep -E "^ +[0-9]|persistent engine ran" > /tmp/res/phases_$s.log
done
cat /tmp/res/phases_*.log | sed 's/.*post seen:/ran/'
cp /tmp/res/*.log /tmp/res/*.csv /tmp/res/*.json $OUT/ 2>/dev/null
echo "total $(( $(date +%s) - start )) s"
