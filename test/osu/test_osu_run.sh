#!/bin/sh
# CPU check of osu_run.sh's verdicts, with a stand-in mpirun that prints
# OMB-style tables: all sizes "Pass" counts as passed, a "Fail" or a crash as
# failed, and osu_reduce_scatter stopped by OMB's own validation copy at its
# largest size as neither.  Exits 0 when every verdict is the expected one.
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/mpirun" <<'FAKE'
#!/bin/sh
case "$*" in
  *osu_reduce_scatter*)
    printf '# Size  Avg Latency(us)  Validation\n4    9.9    Pass\n8    9.8    Pass\n'
    echo "[osu_util_mpi.c:849] CUDA call 'cudaMemcpy((void *)temp_buffer, (void *)buffer, size * sizeof(float), cudaMemcpyDeviceToHost)' failed with 1: invalid argument"
    exit 1 ;;
  *osu_alltoall*) printf '1    7.4    Pass\n2    7.5    Fail\n'; exit 1 ;;
  *osu_bcast*) echo "Segmentation fault"; exit 139 ;;
  *) printf '4    8.3    Pass\n8    8.2    Pass\n'; exit 0 ;;
esac
FAKE
chmod +x "$tmp/mpirun"
out=$(PATH="$tmp:$PATH" OSU_BENCHES="osu_allreduce osu_bcast osu_reduce_scatter osu_alltoall" \
      sh "$here/osu_run.sh" run "$tmp" 2>&1); rc=$?
ok=1
expect() { echo "$out" | grep -q -- "$1" || { echo "missing: $1"; ok=0; }; }
expect 'osu_allreduce        valid        2 sizes validated  ok'
expect 'osu_bcast            valid        0 sizes validated  FAILED rc=139'
expect 'osu_alltoall         valid        1 sizes validated  FAILED rc=1'
expect 'osu_reduce_scatter   valid        2 sizes validated  all checked sizes pass; OMB validation defect'
expect '(2 run(s) stopped by the OMB reduce_scatter validation defect, not counted)'
# valid x4, sole: allreduce ok + alltoall failed; np4: allreduce, bcast (failed), reduce_scatter
expect '^3 passed, 4 failed$'
[ $rc -ne 0 ] || { echo "exit status 0 despite failures"; ok=0; }
[ $ok -eq 1 ] || { echo "$out"; exit 1; }
echo "osu_run.sh verdicts as expected"
