/*
 * What the GPU correctness tests share: the predefined ops with the type
 * classes MPI defines them for (cls: 0 integer, 1 floating, 2 complex,
 * 3 C bool, 4 value-index pair, 5 MPI_BYTE), and the input generator.
 */
#ifndef GPUCOLL_GPU_TEST_COMMON_H
#define GPUCOLL_GPU_TEST_COMMON_H

#include <mpi.h>
#include <stdint.h>

typedef struct { MPI_Datatype t; const char *name; int cls; } type_t;
typedef struct { MPI_Op op; const char *name; int ok[6]; } op_t;

static const op_t ops[] = {
    { MPI_SUM, "sum", { 1, 1, 1, 0, 0, 0 } }, { MPI_PROD, "prod", { 1, 1, 1, 0, 0, 0 } },
    { MPI_MIN, "min", { 1, 1, 0, 0, 0, 0 } }, { MPI_MAX, "max", { 1, 1, 0, 0, 0, 0 } },
    { MPI_LAND, "land", { 1, 0, 0, 1, 0, 0 } }, { MPI_LOR, "lor", { 1, 0, 0, 1, 0, 0 } },
    { MPI_LXOR, "lxor", { 1, 0, 0, 1, 0, 0 } }, { MPI_BAND, "band", { 1, 0, 0, 0, 0, 1 } },
    { MPI_BOR, "bor", { 1, 0, 0, 0, 0, 1 } }, { MPI_BXOR, "bxor", { 1, 0, 0, 0, 0, 1 } },
    { MPI_MAXLOC, "maxloc", { 0, 0, 0, 0, 1, 0 } }, { MPI_MINLOC, "minloc", { 0, 0, 0, 0, 1, 0 } },
};
#define NOPS ((int) (sizeof(ops) / sizeof(ops[0])))

/* splitmix64: reproducible per (test, rank) without shared state */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

#endif /* GPUCOLL_GPU_TEST_COMMON_H */
