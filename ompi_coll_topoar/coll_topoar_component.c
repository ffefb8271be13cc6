/*
 * topoar component: MCA parameters and MPI_T performance variables,
 * registered once per process.
 */
#include "coll_topoar.h"

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"

const char *mca_coll_topoar_component_version_string = "topoar MPI_Allreduce component 0.1.0";

static int topoar_register(void);
static int topoar_open(void);
static int topoar_close(void);

mca_coll_topoar_component_t mca_coll_topoar_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_0_0,
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
    .algorithm = TOPOAR_ALG_AUTO,
    .segment_size = 32 * 1024,
    .pipeline_size = 32 * 1024,
    .small_msg_size = 65536,
    .single_node_fallback = true,
    .last_algorithm = TOPOAR_LAST_NONE,
    .last_path = TOPOAR_PATH_NONE,
    .cuda = true,
    .nccl = true,
    .check_mem_type = false,
    .nccl_max_comms = 16,
};

/* Names double as the MPI_T enum of last_algorithm. */
static const mca_base_var_enum_value_t algorithm_values[] = {
    {TOPOAR_ALG_AUTO, "auto"},
    {TOPOAR_ALG_RING, "ring"},
    {TOPOAR_ALG_RECURSIVE_DOUBLING, "recursive_doubling"},
    {TOPOAR_ALG_HRING, "hring"},
    {TOPOAR_ALG_FLEXREDUCE, "flexreduce"},
    {TOPOAR_ALG_TREE, "tree"},
    {0, NULL},
};

/* ---- MPI_T performance variables ---------------------------------------- */

/* Communicator-bound variables: Open MPI dereferences the handle pointer
 * the tool passed to MPI_T_pvar_handle_alloc, so obj is the communicator. */
static int pvar_notify(mca_base_pvar_t *pvar, mca_base_pvar_event_t event, void *obj, int *count)
{
    (void) pvar;
    (void) obj;
    if (MCA_BASE_PVAR_HANDLE_BIND == event) {
        *count = 1;
    }
    return OMPI_SUCCESS;
}

static mca_coll_topoar_module_t *pvar_module(void *obj)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) obj;
    if (NULL == comm || ompi_comm_invalid(comm)) {
        return NULL;
    }
    return mca_coll_topoar_module_of(comm);
}

static int pvar_get_handled(const mca_base_pvar_t *pvar, void *value, void *obj)
{
    mca_coll_topoar_module_t *m = pvar_module(obj);
    (void) pvar;
    *(unsigned long long *) value = m ? m->handled : 0;
    return OMPI_SUCCESS;
}

static int pvar_get_fallback(const mca_base_pvar_t *pvar, void *value, void *obj)
{
    mca_coll_topoar_module_t *m = pvar_module(obj);
    (void) pvar;
    *(unsigned long long *) value = m ? m->fallback : 0;
    return OMPI_SUCCESS;
}

static int register_pvars(void)
{
    const mca_base_component_t *c = &mca_coll_topoar_component.super.collm_version;
    int rc;

    rc = mca_base_component_pvar_register(
        c, "allreduce_handled", "MPI_Allreduce calls on this communicator executed by topoar itself",
        OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MCA_BASE_VAR_BIND_MPI_COMM, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        pvar_get_handled, NULL, pvar_notify, NULL);
    if (rc < 0) {
        return rc;
    }
    rc = mca_base_component_pvar_register(
        c, "allreduce_fallback",
        "MPI_Allreduce calls on this communicator handed to the previous coll module",
        OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MCA_BASE_VAR_BIND_MPI_COMM, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        pvar_get_fallback, NULL, pvar_notify, NULL);
    if (rc < 0) {
        return rc;
    }
    /* Plain int, no MPI_T enum: Open MPI 4.1.4's ompi_info crashes while
     * printing a performance variable that has one. */
    rc = mca_base_component_pvar_register(
        c, "allreduce_last_algorithm",
        "Algorithm of the most recent MPI_Allreduce in this process: 0 none, 1 ring, "
        "2 recursive_doubling, 3 hring, 4 flexreduce, 5 tree, 100 fallback (handed down)",
        OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_STATE, MCA_BASE_VAR_TYPE_INT, NULL,
        MCA_BASE_VAR_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        NULL, NULL, NULL, &mca_coll_topoar_component.last_algorithm);
    if (rc < 0) {
        return rc;
    }
    rc = mca_base_component_pvar_register(
        c, "allreduce_last_path",
        "How the most recent MPI_Allreduce in this process ran: 0 none, 1 host buffers by topoar, "
        "2 host buffers handed down, 3 device buffers by topoar's plan over NCCL, 4 device buffers by "
        "ncclAllReduce, 5 device buffers staged through pinned host memory by topoar's plan, 6 device "
        "buffers staged through pinned host memory to the previous module",
        OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_STATE, MCA_BASE_VAR_TYPE_INT, NULL,
        MCA_BASE_VAR_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        NULL, NULL, NULL, &mca_coll_topoar_component.last_path);
    return rc < 0 ? rc : OMPI_SUCCESS;
}

/* ---- MCA parameters ------------------------------------------------------ */

