/*
 * test_conform_nbr: neighborhood collectives, intercommunicator
 * collectives and MPI_Reduce_local on device buffers, checked against
 * images built on the host from the MPI standard's definitions.
 *
 * What the three parts share: the call forms, the values every sender
 * writes (a function of who sends which block, so a receiver can build its
 * expected image without asking anyone), and datatype layouts that say
 * where each element of `count` items of a type lies.
 */
#ifndef CONFORM_NBR_H
#define CONFORM_NBR_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "conform.h"

/* The three forms of a collective.  A blocking call is complete when it
 * returns; a nonblocking one is waited for; a persistent one is started
 * and waited for twice with new inputs (the request must read its buffers
 * at start, not at init). */
typedef enum { CFN_BLOCKING, CFN_NONBLOCKING, CFN_PERSISTENT, CFN_NFORMS } cfn_form_t;
extern const char *const cfn_form_name[CFN_NFORMS];
/* One case's call, run in its form: prepare() writes round r's inputs
 * and poisons the outputs, post() posts the call (once: for persistent
 * the init, started each round), check() compares the outputs (ok 0: the
 * call failed, only free what prepare made).  Embedded first in a case's
 * own struct. */
typedef struct cfn_call {
    cfn_form_t form;
    const char *name; /* the MPI call, for errors */
    int (*post)(struct cfn_call *c, MPI_Request *req);
    void (*prepare)(struct cfn_call *c, int round);
    void (*check)(struct cfn_call *c, int round, int ok);
} cfn_call_t;
void cfn_run(cfn_call_t *c);

/* "device", "host" or "mixed": what --mem gave the ranks, for case names */
extern const char *cfn_mem;

/* A datatype as a sequence of equally sized elements: element e of
 * `count` items lies at byte (e / nel) * ext + (e % nel) * stride * esz.
 * kind says how a value is written: 'i' int32, 'd' double, 'c' char. */
typedef struct {
    MPI_Datatype type;
    int esz, nel, stride;
    size_t ext;
    char kind;
} cfn_td_t;
extern const cfn_td_t cfn_td_int, cfn_td_double, cfn_td_char;
/* MPI_Type_vector(n, 1, stride, MPI_INT), committed and kept until
 * cfn_types_free(); n >= 1 */
cfn_td_t cfn_td_vector(int n, int stride);
void cfn_types_free(void);
/* bytes that `count` items span from their displacement */
size_t cfn_span(const cfn_td_t *td, int count);

/* the value of element e of block blk sent by src (seed: the round) */
uint32_t cfn_val(int src, int blk, size_t e, int seed);
/* writes count items' values for (src, blk) into a host image at disp */
void cfn_write(unsigned char *img, size_t disp, const cfn_td_t *td, int count,
               int src, int blk, int seed);

/* Places n blocks of span[j] bytes in one buffer: in index order
 * (CFN_IN_ORDER, no gaps: the layout of the plain collectives), reversed
 * or rotated by one, each after a gap of 1-3 units that must stay
 * poisoned.  disp in bytes, multiples of unit; returns the buffer's size
 * (0 when every span is 0, so the buffer is NULL). */
enum { CFN_IN_ORDER, CFN_REVERSED, CFN_ROTATED };
size_t cfn_place(int n, const size_t *span, int order, size_t unit, MPI_Aint *disp);

/* a host image of bytes poisoned (NULL for 0 bytes) */
unsigned char *cfn_image(size_t bytes);
/* a cf_alloc buffer holding the image */
void *cfn_upload(const unsigned char *img, size_t bytes);
/* reads buf back and compares it byte for byte with want */
void cfn_check(const void *buf, const unsigned char *want, size_t bytes, const char *what);
/* calloc that exits on failure */
void *cfn_calloc(size_t n, size_t size);

/* One side (send or receive) of a call: n blocks, block j holds cnt[j]
 * items of td[j] at byte disp[j] (idisp: the same in items of td[j], for
 * the v variants), filled with the values of (from[j], blk[j]); from[j]
 * MPI_PROC_NULL: nothing arrives there, it stays poisoned. */
typedef struct {
    int n;
    cfn_td_t *td;
    int *cnt, *from, *blk, *idisp;
    MPI_Aint *disp;
    MPI_Datatype *types;
    size_t *span;
    size_t bytes;
} cfn_side_t;
/* n blocks of MPI_INT, count 0, from MPI_PROC_NULL */
void cfn_side_init(cfn_side_t *s, int n);
/* lays the blocks out (cfn_place) once td, cnt are set */
void cfn_side_place(cfn_side_t *s, int order, size_t unit);
/* the side's image for a round: poison, and each block's values */
unsigned char *cfn_side_image(const cfn_side_t *s, int seed);
void cfn_side_free(cfn_side_t *s);

/* the counts both ends of an edge agree on without talking: items rank s
 * sends in its block i (0 on some edges), and what rank s contributes to
 * a v-gather (0 at rank 1) */
int cfn_edge_count(int s, int i);
int cfn_gather_count(int s);
/* alltoallw: an edge's datatypes on the sending and the receiving side,
 * one type signature (n ints or doubles) through different types: a
 * strided vector on one side leaves holes that must stay poisoned */
void cfn_edge_types(int s, int i, int n, cfn_td_t *st, int *sc, cfn_td_t *rt, int *rc);

/* the parts; each runs its cases on MPI_COMM_WORLD's ranks */
void cfn_neighbor_run(void);
void cfn_inter_run(void);

#endif /* CONFORM_NBR_H */
