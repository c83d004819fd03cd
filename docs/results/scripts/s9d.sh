set -u
. .gpuhost/setup.sh >/dev/null 2>&1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$(pwd)/build/.libs"
B=$(pwd)/build
M="timeout 200 mpirun --bind-to none"
$M -np 2 $B/test/gpu/test_gpu_colls > /tmp/a.log 2>&1; echo "== colls np2 rc $? $(grep passed /tmp/a.log|tail -1)"
grep FAIL /tmp/a.log | head -3
$M --oversubscribe -np 4 $B/test/gpu/test_gpu_colls --quick > /tmp/a.log 2>&1; echo "== colls np4 rc $? $(grep passed /tmp/a.log|tail -1)"
grep FAIL /tmp/a.log | head -3
run() { # label, coll, args...
  l=$1; c=$2; shift 2
  r=$(timeout 120 mpirun --bind-to none -np 2 "$@" $B/test/bench/gpucoll_bench -c $c -b 67108864 -e 2147483648 2>&1 | awk '/^ +[0-9]/{printf "%s/%s ", $4, $7}')
  echo "$l $c: $r"
}
for c in alltoall allgather; do run new $c; done
run split alltoall --mca coll_gpu_xchg_split 1 --mca coll_gpu_xchg_nblocks 64
