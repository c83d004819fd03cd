#!/bin/sh
# Everything that needs no GPU.  Usage: run_cpu_tests.sh BUILDDIR
# Ends with "N passed, N failed".
B=${1:-$(pwd)}
MPIRUN=${MPIRUN:-mpirun}
OMPI_LIB=$(dirname "$(mpicc --showme:libdirs | awk '{print $1}')/x")
DEFAULT_PATH=$(ompi_info --parsable --param mca base --level 9 2>/dev/null | sed -n 's/^mca:mca:base:param:mca_base_component_path:value://p' | tr -d '"')
[ -n "$DEFAULT_PATH" ] || DEFAULT_PATH=$OMPI_LIB/openmpi3
# a missing folder in the path stops Open MPI's component search: keep real ones
DEFAULT_PATH=$(echo "$DEFAULT_PATH" | tr ':' '\n' | while read -r d; do [ -d "$d" ] && printf '%s:' "$d"; done)
DEFAULT_PATH=${DEFAULT_PATH%:}
export OMPI_MCA_mca_base_component_path="$DEFAULT_PATH:$B/.libs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
pass=0; fail=0
run() { # name, command...
  name=$1; shift
  if out=$("$@" 2>&1); then pass=$((pass+1)); echo "PASS $name"
  else fail=$((fail+1)); echo "FAIL $name"; echo "$out" | tail -20; fi
}
run "unit: reduction functors vs MPI_Reduce_local" "$B/test/unit/test_reduce_ops"
run "unit: coll/gpu's headers match the libmpi they run in (struct sizes)" "$B/test/unit/test_ompi_layout"
run "unit: memory-kind board, two processes posting and reading 200000 calls" "$B/test/unit/test_kind_board"
run "unit: user-buffer IPC cache: once per allocation, freed ones logged and closed, bounded" "$B/test/unit/test_ipc_cache"
run "unit: large-message pool: shared per device, mapped once per peer process, leased, released in order" "$B/test/unit/test_pool"
run "unit: a communicator's device memory with the pool: own area within coll_gpu_pool_comm_bytes, 48 communicators within 1 GiB, all back at the last free" "$B/test/unit/test_comm_memory"
run "unit: topology table" "$B/test/unit/test_topo"
run "unit: collective plans emulated against host references" "$B/test/unit/test_plan"
run "unit: the kernel, protocol and blocks per collective and size at the defaults for 2-16 ranks" "$B/test/unit/test_topo_choice"
run "unit: long double int reductions: moved, folded in rank order, as the x87 compares" "$B/test/unit/test_wide"
run "unit: driver stand-in's device memory: host access faults, copies reach it, attributes, reuse" "$B/test/unit/test_fake_device" "$B/test/fake/libcuda.so.1"
T=$(cd "$(dirname "$0")/.." && pwd)
run "topology: fixtures -> rings, channels, trees, rails; cost model vs measured on 2 and 4 GPUs" "$B/test/unit/test_topo_plan" "$T/test/topo/fixtures" "$T/docs/results/h200x2_2026-11-22_resident_kernel" "$T/docs/results/h100x4_2026-11-27_s14_sweep"
run "OSU runner: pass, fail, crash and the OMB reduce_scatter defect get their verdicts" sh "$T/test/osu/test_osu_run.sh"
run "gpucoll-topo on a machine without GPU says what it could not see" sh -c "'$B/tools/gpucoll-topo' | grep -q 'not seen: no NVIDIA GPU'"
run "gpucoll-topo prints a 16-node DGX plan from a file" sh -c "'$B/tools/gpucoll-topo' --file '$T/test/topo/fixtures/dgx_h100.xml' --nodes 16 | grep -q 'rail: local 7 (gpu7) -> mlx5_7 (PIX)'"
run "gpucoll-topo on one node: the kernel, protocol and blocks per collective and size for 2, 4 and 8 GPUs; --terms for the GPU check" sh -c "
  for g in 2 4 8; do
    out=\$('$B/tools/gpucoll-topo' --file '$T/test/topo/fixtures/dgx_h100.xml' --gpus-per-node \$g) || exit 1
    for c in allreduce bcast reduce allgather reduce_scatter alltoall; do
      echo \"\$out\" | grep -A6 \"^  \$c\\\$\" | grep -q ' persistent  *LL  *64 blocks' || { echo \"\$g GPUs: no resident range for \$c\"; exit 1; }
    done
  done
  '$B/tools/gpucoll-topo' --file '$T/test/topo/fixtures/dgx_h100.xml' --gpus-per-node 4 | grep -A4 '^  reduce_scatter\$' | grep -q '4 MiB - 2 GiB  *put  *simple  *32 blocks' || { echo '4 GPUs: reduce_scatter from 4 MiB not the fold in 32 blocks'; exit 1; }
  '$B/tools/gpucoll-topo' --file '$T/test/topo/fixtures/dgx_h100.xml' --gpus-per-node 4 | grep -A4 '^  reduce\$' | grep -q '1 MiB - 32 MiB  *two-shot to root' || { echo '4 GPUs: no two-shot reduce range'; exit 1; }
  '$B/tools/gpucoll-topo' --file '$T/test/topo/fixtures/dgx_h100.xml' --gpus-per-node 4 --terms reduce_scatter | grep -qx '2097152 524288 persistent|LL|64' || { echo '--terms'; exit 1; }
  '$B/tools/gpucoll-topo' --file '$T/test/topo/fixtures/dgx_h100.xml' --gpus-per-node 4 --terms nothing > /dev/null 2>&1 && { echo 'an unknown collective accepted'; exit 1; }
  exit 0"