static int topoar_register(void)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    const mca_base_component_t *c = &cm->super.collm_version;
    mca_base_var_enum_t *alg_enum = NULL;
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

    rc = mca_base_var_enum_create("coll_topoar_allreduce_algorithms", algorithm_values, &alg_enum);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    (void) mca_base_component_var_register(
        c, "allreduce_algorithm",
        "Force one MPI_Allreduce algorithm (auto: choose per message size and topology). "
        "Must be the same on all ranks. Settable through MPI_T at run time (topoar_tune does): "
        "applies to communicators set up afterwards.",
        MCA_BASE_VAR_TYPE_INT, alg_enum, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL,
        &cm->algorithm);
    OBJ_RELEASE(alg_enum);

    (void) mca_base_component_var_register(
        c, "segment_size",
        "Largest message in bytes: transfers are cut into segments of this size that flow independently "
        "(pipelining). Keep it at or below the BTL's eager limit (TCP: 64 KiB) so no segment waits for a "
        "rendezvous handshake (0: whole transfers). Must be the same on all ranks.",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, &cm->segment_size);
    (void) mca_base_component_var_register(
        c, "pipeline_size",
        "Pipelining unit in bytes that planners build into their rounds (0: none). "
        "Must be the same on all ranks.",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, &cm->pipeline_size);
    (void) mca_base_component_var_register(
        c, "small_msg_size",
        "auto's fixed choice (used when no rule and no cost-model table decides): messages of at most this many bytes use the latency algorithm, larger ones aggregation trees",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, &cm->small_msg_size);

    (void) mca_base_component_var_register(
        c, "single_node_fallback",
        "auto: hand calls on communicators within one host to the previous module (tuned's shared-memory "
        "algorithms win there); 0 makes topoar run them too. A rules file takes precedence.",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, &cm->single_node_fallback);

    cm->topology_file = NULL;
    (void) mca_base_component_var_register(
        c, "topology_file",
        "Topology file describing racks/switches above the nodes and their links "
        "(format: docs/topology-format.md); takes precedence over rack_file and Slurm",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_ALL, &cm->topology_file);
    cm->rack_file = NULL;
    (void) mca_base_component_var_register(
        c, "rack_file", "Host-to-rack map: lines 'hostname rack [bw=.. lat=..]'",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_ALL, &cm->rack_file);

    cm->rules_file = NULL;
    (void) mca_base_component_var_register(
        c, "rules_file",
        "Decision rules for auto: message size, communicator shape and memory type -> algorithm "
        "(format: docs/rules-format.md; topoar_tune writes one). Must be the same on all ranks.",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_ALL, &cm->rules_file);

    cm->model_table = true;
    (void) mca_base_component_var_register(
        c, "model_table",
        "auto without a matching rule: choose per message size from a table the cost model computes at "
        "communicator set-up for the discovered topology (1), or only the fixed choice (0: latency "
        "algorithm up to coll_topoar_small_msg_size, trees above). Verbose 10 prints the table.",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, &cm->model_table);

    cm->model_overhead = NULL;
    (void) mca_base_component_var_register(
        c, "model_overhead",
        "Software cost per message the cost model assumes, e.g. '40us' (the default, Open MPI's TCP "
        "BTL) or '2us' (RDMA networks); larger values move the switch from the latency algorithm to "
        "the bandwidth algorithms to larger messages. Must be the same on all ranks.",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, &cm->model_overhead);

    cm->model_margin = NULL;
    (void) mca_base_component_var_register(
        c, "model_margin",
        "How much faster the cost model must predict an algorithm with more messages (order: "
        "recursive_doubling, tree, flexreduce, hring, ring) than a simpler one for the table to "
        "choose it, '0.15' or '15%' (the default); 0 takes the fastest prediction. Must be the "
        "same on all ranks.",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, &cm->model_margin);

    cm->socket_link = cm->node_link = cm->rack_link = cm->spine_link = NULL;
    (void) mca_base_component_var_register(
        c, "socket_link", "Default link of a rank to its socket, 'BANDWIDTH[,LATENCY]' e.g. '20GB/s,0.5us'",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, &cm->socket_link);
    (void) mca_base_component_var_register(
        c, "node_link", "Default up-link of a node (its network port), 'BANDWIDTH[,LATENCY]' e.g. '100Gbit,2us'",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, &cm->node_link);
    (void) mca_base_component_var_register(
        c, "rack_link", "Default up-link of a rack to the spine, 'BANDWIDTH[,LATENCY]'",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, &cm->rack_link);
    (void) mca_base_component_var_register(
        c, "spine_link", "Default up-link of a spine switch, 'BANDWIDTH[,LATENCY]'",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, &cm->spine_link);

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
        "At most this many NCCL communicators per process (each holds device memory); communicators "
        "beyond stage device data through the host",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, &cm->nccl_max_comms);
    (void) mca_base_component_var_register(
        c, "check_mem_type",
        "Verify on every call that all ranks pass buffers in the same memory type (host or device), "
        "at the cost of one small allreduce per call; disagreeing calls are staged. Off: assumed, as "
        "with any CUDA-aware MPI.",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, &cm->check_mem_type);

    return register_pvars();
}

static int topoar_open(void)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    cm->output = opal_output_open(NULL);
    opal_output_set_verbosity(cm->output, cm->verbose);
    if (cm->algorithm < 0 || cm->algorithm >= TOPOAR_NUM_ALGS) {
        opal_output(0, "coll:topoar: invalid coll_topoar_allreduce_algorithm %d, using auto", cm->algorithm);
        cm->algorithm = TOPOAR_ALG_AUTO;
    }
    mca_coll_topoar_gpu_open();
    return OMPI_SUCCESS;
}

static int topoar_close(void)
{
    mca_coll_topoar_gpu_close();
    if (mca_coll_topoar_component.output >= 0) {
        opal_output_close(mca_coll_topoar_component.output);
        mca_coll_topoar_component.output = -1;
    }
    return OMPI_SUCCESS;
}
