#!/bin/bash
# 4 GPUs (one rank each), the put path: MPI_Neighbor_alltoall on the 2x2
# periodic grid against NCCL's grouped send/recv (issue 36's target), the
# conformance tests with the put path forced (resident kernel off) at np 4
# and 8, and the collectives it changed 8 B-1 GiB beside NCCL (--graph);
# bcast spread against the chain above 16 MiB.  Everything under $1.
OUT=${1:?out}
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
P="--mca coll_gpu_put_min 1 --mca coll_gpu_persist 0"
mkdir -p $OUT/logs
nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tee $OUT/summary.txt
run() { # tag, limit, command...
  tag=$1 lim=$2; shift 2
  t0=$(date +%s)
  timeout $lim "$@" > $OUT/logs/$tag.log 2>&1
  rc=$?
  res=$(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/logs/$tag.log | tail -1)
  grep -hE '^(FAIL|conform: rank)' $OUT/logs/$tag.log | sed "s/^/$tag: /" | head -20 >> $OUT/failures.txt
  printf '%-26s %-26s rc=%-3d %4ds\n' "$tag" "${res:-no tally}" $rc $(($(date +%s) - t0)) | tee -a $OUT/summary.txt
}
B="$G/test/bench/gpucoll_bench"
echo "[$SECONDS s] neighbor_alltoall"
timeout 150 $M -np 4 $B -c neighbor_alltoall -e 67108864 --graph \
  --csv $OUT/bench_neighbor_alltoall_4gpu.csv > $OUT/bench_neighbor_alltoall_4gpu.txt 2>&1
run put1_np4_nbr_full 150 $M -np 4 $P $G/test/conform/test_conform_nbr
run put1_np4_intra_full 200 $M -np 4 $P $G/test/conform/test_conform
run put1_np3_intra 150 $M -np 3 $P $G/test/conform/test_conform --quick
run put1_np4_colls 120 $M -np 4 $P $G/test/gpu/test_gpu_colls --quick
run put1_np8_nbr 150 $M -np 8 $P $G/test/conform/test_conform_nbr --quick
run default_np4_nbr 150 $M -np 4 $G/test/conform/test_conform_nbr --quick
for c in ${COLLS:-bcast reduce allgather reduce_scatter alltoall}; do
  echo "[$SECONDS s] $c"
  timeout 150 $M -np 4 $B -c $c -e 1073741824 --graph \
    --csv $OUT/bench_${c}_4gpu.csv > $OUT/bench_${c}_4gpu.txt 2>&1
done
echo "[$SECONDS s] bcast spread above 16 MiB (no chain)"
timeout 100 $M -np 4 --mca coll_gpu_bcast_chain_min 4294967296 $B -c bcast -b 16777216 \
  -e 1073741824 > $OUT/logs/bcast_spread_4gpu.txt 2>&1
echo "[$SECONDS s] done"
(cd $OUT && tar czf logs.tgz logs && rm -rf logs && tar czf sweep.tgz bench_* && rm -f bench_*)
cat $OUT/summary.txt
