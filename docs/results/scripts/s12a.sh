# 2026-11-22: resident-kernel phases of reduce, allreduce and bcast at
# 64 KiB-512 KiB (where reduce at 256 KiB sits at 0.6x NCCL)
. .gpuhost/setup.sh >/dev/null 2>&1
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
for c in reduce allreduce bcast; do
for s in 65536 131072 262144 524288; do
echo "== $c $s"
timeout 60 mpirun --bind-to none -np 2 --mca coll_gpu_verbose 10 $B/test/bench/gpucoll_bench -c $c -b $s -e $s -n 3000 -r 1 --no-nccl 2>&1 | grep -E "^ +[0-9]|persistent engine ran" | sed 's/.*coll_gpu.*rank \([0-9]\).*next post:/rank \1:/'
done
done
