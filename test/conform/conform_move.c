/*
 * The data-movement collectives (MPI 4.1 sections 6.4-6.8): Bcast,
 * Gather(v), Scatter(v), Allgather(v), Alltoall(v), every root, counts
 * 0/1/odd/large, every element size, MPI_IN_PLACE wherever the standard
 * allows it, v-layouts with gaps, blocks out of order and negative
 * displacements, zero counts for some or all ranks with NULL buffers, and
 * the arguments the standard says are ignored passed as NULL, garbage
 * counts and MPI_DATATYPE_NULL.
 *
 * All of them are one shape: a rank sends one block (to the root or to
 * all) or one per peer, and receives one block or one per peer; which
 * ones is all that differs, so one function builds every case.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_coll.h"

/* a count the standard says is not looked at */
#define GARBAGE_COUNT (-1)

typedef struct {
    int rooted, scatter, toall, vee;
    int multi_send, multi_recv;    /* a block per peer on that side */
} shape_t;

static shape_t shape_of(cf_coll_t k)
{
    shape_t s;
    s.rooted = k == C_GATHER || k == C_GATHERV || k == C_SCATTER || k == C_SCATTERV;
    s.scatter = k == C_SCATTER || k == C_SCATTERV;
    s.toall = k == C_ALLTOALL || k == C_ALLTOALLV;
    s.vee = k == C_GATHERV || k == C_SCATTERV || k == C_ALLGATHERV || k == C_ALLTOALLV;
    s.multi_send = s.scatter || s.toall;
    s.multi_recv = !s.scatter;
    return s;
}

/* elements from src to dst */
static int nblk(const cf_mv_t *p, const shape_t *s, int src, int dst)
{
    if (!s->vee) return p->n;
    if (s->toall) return cf_count(p->cnt, p->n, src, dst);
    if (s->scatter) return cf_count(p->cnt, p->n, dst, p->root);
    return cf_count(p->cnt, p->n, src, s->rooted ? p->root : 0);
}

/* the MPI arguments of one side */
typedef struct {
    void *buf;
    int count;
    MPI_Datatype type;
    int counts[CF_MAXP], displs[CF_MAXP];
    int *pcounts, *pdispls;
} args_t;

/* builds side s: nslot slots; data: whether this rank's side carries the
 * collective's data (a non-root's root-side buffer does not) */
static void build(const cf_mv_t *p, const shape_t *s, cf_side_t *sd, args_t *a, int send, int nslot,
                  int data)
{
    const cf_comm_t *c = p->c;
    int me = c->rank, R = p->root, q, multi = send ? s->multi_send : s->multi_recv;
    cf_rep_t rep = send ? p->srep[me % 2] : p->rrep[me % 2];
    MPI_Datatype t = cf_move_types[p->ti];
    cf_block_t proto;
    size_t unit;

    cf_side_init(sd, nslot, send ? CF_JUNK : CF_POISON);
    for (q = 0; q < nslot; ++q) {
        cf_slot_t *sl = &sd->slot[q];
        int peer = multi ? q : s->rooted ? R : 0;
        cf_block(&sl->blk, t, send ? nblk(p, s, me, peer) : nblk(p, s, peer, me), rep);
        if (!data) {
            continue;
        }
        if (send) {
            sl->src = sl->isrc = me;
            sl->key = sl->ikey = multi ? q : 0;
        } else {
            sl->src = multi ? q : R;
            sl->key = s->toall || s->scatter ? me : 0;
        }
    }
    /* a v-collective's one datatype describes one element of every block */
    cf_block(&proto, t, 1, rep);
    unit = proto.stride;
    cf_side_place(sd, s->vee && multi ? (send ? p->slay : p->rlay) : LAY_PACKED, unit);
    cf_side_alloc(sd);
    a->buf = sd->ptr;
    a->type = s->vee && multi ? proto.type : nslot ? sd->slot[0].blk.type : t;
    a->count = nslot ? sd->slot[0].blk.count : 0;
    for (q = 0; q < nslot; ++q) {
        a->counts[q] = sd->slot[q].blk.n;
        a->displs[q] = (int) (sd->slot[q].disp / (ptrdiff_t) unit);
    }
    a->pcounts = a->counts;
    a->pdispls = a->displs;
    sd->proto = proto;   /* its type lives as long as the side */
}

