#!/bin/bash
# 4x H100, session 14 i: the spread bcast by writes in rounds (the owners
# forward slice r while the root writes slice r + 1): checked -- the
# conformance tests at np 4 (full), the put path forced on every
# size at np 3 and 4, written and read (coll_gpu_put_read 1: the read spread,
# whose flags count rounds too), test_gpu_colls at np 4 -- then bcast
# 1-256 MiB against NCCL in the same run, and the spread up to 256 MiB (the
# chain off).  Logs: $OUT/i.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s14i; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/i.tgz -C /tmp s14i' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE"
t0=$(date +%s)
t() { local tag=$1 lim=$2 t1=$(date +%s); shift 2
  timeout $lim "$@" > $L/$tag.log 2>&1
  echo "$tag: rc=$? $(( $(date +%s) - t1 )) s; $(grep -E 'passed, [0-9]+ failed' $L/$tag.log | tail -1)"
  grep -h "^FAIL" $L/$tag.log | head -5 | cut -c1-250; }
PUT="--mca coll_gpu_put_min 1 --mca coll_gpu_persist 0"
t conform_np4_full 90 $M -np 4 $G/test/conform/test_conform
t conform_np4_put 60 $M -np 4 $PUT $G/test/conform/test_conform --quick
t conform_np3_put 60 $M -np 3 $PUT $G/test/conform/test_conform --quick
t conform_np4_put_read 60 $M -np 4 $PUT --mca coll_gpu_put_read 1 $G/test/conform/test_conform --quick
t colls_np4 90 $M -np 4 $G/test/gpu/test_gpu_colls
echo "elapsed $(( $(date +%s) - t0 )) s"
timeout 90 $M -np 4 $G/test/bench/gpucoll_bench -n 10 -r 3 -c bcast -b 1048576 -e 268435456 > $L/bench_bcast.log 2>&1
echo "bcast rc=$?"; grep -E '^ +[0-9]+ ' $L/bench_bcast.log | awk '{printf "  %10d %8.1f us  nccl %8.1f  x%.2f\n", $1, $2, $5, $7}'
echo "elapsed $(( $(date +%s) - t0 )) s"
timeout 60 $M -np 4 --mca coll_gpu_bcast_chain_min 1073741824 $G/test/bench/gpucoll_bench -n 10 -r 3 \
  --no-nccl -c bcast -b 33554432 -e 268435456 > $L/bcast_spread_to_256M.log 2>&1
echo "bcast, the spread up to 256 MiB (no chain): rc=$?"
grep -E '^ +[0-9]+ ' $L/bcast_spread_to_256M.log | awk '{printf "  %10d %8.1f us\n", $1, $2}'
echo "elapsed $(( $(date +%s) - t0 )) s"
