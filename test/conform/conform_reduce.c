/*
 * The reductions (MPI 4.1 sections 6.9-6.11): Reduce, Allreduce,
 * Reduce_scatter, Reduce_scatter_block, Scan, Exscan on every predefined
 * type with every op MPI defines on it, MPI_IN_PLACE, every root, counts
 * 0/1/odd/large, Reduce_scatter's counts with zeros; and several
 * nonblocking or persistent collectives outstanding at once.
 *
 * Results are compared with the host reference over the bytes that carry
 * data (cf_same_typed); the bytes around each buffer must stay as they
 * were.  Exscan's result on rank 0 is undefined: only that the call
 * returns and touches nothing outside its buffer is checked there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_coll.h"

#define GUARD 16

typedef struct {
    cf_red_t p;
    int me, P;
    size_t nin, nout, off;     /* input elements, result elements, the result's place in the whole */
    int rcounts[CF_MAXP];
    unsigned char *smem, *rmem;          /* allocations: guard, data, guard */
    size_t sbytes, rbytes;
    unsigned char *in, *want, *got;      /* host images */
} red_state_t;

static size_t ext(const red_state_t *st)
{
    return st->p.t->extent;
}

/* element k of the whole reduction over ranks [0, upto) */
static void reference(const red_state_t *st, size_t k, int upto, int seed, unsigned char *dst)
{
    unsigned char v[64];
    int r;
    cf_value_op(st->p.t, cf_ops[st->p.op].op, 0, k, seed, dst);
    for (r = 1; r < upto; ++r) {
        cf_value_op(st->p.t, cf_ops[st->p.op].op, r, k, seed, v);
        cf_reduce1(st->p.t, cf_ops[st->p.op].op, dst, v);
    }
}

static void red_fill(void *ctx, int round)
{
    red_state_t *st = ctx;
    const cf_red_t *p = &st->p;
    int seed = round + 1, upto;
    size_t k, e = ext(st);
    cf_coll_t k_ = p->coll;

    memset(st->in, CF_POISON, st->nin * e + 1);
    for (k = 0; k < st->nin; ++k) {
        cf_value_op(p->t, cf_ops[p->op].op, st->me, k, seed, st->in + k * e);
    }
    /* send buffer: guards junk, the input; in place the input lies in the receive buffer */
    if (st->smem) {
        memset(st->got, CF_JUNK, st->sbytes);
        memcpy(st->got + GUARD, st->in, st->nin * e);
        cf_put(st->smem, st->got, st->sbytes);
    }
    if (st->rmem) {
        memset(st->got, CF_POISON, st->rbytes);
        if (p->inplace) {
            memcpy(st->got + GUARD, st->in, st->nin * e);
        }
        cf_put(st->rmem, st->got, st->rbytes);
    }
    upto = k_ == C_SCAN ? st->me + 1 : k_ == C_EXSCAN ? st->me : st->P;
    for (k = 0; k < st->nout && upto > 0; ++k) {
        reference(st, st->off + k, upto, seed, st->want + k * e);
    }
}

static void red_check(void *ctx, int round)
{
    red_state_t *st = ctx;
    const cf_red_t *p = &st->p;
    size_t e = ext(st), data, k;
    unsigned char guard[GUARD];
    const char *again = round ? " (second start)" : "";
    char what[64];

    if (st->rmem) {
        cf_get(st->got, st->rmem, st->rbytes);
        data = st->rbytes - 2 * GUARD;
        memset(guard, CF_POISON, GUARD);
        snprintf(what, sizeof(what), "bytes before the receive buffer%s", again);
        cf_same(st->got, guard, GUARD, what);
        snprintf(what, sizeof(what), "bytes after the receive buffer%s", again);
        cf_same(st->got + GUARD + data, guard, GUARD, what);
        if (!(p->coll == C_EXSCAN && st->me == 0)) {
            snprintf(what, sizeof(what), "result%s", again);
            cf_same_typed(st->got + GUARD, st->want, st->nout, p->t, what);
        }
        /* out of place the buffer holds the result and nothing else
         * (pair types' padding aside, which MPI need not write) */
        (void) k;
    }
    if (st->smem) {
        cf_get(st->got, st->smem, st->sbytes);
        memset(st->want + st->nout * e, CF_JUNK, st->sbytes);
        memcpy(st->want + st->nout * e + GUARD, st->in, st->nin * e);
        snprintf(what, sizeof(what), "send buffer%s", again);
        cf_same(st->got, st->want + st->nout * e, st->sbytes, what);
    }
}

