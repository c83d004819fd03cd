/*
 * Bcast, Gather, Gatherv, Scatter, Scatterv (MPI 4.1 sections 6.4-6.6):
 * every root, counts 0/1/odd/large, MPI_IN_PLACE at the root, the root's
 * v-layouts with gaps, blocks out of order and negative displacements,
 * zero counts with NULL buffers, and the arguments significant only at the
 * root passed as NULL / garbage / MPI_DATATYPE_NULL everywhere else.
 */
#include <stdio.h>
#include <string.h>

#include "conform_coll.h"

/* a count the standard says is not looked at */
#define GARBAGE_COUNT (-1)

/* the predefined types the data-movement sweeps run: every element size */
static const MPI_Datatype move_types[] = { MPI_BYTE, MPI_SHORT, MPI_INT, MPI_DOUBLE, MPI_2INT,
                                           MPI_C_DOUBLE_COMPLEX, MPI_LONG_DOUBLE };
static const char *const move_type_names[] = { "byte", "short", "int", "double", "2int",
                                               "double-complex", "long-double" };
#define NMOVE_TYPES ((int) (sizeof(move_types) / sizeof(move_types[0])))

/* ---- Bcast ---- */

static void bcast_case(const cf_comm_t *c, cf_form_t f, int root, int n, int ti)
{
    cf_side_t buf;
    cf_move_t m = { 0 };
    cf_call_t call = { .coll = C_BCAST, .comm = c->comm, .root = root };
    if (!cf_case("bcast/%s/%s/root%d/n%d/%s/%s", cf_form_names[f], c->name, root, n,
                 move_type_names[ti], cf_mem_name())) {
        return;
    }
    if (root < c->size) {
        cf_side_init(&buf, 1, CF_POISON);
        cf_block(&buf.slot[0].blk, move_types[ti], n, REP_BUILTIN);
        buf.slot[0].src = root;
        buf.slot[0].isrc = c->rank == root ? root : -1;
        cf_side_alloc(&buf);
        call.rbuf = buf.ptr;
        call.rcount = n;
        call.rtype = move_types[ti];
        cf_move_add(&m, &buf, c->rank == root ? "root's buffer" : "buffer");
        cf_move_run(&call, f, &m);
        cf_side_free(&buf);
    }
    cf_end();
}

/* ---- Gather(v), Scatter(v) ---- */

typedef struct {
    const cf_comm_t *c;
    cf_coll_t coll;     /* C_GATHER, C_GATHERV, C_SCATTER or C_SCATTERV */
    cf_form_t form;
    int root, n, inplace;
    int nullargs;       /* non-roots pass NULL, garbage, MPI_DATATYPE_NULL */
    cf_counts_t cnt;
    cf_layout_t lay;
} rooted_t;

static const char *rooted_name(cf_coll_t k)
{
    return k == C_GATHER ? "gather" : k == C_GATHERV ? "gatherv" : k == C_SCATTER ? "scatter" : "scatterv";
}

static void rooted_run(const rooted_t *p)
{
    const cf_comm_t *c = p->c;
    int me = c->rank, P = c->size, R = p->root, q;
    int atroot = me == R, scatter = p->coll == C_SCATTER || p->coll == C_SCATTERV;
    int vee = p->coll == C_GATHERV || p->coll == C_SCATTERV;
    int inplace = atroot && p->inplace, rootargs = atroot || !p->nullargs;
    int counts[CF_MAXP], displs[CF_MAXP], nme;
    size_t esize = sizeof(int);
    /* leaf: the one block every rank sends (gather) or receives (scatter);
     * spread: the root's P blocks */
    static cf_side_t leaf, spread;
    cf_move_t m = { 0 };
    cf_call_t call = { .coll = p->coll, .comm = c->comm, .root = R };

    nme = vee ? cf_count(p->cnt, p->n, me, R) : p->n;
    cf_side_init(&leaf, 1, scatter ? CF_POISON : CF_JUNK);
    cf_block(&leaf.slot[0].blk, MPI_INT, nme, REP_BUILTIN);
    if (scatter) {
        leaf.slot[0].src = R, leaf.slot[0].key = me;
    } else {
        leaf.slot[0].src = leaf.slot[0].isrc = me;
    }
    if (!inplace) {
        cf_side_alloc(&leaf);
        cf_move_add(&m, &leaf, scatter ? "receive buffer" : "send buffer");
    }

    /* the root's buffer; a non-root passing full arguments passes one of
     * the same shape, which MPI must leave alone */
    cf_side_init(&spread, rootargs ? P : 0, scatter ? CF_JUNK : CF_POISON);
    for (q = 0; q < spread.n; ++q) {
        cf_slot_t *sl = &spread.slot[q];
        cf_block(&sl->blk, MPI_INT, vee ? cf_count(p->cnt, p->n, q, R) : p->n, REP_BUILTIN);
        if (atroot && scatter) {
            sl->src = sl->isrc = R, sl->key = sl->ikey = q;
        } else if (atroot) {
            sl->src = q;
        }
    }
    if (inplace && !scatter) {
        /* the root's own block is already in place and must stay */
        spread.slot[R].isrc = R;
    }
    cf_side_place(&spread, vee ? p->lay : LAY_PACKED, esize);
    for (q = 0; q < spread.n; ++q) {
        counts[q] = spread.slot[q].blk.count;
        displs[q] = (int) (spread.slot[q].disp / (ptrdiff_t) esize);
    }
    cf_side_alloc(&spread);
    if (spread.n) {
        cf_move_add(&m, &spread, !atroot ? "the non-root's unused buffer"
                                 : scatter ? "root's send buffer" : "root's receive buffer");
    }

    /* the leaf's arguments, or at an in-place root garbage the standard
     * says is ignored there */
    {
        const void *lbuf = inplace ? MPI_IN_PLACE : leaf.ptr;
        int lcount = inplace && p->nullargs ? GARBAGE_COUNT : nme;
        MPI_Datatype ltype = inplace && p->nullargs ? MPI_DATATYPE_NULL : MPI_INT;
        const void *sbuf = rootargs ? spread.ptr : NULL;
        int scount = rootargs ? p->n : GARBAGE_COUNT;
        MPI_Datatype stype = rootargs ? MPI_INT : MPI_DATATYPE_NULL;
        const int *sc = rootargs ? counts : NULL, *sd = rootargs ? displs : NULL;
        if (scatter) {
            call.sbuf = sbuf, call.scount = scount, call.stype = stype;
            call.scounts = sc, call.sdispls = sd;
            call.rbuf = (void *) lbuf, call.rcount = lcount, call.rtype = ltype;
        } else {
            call.sbuf = lbuf, call.scount = lcount, call.stype = ltype;
            call.rbuf = (void *) sbuf, call.rcount = scount, call.rtype = stype;
            call.rcounts = sc, call.rdispls = sd;
        }
    }
    cf_move_run(&call, p->form, &m);
    cf_side_free(&leaf);
    cf_side_free(&spread);
}

