#!/bin/sh
# Run the device-buffer allreduce demo with coll/gpu from the build tree.
B=${1:-$(pwd)}
NP=${NP:-2}
MPIRUN=${MPIRUN:-mpirun}
P=${OMPI_MCA_mca_base_component_path:-$(ompi_info --parsable --param mca base --level 9 2>/dev/null | sed -n 's/^mca:mca:base:param:mca_base_component_path:value://p' | tr -d '"')}
# a missing folder in the path stops Open MPI's component search: keep real ones
P=$(echo "$P" | tr ':' '\n' | while read -r d; do [ -d "$d" ] && printf '%s:' "$d"; done)
export OMPI_MCA_mca_base_component_path="$P$B/.libs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec $MPIRUN --oversubscribe -np "$NP" --mca coll_gpu_verbose 1 "$B/demo/allreduce_demo"
