set -u
. .gpuhost/setup.sh >/dev/null 2>&1
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
for i in 1 2 3 4; do
r=$(mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c allreduce -b 8 -e 262144 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s:%s ", $1, $2}')
echo "run $i: $r"
done
