/*
 * op/gpu component: MCA parameters, open/close, the per-process driver
 * probe (init_query), and one module per predefined reduction op
 * (op_query, enable).  The design is described in op_gpu.h.
 */
#include "ompi_config.h"

#include <string.h>

#include "op_gpu.h"

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"
#include "ompi/constants.h"
#include "ompi/op/op.h"

#include "util/gpu_cuda_drv.h"
#include "util/gpu_status.h"

static int op_gpu_register(void);
static int op_gpu_open(void);
static int op_gpu_close(void);
static int op_gpu_init_query(bool enable_progress_threads, bool enable_mpi_threads);
static struct ompi_op_base_module_1_0_0_t *op_gpu_op_query(struct ompi_op_t *op, int *priority);

mca_op_gpu_component_t mca_op_gpu_component = {
    .super = {
        .opc_version = {
            OMPI_OP_BASE_VERSION_1_0_0,
            .mca_component_name = "gpu",
            MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                  OMPI_RELEASE_VERSION),
            .mca_open_component = op_gpu_open,
            .mca_close_component = op_gpu_close,
            .mca_register_component_params = op_gpu_register,
        },
        .opc_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .opc_init_query = op_gpu_init_query,
        .opc_op_query = op_gpu_op_query,
    },
    /* above op/avx (50): device buffers must reach this module first, and
     * host buffers then get avx's functions, which it keeps */
    .priority = 90,
    .verbose = 0,
    .output = -1,
    .timeout = 60.0,
    .available = 0,
};

static void op_gpu_reg(const char *name, const char *help, mca_base_var_type_t type, int level,
                       void *storage)
{
    (void) mca_base_component_var_register(&mca_op_gpu_component.super.opc_version, name, help,
                                           type, NULL, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static int op_gpu_register(void)
{
    mca_op_gpu_component_t *c = &mca_op_gpu_component;

    op_gpu_reg("priority", "Priority of op/gpu (at most 100); it must be above every other op "
               "component (op/avx: 50) so that device buffers reach it, and it hands host "
               "buffers to the function it replaced (negative disables it)",
               MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_6, &c->priority);
    op_gpu_reg("verbose", "Verbosity: 1 = why the component declines, and that device "
               "reductions fold on the host when this process cannot run the kernels; "
               "10 = the types covered per MPI_Op; 20 = every device reduction",
               MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_9, &c->verbose);
    op_gpu_reg("timeout", "Seconds a reduction on device memory (MPI_Reduce_local and Open "
               "MPI's own reductions) waits for its kernel, which queues behind the "
               "application's work on the legacy default stream, before the call fails with "
               "an error naming this parameter; 0 or less waits without limit",
               MCA_BASE_VAR_TYPE_DOUBLE, OPAL_INFO_LVL_5, &c->timeout);
    return OMPI_SUCCESS;
}

static void op_gpu_log_sink(int level, const char *msg)
{
    if (0 == level) {
        opal_output(0, "op/gpu: %s", msg);
    } else {
        opal_output_verbose(level, mca_op_gpu_component.output, "op/gpu: %s", msg);
    }
}

static int op_gpu_open(void)
{
    mca_op_gpu_component_t *c = &mca_op_gpu_component;

    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    /* this .so's own copy of the log sink (util/gpu_status.c is linked in
     * hidden): the kernels' and the driver layer's messages come out as
     * op/gpu's, at op_gpu_verbose */
    gpu_log_set_sink(op_gpu_log_sink, c->verbose);
    return OMPI_SUCCESS;
}

static int op_gpu_close(void)
{
    gpu_log_set_sink(NULL, 0);
    if (mca_op_gpu_component.output >= 0) {
        opal_output_close(mca_op_gpu_component.output);
        mca_op_gpu_component.output = -1;
    }
    return OMPI_SUCCESS;
}

/* Once per process, at MPI_Init: no driver or no device (CI machines)
 * declines here, before any module exists.  cuInit creates no context: a
 * host-only program pays nothing on the GPU. */
static int op_gpu_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    mca_op_gpu_component_t *c = &mca_op_gpu_component;
    const char *why = NULL;

    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    if (c->priority < 0) {
        opal_output_verbose(1, c->output, "op/gpu: declining: op_gpu_priority is negative");
        return OMPI_ERR_NOT_AVAILABLE;
    }
    if (GPU_OK != gpu_drv_init(&why)) {
        opal_output_verbose(1, c->output, "op/gpu: declining: %s", why);
        return OMPI_ERR_NOT_AVAILABLE;
    }
    c->available = 1;
    return OMPI_SUCCESS;
}

static void op_gpu_module_construct(mca_op_gpu_module_t *m)
{
    m->gop = GPU_OP_COUNT;
    m->name = "?";
    memset(m->prev_fns, 0, sizeof(m->prev_fns));
    memset(m->prev_modules, 0, sizeof(m->prev_modules));
    memset(m->prev_3buff_fns, 0, sizeof(m->prev_3buff_fns));
    memset(m->prev_3buff_modules, 0, sizeof(m->prev_3buff_modules));
}

/* Runs only if a module's count reaches zero, which the extra references
 * taken in op_query prevent for installed modules (op_gpu.h, Lifetime):
 * then a module released before enable (an op_select failure). */
static void op_gpu_module_destruct(mca_op_gpu_module_t *m)
{
    for (int i = 0; i < OMPI_OP_BASE_TYPE_MAX; ++i) {
        if (NULL != m->prev_modules[i]) {
            OBJ_RELEASE(m->prev_modules[i]);
        }
        if (NULL != m->prev_3buff_modules[i]) {
            OBJ_RELEASE(m->prev_3buff_modules[i]);
        }
    }
}

OBJ_CLASS_INSTANCE(mca_op_gpu_module_t, ompi_op_base_module_t, op_gpu_module_construct,
                   op_gpu_module_destruct);

/* Called after every lower-priority module has been installed: what the
 * table holds now is what this module replaces, and what host buffers
 * keep getting. */
static int op_gpu_module_enable(ompi_op_base_module_t *module, struct ompi_op_t *op)
{
    mca_op_gpu_module_t *m = (mca_op_gpu_module_t *) module;
    int covered = 0;

    for (int i = 0; i < OMPI_OP_BASE_TYPE_MAX; ++i) {
        if (NULL != m->super.opm_fns[i]) {
            m->prev_fns[i] = op->o_func.intrinsic.fns[i];
            m->prev_modules[i] = op->o_func.intrinsic.modules[i];
            if (NULL != m->prev_modules[i]) {
                OBJ_RETAIN(m->prev_modules[i]);
            }
            ++covered;
        }
        if (NULL != m->super.opm_3buff_fns[i]) {
            m->prev_3buff_fns[i] = op->o_3buff_intrinsic.fns[i];
            m->prev_3buff_modules[i] = op->o_3buff_intrinsic.modules[i];
            if (NULL != m->prev_3buff_modules[i]) {
                OBJ_RETAIN(m->prev_3buff_modules[i]);
            }
        }
    }
    opal_output_verbose(10, mca_op_gpu_component.output,
                        "op/gpu: %s: device buffers of %d datatypes on the GPU or staged, host "
                        "buffers to the previous functions", m->name, covered);
    return OMPI_SUCCESS;
}

static int op_gpu_map_op(int f_index, gpu_op_t *gop, const char **name)
{
    static const struct {
        int f;
        gpu_op_t g;
        const char *name;
    } map[] = {
        { OMPI_OP_BASE_FORTRAN_MAX, GPU_OP_MAX, "MPI_MAX" },
        { OMPI_OP_BASE_FORTRAN_MIN, GPU_OP_MIN, "MPI_MIN" },
        { OMPI_OP_BASE_FORTRAN_SUM, GPU_OP_SUM, "MPI_SUM" },
        { OMPI_OP_BASE_FORTRAN_PROD, GPU_OP_PROD, "MPI_PROD" },
        { OMPI_OP_BASE_FORTRAN_LAND, GPU_OP_LAND, "MPI_LAND" },
        { OMPI_OP_BASE_FORTRAN_BAND, GPU_OP_BAND, "MPI_BAND" },
        { OMPI_OP_BASE_FORTRAN_LOR, GPU_OP_LOR, "MPI_LOR" },
        { OMPI_OP_BASE_FORTRAN_BOR, GPU_OP_BOR, "MPI_BOR" },
        { OMPI_OP_BASE_FORTRAN_LXOR, GPU_OP_LXOR, "MPI_LXOR" },
        { OMPI_OP_BASE_FORTRAN_BXOR, GPU_OP_BXOR, "MPI_BXOR" },
        { OMPI_OP_BASE_FORTRAN_MAXLOC, GPU_OP_MAXLOC, "MPI_MAXLOC" },
        { OMPI_OP_BASE_FORTRAN_MINLOC, GPU_OP_MINLOC, "MPI_MINLOC" },
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); ++i) {
        if (map[i].f == f_index) {
            *gop = map[i].g;
            *name = map[i].name;
            return 1;
        }
    }
    return 0;   /* MPI_OP_NULL, MPI_REPLACE, MPI_NO_OP: no reduction table */
}