/* the arguments the standard says are ignored */
static void ignored(args_t *a, int nullargs, int null_buffer)
{
    if (null_buffer) a->buf = NULL;
    if (nullargs) {
        a->count = GARBAGE_COUNT;
        a->type = MPI_DATATYPE_NULL;
        a->pcounts = a->pdispls = NULL;
    }
}

/* what a prepared case holds until its cleanup */
typedef struct {
    cf_side_t snd, rcv;
    args_t sa, ra;
    cf_move_t m;
} move_state_t;

static void move_cleanup(cf_prep_t *pr)
{
    move_state_t *st = pr->state;
    cf_side_free(&st->snd);
    cf_side_free(&st->rcv);
    free(st);
}

void cf_move_prepare(const cf_mv_t *p, cf_prep_t *out)
{
    const cf_comm_t *c = p->c;
    shape_t s = shape_of(p->coll);
    int me = c->rank, P = c->size, R = p->root, q, atroot = me == R;
    int inplace = p->inplace && (!s.rooted || atroot);
    /* a rooted collective's root-side buffer: at the root, and at a
     * non-root passing full arguments one of the same shape, unused */
    int rootside = atroot || !p->nullargs;
    move_state_t *st = calloc(1, sizeof(*st));
    cf_side_t *snd = &st->snd, *rcv = &st->rcv;
    args_t *sa = &st->sa, *ra = &st->ra;
    cf_call_t *call = &out->call;

    memset(out, 0, sizeof(*out));
    call->coll = p->coll, call->comm = c->comm, call->root = R;
    build(p, &s, snd, sa, 1, !s.multi_send ? 1 : s.rooted && !rootside ? 0 : P,
          !s.scatter || atroot);
    build(p, &s, rcv, ra, 0, !s.multi_recv ? 1 : s.rooted && !rootside ? 0 : P,
          s.scatter || s.toall || !s.rooted || atroot);
    if (inplace) {
        /* what this rank sends lies where it receives: its own block, or
         * (alltoall) every block; the send arguments are not looked at */
        if (s.scatter) {
            ra->buf = MPI_IN_PLACE;
            ra->count = p->nullargs ? GARBAGE_COUNT : s.vee ? sa->counts[R] : sa->count;
            ra->type = p->nullargs ? MPI_DATATYPE_NULL : sa->type;
        } else {
            for (q = 0; q < P; ++q) {
                if (s.toall || q == me) {
                    rcv->slot[q].isrc = me;
                    rcv->slot[q].ikey = s.toall ? q : 0;
                }
            }
            sa->buf = MPI_IN_PLACE;
            sa->count = s.vee ? ra->counts[me] : ra->count;
            sa->type = ra->type;
            ignored(sa, p->nullargs, 0);
        }
    }
    if (s.rooted && !atroot) {
        ignored(s.scatter ? sa : ra, p->nullargs, p->nullargs);
    }
    if (!(inplace && s.scatter)) {
        cf_move_add(&st->m, rcv, s.rooted && !atroot && !s.scatter ? "non-root's unused receive buffer"
                                                                    : "receive buffer");
    }
    if (!(inplace && !s.scatter)) {
        cf_move_add(&st->m, snd, s.rooted && !atroot && s.scatter ? "non-root's unused send buffer"
                                                                   : "send buffer");
    }
    call->sbuf = sa->buf, call->scount = sa->count, call->stype = sa->type;
    call->scounts = sa->pcounts, call->sdispls = sa->pdispls;
    call->rbuf = ra->buf, call->rcount = ra->count, call->rtype = ra->type;
    call->rcounts = ra->pcounts, call->rdispls = ra->pdispls;
    cf_move_hooks(&st->m, &out->hooks);
    out->cleanup = move_cleanup;
    out->state = st;
}

