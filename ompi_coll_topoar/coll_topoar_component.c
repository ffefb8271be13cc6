/*
 * topoar component: registration with Open MPI -- the MCA parameters
 * (MPI_T performance variables: coll_topoar_log.c), open and close, and the
 * per-communicator query that offers a module (coll_topoar_module.c) whose
 * allreduce is the entry point (coll_topoar_allreduce.c).
 */
#include "coll_topoar.h"
#include "config/params.h"

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/output.h"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ompi/communicator/communicator.h"

const char *mca_coll_topoar_component_version_string = "topoar MPI_Allreduce component 0.1.0, built for " MCA_COLL_TOPOAR_API_NAME;

static int topoar_register(void);
static int topoar_open(void);
static int topoar_close(void);

mca_coll_topoar_component_t mca_coll_topoar_component = {
    .super = {
        .collm_version = {
            MCA_COLL_TOPOAR_BASE_VERSION,
            .mca_component_name = "topoar",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = topoar_open,
            .mca_close_component = topoar_close,
            .mca_register_component_params = topoar_register,
        },
        .collm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = mca_coll_topoar_init_query,
        .collm_comm_query = mca_coll_topoar_comm_query,
    },
    /* The MCA variables' defaults come from the parameter table at
     * registration (register_params). */
    .output = -1,
    .last_algorithm = TOPOAR_LAST_NONE,
    .last_path = TOPOAR_ROUTE_NONE,
};

/* The algorithm MCA enum, built from the engine's table at register time:
 * every name, then the deprecated aliases (same numbers; Open MPI prints
 * the first name of a number). */
static mca_base_var_enum_value_t algorithm_values[2 * TOPOAR_ALG_MAX + 1];

static void build_algorithm_values(void)
{
    int n = 0, count = topoar_algorithm_count();
    topoar_algorithm_info_t a;
    for (int i = 0; i < count; ++i) {
        if (TOPOAR_OK == topoar_algorithm_info(i, &a)) {
            algorithm_values[n].value = a.id;
            algorithm_values[n++].string = a.name;
        }
    }
    for (int i = 0; i < count; ++i) {
        if (TOPOAR_OK == topoar_algorithm_info(i, &a) && NULL != a.alias) {
            algorithm_values[n].value = a.id;
            algorithm_values[n++].string = a.alias;
        }
    }
    algorithm_values[n].value = 0;
    algorithm_values[n].string = NULL;
}

/* ---- MCA parameters ------------------------------------------------------ */

/* Where the glue keeps its own variables (the table's glue-only rows,
 * common/config/params.hpp: names, types, defaults and help are there). */
static const struct {
    const char *name;
    size_t offset;
} glue_fields[] = {
    {"priority", offsetof(mca_coll_topoar_component_t, priority)},
    {"verbose", offsetof(mca_coll_topoar_component_t, verbose)},
    {"cuda", offsetof(mca_coll_topoar_component_t, cuda)},
    {"cuda_library", offsetof(mca_coll_topoar_component_t, cuda_library)},
    {"nccl", offsetof(mca_coll_topoar_component_t, nccl)},
    {"nccl_max_comms", offsetof(mca_coll_topoar_component_t, nccl_max_comms)},
    {"check_mem_type", offsetof(mca_coll_topoar_component_t, check_mem_type)},
    {"mem_type_cache", offsetof(mca_coll_topoar_component_t, mem_type_cache)},
    {"cuda_aware_mpi", offsetof(mca_coll_topoar_component_t, cuda_aware_mpi)},
    {"barrier", offsetof(mca_coll_topoar_component_t, barrier)},
    {"barrier_trial", offsetof(mca_coll_topoar_component_t, barrier_trial)},
};
#define NUM_GLUE_FIELDS (sizeof(glue_fields) / sizeof(glue_fields[0]))

