#!/bin/bash
# Ranks sharing one GPU without MPS: the default path (host-paced rounds)
# against forced staging through host copies, allreduce 8 B-16 MiB, 2 and 4
# ranks, device buffers; median of 3 timed loops per size.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/shared_nomps.sh $OUT
set -u
OUT=$1; B=${B:-$(pwd)/gslim}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$B/.libs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for np in ${NPS:-2 4}; do
    for sel in default staged; do
      x=""; [ $sel = staged ] && x="--mca coll_gpu_allreduce_algorithm staged"
      echo "== np $np $sel"
      timeout 200 mpirun --oversubscribe --bind-to none -np $np $x "$B/test/bench/gpucoll_bench" \
        -c ${COLL:-allreduce} -b 8 -e ${MAXB:-16777216} -n ${ITERS:-40} -r 3 --no-nccl \
        --csv "$OUT/nomps_${COLL:-allreduce}_np${np}_$sel.csv" 2>&1 | grep -v "^#"
    done
  done
} 2>&1 | tee "$OUT/shared_nomps.log"
