# 2026-11-22: is altF's 0.2-0.3 us at 8 B real?  altA = the previous
# run's final code; altF = the split by summed line counts (shuffles in
# the decoding warp); altG = the split by ballots (a side is big when one
# peer's share exceeds half the threads over the peers); G64 = altG with 64
# blocks; the order of the variants rotates by round
. .gpuhost/setup.sh >/dev/null 2>&1
BASE="$OMPI_MCA_mca_base_component_path"
B=$(pwd)/build
(cd $B && tar xzf ab.tgz)
for order in "A F G G64" "G64 A F G" "G G64 A F" "F G G64 A"; do
for v in $order; do
case $v in
A) lib=altA; opt="" ;;
F) lib=altF; opt="" ;;
G) lib=altG; opt="" ;;
G64) lib=altG; opt="--mca coll_gpu_persist_blocks 64" ;;
esac
export OMPI_MCA_mca_base_component_path="$BASE:$B/$lib"
for c in allreduce reduce bcast allgather; do
r=$(timeout 60 mpirun --bind-to none -np 2 $opt $B/test/bench/gpucoll_bench -c $c -b 8 -e 524288 -n 2000 --no-nccl 2>&1 | grep -E "^ +[0-9]" | awk '{printf "%s ", $2}')
echo "$v $c: $r"
done
done
done
