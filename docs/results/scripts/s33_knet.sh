#!/bin/bash
# Mixed memory kinds across (virtual) nodes: the kind queries of
# coll_gpu_kind_net.c.  2 GPUs:
#  1. test_gpu_mixed over 2 virtual nodes, np 2 (one rank a node) and np 4
#     (2 ranks a node), 8 B and 256 KiB: the new build, and the build before
#     (np 2, 8 B) for the record;
#  2. what a query costs: allreduce 8 B-4 KiB across 2 virtual nodes with
#     the queries (default) and without (coll_gpu_kind_across_nodes 0), and
#     on one node (no query there) new against before, alternating;
#  3. the reliability suite np 2 and 4 at 8 B and 256 KiB (its virtual-node
#     rows included).
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/s33_knet.sh $OUT [mixed|cost|rel]
set -u
OUT=$1; PART=${2:-all}; G=${G:-$(pwd)/gnew}; OLD=${OLD:-$(pwd)/gold}
base=$OMPI_MCA_mca_base_component_path
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GPUCOLL_TEST_TIMEOUT=4
V="--mca coll_gpu_virtual_nodes 2"
mixed() { # build np bytes extra...
  local b=$1 np=$2 by=$3; shift 3
  echo "-- test_gpu_mixed $(basename $b) np $np $by B $V $*: $(OMPI_MCA_mca_base_component_path=$base:$b/.libs \
    timeout -k 5 ${WD:-90} mpirun --oversubscribe --bind-to none -np $np --mca coll_gpu_timeout 4 $V "$@" \
    $b/test/gpu/test_gpu_mixed mixed $by 2>&1 | tee -a $OUT/mixed_$(basename $b)_np${np}_$by.log | \
    grep -E '^FAIL|passed,' | head -4 | tr '\n' ' ') (exit ${PIPESTATUS[0]})"
}
if [ "$PART" = all ] || [ "$PART" = mixed ]; then
  nvidia-smi --query-gpu=name --format=csv,noheader | head -1
  for np in 2 4; do for by in 8 262144; do mixed $G $np $by; done; done
  WD=60 mixed $OLD 2 8
fi 2>&1 | tee -a $OUT/s33_knet.log
if [ "$PART" = all ] || [ "$PART" = cost ]; then
  echo "== allreduce us (size:time), 2 ranks"
  for r in 1 2; do
    for v in "new $G $V" "trust $G $V --mca coll_gpu_kind_across_nodes 0" "new1node $G" "old1node $OLD"; do
      set -- $v; name=$1; b=$2; shift 2
      echo "-- $name: $(OMPI_MCA_mca_base_component_path=$base:$b/.libs timeout 60 mpirun --bind-to none -np 2 "$@" \
        $b/test/bench/gpucoll_bench -c allreduce -b 8 -e 4096 -r 3 -n 500 --no-nccl 2>&1 | grep -E "^ *[0-9]" | \
        awk '{print $1 ":" $2}' | tr '\n' ' ')"
    done
  done
fi 2>&1 | tee -a $OUT/s33_knet.log
if [ "$PART" = all ] || [ "$PART" = rel ]; then
  OMPI_MCA_mca_base_component_path=$base RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 \
    sh test/gpu/run_reliability.sh "$G" > "$OUT/rel_knet_x2.log" 2>&1
  echo "reliability x2: $(tail -1 "$OUT/rel_knet_x2.log")"; grep -E "^FAIL" "$OUT/rel_knet_x2.log" | head
fi 2>&1 | tee -a $OUT/s33_knet.log
exit 0
