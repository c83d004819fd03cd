/* np N: MPI_Reduce of random MPI_INT (SUM, MAX) on device buffers, every root,
 * in place and not, sizes 1-16 MiB, against a reference folded on the host
 * from an allgather of the inputs; prints the first bad element */
#include <mpi.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n, ndev; MPI_Comm_rank(MPI_COMM_WORLD, &me); MPI_Comm_size(MPI_COMM_WORLD, &n);
    cudaGetDeviceCount(&ndev); cudaSetDevice(me % ndev);
    size_t sizes[] = {1u<<20, (1u<<20)+12, (4u<<20), (16u<<20)-4};
    int bad = 0, runs = 0;
    for (int k = 0; k < 4; ++k) for (int root = 0; root < n; ++root) for (int ip = 0; ip < 2; ++ip) for (int mx = 0; mx < 2; ++mx) for (int fl = 0; fl < 2; ++fl) {
        int count = (int)(sizes[k] / 4);
        int *s = malloc(sizes[k]), *r = malloc(sizes[k]), *all = malloc(sizes[k] * n);
        void *ds, *dr; cudaMalloc(&ds, sizes[k]); cudaMalloc(&dr, sizes[k]);
        uint64_t x = 88172645463325252ull ^ (uint64_t)(me + 1) * 0x9e37 ^ (uint64_t) (k * 131 + root * 7 + ip * 3 + mx);
        for (int i = 0; i < count; ++i) { x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            if (fl) ((float *) s)[i] = (float) (1 + x % 7); else s[i] = (int) x; }
        MPI_Datatype t = fl ? MPI_FLOAT : MPI_INT;
        MPI_Allgather(s, count, t, all, count, t, MPI_COMM_WORLD);
        cudaMemcpy(ds, s, sizes[k], cudaMemcpyHostToDevice);
        cudaMemcpy(dr, s, sizes[k], cudaMemcpyHostToDevice);
        MPI_Op op = mx ? MPI_MAX : MPI_SUM;
        MPI_Reduce(ip && me == root ? MPI_IN_PLACE : ds, dr, count, t, op, root, MPI_COMM_WORLD);
        cudaMemcpy(r, dr, sizes[k], cudaMemcpyDeviceToHost);
        ++runs;
        if (me == root) {
            for (int i = 0; i < count; ++i) {
                int ok;
                if (fl) { float a = ((float *) all)[i];
                    for (int q = 1; q < n; ++q) { float b = ((float *) all)[(size_t) q * count + i]; a = mx ? (b > a ? b : a) : a + b; }
                    ok = ((float *) r)[i] == a;
                } else { uint32_t acc = (uint32_t) all[i]; int m = all[i];
                    for (int q = 1; q < n; ++q) { int b = all[(size_t) q * count + i]; acc += (uint32_t) b; if (b > m) m = b; }
                    ok = r[i] == (mx ? m : (int) acc); }
                if (!ok) { printf("BAD %s %s size %zu root %d%s: element %d of %d\n", fl ? "float" : "int", mx ? "max" : "sum", sizes[k], root, ip ? " in place" : "", i, count); bad++; break; }
            }
        }
        cudaFree(ds); cudaFree(dr); free(s); free(r); free(all);
    }
    int tot; MPI_Reduce(&bad, &tot, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0) printf("probe_reduce np %d: %d runs, %d bad\n", n, runs, tot);
    MPI_Finalize(); return 0;
}
