#!/bin/bash
# Host-buffer 8 B allreduce, this build (NEW, with the two-way host-buffer
# cache) against no coll/gpu, 10 alternating rounds, ranks bound to cores;
# then the mixed-kind and persistent suites on Open MPI 5.0.9 (2 GPUs, a
# rank per GPU; BUILD5 carried without objects, .ompi5 the 5.0.9 install).
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/final21b_gpu.sh $OUT
set -u
OUT=$1; NEW=${NEW:-$(pwd)/gnew2}; B5=${B5:-$(pwd)/b5carry}
base=$OMPI_MCA_mca_base_component_path
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{
  echo "== host-buffer allreduce 8 B, 2 ranks bound to cores (median of 7 x 50000 calls, us)"
  for round in 1 2 3 4 5 6 7 8 9 10; do
    for sel in none new; do
      case $sel in new) p=$base:$NEW/.libs; x="";; none) p=$base; x="--mca coll ^gpu";; esac
      echo "-- round $round $sel: $(OMPI_MCA_mca_base_component_path=$p timeout 60 mpirun --bind-to core -np 2 $x \
        "$NEW/test/bench/host_allreduce_lat" -s 8 -n 50000 -r 7 2>&1 | tail -1)"
    done
  done
  echo "== Open MPI 5.0.9, 2 GPUs"
  [ -x /opt/ompi5/bin/mpirun ] || tar -C /opt -xJf .ompi5/openmpi-5.0.9-debian12.tar.xz
  (
    unset PMIX_MCA_mca_base_component_path PMIX_MCA_pcompress OMPI_MCA_btl_vader_single_copy_mechanism
    export OPAL_PREFIX=/opt/ompi5 PATH=/opt/ompi5/bin:$PATH LD_LIBRARY_PATH=/opt/ompi5/lib:$LD_LIBRARY_PATH
    export OMPI_MCA_mca_base_component_path=/opt/ompi5/lib/openmpi:$B5/.libs
    mpirun --version | head -1
    for t in "test_gpu_mixed 8" "test_gpu_mixed 262144" test_gpu_persistent; do
      echo "-- $t: $(timeout 150 mpirun --oversubscribe --bind-to none -np 2 --mca coll_gpu_timeout 4 \
        $B5/test/gpu/$t 2>&1 | grep -E "^FAIL|passed," | tail -4 | tr '\n' ' ')"
    done
  )
} 2>&1 | tee "$OUT/final21b.log"
exit 0