static void red_cleanup(cf_prep_t *pr)
{
    red_state_t *st = pr->state;
    cf_free(st->smem);
    cf_free(st->rmem);
    free(st->in);
    free(st->want);
    free(st->got);
    free(st);
}

void cf_red_prepare(const cf_red_t *p, cf_prep_t *out)
{
    red_state_t *st = calloc(1, sizeof(*st));
    cf_call_t *call = &out->call;
    size_t e = p->t->extent, rn;
    int q, atroot;

    memset(out, 0, sizeof(*out));
    st->p = *p;
    st->me = p->c->rank;
    st->P = p->c->size;
    atroot = st->me == p->root;
    st->nin = (size_t) p->n;
    st->nout = (size_t) p->n;
    if (p->coll == C_REDUCE_SCATTER) {
        st->nin = 0;
        for (q = 0; q < st->P; ++q) {
            st->rcounts[q] = cf_count(p->cnt, p->n, q, 0);
            if (q < st->me) st->off += (size_t) st->rcounts[q];
            st->nin += (size_t) st->rcounts[q];
        }
        st->nout = (size_t) st->rcounts[st->me];
    } else if (p->coll == C_REDUCE_SCATTER_BLOCK) {
        st->nin = (size_t) p->n * (size_t) st->P;
        st->off = (size_t) p->n * (size_t) st->me;
    } else if (p->coll == C_REDUCE && !atroot) {
        st->nout = 0;   /* the receive buffer is significant only at the root */
    }
    /* in place the receive buffer holds the input (Reduce: at the root) */
    st->p.inplace = p->inplace && (p->coll != C_REDUCE || atroot);
    rn = st->p.inplace ? st->nin : st->nout;
    st->rbytes = rn ? rn * e + 2 * GUARD : 0;
    /* Open MPI 4.1's MPIX_Reduce_init refuses sendbuf == recvbuf at the
     * root even at count 0 (its MPI_Reduce does not): two NULLs would
     * stop the case in the library's argument check, before any
     * collective component sees it; the root's receive buffer is then an
     * empty one between guards */
    if (p->coll == C_REDUCE && atroot && !rn && p->form == CF_PERSISTENT && !st->p.inplace) {
        st->rbytes = 2 * GUARD;
    }
    st->sbytes = !st->p.inplace && st->nin ? st->nin * e + 2 * GUARD : 0;
    st->rmem = cf_alloc(st->rbytes);
    st->smem = cf_alloc(st->sbytes);
    st->in = malloc(st->nin * e + 1);
    st->want = malloc(st->nout * e + st->sbytes + 1);
    st->got = malloc((st->rbytes > st->sbytes ? st->rbytes : st->sbytes) + 1);

    call->coll = p->coll;
    call->comm = p->c->comm;
    call->root = p->root;
    call->op = cf_ops[p->op].op;
    call->rtype = p->t->type;
    call->rcount = p->n;
    call->rcounts = st->rcounts;
    call->sbuf = st->p.inplace ? MPI_IN_PLACE : st->smem ? st->smem + GUARD : NULL;
    call->rbuf = st->rmem ? st->rmem + GUARD : NULL;
    out->hooks.fill = red_fill;
    out->hooks.check = red_check;
    out->hooks.ctx = st;
    out->cleanup = red_cleanup;
    out->state = st;
}

/* ---- the cases ---- */

