#!/bin/sh
# Usage (as the program mpirun starts): stale_board.sh PROGRAM [ARGS...]
#
# Leaves an earlier job's memory-kind board under this rank's own board name
# (/dev/shm/gpucoll-kind-UID-JOBID-RANK), then runs PROGRAM.  That is what a
# job finds when its mpirun got the pid of an earlier mpirun that was killed
# or aborted (the jobid comes from host and pid; pids repeat in a fresh pid
# namespace): the earlier job's boards are still there under the same names.
# The planted board says MPI_COMM_WORLD made 2000 calls whose 24 newest kind
# changes all lie after call 1000, so a peer that reads it instead of this
# rank's own board gets GPU_ERR_INVALID for call 0 ("stopped at an earlier
# failure").  coll/gpu must remove it before any peer can open it
# (mca_coll_gpu_kind_init).
#
# Open MPI 4.1 only: the jobid is in OMPI_MCA_ess_base_jobid there; under
# 5.0 it is a hash of the PMIx namespace, and the board is not planted.
jobid=${OMPI_MCA_ess_base_jobid:-}
rank=${OMPI_COMM_WORLD_RANK:-}
if [ -n "$jobid" ] && [ -n "$rank" ]; then
    le64() {   # one little-endian 64-bit word
        v=$1
        for _ in 1 2 3 4 5 6 7 8; do
            printf "\\$(printf %03o $((v & 255)))"
            v=$((v >> 8))
        done
    }
    f=/dev/shm/gpucoll-kind-$(id -u)-$jobid-$rank
    {
        le64 $((0x676b696e64763032))                      # GPU_KIND_MAGIC
        for _ in 1 2 3 4 5 6 7; do le64 0; done
        # slot 0 (MPI_COMM_WORLD's key 0 hashes there): key + 1, pub, nchg,
        # freed_at, was_key, pad[3], then the 24 change points
        le64 1; le64 2000; le64 1000; le64 0; le64 0; le64 0; le64 0; le64 0
        c=0
        while [ $c -lt 24 ]; do
            le64 $(( ((1001 + c) << 3) | (c & 1) ))
            c=$((c + 1))
        done
    } > "$f"
    truncate -s 1048640 "$f"   # sizeof(gpu_kind_board_t): 64 + 4096 slots of 256
    # rank 0 late: its peers reach their first call first
    [ "$rank" = 0 ] && sleep 1
fi
exec "$@"