static void rooted_case(const rooted_t *p)
{
    int vee = p->coll == C_GATHERV || p->coll == C_SCATTERV;
    char shape[64] = "";
    if (vee) {
        snprintf(shape, sizeof(shape), "/%s/%s", cf_counts_names[p->cnt], cf_layout_names[p->lay]);
    }
    if (!cf_case("%s/%s/%s/root%d/n%d%s%s%s/%s", rooted_name(p->coll), cf_form_names[p->form],
                 p->c->name, p->root, p->n, shape, p->inplace ? "/inplace" : "",
                 p->nullargs ? "/nonroot-null" : "/nonroot-full", cf_mem_name())) {
        return;
    }
    if (p->root < p->c->size) {
        rooted_run(p);
    }
    cf_end();
}

void cf_test_rooted(const cf_comm_t *c)
{
    int sizes[8], ns = cf_sizes(sizeof(int), sizes), f, root, k, ti, ip, cnt, lay;
    static const cf_coll_t colls[] = { C_GATHER, C_SCATTER, C_GATHERV, C_SCATTERV };
    size_t ci;
    for (f = 0; f < CF_NFORMS; ++f) {
        for (root = 0; root < c->maxsize; ++root) {
            for (k = 0; k < ns; ++k) {
                bcast_case(c, (cf_form_t) f, root, sizes[k], 2);
            }
        }
        /* every element size, at an odd count */
        for (ti = 0; ti < NMOVE_TYPES; ++ti) {
            if (ti != 2) {
                bcast_case(c, (cf_form_t) f, c->maxsize - 1, 1031, ti);
            }
        }
        for (ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ++ci) {
            rooted_t p = { c, colls[ci], (cf_form_t) f, 0, 0, 0, 1, CNT_UNIFORM, LAY_PACKED };
            int vee = colls[ci] == C_GATHERV || colls[ci] == C_SCATTERV;
            for (root = 0; root < c->maxsize; ++root) {
                p.root = root;
                for (ip = 0; ip < 2; ++ip) {
                    p.inplace = ip;
                    if (!vee) {
                        for (k = 0; k < ns; ++k) {
                            p.n = sizes[k];
                            p.nullargs = 1;
                            rooted_case(&p);
                        }
                        p.n = 7;
                        p.nullargs = 0;
                        rooted_case(&p);
                        continue;
                    }
                    p.n = 7;
                    for (cnt = 0; cnt < CNT_N; ++cnt) {
                        for (lay = 0; lay < LAY_N; ++lay) {
                            p.cnt = (cf_counts_t) cnt, p.lay = (cf_layout_t) lay;
                            p.nullargs = 1;
                            rooted_case(&p);
                        }
                    }
                    p.cnt = CNT_VARIED, p.lay = LAY_NEGATIVE, p.nullargs = 0;
                    rooted_case(&p);
                    /* one large count at every root */
                    if (!cf.quick && !ip) {
                        p.n = sizes[ns - 1], p.cnt = CNT_VARIED, p.lay = LAY_REVERSED, p.nullargs = 1;
                        rooted_case(&p);
                    }
                }
            }
        }
    }
}
