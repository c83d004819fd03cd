#!/bin/bash
# Evidence for the nonblocking mixed-kind queue on one GPU (no MPS): the
# new test_gpu_mixed against the component of the commit before (5f7c540,
# carried as gprev: it must fail the nonblocking rows) and against this
# build with verbose 50 (how many calls were queued for the peers' kinds).
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/mixed_nb_check.sh $OUT
set -u
OUT=$1; B=${B:-$(pwd)/gslim}; P=${P:-$(pwd)/gprev}
base=$OMPI_MCA_mca_base_component_path
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{
  echo "== component of 5f7c540 with the new test (np 2, 8 B, coll_gpu_timeout 5)"
  OMPI_MCA_mca_base_component_path=$base:$P/.libs timeout 200 mpirun --bind-to none -np 2 \
    --mca coll_gpu_timeout 5 "$B/test/gpu/test_gpu_mixed" mixed 8 > "$OUT/prev_component.log" 2>&1
  echo "rc $?"; grep -E "^(PASS|FAIL)|passed," "$OUT/prev_component.log" | cut -c1-110
  grep -m3 -iE "error|timed out" "$OUT/prev_component.log" | cut -c1-200
  for np in 2 4; do
    echo "== this build, np $np, 8 B, verbose 50: calls queued for the peers' kinds"
    OMPI_MCA_mca_base_component_path=$base:$B/.libs timeout 200 mpirun --oversubscribe --bind-to none \
      -np $np --mca coll_gpu_verbose 50 "$B/test/gpu/test_gpu_mixed" mixed 8 > "$OUT/verbose_np$np.log" 2>&1
    echo "rc $?: $(grep -c 'queued (call.*waits for the kinds' "$OUT/verbose_np$np.log") waited for kinds, $(grep -c 'queued (call.*waits for its turn' "$OUT/verbose_np$np.log") for their turn; $(grep 'passed,' "$OUT/verbose_np$np.log")"
    grep -m2 "queued (call" "$OUT/verbose_np$np.log" | cut -c1-200
    gzip -f "$OUT/verbose_np$np.log"
  done
} 2>&1 | tee "$OUT/mixed_nb_check.log"
