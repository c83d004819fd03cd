#!/bin/sh
# GPU host: the allreduce suite and the suite of every other collective
# (blocking and nonblocking) with 2 ranks on 2 GPUs and 4 ranks on 2 GPUs,
# default selection and "--mca coll gpu" alone; the small calls both in the
# resident kernel (the default with a GPU per rank; forced on for 4 ranks,
# exiting after every call; pairs cut into 8-byte pieces over many blocks)
# and launched (coll_gpu_persist 0); ordering
# after the application's copies at every coll_gpu_stream_order, with a
# negative control (order 0 must read stale data).  MPI_Reduce_local and the
# 3-buffer reduction on device memory (op/gpu), 1 and 2 ranks, and its
# bounded wait (op_gpu_timeout) behind a stream the application holds.
# Usage: run_gpu_tests.sh BUILDDIR [--quick].  Ends with "N passed, N failed".
# SKIP_HIER=1, ONLY_HIER=1, ONLY_SHARED=1 narrow it.
B=${1:-$(pwd)}
Q=$2
MPIRUN=${MPIRUN:-mpirun}
case ":$OMPI_MCA_mca_base_component_path:" in
  *":$B/.libs:"*) ;;
  *) export OMPI_MCA_mca_base_component_path="${OMPI_MCA_mca_base_component_path:+$OMPI_MCA_mca_base_component_path:}$B/.libs" ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
