/*
 * Intercommunicator collectives (MPI 4.1 §6.2.2 and each call's text),
 * blocking, nonblocking and persistent, on intercommunicators made by
 * MPI_Intercomm_create from a split of MPI_COMM_WORLD: group A is world
 * ranks 0..a-1, group B the rest, for a = np/2, 1 and np-1.
 *
 * What the standard defines there, and what is checked:
 *   - all-to-all kinds: each group receives the OTHER group's data
 *     (allgather(v): the remote ranks' blocks in remote rank order;
 *     alltoall(v,w): remote rank j's block for this rank's local rank;
 *     allreduce: the reduction of the remote group's contributions);
 *   - rooted kinds: the root passes MPI_ROOT, the rest of its group
 *     MPI_PROC_NULL (every argument insignificant: their buffers must stay
 *     as they were), the other group the root's rank in the root's group;
 *   - reduce_scatter: the reduction of the remote group's vectors is
 *     scattered over this group by this group's recvcounts (whose sum, the
 *     vector length, is the same in both groups); reduce_scatter_block:
 *     each group's vector is n_local * recvcount long, the same count in
 *     both groups, scattered in blocks of this group's recvcount.
 * Also MPI_Intercomm_merge and one allreduce on the merged communicator.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "conform_nbr.h"
#include "mpi_persist_compat.h"

enum {
    IC_ALLGATHER, IC_ALLGATHERV, IC_ALLTOALL, IC_ALLTOALLV, IC_ALLTOALLW, IC_BCAST, IC_GATHER,
    IC_GATHERV, IC_SCATTER, IC_SCATTERV, IC_BARRIER, /* the data movers */
    IC_ALLREDUCE, IC_REDUCE, IC_REDUCE_SCATTER, IC_REDUCE_SCATTER_BLOCK, IC_NCOLLS
};
static const char *const coll_name[IC_NCOLLS] = {
    "allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw", "bcast", "gather",
    "gatherv", "scatter", "scatterv", "barrier", "allreduce", "reduce", "reduce_scatter",
    "reduce_scatter_block"};
