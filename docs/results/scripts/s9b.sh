set -u
. .gpuhost/setup.sh >/dev/null 2>&1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$(pwd)/build/.libs"
B=build/test/bench/gpucoll_bench
run() { # label, coll, args...
  l=$1; c=$2; shift 2
  r=$(timeout 120 mpirun --bind-to none -np 2 "$@" $B -c $c -b 131072 -e 4194304 --no-nccl 2>&1 | awk '/^ +[0-9]/{printf "%s ", $2}')
  echo "$l $c: $r"
}
run default allreduce
run b64 allreduce --mca coll_gpu_nblocks 64
run default allreduce
run b64 allreduce --mca coll_gpu_nblocks 64
run pk1M allreduce --mca coll_gpu_persist_max_bytes 1048576
run pk4M allreduce --mca coll_gpu_persist_max_bytes 4194304
run default reduce_scatter
run pk4M reduce_scatter --mca coll_gpu_persist_max_bytes 4194304
run default allgather
run pk4M allgather --mca coll_gpu_persist_max_bytes 4194304
run default bcast
run pk4M bcast --mca coll_gpu_persist_max_bytes 4194304
run default alltoall
run pk4M alltoall --mca coll_gpu_persist_max_bytes 4194304
