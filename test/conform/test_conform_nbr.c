/*
 * Conformance test, second program: neighborhood collectives (conform_nbr.c),
 * intercommunicator collectives (conform_inter.c) and MPI_Reduce_local,
 * on device buffers from cf_alloc, every output poisoned first and checked
 * byte for byte against an image built on the host from the MPI standard's
 * definition of the call.
 *
 *   test_conform_nbr [--mem device|host|mixed] [--quick] [--only SUBSTR] ...
 *
 * The last line is "N passed, N failed" (see conform.h for the options).
 * CFN_DUMP=1 in the environment prints both images of a failed buffer
 * comparison (got/want per byte).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "conform_nbr.h"

/* ---- shared by the three parts -------------------------------------------- */

const char *const cfn_form_name[CFN_NFORMS] = {"blocking", "nonblocking", "persistent"};
const char *cfn_mem = "device";

/* rounds a case runs with one posted call (2 for persistent) */
static int cfn_rounds(cfn_form_t f)
{
    return CFN_PERSISTENT == f ? 2 : 1;
}

/* the second half of a call after its post: nothing for blocking, a wait
 * for nonblocking, start + wait for persistent */
static int cfn_complete(cfn_form_t f, MPI_Request *req, const char *call)
{
    char what[96];
    int rc = MPI_SUCCESS;
    if (CFN_PERSISTENT == f) {
        rc = MPI_Start(req);
        snprintf(what, sizeof what, "MPI_Start of %s", call);
        cf_rc(rc, what);
        if (MPI_SUCCESS != rc) {
            return rc;
        }
    }
    if (CFN_BLOCKING != f) {
        rc = MPI_Wait(req, MPI_STATUS_IGNORE);
        snprintf(what, sizeof what, "MPI_Wait of %s", call);
        cf_rc(rc, what);
    }
    return rc;
}

void cfn_run(cfn_call_t *c)
{
    /* the call's name in its form: MPI_Ibcast, MPI_Bcast_init */
    char name[64];
    if (CFN_NONBLOCKING == c->form) {
        snprintf(name, sizeof name, "MPI_I%c%s", tolower((unsigned char)c->name[4]), c->name + 5);
    } else {
        snprintf(name, sizeof name, "%s%s", c->name, CFN_PERSISTENT == c->form ? "_init" : "");
    }
    MPI_Request req = MPI_REQUEST_NULL;
    for (int round = 0; round < cfn_rounds(c->form); ++round) {
        int rc = MPI_SUCCESS;
        c->prepare(c, round);
        if (0 == round) {
            rc = c->post(c, &req);
            cf_rc(rc, name);
        }
        if (MPI_SUCCESS == rc) {
            rc = cfn_complete(c->form, &req, name);
        }
        c->check(c, round, MPI_SUCCESS == rc);
        if (MPI_SUCCESS != rc) {
            break;
        }
    }
    if (CFN_PERSISTENT == c->form && MPI_REQUEST_NULL != req) {
        MPI_Request_free(&req);
    }
}

const cfn_td_t cfn_td_int = {MPI_INT, 4, 1, 1, 4, 'i'};
const cfn_td_t cfn_td_double = {MPI_DOUBLE, 8, 1, 1, 8, 'd'};
const cfn_td_t cfn_td_char = {MPI_CHAR, 1, 1, 1, 1, 'c'};

/* committed vector types, made once per (n, stride) */
#define CFN_MAX_VEC 64
static struct { int n, stride; MPI_Datatype type; } vecs[CFN_MAX_VEC];
static int nvecs;

