/*
 * The plan across nodes (hier/gpu_hier_choice.h, hier/gpu_hier_price.h) on
 * the DGX H100 fixture as 16 nodes x 8 GPUs: every collective the component
 * runs hierarchically has a row per size, the allreduce switches between
 * recursive doubling and the ring exactly where inter/'s model says (checked
 * against gpu_inter_allreduce_choice and against the textbook alpha-beta
 * costs), rails for even nodes and leaders for uneven ones, slices as the
 * runtime cuts them, and predicted times that grow with size.  The list of
 * hierarchical collectives is checked against the component's own table
 * (ompi_coll_gpu/coll_gpu_colls.c).
 *
 *   test_topo_hier FIXTURES_DIR SOURCE_DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hier/gpu_hier_price.h"
#include "test/unit/check.h"

static const char *fixdir, *srcdir;
static gpu_topo_node_t node;
static gpu_topo_plan_t plan;
static const gpu_topo_model_t *M = &gpu_topo_model_h200;

static gpu_hier_model_t dgx16(int last)
{
    gpu_hier_model_t m = { .nnodes = 16, .nranks = 15 * 8 + last, .lsize = 8, .even = 8 == last,
                           .slot_bytes = gpu_hier_slot_bytes(GPU_HIER_SLOT_BYTES_DEFAULT),
                           .nchan = 1, .alpha_s = GPU_INTER_ALPHA_US_DEFAULT * 1e-6,
                           .beta_Bps = GPU_INTER_BETA_GBS_DEFAULT * 1e9,
                           .algo = GPU_INTER_AUTO };
    return m;
}

/* every hierarchical collective: a row at every size it can take, times
 * that grow with size, slices as the runtime cuts them */
static void test_rows(void)
{
    const gpu_hier_model_t m = dgx16(8);
    for (int c = 0; c < GPU_HIER_NCOLLS; ++c) {
        double prev = 0.0;
        int rows = 0, grows = 1;
        for (double b = 8; b <= 2147483648.0; b *= 4) {
            /* one rank's block; scan and exscan take the buffer */
            const int per_rank = c >= GPU_HIER_ALLGATHER && GPU_HIER_SCAN != c &&
                                 GPU_HIER_EXSCAN != c;
            const size_t bytes = per_rank ? (size_t) b / 128 / 4 * 4 : (size_t) b;
            gpu_hier_choice_t ch;
            gpu_hier_price_t pr;
            if (0 == bytes) {
                continue;
            }
            CHECK(GPU_OK == gpu_hier_choose(&m, (gpu_hier_coll_t) c, bytes, 4, &ch),
                  "%s %.0f B: a plan", gpu_hier_coll_name((gpu_hier_coll_t) c), b);
            gpu_hier_price(&m, 0, &plan, M, &ch, &pr);
            grows &= pr.us > prev;
            CHECK(fabs(pr.fixed_us + pr.msgs * m.alpha_s * 1e6 + pr.bytes / m.beta_Bps * 1e6 -
                       pr.us) < 1e-6 * pr.us,
                  "%s %.0f B: the price is linear in alpha and 1/beta (%.3f us)",
                  gpu_hier_coll_name((gpu_hier_coll_t) c), b, pr.us);
            CHECK(ch.nslices == (ch.net_bytes + ch.slice - 1) / ch.slice && ch.nslices >= 1 &&
                  (ch.nslices - 1) * ch.slice + ch.last == ch.net_bytes,
                  "%s %.0f B: %zu slices of %zu cover %zu bytes",
                  gpu_hier_coll_name((gpu_hier_coll_t) c), b, ch.nslices, ch.slice, ch.net_bytes);
            prev = pr.us;
            ++rows;
        }
        CHECK(grows, "%s: predicted time grows with size", gpu_hier_coll_name((gpu_hier_coll_t) c));
        /* 8 B..2 GiB in x4 steps: 15 sizes; per-rank blocks from 512 B (a float each) */
        CHECK(rows == (c >= GPU_HIER_ALLGATHER && GPU_HIER_SCAN != c && GPU_HIER_EXSCAN != c ? 12
                                                                                        : 15),
              "%s: %d sizes", gpu_hier_coll_name((gpu_hier_coll_t) c), rows);
    }
    {   /* 2 GiB allreduce on 8 rails: 256 MiB shards in 4 MiB slots */
        gpu_hier_choice_t ch;
        gpu_hier_choose(&m, GPU_HIER_ALLREDUCE, 2147483648ul, 4, &ch);
        CHECK(ch.rails && 268435456 == ch.net_bytes && 64 == ch.nslices,
              "2 GiB allreduce: rails, 256 MiB per rail, 64 slices (%d, %zu, %zu)", ch.rails,
              ch.net_bytes, ch.nslices);
    }
    {   /* more channels: four slices per channel, none below 256 KiB */
        gpu_hier_model_t m4 = m;
        m4.nchan = 4;
        CHECK(gpu_hier_slice_len(&m4, 8 << 20, 4) == 512 << 10 &&
              gpu_hier_slice_len(&m4, 1 << 16, 4) == 256 << 10 &&
              gpu_hier_slice_len(&m4, 1ul << 30, 4) == m.slot_bytes,
              "4 channels: 8 MiB in 512 KiB slices, 256 KiB at least, a slot at most");
    }
}

