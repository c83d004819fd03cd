#!/bin/bash
# 4x H100, session 12 d: (1) a real client, mpi4py with CuPy float32 /
# complex64 / float16 and PyTorch bfloat16 device arrays
# (test/gpu/test_mpi4py_gpu.py) at np 2, 3, 4 and 8 (two ranks a GPU);
# (2) MPI_Reduce from 1 MiB by the two-shot kernel to the root: test_gpu_colls
# at np 4 and 3, the conformance test (quick, device memory) at np 4, the
# timing file's label at 512 KiB-32 MiB, and gpucoll_bench reduce 256 KiB-64 MiB
# against NCCL at np 4, the new path (default) and the old one
# (coll_gpu_reduce_twoshot_min 0) in the same session; (3) the device fold's
# label in the timing file across 2 virtual nodes.  Logs in $OUT/d.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s12d; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/d.tgz -C /tmp s12d' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
t0=$(date +%s)
t() { local tag=$1 lim=$2 t1=$(date +%s); shift 2
  timeout $lim "$@" > $L/$tag.log 2>&1
  echo "$tag: rc=$? $(( $(date +%s) - t1 )) s; $(grep -E 'passed, [0-9]+ failed' $L/$tag.log | tail -1)"
  grep -h "^FAIL\|Error\|error" $L/$tag.log | head -5 | cut -c1-250; }
python3 -c "import mpi4py, cupy, torch; print('mpi4py', mpi4py.__version__, 'cupy', cupy.__version__, 'torch', torch.__version__)" 2>&1 | tail -1
for np in 2 4 3 8; do
  t mpi4py_np$np 100 $M -np $np python3 test/gpu/test_mpi4py_gpu.py $G/.libs/libgpucoll.so
done
head -3 $L/mpi4py_np2.log
t colls_np4 120 $M -np 4 $G/test/gpu/test_gpu_colls
t colls_np3 120 $M -np 3 $G/test/gpu/test_gpu_colls
t conform_np4 150 $M -np 4 $G/test/conform/test_conform --quick --mem device
tf=$L/tf; mkdir -p $tf
timeout 60 $M -np 4 --mca coll_gpu_timing_file $tf/r $G/test/bench/gpucoll_bench -c reduce \
  -b 524288 -e 33554432 -n 2 -r 1 --no-nccl > /dev/null 2>&1
echo "reduce labels (np 4):"; cat $tf/r.0.jsonl | grep -o '"coll":"reduce","algo":"[^"]*","bytes":[0-9]*' | sort -u | head -12
echo "elapsed $(( $(date +%s) - t0 )) s"
BN="$G/test/bench/gpucoll_bench -c reduce -b 262144 -e 67108864 -n 20 -r 3"
timeout 100 $M -np 4 -x NCCL_NVLS_ENABLE $BN > $L/bench_reduce_new.log 2>&1
echo "reduce, two-shot to root from 1 MiB: rc=$?"; grep -E '^ +[0-9]+ ' $L/bench_reduce_new.log
timeout 100 $M -np 4 -x NCCL_NVLS_ENABLE --mca coll_gpu_reduce_twoshot_min 0 $BN > $L/bench_reduce_old.log 2>&1
echo "reduce, old path (coll_gpu_reduce_twoshot_min 0): rc=$?"; grep -E '^ +[0-9]+ ' $L/bench_reduce_old.log
echo "elapsed $(( $(date +%s) - t0 )) s"
if [ $(( $(date +%s) - t0 )) -lt 380 ]; then
  timeout 100 $M -np 4 -x NCCL_NVLS_ENABLE --mca coll_gpu_reduce_chain_min 67108864 $BN -b 8388608 \
    > $L/bench_reduce_chain64.log 2>&1
  echo "reduce, two-shot to root up to 64 MiB (coll_gpu_reduce_chain_min 64 MiB): rc=$?"
  grep -E '^ +[0-9]+ ' $L/bench_reduce_chain64.log
fi
if [ $(( $(date +%s) - t0 )) -lt 450 ]; then
  mkdir -p $L/tfold
  CUDA_VISIBLE_DEVICES=0,1 timeout 60 $M -np 2 -x CUDA_VISIBLE_DEVICES --mca coll_gpu_virtual_nodes 2 \
    --mca coll_gpu_net_device_fold 1 --mca coll_gpu_timing_file $L/tfold/f $G/test/bench/gpucoll_bench \
    -c allreduce -b 67108864 -e 67108864 -n 2 -r 1 --no-nccl > $L/fold_label.log 2>&1
  echo "device fold labels: $(cat $L/tfold/f.* 2>/dev/null | grep -o '"algo":"[^"]*device fold[^"]*"' | sort -u)"
fi
