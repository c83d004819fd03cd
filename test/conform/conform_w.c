/*
 * Alltoallw (MPI 4.1 section 6.8): a datatype per peer, builtin and
 * derived (contiguous, strided vector, resized), byte displacements with
 * gaps, out of order and negative, MPI_BOTTOM with the blocks' absolute
 * addresses in the datatypes, MPI_IN_PLACE, zero counts.
 *
 * And the rule every collective shares (section 6.1): the type signature
 * of what is sent must match what is received, the datatypes need not,
 * and they may differ from rank to rank.  A receiver that describes a
 * block as one strided vector while the sender sends n floats, or a root
 * that sends one contiguous type while the others receive k ints, makes
 * the same call.
 */
#include <stdint.h>
#include <stdio.h>

#include "conform_coll.h"

/* per-peer element types of Alltoallw: sizes 1 to 16 */
static const MPI_Datatype w_types[] = { MPI_INT, MPI_DOUBLE, MPI_SHORT, MPI_BYTE, MPI_C_DOUBLE_COMPLEX };
#define NW_TYPES ((int) (sizeof(w_types) / sizeof(w_types[0])))
/* displacements stay multiples of the largest element: no misaligned element */
#define W_UNIT 16

typedef struct {
    const cf_comm_t *c;
    cf_form_t form;
    int n, inplace;
    int bottom;         /* 1: send side, 2: receive side, 3: both at MPI_BOTTOM */
    cf_counts_t cnt;
    cf_layout_t slay, rlay;
} w_t;

/* the block from i to j: its element type depends on the pair only
 * (symmetric, as MPI_IN_PLACE needs), its datatype on who describes it */
static MPI_Datatype w_type(int i, int j)
{
    return w_types[(i + j) % NW_TYPES];
}

static cf_rep_t w_rep(int me, int peer, int send)
{
    return (cf_rep_t) ((me * 3 + peer + (send ? 0 : 1)) % REP_N);
}

/* blocks at MPI_BOTTOM: a struct datatype holding the block's address */
static void to_bottom(const cf_side_t *s, int P, int *counts, int *displs, MPI_Datatype *types,
                      MPI_Datatype *made)
{
    int q;
    for (q = 0; q < P; ++q) {
        const cf_slot_t *sl = &s->slot[q];
        made[q] = MPI_DATATYPE_NULL;
        if (sl->blk.n == 0) {
            continue;
        }
        MPI_Aint addr = (MPI_Aint) (uintptr_t) ((unsigned char *) s->ptr + sl->disp);
        MPI_Type_create_struct(1, &sl->blk.count, &addr, &sl->blk.type, &made[q]);
        MPI_Type_commit(&made[q]);
        types[q] = made[q];
        counts[q] = 1;
        displs[q] = 0;
    }
}