/* Per predefined op, during MPI_Init.  The table on the op holds the base
 * functions here (every component is asked before any is installed):
 * this module takes exactly the slots that have one, so the framework's
 * check that the NULL pattern matches the base table holds. */
static struct ompi_op_base_module_1_0_0_t *op_gpu_op_query(struct ompi_op_t *op, int *priority)
{
    mca_op_gpu_component_t *c = &mca_op_gpu_component;
    mca_op_gpu_module_t *m;
    gpu_op_t gop;
    const char *name;
    int n3 = 0;

    if (!c->available || c->priority < 0 || 0 == (op->o_flags & OMPI_OP_FLAGS_INTRINSIC) ||
        !op_gpu_map_op(op->o_f_to_c_index, &gop, &name)) {
        return NULL;
    }
    m = OBJ_NEW(mca_op_gpu_module_t);
    if (NULL == m) {
        return NULL;
    }
    m->gop = gop;
    m->name = name;
    m->super.opm_enable = op_gpu_module_enable;
    for (int i = 0; i < OMPI_OP_BASE_TYPE_MAX && i < MCA_OP_GPU_MAX_SLOTS; ++i) {
        if (NULL != op->o_func.intrinsic.fns[i]) {
            m->super.opm_fns[i] = mca_op_gpu_fn(i);
        }
        if (NULL != op->o_3buff_intrinsic.fns[i]) {
            m->super.opm_3buff_fns[i] = mca_op_gpu_3buff_fn(i);
            ++n3;
        }
    }
    /* never destroyed (op_gpu.h, Lifetime): 4.1 drops one reference per
     * 3-buffer entry it installs, and finalize may outlive this .so */
    for (int i = 0; i <= n3; ++i) {
        OBJ_RETAIN(m);
    }
    *priority = c->priority;
    return &m->super;
}
