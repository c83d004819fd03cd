#!/bin/bash
# 4x H100, session 10 a: MPICH's stream API under plain MPI_Init on GPUs,
# within a node and now across 2 virtual nodes over coll/gpu's network
# (test/gpu/mpix_gpu.sh: test_mpix_stream, the demo, test_gpu_halo,
# test_mpix_p2p, test_gpu_pairs enqueue, the timeout cases; 2 and 4 GPUs,
# MPS).  Run from the repository root with gpurun/ holding the build.
. .gpuhost/setup.sh
G=$PWD/gpurun
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
LIMIT=${LIMIT:-120} sh test/gpu/mpix_gpu.sh $G $OUT/a > $OUT/a_stdout.txt 2>&1
(cd $OUT/a && tar czf ../a_logs.tgz *.log *.stacks.* 2>/dev/null; rm -f *.log *.stacks.*)
cat $OUT/a/summary.txt