static const char *const call_name[IC_NCOLLS] = {
    "MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv", "MPI_Alltoallw",
    "MPI_Bcast", "MPI_Gather", "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv", "MPI_Barrier",
    "MPI_Allreduce", "MPI_Reduce", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block"};

static int wrank, wsize;

typedef struct {
    char name[32];
    MPI_Comm comm;
    int a;                     /* group A: world ranks 0..a-1 */
    int grp;                   /* 0: A, 1: B */
    int lrank, lsize, rsize;
} inter_t;

/* world rank of remote rank j */
static int remote_world(const inter_t *ic, int j)
{
    return ic->grp ? j : ic->a + j;
}

/* a rooted call's roles */
enum { ROLE_ROOT, ROLE_IDLE, ROLE_LEAF, ROLE_NONE };

typedef struct {
    void *sbuf, *rbuf;
    int scount, rcount, root;
    int *scounts, *sdispls, *rcounts, *rdispls;
    MPI_Aint *sdispw, *rdispw;
    MPI_Datatype *stypes, *rtypes;
    MPI_Datatype type; /* reductions */
    MPI_Op op;
} iargs_t;

/* posts the call in form f: the blocking call itself, the nonblocking
 * call, or the persistent request's init */
#define FORMS(blk, nb, init, ...)                                                          \
    (CFN_BLOCKING == f ? blk(__VA_ARGS__)                                                  \
     : CFN_NONBLOCKING == f ? nb(__VA_ARGS__, req) : init(__VA_ARGS__, MPI_INFO_NULL, req))

static int inter_post(int coll, cfn_form_t f, const iargs_t *a, MPI_Comm c, MPI_Request *req)
{
    switch (coll) {
    case IC_ALLGATHER:
        return FORMS(MPI_Allgather, MPI_Iallgather, MPIX_Allgather_init, a->sbuf, a->scount,
                     MPI_INT, a->rbuf, a->rcount, MPI_INT, c);
    case IC_ALLGATHERV:
        return FORMS(MPI_Allgatherv, MPI_Iallgatherv, MPIX_Allgatherv_init, a->sbuf, a->scount,
                     MPI_INT, a->rbuf, a->rcounts, a->rdispls, MPI_INT, c);
    case IC_ALLTOALL:
        return FORMS(MPI_Alltoall, MPI_Ialltoall, MPIX_Alltoall_init, a->sbuf, a->scount, MPI_INT,
                     a->rbuf, a->rcount, MPI_INT, c);
    case IC_ALLTOALLV:
        return FORMS(MPI_Alltoallv, MPI_Ialltoallv, MPIX_Alltoallv_init, a->sbuf, a->scounts,
                     a->sdispls, MPI_INT, a->rbuf, a->rcounts, a->rdispls, MPI_INT, c);
    case IC_ALLTOALLW:
        /* MPI_Alltoallw's displacements are int bytes */
        return FORMS(MPI_Alltoallw, MPI_Ialltoallw, MPIX_Alltoallw_init, a->sbuf, a->scounts,
                     a->sdispls, a->stypes, a->rbuf, a->rcounts, a->rdispls, a->rtypes, c);
    case IC_BCAST:
        return FORMS(MPI_Bcast, MPI_Ibcast, MPIX_Bcast_init, a->rbuf, a->rcount, MPI_INT,
                     a->root, c);
    case IC_GATHER:
        return FORMS(MPI_Gather, MPI_Igather, MPIX_Gather_init, a->sbuf, a->scount, MPI_INT,
                     a->rbuf, a->rcount, MPI_INT, a->root, c);
    case IC_GATHERV:
        return FORMS(MPI_Gatherv, MPI_Igatherv, MPIX_Gatherv_init, a->sbuf, a->scount, MPI_INT,
                     a->rbuf, a->rcounts, a->rdispls, MPI_INT, a->root, c);
    case IC_SCATTER:
        return FORMS(MPI_Scatter, MPI_Iscatter, MPIX_Scatter_init, a->sbuf, a->scount, MPI_INT,
                     a->rbuf, a->rcount, MPI_INT, a->root, c);
    case IC_SCATTERV:
        return FORMS(MPI_Scatterv, MPI_Iscatterv, MPIX_Scatterv_init, a->sbuf, a->scounts,
                     a->sdispls, MPI_INT, a->rbuf, a->rcount, MPI_INT, a->root, c);
    case IC_BARRIER:
        return FORMS(MPI_Barrier, MPI_Ibarrier, MPIX_Barrier_init, c);
    case IC_ALLREDUCE:
        return FORMS(MPI_Allreduce, MPI_Iallreduce, MPIX_Allreduce_init, a->sbuf, a->rbuf,
                     a->scount, a->type, a->op, c);
    case IC_REDUCE:
        return FORMS(MPI_Reduce, MPI_Ireduce, MPIX_Reduce_init, a->sbuf, a->rbuf, a->scount,
                     a->type, a->op, a->root, c);
    case IC_REDUCE_SCATTER:
        return FORMS(MPI_Reduce_scatter, MPI_Ireduce_scatter, MPIX_Reduce_scatter_init, a->sbuf,
                     a->rbuf, a->rcounts, a->type, a->op, c);
    default:
        return FORMS(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block,
                     MPIX_Reduce_scatter_block_init, a->sbuf, a->rbuf, a->rcount, a->type, a->op, c);
    }
}

/* ---- data movers ------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int count; /* uniform: items per block; v, w: multiplier of the
                  per-peer counts; 0: every count 0, NULL buffers */
    int big;   /* not with --quick */
} variant_t;
static const variant_t uniform_vars[] = {{"c1", 1, 0}, {"c7", 7, 0}, {"c4099", 4099, 1}, {"zero", 0, 0}, {NULL, 0, 0}};
static const variant_t v_vars[] = {{"gaps", 1, 0}, {"gaps-x700", 700, 1}, {"zero", 0, 0}, {NULL, 0, 0}};
static const variant_t w_vars[] = {{"types", 1, 0}, {"types-x700", 700, 1}, {"zero", 0, 0}, {NULL, 0, 0}};
static const variant_t none_vars[] = {{"-", 0, 0}, {NULL, 0, 0}};