cfn_td_t cfn_td_vector(int n, int stride)
{
    cfn_td_t td = {MPI_DATATYPE_NULL, 4, n, stride, (size_t)((n - 1) * stride + 1) * 4, 'i'};
    for (int i = 0; i < nvecs; ++i) {
        if (vecs[i].n == n && vecs[i].stride == stride) {
            td.type = vecs[i].type;
            return td;
        }
    }
    if (nvecs == CFN_MAX_VEC) {
        fprintf(stderr, "test_conform_nbr: more than %d vector types\n", CFN_MAX_VEC);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Type_vector(n, 1, stride, MPI_INT, &td.type);
    MPI_Type_commit(&td.type);
    vecs[nvecs].n = n;
    vecs[nvecs].stride = stride;
    vecs[nvecs++].type = td.type;
    return td;
}

void cfn_types_free(void)
{
    for (int i = 0; i < nvecs; ++i) {
        MPI_Type_free(&vecs[i].type);
    }
    nvecs = 0;
}

size_t cfn_span(const cfn_td_t *td, int count)
{
    return count > 0 ? (size_t)count * td->ext : 0;
}

uint32_t cfn_val(int src, int blk, size_t e, int seed)
{
    uint32_t x = (uint32_t)src * 0x9E3779B1u ^ (uint32_t)blk * 0x85EBCA77u
                 ^ (uint32_t)e * 0xC2B2AE3Du ^ (uint32_t)(seed + 1) * 0x27D4EB2Fu;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return x;
}

void cfn_write(unsigned char *img, size_t disp, const cfn_td_t *td, int count,
               int src, int blk, int seed)
{
    size_t nel = count > 0 ? (size_t)count * td->nel : 0;
    for (size_t e = 0; e < nel; ++e) {
        unsigned char *p = img + disp + (e / td->nel) * td->ext
                           + (e % td->nel) * (size_t)td->stride * td->esz;
        uint32_t v = cfn_val(src, blk, e, seed);
        if ('i' == td->kind) {
            int32_t x = (int32_t)v;
            memcpy(p, &x, 4);
        } else if ('d' == td->kind) {
            double x = (double)(int32_t)v; /* exact, so no NaN bit patterns */
            memcpy(p, &x, 8);
        } else {
            *p = (unsigned char)(v & 0x7f); /* never the poison byte */
        }
    }
}

size_t cfn_place(int n, const size_t *span, int order, size_t unit, MPI_Aint *disp)
{
    size_t at = 0, any = 0;
    for (int k = 0; k < n; ++k) {
        int j = CFN_REVERSED == order ? n - 1 - k : CFN_ROTATED == order ? (k + 1) % n : k;
        if (CFN_IN_ORDER != order) {
            at += (size_t)(j % 3 + 1) * unit;
        }
        disp[j] = (MPI_Aint)at;
        at += (span[j] + unit - 1) / unit * unit;
        any |= span[j];
    }
    /* a trailing gap catches a write past the last block */
    return any ? at + (CFN_IN_ORDER != order ? unit : 0) : 0;
}

void *cfn_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (NULL == p) {
        fprintf(stderr, "test_conform_nbr: out of host memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

unsigned char *cfn_image(size_t bytes)
{
    if (0 == bytes) {
        return NULL;
    }
    unsigned char *img = cfn_calloc(bytes, 1);
    memset(img, CF_POISON, bytes);
    return img;
}

void *cfn_upload(const unsigned char *img, size_t bytes)
{
    void *p = cf_alloc(bytes);
    if (bytes) {
        cf_put(p, img, bytes);
    }
    return p;
}

void cfn_check(const void *buf, const unsigned char *want, size_t bytes, const char *what)
{
    if (0 == bytes) {
        return;
    }
    unsigned char *got = cfn_calloc(bytes, 1);
    cf_get(got, buf, bytes);
    if (!cf_same(got, want, bytes, what) && getenv("CFN_DUMP")) {
        for (size_t i = 0; i < bytes; ++i) {
            printf("%s%02x/%02x", i % 16 ? " " : "\n  ", got[i], want[i]);
        }
        printf("\n");
    }
    free(got);
}

void cfn_side_init(cfn_side_t *s, int n)
{
    s->n = n;
    s->td = cfn_calloc((size_t)n, sizeof(cfn_td_t));
    s->cnt = cfn_calloc((size_t)n, sizeof(int));
    s->from = cfn_calloc((size_t)n, sizeof(int));
    s->blk = cfn_calloc((size_t)n, sizeof(int));
    s->idisp = cfn_calloc((size_t)n, sizeof(int));
    s->disp = cfn_calloc((size_t)n, sizeof(MPI_Aint));
    s->types = cfn_calloc((size_t)n, sizeof(MPI_Datatype));
    s->span = cfn_calloc((size_t)n, sizeof(size_t));
    s->bytes = 0;
    for (int j = 0; j < n; ++j) {
        s->td[j] = cfn_td_int;
        s->from[j] = MPI_PROC_NULL;
    }
}

void cfn_side_place(cfn_side_t *s, int order, size_t unit)
{
    for (int j = 0; j < s->n; ++j) {
        s->span[j] = cfn_span(&s->td[j], s->cnt[j]);
        s->types[j] = s->td[j].type;
    }
    s->bytes = cfn_place(s->n, s->span, order, unit, s->disp);
    for (int j = 0; j < s->n; ++j) {
        s->idisp[j] = (int)(s->disp[j] / (MPI_Aint)s->td[j].ext);
    }
}

unsigned char *cfn_side_image(const cfn_side_t *s, int seed)
{
    unsigned char *img = cfn_image(s->bytes);
    for (int j = 0; j < s->n; ++j) {
        if (MPI_PROC_NULL != s->from[j]) {
            cfn_write(img, (size_t)s->disp[j], &s->td[j], s->cnt[j], s->from[j], s->blk[j], seed);
        }
    }
    return img;
}

void cfn_side_free(cfn_side_t *s)
{
    free(s->td), free(s->cnt), free(s->from), free(s->blk), free(s->idisp);
    free(s->disp), free(s->types), free(s->span);
}

int cfn_edge_count(int s, int i)
{
    return (s * 7 + i * 3 + 1) % 5;
}

int cfn_gather_count(int s)
{
    return (s * 3 + 1) % 4;
}

void cfn_edge_types(int s, int i, int n, cfn_td_t *st, int *sc, cfn_td_t *rt, int *rc)
{
    switch (n ? (s + i) % 4 : 0) {
    case 0:
        *st = *rt = cfn_td_int, *sc = *rc = n;
        break;
    case 1:
        *st = *rt = cfn_td_double, *sc = *rc = n;
        break;
    case 2:
        *st = cfn_td_vector(n, 2), *sc = 1, *rt = cfn_td_int, *rc = n;
        break;
    default:
        *st = cfn_td_int, *sc = n, *rt = cfn_td_vector(n, 3), *rc = 1;
        break;
    }
}

/* ---- MPI_Reduce_local ---------------------------------------------------------- */

/* where each buffer of a call lives: cf = cf_alloc (device unless --mem host) */
static const struct { const char *name; int in_cf, inout_cf; } placements[] = {
    {"in-dev+inout-dev", 1, 1},
    {"in-host+inout-dev", 0, 1},
    {"in-dev+inout-host", 1, 0},
    {"in-host+inout-host", 0, 0},
};
#define NPLACE ((int)(sizeof placements / sizeof placements[0]))

static void *buf_of(int on_cf, const unsigned char *img, size_t bytes)
{
    if (on_cf) {
        return cfn_upload(img, bytes);
    }
    if (0 == bytes) {
        return NULL;
    }
    void *p = cfn_calloc(bytes, 1);
    memcpy(p, img, bytes);
    return p;
}

static void buf_get(int on_cf, unsigned char *dst, const void *src, size_t bytes)
{
    if (bytes) {
        on_cf ? cf_get(dst, src, bytes) : (void)memcpy(dst, src, bytes);
    }
}

static void buf_free(int on_cf, void *p)
{
    on_cf ? cf_free(p) : free(p);
}

static void reduce_local_run(void)
{
    static const size_t counts[] = {0, 1, 7, 4099, (size_t)1 << 20};
    int ncounts = (int)(sizeof counts / sizeof counts[0]) - (cf.quick ? 1 : 0);
    for (int ti = 0; ti < cf_ntypes; ++ti) {
        const cf_type_t *t = &cf_types[ti];
        unsigned char *in[5], *inout[5], *want[5];
        for (int c = 0; c < ncounts; ++c) {
            size_t bytes = counts[c] * t->extent;
            in[c] = cfn_image(bytes);
            inout[c] = cfn_image(bytes);
            want[c] = cfn_image(bytes);
        }
        for (int oi = 0; oi < cf_nops; ++oi) {
            const cf_op_t *op = &cf_ops[oi];
            if (!cf_op_valid(t, op->op)) {
                continue;
            }
            /* values that use the type's width where op allows it, so a
             * reduction done in a narrower type shows */
            for (int c = 0; c < ncounts; ++c) {
                for (size_t i = 0; i < counts[c]; ++i) {
                    cf_value_op(t, op->op, 0, i, 1, in[c] + i * t->extent);
                    cf_value_op(t, op->op, 1, i, 1, inout[c] + i * t->extent);
                }
            }
            /* the standard: inoutbuf[i] = inbuf[i] op inoutbuf[i]; every
             * predefined op is commutative */
            for (int c = 0; c < ncounts; ++c) {
                if (counts[c]) {
                    memcpy(want[c], inout[c], counts[c] * t->extent);
                }
                for (size_t i = 0; i < counts[c]; ++i) {
                    cf_reduce1(t, op->op, want[c] + i * t->extent, in[c] + i * t->extent);
                }
            }
            for (int p = 0; p < NPLACE; ++p) {
                if (!cf_case("reduce_local/%s/%s/%s/%s", t->name, op->name, placements[p].name,
                             cfn_mem)) {
                    continue;
                }
                for (int c = 0; c < ncounts; ++c) {
                    size_t bytes = counts[c] * t->extent;
                    void *ib = buf_of(placements[p].in_cf, in[c], bytes);
                    void *iob = buf_of(placements[p].inout_cf, inout[c], bytes);
                    int rc = MPI_Reduce_local(ib, iob, (int)counts[c], t->type, op->op);
                    cf_rc(rc, "MPI_Reduce_local");
                    if (MPI_SUCCESS == rc && bytes) {
                        char what[64];
                        unsigned char *got = cfn_calloc(bytes, 1);
                        snprintf(what, sizeof what, "inoutbuf (count %zu)", counts[c]);
                        buf_get(placements[p].inout_cf, got, iob, bytes);
                        cf_same_typed(got, want[c], counts[c], t, what);
                        snprintf(what, sizeof what, "inbuf (count %zu)", counts[c]);
                        buf_get(placements[p].in_cf, got, ib, bytes);
                        cf_same(got, in[c], bytes, what); /* an input is not written */
                        free(got);
                    }
                    buf_free(placements[p].in_cf, ib);
                    buf_free(placements[p].inout_cf, iob);
                }
                cf_end();
            }
        }
        for (int c = 0; c < ncounts; ++c) {
            free(in[c]);
            free(inout[c]);
            free(want[c]);
        }
    }
}

int main(int argc, char **argv)
{
    /* Open MPI 4.1's topo/treematch livelocks now and then in
     * MPI_Dist_graph_create (every rank spinning in ompi_comm_nextcid, also
     * with coll/gpu left out): the topology is not what this test checks,
     * so it asks for topo/basic unless the caller chose a topo component */
    setenv("OMPI_MCA_topo", "basic", 0);
    cf_init(&argc, &argv);
    cfn_mem = cf_mem_name();

    cfn_neighbor_run();
    cfn_inter_run();
    reduce_local_run();
    cfn_types_free();
    return cf_finish();
}