/* the textbook costs of inter/gpu_inter.h's two allreduces among n (a power of two) */
static int textbook_rd(int n, double a, double beta, double s)
{
    const double steps = log2(n);
    return steps * (a + s / beta) <= 2.0 * (n - 1) * (a + s / (n * beta));
}

static void test_allreduce_switch(void)
{
    const double alphas[] = { GPU_INTER_ALPHA_US_DEFAULT, 2.0, 20.0 };
    for (int k = 0; k < 6; ++k) {
        gpu_hier_model_t m = dgx16(8);
        m.nchan = k < 3 ? 1 : GPU_HIER_CHANNELS_DEFAULT;
        gpu_inter_group_t g;
        int rd_rows = 0, ring_rows = 0, agree = 1, textbook = 1, label_ok = 1;
        m.alpha_s = alphas[k % 3] * 1e-6;
        memset(&g, 0, sizeof(g));
        g.n = 16;
        g.alpha_s = m.alpha_s;
        g.beta_Bps = m.beta_Bps;
        g.algo = GPU_INTER_AUTO;
        for (double b = 4096; b <= 2147483648.0; b *= 1.07) {
            const size_t bytes = (size_t) b / 4 * 4;
            gpu_hier_choice_t ch;
            char label[160];
            gpu_hier_choose(&m, GPU_HIER_ALLREDUCE, bytes, 4, &ch);
            gpu_hier_label(&ch, label, sizeof(label));
            /* what the runtime asks per full slice: the rail's shard in slices */
            const size_t shard = (bytes / 4 + 7) / 8 * 4;
            const size_t cut = gpu_hier_slice_len(&m, shard, 4);
            const size_t slice = shard < cut ? shard : cut;
            const gpu_inter_algo_t want = gpu_inter_allreduce_choice(&g, slice);
            agree &= want == ch.algo;
            textbook &= (GPU_INTER_RD == want) == textbook_rd(16, g.alpha_s, g.beta_Bps, slice);
            label_ok &= NULL != strstr(label, GPU_INTER_RD == ch.algo
                                                  ? "reduce-scatter/recursive-doubling"
                                                  : "reduce-scatter/ring");
            rd_rows += GPU_INTER_RD == ch.algo;
            ring_rows += GPU_INTER_RING == ch.algo;
        }
        CHECK(agree, "alpha %.0f us, %d channels: the plan's allreduce is "
              "gpu_inter_allreduce_choice's", alphas[k % 3], m.nchan);
        CHECK(textbook, "alpha %.0f us, %d channels: the choice is the cheaper by the textbook "
              "alpha-beta costs", alphas[k % 3], m.nchan);
        CHECK(label_ok, "alpha %.0f us, %d channels: the label names the choice", alphas[k % 3],
              m.nchan);
        CHECK(rd_rows > 0 && ring_rows > 0, "alpha %.0f us, %d channels: recursive doubling (%d "
              "sizes) then the ring (%d sizes)", alphas[k % 3], m.nchan, rd_rows, ring_rows);
    }
    {   /* forced by coll_gpu_net_algorithm */
        gpu_hier_model_t m = dgx16(8);
        gpu_hier_choice_t ch;
        m.algo = GPU_INTER_RING;
        gpu_hier_choose(&m, GPU_HIER_ALLREDUCE, 8, 4, &ch);
        CHECK(GPU_INTER_RING == ch.algo, "coll_gpu_net_algorithm 1: the ring at 8 B");
    }
    {   /* the runtime chooses per slice: 8 MiB shards in 4 MiB slices at 40 us take
         * recursive doubling, which a whole 8 MiB shard would not */
        gpu_hier_model_t m = dgx16(8);
        gpu_inter_group_t g;
        gpu_hier_choice_t ch;
        m.alpha_s = 40e-6;
        memset(&g, 0, sizeof(g));
        gpu_hier_group_model(&m, &g);
        gpu_hier_choose(&m, GPU_HIER_ALLREDUCE, 64 << 20, 4, &ch);
        CHECK(GPU_INTER_RING == gpu_inter_allreduce_choice(&g, 8 << 20) && 2 == ch.nslices &&
                  GPU_INTER_RD == ch.algo && GPU_INTER_RD == ch.algo_last,
              "40 us, 64 MiB: two 4 MiB slices by recursive doubling per rail");
    }
    {   /* a last slice short enough to take the other algorithm */
        gpu_hier_model_t m = dgx16(8);
        gpu_hier_choice_t ch;
        char label[160];
        gpu_hier_choose(&m, GPU_HIER_ALLREDUCE, (size_t) 8 * ((4 << 20) + 4096), 4, &ch);
        gpu_hier_label(&ch, label, sizeof(label));
        CHECK(2 == ch.nslices && GPU_INTER_RING == ch.algo && GPU_INTER_RD == ch.algo_last &&
                  NULL != strstr(label, "ring (last slice recursive-doubling)"),
              "4 MiB + 4 KiB per rail: a ring slice, then recursive doubling (%s)", label);
    }
}

