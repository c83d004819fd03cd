#!/bin/bash
# 4x H100, session 12 e: test_mpi4py_gpu.py after d/ (mpi4py's Op is not
# hashable) at np 2, 4, 3 and 8; test_gpu_colls at np 3, where d/ failed 39
# int reduce cases of 1-16 MiB: with the two-shot kernel to the root (the
# default) and without (coll_gpu_reduce_twoshot_min 0), each with its timing
# file (which path each reduce took) and the failing check's rank and byte
# on stderr.  Logs in $OUT/e.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
L=/tmp/s12e; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/e.tgz -C /tmp s12e' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
t() { local tag=$1 lim=$2 t1=$(date +%s); shift 2
  timeout $lim "$@" > $L/$tag.log 2>&1
  echo "$tag: rc=$? $(( $(date +%s) - t1 )) s; $(grep -E 'passed, [0-9]+ failed' $L/$tag.log | tail -1)"
  grep -h "^FAIL\|Error\|rank [0-9]*.*reduce of" $L/$tag.log | head -6 | cut -c1-250; }
mkdir -p $L/ts $L/old
t colls_np3 90 $M -np 3 --mca coll_gpu_timing_file $L/ts/t $G/test/gpu/test_gpu_colls
echo "np 3 reduce paths, 1-16 MiB:"; cat $L/ts/t.0.jsonl | grep -o '"coll":"reduce","algo":"[^"]*","bytes":[0-9]*' | awk -F'"bytes":' '$2>=1048576 && $2<16777216' | sed 's/,"bytes".*//' | sort | uniq -c
t colls_np3_old 90 $M -np 3 --mca coll_gpu_reduce_twoshot_min 0 --mca coll_gpu_timing_file $L/old/t $G/test/gpu/test_gpu_colls
echo "np 3 reduce paths, 1-16 MiB, twoshot_min 0:"; cat $L/old/t.0.jsonl | grep -o '"coll":"reduce","algo":"[^"]*","bytes":[0-9]*' | awk -F'"bytes":' '$2>=1048576 && $2<16777216' | sed 's/,"bytes".*//' | sort | uniq -c
for np in 2 4 3 8; do
  t mpi4py_np$np 90 $M -np $np python3 test/gpu/test_mpi4py_gpu.py $G/.libs/libgpucoll.so
done
head -2 $L/mpi4py_np4.log
grep -h "^FAIL\|Traceback\|Error" $L/mpi4py_*.log | sort | uniq -c | head -12