void *mca_coll_topoar_glue_storage(const char *name)
{
    for (size_t k = 0; k < NUM_GLUE_FIELDS; ++k) {
        if (0 == strcmp(glue_fields[k].name, name)) {
            return (char *) &mca_coll_topoar_component + glue_fields[k].offset;
        }
    }
    return NULL;
}

/* Every coll_topoar_* variable: one per row of the parameter table, with
 * its type, default, level, scope and help (common/config/params.hpp).
 * The engine's rows (first) are stored by index in cm->params and handed
 * to the engine (mca_coll_topoar_config); the glue's own in its fields. */
static int register_params(const mca_base_component_t *c)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    static const mca_base_var_type_t types[] = {
        [TOPOAR_PARAM_INT] = MCA_BASE_VAR_TYPE_INT,
        [TOPOAR_PARAM_SIZE] = MCA_BASE_VAR_TYPE_SIZE_T,
        [TOPOAR_PARAM_BOOL] = MCA_BASE_VAR_TYPE_BOOL,
        [TOPOAR_PARAM_STRING] = MCA_BASE_VAR_TYPE_STRING,
        [TOPOAR_PARAM_ALGORITHM] = MCA_BASE_VAR_TYPE_INT,
        [TOPOAR_PARAM_KEYWORD] = MCA_BASE_VAR_TYPE_INT,
    };
    static const mca_base_var_scope_t scopes[] = {
        [TOPOAR_PARAM_SCOPE_ALL] = MCA_BASE_VAR_SCOPE_ALL,
        [TOPOAR_PARAM_SCOPE_LOCAL] = MCA_BASE_VAR_SCOPE_LOCAL,
        [TOPOAR_PARAM_SCOPE_READONLY] = MCA_BASE_VAR_SCOPE_READONLY,
    };
    int n = topoar_param_count(), glue_rows = 0;

    build_algorithm_values();
    cm->num_params = 0;
    for (int i = 0; i < n; ++i) {
        topoar_param_info_t p;
        topoar_param_glue_t g;
        mca_base_var_enum_t *e = NULL;
        const char *d;
        void *storage;
        int rc;
        if (TOPOAR_OK != topoar_param_info(i, &p) || TOPOAR_OK != topoar_param_glue(i, &g) || p.type < 0 ||
            p.type > TOPOAR_PARAM_KEYWORD || g.scope < 0 || g.scope > TOPOAR_PARAM_SCOPE_READONLY) {
            return OPAL_ERROR;
        }
        if (g.glue_only) {
            storage = mca_coll_topoar_glue_storage(p.name);
            ++glue_rows;
        } else if (i == cm->num_params && i < TOPOAR_PARAM_MAX) {
            storage = &cm->params[i];
            cm->num_params = i + 1;
        } else {
            storage = NULL; /* an engine row after a glue row, or too many */
        }
        if (NULL == storage) {
            opal_output(0, "coll:topoar: parameter table row %d (%s) has no storage in the glue", i, p.name);
            return OPAL_ERROR;
        }
        d = p.default_value;
        switch (p.type) {
        case TOPOAR_PARAM_INT: *(int *) storage = atoi(d); break;
        case TOPOAR_PARAM_SIZE: *(size_t *) storage = (size_t) strtoull(d, NULL, 10); break;
        case TOPOAR_PARAM_BOOL: *(bool *) storage = 0 != strcmp(d, "0"); break;
        case TOPOAR_PARAM_STRING: *(char **) storage = '\0' == d[0] ? NULL : (char *) d; break;
        case TOPOAR_PARAM_ALGORITHM:
            *(int *) storage = topoar_algorithm_from_name(d);
            rc = mca_base_var_enum_create("coll_topoar_allreduce_algorithms", algorithm_values, &e);
            if (OPAL_SUCCESS != rc) {
                return rc;
            }
            break;
        case TOPOAR_PARAM_KEYWORD: {
            /* Valued by index; Open MPI copies the values. */
            mca_base_var_enum_value_t values[16];
            char name[128];
            int k = 0;
            *(int *) storage = -1;
            for (; k < 15 && NULL != g.keywords && NULL != g.keywords[k]; ++k) {
                values[k].value = k;
                values[k].string = g.keywords[k];
                if (0 == strcmp(g.keywords[k], d)) {
                    *(int *) storage = k;
                }
            }
            values[k].value = 0;
            values[k].string = NULL;
            if (*(int *) storage < 0) {
                return OPAL_ERROR; /* the default is none of the keywords */
            }
            snprintf(name, sizeof(name), "coll_topoar_%s_values", p.name);
            rc = mca_base_var_enum_create(name, values, &e);
            if (OPAL_SUCCESS != rc) {
                return rc;
            }
            break;
        }
        }
        (void) mca_base_component_var_register(c, p.name, p.help, types[p.type], e, 0,
                                               p.settable ? MCA_BASE_VAR_FLAG_SETTABLE : 0,
                                               (mca_base_var_info_lvl_t) (p.level - 1), scopes[g.scope], storage);
        if (NULL != e) {
            OBJ_RELEASE(e);
        }
    }
    /* Every field above has its row (a row renamed in the table alone
     * would leave a field at 0). */
    if ((size_t) glue_rows != NUM_GLUE_FIELDS) {
        opal_output(0, "coll:topoar: %d glue parameters in the table, %d fields in the glue", glue_rows,
                    (int) NUM_GLUE_FIELDS);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

static int topoar_register(void)
{
    int rc = register_params(&mca_coll_topoar_component.super.collm_version);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    return mca_coll_topoar_register_pvars();
}

static int topoar_open(void)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    cm->output = opal_output_open(NULL);
    opal_output_set_verbosity(cm->output, cm->verbose);
    opal_output_verbose(10, cm->output, "coll:topoar: %s", mca_coll_topoar_component_version_string);
    mca_coll_topoar_gpu_open();
    return OMPI_SUCCESS;
}

