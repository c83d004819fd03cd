#!/bin/bash
# 4x H100, session 11 d: where test_mpix_types's point to point stalls
# (c/): p2p only, np 2, CUDA IPC off (the stall at "send the vector x 2,
# receive MPI_INT x 12"), coll_gpu_timeout 6 so the receive's own report
# prints, and the threads' stacks after 14 s where the host has gdb.
# Written in session 11, not run there (its device time was spent).
. .gpuhost/setup.sh
G=$PWD/gpurun
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
timeout 30 $M -np 2 -x GPUCOLL_STREAM_IPC=0 -x GPUCOLL_STREAM_VERBOSE=2 --mca coll_gpu_timeout 25 \
  $G/test/mpi/test_mpix_types p2p > /tmp/d.log 2>&1 &
sleep 14
echo "gdb: $(command -v gdb || echo none)"
for p in $(pgrep -f 'test_mpix_types p2p' | grep -v $$); do
  [ "$(cat /proc/$p/comm)" = test_mpix_types ] || continue
  echo "== pid $p"
  if command -v gdb >/dev/null; then
    timeout 10 gdb -batch -nx -ex "thread apply all bt 12" -p $p 2>/dev/null | grep -E "^Thread|^#" | cut -c1-160 | head -60
  else
    for t in /proc/$p/task/*; do echo "$(basename $t) $(cat $t/comm) $(cat $t/wchan 2>/dev/null)"; done
  fi
done
wait
grep -v "^\[" /tmp/d.log | grep -v "^PASS" | tail -14 | cut -c1-300
