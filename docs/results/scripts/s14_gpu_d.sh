#!/bin/bash
# 4x H100, session 14 d: (1) the choice gpucoll-topo prints is what runs: every
# collective gpucoll_bench times, 8 B-256 MiB, at 4 ranks (4 GPUs) and 2 ranks
# (GPUs 0,1), with a timing file; test/topo/check_choice.py compares each
# call's kernel with `gpucoll-topo --terms` for the shape (on the DGX H100
# fixture: NVSwitch, one rank per GPU as here); (2) the sweep of the
# collectives whose 4-rank defaults changed this session (allreduce, reduce,
# reduce_scatter), 8 B-1 GiB against NCCL's blocking call and graph replay
# (sweep_gpu.sh).  Output under $OUT: d.tgz (logs), sweep.tgz (listings, CSVs).
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s14d; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/d.tgz -C /tmp s14d' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
P0="$OMPI_MCA_mca_base_component_path"
export OMPI_MCA_mca_base_component_path="$P0:$G/.libs"
t0=$(date +%s)
for np in 4 2; do
  M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH -np $np"
  [ $np = 2 ] && M="env CUDA_VISIBLE_DEVICES=0,1 $M -x CUDA_VISIBLE_DEVICES"
  tf=$L/tf_np$np; mkdir -p $tf
  for c in allreduce bcast reduce allgather reduce_scatter alltoall; do
    timeout 60 $M --mca coll_gpu_timing_file $tf/$c $G/test/bench/gpucoll_bench -c $c \
      -b 8 -e 268435456 -n 2 -r 1 --no-nccl > $L/bench_${c}_np$np.log 2>&1 || echo "$c np $np: rc=$?"
  done
  python3 test/topo/check_choice.py --topo $G/tools/gpucoll-topo \
    --file test/topo/fixtures/dgx_h100.xml --ranks $np $tf/*.jsonl > $L/check_np$np.txt 2>&1
  echo "choice check np $np: rc=$? $(tail -1 $L/check_np$np.txt)"; grep FAIL $L/check_np$np.txt | head -10
  $G/tools/gpucoll-topo --file test/topo/fixtures/dgx_h100.xml --gpus-per-node $np > $L/plan_np$np.txt
done
echo "elapsed $(( $(date +%s) - t0 )) s"
export OMPI_MCA_mca_base_component_path="$P0"   # sweep_gpu.sh appends the build itself
NBR=0 NS=4 COLLS="allreduce reduce reduce_scatter" timeout $(( 560 - ($(date +%s) - t0) )) \
  bash docs/results/scripts/sweep_gpu.sh 2>&1 | tail -40
echo "elapsed $(( $(date +%s) - t0 )) s"
