/*
 * topoar component: registration with Open MPI -- the MCA parameters
 * (MPI_T performance variables: coll_topoar_log.c), open and close, and the
 * per-communicator query that offers a module (coll_topoar_module.c) whose
 * allreduce is the entry point (coll_topoar_allreduce.c).
 */
#include "coll_topoar.h"

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/output.h"
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
    .priority = 50,
    .verbose = 0,
    .output = -1,
    .last_algorithm = TOPOAR_LAST_NONE,
    .last_path = TOPOAR_ROUTE_NONE,
    .cuda = true,
    .nccl = true,
    .check_mem_type = false,
    .nccl_max_comms = 16,
    .mem_type_cache = true,
    .cuda_aware_mpi = TOPOAR_CUDA_AWARE_AUTO,
};

static const mca_base_var_enum_value_t cuda_aware_values[] = {
    {TOPOAR_CUDA_AWARE_NEVER, "never"},
    {TOPOAR_CUDA_AWARE_AUTO, "auto"},
    {TOPOAR_CUDA_AWARE_ALWAYS, "always"},
    {0, NULL},
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

/* The engine's parameters: one MCA variable per entry of its table, with
 * the table's type, default, level and help (common/config/params.hpp). */
static int register_engine_params(const mca_base_component_t *c)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    static const mca_base_var_type_t types[] = {
        [TOPOAR_PARAM_INT] = MCA_BASE_VAR_TYPE_INT,
        [TOPOAR_PARAM_SIZE] = MCA_BASE_VAR_TYPE_SIZE_T,
        [TOPOAR_PARAM_BOOL] = MCA_BASE_VAR_TYPE_BOOL,
        [TOPOAR_PARAM_STRING] = MCA_BASE_VAR_TYPE_STRING,
        [TOPOAR_PARAM_ALGORITHM] = MCA_BASE_VAR_TYPE_INT,
    };
    int n = topoar_param_count();

    build_algorithm_values();
    cm->num_params = 0;
    for (int i = 0; i < n && i < TOPOAR_PARAM_MAX; ++i) {
        topoar_param_info_t p;
        mca_base_var_enum_t *e = NULL;
        const char *d;
        void *storage = &cm->params[i];
        int rc;
        if (TOPOAR_OK != topoar_param_info(i, &p) || p.type < 0 || p.type > TOPOAR_PARAM_ALGORITHM) {
            return OPAL_ERROR;
        }
        d = p.default_value;
        switch (p.type) {
        case TOPOAR_PARAM_INT: cm->params[i].i = atoi(d); break;
        case TOPOAR_PARAM_SIZE: cm->params[i].z = (size_t) strtoull(d, NULL, 10); break;
        case TOPOAR_PARAM_BOOL: cm->params[i].b = 0 != strcmp(d, "0"); break;
        case TOPOAR_PARAM_STRING: cm->params[i].s = '\0' == d[0] ? NULL : (char *) d; break;
        case TOPOAR_PARAM_ALGORITHM:
            cm->params[i].i = topoar_algorithm_from_name(d);
            rc = mca_base_var_enum_create("coll_topoar_allreduce_algorithms", algorithm_values, &e);
            if (OPAL_SUCCESS != rc) {
                return rc;
            }
            break;
        }
        (void) mca_base_component_var_register(c, p.name, p.help, types[p.type], e, 0,
                                               p.settable ? MCA_BASE_VAR_FLAG_SETTABLE : 0,
                                               (mca_base_var_info_lvl_t) (p.level - 1), MCA_BASE_VAR_SCOPE_ALL,
                                               storage);
        if (NULL != e) {
            OBJ_RELEASE(e);
        }
        cm->num_params = i + 1;
    }
    return OPAL_SUCCESS;
}

static int topoar_register(void)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    const mca_base_component_t *c = &cm->super.collm_version;
    int rc;

    (void) mca_base_component_var_register(
        c, "priority",
        "Priority of the topoar coll component (it only provides MPI_Allreduce); negative: not used. "
        "Settable through MPI_T at run time: applies to communicators created afterwards "
        "(topoar_tune --compare --previous uses this to measure the module topoar hands calls to).",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL,
        &cm->priority);
    (void) mca_base_component_var_register(
        c, "verbose",
        "Verbosity: 1 set-up problems and fallbacks, 10 discovered topology (rank 0), "
        "20 chosen algorithm per call size class, 50 every call",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL, &cm->verbose);

    rc = register_engine_params(c);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }

    (void) mca_base_component_var_register(
        c, "cuda",
        "GPU path: load the topoar CUDA library at start-up and take MPI_Allreduce calls on device "
        "buffers (NCCL, or staging through pinned host memory). Off, or without a library, driver or "
        "device: device pointers are not detected (as in a host-only build).",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, &cm->cuda);
    cm->cuda_library = TOPOAR_CUDA_LIBRARY;
    (void) mca_base_component_var_register(
        c, "cuda_library", "The topoar CUDA library the GPU path loads (built with --with-cuda)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY, &cm->cuda_library);
    (void) mca_base_component_var_register(
        c, "nccl",
        "Device buffers: run topoar's plans over NCCL (one NCCL communicator per MPI communicator, made "
        "at the first device call); 0 stages device data through pinned host memory and the MPI "
        "transport. Must be the same on all ranks.",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, &cm->nccl);
    (void) mca_base_component_var_register(
        c, "nccl_max_comms",
        "At most this many NCCL communicators per process (each holds device memory; nccl_hier's per-host "
        "ones count too); communicators beyond stage device data through the host, and nccl_hier without "
        "room for its per-host one runs the built-in plan",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, &cm->nccl_max_comms);
    (void) mca_base_component_var_register(
        c, "check_mem_type",
        "Verify on every call that all ranks pass buffers in the same memory type (host or device), "
        "at the cost of one small allreduce per call; disagreeing calls are staged. Off: assumed, as "
        "with any CUDA-aware MPI.",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, &cm->check_mem_type);
    (void) mca_base_component_var_register(
        c, "mem_type_cache",
        "Remember the last few pointers found to be host memory (exact addresses), so that a program "
        "passing the same host buffers again pays no pointer query. Sound under unified addressing "
        "except when a host buffer is unmapped and a device allocation then starts at exactly its "
        "address (docs/gpu.md); 0 asks the driver on every call.",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY, &cm->mem_type_cache);
    {
        mca_base_var_enum_t *e = NULL;
        rc = mca_base_var_enum_create("coll_topoar_cuda_aware_mpi_values", cuda_aware_values, &e);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
        (void) mca_base_component_var_register(
            c, "cuda_aware_mpi",
            "Device buffers of the calls topoar hands to the previous module: auto gives them unstaged when "
            "the MPI library reports CUDA support (MPIX_Query_cuda_support, asked once when the component "
            "opens), never always stages them through pinned host memory, always gives them unstaged "
            "without asking. Must be the same on all ranks.",
            MCA_BASE_VAR_TYPE_INT, e, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, &cm->cuda_aware_mpi);
        OBJ_RELEASE(e);
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
    return &m->super;
}
