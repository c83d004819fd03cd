#!/bin/sh
# Builds the OSU micro-benchmarks' collective tests from an OMB source tree
# with CUDA support, then runs them unchanged on device buffers (-d cuda) with
# validation (-c) against coll/gpu, the way a user would: the component is
# picked by priority, and once more with `--mca coll gpu,...` as the sole
# requested choice.  The OMB sources are not part of this repository.
#
#   test/osu/osu_run.sh build OMB_DIR OUT_DIR   (build machine: mpicc + CUDA)
#   test/osu/osu_run.sh run   OUT_DIR           (GPU host, after .gpuhost/setup.sh)
#   test/osu/osu_run.sh timing OUT_DIR          (latency tables, and stock Open MPI)
#
# OMB_DIR is an unpacked OMB release (5.9-7.x: c/util and c/mpi/collective).
# run prints one table row per benchmark and ends with `N passed, N failed`;
# a benchmark passes when it exits 0 and every size says "Pass".
set -u
CUDA=${CUDA_HOME:-/usr/local/cuda}
BENCHES=${OSU_BENCHES:-osu_allreduce osu_bcast osu_reduce osu_allgather osu_reduce_scatter osu_alltoall osu_iallreduce}
# OSU_BENCHES narrows build and run to some of them

build() {
  omb=$1 out=$2
  mkdir -p "$out"
  u=$omb/c/util
  utils="$u/osu_util.c $u/osu_util_mpi.c"
  for extra in osu_util_graph.c osu_util_papi.c; do
    [ -f "$u/$extra" ] && utils="$utils $u/$extra"
  done
  for b in $BENCHES; do
    src=$(ls "$omb"/c/mpi/collective/$b.c "$omb"/c/mpi/collective/*/$b.c 2>/dev/null | head -n 1)
    [ -n "$src" ] || { echo "missing $b.c under $omb/c/mpi/collective" >&2; return 1; }
    mpicc -O2 -D_ENABLE_CUDA_ -I"$u" -I"$CUDA/include" -o "$out/$b" "$src" $utils \
      -L"$CUDA/lib64" -L"$CUDA/lib64/stubs" -lcudart -lcuda -lm || return 1
  done
  echo "built: $BENCHES -> $out"
}

run() {
  out=$1
  mr="mpirun --bind-to none --mca coll_gpu_timeout 20"
  pass=0 fail=0 omb=0
  one() { # name, label, mpirun args, benchmark args
    name=$1 label=$2 margs=$3 bargs=$4
    log=$(timeout 300 $mr $margs "$out/$name" $bargs 2>&1); rc=$?
    echo "$log" > "$out/$name.$label.log"
    sizes=$(echo "$log" | grep -c -E '^[0-9]+ .*Pass$')
    bad=$(echo "$log" | grep -c -E 'Fail$')
    if [ $rc -eq 0 ] && [ "$sizes" -gt 0 ] && [ "$bad" -eq 0 ]; then
      pass=$((pass + 1)); st=ok
    elif [ "$name" = osu_reduce_scatter ] && [ "$sizes" -gt 0 ] && [ "$bad" -eq 0 ] &&
         echo "$log" | grep -q "cudaMemcpyDeviceToHost)' failed with 1: invalid argument"; then
      # OMB's own check reads past its receive buffer at the largest size
      # (see above): every size it could check passed; not counted either way
      omb=$((omb + 1)); st="all checked sizes pass; OMB validation defect at the largest size"
    else
      fail=$((fail + 1)); st="FAILED rc=$rc"
      echo "$log" | tail -n 15
    fi
    printf '%-20s %-10s %3d sizes validated  %s\n' "$name" "$label" "$sizes" "$st"
  }
  for b in $BENCHES; do
    # OMB's validate_reduce_scatter copies the whole message (size floats)
    # out of a receive buffer of max/np floats: at the largest size the copy
    # runs past the allocation and cudaMemcpy says "invalid argument" before
    # anything is compared, whatever the MPI library
    one "$b" valid "-np 2" "-d cuda -c -m 1:4194304"
  done
  # The exact selection a user types: coll/gpu opens its host fallbacks itself.
  for b in osu_allreduce osu_alltoall; do
    case " $BENCHES " in *" $b "*) one "$b" sole "-np 2 --mca coll gpu" "-d cuda -c" ;; esac
  done
  # Four ranks on two GPUs (OMB maps local rank % device count); fewer
  # iterations: nonblocking calls there keep the launched kernels (2.4 ms each)
  for b in osu_allreduce osu_bcast osu_reduce_scatter osu_iallreduce; do
    case " $BENCHES " in *" $b "*) ;; *) continue ;; esac
    one "$b" np4 "-np 4 --oversubscribe" "-d cuda -c -m 1:1048576 -i 100 -x 10"
  done
  [ $omb -eq 0 ] || echo "($omb run(s) stopped by the OMB reduce_scatter validation defect, not counted)"
  echo "$pass passed, $fail failed"
  [ $fail -eq 0 ]
}

# Plain OMB latency runs (no validation, default iterations) for the record,
# and the same osu_allreduce without coll/gpu on the component path: what
# stock Open MPI does with device buffers.
timing() {
  out=$1
  for b in $BENCHES; do
    mpirun --bind-to none -np 2 "$out/$b" -d cuda -m 1:4194304 2>&1 | tee "$out/$b.timing.log"
  done
  echo "== osu_allreduce -d cuda without coll/gpu (stock Open MPI) =="
  log=$(OMPI_MCA_mca_base_component_path=${STOCK_COMPONENT_PATH:?set it to the component folder of Open MPI itself} \
    timeout 120 mpirun --bind-to none -np 2 "$out/osu_allreduce" -d cuda -m 1:1024 2>&1)
  rc=$?
  echo "$log" | tail -n 12
  echo "stock run exit status: $rc"
}

case ${1:-} in
  build) shift; build "$@" ;;
  run) shift; run "$@" ;;
  timing) shift; timing "$@" ;;
  *) sed -n '2,15p' "$0"; exit 2 ;;
esac
