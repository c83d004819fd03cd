. .gpuhost/setup.sh >/dev/null 2>&1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$PWD/gpurun/.libs"
export LD_LIBRARY_PATH=$PWD/gpurun/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
r() { t=$1; shift; printf '%-22s ' $t; timeout 25 "$@" > /tmp/$t.log 2>&1; echo "rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' /tmp/$t.log | tail -1) $(grep -m1 -oE 'SKIP.*' /tmp/$t.log)"; grep -m3 -E "^FAIL" /tmp/$t.log; }
r pairs_np2 $M -np 2 gpurun/test/gpu/test_gpu_pairs
r pairs_np4 $M -np 4 gpurun/test/gpu/test_gpu_pairs
r halo_np2 $M -np 2 gpurun/test/gpu/test_gpu_halo
r halo_np4 $M -np 4 gpurun/test/gpu/test_gpu_halo
r mt_vn2 $M -np 2 --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_verbose 1 gpurun/test/gpu/test_gpu_reliability threads
grep -m2 -E "staged|channel|spans" /tmp/mt_vn2.log
