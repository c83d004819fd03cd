set -u
. .gpuhost/setup.sh >/dev/null 2>&1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$(pwd)/build/.libs"
B=build/test/bench/gpucoll_bench
run() { # label, coll, args...
  l=$1; c=$2; shift 2
  r=$(timeout 120 mpirun --bind-to none -np 2 "$@" $B -c $c -b 268435456 -e 2147483648 --no-nccl 2>&1 | awk '/^ +[0-9]/{printf "%s ", $NF}')
  echo "$l $c: $r"
}
timeout 60 mpirun --bind-to none -np 2 $B -c allreduce -b 8 -e 8 -n 10 --no-nccl 2>&1 | tail -5
start=$(date +%s)
run default allreduce
run s256M allreduce --mca coll_gpu_scratch_bytes 268435456
run s256M_b32 allreduce --mca coll_gpu_scratch_bytes 268435456 --mca coll_gpu_nblocks 32
run s256M_b128 allreduce --mca coll_gpu_scratch_bytes 268435456 --mca coll_gpu_nblocks 128
run s512M allreduce --mca coll_gpu_scratch_bytes 536870912
run s256M_t512_b128 allreduce --mca coll_gpu_scratch_bytes 268435456 --mca coll_gpu_nblocks 128 --mca coll_gpu_nthreads 512
run b32 allreduce --mca coll_gpu_nblocks 32
run default alltoall
run xs512M alltoall --mca coll_gpu_xchg_scratch_bytes 536870912
run t512 alltoall --mca coll_gpu_nthreads 512
run default allgather
run xs512M allgather --mca coll_gpu_xchg_scratch_bytes 536870912
echo "total $(( $(date +%s) - start )) s"