/* coll_gpu_net_device_fold: the fold of 2 nodes' one swap goes to the GPU,
 * nothing else does (3+ nodes, the ring forced, the other collectives) */
static void test_device_fold(void)
{
    static const gpu_hier_coll_t colls[] = { GPU_HIER_ALLREDUCE, GPU_HIER_REDUCE_SCATTER_BLOCK,
                                             GPU_HIER_REDUCE_SCATTER, GPU_HIER_BCAST,
                                             GPU_HIER_REDUCE, GPU_HIER_ALLGATHER };
    for (int nodes = 2; nodes <= 4; ++nodes) {
        for (int ring = 0; ring < 2; ++ring) {
            for (unsigned k = 0; k < sizeof(colls) / sizeof(colls[0]); ++k) {
                gpu_hier_model_t m = dgx16(8);
                gpu_hier_choice_t ch;
                char label[160];
                const int want = 2 == nodes && !ring && k < 3;
                m.nnodes = nodes;
                m.nranks = nodes * 8;
                m.nchan = GPU_HIER_CHANNELS_DEFAULT;
                m.algo = ring ? GPU_INTER_RING : GPU_INTER_AUTO;
                m.device_fold = 1;
                gpu_hier_choose(&m, colls[k], 64 << 20, 4, &ch);
                gpu_hier_label(&ch, label, sizeof(label));
                CHECK(want == ch.device_fold && want == (NULL != strstr(label, "(device fold)")),
                      "device fold, %d nodes%s, %s: %s (%s)", nodes, ring ? ", ring forced" : "",
                      gpu_hier_coll_name(colls[k]), want ? "taken" : "not taken", label);
                m.device_fold = 0;
                gpu_hier_choose(&m, colls[k], 64 << 20, 4, &ch);
                CHECK(!ch.device_fold, "no device fold when off: %s", gpu_hier_coll_name(colls[k]));
            }
        }
    }
}