static int rooted(int coll)
{
    return IC_BCAST == coll || IC_GATHER == coll || IC_GATHERV == coll || IC_SCATTER == coll
           || IC_SCATTERV == coll || IC_REDUCE == coll;
}

/* this rank's blocks in a data mover; root: the root's world rank */
static void move_layout(const inter_t *ic, int coll, int role, int root, const variant_t *v,
                        cfn_side_t *snd, cfn_side_t *rcv)
{
    int n = v->count, me = wrank, rn = ic->rsize, ns = 0, nr = 0, order = CFN_IN_ORDER;
    size_t unit = 4;
    switch (coll) {
    case IC_ALLGATHER: case IC_ALLGATHERV: ns = 1, nr = rn; break;
    case IC_ALLTOALL: case IC_ALLTOALLV: case IC_ALLTOALLW: ns = nr = rn; break;
    case IC_BCAST: ns = ROLE_ROOT == role, nr = ROLE_ROOT != role; break;
    case IC_GATHER: case IC_GATHERV: ns = ROLE_LEAF == role, nr = ROLE_ROOT == role ? rn : 0; break;
    case IC_SCATTER: case IC_SCATTERV: ns = ROLE_ROOT == role ? rn : 0, nr = ROLE_LEAF == role; break;
    default: break;
    }
    cfn_side_init(snd, ns);
    cfn_side_init(rcv, nr);
    for (int i = 0; i < ns; ++i) {
        int to = IC_ALLGATHER == coll || IC_ALLGATHERV == coll || IC_BCAST == coll || IC_GATHER == coll
                 || IC_GATHERV == coll ? -1 : i; /* the remote rank this block is for */
        snd->from[i] = me;
        snd->blk[i] = to < 0 ? 0 : to;
        snd->cnt[i] = n;
        if (IC_ALLGATHERV == coll || IC_GATHERV == coll) {
            snd->cnt[i] = cfn_gather_count(me) * n;
        } else if (IC_SCATTERV == coll) {
            snd->cnt[i] = cfn_gather_count(remote_world(ic, i)) * n;
        } else if (IC_ALLTOALLV == coll) {
            snd->cnt[i] = cfn_edge_count(me, i) * n;
        } else if (IC_ALLTOALLW == coll) {
            cfn_td_t rt;
            int rc;
            cfn_edge_types(me, i, cfn_edge_count(me, i) * n, &snd->td[i], &snd->cnt[i], &rt, &rc);
        }
    }
    for (int j = 0; j < nr; ++j) {
        int s = IC_BCAST == coll || IC_SCATTER == coll || IC_SCATTERV == coll ? root
                : remote_world(ic, j);
        int mine = IC_ALLTOALL == coll || IC_ALLTOALLV == coll || IC_ALLTOALLW == coll
                   || IC_SCATTER == coll || IC_SCATTERV == coll; /* a block meant for this rank */
        rcv->from[j] = ROLE_IDLE == role ? MPI_PROC_NULL : s;
        rcv->blk[j] = mine ? ic->lrank : 0;
        rcv->cnt[j] = n;
        if (IC_ALLGATHERV == coll || IC_GATHERV == coll) {
            rcv->cnt[j] = cfn_gather_count(s) * n;
        } else if (IC_SCATTERV == coll) {
            rcv->cnt[j] = cfn_gather_count(me) * n;
        } else if (IC_ALLTOALLV == coll) {
            rcv->cnt[j] = cfn_edge_count(s, ic->lrank) * n;
        } else if (IC_ALLTOALLW == coll) {
            cfn_td_t st;
            int sc;
            cfn_edge_types(s, ic->lrank, cfn_edge_count(s, ic->lrank) * n, &st, &sc, &rcv->td[j],
                           &rcv->cnt[j]);
        }
    }
    if (IC_ALLGATHERV == coll || IC_ALLTOALLV == coll || IC_GATHERV == coll
        || IC_SCATTERV == coll || IC_ALLTOALLW == coll) {
        order = CFN_REVERSED;
        unit = IC_ALLTOALLW == coll ? 8 : 4;
    }
    /* a buffer of one block without a displacement argument starts with it */
    int one_send = IC_ALLGATHERV == coll || IC_GATHERV == coll, one_recv = IC_SCATTERV == coll;
    cfn_side_place(snd, CFN_REVERSED == order && !one_send ? CFN_ROTATED : CFN_IN_ORDER, unit);
    cfn_side_place(rcv, one_recv ? CFN_IN_ORDER : order, unit);
}