static int topoar_close(void)
{
    mca_coll_topoar_nonblocking_close();
    mca_coll_topoar_gpu_close();
    mca_coll_topoar_one_host_release();
    if (mca_coll_topoar_component.output >= 0) {
        opal_output_close(mca_coll_topoar_component.output);
        mca_coll_topoar_component.output = -1;
    }
    return OMPI_SUCCESS;
}

/* ---- modules ------------------------------------------------------------ */

int mca_coll_topoar_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_topoar_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    mca_coll_topoar_module_t *m;

    *priority = mca_coll_topoar_component.priority;
    if (*priority < 0) {
        return NULL;
    }
    if (OMPI_COMM_IS_INTER(comm)) {
        opal_output_verbose(20, mca_coll_topoar_component.output,
                            "coll:topoar: declining intercommunicator %s", comm->c_name);
        return NULL;
    }
    if (ompi_comm_size(comm) < 2) {
        /* One rank: nothing to do for host buffers (coll self); with the
         * GPU path on, topoar takes them anyway, ahead of self (priority
         * 75), whose memcpy would touch device buffers. */
        if (NULL == mca_coll_topoar_component.gpu) {
            return NULL;
        }
        *priority = 90;
    }
    m = OBJ_NEW(mca_coll_topoar_module_t);
    if (NULL == m) {
        return NULL;
    }
    m->super.coll_module_enable = mca_coll_topoar_module_enable;
#if MCA_COLL_TOPOAR_INSTALLS_ITSELF
    m->super.coll_module_disable = mca_coll_topoar_module_disable;
#endif
    m->super.coll_allreduce = mca_coll_topoar_allreduce;
    m->super.coll_iallreduce = mca_coll_topoar_iallreduce;
    m->super.coll_allreduce_init = mca_coll_topoar_allreduce_init;
    /* MPI_Barrier across hosts: enable keeps it only then. */
    if (TOPOAR_BARRIER_NEVER != mca_coll_topoar_component.barrier && ompi_comm_size(comm) >= 2) {
        m->super.coll_barrier = mca_coll_topoar_barrier;
    }
    return &m->super;
}
