/*
 * A minimal NVTX injection library, standing in for nsys: loaded through
 * NVTX_INJECTION64_PATH, it takes over nvtxRangePushA/nvtxRangePop and
 * appends "push <label>" / "pop" lines to $NVTX_RECORD_FILE.<pid>, so the
 * GPU tests can check that every device collective shows up as a range on
 * a timeline, with its name, size and algorithm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

static FILE *rec;

static int rec_push(const char *msg)
{
    if (rec) fprintf(rec, "push %s\n", msg);
    return 0;
}

static int rec_pop(void)
{
    if (rec) fprintf(rec, "pop\n");
    return 0;
}

static void rec_close(void)
{
    if (rec) fclose(rec);
}

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
    const NvtxExportTableCallbacks *cb =
        (const NvtxExportTableCallbacks *) get_table(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable core = NULL;
    unsigned int size = 0;
    const char *base = getenv("NVTX_RECORD_FILE");
    char path[4096];

    if (NULL == cb || NULL == base || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &size) ||
        size <= NVTX_CBID_CORE_RangePop) {
        return 0;
    }
    snprintf(path, sizeof(path), "%s.%d", base, (int) getpid());
    rec = fopen(path, "w");
    if (NULL == rec) {
        return 0;
    }
    atexit(rec_close);
    *core[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer) rec_push;
    *core[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer) rec_pop;
    return 1;
}
