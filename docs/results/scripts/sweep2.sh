set -u
. .gpuhost/setup.sh >/dev/null 2>&1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$(pwd)/build/.libs"
B=build/test/bench/gpucoll_bench
run() { # label, coll, args...
  l=$1; c=$2; shift 2
  r=$(timeout 120 mpirun --bind-to none -np 2 "$@" $B -c $c -b 67108864 -e 2147483648 $NN 2>&1 | awk '/^ +[0-9]/{printf "%s ", $4}')
  echo "$l $c: $r"
}
NN=--no-nccl
run s64M_b128 allreduce --mca coll_gpu_nblocks 128
run s128M_b128 allreduce --mca coll_gpu_scratch_bytes 134217728 --mca coll_gpu_nblocks 128
run s256M_b128 allreduce --mca coll_gpu_scratch_bytes 268435456 --mca coll_gpu_nblocks 128
run s256M_b128_t768 allreduce --mca coll_gpu_scratch_bytes 268435456 --mca coll_gpu_nblocks 128 --mca coll_gpu_nthreads 768
run s512M_b128 allreduce --mca coll_gpu_scratch_bytes 536870912 --mca coll_gpu_nblocks 128
run s256M_b96 allreduce --mca coll_gpu_scratch_bytes 268435456 --mca coll_gpu_nblocks 96
NN=
run s256M_b128+nccl allreduce --mca coll_gpu_scratch_bytes 268435456 --mca coll_gpu_nblocks 128
