#!/bin/bash
# Open MPI 5.0.9 on the GPU host: the GPU suites, the reliability suite,
# the benchmark against NCCL and, where an OMB build is carried, OSU -d cuda -c;
# 2 ranks on one GPU without MPS (host-paced) and under MPS (kernels), or one
# rank per GPU where two are visible.  NOT RUN YET (written when no device time
# was left); results go to docs/results/ with this script's name.
#
# Build machine (repo root):
#   sh tools/install-deps.sh --ompi5
#   mkdir -p build5 .ompi5 && cp ../shared/ompi5/openmpi-5.0.9-debian12.tar.xz .ompi5/
#   (cd build5 && PATH=/opt/ompi5/bin:$PATH ../configure -q --with-ompi=/opt/ompi5 \
#      --with-nvcc-gencode="-gencode=arch=compute_90,code=sm_90" && make -j2 &&
#      make -j2 test/mpi/test_host_colls)
#   echo /.ompi5/ >> .git/info/exclude; echo /build5/ >> .git/info/exclude
#   optional: test/osu/osu_run.sh build OMB_DIR build5/osu  (with PATH=/opt/ompi5/bin:$PATH)
# GPU host (device tool, carry .gpuhost .ompi5 build5):
#   . .gpuhost/setup.sh && [MODES=plain|mps] bash docs/results/scripts/ompi5_gpu.sh $OUT
set -u
OUT=$1; B=${B:-$(pwd)/build5}
mkdir -p "$OUT"
# the Debian runtime of .gpuhost gives hwloc, libevent and UCX; Open MPI 5.0
# itself comes from the carried install (internal PMIx and PRRTE)
if [ ! -x /opt/ompi5/bin/mpirun ]; then
  tar -C /opt -xJf .ompi5/openmpi-5.0.9-debian12.tar.xz
fi
unset PMIX_MCA_mca_base_component_path PMIX_MCA_pcompress OMPI_MCA_btl_vader_single_copy_mechanism
export OPAL_PREFIX=/opt/ompi5 PATH=/opt/ompi5/bin:$PATH
export LD_LIBRARY_PATH=/opt/ompi5/lib:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path=/opt/ompi5/lib/openmpi:$B/.libs
mpirun --version | head -1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ngpu=$(nvidia-smi -L | wc -l)
R="mpirun --oversubscribe --bind-to none -np 2"
mps_on() { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog;
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; }
suites() { # label, extra mpirun args
  echo "== $1"
  for t in test_gpu_colls test_gpu_allreduce test_gpu_persistent; do
    echo "-- $t: $(timeout 90 $R $2 "$B/test/gpu/$t" --quick 2>&1 | grep -E "passed|FAIL" | tail -3 | tr '\n' ' ')"
  done
  RELIABILITY_NP=2 RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 MPIRUN=mpirun \
    sh test/gpu/run_reliability.sh "$B" $2 > "$OUT/reliability_$3.log" 2>&1
  echo "-- reliability: $(tail -1 "$OUT/reliability_$3.log")"
  echo "-- bench: allreduce 8 B-1 MiB, NCCL beside it"
  timeout 60 $R $2 "$B/test/bench/gpucoll_bench" -c allreduce -b 8 -e 1048576 -r 3 2>&1 | tail -20
  if [ -d "$B/osu" ]; then
    MPIRUN="$R $2" test/osu/osu_run.sh run "$B/osu" > "$OUT/osu_$3.log" 2>&1
    echo "-- OSU -d cuda -c: $(tail -1 "$OUT/osu_$3.log")"
  fi
}
{
  echo "GPUs visible: $ngpu"
  case " ${MODES:-plain mps} " in *" plain "*)
    suites "Open MPI 5.0.9, 2 ranks, no MPS (host-paced where they share a GPU)" "" plain ;; esac
  case " ${MODES:-plain mps} " in *" mps "*)
    mps_on
    suites "Open MPI 5.0.9, 2 ranks, under MPS (defaults: kernels and resident kernel)" "-x CUDA_MPS_PIPE_DIRECTORY" mps
    mps_off ;; esac
} 2>&1 | tee "$OUT/ompi5_gpu_$(echo ${MODES:-all} | tr ' ' _).log"
