# A/B/C: previous build (altA), converged fence (altB), + __grid_constant__ kernel arguments (altC)
set -u
. .gpuhost/setup.sh >/dev/null 2>&1
BASE="$OMPI_MCA_mca_base_component_path"
B=$(pwd)/build
export OMPI_MCA_coll_gpu_persist_piece_bytes=4096
(cd $B && tar xzf ab.tgz)
for round in 1 2 3; do
for v in altA altB altC; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
r=$(timeout 60 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c allreduce -b 8 -e 1048576 -n 3000 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v allreduce: $r"
done
done
for v in altB altC; do
export OMPI_MCA_mca_base_component_path="$BASE:$B/$v"
echo "$v phases 8 B, 4 KiB"
for s in 8 4096; do
timeout 60 mpirun --bind-to none -np 2 --mca coll_gpu_verbose 10 $B/test/bench/gpucoll_bench -c allreduce -b $s -e $s -n 20000 --no-nccl 2>&1 | grep -E "^ +[0-9]|persistent engine ran" | sed 's/.*next post://'
done
done
