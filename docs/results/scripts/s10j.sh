# run on 2026-11-22: docs/results/h200x2_2026-11-22_resident_kernel/probe_2k_4k_h200x2.log
# 2026-11-22, final code: where between 2 and 4 KiB the allreduce gets its extra microsecond
# (2056 B = 257 lines: one receiver thread with a second line)
set -u
. .gpuhost/setup.sh >/dev/null 2>&1
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
for round in 1 2; do
for s in 2048 2056 2304 2560 3072 3584 4096; do
printf "%s:%s " $s "$(timeout 30 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c allreduce -b $s -e $s -n 3000 --no-nccl 2>&1 | grep -E '^ +[0-9]' | awk '{print $2}')"
done; echo
done
for s in 2048 2056 3072; do
echo "phases $s"
timeout 30 mpirun --bind-to none -np 2 --mca coll_gpu_verbose 10 $B/test/bench/gpucoll_bench -c allreduce -b $s -e $s -n 4000 -r 1 --no-nccl 2>&1 | grep -E "persistent engine ran" | sed 's/.*next post://'
done
