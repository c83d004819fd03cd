# A/B of the resident kernel's batched line access (altB) against the previous build (altA)
set -u
. .gpuhost/setup.sh >/dev/null 2>&1
BASE="$OMPI_MCA_mca_base_component_path"
B=$(pwd)/build
(cd $B && tar xzf ab.tgz)
for round in 1 2 3; do
for v in altA altB; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
r=$(timeout 60 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c allreduce -b 8 -e 1048576 -n 2000 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v allreduce: $r"
r=$(timeout 60 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c allgather -b 8 -e 4194304 -n 1000 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v allgather: $r"
done
done
for v in altA altB; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
echo "$v phases 4 KiB, 256 KiB"
timeout 60 mpirun --bind-to none -np 2 --mca coll_gpu_verbose 10 $B/test/bench/gpucoll_bench -c allreduce -b 4096 -e 4096 -n 20000 --no-nccl 2>&1 | grep -E "^ +[0-9]|persistent engine ran" | sed 's/.*next post://'
timeout 60 mpirun --bind-to none -np 2 --mca coll_gpu_verbose 10 $B/test/bench/gpucoll_bench -c allreduce -b 262144 -e 262144 -n 20000 --no-nccl 2>&1 | grep -E "^ +[0-9]|persistent engine ran" | sed 's/.*next post://'
done
export OMPI_MCA_mca_base_component_path="$BASE:$B/altB"
echo "altB correctness"
for cfg in "test_gpu_allreduce 2" "test_gpu_colls 2" "test_gpu_allreduce 4 --mca coll_gpu_persist 1" "test_gpu_colls 4 --mca coll_gpu_persist 1"; do
set -- $cfg; prog=$1; np=$2; shift 2
echo "$cfg: $(timeout 120 mpirun --bind-to none --oversubscribe -np $np "$@" $B/test/gpu/$prog 2>&1 | grep -E "passed|FAIL" | head -5 | tr '\n' ' ')"
done
