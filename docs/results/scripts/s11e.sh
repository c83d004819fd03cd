# 2026-11-22, final code: three more allreduce runs 8 B-256 KiB (is 4 KiB
# reliably under 8 us?), then the OSU collective benchmarks unchanged on device
# buffers with validation (test/osu/osu_run.sh run), logs tarred back
. .gpuhost/setup.sh >/dev/null 2>&1
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
start=$(date +%s)
for i in 1 2 3; do
echo "run $i: $(timeout 60 mpirun --bind-to none -np 2 $B/test/bench/gpucoll_bench -c allreduce -b 8 -e 262144 --no-nccl 2>&1 | grep -E '^ +[0-9]' | awk '{printf "%s:%s ", $1, $2}')"
done | tee /tmp/repeat.log
cp /tmp/repeat.log $OUT/
timeout 330 sh test/osu/osu_run.sh run $B/osu 2>&1 | tee /tmp/osu_run.log
(cd $B/osu && tar czf $OUT/osu_logs.tgz *.log) ; cp /tmp/osu_run.log $OUT/
echo "total $(( $(date +%s) - start )) s"