/* Bcast: one buffer, the root's unchanged, everyone else's the root's */
static void bcast_run(const cf_mv_t *p)
{
    const cf_comm_t *c = p->c;
    static cf_side_t buf;
    int atroot = c->rank == p->root;
    cf_move_t m = { 0 };
    cf_call_t call = { .coll = C_BCAST, .comm = c->comm, .root = p->root };
    cf_side_init(&buf, 1, CF_POISON);
    cf_block(&buf.slot[0].blk, cf_move_types[p->ti], p->n, atroot ? p->srep[c->rank % 2] : p->rrep[c->rank % 2]);
    buf.slot[0].src = p->root;
    buf.slot[0].isrc = atroot ? p->root : -1;
    cf_side_alloc(&buf);
    call.rbuf = buf.ptr;
    call.rcount = buf.slot[0].blk.count;
    call.rtype = buf.slot[0].blk.type;
    cf_move_add(&m, &buf, atroot ? "root's buffer" : "buffer");
    cf_move_run(&call, p->form, &m);
    cf_side_free(&buf);
}

static const char *const coll_names[] = {
    [C_BCAST] = "bcast", [C_GATHER] = "gather", [C_GATHERV] = "gatherv", [C_SCATTER] = "scatter",
    [C_SCATTERV] = "scatterv", [C_ALLGATHER] = "allgather", [C_ALLGATHERV] = "allgatherv",
    [C_ALLTOALL] = "alltoall", [C_ALLTOALLV] = "alltoallv",
};

/* "contig" where both parities agree, else "builtin|contig" (even|odd ranks) */
static const char *reps_name(const cf_rep_t *r, char *buf, size_t n)
{
    if (r[0] == r[1]) {
        snprintf(buf, n, "%s", cf_rep_names[r[0]]);
    } else {
        snprintf(buf, n, "%s|%s", cf_rep_names[r[0]], cf_rep_names[r[1]]);
    }
    return buf;
}

void cf_move_case(const cf_mv_t *p)
{
    shape_t s = shape_of(p->coll);
    char root[16] = "", reps[64] = "", v[64] = "", a[24], b[24];
    if (s.rooted || p->coll == C_BCAST) {
        snprintf(root, sizeof(root), "/root%d", p->root);
    }
    if (p->srep[0] || p->srep[1] || p->rrep[0] || p->rrep[1]) {
        snprintf(reps, sizeof(reps), "/send-%s/recv-%s", reps_name(p->srep, a, sizeof(a)),
                 reps_name(p->rrep, b, sizeof(b)));
    }
    if (s.toall && s.vee) {
        snprintf(v, sizeof(v), "/%s/send-%s/recv-%s", cf_counts_names[p->cnt],
                 cf_layout_names[p->slay], cf_layout_names[p->rlay]);
    } else if (s.vee) {
        snprintf(v, sizeof(v), "/%s/%s", cf_counts_names[p->cnt],
                 cf_layout_names[s.scatter ? p->slay : p->rlay]);
    }
    if (!cf_case("%s/%s/%s%s/n%d/%s%s%s%s%s/%s", coll_names[p->coll], cf_form_names[p->form],
                 p->c->name, root, p->n, cf_move_type_names[p->ti], reps, v,
                 p->inplace ? "/inplace" : "",
                 s.rooted || p->inplace ? (p->nullargs ? "/ignored-null" : "/ignored-full") : "",
                 cf_mem_name())) {
        return;
    }
    /* an odd/even split's smaller half has no such root: it only takes part in the tally */
    if (p->root < p->c->size) {
        if (p->coll == C_BCAST) {
            bcast_run(p);
        } else {
            cf_prep_t pr;
            cf_move_prepare(p, &pr);
            cf_run(&pr.call, p->form, &pr.hooks);
            pr.cleanup(&pr);
        }
    }
    cf_end();
}