static const char *red_name(cf_coll_t k)
{
    switch (k) {
    case C_REDUCE: return "reduce";
    case C_ALLREDUCE: return "allreduce";
    case C_REDUCE_SCATTER: return "reduce_scatter";
    case C_REDUCE_SCATTER_BLOCK: return "reduce_scatter_block";
    case C_SCAN: return "scan";
    default: return "exscan";
    }
}

static int op_of(MPI_Op op)
{
    int k;
    for (k = 0; k < cf_nops && cf_ops[k].op != op; ++k) {
    }
    return k;
}

static void red_case(const cf_red_t *p)
{
    char extra[48] = "";
    cf_prep_t pr;
    if (p->coll == C_REDUCE) {
        snprintf(extra, sizeof(extra), "/root%d", p->root);
    } else if (p->coll == C_REDUCE_SCATTER) {
        snprintf(extra, sizeof(extra), "/%s", cf_counts_names[p->cnt]);
    }
    if (!cf_case("%s/%s/%s/%s/%s/n%d%s%s/%s", red_name(p->coll), cf_form_names[p->form], p->c->name,
                 p->t->name, cf_ops[p->op].name, p->n, extra, p->inplace ? "/inplace" : "",
                 cf_mem_name())) {
        return;
    }
    if (p->root < p->c->size) {
        cf_red_prepare(p, &pr);
        cf_run(&pr.call, p->form, &pr.hooks);
        pr.cleanup(&pr);
    }
    cf_end();
}

/* a type and op for each kind of arithmetic the reductions do */
static const struct { MPI_Datatype t; MPI_Op op; } reps[] = {
    { MPI_INT, MPI_SUM }, { MPI_DOUBLE, MPI_MAX }, { MPI_FLOAT, MPI_PROD },
    { MPI_UINT8_T, MPI_BXOR }, { MPI_C_BOOL, MPI_LOR }, { MPI_DOUBLE_INT, MPI_MINLOC },
    { MPI_SHORT_INT, MPI_MAXLOC }, { MPI_C_DOUBLE_COMPLEX, MPI_PROD }, { MPI_LONG_DOUBLE, MPI_SUM },
    { MPI_INT64_T, MPI_BAND }, { MPI_LONG_DOUBLE_INT, MPI_MINLOC }, { MPI_UNSIGNED_SHORT, MPI_LAND },
};
/* the types every form runs with every op valid on them */
static const MPI_Datatype all_forms_types[] = { MPI_INT, MPI_FLOAT, MPI_DOUBLE, MPI_DOUBLE_INT };