static void test_layouts(void)
{
    gpu_hier_model_t even = dgx16(8), uneven = dgx16(7);
    gpu_hier_choice_t ch;
    char label[160];
    gpu_hier_choose(&even, GPU_HIER_ALLREDUCE, 1 << 20, 4, &ch);
    gpu_hier_label(&ch, label, sizeof(label));
    CHECK(ch.rails && 0 == strncmp(label, "hier rails: reduce-scatter/", 27),
          "even nodes: rails (%s)", label);
    gpu_hier_choose(&uneven, GPU_HIER_ALLREDUCE, 1 << 20, 4, &ch);
    gpu_hier_label(&ch, label, sizeof(label));
    CHECK(!ch.rails && (1 << 20) == ch.net_bytes &&
              0 == strncmp(label, "hier leaders: reduce/", 21),
          "uneven nodes: leaders with the whole buffer (%s)", label);
    gpu_hier_choose(&even, GPU_HIER_BCAST, 1 << 20, 1, &ch);
    gpu_hier_label(&ch, label, sizeof(label));
    CHECK(0 == strcmp(label, "hier leaders: binomial/bcast"), "bcast: %s", label);
    gpu_hier_choose(&even, GPU_HIER_REDUCE_SCATTER_BLOCK, 4096, 4, &ch);
    CHECK(ch.copy_after && 4096 * 128 == ch.before_bytes, "reduce_scatter_block: the allreduce of "
          "every block, then a copy");
    /* gather(v) and scatter(v): a node's region between its leader and the
     * root, in pieces that fit the root's slot beside every other node's */
    gpu_hier_choose(&even, GPU_HIER_GATHERV, 4096, 4, &ch);
    gpu_hier_label(&ch, label, sizeof(label));
    CHECK(0 == strcmp(label, "hier leaders: gather/to-root") && 8 * 4096 == ch.net_bytes &&
              ch.slice * 15 <= even.slot_bytes && ch.slice == even.slot_bytes / 15,
          "gatherv: %s, %zu bytes a node in slices of %zu", label, ch.net_bytes, ch.slice);
    gpu_hier_choose(&even, GPU_HIER_SCATTER, 1 << 20, 4, &ch);
    gpu_hier_label(&ch, label, sizeof(label));
    CHECK(0 == strcmp(label, "hier leaders: from-root/scatter") &&
              ch.nslices == (8u << 20) / (even.slot_bytes / 15) + 1,
          "scatter: %s, %zu slices", label, ch.nslices);
    gpu_hier_choose(&even, GPU_HIER_ALLGATHERV, 4096, 4, &ch);
    gpu_hier_label(&ch, label, sizeof(label));
    CHECK(0 == strcmp(label, "hier leaders: allgather/ring/bcast + copy") && ch.copy_after &&
              16 * ch.slice <= even.slot_bytes,
          "allgatherv: %s, node pieces of %zu", label, ch.slice);
    even.nnodes = 2;
    even.nranks = 16;
    gpu_hier_choose(&even, GPU_HIER_GATHER, 4, 4, &ch);
    gpu_hier_label(&ch, label, sizeof(label));
    CHECK(ch.slice == even.slot_bytes && 1 == ch.nslices, "gather on 2 nodes: whole slots (%zu)",
          ch.slice);
    even = dgx16(1);
    even.lsize = 1;
    gpu_hier_choose(&even, GPU_HIER_GATHER, 4, 4, &ch);
    gpu_hier_label(&ch, label, sizeof(label));
    CHECK(0 == strcmp(label, "hier leaders: to-root"), "gather, one rank a node: %s", label);
    even = dgx16(8);
    even.nranks = (int) even.slot_bytes + 1;   /* more ranks than a slot has bytes */
    CHECK(GPU_ERR_UNSUPPORTED == gpu_hier_choose(&even, GPU_HIER_ALLGATHER, 4, 1, &ch),
          "allgather: more ranks than slot bytes stages");
    even = dgx16(8);
    even.nnodes = 1;
    CHECK(GPU_ERR_INVALID == gpu_hier_choose(&even, GPU_HIER_ALLREDUCE, 8, 4, &ch),
          "one node: no hierarchical plan");
}