/* a case's buffers: what it puts, what it expects back */
typedef struct {
    cfn_call_t call;
    const inter_t *ic;
    int coll;
    iargs_t a;
    cfn_side_t snd, rcv;
    unsigned char *simg, *want;
} move_case_t;

static int case_post(cfn_call_t *c, MPI_Request *req)
{
    move_case_t *k = (move_case_t *)c;
    return inter_post(k->coll, c->form, &k->a, k->ic->comm, req);
}

static void move_prepare(cfn_call_t *c, int round)
{
    move_case_t *k = (move_case_t *)c;
    k->simg = cfn_side_image(&k->snd, round);
    k->want = cfn_side_image(&k->rcv, round);
    if (k->snd.bytes) {
        cf_put(k->a.sbuf, k->simg, k->snd.bytes);
    }
    if (k->rcv.bytes) {
        cf_poison(k->a.rbuf, k->rcv.bytes);
    }
}

static void move_check(cfn_call_t *c, int round, int ok)
{
    move_case_t *k = (move_case_t *)c;
    (void)round;
    if (ok) {
        cfn_check(k->a.rbuf, k->want, k->rcv.bytes, "recvbuf");
        cfn_check(k->a.sbuf, k->simg, k->snd.bytes, "sendbuf (an input)");
    }
    free(k->simg), free(k->want);
    k->simg = k->want = NULL;
}

static void move_case(const inter_t *ic, int coll, cfn_form_t form, int role, int root,
                      const variant_t *v)
{
    move_case_t k = {.call = {form, call_name[coll], case_post, move_prepare, move_check},
                     .ic = ic, .coll = coll};
    move_layout(ic, coll, role, root, v, &k.snd, &k.rcv);
    k.a = (iargs_t){
        .scount = k.snd.n ? k.snd.cnt[0] : 0, .rcount = k.rcv.n ? k.rcv.cnt[0] : 0,
        .scounts = k.snd.cnt, .sdispls = k.snd.idisp, .stypes = k.snd.types,
        .rcounts = k.rcv.cnt, .rdispls = k.rcv.idisp, .rtypes = k.rcv.types,
        .sbuf = cf_alloc(k.snd.bytes), .rbuf = cf_alloc(k.rcv.bytes),
    };
    int *swd = cfn_calloc((size_t)k.snd.n, sizeof(int)), *rwd = cfn_calloc((size_t)k.rcv.n, sizeof(int));
    if (IC_ALLTOALLW == coll) { /* MPI_Alltoallw: int byte displacements */
        for (int i = 0; i < k.snd.n; ++i) {
            swd[i] = (int)k.snd.disp[i];
        }
        for (int j = 0; j < k.rcv.n; ++j) {
            rwd[j] = (int)k.rcv.disp[j];
        }
        k.a.sdispls = swd;
        k.a.rdispls = rwd;
    }
    k.a.root = ROLE_ROOT == role ? MPI_ROOT : ROLE_IDLE == role ? MPI_PROC_NULL
               : root - (ic->grp ? 0 : ic->a); /* the root's rank in its (remote) group */
    if (IC_BCAST == coll && ROLE_ROOT == role) {
        k.a.rbuf = k.a.sbuf, k.a.rcount = k.a.scount; /* the root's buffer is an input */
    }
    if ((IC_GATHER == coll || IC_SCATTER == coll) && ROLE_ROOT == role) {
        k.a.rcount = k.a.scount = v->count; /* per remote rank */
    }
    cfn_run(&k.call);
    free(swd), free(rwd);
    if (k.a.rbuf != k.a.sbuf) {
        cf_free(k.a.rbuf);
    }
    cf_free(k.a.sbuf);
    cfn_side_free(&k.snd);
    cfn_side_free(&k.rcv);
}

/* ---- reductions -------------------------------------------------------------------- */