pass=0; fail=0
# virtual nodes: the hierarchical path (UCX between nodes) on one host --
# 2 nodes x 1 rank, 2 nodes x 2 ranks (2 ranks per GPU), 2 + 1 ranks
# (uneven: leaders), 4 nodes x 1 rank, many small slices with recursive
# doubling, TCP only, the fold of 2 nodes on the device (coll_gpu_net_device_fold),
# and "--mca coll gpu" alone (the node communicators
# then live on the adopted fallbacks); a config word with "=" sets an
# environment variable
V="--mca:coll_gpu_virtual_nodes"
HIER_CFGS="hier:test_gpu_allreduce:2:$V:2 hier:test_gpu_allreduce:4:$V:2 hier:test_gpu_allreduce:3:$V:2
hier:test_gpu_allreduce:4:$V:4 hier:test_gpu_allreduce:4:$V:2:--mca:coll_gpu_net_slot_bytes:65536:--mca:coll_gpu_net_algorithm:2
hier:test_gpu_colls:2:$V:2 hier:test_gpu_colls:4:$V:2 hier:test_gpu_colls:3:$V:2 hier:test_gpu_colls:4:$V:4
hier:test_gpu_allreduce:2:$V:2:UCX_TLS=tcp,self hier:test_gpu_colls:4:--mca:coll:gpu:$V:2
hier:test_gpu_allreduce:2:$V:2:--mca:coll_gpu_net_device_fold:1 hier:test_gpu_colls:2:$V:2:--mca:coll_gpu_net_device_fold:1
hier:test_gpu_allreduce:4:$V:2:--mca:coll_gpu_net_device_fold:1 hier:test_gpu_colls:4:$V:2:--mca:coll_gpu_net_device_fold:1"
[ "${SKIP_HIER:-0}" = 1 ] && HIER_CFGS=""
[ "${ONLY_HIER:-0}" = 1 ] && ONLY=1
# ONLY_SHARED=1: only the checks of ranks sharing a GPU (below)
[ "${ONLY_SHARED:-0}" = 1 ] && { ONLY=1; HIER_CFGS=""; }
for cfg in "test_gpu_allreduce 2" "test_gpu_allreduce 4" "test_gpu_allreduce 2 --mca coll gpu" \
           "test_gpu_allreduce 4 --mca coll_gpu_allreduce_algorithm twoshot" \
           "test_gpu_colls 2" "test_gpu_colls 4" "test_gpu_colls 2 --mca coll gpu" \
           "test_gpu_persistent 2" "test_gpu_persistent 4" \
           "test_gpu_enqueue 2" "test_gpu_enqueue 4" \
           "test_gpu_enqueue 2 --mca coll_gpu_timeout 3 GPUCOLL_TEST_ENQUEUE=timeout" \
           "test_gpu_colls 4 --mca coll_gpu_bcast_chain_min 0" \
           "test_gpu_colls 2 --mca coll_gpu_xchg_split 1 --mca coll_gpu_xchg_nblocks 64" \
           "test_gpu_allreduce 2 --mca coll_gpu_persist 0" "test_gpu_colls 2 --mca coll_gpu_persist 0" \
           "test_gpu_allreduce 4 --mca coll_gpu_persist 1 --mca coll_gpu_persist_idle_us 1" \
           "test_gpu_colls 4 --mca coll_gpu_persist 1 --mca coll_gpu_persist_idle_us 1" \
           "test_gpu_colls 2 --mca coll_gpu_persist_piece_bytes 8" \
           "test_gpu_allreduce 2 --mca coll_gpu_persist_piece_bytes 8" \
           "test_gpu_allreduce 2 --mca coll_gpu_stream_order 2" \
           "test_gpu_colls 4 --mca coll_gpu_paced 0" "test_gpu_allreduce 2 --mca coll_gpu_paced 1" \
           "test_gpu_colls 2 --mca coll_gpu_paced 1 --mca coll_gpu_paced_scratch_bytes 65536" \
           "test_gpu_allreduce 4 --mca coll_gpu_paced_scratch_bytes 262144" \
           "test_gpu_allreduce 2 --mca coll_gpu_stream_order 0 GPUCOLL_TEST_ORDER=stale" \
           "test_gpu_direct 2" "test_gpu_direct 4" \
           "test_gpu_comm_memory 2 --mca coll_gpu_pool 1" "test_gpu_comm_memory 4 --mca coll_gpu_pool 1" \
           "test_gpu_comm_memory 2 --mca coll_gpu_pool 0 GPU_TEST_POOL_COMMS=0" \
           "test_gpu_pairs 2" "test_gpu_pairs 3" "test_gpu_pairs 4" \
           "test_gpu_put 2" "test_gpu_put 4" "test_gpu_put 2 --mca coll_gpu_put_min 1 --mca coll_gpu_persist 0" \
           "test_gpu_put 4 --mca coll_gpu_put_min 1 --mca coll_gpu_persist 0" \
           "test_gpu_put 2 --mca coll_gpu_put_min 1 --mca coll_gpu_persist 0 --mca coll_gpu_put_read 1" \
           "test_gpu_reduce_local 1" "test_gpu_reduce_local 2" \
           "test_gpu_half 2" "test_gpu_half 4" "test_gpu_half 2 --mca coll_gpu_persist 0" \
           "test_gpu_half 4 --mca coll_gpu_allreduce_algorithm twoshot" \
           "test_gpu_reduce_local 1 --mca op_gpu_timeout 1 GPUCOLL_TEST_REDUCE_LOCAL=timeout" \
           $HIER_CFGS; do
  envs=""
  case $cfg in
    hier:*) cfg=$(echo "${cfg#hier:}" | tr ':' ' ') ;;
    *) [ -n "${ONLY:-}" ] && continue ;;
  esac
  set -- $cfg
  prog=$1; np=$2; shift 2
  args=""
  for w in "$@"; do case $w in *=*) envs="$envs $w" ;; *) args="$args $w" ;; esac; done
  echo "== $prog np $np$args$envs"
  out=$(env $envs $MPIRUN --oversubscribe --bind-to none -np $np $args "$B/test/gpu/$prog" $Q 2>&1)
  echo "$out" | grep -E "FAIL|passed|SKIP|coll/gpu|rank" | head -40
  p=$(echo "$out" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\1/p' | tail -1)
  f=$(echo "$out" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\2/p' | tail -1)
  [ -n "$p" ] || { p=0; f=1; echo "(no summary: crashed)"; echo "$out" | tail -20; }
  pass=$((pass+p)); fail=$((fail+f))
done
# MPICH's stream API under plain MPI_Init (test/mpi/test_mpix_stream: collectives,
# MINLOC pairs, a user op, point to point, eager and graph-captured) and the
# MPICH-style demo, 2 and 4 ranks on the visible GPUs
if [ -z "${ONLY:-}" ]; then
  for np in 2 4; do
    echo "== test_mpix_stream np $np (plain MPI_Init)"
    out=$($MPIRUN --oversubscribe --bind-to none -np $np "$B/test/mpi/test_mpix_stream" 2>&1)
    echo "$out" | grep -E "FAIL|passed|SKIP|rank" | head -20
    if echo "$out" | grep -q "SKIP"; then :
    elif echo "$out" | grep -qE 'test_mpix_stream: [0-9]+ passed, 0 failed'; then
      pass=$((pass+1))
    else
      fail=$((fail+1)); echo "FAIL test_mpix_stream np $np"; echo "$out" | tail -10
    fi
    # across 2 virtual nodes (libgpucoll's transport over coll/gpu's UCX) and
    # on datatypes with gaps (against Open MPI's host answers)
    for run in "test_mpix_stream --mca coll_gpu_virtual_nodes 2" "test_mpix_types" \
               "test_mpix_types --mca coll_gpu_virtual_nodes 2"; do
      prog=${run%% *}
      args=${run#"$prog"}
      echo "== $prog np $np$args"
      out=$($MPIRUN --oversubscribe --bind-to none -np $np $args "$B/test/mpi/$prog" 2>&1)
      if echo "$out" | grep -q "SKIP"; then :
      elif echo "$out" | grep -qE "$prog: [0-9]+ passed, 0 failed"; then
        pass=$((pass+1))
      else
        fail=$((fail+1)); echo "FAIL $prog np $np$args"; echo "$out" | tail -10
      fi
    done
    out=$($MPIRUN --oversubscribe --bind-to none -np $np "$B/demo/mpix_enqueue_demo" 2>&1)
    echo "$out" | grep -E "demo|replay" | head -3
    if echo "$out" | grep -q "no GPU present"; then :
    elif echo "$out" | grep -q "graph replays: correct"; then
      pass=$((pass+1))
    else
      fail=$((fail+1)); echo "FAIL mpix_enqueue_demo np $np (plain MPI_Init)"
    fi
  done
fi
# a real client: mpi4py with CuPy float32/complex64/float16 and PyTorch bfloat16 device arrays
# (test/gpu/test_mpi4py_gpu.py), 2 and 4 ranks and 8 on the visible GPUs; it says SKIP without
# mpi4py, CuPy or a GPU
if [ -z "${ONLY:-}" ]; then
  S=$(cd "$(dirname "$0")/.." && pwd)
  for np in 2 4 8; do
    echo "== test_mpi4py_gpu np $np"
    out=$($MPIRUN --oversubscribe --bind-to none -np $np python3 "$S/test/gpu/test_mpi4py_gpu.py" \
      "$B/.libs/libgpucoll.so" 2>&1)
    echo "$out" | grep -E "FAIL|SKIP|passed|ranks" | head -10
    if echo "$out" | grep -q "^SKIP"; then :
    elif echo "$out" | grep -qE 'test_mpi4py_gpu: [1-9][0-9]* passed, 0 failed'; then
      pass=$((pass+1))
    else
      fail=$((fail+1)); echo "FAIL test_mpi4py_gpu np $np"; echo "$out" | tail -10
    fi
  done
fi
# the virtual-node runs above really took the hierarchy: the timing file names it
if [ -n "$HIER_CFGS" ]; then
  tf=$(mktemp -d)
  $MPIRUN --bind-to none -np 4 --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_timing_file "$tf/t" \
    "$B/test/bench/gpucoll_bench" -c allreduce -e 1048576 -n 2 --no-nccl > /dev/null 2>&1
  if grep -q '"algo":"hier rails' "$tf"/t.*; then
    pass=$((pass+1)); echo "PASS virtual nodes: allreduce ran hierarchically ($(grep -c hier "$tf"/t.* | tail -1) records)"
  else
    fail=$((fail+1)); echo "FAIL virtual nodes: no hierarchical allreduce in the timing file"
  fi
  rm -rf "$tf"
fi
# the plan gpucoll-topo prints before a run is what the run does: 4 ranks as 2
# virtual nodes of 2, one channel, each hierarchical call's label in the timing
# file against the plan's for its collective and size
if [ -n "$HIER_CFGS" ] && [ -x "$B/tools/gpucoll-topo" ]; then
  tf=$(mktemp -d); S=$(cd "$(dirname "$0")/.." && pwd)
  for c in allreduce bcast reduce allgather reduce_scatter; do
    $MPIRUN --bind-to none -np 4 --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_net_channels 1 \
      --mca coll_gpu_timing_file "$tf/$c" "$B/test/bench/gpucoll_bench" -c $c -e 67108864 -n 2 \
      --no-nccl > /dev/null 2>&1
  done
  out=$(python3 "$S/test/topo/check_plan_trace.py" --topo "$B/tools/gpucoll-topo" \
    --file "$S/test/topo/fixtures/h200x2.xml" --nodes 2 --gpus-per-node 2 --channels 1 "$tf"/* 2>&1)
  if echo "$out" | grep -q ' 0 failed'; then
    pass=$((pass+1)); echo "PASS virtual nodes: the run's algorithms are the plan's ($(echo "$out" | tail -1))"
  else
    fail=$((fail+1)); echo "FAIL virtual nodes: the run's algorithms differ from the plan's"; echo "$out" | tail -10
  fi
  rm -rf "$tf"
fi
# nonblocking and persistent collectives on the hierarchy's thread across 2 and 4 virtual nodes
# (device buffers, 4 ranks): test_hier_nb (allreduce, bcast, reduce, allgather,
# reduce_scatter_block) and test_hier_nbv (the v collectives; scan on its reversed-rank
# communicator staged) pass, and coll_gpu_verbose's lines show each collective ran there
hier_nb() { # program, what it covers, the collectives that must have run on the thread
  prog=$1; what=$2; shift 2
  { [ -n "$HIER_CFGS" ] && [ -x "$B/test/mpi/$prog" ]; } || return 0
  for nv in 2 4; do
    out=$($MPIRUN --bind-to none -np 4 --mca coll_gpu_virtual_nodes $nv --mca coll_gpu_verbose 10 \
      "$B/test/mpi/$prog" 2>&1)
    miss=""
    for c in "$@"; do
      echo "$out" | grep -q "nonblocking $c ran on the hierarchy's thread (hier .*): success" || miss="$miss $c"
    done
    if echo "$out" | grep -q '^[1-9][0-9]* passed, 0 failed$' && [ -z "$miss" ]; then
      pass=$((pass+1)); echo "PASS $nv virtual nodes: nonblocking/persistent ${what}on the hierarchy's thread, $(echo "$out" | grep ' failed$' | tail -1)"
    else
      fail=$((fail+1)); echo "FAIL $nv virtual nodes: nonblocking/persistent ${what}on the hierarchy's thread (not there:$miss)"; echo "$out" | grep -E 'FAIL|failed|error' | head -10
    fi
  done
}
hier_nb test_hier_nb "" allreduce bcast reduce allgather reduce_scatter_block
hier_nb test_hier_nbv "v collectives " gather gatherv scatter scatterv allgatherv alltoall alltoallv \
  alltoallw reduce_scatter scan exscan
# sides that move nothing from NULL (count 0) keep a call on a GPU path: test_null_sides
# passes at np 2-4 and the blocking alltoallv / neighbourhood calls leave timing records (a
# staged blocking call leaves none)
if [ -x "$B/test/mpi/test_null_sides" ]; then
  for np in 2 3 4; do
    tf=$(mktemp -d)
    out=$($MPIRUN --bind-to none -np $np --mca coll_gpu_timing_file "$tf/t" "$B/test/mpi/test_null_sides" 2>&1)
    miss=""
    for c in alltoallv gatherv scatterv $( [ $np -ge 3 ] && echo neighbor_allgatherv neighbor_alltoallv ); do
      cat "$tf"/t.* 2>/dev/null | grep -qE "\"coll\":\"$c\",\"algo\":\"[^\"]*\",\"bytes\":[0-9]+,\"blocking\":1" || miss="$miss $c"
    done
    if echo "$out" | grep -q '^[1-9][0-9]* passed, 0 failed$' && [ -z "$miss" ]; then
      pass=$((pass+1)); echo "PASS np $np: NULL sides of count 0 on GPU paths, $(echo "$out" | grep ' failed$' | tail -1)"
    else
      fail=$((fail+1)); echo "FAIL np $np: NULL sides of count 0 (not on a GPU path:$miss)"; echo "$out" | grep -E 'FAIL|failed' | head -5
    fi
    rm -rf "$tf"
  done
  # across 2 virtual nodes alltoallv with a NULL send side of count 0 runs on the hierarchy
  # (the receive buffer stands for it there); before, every rank staged it
  if [ -n "$HIER_CFGS" ]; then
    tf=$(mktemp -d)
    out=$($MPIRUN --bind-to none -np 4 --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_timing_file "$tf/t" \
      "$B/test/mpi/test_null_sides" 2>&1)
    if echo "$out" | grep -q '^[1-9][0-9]* passed, 0 failed$' &&
       cat "$tf"/t.* 2>/dev/null | grep -qE '"coll":"alltoallv","algo":"hier pairs'; then
      pass=$((pass+1)); echo "PASS 2 virtual nodes: NULL send side of alltoallv on the hierarchy, $(echo "$out" | grep ' failed$' | tail -1)"
    else
      fail=$((fail+1)); echo "FAIL 2 virtual nodes: NULL send side of alltoallv (not hierarchical, or wrong)"; echo "$out" | grep -E 'FAIL|failed' | head -5
    fi
    rm -rf "$tf"
  fi
fi
# gather(v), scatter(v), allgatherv, alltoall(v), reduce_scatter, (ex)scan across 2 and 4
# virtual nodes: the
# conformance test passes and the timing file names each one's hierarchical label
if [ -n "$HIER_CFGS" ]; then
  for nv in 2 4; do
    tf=$(mktemp -d)
    out=$($MPIRUN --bind-to none -np 4 --mca coll_gpu_virtual_nodes $nv --mca coll_gpu_timing_file "$tf/t" \
      "$B/test/conform/test_conform" --quick --mem device 2>&1)
    miss=""
    for l in '"algo":"hier leaders: (gather/)?to-root' '"algo":"hier leaders: from-root(/scatter)?"' \
             '"coll":"allgatherv","algo":"hier leaders: (allgather|copy)/ring(/bcast)? \+ copy' \
             '"coll":"alltoallv?","algo":"hier pairs: (alltoall|copy)/direct' \
             '"coll":"reduce_scatter","algo":"hier (rails|leaders): .* \+ copy' \
             '"coll":"(ex)?scan","algo":"hier leaders: (scan|copy)/ring(/bcast)? \+ fold'; do
      cat "$tf"/t.* 2>/dev/null | grep -qE "$l" || miss="$miss [$l]"
    done
    if echo "$out" | grep -q ' 0 failed$' && [ -z "$miss" ]; then
      pass=$((pass+1)); echo "PASS $nv virtual nodes: gather(v)/scatter(v)/allgatherv/alltoall(v)/reduce_scatter hierarchical, conformance $(echo "$out" | grep ' failed$' | tail -1)"
    else
      fail=$((fail+1)); echo "FAIL $nv virtual nodes: gather/scatter/allgatherv/alltoall/reduce_scatter conformance or labels (missing:$miss)"; echo "$out" | grep -E 'FAIL|failed' | head -10
    fi
    rm -rf "$tf"
  done
fi
# barrier, alltoallw and the neighbourhood collectives across 2 and 4 virtual nodes: both
# conformance programs pass and the timing file names each one's hierarchical label
# (barrier: the one-byte allreduce's; alltoallw and the neighbourhoods: alltoallv's pairs)
if [ -n "$HIER_CFGS" ]; then
  for nv in 2 4; do
    tf=$(mktemp -d)
    out=$($MPIRUN --bind-to none -np 4 --mca coll_gpu_virtual_nodes $nv --mca coll_gpu_timing_file "$tf/t" \
      "$B/test/conform/test_conform" --quick --mem device 2>&1)
    out2=$($MPIRUN --bind-to none -np 4 --mca coll_gpu_virtual_nodes $nv --mca coll_gpu_timing_file "$tf/n" \
      --mca coll_gpu_verbose 10 "$B/test/conform/test_conform_nbr" --quick 2>&1)
    miss=""
    # their nonblocking and persistent forms on the hierarchy's thread (coll_gpu_hier_nb.c)
    for c in neighbor_allgather neighbor_alltoall neighbor_alltoallv; do
      echo "$out2" | grep -q "nonblocking $c ran on the hierarchy's thread (hier .*): success" || miss="$miss [nonblocking $c]"
    done
    for l in '"coll":"barrier","algo":"hier ' '"coll":"alltoallw","algo":"hier pairs: ' \
             '"coll":"neighbor_allgatherv?","algo":"hier pairs: ' \
             '"coll":"neighbor_alltoall[vw]?","algo":"hier pairs: '; do
      cat "$tf"/t.* "$tf"/n.* 2>/dev/null | grep -qE "$l" || miss="$miss [$l]"
    done
    if echo "$out" | grep -q ' 0 failed$' && echo "$out2" | grep -q ' 0 failed$' && [ -z "$miss" ]; then
      pass=$((pass+1)); echo "PASS $nv virtual nodes: barrier/alltoallw/neighbourhoods hierarchical, conformance $(echo "$out" | grep ' failed$' | tail -1), neighbourhoods $(echo "$out2" | grep ' failed$' | tail -1)"
    else
      fail=$((fail+1)); echo "FAIL $nv virtual nodes: barrier/alltoallw/neighbourhoods conformance or labels (missing:$miss)"; echo "$out$out2" | grep -E 'FAIL|HANG|failed' | head -10
    fi
    rm -rf "$tf"
  done
fi
[ -n "${ONLY:-}" ] && [ "${ONLY_SHARED:-0}" != 1 ] && { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }
# 4 ranks on 2 GPUs: blocking calls took the host-paced rounds (the timing
# file names the algorithm; small allreduces stage by default there, so
# coll_gpu_shared_staged_max 0), and not with coll_gpu_paced 0
tf=$(mktemp -d)
$MPIRUN --oversubscribe --bind-to none -np 4 --mca coll_gpu_timing_file "$tf/p" \
  --mca coll_gpu_shared_staged_max 0 \
  "$B/test/bench/gpucoll_bench" -c allreduce -e 65536 -n 2 --no-nccl > /dev/null 2>&1
$MPIRUN --oversubscribe --bind-to none -np 4 --mca coll_gpu_timing_file "$tf/d" \
  "$B/test/bench/gpucoll_bench" -c allreduce -b 65536 -e 1048576 -n 2 --no-nccl > /dev/null 2>&1
$MPIRUN --oversubscribe --bind-to none -np 4 --mca coll_gpu_paced 0 --mca coll_gpu_timing_file "$tf/k" \
  "$B/test/bench/gpucoll_bench" -c allreduce -e 65536 -n 2 --no-nccl > /dev/null 2>&1
if grep -q '"algo":"host-paced"' "$tf"/p.* && ! grep -q '"algo":"host-paced"' "$tf"/k.* &&
   grep -q '"algo":"one-shot"' "$tf"/k.*; then
  pass=$((pass+1)); echo "PASS shared GPUs: blocking calls host-paced ($(cat "$tf"/p.* | grep -c host-paced) records)"
else
  fail=$((fail+1)); echo "FAIL shared GPUs: timing files do not show host-paced / launched as expected"
fi
# defaults there: allreduces up to 512 KiB stage (no record), 1 MiB host-paced
if [ "$(cat "$tf"/d.* | grep -c '"algo":"host-paced"')" -gt 0 ] &&
   ! grep '"algo":"host-paced"' "$tf"/d.* | grep -q '"bytes":\(65536\|131072\|262144\|524288\),'; then
  pass=$((pass+1)); echo "PASS shared GPUs without MPS: allreduces up to 512 KiB stage, 1 MiB runs host-paced"
else
  fail=$((fail+1)); echo "FAIL shared GPUs without MPS: the default did not stage small allreduces"
  grep -h '"algo"' "$tf"/d.* | head -5
fi
rm -rf "$tf"
[ "${ONLY_SHARED:-0}" = 1 ] && { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }
# the pair types on the GPU: long double int reductions took the wide path
# (the timing file names it, blocking and from progress) and the enqueued
# allreduce of every pair type ran as kernels on the stream (verbose log)
if [ -z "${ONLY:-}" ]; then
  tf=$(mktemp -d)
  out=$(GPUCOLL_STREAM_VERBOSE=1 $MPIRUN --oversubscribe --bind-to none -np 2 -x GPUCOLL_STREAM_VERBOSE \
        --mca coll_gpu_timing_file "$tf/w" --mca coll_gpu_verbose 20 "$B/test/gpu/test_gpu_pairs" 64 2>&1)
  missing=""
  for c in allreduce reduce reduce_scatter_block reduce_scatter scan exscan; do
    grep -q "\"coll\":\"$c\",\"algo\":\"wide: moved, folded\"" "$tf"/w.* || missing="$missing $c"
    grep -q "\"coll\":\"$c\",\"algo\":\"wide: moved, folded, from progress\"" "$tf"/w.* ||
      missing="$missing i$c"
  done
  for t in short_int 2int float_int double_int long_int long_double_int; do
    echo "$out" | grep -q "MPIX_Allreduce_enqueue on .*: [0-9]* $t, .*kernels on the stream" ||
      missing="$missing enqueue:$t"
  done
  # enqueued reduce and reduce_scatter_block of the pairs: the allreduce kernels (libgpucoll)
  for f in MPIX_Reduce_enqueue MPIX_Reduce_scatter_block_enqueue; do
    echo "$out" | grep -q "gpucoll: $f of a pair type: coll/gpu's stream kernels" ||
      missing="$missing $f"
  done
  if [ -z "$missing" ] && echo "$out" | grep -qE 'test_gpu_pairs: [1-9][0-9]* passed, 0 failed'; then
    pass=$((pass+1)); echo "PASS pair types: long double int on the wide path, enqueued pairs (allreduce, reduce, reduce_scatter_block) as stream kernels"
  else
    fail=$((fail+1)); echo "FAIL pair types: not on the GPU:$missing"
    echo "$out" | grep -E "FAIL|passed" | head -5
  fi
  rm -rf "$tf"
fi
# reduce from 1 MiB to under coll_gpu_reduce_chain_min on 4 GPUs: the two-shot kernel to the
# root (the timing file names it at 1-32 MiB, not at 512 KiB nor 64 MiB), never with
# coll_gpu_reduce_twoshot_min 0; correctness: test_gpu_colls (reduce_ts_cases)
if [ -z "${ONLY:-}" ] && [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 4 ]; then
  tf=$(mktemp -d)
  $MPIRUN --bind-to none -np 4 --mca coll_gpu_timing_file "$tf/r" \
    "$B/test/bench/gpucoll_bench" -c reduce -b 524288 -e 67108864 -n 2 -r 1 --no-nccl > /dev/null 2>&1
  $MPIRUN --bind-to none -np 4 --mca coll_gpu_timing_file "$tf/z" --mca coll_gpu_reduce_twoshot_min 0 \
    "$B/test/bench/gpucoll_bench" -c reduce -b 524288 -e 67108864 -n 2 -r 1 --no-nccl > /dev/null 2>&1
  ts='"coll":"reduce","algo":"two-shot to root"'
  ok=1
  for b in 1048576 2097152 4194304 8388608 16777216 33554432; do
    cat "$tf"/r.* | grep "$ts" | grep -q "\"bytes\":$b," || ok=0
  done
  cat "$tf"/r.* | grep "$ts" | grep -qE '"bytes":(524288|67108864),' && ok=0
  cat "$tf"/z.* | grep -q "$ts" && ok=0
  grep -q '"coll":"reduce"' "$tf"/z.* || ok=0
  if [ $ok = 1 ]; then
    pass=$((pass+1)); echo "PASS reduce on 4 GPUs: two-shot to root at 1-32 MiB, not at 512 KiB or 64 MiB, never with coll_gpu_reduce_twoshot_min 0"
  else
    fail=$((fail+1)); echo "FAIL reduce on 4 GPUs: the timing files do not show the two-shot to root where expected"
    cat "$tf"/r.* | grep '"coll":"reduce"' | sed 's/,"blocking.*//' | sort | uniq -c | head -20
  fi
  rm -rf "$tf"
fi
# the plan gpucoll-topo prints is what runs (topo/gpu_topo_choice.h): every collective the
# benchmark times, 8 B-256 MiB, one rank per GPU at 2 and (with 4 GPUs) 4 ranks, each call's
# kernel in the timing file against `gpucoll-topo --terms` for the shape (test/topo/check_choice.py)
if [ -z "${ONLY:-}" ] && command -v python3 > /dev/null; then
  T=$(cd "$(dirname "$0")/.." && pwd)
  ng=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  for np in 2 4; do
    [ "$ng" -ge $np ] || continue
    tf=$(mktemp -d)
    for c in allreduce bcast reduce allgather reduce_scatter alltoall; do
      CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((np - 1))) $MPIRUN --bind-to none -np $np -x CUDA_VISIBLE_DEVICES \
        --mca coll_gpu_timing_file "$tf/$c" "$B/test/bench/gpucoll_bench" -c $c -b 8 -e 268435456 \
        -n 2 -r 1 --no-nccl > /dev/null 2>&1
    done
    if out=$(python3 "$T/test/topo/check_choice.py" --topo "$B/tools/gpucoll-topo" \
             --file "$T/test/topo/fixtures/dgx_h100.xml" --ranks $np "$tf"/*.jsonl 2>&1); then
      pass=$((pass+1)); echo "PASS the choice per size gpucoll-topo prints is what $np ranks ran ($(echo "$out" | tail -1))"
    else
      fail=$((fail+1)); echo "FAIL the choice per size at $np ranks"; echo "$out" | tail -12
    fi
    rm -rf "$tf"
  done
fi
# NVTX: every device collective is a range named after it, its size (the
# largest piece a rank moves: 2 MiB of a 4 MiB allgather on 2 ranks, in the resident kernel; 4 MiB of an 8 MiB one, launched) and
# its algorithm (a recorder
# library stands in for nsys through NVTX_INJECTION64_PATH)
# the conformance tests (test/conform): np 1-4 on the visible GPUs, and the
# bounded-wait test; test/gpu/conform_gpu.sh runs the issue's whole matrix
# (2 and 4 GPUs, MPS, 8 ranks)
if [ -z "${ONLY:-}" ]; then
  for cfg in "test_conform 1" "test_conform 2" "test_conform 3" "test_conform 4" \
             "test_conform_nbr 1" "test_conform_nbr 2" "test_conform_nbr 3" "test_conform_nbr 4" \
             "test_conform_timeout 2 --mca coll_gpu_timeout 2"; do
    set -- $cfg
    prog=$1; np=$2; shift 2
    echo "== $prog np $np $*"
    q=--quick
    [ "$prog" = test_conform_timeout ] && q=
    out=$($MPIRUN --oversubscribe --bind-to none -np $np "$@" "$B/test/conform/$prog" $q 2>&1)
    echo "$out" | grep -E "^(FAIL|conform: rank)|passed" | head -20
    if echo "$out" | grep -qE '^[0-9]+ passed, 0 failed$'; then
      pass=$((pass+1))
    else
      fail=$((fail+1)); echo "FAIL $prog np $np"
    fi
  done
fi
# libgpucoll's stream API under plain MPI_Init: MPICH's stream test and the
# demo at np 2 and 4, 4 ranks on 2 GPUs with and without MPS, the timeout case
if [ -z "${ONLY:-}" ]; then
  mo=$(mktemp -d)
  out=$(LIMIT=90 sh "$(dirname "$0")/gpu/mpix_gpu.sh" "$B" "$mo" 2>&1)
  echo "$out" | grep -E "^(PASS|FAIL)|passed"
  if echo "$out" | grep -qE '^[1-9][0-9]* passed, 0 failed$'; then
    pass=$((pass+1))
  else
    fail=$((fail+1)); echo "FAIL libgpucoll under plain MPI_Init (logs in $mo)"
  fi
fi

rec=$(mktemp -d)
NVTX_INJECTION64_PATH="$B/test/nvtx/libnvtx_recorder.so" NVTX_RECORD_FILE="$rec/nvtx" \
  $MPIRUN -x NVTX_INJECTION64_PATH -x NVTX_RECORD_FILE -np 2 \
  "$B/test/bench/gpucoll_bench" -c allgather -b 4194304 -e 8388608 -n 5 --no-nccl > /dev/null 2>&1
NVTX_INJECTION64_PATH="$B/test/nvtx/libnvtx_recorder.so" NVTX_RECORD_FILE="$rec/nvtx" \
  $MPIRUN -x NVTX_INJECTION64_PATH -x NVTX_RECORD_FILE -np 2 \
  "$B/test/bench/gpucoll_bench" -c allreduce -e 2097152 -n 5 --no-nccl > /dev/null 2>&1
# and without the resident kernel, which takes the small calls by default
NVTX_INJECTION64_PATH="$B/test/nvtx/libnvtx_recorder.so" NVTX_RECORD_FILE="$rec/nvtx" \
  $MPIRUN -x NVTX_INJECTION64_PATH -x NVTX_RECORD_FILE -np 2 --mca coll_gpu_persist 0 \
  "$B/test/bench/gpucoll_bench" -c allreduce -e 64 -n 5 --no-nccl > /dev/null 2>&1
pushes=$(cat "$rec"/nvtx.* 2>/dev/null | grep -c "^push coll/gpu")
pops=$(cat "$rec"/nvtx.* 2>/dev/null | grep -c "^pop")
echo "== NVTX ranges: $pushes pushed, $pops popped"
cat "$rec"/nvtx.* 2>/dev/null | grep "^push" | sort | uniq -c | sort -rn | head -4
if [ "$pushes" -gt 0 ] && [ "$pushes" -eq "$pops" ] &&
   grep -q "^push coll/gpu allreduce 8 B one-shot" "$rec"/nvtx.* &&
   grep -q "^push coll/gpu allreduce 8 B persistent" "$rec"/nvtx.* &&
   grep -q "^push coll/gpu allreduce 1048576 B persistent" "$rec"/nvtx.* &&
   grep -q "^push coll/gpu allreduce 2097152 B two-shot" "$rec"/nvtx.* &&
   grep -q "^push coll/gpu allgather 2097152 B persistent" "$rec"/nvtx.* &&
   grep -q "^push coll/gpu allgather 4194304 B put" "$rec"/nvtx.*; then
  pass=$((pass+1)); echo "PASS NVTX ranges name the collective, size and algorithm"
else
  fail=$((fail+1)); echo "FAIL NVTX ranges"
fi
rm -rf "$rec"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