/* the staging copies and the channels move the price the right way */
static void test_price(void)
{
    gpu_hier_model_t m = dgx16(8);
    gpu_hier_choice_t ch;
    gpu_hier_price_t staged, direct, chan;
    gpu_hier_choose(&m, GPU_HIER_ALLREDUCE, 256 << 20, 4, &ch);
    gpu_hier_price(&m, 0, &plan, M, &ch, &staged);
    gpu_hier_price(&m, 1, &plan, M, &ch, &direct);
    CHECK(direct.us < staged.us, "device memory to UCX beats staging (%.0f < %.0f us)", direct.us,
          staged.us);
    m.nchan = 4;
    gpu_hier_choose(&m, GPU_HIER_ALLREDUCE, 256 << 20, 4, &ch);
    gpu_hier_price(&m, 0, &plan, M, &ch, &chan);
    CHECK(chan.us < staged.us, "4 channels overlap message latencies (%.0f < %.0f us)", chan.us,
          staged.us);
}

/* the component's hierarchical collectives (".hier = MCA_COLL_GPU_HIER_" rows
 * of its table) are gpu_hier_choose's, no more, no fewer */
static void test_component_table(void)
{
    char path[1024], line[512], name[64] = "";
    int found[GPU_HIER_NCOLLS] = { 0 }, extra = 0, rows = 0;
    FILE *f;
    snprintf(path, sizeof(path), "%s/ompi_coll_gpu/coll_gpu_colls.c", srcdir);
    f = fopen(path, "r");
    CHECK(NULL != f, "read %s", path);
    while (NULL != f && NULL != fgets(line, sizeof(line), f)) {
        const char *n = strstr(line, ".name = \""), *h = strstr(line, ".hier = MCA_COLL_GPU_HIER_");
        if (NULL != n) {
            sscanf(n + 9, "%63[^\"]", name);
        }
        if (NULL != h) {
            int known = 0;
            ++rows;
            for (int c = 0; c < GPU_HIER_NCOLLS; ++c) {
                if (0 == strcmp(name, gpu_hier_coll_name((gpu_hier_coll_t) c))) {
                    found[c] = known = 1;
                }
            }
            extra += !known;
            if (!known) {
                printf("the component runs %s hierarchically; the plan does not know it\n", name);
            }
        }
    }
    if (NULL != f) {
        fclose(f);
    }
    for (int c = 0; c < GPU_HIER_NCOLLS; ++c) {
        CHECK(found[c], "the component runs %s hierarchically",
              gpu_hier_coll_name((gpu_hier_coll_t) c));
    }
    CHECK(rows > 0 && 0 == extra,
          "no hierarchical collective the plan misses (%d rows, %d unknown)", rows, extra);
}

int main(int argc, char **argv)
{
    char path[1024], err[512];
    fixdir = argc > 1 ? argv[1] : "test/topo/fixtures";
    srcdir = argc > 2 ? argv[2] : ".";
    snprintf(path, sizeof(path), "%s/dgx_h100.xml", fixdir);
    if (GPU_OK != gpu_topo_load_file(path, &node, err, sizeof(err)) ||
        GPU_OK != gpu_topo_plan_build(&node, 16, 8, M, &plan)) {
        printf("FAIL %s: %s\n", path, err);
        return 1;
    }
    test_rows();
    test_allreduce_switch();
    test_device_fold();
    test_layouts();
    test_price();
    test_component_table();
    printf("test_topo_hier: %d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
