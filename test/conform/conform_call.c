/*
 * One collective call in its three forms, and the data-movement engine
 * (blocks, sides, images) the tests describe their buffers with.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_coll.h"

const char *const cf_form_names[CF_NFORMS] = { "blocking", "nonblocking", "persistent" };
const char *const cf_rep_names[REP_N] = { "builtin", "contig", "vector", "resized" };
const char *const cf_layout_names[LAY_N] = { "packed", "gaps", "reversed", "negative" };
MPI_Datatype cf_move_types[] = { MPI_BYTE, MPI_SHORT, MPI_INT, MPI_DOUBLE, MPI_2INT,
                                 MPI_C_DOUBLE_COMPLEX, MPI_LONG_DOUBLE, MPI_FLOAT,
                                 MPI_DATATYPE_NULL, MPI_DATATYPE_NULL };
const char *const cf_move_type_names[] = { "byte", "short", "int", "double", "2int",
                                           "double-complex", "long-double", "float",
                                           "float16", "bfloat16" };
int cf_nmove_types = 8;

void cf_move_types_init(void)
{
    if (MPI_DATATYPE_NULL != cf_half_types[0] && MPI_DATATYPE_NULL != cf_half_types[1]) {
        cf_move_types[8] = cf_half_types[0];
        cf_move_types[9] = cf_half_types[1];
        cf_nmove_types = 10;
    }
}
const char *const cf_counts_names[CNT_N] = { "uniform", "varied", "count0-some", "count0-all" };
static const char *const coll_names[] = {
    "MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Reduce_scatter",
    "MPI_Reduce_scatter_block", "MPI_Scan", "MPI_Exscan", "MPI_Gather", "MPI_Gatherv",
    "MPI_Scatter", "MPI_Scatterv", "MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall",
    "MPI_Alltoallv", "MPI_Alltoallw"
};

const char *cf_coll_name(cf_coll_t k)
{
    return coll_names[k];
}

/* FORM3 picks the blocking call, its I-form or its _init by form, with
 * the same arguments: one list of arguments per collective */
