# A/B: previous build (altA) against __syncwarp before the receivers' fence (altB)
set -u
. .gpuhost/setup.sh >/dev/null 2>&1
BASE="$OMPI_MCA_mca_base_component_path"
B=$(pwd)/build
(cd $B && tar xzf ab.tgz)
V=${V:-altA altB}
for round in 1 2 3; do
for v in $V; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
r=$(timeout 60 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c allreduce -b 8 -e 262144 -n 3000 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v allreduce: $r"
done
done
for v in $V; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
r=$(timeout 60 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c allgather -b 8 -e 4194304 -n 1000 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v allgather: $r"
echo "$v phases 8 B, 256 B"
for s in 8 256; do
timeout 60 mpirun --bind-to none -np 2 --mca coll_gpu_verbose 10 $B/test/bench/gpucoll_bench -c allreduce -b $s -e $s -n 20000 --no-nccl 2>&1 | grep -E "^ +[0-9]|persistent engine ran" | sed 's/.*next post://'
done
done
