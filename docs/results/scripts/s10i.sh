# 2026-11-22, final code: the OSU collective benchmarks unchanged on device buffers with
# validation (test/osu/osu_run.sh run), logs tarred back
set -u
. .gpuhost/setup.sh >/dev/null 2>&1
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
start=$(date +%s)
timeout 400 sh test/osu/osu_run.sh run $B/osu 2>&1 | tee /tmp/osu_run.log
(cd $B/osu && tar czf $OUT/osu_logs.tgz *.log) ; cp /tmp/osu_run.log $OUT/
echo "osu $(( $(date +%s) - start )) s"