run "topology across nodes: the hierarchy's choice and price per collective and size, as the runtime chooses" "$B/test/unit/test_topo_hier" "$T/test/topo/fixtures" "$T"
run "gpucoll-topo --nodes 16: every collective's algorithm and predicted time, the allreduce switching, a calibration file" sh -c "
  out=\$('$B/tools/gpucoll-topo' --file '$T/test/topo/fixtures/dgx_h100.xml' --nodes 16) || exit 1
  for c in allreduce bcast reduce allgather reduce_scatter_block gather gatherv scatter scatterv allgatherv alltoall alltoallv reduce_scatter scan exscan alltoallw neighbor_allgather neighbor_allgatherv neighbor_alltoall neighbor_alltoallv neighbor_alltoallw; do
    echo \"\$out\" | grep -q \"^\$c (hierarchical\" || { echo \"no \$c plan\"; exit 1; }
  done
  echo \"\$out\" | grep -q '^staged across nodes' || exit 1
  echo \"\$out\" | grep -A1 '^staged across nodes' | grep -qE ' barrier( |\$)' || exit 1
  echo \"\$out\" | grep -A1 '^staged across nodes' | grep -qE ' (gather|gatherv|scatter|scatterv|allgatherv|alltoall|alltoallv|alltoallw|neighbor_[a-z]*|reduce_scatter|scan|exscan)( |\$)' && { echo 'a hierarchical collective listed as staged'; exit 1; }
  echo \"\$out\" | grep -q '2 KiB  hier leaders: gather/to-root ' || { echo 'no gather row'; exit 1; }
  echo \"\$out\" | grep -q '2 GiB  hier rails: reduce-scatter/ring/allgather  *64 ' || { echo 'no 2 GiB ring row'; exit 1; }
  echo \"\$out\" | grep -q '8 B  hier rails: reduce-scatter/recursive-doubling/allgather' || exit 1
  f=\$(mktemp); printf '# test\\nalpha_us 3\\nbeta_gbs 20\\n' > \$f
  '$B/tools/gpucoll-topo' --file '$T/test/topo/fixtures/dgx_h100.xml' --nodes 4 --calibration \$f | grep -q 'alpha 3.00 us per message, beta 20.00 GB/s per rank (calibration' || { rm -f \$f; echo 'calibration not read'; exit 1; }
  echo 'alpha_us 3' > \$f
  '$B/tools/gpucoll-topo' --file '$T/test/topo/fixtures/dgx_h100.xml' --nodes 4 --calibration \$f > /dev/null 2>&1 && { rm -f \$f; echo 'a file without beta_gbs accepted'; exit 1; }
  rm -f \$f"
run "calibrate_net.py recovers known alpha and beta from synthetic gpucoll_bench sweeps across nodes" python3 "$T/test/topo/calibrate_net.py" --topo "$B/tools/gpucoll-topo" --file "$T/test/topo/fixtures/dgx_h100.xml" --self-test
run "ompi_info lists coll gpu and every parameter with help" sh -c '
  out=$(ompi_info --param coll gpu --level 9) || exit 1
  echo "$out" | grep -q "MCA coll: gpu" || exit 1
  for p in priority verbose allreduce_algorithm oneshot_max scratch_bytes nblocks nthreads oneshot_blocks timeout fallback bcast_chain_min reduce_chain_min reduce_twoshot_min stream_order paced paced_scratch_bytes shared_staged_max nvtx timing_file xchg_scratch_bytes xchg_nblocks xchg_split put_min put_read put_ce pool pool_comm_bytes topo_file topo_dump hier virtual_nodes net_slot_bytes net_slots net_channels net_rndv_thresh net_direct net_algorithm net_latency_us net_bandwidth; do
    echo "$out" | grep -q "\"coll_gpu_$p\"" || { echo "missing coll_gpu_$p"; exit 1; }
  done'
# the defaults test_plan's test_reduce_way checks the reduce's way at
run "coll_gpu_reduce_twoshot_min 1 MiB, coll_gpu_reduce_chain_min 64 MiB (the reduce's ways in test_plan)" sh -c '
  out=$(ompi_info --parsable --param coll gpu --level 9) || exit 1
  echo "$out" | grep -q "^mca:coll:gpu:param:coll_gpu_reduce_twoshot_min:value:1048576\$" || { echo "$out" | grep twoshot_min; exit 1; }
  echo "$out" | grep -q "^mca:coll:gpu:param:coll_gpu_reduce_chain_min:value:67108864\$" || { echo "$out" | grep chain_min; exit 1; }'