static const struct { MPI_Datatype type; MPI_Op op; const char *op_name; } red_kinds[] = {
    {MPI_INT, MPI_SUM, "MPI_SUM"},
    {MPI_DOUBLE, MPI_MAX, "MPI_MAX"},
    {MPI_DOUBLE_INT, MPI_MINLOC, "MPI_MINLOC"},
};
#define NRED ((int)(sizeof red_kinds / sizeof red_kinds[0]))

/* count elements of rank r's contribution, poisoned padding */
static unsigned char *red_input(const cf_type_t *t, MPI_Op op, int r, size_t count, int seed)
{
    unsigned char *img = cfn_image(count * t->extent);
    for (size_t i = 0; i < count; ++i) {
        cf_value_op(t, op, r, i, seed, img + i * t->extent);
    }
    return img;
}

/* elements first..first+count-1 of the remote group's reduction, in
 * remote rank order */
static unsigned char *red_remote(const inter_t *ic, const cf_type_t *t, MPI_Op op,
                                 size_t first, size_t count, int seed)
{
    unsigned char *acc = cfn_image(count * t->extent), one[64];
    for (size_t i = 0; i < count; ++i) {
        cf_value_op(t, op, remote_world(ic, 0), first + i, seed, acc + i * t->extent);
        for (int j = 1; j < ic->rsize; ++j) {
            memset(one, CF_POISON, sizeof one);
            cf_value_op(t, op, remote_world(ic, j), first + i, seed, one);
            cf_reduce1(t, op, acc + i * t->extent, one);
        }
    }
    return acc;
}

/* this group's recvcounts for reduce_scatter: a total of n over the
 * group, 0 at local rank 0 when the group has more than one rank */
static void scatter_counts(int lsize, int n, int *rc)
{
    for (int k = 0; k < lsize; ++k) {
        rc[k] = lsize == 1 ? n : (int)((long)n * k / (lsize - 1) - (long)n * (k ? k - 1 : 0) / (lsize - 1));
    }
    if (lsize > 1) {
        rc[0] = 0;
    }
}

typedef struct {
    cfn_call_t call;
    const inter_t *ic;
    int coll, role;
    iargs_t a;
    const cf_type_t *t;
    size_t sn, rn, first; /* elements sent, received; where the received start */
    unsigned char *simg, *want;
} red_case_t;

/* rooted: the root receives, the other group sends, the rest of the
 * root's group passes buffers that must stay untouched */
static void red_prepare(cfn_call_t *c, int round)
{
    red_case_t *k = (red_case_t *)c;
    const cf_type_t *t = k->t;
    if (ROLE_IDLE == k->role) {
        k->simg = cfn_image(k->sn * t->extent);
        k->want = cfn_image(k->rn * t->extent);
    } else {
        k->simg = ROLE_ROOT != k->role ? red_input(t, k->a.op, wrank, k->sn, round) : NULL;
        k->want = ROLE_LEAF != k->role ? red_remote(k->ic, t, k->a.op, k->first, k->rn, round) : NULL;
    }
    if (k->a.sbuf) {
        cf_put(k->a.sbuf, k->simg, k->sn * t->extent);
    }
    if (k->a.rbuf) {
        cf_poison(k->a.rbuf, k->rn * t->extent);
    }
}

static void red_check(cfn_call_t *c, int round, int ok)
{
    red_case_t *k = (red_case_t *)c;
    size_t rbytes = k->a.rbuf ? k->rn * k->t->extent : 0;
    (void)round;
    if (ok && rbytes) {
        unsigned char *got = cfn_calloc(rbytes, 1);
        cf_get(got, k->a.rbuf, rbytes);
        if (ROLE_IDLE == k->role) {
            cf_same(got, k->want, rbytes, "recvbuf of an MPI_PROC_NULL rank");
        } else {
            cf_same_typed(got, k->want, k->rn, k->t, "recvbuf");
        }
        free(got);
    }
    if (ok) {
        cfn_check(k->a.sbuf, k->simg, k->a.sbuf ? k->sn * k->t->extent : 0, "sendbuf (an input)");
    }
    free(k->simg), free(k->want);
    k->simg = k->want = NULL;
}

