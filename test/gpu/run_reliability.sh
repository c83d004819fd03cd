#!/bin/sh
# The reliability suite (issue: never hang a legal MPI program): every
# scenario of test_gpu_reliability at 8 B, 256 KiB and 16 MiB where the
# size matters, with 2 and 4 ranks on the visible GPUs, each run under a
# watchdog that turns a hang into a failure.
#   run_reliability.sh BUILDDIR [extra mpirun args...]
# The extra arguments select a path, e.g. "--mca coll_gpu_paced 0 --mca
# coll_gpu_persist 1" (the kernels, under MPS on one GPU).  RELIABILITY_NP
# (default "2 4") and RELIABILITY_SIZES narrow it.  Ends with
# "N passed, N failed".
B=${1:-$(pwd)}
[ $# -gt 0 ] && shift
MPIRUN=${MPIRUN:-mpirun}
NPS=${RELIABILITY_NP:-"2 4"}
SIZES=${RELIABILITY_SIZES:-"8 262144 16777216"}
TMO=${RELIABILITY_TIMEOUT:-4}
WATCHDOG=${RELIABILITY_WATCHDOG:-240}
case ":$OMPI_MCA_mca_base_component_path:" in
  *":$B/.libs:"*) ;;
  *) export OMPI_MCA_mca_base_component_path="${OMPI_MCA_mca_base_component_path:+$OMPI_MCA_mca_base_component_path:}$B/.libs" ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 GPUCOLL_TEST_TIMEOUT=$TMO
pass=0; fail=0
one() { # np, scenario, bytes, mpirun args...
  np=$1; sc=$2; by=$3; shift 3
  echo "== np $np $sc $by B $*"
  t0=$(date +%s)
  out=$(timeout -k 10 "$WATCHDOG" $MPIRUN --oversubscribe --bind-to none -np "$np" \
        --mca coll_gpu_timeout "$TMO" "$@" "$B/test/gpu/${PROG:-test_gpu_reliability}" "$sc" "$by" 2>&1)
  rc=$?
  echo "$out" | grep -E "^(PASS|FAIL|SKIP)|error string|after|could not|coll/gpu" | head -30
  p=$(echo "$out" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\1/p' | tail -1)
  f=$(echo "$out" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\2/p' | tail -1)
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "FAIL watchdog: np $np $sc $by B did not finish in $WATCHDOG s"; p=${p:-0}; f=$((${f:-0}+1))
  elif echo "$out" | grep -q "^SKIP"; then
    p=0; f=0
  elif [ -z "$p" ]; then
    p=0; f=1; echo "(no summary, exit $rc)"; echo "$out" | tail -15
  fi
  echo "   ($(( $(date +%s) - t0 )) s)"
  pass=$((pass+p)); fail=$((fail+f))
}
for np in $NPS; do
  for by in $SIZES; do
    for sc in cross blocking persistent userop; do
      one "$np" "$sc" "$by" "$@"
    done
  done
  one "$np" timeout 8 "$@"
  one "$np" timeout 262144 "$@"
  one "$np" staged 0 --mca coll_gpu_allreduce_algorithm staged "$@"
  one "$np" edge 0 "$@"
done
one 2 timeout 16777216 "$@"
# mixed memory kinds across ranks (host on some, device on others, device
# send + host receive, managed), every blocking collective
for np in $NPS; do
  for by in $SIZES; do
    PROG=test_gpu_mixed one "$np" mixed "$by" "$@"
  done
done
# mixed kinds across (virtual) nodes: a device rank asks the other nodes
# what their ranks passed (coll_gpu_kind_net.c); one rank a node and two
for by in $SIZES; do
  for np in $NPS; do
    PROG=test_gpu_mixed one "$np" mixed "$by" --mca coll_gpu_virtual_nodes 2 "$@"
  done
done
# a peer that stops calling, across (virtual) nodes: the kind queries and
# the staged nonblocking form are bounded and name the rank
for np in $NPS; do
  one "$np" timeout 8 --mca coll_gpu_virtual_nodes 2 "$@"
done
# across (virtual) nodes: nonblocking calls stage through libnbc's forms;
# with threads the communicator stages altogether (one UCX worker)
one 2 threads 262144 --mca coll_gpu_virtual_nodes 2 "$@"
for sc in cross blocking; do
  one 2 "$sc" 262144 --mca coll_gpu_virtual_nodes 2 "$@"
  one 4 "$sc" 8 --mca coll_gpu_virtual_nodes 2 "$@"
done
one 2 threads 8 "$@"
one 2 threads 262144 "$@"
one 2 sticky 8 "$@"
# a setup that cannot get its GPU memory stages, says so once per process
# (the small areas are made at setup: paced staging no GPU can hold)
oom() { # label, message, mpirun args...
  label=$1; msg=$2; shift 2
  out=$(timeout -k 10 "$WATCHDOG" $MPIRUN --oversubscribe --bind-to none -np 2 \
        "$@" "$B/test/gpu/test_gpu_reliability" oom 1024 2>&1)
  n=$(echo "$out" | grep -c "$msg")
  if echo "$out" | grep -q "^SKIP"; then :
  elif echo "$out" | grep -q "oom: 2 passed, 0 failed" && [ "$n" -ge 1 ] && [ "$n" -le 2 ]; then
    pass=$((pass+1)); echo "PASS $label: staged, results right, $n message(s) for 2 ranks"
  else
    fail=$((fail+1)); echo "FAIL $label ($n messages)"; echo "$out" | tail -15
  fi
}
oom "out of GPU memory at setup" "could not allocate its GPU scratch" \
    --mca coll_gpu_paced_scratch_bytes 1099511627776 "$@"
# the large areas, made at the first blocking call that needs them (two-shot
# forced, launched kernels): that growth fails, those calls stage, one message
oom "out of GPU memory at the first large call" "could not allocate its large-message" \
    --mca coll_gpu_scratch_bytes 1099511627776 --mca coll_gpu_xchg_scratch_bytes 1099511627776 \
    --mca coll_gpu_allreduce_algorithm twoshot --mca coll_gpu_persist 0 --mca coll_gpu_paced 0 \
    --mca coll_gpu_shared_direct 0 "$@"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
