# Sourced by the GPU scripts: host_ab_rounds ROUNDS prints, per round, the
# host-buffer 8 B allreduce without coll/gpu ("none", the bare Open MPI
# component path in $base) and with the build in $G ("new"), 2 ranks bound
# to cores, median of 7 x 100000 calls.
host_ab_rounds() {
  echo "== host-buffer allreduce 8 B, 2 ranks bound to cores (median of 7 x 100000 calls, us)"
  for round in $(seq "$1"); do
    for sel in none new; do
      case $sel in new) p=$base:$G/.libs; x="";; none) p=$base; x="--mca coll ^gpu";; esac
      echo "-- round $round $sel: $(OMPI_MCA_mca_base_component_path=$p timeout 60 mpirun --bind-to core -np 2 $x \
        "$G/test/bench/host_allreduce_lat" -s 8 -n 100000 -r 7 2>&1 | tail -1)"
    done
  done
}
