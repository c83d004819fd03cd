/*
 * Conformance test framework: what the MPI standard lets a program pass to
 * a collective, run on device buffers (or host ones), checked against a
 * host reference.  Written from the standard's definitions, not from
 * coll/gpu's paths.
 *
 * Memory comes from the CUDA driver API through dlopen("libcuda.so.1"):
 * on a GPU host real device memory on the GPU of local rank % ndev; in
 * make check the driver stand-in (test/fake) hands out "device" memory the
 * host cannot touch (a PROT_NONE view), so a host access of a device
 * buffer crashes here as it would on a GPU.  --mem host runs every buffer
 * in host memory, --mem mixed alternates per rank.
 *
 * A case is a named group of checks: cf_case() names it and arms the
 * watchdog (a hang becomes a failure naming the case, then the process
 * exits), cf_end() agrees across the world whether any rank failed it.
 * The last line is "N passed, N failed" (cases, counted on rank 0).
 */
#ifndef CONFORM_H
#define CONFORM_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

/* options: --mem device|host|mixed, --timeout S (watchdog, default 60),
 * --only SUBSTR (run cases whose name contains it), --quick, -v */
typedef struct {
    int rank, size;
    int device;        /* 1: this rank's cf_alloc returns device memory */
    int have_gpu;      /* a real GPU (not the stand-in) */
    int quick;
    int verbose;
    double timeout;
    const char *only;
} cf_env_t;
extern cf_env_t cf;

/* MPI_Init (thread level single unless CF_THREAD env), options, memory */
void cf_init(int *argc, char ***argv);
/* prints the tally, MPI_Finalize; returns the process exit code */
int cf_finish(void);

/* Device (or host, per --mem) memory; 0 bytes -> NULL, as a zero-length
 * CuPy array hands MPI a NULL pointer.  Freed with cf_free. */
void *cf_alloc(size_t bytes);
void cf_free(void *p);
/* host <-> buffer copies, any direction by address */
void cf_put(void *dst, const void *host_src, size_t bytes);
void cf_get(void *host_dst, const void *src, size_t bytes);
/* fill a buffer with the poison byte (0xA5) */
void cf_poison(void *dst, size_t bytes);
#define CF_POISON 0xA5

/* 1 when the case named by the formatted string runs (the --only filter);
 * arms the watchdog for it */
int cf_case(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* a failed check: the first few per case are printed with the rank */
void cf_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define CF_CHECK(cond, ...) do { if (!(cond)) cf_fail(__VA_ARGS__); } while (0)
/* an MPI call's return code: anything but MPI_SUCCESS fails the case */
void cf_rc(int rc, const char *call);
/* the case ends: every rank of the world calls it (collective on
 * MPI_COMM_WORLD, host buffers); returns 1 when no rank failed */
int cf_end(void);

/* Bytes that differ from the expected image: compares got (host) with want
 * (host) over n bytes, reports the first difference with what. */
int cf_same(const void *got, const void *want, size_t n, const char *what);

/* The predefined datatypes and the ops valid for each (MPI 4.1 §6.9.2). */
typedef enum { CF_INT, CF_FLOAT, CF_COMPLEX, CF_LOGICAL, CF_BYTE, CF_PAIR } cf_class_t;
typedef struct {
    MPI_Datatype type;
    const char *name;
    size_t size;         /* MPI_Type_size: the bytes that carry data */
    size_t extent;       /* MPI_Type_get_extent (pair types have padding) */
    cf_class_t cls;
} cf_type_t;
extern cf_type_t cf_types[];
extern int cf_ntypes;
/* Half precision, MPIX_C_FLOAT16 and MPIX_BFLOAT16 (MPI_DATATYPE_NULL
 * where coll/gpu does not provide them): the last two cf_types entries,
 * filled by cf_init after MPI_Init, which leaves them out of cf_ntypes
 * when they are missing */
extern MPI_Datatype cf_half_types[2];
void cf_types_init(void);
typedef struct {
    MPI_Op op;
    const char *name;
} cf_op_t;
extern const cf_op_t cf_ops[];
extern const int cf_nops;
/* whether MPI defines op on a type of this class */
int cf_op_valid(const cf_type_t *t, MPI_Op op);
/* element i of rank r's contribution for seed s, written into dst (one
 * element, t->size bytes); values stay small so sums and products of a
 * few ranks are exact in every type */
void cf_value(const cf_type_t *t, int r, size_t i, int s, void *dst);
/* acc = acc op in, one element, the host reference */
void cf_reduce1(const cf_type_t *t, MPI_Op op, void *acc, const void *in);

/* ---- added with the intra-communicator tests ---- */

/* the memory the buffers are in, for case names: "device", "host" or
 * "mixed" (what is in effect: "host" where --mem device found no driver) */
const char *cf_mem_name(void);
/* the cf_types entry of a predefined datatype, NULL if none */
const cf_type_t *cf_type_find(MPI_Datatype dt);
/* like cf_same over count elements of t (element i at i * extent), but
 * only the bytes that carry data: never the padding of pair types nor the
 * unused bytes of an x87 long double, which MPI need not write */
int cf_same_typed(const void *got, const void *want, size_t count, const cf_type_t *t,
                  const char *what);
/* like cf_value, but the values may use the type's whole width where op
 * allows it (sums and extremes scaled up, bit patterns for the bitwise
 * ops), so that a reduction done in a narrower type shows; still exact in
 * any order for up to 16 ranks.  op MPI_OP_NULL: cf_value's values. */
void cf_value_op(const cf_type_t *t, MPI_Op op, int r, size_t i, int s, void *dst);

/* this rank does not run the case: the MPI library underneath is known to
 * break it where coll/gpu only hands the call on (host buffers); why is
 * printed once per process, the case is counted apart from passed and
 * failed (a failure on any rank still fails it) */
void cf_skip(const char *why);

#endif /* CONFORM_H */