void cf_test_reduce(const cf_comm_t *c)
{
    static const cf_coll_t others[] = { C_REDUCE_SCATTER, C_REDUCE_SCATTER_BLOCK, C_SCAN, C_EXSCAN };
    int sizes[8], ns, f, ti, o, k, ip, root, cnt;
    size_t ci, ri;
    cf_red_t p = { .c = c };

    /* every type with every op MPI defines on it: Allreduce and Reduce
     * blocking (--quick; the half-precision types in every form still) or
     * in every form */
    for (f = 0; f < CF_NFORMS; ++f) {
        for (ti = 0; ti < cf_ntypes; ++ti) {
            if (cf.quick && f > 0 && cf_types[ti].type != cf_half_types[0] &&
                cf_types[ti].type != cf_half_types[1]) {
                continue;
            }
            for (o = 0; o < cf_nops; ++o) {
                if (!cf_op_valid(&cf_types[ti], cf_ops[o].op)) continue;
                p = (cf_red_t) { .c = c, .form = (cf_form_t) f, .t = &cf_types[ti], .op = o, .n = 7 };
                p.coll = C_ALLREDUCE;
                red_case(&p);
                p.coll = C_REDUCE;
                p.root = (ti + o) % c->maxsize;
                red_case(&p);
            }
        }
    }
    /* int, float, double, a pair type: every op, every form, in place, every root, every count */
    for (f = 0; f < CF_NFORMS; ++f) {
        for (ci = 0; ci < sizeof(all_forms_types) / sizeof(all_forms_types[0]); ++ci) {
            const cf_type_t *t = cf_type_find(all_forms_types[ci]);
            ns = cf_sizes((int) t->extent, sizes);
            for (o = 0; o < cf_nops; ++o) {
                if (!cf_op_valid(t, cf_ops[o].op)) continue;
                for (ip = 0; ip < 2; ++ip) {
                    /* what the loop above ran already */
                    int dup = !ip && (f == 0 || !cf.quick);
                    p = (cf_red_t) { .c = c, .form = (cf_form_t) f, .t = t, .op = o, .n = 7, .inplace = ip };
                    if (!dup) {
                        p.coll = C_ALLREDUCE;
                        red_case(&p);
                    }
                    p.coll = C_REDUCE;
                    for (root = 0; root < c->maxsize; ++root) {
                        p.root = root;
                        if (!dup || root != (int) ((t - cf_types) + o) % c->maxsize) red_case(&p);
                    }
                }
            }
            /* the counts, with MPI_SUM (MPI_MINLOC on a pair type) */
            o = op_of(cf_op_valid(t, MPI_SUM) ? MPI_SUM : MPI_MINLOC);
            for (k = 0; k < ns; ++k) {
                for (ip = 0; ip < 2; ++ip) {
                    if (sizes[k] == 7) continue;
                    p = (cf_red_t) { .c = c, .form = (cf_form_t) f, .t = t, .op = o, .n = sizes[k],
                                     .inplace = ip, .coll = C_ALLREDUCE };
                    red_case(&p);
                    p.coll = C_REDUCE;
                    p.root = c->maxsize - 1;
                    red_case(&p);
                }
            }
        }
    }
    /* Reduce_scatter(_block), Scan, Exscan */
    for (f = 0; f < CF_NFORMS; ++f) {
        for (ci = 0; ci < sizeof(others) / sizeof(others[0]); ++ci) {
            for (ri = 0; ri < sizeof(reps) / sizeof(reps[0]); ++ri) {
                for (ip = 0; ip < 2; ++ip) {
                    p = (cf_red_t) { .c = c, .coll = others[ci], .form = (cf_form_t) f,
                                     .t = cf_type_find(reps[ri].t), .op = op_of(reps[ri].op), .n = 7,
                                     .cnt = CNT_VARIED, .inplace = ip };
                    red_case(&p);
                }
            }
            /* half precision (where present): each of its four ops, in place and not */
            for (k = 0; k < 2; ++k) {
                const cf_type_t *h = cf_type_find(cf_half_types[k]);
                for (o = 0; h && o < cf_nops; ++o) {
                    for (ip = 0; cf_op_valid(h, cf_ops[o].op) && ip < 2; ++ip) {
                        p = (cf_red_t) { .c = c, .coll = others[ci], .form = (cf_form_t) f,
                                         .t = h, .op = o, .n = 7, .cnt = CNT_VARIED,
                                         .inplace = ip };
                        red_case(&p);
                    }
                }
            }
            p = (cf_red_t) { .c = c, .coll = others[ci], .form = (cf_form_t) f,
                             .t = cf_type_find(MPI_INT), .op = op_of(MPI_SUM), .cnt = CNT_UNIFORM };
            ns = cf_sizes(sizeof(int), sizes);
            for (k = 0; k < ns; ++k) {
                for (ip = 0; ip < 2; ++ip) {
                    p.n = sizes[k], p.inplace = ip;
                    if (sizes[k] != 7) red_case(&p);
                }
            }
            if (others[ci] == C_REDUCE_SCATTER) {
                p.n = 7;
                for (cnt = CNT_ZERO_SOME; cnt < CNT_N; ++cnt) {
                    for (ip = 0; ip < 2; ++ip) {
                        p.cnt = (cf_counts_t) cnt, p.inplace = ip;
                        red_case(&p);
                    }
                }
            }
        }
    }
}

/* ---- several requests outstanding ---- */

