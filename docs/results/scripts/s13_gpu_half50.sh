#!/bin/bash
# Next session (written in s12, not run yet): issue 38's last part, half
# precision under Open MPI 5.0.9 on GPUs, where MPIX_C_FLOAT16 is Open MPI's
# own (its shortfloat extension, mpi-ext.h).  Before: build /work/b5 against
# /opt/ompi5 (README: the 5.0.9 build), strip it into gpurun5/ as
# /work/notes/mkgpurun.sh does for gpurun/, and copy
# ../shared/ompi5/openmpi-5.0.9-debian12.tar.xz into .ompi5/; carry
# .gpuhost, gpurun5 and .ompi5.  Runs test_gpu_half (8 B-256 MiB against an
# fp32-accumulated host reference) at np 2 and 4 and under MPS at np 4 on
# 2 GPUs, test_mpix_half and test_conform --quick --mem device at np 4;
# then mpi4py (the host's, built against Ubuntu's Open MPI 4.1.6) loading
# 5.0.9's libmpi.so.40 with CuPy float16 arrays typed by Open MPI's own
# MPIX_C_FLOAT16 (test/gpu/test_mpi4py_gpu.py) at np 2 and 4.  Logs in
# $OUT/h.tgz.
. .gpuhost/setup.sh
G5=$PWD/gpurun5
[ -x /opt/ompi5/bin/mpirun ] || tar -C /opt -xJf .ompi5/openmpi-5.0.9-debian12.tar.xz
unset PMIX_MCA_mca_base_component_path PMIX_MCA_pcompress OMPI_MCA_btl_vader_single_copy_mechanism
export OPAL_PREFIX=/opt/ompi5 PATH=/opt/ompi5/bin:$PATH
export LD_LIBRARY_PATH=/opt/ompi5/lib:$G5/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path=/opt/ompi5/lib/openmpi:$G5/.libs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --version | head -1
M="mpirun --oversubscribe --bind-to none -x LD_LIBRARY_PATH"
L=/tmp/s13h; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/h.tgz -C /tmp s13h' EXIT
t() { local tag=$1 t1=$(date +%s); shift; timeout 120 "$@" > "$L/$(echo $tag | tr ' ,' '__').log" 2>&1
  echo "== $tag: rc=$? $(( $(date +%s) - t1 )) s; $(grep -hE 'passed, [0-9]+ failed|^FAIL|float16 datatype| is "' "$L/$(echo $tag | tr ' ,' '__').log" | head -6 | tr '\n' ' ')"; }
t "test_gpu_half np 2" $M -np 2 $G5/test/gpu/test_gpu_half
t "test_gpu_half np 4" $M -np 4 $G5/test/gpu/test_gpu_half
t "test_mpix_half np 4" $M -np 4 $G5/test/mpi/test_mpix_half
t "test_conform np 4" $M -np 4 $G5/test/conform/test_conform --quick --mem device
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
mkdir -p /tmp/mps /tmp/mpslog && nvidia-cuda-mps-control -d
CUDA_VISIBLE_DEVICES=0,1 t "test_gpu_half np 4 on 2 GPUs, MPS" $M -np 4 -x CUDA_VISIBLE_DEVICES \
  -x CUDA_MPS_PIPE_DIRECTORY $G5/test/gpu/test_gpu_half
echo quit | nvidia-cuda-mps-control
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
python3 -c "from mpi4py import MPI; print('mpi4py on', MPI.Get_library_version().splitlines()[0]); print('MPI.FLOAT16_T:', getattr(MPI, 'FLOAT16_T', None))" 2>&1 | head -3
for np in 2 4; do
  t "mpi4py np $np" $M -np $np python3 test/gpu/test_mpi4py_gpu.py $G5/.libs/libgpucoll.so
done