/* ---- the cases ---- */

void cf_test_move(const cf_comm_t *c)
{
    static const cf_coll_t fixed[] = { C_BCAST, C_GATHER, C_SCATTER, C_ALLGATHER, C_ALLTOALL };
    static const cf_coll_t vees[] = { C_GATHERV, C_SCATTERV, C_ALLGATHERV, C_ALLTOALLV };
    int sizes[8], ns = cf_sizes(sizeof(int), sizes), f, k, root, ip, ti, cnt, lay;
    size_t ci;
    cf_move_types_init();
    for (f = 0; f < CF_NFORMS; ++f) {
        for (ci = 0; ci < sizeof(fixed) / sizeof(fixed[0]); ++ci) {
            cf_mv_t p = { .c = c, .coll = fixed[ci], .form = (cf_form_t) f, .ti = CF_MOVE_INT, .nullargs = 1 };
            int rooted = fixed[ci] == C_BCAST || fixed[ci] == C_GATHER || fixed[ci] == C_SCATTER;
            for (root = 0; root < (rooted ? c->maxsize : 1); ++root) {
                p.root = root;
                for (ip = 0; ip < (fixed[ci] == C_BCAST ? 1 : 2); ++ip) {
                    p.inplace = ip;
                    for (k = 0; k < ns; ++k) {
                        p.n = sizes[k];
                        cf_move_case(&p);
                    }
                    /* ignored arguments passed as a real program might */
                    if (fixed[ci] != C_BCAST && (rooted || ip)) {
                        p.n = 7, p.nullargs = 0;
                        cf_move_case(&p);
                        p.nullargs = 1;
                    }
                }
            }
            /* every element size, at an odd count, the last root */
            p.root = rooted ? c->maxsize - 1 : 0, p.n = 1031, p.inplace = 0;
            for (ti = 0; ti < cf_nmove_types; ++ti) {
                if (ti != CF_MOVE_INT) {
                    p.ti = ti;
                    cf_move_case(&p);
                }
            }
        }
        for (ci = 0; ci < sizeof(vees) / sizeof(vees[0]); ++ci) {
            cf_mv_t p = { .c = c, .coll = vees[ci], .form = (cf_form_t) f, .ti = CF_MOVE_INT, .n = 7, .nullargs = 1 };
            int rooted = vees[ci] == C_GATHERV || vees[ci] == C_SCATTERV;
            for (root = 0; root < (rooted ? c->maxsize : 1); ++root) {
                p.root = root;
                for (ip = 0; ip < 2; ++ip) {
                    p.inplace = ip;
                    for (cnt = 0; cnt < CNT_N; ++cnt) {
                        for (lay = 0; lay < LAY_N; ++lay) {
                            /* the send side laid out otherwise than the receive side */
                            p.cnt = (cf_counts_t) cnt;
                            p.rlay = (cf_layout_t) lay;
                            p.slay = (cf_layout_t) (vees[ci] == C_SCATTERV ? lay : LAY_N - 1 - lay);
                            cf_move_case(&p);
                        }
                    }
                    /* ignored arguments passed as a real program might */
                    if (rooted || ip) {
                        p.cnt = CNT_VARIED, p.rlay = p.slay = LAY_NEGATIVE, p.nullargs = 0;
                        cf_move_case(&p);
                        p.nullargs = 1;
                    }
                }
            }
            /* a wider element; a large count */
            p.root = rooted ? c->maxsize - 1 : 0, p.inplace = 0, p.cnt = CNT_VARIED;
            p.rlay = LAY_NEGATIVE, p.slay = LAY_GAPS, p.ti = 3;
            cf_move_case(&p);
            if (!cf.quick) {
                p.ti = CF_MOVE_INT, p.n = sizes[ns - 1], p.rlay = LAY_REVERSED;
                cf_move_case(&p);
            }
        }
    }
}
