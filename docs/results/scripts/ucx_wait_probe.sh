#!/bin/bash
# UCX alone between 2 processes: 2 MiB host-memory exchanges on 1 and 8 workers (threads) for
# three wait policies of gpu_ucx.c's waitall (a: sleep from 200 us idle, sleeps up to 1 ms;
# b: from 2 ms, up to 50 us; c: spin).  Binaries built on the build machine from
# test/bench/ucx_bw_probe.c and a copy of gpu_ucx.c with the policy as IDLE_S/MAXS:
#   sed 's/if (now - idle_since > [^)]*) {/if (now - idle_since > IDLE_S) {/;
#        s/sleep_ns = sleep_ns < [0-9]* ? 2/sleep_ns = sleep_ns < MAXS ? 2/' ucx_transport/gpu_ucx.c > v.c
#   for v in "a 200e-6 1000000" "b 2e-3 50000" "c 1e9 1"; do set -- $v
#     gcc -O2 -std=gnu11 -DIDLE_S=$2 -DMAXS=$3 -I. -Iucx_transport -I/usr/lib/x86_64-linux-gnu/openmpi/include \
#       test/bench/ucx_bw_probe.c v.c util/gpu_status.c -o gpurun/ucxbw_$1 -lmpi -lucp -lucs -lpthread; done
# GPU host, repo root, gpurun/ carried:  bash docs/results/scripts/ucx_wait_probe.sh
. .gpuhost/setup.sh >/dev/null 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for v in a b c; do for T in 1 8; do for tls in sm,self tcp,self; do
printf '%s %-9s ' $v $tls; UCX_TLS=$tls timeout 30 mpirun --bind-to none -np 2 -x UCX_TLS -x LD_LIBRARY_PATH gpurun/ucxbw_$v $T 2097152 100 2>&1 | grep GB || echo fail
done; done; done
