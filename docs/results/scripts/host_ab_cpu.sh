#!/bin/sh
# usage: hostab.sh ROUNDS OLD_DIR NEW_DIR  (run in build/)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$1; OLD=$2; NEW=$3; SYS=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
one() { OMPI_MCA_mca_base_component_path=$SYS:$2 timeout 120 mpirun --bind-to core -np 2 $3 \
  -x LD_LIBRARY_PATH=$(pwd)/test/fake ./test/bench/host_allreduce_lat -s 8 -n 200000 -r 7 2>&1 | tail -1 | sed "s/^/$1 /"; }
for i in $(seq $R); do
  one none $NEW "--mca coll ^gpu"; one old $OLD ""; one new $NEW ""
  one new $NEW ""; one old $OLD ""; one none $NEW "--mca coll ^gpu"
done