/* MPI lets a rank have many collectives posted on one communicator,
 * completed in any order, as long as every rank posts them in the same
 * order; a module that serialises them wrongly hangs here */
void cf_test_outstanding(const cf_comm_t *c)
{
    enum { N = 6 };
    cf_prep_t pr[N];
    MPI_Request req[N];
    MPI_Status st[N];
    int f, k, round, rc;
    for (f = CF_NONBLOCKING; f < CF_NFORMS; ++f) {
        if (!cf_case("outstanding/%s/%s/six-at-once/%s", cf_form_names[f], c->name, cf_mem_name())) {
            continue;
        }
        {
            cf_red_t r1 = { .c = c, .coll = C_ALLREDUCE, .form = f, .t = cf_type_find(MPI_DOUBLE),
                            .op = op_of(MPI_SUM), .n = 1031 };
            cf_red_t r2 = { .c = c, .coll = C_REDUCE_SCATTER, .form = f, .t = cf_type_find(MPI_INT),
                            .op = op_of(MPI_MAX), .n = 7, .cnt = CNT_ZERO_SOME, .inplace = 1 };
            cf_red_t r3 = { .c = c, .coll = C_SCAN, .form = f, .t = cf_type_find(MPI_FLOAT_INT),
                            .op = op_of(MPI_MAXLOC), .n = 7, .inplace = 1 };
            cf_mv_t m1 = { .c = c, .coll = C_ALLGATHERV, .form = f, .n = 7, .ti = CF_MOVE_INT,
                           .nullargs = 1, .cnt = CNT_ZERO_SOME, .rlay = LAY_GAPS };
            cf_mv_t m2 = { .c = c, .coll = C_ALLTOALLV, .form = f, .n = 7, .ti = CF_MOVE_INT,
                           .nullargs = 1, .cnt = CNT_VARIED, .slay = LAY_NEGATIVE, .rlay = LAY_REVERSED };
            cf_mv_t m3 = { .c = c, .coll = C_GATHER, .form = f, .n = 7, .ti = CF_MOVE_INT,
                           .root = c->size - 1, .nullargs = 1, .inplace = 1 };
            cf_red_prepare(&r1, &pr[0]);
            cf_move_prepare(&m1, &pr[1]);
            cf_red_prepare(&r2, &pr[2]);
            cf_move_prepare(&m2, &pr[3]);
            cf_red_prepare(&r3, &pr[4]);
            cf_move_prepare(&m3, &pr[5]);
        }
        for (k = 0; k < N; ++k) {
            req[k] = MPI_REQUEST_NULL;
        }
        /* persistent: all made, then started together twice */
        for (round = 0; round < (f == CF_PERSISTENT ? 2 : 1); ++round) {
            for (k = 0; k < N; ++k) {
                pr[k].hooks.fill(pr[k].hooks.ctx, round);
                if (f == CF_NONBLOCKING || round == 0) {
                    rc = cf_post(&pr[k].call, (cf_form_t) f, &req[k]);
                    if (rc != MPI_SUCCESS) {
                        cf_rc(rc, cf_coll_name(pr[k].call.coll));
                    }
                }
            }
            rc = f == CF_PERSISTENT ? MPI_Startall(N, req) : MPI_SUCCESS;
            cf_rc(rc, "MPI_Startall");
            rc = MPI_Waitall(N, req, st);
            if (rc == MPI_ERR_IN_STATUS) {
                for (k = 0; k < N; ++k) {
                    cf_rc(st[k].MPI_ERROR, cf_coll_name(pr[k].call.coll));
                }
            } else {
                cf_rc(rc, "MPI_Waitall");
            }
            for (k = 0; k < N; ++k) {
                pr[k].hooks.check(pr[k].hooks.ctx, round);
            }
        }
        for (k = 0; k < N; ++k) {
            if (f == CF_PERSISTENT && req[k] != MPI_REQUEST_NULL) {
                MPI_Request_free(&req[k]);
            }
            pr[k].cleanup(&pr[k]);
        }
        cf_end();
    }
}