#define FORM3(name, iname, ...)                                                           \
    (form == CF_BLOCKING ? MPI_##name(__VA_ARGS__)                                           \
     : form == CF_NONBLOCKING ? MPI_##iname(__VA_ARGS__, req)                                \
     : MPIX_##name##_init(__VA_ARGS__, MPI_INFO_NULL, req))
/* Barrier has no arguments but the communicator */
#define FORM3_BARRIER(comm)                                                                  \
    (form == CF_BLOCKING ? MPI_Barrier(comm)                                                 \
     : form == CF_NONBLOCKING ? MPI_Ibarrier(comm, req)                                      \
     : MPIX_Barrier_init(comm, MPI_INFO_NULL, req))

int cf_post(const cf_call_t *c, cf_form_t form, MPI_Request *req)
{
    switch (c->coll) {
    case C_BARRIER:
        return FORM3_BARRIER(c->comm);
    case C_BCAST:
        return FORM3(Bcast, Ibcast, c->rbuf, c->rcount, c->rtype, c->root, c->comm);
    case C_REDUCE:
        return FORM3(Reduce, Ireduce, c->sbuf, c->rbuf, c->rcount, c->rtype, c->op, c->root, c->comm);
    case C_ALLREDUCE:
        return FORM3(Allreduce, Iallreduce, c->sbuf, c->rbuf, c->rcount, c->rtype, c->op, c->comm);
    case C_REDUCE_SCATTER:
        return FORM3(Reduce_scatter, Ireduce_scatter, c->sbuf, c->rbuf, c->rcounts, c->rtype, c->op, c->comm);
    case C_REDUCE_SCATTER_BLOCK:
        return FORM3(Reduce_scatter_block, Ireduce_scatter_block, c->sbuf, c->rbuf, c->rcount, c->rtype, c->op, c->comm);
    case C_SCAN:
        return FORM3(Scan, Iscan, c->sbuf, c->rbuf, c->rcount, c->rtype, c->op, c->comm);
    case C_EXSCAN:
        return FORM3(Exscan, Iexscan, c->sbuf, c->rbuf, c->rcount, c->rtype, c->op, c->comm);
    case C_GATHER:
        return FORM3(Gather, Igather, c->sbuf, c->scount, c->stype, c->rbuf, c->rcount, c->rtype, c->root,
                     c->comm);
    case C_GATHERV:
        return FORM3(Gatherv, Igatherv, c->sbuf, c->scount, c->stype, c->rbuf, c->rcounts, c->rdispls,
                     c->rtype, c->root, c->comm);
    case C_SCATTER:
        return FORM3(Scatter, Iscatter, c->sbuf, c->scount, c->stype, c->rbuf, c->rcount, c->rtype, c->root,
                     c->comm);
    case C_SCATTERV:
        return FORM3(Scatterv, Iscatterv, c->sbuf, c->scounts, c->sdispls, c->stype, c->rbuf, c->rcount,
                     c->rtype, c->root, c->comm);
    case C_ALLGATHER:
        return FORM3(Allgather, Iallgather, c->sbuf, c->scount, c->stype, c->rbuf, c->rcount, c->rtype, c->comm);
    case C_ALLGATHERV:
        return FORM3(Allgatherv, Iallgatherv, c->sbuf, c->scount, c->stype, c->rbuf, c->rcounts, c->rdispls,
                     c->rtype, c->comm);
    case C_ALLTOALL:
        return FORM3(Alltoall, Ialltoall, c->sbuf, c->scount, c->stype, c->rbuf, c->rcount, c->rtype, c->comm);
    case C_ALLTOALLV:
        return FORM3(Alltoallv, Ialltoallv, c->sbuf, c->scounts, c->sdispls, c->stype, c->rbuf, c->rcounts,
                     c->rdispls, c->rtype, c->comm);
    case C_ALLTOALLW:
        return FORM3(Alltoallw, Ialltoallw, c->sbuf, c->scounts, c->sdispls, c->stypes, c->rbuf, c->rcounts,
                     c->rdispls, c->rtypes, c->comm);
    }
    return MPI_ERR_OTHER;
}

/* the call's own arguments pick how its request is completed (MPI_Wait,
 * MPI_Waitall or an MPI_Test loop), so that a rerun with --only completes
 * it the same way */
static int complete(MPI_Request *req, int style, const char **how)
{
    MPI_Status st;
    int rc, flag = 0;
    switch (style % 3) {
    case 0:
        *how = "MPI_Wait";
        rc = MPI_Wait(req, &st);
        break;
    case 1:
        *how = "MPI_Waitall";
        rc = MPI_Waitall(1, req, &st);
        if (rc == MPI_ERR_IN_STATUS) {
            rc = st.MPI_ERROR;
        }
        break;
    default:
        *how = "MPI_Test";
        do {
            rc = MPI_Test(req, &flag, &st);
        } while (rc == MPI_SUCCESS && !flag);
        break;
    }
    return rc;
}

void cf_run(const cf_call_t *c, cf_form_t form, const cf_hooks_t *h)
{
    MPI_Request req = MPI_REQUEST_NULL;
    char what[96];
    const char *how = "";
    int rounds = form == CF_PERSISTENT ? 2 : 1, round, rc;
    int style = c->coll * 7 + c->root + (c->scount & 3) + (c->rcount & 3) * 5;

    if (form == CF_PERSISTENT) {
        h->fill(h->ctx, 0);
        rc = cf_post(c, form, &req);
        if (rc != MPI_SUCCESS) {
            snprintf(what, sizeof(what), "%s_init", coll_names[c->coll]);
            cf_rc(rc, what);
            return;
        }
    }
    for (round = 0; round < rounds; ++round) {
        if (form != CF_PERSISTENT || round > 0) {
            h->fill(h->ctx, round);
        }
        if (form == CF_BLOCKING) {
            snprintf(what, sizeof(what), "%s", coll_names[c->coll]);
            rc = cf_post(c, form, NULL);
        } else {
            if (form == CF_NONBLOCKING) {
                snprintf(what, sizeof(what), "MPI_I%s", coll_names[c->coll] + 4);
                rc = cf_post(c, form, &req);
            } else {
                snprintf(what, sizeof(what), "MPI_Start of %s_init (start %d)", coll_names[c->coll],
                         round + 1);
                rc = MPI_Start(&req);
            }
            if (rc == MPI_SUCCESS) {
                rc = complete(&req, style + round, &how);
                if (rc != MPI_SUCCESS) {
                    snprintf(what + strlen(what), sizeof(what) - strlen(what), " (%s)", how);
                }
            }
        }
        if (rc != MPI_SUCCESS) {
            cf_rc(rc, what);
            break;
        }
        h->check(h->ctx, round);
    }
    if (form == CF_PERSISTENT && req != MPI_REQUEST_NULL) {
        cf_rc(MPI_Request_free(&req), "MPI_Request_free");
    }
}

/* ---- blocks ---- */

void cf_block(cf_block_t *b, MPI_Datatype basic, int n, cf_rep_t rep)
{
    MPI_Aint lb, ext;
    MPI_Datatype t;
    memset(b, 0, sizeof(*b));
    MPI_Type_get_extent(basic, &lb, &ext);
    b->n = n;
    b->esize = (size_t) ext;
    b->stride = (size_t) ext;
    b->type = basic;
    b->count = n;
    if (n == 0 || rep == REP_BUILTIN) {
        b->ext = (size_t) n * b->esize;
        return;
    }
    switch (rep) {
    case REP_CONTIG:
        MPI_Type_contiguous(n, basic, &b->type);
        b->count = 1;
        break;
    case REP_VECTOR:
        MPI_Type_vector(n, 1, 2, basic, &t);
        MPI_Type_create_resized(t, 0, 2 * n * ext, &b->type);
        MPI_Type_free(&t);
        b->count = 1;
        b->stride = 2 * b->esize;
        break;
    default:
        MPI_Type_create_resized(basic, 0, 2 * ext, &b->type);
        b->stride = 2 * b->esize;
        break;
    }
    MPI_Type_commit(&b->type);
    b->owned = 1;
    b->ext = (size_t) n * b->stride;
}

void cf_block_free(cf_block_t *b)
{
    if (b->owned) {
        MPI_Type_free(&b->type);
        b->owned = 0;
    }
}

/* ---- sides ---- */

#define GUARD 16

/* byte b of element k of stream (src, key) in round seed: never the
 * poison nor the send gaps' junk, so a byte that was not written shows */
static void elem(int src, int key, size_t k, int seed, size_t esize, unsigned char *dst)
{
    uint64_t x = 0;
    size_t b;
    for (b = 0; b < esize; ++b) {
        unsigned char v;
        if (b % 8 == 0) {
            x = ((uint64_t) (unsigned) src << 48) ^ ((uint64_t) (unsigned) key << 32) ^ k * 0x9E3779B97F4A7C15ull ^
                (uint64_t) (seed * 8 + (int) (b / 8) + 1) * 0xC2B2AE3D27D4EB4Full;
            x ^= x >> 29;
            x *= 0xBF58476D1CE4E5B9ull;
            x ^= x >> 32;
        }
        v = (unsigned char) (x >> (8 * (b % 8)));
        dst[b] = v == CF_POISON || v == CF_JUNK ? (unsigned char) (v ^ 0x11) : v;
    }
}

void cf_side_init(cf_side_t *s, int n, unsigned char bg)
{
    int q;
    memset(s, 0, sizeof(*s));
    s->n = n;
    s->bg = bg;
    for (q = 0; q < n; ++q) {
        s->slot[q].src = s->slot[q].isrc = -1;
    }
}

void cf_side_place(cf_side_t *s, cf_layout_t lay, size_t unit)
{
    ptrdiff_t pos = 0, shift;
    int j, q;
    for (j = 0; j < s->n; ++j) {
        /* reversed: the block of peer q lies before the one of q - 1 */
        q = lay == LAY_REVERSED || lay == LAY_NEGATIVE ? s->n - 1 - j : j;
        if (lay != LAY_PACKED) {
            pos += (ptrdiff_t) (unit * (size_t) (1 + q % 2));
        }
        s->slot[q].disp = pos;
        pos += (ptrdiff_t) ((s->slot[q].blk.ext + unit - 1) / unit * unit);
    }
    if (lay == LAY_NEGATIVE) {
        /* the pointer MPI gets lies mid-buffer: the first blocks' displacements are negative */
        shift = pos / 2 / (ptrdiff_t) unit * (ptrdiff_t) unit;
        for (q = 0; q < s->n; ++q) {
            s->slot[q].disp -= shift;
        }
    }
}

void cf_side_alloc(cf_side_t *s)
{
    ptrdiff_t lo = 0, hi = 0;
    int q, any = 0;
    for (q = 0; q < s->n; ++q) {
        const cf_slot_t *sl = &s->slot[q];
        if (sl->blk.n == 0) {
            continue;
        }
        if (!any || sl->disp < lo) lo = sl->disp;
        if (!any || sl->disp + (ptrdiff_t) sl->blk.ext > hi) hi = sl->disp + (ptrdiff_t) sl->blk.ext;
        any = 1;
    }
    if (!any) {
        /* no data at all: MPI gets NULL, as from a zero-length array */
        s->bytes = 0;
        s->mem = NULL;
        s->ptr = NULL;
        return;
    }
    /* the pointer itself lies inside the allocation, guards either end */
    lo = lo > 0 ? 0 : lo;
    s->base = GUARD + (size_t) -lo;
    s->bytes = (size_t) (hi - lo) + 2 * GUARD;
    s->mem = cf_alloc(s->bytes);
    s->ptr = s->mem + s->base;
    s->want = malloc(s->bytes);
    s->got = malloc(s->bytes);
}

/* the image of the slots' (src, key) or (isrc, ikey) streams */
static void image(const cf_side_t *s, unsigned char *img, int seed, int before)
{
    int q, k;
    memset(img, s->bg, s->bytes);
    for (q = 0; q < s->n; ++q) {
        const cf_slot_t *sl = &s->slot[q];
        int src = before ? sl->isrc : sl->src, key = before ? sl->ikey : sl->key;
        if (src < 0) {
            continue;
        }
        for (k = 0; k < sl->blk.n; ++k) {
            elem(src, key, (size_t) k, seed, sl->blk.esize,
                 img + s->base + sl->disp + (ptrdiff_t) ((size_t) k * sl->blk.stride));
        }
    }
}

void cf_side_fill(cf_side_t *s, int seed)
{
    if (!s->mem) {
        return;
    }
    image(s, s->got, seed, 1);
    cf_put(s->mem, s->got, s->bytes);
    image(s, s->want, seed, 0);
}

int cf_side_check(cf_side_t *s, const char *what)
{
    size_t i;
    int q;
    if (!s->mem) {
        return 1;
    }
    cf_get(s->got, s->mem, s->bytes);
    if (memcmp(s->got, s->want, s->bytes) == 0) {
        return 1;
    }
    /* name the place: a guard, a gap, or whose block */
    for (i = 0; i < s->bytes && s->got[i] == s->want[i]; ++i) {
    }
    for (q = 0; q < s->n; ++q) {
        const cf_slot_t *sl = &s->slot[q];
        ptrdiff_t off = (ptrdiff_t) i - (ptrdiff_t) s->base - sl->disp;
        if (sl->blk.n > 0 && off >= 0 && (size_t) off < sl->blk.ext) {
            char w[160];
            snprintf(w, sizeof(w), "%s, block of peer %d (byte %td of it, element %zu)", what, q, off,
                     (size_t) off / sl->blk.stride);
            return cf_same(s->got, s->want, s->bytes, w);
        }
    }
    {
        char w[160];
        snprintf(w, sizeof(w), "%s, %s", what,
                 i < GUARD || i >= s->bytes - GUARD ? "guard outside the buffer" : "gap between blocks");
        return cf_same(s->got, s->want, s->bytes, w);
    }
}

void cf_side_free(cf_side_t *s)
{
    int q;
    cf_free(s->mem);
    free(s->want);
    free(s->got);
    for (q = 0; q < s->n; ++q) {
        cf_block_free(&s->slot[q].blk);
    }
    cf_block_free(&s->proto);
    s->mem = NULL;
    s->want = s->got = NULL;
}

/* ---- a data-movement case ---- */

static void move_fill(void *ctx, int round)
{
    cf_move_t *m = ctx;
    int k;
    for (k = 0; k < m->n; ++k) {
        cf_side_fill(m->side[k], round);
    }
}

static void move_check(void *ctx, int round)
{
    cf_move_t *m = ctx;
    char what[96];
    int k;
    for (k = 0; k < m->n; ++k) {
        snprintf(what, sizeof(what), "%s%s", m->what[k], round ? " (second start)" : "");
        cf_side_check(m->side[k], what);
    }
}

void cf_move_add(cf_move_t *m, cf_side_t *s, const char *what)
{
    m->side[m->n] = s;
    m->what[m->n++] = what;
}

void cf_move_hooks(cf_move_t *m, cf_hooks_t *h)
{
    h->fill = move_fill;
    h->check = move_check;
    h->ctx = m;
}

void cf_move_run(const cf_call_t *c, cf_form_t form, cf_move_t *m)
{
    cf_hooks_t h;
    cf_move_hooks(m, &h);
    cf_run(c, form, &h);
}

/* ---- counts ---- */

int cf_count(cf_counts_t c, int n, int i, int j)
{
    switch (c) {
    case CNT_UNIFORM:
        return n;
    case CNT_VARIED:
        return n + (i + j) % 3;
    case CNT_ZERO_SOME:
        return (i + j) % 2 ? 0 : n + (i * j) % 3;
    default:
        return 0;
    }
}

int cf_sizes(int esize, int *out)
{
    int k = 0;
    out[k++] = 0;
    out[k++] = 1;
    out[k++] = 7;
    out[k++] = 1031;
    if (!cf.quick) {
        out[k++] = (1 << 20) / esize + 3;
    }
    return k;
}
