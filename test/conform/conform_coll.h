/*
 * What the intra-communicator tests share: the communicators, one
 * collective call in its three forms, and the data-movement engine.
 *
 * The engine describes a buffer as a side: one slot per peer (or one
 * slot), each a block of n elements of a predefined type laid out by some
 * datatype at some byte displacement, holding the elements of a known
 * (source rank, key) stream before and after the call.  From that the
 * engine builds the buffer's image before the call and the image it must
 * have after it: every byte outside the blocks (gaps, guards before and
 * after the buffer) must still hold what it held.
 */
#ifndef CONFORM_COLL_H
#define CONFORM_COLL_H

#include <stddef.h>

#include "conform.h"
#include "mpi_persist_compat.h"

#define CF_MAXP 64     /* ranks a communicator may have in this test */
#define CF_JUNK 0x5C   /* the gaps of send buffers: never to be seen anywhere */

typedef struct {
    MPI_Comm comm;
    const char *name;
    int rank, size;
    /* the largest size among the world's instances of this communicator
     * (an odd/even split has two): loops over roots go this far on every
     * rank, so that every rank runs the same cases */
    int maxsize;
    int one_node;      /* every rank on one host: its clocks agree */
} cf_comm_t;

typedef enum { CF_BLOCKING, CF_NONBLOCKING, CF_PERSISTENT, CF_NFORMS } cf_form_t;
extern const char *const cf_form_names[CF_NFORMS];

typedef enum {
    C_BARRIER, C_BCAST, C_REDUCE, C_ALLREDUCE, C_REDUCE_SCATTER, C_REDUCE_SCATTER_BLOCK, C_SCAN,
    C_EXSCAN, C_GATHER, C_GATHERV, C_SCATTER, C_SCATTERV, C_ALLGATHER, C_ALLGATHERV, C_ALLTOALL,
    C_ALLTOALLV, C_ALLTOALLW
} cf_coll_t;

/* every argument any intra-communicator collective takes */
typedef struct {
    cf_coll_t coll;
    const void *sbuf;
    void *rbuf;
    int scount, rcount;
    const int *scounts, *sdispls, *rcounts, *rdispls;
    MPI_Datatype stype, rtype;
    const MPI_Datatype *stypes, *rtypes;
    MPI_Op op;
    int root;
    MPI_Comm comm;
} cf_call_t;

/* fill(ctx, round) sets the inputs and poisons the outputs, check(ctx,
 * round) looks at the result; a persistent request runs two rounds with
 * different data, the other forms one */
typedef struct {
    void (*fill)(void *ctx, int round);
    void (*check)(void *ctx, int round);
    void *ctx;
} cf_hooks_t;
void cf_run(const cf_call_t *c, cf_form_t form, const cf_hooks_t *h);
/* the call alone: blocking (req unused), its I-form or its _init */
int cf_post(const cf_call_t *c, cf_form_t form, MPI_Request *req);
/* the collective's name in MPI, "MPI_Allgatherv" */
const char *cf_coll_name(cf_coll_t k);

/* a case's call made ready but not run, so that several can be posted
 * together: cleanup frees what preparing it took */
typedef struct cf_prep {
    cf_call_t call;
    cf_hooks_t hooks;
    void (*cleanup)(struct cf_prep *);
    void *state;
} cf_prep_t;

/* ---- blocks and sides ---- */

typedef enum {
    REP_BUILTIN,   /* n x the predefined type */
    REP_CONTIG,    /* 1 x MPI_Type_contiguous(n) */
    REP_VECTOR,    /* 1 x MPI_Type_vector(n, 1, 2) resized to 2n elements: a gap after each */
    REP_RESIZED,   /* n x the type resized to two elements' extent: the same gaps */
    REP_N
} cf_rep_t;
extern const char *const cf_rep_names[REP_N];

typedef struct {
    MPI_Datatype type;  /* what MPI gets: type and count */
    int count;
    int n;              /* elements of the predefined type */
    size_t esize;       /* bytes of one */
    size_t stride;      /* bytes from one element to the next */
    size_t ext;         /* count x the type's extent */
    int owned;          /* a derived type to free */
} cf_block_t;
void cf_block(cf_block_t *b, MPI_Datatype basic, int n, cf_rep_t rep);
void cf_block_free(cf_block_t *b);

typedef struct {
    cf_block_t blk;
    ptrdiff_t disp;     /* bytes from the pointer MPI gets */
    int src, key;       /* after the call element k is stream (src, key)'s k-th; src < 0: no data */
    int isrc, ikey;     /* before the call */
} cf_slot_t;