run "no GPU: component declines and says why at verbose 1" sh -c "
  out=\$($MPIRUN -np 1 --mca coll_gpu_verbose 1 $B/test/mpi/test_host_colls 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'coll/gpu: declining' || { echo \"\$out\"; exit 1; }"
for np in 1 2 4; do
  run "host collectives, default selection, np $np" $MPIRUN --oversubscribe -np $np "$B/test/mpi/test_host_colls"
  run "host collectives, --mca coll gpu alone, np $np" $MPIRUN --oversubscribe --mca coll gpu -np $np "$B/test/mpi/test_host_colls"
done
# the enabled module on host buffers (the CUDA driver stand-in reports one
# device and no context): selection, enable and every entry point's hand-off
FAKE="env LD_LIBRARY_PATH=$B/test/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for np in 1 2 4; do
  for sel in "" "--mca coll gpu"; do
    run "enabled module (driver stand-in), host collectives${sel:+, $sel alone}, np $np" sh -c "
      out=\$($FAKE $MPIRUN --oversubscribe -np $np $sel --mca coll_gpu_verbose 1 $B/test/mpi/test_host_colls 2>&1) || { echo \"\$out\"; exit 1; }
      echo \"\$out\" | grep -q 'coll/gpu: enabled on MPI_COMM_WORLD ($np ranks)' || { echo \"\$out\"; echo 'module not enabled'; exit 1; }
      echo \"\$out\" | grep -q ' 0 failed' || { echo \"\$out\"; exit 1; }"
  done
done
# communicators across two (virtual) nodes: every rank posts its kinds and
# keeps a query receive on each communicator (coll_gpu_kind_net.c), freed
# communicators linger as ghosts; host collectives must not notice
for np in 2 4; do
  run "enabled module (driver stand-in), host collectives across 2 virtual nodes, np $np" sh -c "
    out=\$($FAKE $MPIRUN --oversubscribe -np $np --mca coll_gpu_virtual_nodes 2 $B/test/mpi/test_host_colls 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q ' 0 failed' || { echo \"\$out\"; exit 1; }"
  for t in 1 2; do
    # the kind queries themselves, without a GPU: host calls ask as device
    # calls would (1: every rank, all-device answers; 2: one node, host answers)
    run "kind queries across 2 virtual nodes (coll_gpu_kind_test_device $t), host collectives, np $np" sh -c "
      out=\$($FAKE $MPIRUN --oversubscribe -np $np --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_kind_test_device $t --mca coll_gpu_verbose 30 $B/test/mpi/test_host_colls 2>&1) || { echo \"\$out\"; exit 1; }
      echo \"\$out\" | grep -q ' 0 failed' || { echo \"\$out\"; exit 1; }
      echo \"\$out\" | grep -q \"node(s) say \$( [ $t = 1 ] && echo 'all device' || echo host) (success)\" || { echo \"\$out\" | tail -5; echo 'no query answered'; exit 1; }"
    run "kind queries across 2 virtual nodes (coll_gpu_kind_test_device $t), MPI_THREAD_MULTIPLE, np $np" sh -c "
      out=\$($FAKE $MPIRUN --oversubscribe -np $np --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_kind_test_device $t $B/test/mpi/test_host_threads 2>&1) || { echo \"\$out\"; exit 1; }
      echo \"\$out\" | grep -q ' 0 failed' || { echo \"\$out\"; exit 1; }"
  done
  run "kind queries across 2 virtual nodes: rank 1 stops calling, the others fail in 2 s naming it, np $np" sh -c "
    out=\$($FAKE $MPIRUN --oversubscribe -np $np --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_kind_test_device 1 --mca coll_gpu_timeout 2 $B/test/mpi/test_host_colls timeout 2 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q ' 1 passed, 0 failed' || { echo \"\$out\"; exit 1; }"
  # an earlier job's boards under this job's names (a reused jobid after an
  # abort): a peer must never read them (mca_coll_gpu_kind_init); a race at
  # the first call, so three runs (before the fix most failed)
  run "kind queries across 2 virtual nodes, an earlier job's board under every rank's name, np $np, 3 runs" sh -c "
    for i in 1 2 3; do
      out=\$($FAKE $MPIRUN --oversubscribe -np $np --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_kind_test_device 1 $T/test/mpi/stale_board.sh $B/test/mpi/test_host_colls 2>&1) || { echo \"\$out\"; exit 1; }
      echo \"\$out\" | grep -q ' 0 failed' || { echo \"\$out\"; exit 1; }
    done"
  run "enabled module (driver stand-in), MPI_THREAD_MULTIPLE across 2 virtual nodes, np $np" sh -c "
    out=\$($FAKE $MPIRUN --oversubscribe -np $np --mca coll_gpu_virtual_nodes 2 $B/test/mpi/test_host_threads 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q ' 0 failed' || { echo \"\$out\"; exit 1; }"
done
for np in 2 4; do
  run "enabled module (driver stand-in), MPI_THREAD_MULTIPLE: 4 threads on 4 communicators at once, np $np" sh -c "
    out=\$($FAKE $MPIRUN --oversubscribe -np $np $B/test/mpi/test_host_threads 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q ' 0 failed' || { echo \"\$out\"; exit 1; }"
done
# MPICH's MPIX stream extension (libgpucoll): the calling thread's stream
# runs every enqueued collective at once; a CUDA stream needs coll/gpu
for np in 1 2 4; do
  run "MPIX streams (libgpucoll): enqueue forms on the calling thread's stream, errors, np $np" sh -c "
    out=\$($MPIRUN --oversubscribe -np $np $B/test/mpi/test_mpix 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q ' 0 failed' || { echo \"\$out\"; exit 1; }"
done
run "MPIX streams: a CUDA stream without coll/gpu says it is not loaded" sh -c "
  out=\$($MPIRUN --oversubscribe -np 2 --mca coll ^gpu $B/test/mpi/test_mpix noload 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'coll/gpu is not loaded into this Open MPI' || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q ' 0 failed' || { echo \"\$out\"; exit 1; }"
# MPICH's half-precision names (mpix_gpu.h, libgpucoll) on host buffers:
# reduced through coll/gpu's handles; without coll/gpu moved but refused
for np in 1 2 4; do
  run "MPIX_C_FLOAT16/MPIX_BFLOAT16: SUM/PROD/MIN/MAX in Allreduce, Iallreduce, Reduce, Scan, Reduce_local; BAND refused; np $np" sh -c "
    out=\$($MPIRUN --oversubscribe -np $np $B/test/mpi/test_mpix_half 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'test_mpix_half: [1-9][0-9]* passed, 0 failed' || { echo \"\$out\"; exit 1; }"
done
run "GPU half-precision test (test_gpu_half) skips cleanly without a GPU" sh -c "$MPIRUN -np 2 --oversubscribe $B/test/gpu/test_gpu_half | grep -q 'SKIP test_gpu_half: no CUDA device'"
run "MPIX_C_FLOAT16/MPIX_BFLOAT16 without coll/gpu: moved, reductions refused (MPI_ERR_OP), np 2" sh -c "
  out=\$($MPIRUN --oversubscribe -np 2 --mca coll ^gpu $B/test/mpi/test_mpix_half noload 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'test_mpix_half: [1-9][0-9]* passed, 0 failed' || { echo \"\$out\"; exit 1; }"
run "MPIX streams: with coll/gpu loaded the library finds its entry (driver stand-in), np 2" sh -c "
  out=\$($FAKE $MPIRUN --oversubscribe -np 2 $B/test/mpi/test_mpix loaded 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'not a valid CUDA stream' || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q ' 0 failed' || { echo \"\$out\"; exit 1; }"
run "enabled module (driver stand-in), persistent collectives, np 2" sh -c "$FAKE $MPIRUN --oversubscribe -np 2 $B/test/gpu/test_gpu_persistent | grep -q ' 0 failed'"
# the conformance test (test/conform): every collective, every form, on
# the stand-in's device memory (which the host cannot touch), host memory
# and both mixed; then with no driver at all (host buffers)
conform() { # name, environment prefix, np, test options
  run "conformance test: $1, np $3" sh -c "
    out=\$($2 $MPIRUN --oversubscribe -np $3 $B/test/conform/test_conform --quick $4 2>&1)
    echo \"\$out\" | grep -q ' 0 failed\$' || { echo \"\$out\" | grep -E 'FAIL|HANG|CRASH|passed' | head -30; exit 1; }"
}
for np in 1 2 3 4; do
  conform "device buffers (driver stand-in)" "$FAKE" $np "--mem device"
done
for np in 2 4; do
  conform "host buffers (driver stand-in)" "$FAKE" $np "--mem host"
  conform "device and host buffers on alternate ranks (driver stand-in)" "$FAKE" $np "--mem mixed"
done
# the half-precision types (MPIX_C_FLOAT16/MPIX_BFLOAT16) are in every run
# above; that their cases run at all (coll/gpu made the handles):
run "conformance test: MPIX_C_FLOAT16/MPIX_BFLOAT16 cases are in the default run (driver stand-in), np 2" sh -c "
  out=\$($FAKE $MPIRUN --oversubscribe -np 2 $B/test/conform/test_conform --quick --mem device --only FLOAT16 2>&1)
  echo \"\$out\" | grep -qE '^[1-9][0-9]* passed, 0 failed\$' || { echo \"\$out\" | grep -E 'FAIL|HANG|CRASH|passed' | head -30; exit 1; }"
run "conformance test: no CUDA driver, host buffers, np 2" sh -c "
  out=\$($MPIRUN --oversubscribe -np 2 $B/test/conform/test_conform --quick 2>&1)
  echo \"\$out\" | grep -q 'conform: no CUDA driver: host buffers only' || { echo \"\$out\" | tail -5; exit 1; }
  echo \"\$out\" | grep -q ' 0 failed\$' || { echo \"\$out\" | grep -E 'FAIL|HANG|CRASH|passed' | head -30; exit 1; }"
# sides that move nothing from NULL (count 0): alltoallv, allgatherv, gatherv, scatterv and
# the neighbourhoods on a ring, blocking and nonblocking, one node and 2 virtual nodes (here
# staged; the GPU suite checks they take GPU paths)
for cfg in "1 1" "2 1" "3 1" "4 1" "4 2"; do
  set -- $cfg
  run "NULL sides of count 0 (test_null_sides), np $1, $2 node(s) (driver stand-in)" sh -c "
    out=\$($FAKE OMPI_MCA_coll_gpu_virtual_nodes=$2 $MPIRUN --oversubscribe -np $1 $B/test/mpi/test_null_sides 2>&1) || { echo \"\$out\" | tail -20; exit 1; }
    echo \"\$out\" | grep -q '^[1-9][0-9]* passed, 0 failed\$' || { echo \"\$out\" | grep -E 'FAIL|passed' | head -20; exit 1; }"
done
# its second program: neighborhood and intercommunicator collectives, MPI_Reduce_local
nbr() { # name, np, test options
  run "conformance test, neighborhood/intercommunicator/reduce_local: $1, np $2" sh -c "
    out=\$($FAKE $MPIRUN --oversubscribe -np $2 $B/test/conform/test_conform_nbr --quick $3 2>&1)
    echo \"\$out\" | grep -q ' 0 failed\$' || { echo \"\$out\" | grep -E 'FAIL|HANG|CRASH|passed' | head -30; exit 1; }"
}
for np in 1 2 3 4; do
  nbr "device buffers (driver stand-in)" $np ""
done
nbr "host buffers (driver stand-in)" 2 "--mem host"
run "conformance test, MPI_Reduce_local of MPIX_C_FLOAT16/MPIX_BFLOAT16 (driver stand-in), np 2" sh -c "
  out=\$($FAKE $MPIRUN --oversubscribe -np 2 $B/test/conform/test_conform_nbr --quick --only FLOAT16 2>&1)
  echo \"\$out\" | grep -q ' 0 failed\$' || { echo \"\$out\" | grep -E 'FAIL|HANG|CRASH|passed' | head -30; exit 1; }
  echo \"\$out\" | grep -qE '^[1-9][0-9]* passed' || { echo 'no half-precision case ran'; exit 1; }"
# across 2 virtual nodes: the hierarchy's setup (its bounded exchanges)
# runs at the first device call, fails on the stand-in, and every call stages
for np in 2 3 4; do
  conform "device buffers across 2 virtual nodes (driver stand-in)" "$FAKE OMPI_MCA_coll_gpu_virtual_nodes=2" $np "--mem device"
done
# the neighbourhoods' eligibility across nodes (coll_gpu_nbr.c) on every topology, then staged
for cfg in "4 2" "3 2" "4 4"; do
  set -- $cfg
  run "conformance test, neighborhood/intercommunicator/reduce_local: device buffers across $2 virtual nodes (driver stand-in), np $1" sh -c "
    out=\$($FAKE OMPI_MCA_coll_gpu_virtual_nodes=$2 $MPIRUN --oversubscribe -np $1 $B/test/conform/test_conform_nbr --quick 2>&1)
    echo \"\$out\" | grep -q ' 0 failed\$' || { echo \"\$out\" | grep -E 'FAIL|HANG|CRASH|passed' | head -30; exit 1; }"
done
# 4 nodes of one rank: each rank asks 3 speakers per call (an answer
# counted twice once let a rank decide early and hung an in-place gather)
conform "device buffers across 4 virtual nodes of one rank (driver stand-in)" "$FAKE OMPI_MCA_coll_gpu_virtual_nodes=4" 4 "--mem device"
# every wait bounded on the staged path: rank 1 stops calling
for np in 2 3; do
  run "staged calls on device buffers: rank 1 stops calling, the others fail in 2 s naming it, np $np" sh -c "
    out=\$($FAKE $MPIRUN --oversubscribe -np $np --mca coll_gpu_timeout 2 $B/test/conform/test_conform_timeout 2>&1)
    echo \"\$out\" | grep -q '^3 passed, 0 failed\$' || { echo \"\$out\" | tail -20; exit 1; }"
done
# a freed host buffer's address taken by device memory is not taken for host memory
for np in 1 2; do
  run "device memory at a freed host buffer's address stages (driver stand-in), np $np" sh -c "
    out=\$($FAKE $MPIRUN --oversubscribe -np $np $B/test/conform/test_conform_reuse 2>&1)
    echo \"\$out\" | grep -q '^2 passed, 0 failed\$' || { echo \"\$out\" | tail -20; exit 1; }"
done
# a staged call's two host copies never look like MPI_IN_PLACE to libnbc:
# every distance between the blocks in a window, so malloc's is among them
for np in 2 3; do
  run "staged alltoallw: host copies never taken for MPI_IN_PLACE (driver stand-in), np $np" sh -c "
    out=\$($FAKE $MPIRUN --oversubscribe -np $np --mca coll_gpu_timeout 2 $B/test/conform/test_conform_alias 2>&1)
    echo \"\$out\" | grep -q '^4 passed, 0 failed\$' || { echo \"\$out\" | grep -E 'FAIL|passed' | head -20; exit 1; }"
done
# end of the conformance test's runs
# op/gpu (MPI_Reduce_local and Open MPI's own reductions on device memory):
# listed with its parameters; host results of every predefined type and op,
# 2- and 3-buffer, are Open MPI's whether it declines (no driver) or is
# installed (driver stand-in); the stand-in's device memory, which the CPU
# cannot touch and no kernel can reach here, reduced through the driver's copies
run "ompi_info lists op gpu and its parameters" sh -c '
  out=$(ompi_info --param op gpu --level 9) || exit 1
  echo "$out" | grep -q "MCA op: gpu" || { echo "$out"; exit 1; }
  for p in priority verbose timeout; do
    echo "$out" | grep -q "\"op_gpu_$p\"" || { echo "missing op_gpu_$p"; exit 1; }
  done'
run "op/gpu without a driver: declines, says why at verbose 1; host MPI_Reduce_local unchanged" sh -c "
  out=\$($MPIRUN -np 1 --mca op_gpu_verbose 1 $B/test/gpu/test_gpu_reduce_local host-declined --quick 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'op/gpu: declining' || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q ' 0 failed' || { echo \"\$out\"; exit 1; }"
run "op/gpu installed (driver stand-in): host MPI_Reduce_local and 3-buffer reductions give Open MPI's results" sh -c "
  out=\$($FAKE $MPIRUN -np 1 $B/test/gpu/test_gpu_reduce_local host --quick 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q ' 0 failed' || { echo \"\$out\"; exit 1; }"
for np in 1 2; do
  run "op/gpu (driver stand-in): MPI_Reduce_local on device memory the CPU cannot touch, right results through the driver's copies, np $np" sh -c "
    out=\$($FAKE $MPIRUN --oversubscribe -np $np --mca op_gpu_verbose 1 $B/test/gpu/test_gpu_reduce_local standin 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'op/gpu: .*the CUDA runtime cannot run here' || { echo \"\$out\"; echo 'no host-fold notice'; exit 1; }
    echo \"\$out\" | grep -q ' 0 failed' || { echo \"\$out\"; exit 1; }"
done
run "user messages come from the help file (a missing fallback component)" sh -c "
  out=\$($MPIRUN -np 1 --mca coll gpu --mca coll_gpu_fallback tuned,basic,libnbc,self,nosuchcomp $B/test/mpi/test_host_colls 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'component \"coll/nosuchcomp\"' || { echo \"\$out\"; exit 1; }"
# Spack and modules move installs: the help file is found beside the loaded
# .so (dladdr) before the folders configure baked in.  The moved copy's text
# carries a marker, so only that file can produce it.
run "help file found beside a moved install (dladdr)" sh -c "
  tmp=\$(mktemp -d); trap 'rm -rf \$tmp' EXIT
  make -s -C '$B' install prefix=\$tmp/a > \$tmp/log 2>&1 || { cat \$tmp/log; exit 1; }
  mv \$tmp/a \$tmp/moved
  sed -i 's/^component \"coll\/%s\", but no such/component \"coll\/%s\" (moved-install-marker), but no such/' \$tmp/moved/share/gpucoll/help-coll-gpu.txt
  grep -q moved-install-marker \$tmp/moved/share/gpucoll/help-coll-gpu.txt || { echo 'marker not set'; exit 1; }
  out=\$(OMPI_MCA_mca_base_component_path='$DEFAULT_PATH':\$tmp/moved/lib/openmpi $MPIRUN -np 1 --mca coll gpu --mca coll_gpu_fallback tuned,basic,libnbc,self,nosuchcomp $B/test/mpi/test_host_colls 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'coll/nosuchcomp\" (moved-install-marker)' || { echo \"\$out\"; exit 1; }"
if [ -x "$B/test/mpi/test_inter" ]; then
  for np in 2 3 4; do
    run "UCX transport + inter-node algorithms, host memory, TCP loopback, np $np" env UCX_TLS=tcp,self $MPIRUN --oversubscribe -np $np "$B/test/mpi/test_inter" --quick --distinct-hosts
  done
  for np in 2 4; do
    run "UCX transport + inter-node algorithms, host memory, shared memory, np $np" env UCX_TLS=sm,self $MPIRUN --oversubscribe -np $np "$B/test/mpi/test_inter" --quick
  done
fi
# the staged inter-node pipeline on channel threads (each rank its own node,
# slot copies on the CUDA runtime stand-in), against the calling thread alone
if [ -x "$B/test/mpi/test_hier_chan" ]; then
  for cfg in "tcp,self 2 1" "tcp,self 3 4" "sm,self 2 8" "sm,self 4 4" "sm,self 3 2 262144" \
             "tcp,self 2 4 65536 threads" "sm,self 3 2 65536 threads" \
             "sm,self 2 4 65536 devfold" "tcp,self 2 1 262144 devfold" "sm,self 3 4 65536 devfold"; do
    set -- $cfg
    case "$5" in
      threads) what=", two hierarchies on two threads with workers of their own" ;;
      devfold) what=", the fold on the way back to the device (coll_gpu_net_device_fold)" ;;
      *) what="" ;;
    esac
    run "staged pipeline, $3 channel(s), UCX_TLS=$1, np $2${4:+, slots of $4 bytes}$what" env UCX_TLS=$1 LD_LIBRARY_PATH=$B/test/fake/rt:$B/test/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} $MPIRUN --oversubscribe -np $2 "$B/test/mpi/test_hier_chan" $3 $4 $5
  done
fi
# nonblocking and persistent allreduce, bcast, reduce, allgather, reduce_scatter_block across 2
# and 4 virtual nodes through coll/gpu on the driver stand-in's device memory: six outstanding
# on two communicators with a blocking call among them, completed out of order, a host-memory
# rank, a request freed while active, persistent starts, against host references.  The
# component's static CUDA runtime does not run on the stand-in, so the hierarchy is not set up
# here and every call stages (the log says so); on GPUs (run_gpu_tests.sh) they run on the
# hierarchy's thread
#
# The same for gather(v), scatter(v), allgatherv, alltoall(v,w), reduce_scatter and (ex)scan
# (test_hier_nbv): zero counts, gaps, root-only arguments NULL elsewhere, in place, sixteen
# outstanding on two communicators, persistent starts.
hier_nb() { # program, what it covers, then "UCX_TLS np nodes" configurations
  prog=$1; what=$2; shift 2
  [ -x "$B/test/mpi/$prog" ] || return 0
  for cfg in "$@"; do
    set -- $cfg
    run "nonblocking and persistent $what across $3 virtual nodes, np $2, UCX_TLS=$1 (driver stand-in)" sh -c "
      out=\$(env UCX_TLS=$1 $FAKE OMPI_MCA_coll_gpu_virtual_nodes=$3 $MPIRUN --oversubscribe -np $2 --mca coll_gpu_verbose 10 --mca coll_gpu_net_slot_bytes 65536 '$B/test/mpi/$prog' 2>&1) || { echo \"\$out\" | tail -20; exit 1; }
      echo \"\$out\" | grep -q 'spans $3 nodes; the hierarchy could not be set up' || echo \"\$out\" | grep -q \"ran on the hierarchy's thread\" || { echo 'neither staged nor on the hierarchy'; exit 1; }
      echo \"\$out\" | grep -q '^[1-9][0-9]* passed, 0 failed\$' || { echo \"\$out\" | grep -E 'FAIL|passed' | head -20; exit 1; }"
  done
}
hier_nb test_hier_nb collectives "tcp,self 2 2" "sm,self 4 4" "tcp,self 4 2"
hier_nb test_hier_nbv "v collectives" "tcp,self 2 2" "sm,self 3 3" "tcp,self 4 2"
# gatherv, scatterv, allgatherv, alltoallv, reduce_scatter, scan, exscan (and gather,
# scatter, alltoall, the allreduce under reduce_scatter) across 2-4
# virtual nodes of several ranks (hier/gpu_hier_v.c, gpu_hier_a2a.c) on the stand-ins' device
# memory, node steps emulated over MPI: every root, zero counts, gaps, in place,
# many slices; the labels their traces carry are the hierarchy's (leaders, pairs)
if [ -x "$B/test/mpi/test_hier_v" ]; then
  for cfg in "tcp,self 4 2 1" "sm,self 4 2 4" "sm,self 5 2 2 interleaved" "tcp,self 6 3 2" \
             "sm,self 8 4 4" "sm,self 4 4 1" "tcp,self 7 3 3 interleaved" "sm,self 5 2 2"; do
    set -- $cfg
    run "gather(v)/scatter(v)/allgatherv/alltoall(v)/reduce_scatter/(ex)scan across $3 virtual nodes, np $2, $4 channel(s), UCX_TLS=$1${5:+, nodes interleaved}" sh -c "
      out=\$(env UCX_TLS=$1 LD_LIBRARY_PATH=$B/test/fake/rt:$B/test/fake\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} $MPIRUN --oversubscribe -np $2 '$B/test/mpi/test_hier_v' $3 $4 65536 $5 2>&1) || { echo \"\$out\" | tail -20; exit 1; }
      for c in gather gatherv scatter scatterv allgatherv alltoall alltoallv reduce_scatter scan exscan; do
        echo \"\$out\" | grep -qE \"^label \$c: hier (leaders|pairs|rails): \" || { echo \"no hierarchical label for \$c\"; exit 1; }
      done
      echo \"\$out\" | grep -q '^[1-9][0-9]* passed, 0 failed\$' || { echo \"\$out\" | grep -E 'FAIL|passed' | head -20; exit 1; }"
  done
fi
# barrier, in-place alltoallv (alltoallw's pairs) and the neighbourhood collectives' rounds
# (cartesian periodic extents 1, 2 and more, open lines, a distributed graph with self loops)
# across 2-4 virtual nodes of several ranks on the stand-ins' device memory, against Open
# MPI's own neighbourhood collectives; a late rank per barrier that the others must wait for
if [ -x "$B/test/mpi/test_hier_nbr" ]; then
  for cfg in "tcp,self 2 2 1" "tcp,self 4 2 1" "sm,self 4 2 4" "sm,self 3 2 2" "tcp,self 6 3 2" \
             "sm,self 8 4 4" "sm,self 4 4 1"; do
    set -- $cfg
    run "barrier/alltoallw in place/neighbourhoods across $3 virtual nodes, np $2, $4 channel(s), UCX_TLS=$1" sh -c "
      out=\$(env UCX_TLS=$1 LD_LIBRARY_PATH=$B/test/fake/rt:$B/test/fake\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} $MPIRUN --oversubscribe -np $2 '$B/test/mpi/test_hier_nbr' $3 $4 65536 2>&1) || { echo \"\$out\" | tail -20; exit 1; }
      for c in barrier alltoallw neighbor; do
        echo \"\$out\" | grep -qE \"^label \$c: hier \" || { echo \"no hierarchical label for \$c\"; exit 1; }
      done
      echo \"\$out\" | grep -q '^[1-9][0-9]* passed, 0 failed\$' || { echo \"\$out\" | grep -E 'FAIL|passed' | head -20; exit 1; }"
  done
fi
run "GPU allreduce test skips cleanly without a GPU" sh -c "$MPIRUN -np 2 --oversubscribe $B/test/gpu/test_gpu_allreduce | grep -q SKIP"
for np in 1 2 4; do
  run "staged path's host ops: this project's functors behind MPI ops, np $np" $MPIRUN --oversubscribe -np $np "$B/test/mpi/test_hostop"
done
run "GPU reliability test skips cleanly without a GPU" sh -c "$MPIRUN -np 2 --oversubscribe $B/test/gpu/test_gpu_reliability cross | grep -q SKIP"
run "reliability runner counts a skipped suite as nothing run" sh -c "RELIABILITY_NP=2 RELIABILITY_SIZES=8 MPIRUN='$MPIRUN' sh '$T/test/gpu/run_reliability.sh' '$B' | tail -1 | grep -q '^0 passed, 0 failed'"
run "mixed memory kinds test skips cleanly without a GPU" sh -c "$MPIRUN -np 2 --oversubscribe $B/test/gpu/test_gpu_mixed | grep -q SKIP"
run "GPU collectives test skips cleanly without a GPU" sh -c "$MPIRUN -np 2 --oversubscribe $B/test/gpu/test_gpu_colls | grep -q SKIP"
run "GPU pair-type test (test_gpu_pairs) skips cleanly without a GPU" sh -c "$MPIRUN -np 2 --oversubscribe $B/test/gpu/test_gpu_pairs | grep -q 'SKIP: no CUDA device (test_gpu_pairs'"
for np in 1 2 4; do
  run "persistent collectives (MPIX_*_init) on host buffers stay Open MPI's, np $np" sh -c "$MPIRUN --oversubscribe -np $np $B/test/gpu/test_gpu_persistent | grep -q ' 0 failed'"
done
run "persistent collectives, --mca coll gpu alone, np 2" sh -c "$MPIRUN --oversubscribe --mca coll gpu -np 2 $B/test/gpu/test_gpu_persistent | grep -q ' 0 failed'"
run "application benchmark (gpucoll_appbench) skips cleanly without a GPU" sh -c "$MPIRUN -np 2 --oversubscribe $B/test/bench/gpucoll_appbench | grep -q 'SKIP gpucoll_appbench: no CUDA device visible'"
run "GPU enqueue test (MPIX streams) skips cleanly without a GPU" sh -c "$MPIRUN -np 2 --oversubscribe $B/test/gpu/test_gpu_enqueue | grep -q 'SKIP test_gpu_enqueue: no CUDA device visible'"
run "GPU halo-exchange test (MPIX_Isend/Irecv_enqueue) skips cleanly without a GPU" sh -c "$MPIRUN -np 2 --oversubscribe $B/test/gpu/test_gpu_halo | grep -q 'SKIP test_gpu_halo: no CUDA device visible'"
run "MPICH-style stream demo builds unchanged and reports no GPU" sh -c "$MPIRUN -np 2 --oversubscribe $B/demo/mpix_enqueue_demo | grep -q 'no GPU present'"
# MPICH's stream API under plain MPI_Init through both CUDA stand-ins (the
# runtime's streams are threads: host functions run off the MPI thread; no
# kernels, so every call takes libgpucoll's host transport): the stream
# test program and the demo, eager and graph-captured, checked against
# host references; MPI_THREAD_MULTIPLE is neither asked for nor given
RT="env LD_LIBRARY_PATH=$B/test/fake/rt:$B/test/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for np in 1 2 3 4; do
  run "MPICH-style stream program, plain MPI_Init (CUDA runtime + driver stand-ins), np $np" sh -c "
    out=\$($RT $MPIRUN --oversubscribe -np $np $B/test/mpi/test_mpix_stream 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'thread level 0' || { echo \"\$out\"; echo 'not plain MPI_Init'; exit 1; }
    echo \"\$out\" | grep -q 'test_mpix_stream: [1-9][0-9]* passed, 0 failed' || { echo \"\$out\"; exit 1; }"
done
run "MPICH-style stream program: rank 1 skips a bcast and a receive (by CUDA IPC), the others go on after 2 s naming it, np 3" sh -c "
  out=\$($RT $MPIRUN --oversubscribe -np 3 --mca coll_gpu_timeout 2 $B/test/mpi/test_mpix_stream timeout 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'waited 2 s for rank 1 (its part)' || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'waited 2 s for rank 1 (its copy of a message sent by CUDA IPC)' || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'test_mpix_stream: [1-9][0-9]* passed, 0 failed' || { echo \"\$out\"; exit 1; }"
# point to point between device buffers by CUDA IPC (the runtime stand-in
# maps the driver stand-in's device memory into the peer), and staged
for np in 2 4; do
  run "MPICH-style stream program: point to point by CUDA IPC (stand-ins), np $np" sh -c "
    out=\$(GPUCOLL_STREAM_VERBOSE=1 timeout 300 $RT $MPIRUN -x GPUCOLL_STREAM_VERBOSE --oversubscribe -np $np $B/test/mpi/test_mpix_stream 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'test_mpix_stream: [1-9][0-9]* passed, 0 failed' || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'point-to-point enqueue by CUDA IPC to $((np - 1)) of $((np - 1)) peers' || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -qE 'rank 0: point-to-point enqueue: [1-9][0-9]* sends by CUDA IPC, [0-9]+ staged; [1-9][0-9]* receives by CUDA IPC' || { echo \"\$out\"; exit 1; }"
done
run "MPICH-style stream program: point to point staged with GPUCOLL_STREAM_IPC=0 (stand-ins), np 3" sh -c "
  out=\$(GPUCOLL_STREAM_IPC=0 GPUCOLL_STREAM_VERBOSE=1 $RT $MPIRUN -x GPUCOLL_STREAM_IPC -x GPUCOLL_STREAM_VERBOSE --oversubscribe -np 3 $B/test/mpi/test_mpix_stream 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'test_mpix_stream: [1-9][0-9]* passed, 0 failed' || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -qE 'rank 0: point-to-point enqueue: 0 sends by CUDA IPC, [1-9][0-9]* staged; 0 receives by CUDA IPC \(0 of them through host memory: not mapped\), [1-9][0-9]* staged' || { echo \"\$out\"; exit 1; }"
# the receiver closes its CUDA IPC mappings of buffers the sender freed (the
# runtime stand-in counts them); eager back-to-back empty messages make no
# pinned allocation, and staging that grows frees none while messages are in
# flight (the stand-in counts both); a stream communicator across 2 virtual
# nodes (libgpucoll's transport splits as coll/gpu does): the data arrive
# over coll/gpu's network (UCX on host memory here)
for np in 2 4; do
  run "point-to-point enqueue: mappings of freed buffers closed, no pinned allocation per eager empty message, and within a node (stand-ins), np $np" sh -c "
    out=\$(timeout 120 $RT $MPIRUN --oversubscribe -np $np $B/test/mpi/test_mpix_p2p 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'test_mpix_p2p: 6 passed, 0 failed' || { echo \"\$out\"; exit 1; }"
  run "point-to-point enqueue across 2 virtual nodes under plain MPI_Init: the data arrive over coll/gpu's network (stand-ins), np $np" sh -c "
    out=\$(timeout 120 $RT $MPIRUN --oversubscribe -np $np --mca coll_gpu_virtual_nodes 2 $B/test/mpi/test_mpix_p2p nodes 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'across the nodes moved the data (thread level 0)' || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'test_mpix_p2p: 1 passed, 0 failed' || { echo \"\$out\"; exit 1; }"
done
# MPICH's stream program whole (every enqueued collective, user ops, pair
# types, halo exchanges, tag order, 100 messages in flight, eager and
# captured) on stream communicators across 2 virtual nodes under plain
# MPI_Init: libgpucoll's host transport over coll/gpu's network, which must
# be what carried it; and the timeout case there (an allgather missing rank
# 1, a send never received: the others go on after 2 s naming rank 1)
for np in 2 3 4; do
  run "MPICH-style stream program across 2 virtual nodes, plain MPI_Init, over coll/gpu's network (stand-ins), np $np" sh -c "
    out=\$(GPUCOLL_STREAM_VERBOSE=1 timeout 300 $RT $MPIRUN -x GPUCOLL_STREAM_VERBOSE --oversubscribe -np $np --mca coll_gpu_virtual_nodes 2 $B/test/mpi/test_mpix_stream 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'thread level 0' || { echo \"\$out\"; echo 'not plain MPI_Init'; exit 1; }
    echo \"\$out\" | grep -q 'test_mpix_stream: [1-9][0-9]* passed, 0 failed' || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q \"rank 0: host transport of a stream communicator: coll/gpu's network (across nodes)\" || { echo \"\$out\"; echo 'not over the network'; exit 1; }
    if echo \"\$out\" | grep -q \"the node's shared memory\"; then echo 'a communicator across nodes on shared memory'; exit 1; fi"
done
run "MPICH-style stream program across 2 virtual nodes: rank 1 skips an allgather and a receive, the others go on after 2 s naming it, np 3" sh -c "
  out=\$(timeout 120 $RT $MPIRUN --oversubscribe -np 3 --mca coll_gpu_timeout 2 --mca coll_gpu_virtual_nodes 2 $B/test/mpi/test_mpix_stream timeout 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'MPIX_Allgather_enqueue on .*waited 2 s for rank 1 (its part)' || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'waited 2 s for rank 1 (its receive of a message sent)' || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'test_mpix_stream: 4 passed, 0 failed' || { echo \"\$out\"; exit 1; }"
run "MPICH-style stream demo across 2 virtual nodes, plain MPI_Init, eager and 1000 graph replays (CUDA stand-ins), np 2" sh -c "
  out=\$(timeout 120 $RT $MPIRUN --oversubscribe -np 2 --mca coll_gpu_virtual_nodes 2 $B/demo/mpix_enqueue_demo 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'graph replays: correct' || { echo \"\$out\"; exit 1; }"
# a send buffer freed and made again larger where the receiver still maps
# the old one: the runtime stand-in refuses its handle as CUDA does
# ("resource already mapped"), and the bytes come through host memory
for np in 2 3 4; do
  run "point-to-point enqueue from a buffer freed and made again: a refused handle goes through host memory (stand-ins), np $np" sh -c "
    out=\$(GPUCOLL_STREAM_VERBOSE=1 timeout 120 $RT $MPIRUN -x GPUCOLL_STREAM_VERBOSE --oversubscribe -np $np $B/test/mpi/test_mpix_p2p realloc 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'test_mpix_p2p: 1 passed, 0 failed' || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'bytes from rank [0-9]* comes through host memory' || { echo \"\$out\"; echo 'no message went through host memory'; exit 1; }"
done
# every pair type x MINLOC/MAXLOC enqueued under plain MPI_Init through the
# host transport (no stream kernels without a GPU): the padded ones
# (DOUBLE_INT, LONG_INT, LONG_DOUBLE_INT) too
for np in 2 3; do
  run "enqueued pair types through libgpucoll's host transport, plain MPI_Init (CUDA stand-ins), np $np" sh -c "
    out=\$($RT $MPIRUN --oversubscribe -np $np $B/test/gpu/test_gpu_pairs 17 enqueue 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'test_gpu_pairs: 96 passed, 0 failed' || { echo \"\$out\" | tail -20; exit 1; }"
done
run "enqueued pair types across 2 virtual nodes over coll/gpu's network, plain MPI_Init (CUDA stand-ins), np 3" sh -c "
  out=\$(timeout 300 $RT $MPIRUN --oversubscribe -np 3 --mca coll_gpu_virtual_nodes 2 $B/test/gpu/test_gpu_pairs 17 enqueue 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'test_gpu_pairs: 96 passed, 0 failed' || { echo \"\$out\" | tail -20; exit 1; }"
# datatypes with gaps (vector, out-of-order indexed, a struct with holes and
# a user op, a resized vector, a plain send side against a vector receive,
# a short message into a vector) in every enqueued collective and point to point, against Open MPI's own
# answers on host buffers, gaps poisoned differently on each side: within a
# node (by CUDA IPC and staged) and across 2 virtual nodes
for np in 1 2 3 4; do
  run "datatypes with gaps on a CUDA stream, plain MPI_Init, against Open MPI's host answers (stand-ins), np $np" sh -c "
    out=\$(timeout 300 $RT $MPIRUN --oversubscribe -np $np $B/test/mpi/test_mpix_types 2>&1) || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'thread level 0' || { echo \"\$out\"; exit 1; }
    echo \"\$out\" | grep -q 'test_mpix_types: [1-9][0-9]* passed, 0 failed' || { echo \"\$out\"; exit 1; }"
done
run "datatypes with gaps on a CUDA stream under MPI_THREAD_MULTIPLE (the same transport path), np 3" sh -c "
  out=\$(timeout 300 $RT $MPIRUN --oversubscribe -np 3 $B/test/mpi/test_mpix_types multiple 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'thread level 3' || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'test_mpix_types: [1-9][0-9]* passed, 0 failed' || { echo \"\$out\"; exit 1; }"
# point to point on such types with CUDA IPC off (every message staged);
# with it on (above) a plain sender goes by reference
run "datatypes with gaps: point to point staged (GPUCOLL_STREAM_IPC=0), np 3" sh -c "
  out=\$(GPUCOLL_STREAM_IPC=0 timeout 300 $RT $MPIRUN -x GPUCOLL_STREAM_IPC --oversubscribe -np 3 $B/test/mpi/test_mpix_types 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'PASS send/recv, send MPI_INT x 3, receive the vector x 1 (a short message), graph' || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'test_mpix_types: [1-9][0-9]* passed, 0 failed' || { echo \"\$out\"; exit 1; }"
run "datatypes with gaps on a CUDA stream across 2 virtual nodes over coll/gpu's network, np 4" sh -c "
  out=\$(timeout 300 $RT $MPIRUN --oversubscribe -np 4 --mca coll_gpu_virtual_nodes 2 $B/test/mpi/test_mpix_types 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'test_mpix_types: [1-9][0-9]* passed, 0 failed' || { echo \"\$out\"; exit 1; }"
run "MPICH-style stream demo, plain MPI_Init, eager and 1000 graph replays (CUDA stand-ins), np 2" sh -c "
  out=\$($RT $MPIRUN --oversubscribe -np 2 $B/demo/mpix_enqueue_demo 2>&1) || { echo \"\$out\"; exit 1; }
  echo \"\$out\" | grep -q 'graph replays: correct' || { echo \"\$out\"; exit 1; }"
run "demo reports no GPU" sh -c "$MPIRUN -np 2 --oversubscribe $B/demo/allreduce_demo | grep -q 'no GPU present'"
run "configure refuses an Open MPI series it has no interface for (6.0), naming it" sh -c "
  tmp=\$(mktemp -d); trap 'rm -rf \$tmp' EXIT
  mkdir -p \$tmp/ompi6/include \$tmp/build
  printf '#define OMPI_MAJOR_VERSION 6\\n#define OMPI_MINOR_VERSION 0\\n' > \$tmp/ompi6/include/mpi.h
  cd \$tmp/build && if '$T/configure' -q --with-ompi=\$tmp/ompi6 > out 2>&1; then cat out; exit 1; fi
  grep -q 'Open MPI 6.0 is not supported: coll/gpu builds against Open MPI 4.1.x and 5.0.x' out || { cat out; exit 1; }"
run "spack recipe compiles and matches configure's options" python3 "$(dirname "$0")/spack/check_recipe.py"
run "modulefile under Lmod: install, load, ompi_info, unload" sh "$(dirname "$0")/modules/test_modulefiles.sh" "$B" lmod
run "modulefile under Environment Modules: install, load, ompi_info, unload" sh "$(dirname "$0")/modules/test_modulefiles.sh" "$B" tcl
run "man pages render without a warning (man -l --warnings, or groff -man -ww)" sh -c "
  cd '$T/man' || exit 1
  for f in man1/*.1 man3/*.3; do
    if command -v man > /dev/null; then w=\$(MANWIDTH=80 man -l --warnings -E UTF-8 \$f 2>&1 > /dev/null)
    else w=\$(groff -man -ww -z \$f 2>&1); fi
    [ -z \"\$w\" ] || { echo \"\$f: \$w\"; exit 1; }
  done"
run "docs/mca.md's MCA table is what ompi_info prints (docs/gen_mca_table.sh)" sh "$(dirname "$0")/../docs/gen_mca_table.sh" --check "$(dirname "$0")/../docs/mca.md"
run "docs/results/README.md and the README's table are what tools/results_index.py writes from the newest runs" python3 "$T/tools/results_index.py" --check
run "every command the README and docs/*.md show: run (no GPU: tools, ompi_info, the stand-in) or checked (options, targets, MCA names, links)" python3 "$T/test/docs/test_doc_commands.py" "$B" "$T"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
