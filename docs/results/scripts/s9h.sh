set -u
. .gpuhost/setup.sh >/dev/null 2>&1
BASE="$OMPI_MCA_mca_base_component_path"
B=$(pwd)/build
for round in 1 2 3; do
for v in altA altB; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
r=$(timeout 60 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c allreduce -b 8 -e 262144 -n 2000 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v: $r"
done
done
for v in altA altB; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
echo "$v phases 8 B"
timeout 60 mpirun --bind-to none -np 2 --mca coll_gpu_verbose 10 $B/test/bench/gpucoll_bench -c allreduce -b 8 -e 8 -n 20000 --no-nccl 2>&1 | grep -E "^ +[0-9]|persistent engine ran" | sed 's/.*post seen://; s/.*next post://'
done