static void w_run(const w_t *p)
{
    const cf_comm_t *c = p->c;
    int me = c->rank, P = c->size, q;
    static cf_side_t snd, rcv;
    int sc[CF_MAXP], sd[CF_MAXP], rc[CF_MAXP], rd[CF_MAXP];
    MPI_Datatype st[CF_MAXP], rt[CF_MAXP], smade[CF_MAXP], rmade[CF_MAXP];
    cf_move_t m = { 0 };
    cf_call_t call = { .coll = C_ALLTOALLW, .comm = c->comm };

    cf_side_init(&snd, P, CF_JUNK);
    cf_side_init(&rcv, P, CF_POISON);
    for (q = 0; q < P; ++q) {
        cf_slot_t *s = &snd.slot[q], *r = &rcv.slot[q];
        cf_block(&s->blk, w_type(me, q), cf_count(p->cnt, p->n, me, q), w_rep(me, q, 1));
        s->src = s->isrc = me;
        s->key = s->ikey = q;
        /* in place the receive datatypes describe what is sent too */
        cf_block(&r->blk, w_type(q, me), cf_count(p->cnt, p->n, q, me), w_rep(me, q, p->inplace));
        r->src = q;
        r->key = me;
        if (p->inplace) {
            r->isrc = me;
            r->ikey = q;
        }
    }
    cf_side_place(&snd, p->slay, W_UNIT);
    cf_side_place(&rcv, p->rlay, W_UNIT);
    cf_side_alloc(&rcv);
    for (q = 0; q < P; ++q) {
        sc[q] = snd.slot[q].blk.count, sd[q] = (int) snd.slot[q].disp, st[q] = snd.slot[q].blk.type;
        rc[q] = rcv.slot[q].blk.count, rd[q] = (int) rcv.slot[q].disp, rt[q] = rcv.slot[q].blk.type;
        smade[q] = rmade[q] = MPI_DATATYPE_NULL;
    }
    call.rbuf = rcv.ptr;
    if (p->bottom & 2) {
        to_bottom(&rcv, P, rc, rd, rt, rmade);
        call.rbuf = MPI_BOTTOM;
    }
    cf_move_add(&m, &rcv, "receive buffer");
    if (p->inplace) {
        /* sendcounts, sdispls and sendtypes are ignored */
        call.sbuf = MPI_IN_PLACE;
    } else {
        cf_side_alloc(&snd);
        call.sbuf = snd.ptr;
        if (p->bottom & 1) {
            to_bottom(&snd, P, sc, sd, st, smade);
            call.sbuf = MPI_BOTTOM;
        }
        call.scounts = sc, call.sdispls = sd, call.stypes = st;
        cf_move_add(&m, &snd, "send buffer");
    }
    call.rcounts = rc, call.rdispls = rd, call.rtypes = rt;
    cf_move_run(&call, p->form, &m);
    for (q = 0; q < P; ++q) {
        if (smade[q] != MPI_DATATYPE_NULL) MPI_Type_free(&smade[q]);
        if (rmade[q] != MPI_DATATYPE_NULL) MPI_Type_free(&rmade[q]);
    }
    cf_side_free(&snd);
    cf_side_free(&rcv);
}

static void w_case(const w_t *p)
{
    static const char *const bottoms[] = { "", "/send-bottom", "/recv-bottom", "/bottom" };
    if (!cf_case("alltoallw/%s/%s/n%d/%s/send-%s/recv-%s%s%s/%s", cf_form_names[p->form], p->c->name,
                 p->n, cf_counts_names[p->cnt], cf_layout_names[p->slay], cf_layout_names[p->rlay],
                 bottoms[p->bottom], p->inplace ? "/inplace" : "", cf_mem_name())) {
        return;
    }
    /* Open MPI's coll/self (4.1 and 5.0) reads MPI_Alltoallw's byte
     * displacements as multiples of the datatype's extent and writes
     * outside the buffer (4.1 corrupts the heap; its nonblocking and
     * persistent forms are right): on host buffers, which
     * coll/gpu hands to it unchanged, there is nothing to test but that
     * defect; on device buffers the answer is coll/gpu's */
    if (p->c->size == 1 && !cf.device && !p->inplace && p->form == CF_BLOCKING &&
        (p->slay != LAY_PACKED || p->rlay != LAY_PACKED)) {
        cf_skip("Open MPI's coll/self takes MPI_Alltoallw's byte displacements for multiples of the "
                "extent (communicators of one rank, host buffers)");
    } else {
        w_run(p);
    }
    cf_end();
}

