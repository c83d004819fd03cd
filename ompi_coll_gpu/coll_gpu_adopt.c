/*
 * "--mca coll gpu" support.
 *
 * Open MPI 4.1's comm_select fails a communicator (and so MPI_Init) unless
 * some selected component provides every blocking and nonblocking
 * collective.  A user who names only this component means "use gpu", not
 * "have no barrier", so when the framework's selection lacks the fallback
 * components we open them from the component repository ourselves, the
 * same way the framework would have, and put them at the head of the
 * framework's list (the framework is iterating that list while it opens us;
 * prepending keeps them out of the rest of that walk).  Their own
 * priorities then decide selection as usual, and coll/gpu, being highest,
 * keeps their functions as its fallback.  Open MPI 5.0 (and any build
 * without --enable-mca-dso) links its own components into libmpi: those
 * are found in the framework's static list, the others in the repository
 * of component files.
 */
#include "ompi_config.h"

#include <string.h>

#include "coll_gpu.h"

#include "opal/class/opal_list.h"
#include "opal/mca/base/base.h"
#include "opal/mca/base/mca_base_component_repository.h"
#include "opal/util/argv.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "ompi/mca/coll/base/base.h"

static int mca_coll_gpu_is_selected(const char *name)
{
    mca_base_component_list_item_t *cli;
    OPAL_LIST_FOREACH(cli, &ompi_coll_base_framework.framework_components,
                      mca_base_component_list_item_t) {
        if (0 == strcmp(cli->cli_component->mca_component_name, name)) {
            return 1;
        }
    }
    return 0;
}

/* register and open comp, then put its list item cli at the head of the
 * framework's list; cli is consumed either way */
static int mca_coll_gpu_adopt_open(const mca_base_component_t *comp,
                                   mca_base_component_list_item_t *cli, int from_repo)
{
    if ((NULL != comp->mca_register_component_params &&
         OPAL_SUCCESS != comp->mca_register_component_params()) ||
        (NULL != comp->mca_open_component && OPAL_SUCCESS != comp->mca_open_component())) {
        OBJ_RELEASE(cli);
        if (from_repo) {
            mca_base_component_repository_release(comp);
        }
        return OMPI_ERROR;
    }
    opal_list_prepend(&ompi_coll_base_framework.framework_components, &cli->super);
    opal_output_verbose(1, mca_coll_gpu_component.output,
                        "coll/gpu: the coll selection left out coll/%s; opened it as the "
                        "host fallback (%s)", comp->mca_component_name,
                        from_repo ? "component file" : "built into libmpi");
    return OMPI_SUCCESS;
}

static const mca_base_component_t *mca_coll_gpu_find_static(const char *name)
{
    const mca_base_component_t **s = ompi_coll_base_framework.framework_static_components;

    for (; NULL != s && NULL != *s; ++s) {
        if (0 == strcmp((*s)->mca_component_name, name)) {
            return *s;
        }
    }
    return NULL;
}

static int mca_coll_gpu_adopt_one(opal_list_t **repo, const char *name)
{
    mca_base_component_repository_item_t *ri, *found = NULL;
    const mca_base_component_t *comp = mca_coll_gpu_find_static(name);
    mca_base_component_list_item_t *cli;
    int ret;

    if (NULL != comp) {
        cli = OBJ_NEW(mca_base_component_list_item_t);
        if (NULL == cli) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        cli->cli_component = comp;
        return mca_coll_gpu_adopt_open(comp, cli, 0);
    }
    if (NULL == *repo &&
        OPAL_SUCCESS != mca_base_component_repository_get_components(&ompi_coll_base_framework,
                                                                      repo)) {
        *repo = NULL;
    }
    if (NULL != *repo) {
        OPAL_LIST_FOREACH(ri, *repo, mca_base_component_repository_item_t) {
            if (0 == strcmp(ri->ri_name, name)) {
                found = ri;
                break;
            }
        }
    }
    if (NULL == found) {
        mca_coll_gpu_show_help("fallback-not-found", name);
        return OMPI_ERR_NOT_FOUND;
    }
    /* repository_open appends its own list item for the component */
    ret = mca_base_component_repository_open(&ompi_coll_base_framework, found);
    if (OPAL_SUCCESS != ret || NULL == found->ri_component_struct) {
        mca_coll_gpu_show_help("fallback-open-failed", name, ret);
        return OMPI_ERROR;
    }
    comp = found->ri_component_struct;
    cli = (mca_base_component_list_item_t *)
        opal_list_get_last(&ompi_coll_base_framework.framework_components);
    if (cli->cli_component != comp) {
        return OMPI_ERROR;
    }
    /* move it ahead of the walk that is opening us */
    opal_list_remove_item(&ompi_coll_base_framework.framework_components, &cli->super);
    return mca_coll_gpu_adopt_open(comp, cli, 1);
}

int mca_coll_gpu_adopt_fallbacks(const char *names)
{
    opal_list_t *repo = NULL;
    char **list = opal_argv_split(names, ',');
    int i, ret = OMPI_SUCCESS;

    if (NULL == list) {
        return OMPI_SUCCESS;
    }
    for (i = 0; NULL != list[i]; ++i) {
        if (mca_coll_gpu_is_selected(list[i])) {
            continue;
        }
        if (OMPI_SUCCESS != mca_coll_gpu_adopt_one(&repo, list[i])) {
            ret = OMPI_ERROR;
        }
    }
    opal_argv_free(list);
    return ret;
}