typedef enum { LAY_PACKED, LAY_GAPS, LAY_REVERSED, LAY_NEGATIVE, LAY_N } cf_layout_t;
extern const char *const cf_layout_names[LAY_N];

typedef struct {
    int n;              /* slots in use */
    cf_slot_t slot[CF_MAXP];
    unsigned char bg;   /* what lies outside the blocks: CF_JUNK in send buffers, else poison */
    size_t bytes, base; /* the allocation and the pointer's offset in it */
    unsigned char *mem; /* the allocation (cf_alloc), NULL when no block has data */
    void *ptr;          /* what MPI gets */
    unsigned char *want, *got;
    cf_block_t proto;   /* a v-collective's one-element datatype, freed with the side */
} cf_side_t;

/* an empty side of n slots, each without data (slots are then set) */
void cf_side_init(cf_side_t *s, int n, unsigned char bg);
/* displacements for the slots, multiples of unit bytes */
void cf_side_place(cf_side_t *s, cf_layout_t lay, size_t unit);
/* allocates (NULL when no slot has data) with guards around */
void cf_side_alloc(cf_side_t *s);
/* the image before the call, into the buffer, and the one wanted after */
void cf_side_fill(cf_side_t *s, int seed);
/* the buffer against the wanted image; returns 1 when equal */
int cf_side_check(cf_side_t *s, const char *what);
void cf_side_free(cf_side_t *s);

/* a data-movement case: its buffers, filled before each round and
 * checked after it (send buffers unchanged, receive buffers as wanted) */
typedef struct {
    int n;
    cf_side_t *side[4];
    const char *what[4];
} cf_move_t;
void cf_move_add(cf_move_t *m, cf_side_t *s, const char *what);
void cf_move_run(const cf_call_t *c, cf_form_t form, cf_move_t *m);
void cf_move_hooks(cf_move_t *m, cf_hooks_t *h);

/* the predefined types the data-movement cases run: every element size */
extern MPI_Datatype cf_move_types[];
extern const char *const cf_move_type_names[];
extern int cf_nmove_types;
/* the half-precision handles (cf_half_types) join cf_move_types when present */
void cf_move_types_init(void);
#define CF_MOVE_INT 2
#define CF_MOVE_FLOAT 7

/* counts per peer for the v-variants */
typedef enum { CNT_UNIFORM, CNT_VARIED, CNT_ZERO_SOME, CNT_ZERO_ALL, CNT_N } cf_counts_t;
extern const char *const cf_counts_names[CNT_N];
/* the count of the block from rank i to rank j: symmetric in i and j */
int cf_count(cf_counts_t c, int n, int i, int j);

/* the element counts a case runs: 0, 1, odd, 1000+odd, >= 1 MiB per rank */
int cf_sizes(int esize, int *out);

/* one data-movement case: Bcast, Gather(v), Scatter(v), Allgather(v),
 * Alltoall(v) (conform_move.c) */
typedef struct {
    const cf_comm_t *c;
    cf_coll_t coll;
    cf_form_t form;
    int root;           /* rooted collectives */
    int n;              /* elements per block (v: the base of cf_count) */
    int ti;             /* cf_move_types index */
    int inplace;
    /* arguments the standard says are ignored (non-roots' root-side ones,
     * the send ones of MPI_IN_PLACE) passed as NULL, garbage counts,
     * MPI_DATATYPE_NULL; 0: passed as a real program might */
    int nullargs;
    cf_counts_t cnt;    /* v */
    cf_layout_t slay, rlay;
    /* the datatypes describing the send and receive blocks on even and odd
     * ranks: the type signatures match, the datatypes need not */
    cf_rep_t srep[2], rrep[2];
} cf_mv_t;
void cf_move_case(const cf_mv_t *p);
void cf_move_prepare(const cf_mv_t *p, cf_prep_t *out);

/* one reduction case (conform_reduce.c) */
typedef struct {
    const cf_comm_t *c;
    cf_coll_t coll;     /* C_REDUCE ... C_EXSCAN */
    cf_form_t form;
    const cf_type_t *t;
    int op;             /* cf_ops index */
    int n;              /* count; Reduce_scatter: the base of its recvcounts */
    cf_counts_t cnt;    /* Reduce_scatter's recvcounts */
    int root, inplace;
} cf_red_t;
void cf_red_prepare(const cf_red_t *p, cf_prep_t *out);

/* the test files */
void cf_test_barrier(const cf_comm_t *c, const char *when);
void cf_test_move(const cf_comm_t *c);
void cf_test_alltoallw(const cf_comm_t *c);
void cf_test_signatures(const cf_comm_t *c);
void cf_test_reduce(const cf_comm_t *c);
void cf_test_outstanding(const cf_comm_t *c);

#endif /* CONFORM_COLL_H */