void cf_test_alltoallw(const cf_comm_t *c)
{
    int sizes[8], ns = cf_sizes(16, sizes), f, k, cnt, lay, b;
    for (f = 0; f < CF_NFORMS; ++f) {
        w_t p = { c, (cf_form_t) f, 7, 0, 0, CNT_UNIFORM, LAY_PACKED, LAY_PACKED };
        for (k = 0; k < ns; ++k) {
            p.n = sizes[k];
            w_case(&p);
        }
        p.n = 7;
        for (cnt = 0; cnt < CNT_N; ++cnt) {
            for (lay = 0; lay < LAY_N; ++lay) {
                p.cnt = (cf_counts_t) cnt;
                p.rlay = (cf_layout_t) lay;
                p.slay = (cf_layout_t) (LAY_N - 1 - lay);
                for (p.inplace = 0; p.inplace < 2; ++p.inplace) {
                    w_case(&p);
                }
            }
        }
        p.inplace = 0;
        p.cnt = CNT_ZERO_SOME;
        for (b = 1; b < 4; ++b) {
            p.bottom = b;
            p.slay = LAY_REVERSED, p.rlay = LAY_GAPS;
            w_case(&p);
        }
    }
}

/* ---- the same type signature, other datatypes ---- */

void cf_test_signatures(const cf_comm_t *c)
{
    /* receivers and senders describing the same elements otherwise:
     * {send even, send odd, receive even, receive odd} */
    static const cf_rep_t mixes[][4] = {
        { REP_BUILTIN, REP_BUILTIN, REP_VECTOR, REP_VECTOR },    /* n floats into a strided vector */
        { REP_VECTOR, REP_VECTOR, REP_BUILTIN, REP_BUILTIN },    /* and back */
        { REP_CONTIG, REP_CONTIG, REP_BUILTIN, REP_BUILTIN },    /* 1 x contiguous(n) into n x builtin */
        { REP_BUILTIN, REP_BUILTIN, REP_CONTIG, REP_CONTIG },
        { REP_CONTIG, REP_BUILTIN, REP_BUILTIN, REP_RESIZED },   /* ranks differ among themselves */
        { REP_RESIZED, REP_VECTOR, REP_CONTIG, REP_BUILTIN },
    };
    static const cf_coll_t colls[] = { C_BCAST, C_GATHER, C_SCATTER, C_ALLGATHER, C_ALLTOALL };
    int f, mi, root, ti;
    size_t ci;
    for (f = 0; f < CF_NFORMS; ++f) {
        for (ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ++ci) {
            int rooted = colls[ci] == C_BCAST || colls[ci] == C_GATHER || colls[ci] == C_SCATTER;
            for (mi = 0; mi < (int) (sizeof(mixes) / sizeof(mixes[0])); ++mi) {
                for (root = 0; root < (rooted ? c->maxsize : 1); ++root) {
                    /* floats as in the report; ints where ranks differ */
                    ti = mi < 4 ? CF_MOVE_FLOAT : CF_MOVE_INT;
                    cf_mv_t p = { .c = c, .coll = colls[ci], .form = (cf_form_t) f, .root = root,
                                  .n = 7, .ti = ti, .nullargs = 1,
                                  .srep = { mixes[mi][0], mixes[mi][1] },
                                  .rrep = { mixes[mi][2], mixes[mi][3] } };
                    cf_move_case(&p);
                    if (!cf.quick && mi == 0) {
                        p.n = 1031;
                        cf_move_case(&p);
                    }
                }
            }
        }
    }
    /* v: one resized datatype (extent two elements) per block at the root */
    for (f = 0; f < CF_NFORMS; ++f) {
        static const cf_coll_t vees[] = { C_GATHERV, C_SCATTERV, C_ALLGATHERV, C_ALLTOALLV };
        for (ci = 0; ci < 4; ++ci) {
            cf_mv_t p = { .c = c, .coll = vees[ci], .form = (cf_form_t) f, .root = c->maxsize - 1,
                          .n = 7, .ti = CF_MOVE_INT, .nullargs = 1, .cnt = CNT_VARIED,
                          .slay = LAY_GAPS, .rlay = LAY_NEGATIVE,
                          .srep = { REP_BUILTIN, REP_RESIZED }, .rrep = { REP_RESIZED, REP_BUILTIN } };
            cf_move_case(&p);
        }
    }
}