static void red_case(const inter_t *ic, int coll, cfn_form_t form, int role, int root,
                     const cf_type_t *t, MPI_Op op, int n)
{
    int *rc = cfn_calloc((size_t)ic->lsize, sizeof(int));
    red_case_t k = {.call = {form, call_name[coll], case_post, red_prepare, red_check},
                    .ic = ic, .coll = coll, .role = role, .t = t,
                    .sn = (size_t)n, .rn = (size_t)n,
                    .a = {.type = t->type, .op = op, .rcounts = rc, .scount = n}};
    if (IC_REDUCE_SCATTER == coll) {
        scatter_counts(ic->lsize, n, rc);
        k.rn = (size_t)rc[ic->lrank];
        for (int q = 0; q < ic->lrank; ++q) {
            k.first += (size_t)rc[q];
        }
    } else if (IC_REDUCE_SCATTER_BLOCK == coll) {
        k.a.rcount = ic->rsize * n; /* lsize * rcount: the same in both groups */
        k.sn = (size_t)ic->lsize * (size_t)k.a.rcount;
        k.rn = (size_t)k.a.rcount;
        k.first = (size_t)ic->lrank * k.rn;
    }
    k.a.sbuf = cf_alloc(ROLE_ROOT != role ? k.sn * t->extent : 0);
    k.a.rbuf = cf_alloc(ROLE_LEAF != role ? k.rn * t->extent : 0);
    k.a.root = ROLE_ROOT == role ? MPI_ROOT : ROLE_IDLE == role ? MPI_PROC_NULL
               : root - (ic->grp ? 0 : ic->a);
    cfn_run(&k.call);
    cf_free(k.a.sbuf);
    cf_free(k.a.rbuf);
    free(rc);
}

/* ---- the cases --------------------------------------------------------------------- */

static void merge_case(const inter_t *ic)
{
    if (!cf_case("intercomm_merge/allreduce/%s/%s", ic->name, cfn_mem)) {
        return;
    }
    /* group A asks low, B high: A's ranks first, so merged ranks are world ranks */
    MPI_Comm m = MPI_COMM_NULL;
    int rc = MPI_Intercomm_merge(ic->comm, ic->grp, &m);
    cf_rc(rc, "MPI_Intercomm_merge");
    if (MPI_SUCCESS == rc) {
        int r = -1, n = 7;
        MPI_Comm_set_errhandler(m, MPI_ERRORS_RETURN);
        MPI_Comm_rank(m, &r);
        CF_CHECK(r == wrank, "merged rank %d, want %d", r, wrank);
        const cf_type_t *t = cf_type_find(MPI_INT);
        unsigned char *in = red_input(t, MPI_SUM, wrank, (size_t)n, 0);
        unsigned char *want = red_input(t, MPI_SUM, 0, (size_t)n, 0);
        unsigned char *one = cfn_calloc((size_t)n, t->extent), *got = cfn_calloc((size_t)n, t->extent);
        for (int q = 1; q < wsize; ++q) {
            for (int i = 0; i < n; ++i) {
                cf_value_op(t, MPI_SUM, q, (size_t)i, 0, one);
                cf_reduce1(t, MPI_SUM, want + (size_t)i * t->extent, one);
            }
        }
        void *sb = cfn_upload(in, (size_t)n * t->extent), *rb = cf_alloc((size_t)n * t->extent);
        cf_poison(rb, (size_t)n * t->extent);
        rc = MPI_Allreduce(sb, rb, n, MPI_INT, MPI_SUM, m);
        cf_rc(rc, "MPI_Allreduce");
        if (MPI_SUCCESS == rc) {
            cf_get(got, rb, (size_t)n * t->extent);
            cf_same(got, want, (size_t)n * t->extent, "recvbuf");
        }
        cf_free(sb), cf_free(rb);
        free(in), free(want), free(one), free(got);
        MPI_Comm_free(&m);
    }
    cf_end();
}

static void inter_cases(const inter_t *ic)
{
    for (int coll = 0; coll < IC_NCOLLS; ++coll) {
        for (int f = 0; f < CFN_NFORMS; ++f) {
            /* rooted calls: every rank of the world as the root */
            for (int root = 0; root < (rooted(coll) ? wsize : 1); ++root) {
                int rgrp = root >= ic->a;
                int role = !rooted(coll) ? ROLE_NONE : rgrp != ic->grp ? ROLE_LEAF
                           : root == wrank ? ROLE_ROOT : ROLE_IDLE;
                char rname[24] = "";
                if (rooted(coll)) {
                    snprintf(rname, sizeof rname, "/root-%c%d", rgrp ? 'B' : 'A',
                             rgrp ? root - ic->a : root);
                }
                if (coll >= IC_ALLREDUCE) {
                    for (int k = 0; k < NRED; ++k) {
                        const cf_type_t *t = cf_type_find(red_kinds[k].type);
                        static const int counts[] = {1, 7, 4099, 0};
                        for (int c = 0; c < 4; ++c) {
                            if ((cf.quick && 4099 == counts[c]) || !t || (0 == counts[c] && k)) {
                                continue;
                            }
                            /* Open MPI 4.1's MPIX_Reduce_init checks an
                             * intercommunicator like an intracommunicator:
                             * a sender whose local rank is the root's
                             * number and passes NULL for both buffers
                             * (count 0) gets MPI_ERR_ARG (sendbuf ==
                             * recvbuf), also with coll/gpu left out */
                            if (0 == counts[c] && IC_REDUCE == coll && CFN_PERSISTENT == f) {
                                continue;
                            }
                            if (cf_case("%s/%s/%s%s/%s-%s/n%d/%s", coll_name[coll], cfn_form_name[f],
                                        ic->name, rname, t->name, red_kinds[k].op_name, counts[c],
                                        cfn_mem)) {
                                red_case(ic, coll, (cfn_form_t)f, role, root, t, red_kinds[k].op,
                                         counts[c]);
                                cf_end();
                            }
                        }
                    }
                    continue;
                }
                const variant_t *vars = IC_BARRIER == coll ? none_vars
                                        : IC_ALLTOALLW == coll ? w_vars
                                        : IC_ALLGATHERV == coll || IC_ALLTOALLV == coll
                                          || IC_GATHERV == coll || IC_SCATTERV == coll ? v_vars
                                        : uniform_vars;
                for (const variant_t *v = vars; v->name; ++v) {
                    if (v->big && cf.quick) {
                        continue;
                    }
                    if (!cf_case("%s/%s/%s%s%s%s/%s", coll_name[coll], cfn_form_name[f], ic->name,
                                 rname, IC_BARRIER == coll ? "" : "/",
                                 IC_BARRIER == coll ? "" : v->name, cfn_mem)) {
                        continue;
                    }
                    move_case(ic, coll, (cfn_form_t)f, role, root, v); /* barrier: no blocks */
                    cf_end();
                }
            }
        }
    }
    merge_case(ic);
}

void cfn_inter_run(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wsize < 2) {
        if (0 == wrank) {
            printf("note: intercommunicator cases need 2 ranks or more: none at np 1\n");
        }
        return;
    }
    /* group A's sizes: equal (or nearly), 1 + rest, rest + 1 */
    int as[3] = {wsize / 2, 1, wsize - 1}, nas = 0;
    for (int k = 0; k < 3; ++k) {
        int dup = 0;
        for (int q = 0; q < k; ++q) {
            dup |= as[q] == as[k];
        }
        if (!dup) {
            as[nas++] = as[k];
        }
    }
    for (int k = 0; k < nas; ++k) {
        inter_t ic = {.a = as[k], .comm = MPI_COMM_NULL};
        MPI_Comm local = MPI_COMM_NULL;
        ic.grp = wrank >= ic.a;
        snprintf(ic.name, sizeof ic.name, "inter-%d+%d", ic.a, wsize - ic.a);
        MPI_Comm_split(MPI_COMM_WORLD, ic.grp, wrank, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, ic.grp ? 0 : ic.a, 36, &ic.comm);
        MPI_Comm_free(&local);
        MPI_Comm_set_errhandler(ic.comm, MPI_ERRORS_RETURN);
        MPI_Comm_rank(ic.comm, &ic.lrank);
        MPI_Comm_size(ic.comm, &ic.lsize);
        MPI_Comm_remote_size(ic.comm, &ic.rsize);
        inter_cases(&ic);
        MPI_Comm_free(&ic.comm);
    }
}
