/*
 * topoar's GPU path: MPI_Allreduce on device buffers.
 *
 * The CUDA runtime and NCCL live in libtopoar_cuda.so (cuda/), which this
 * file dlopen()s when the component opens; without it (or without a driver
 * or a device) cm->gpu stays NULL, no pointer is ever queried and the
 * component is the host-only one.
 *
 * A call with a device buffer goes one of three ways, always ending with
 * the result in rbuf and the stream synchronized:
 *
 *   NCCL        topoar's plan for the call (the same Plan the host runs):
 *               one ncclGroupStart..ncclSend/ncclRecv..ncclGroupEnd per
 *               round, received segments reduced by topoar's kernels on the
 *               same stream (common/exec/device_executor.*); or NCCL's own
 *               ncclAllReduce (the nccl algorithm); or nccl_hier: NCCL's
 *               reduce-scatter and all-gather on a second NCCL communicator
 *               per host (ncclCommSplit, made at its first call), topoar's
 *               shard plans across hosts on the first
 *               (common/planners/planner_nccl_hier.hpp).
 *   staged      device -> pinned host -> topoar's host plan over the PML ->
 *               device: when NCCL is off or failed to set up, or the pair
 *               has no kernel.  Debian's Open MPI is not CUDA-aware, so this
 *               is also how device data crosses hosts without NCCL.
 *   staged down the same staging around the previous module: everything
 *               topoar does not take itself (user and non-commutative ops,
 *               derived datatypes, failed set-up); without staging when a
 *               CUDA-aware MPI is underneath (coll_topoar_cuda_aware_mpi).
 *
 * Mixed buffers (one on the host, one on the device) are first made one:
 * sbuf is copied into rbuf (any direction) and the call runs in place on
 * rbuf, whose memory type decides the path.
 *
 * Every rank must pass the same memory type (as with any CUDA-aware MPI);
 * coll_topoar_check_mem_type makes every call verify it (one extra small
 * allreduce) and stage everything if the ranks disagree.
 */
#include "coll_topoar.h"
#include "coll_topoar_ops.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"

#include "topoar_cuda.h"
#include "topoar_reduce.h"

#if defined(TOPOAR_HAVE_MPIX_QUERY_CUDA_SUPPORT)
#include "mpi-ext.h"
#endif

enum { NCCL_NEW = 0, NCCL_READY = 1, NCCL_OFF = -1 };

typedef struct topoar_gpu_state {
    void *stream;
    void *pinned;          /* staging, grows */
    size_t pinned_bytes;
    void *scratch;         /* device scratch of the NCCL executor, grows */
    size_t scratch_bytes;
    void *nccl;            /* ncclComm_t */
    int nccl_state;
    int nccl_device;       /* device the NCCL communicator was made on */
    void *nccl_host;       /* nccl_hier: ncclComm_t of this rank's host (split from nccl) */
    int host_state;        /* NCCL_* of nccl_host */
    bool told_hier;        /* why nccl_hier did not run was said */
} topoar_gpu_state_t;

/* NCCL communicators alive in this process, capped by
 * coll_topoar_nccl_max_comms (each holds device memory and threads).
 * Set-ups in several threads reserve a place atomically (coll_topoar.h). */
static int nccl_comms_alive = 0;

/* Takes a place under the cap now (set-ups racing in other threads must not
 * all see room for one more); NULL, or why there is none. */
static const char *nccl_place_take(void)
{
    if (__atomic_add_fetch(&nccl_comms_alive, 1, __ATOMIC_RELAXED) > mca_coll_topoar_component.nccl_max_comms) {
        (void) __atomic_sub_fetch(&nccl_comms_alive, 1, __ATOMIC_RELAXED);
        return "coll_topoar_nccl_max_comms NCCL communicators exist already";
    }
    return NULL;
}

static void nccl_place_give(void)
{
    (void) __atomic_sub_fetch(&nccl_comms_alive, 1, __ATOMIC_RELAXED);
}

#define GPU (mca_coll_topoar_component.gpu)

/* ---- open / close ------------------------------------------------------- */

/* Whether device buffers of the calls topoar hands down may go to the
 * previous module as they are: decided once, here, from
 * coll_topoar_cuda_aware_mpi and (auto) the MPI library's own answer.
 * MPIX_Query_cuda_support() is Open MPI's extension (mpi-ext.h); where the
 * build did not find it, auto cannot ask and stages.  Debian's Open MPI
 * 4.1.4 has the function and answers 0. */
static void cuda_aware_open(void)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    const size_t n = sizeof cm->cuda_aware_why;

    cm->cuda_aware = false;
    switch (cm->cuda_aware_mpi) {
    case TOPOAR_CUDA_AWARE_NEVER:
        snprintf(cm->cuda_aware_why, n, "not asked: coll_topoar_cuda_aware_mpi never");
        break;
    case TOPOAR_CUDA_AWARE_ALWAYS:
        cm->cuda_aware = true;
        snprintf(cm->cuda_aware_why, n, "assumed without asking: coll_topoar_cuda_aware_mpi always");
        break;
    default: {
#if defined(TOPOAR_HAVE_MPIX_QUERY_CUDA_SUPPORT)
        int answer = MPIX_Query_cuda_support();
        cm->cuda_aware = 0 != answer;
        snprintf(cm->cuda_aware_why, n, "MPIX_Query_cuda_support() returned %d", answer);
#else
        snprintf(cm->cuda_aware_why, n, "not asked: built without MPIX_Query_cuda_support (no mpi-ext.h with it)");
#endif
        break;
    }
    }
    opal_output_verbose(10, cm->output, "coll:topoar: CUDA-aware MPI underneath: %s (%s): device buffers of calls "
                        "handed to the previous module %s", cm->cuda_aware ? "yes" : "no", cm->cuda_aware_why,
                        cm->cuda_aware ? "go to it as they are" : "are staged through pinned host memory");
}

void mca_coll_topoar_gpu_open(void)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    const topoar_cuda_api_t *(*get)(int);
    const topoar_cuda_api_t *api;
    char why[256] = "";

    cm->gpu = NULL;
    cuda_aware_open();
    if (!cm->cuda || NULL == cm->cuda_library || '\0' == cm->cuda_library[0]) {
        opal_output_verbose(10, cm->output, "coll:topoar: GPU path off (coll_topoar_cuda 0)");
        return;
    }
    cm->gpu_handle = dlopen(cm->cuda_library, RTLD_NOW | RTLD_LOCAL);
    if (NULL == cm->gpu_handle) {
        opal_output_verbose(10, cm->output, "coll:topoar: GPU path off: %s", dlerror());
        return;
    }
    get = (const topoar_cuda_api_t *(*)(int)) dlsym(cm->gpu_handle, "topoar_cuda_get_api");
    api = get ? get(TOPOAR_CUDA_ABI) : NULL;
    if (NULL == api) {
        opal_output_verbose(10, cm->output, "coll:topoar: GPU path off: %s is not a topoar CUDA library of ABI %d",
                            cm->cuda_library, TOPOAR_CUDA_ABI);
    } else if (0 != api->probe(why, sizeof why)) {
        opal_output_verbose(10, cm->output, "coll:topoar: GPU path off: %s", why);
        api = NULL;
    }
    if (NULL == api) {
        dlclose(cm->gpu_handle);
        cm->gpu_handle = NULL;
        return;
    }
    cm->gpu = api;
    (void) api->mem_type_cache(cm->mem_type_cache ? 1 : 0);
    opal_output_verbose(10, cm->output, "coll:topoar: GPU path on (%s%s; memory-type cache of host pointers %s)",
                        cm->cuda_library, api->have_nccl && cm->nccl ? ", NCCL" : ", staging only",
                        cm->mem_type_cache ? "on" : "off");
}

void mca_coll_topoar_gpu_close(void)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    /* The library stays mapped: CUDA and NCCL keep threads and atexit
     * handlers that must not lose their code. */
    cm->gpu = NULL;
}

/* The module's device state, freed with the module (m->gpu_free). */
static void gpu_free(mca_coll_topoar_module_t *m)
{
    topoar_gpu_state_t *g = m->gpu;
    if (NULL == g) {
        return;
    }
    if (NULL != GPU) {
        if (NULL != g->nccl_host) {
            (void) GPU->nccl_comm_destroy(g->nccl_host);
            nccl_place_give();
        }
        if (NULL != g->nccl) {
            (void) GPU->nccl_comm_destroy(g->nccl);
            nccl_place_give();
        }
        if (NULL != g->scratch) {
            (void) GPU->dev_free(g->scratch);
        }
        if (NULL != g->pinned) {
            (void) GPU->host_free(g->pinned);
        }
        if (NULL != g->stream) {
            (void) GPU->stream_destroy(g->stream);
        }
    }
    free(g);
    m->gpu = NULL;
}

/* ---- helpers ------------------------------------------------------------- */

static int gpu_error(ompi_communicator_t *comm, const char *what)
{
    opal_output(0, "coll:topoar: %s: %s failed on rank %d: %s", comm->c_name, what, ompi_comm_rank(comm),
                GPU->last_error());
    return MPI_ERR_INTERN;
}

static topoar_gpu_state_t *state_of(mca_coll_topoar_module_t *m, ompi_communicator_t *comm)
{
    if (NULL == m->gpu) {
        m->gpu = (topoar_gpu_state_t *) calloc(1, sizeof(topoar_gpu_state_t));
        if (NULL == m->gpu) {
            return NULL;
        }
        m->gpu_free = gpu_free;
    }
    if (NULL == m->gpu->stream && 0 != GPU->stream_create(&m->gpu->stream)) {
        (void) gpu_error(comm, "cudaStreamCreate");
        return NULL;
    }
    return m->gpu;
}

static void *pinned(topoar_gpu_state_t *g, size_t bytes)
{
    if (g->pinned_bytes < bytes) {
        if (NULL != g->pinned) {
            (void) GPU->host_free(g->pinned);
            g->pinned = NULL;
            g->pinned_bytes = 0;
        }
        if (0 != GPU->host_alloc(&g->pinned, bytes)) {
            g->pinned = NULL;
            return NULL;
        }
        g->pinned_bytes = bytes;
    }
    return g->pinned;
}

static int copy_sync(topoar_gpu_state_t *g, void *dst, const void *src, size_t bytes)
{
    if (0 != GPU->memcpy_async(dst, src, bytes, g->stream)) {
        return -1;
    }
    return GPU->stream_sync(g->stream);
}

/* Bytes a call's buffer spans and where the span starts relative to the
 * buffer pointer (derived datatypes may have gaps and a true lower bound). */
static void span_of(ompi_datatype_t *dtype, int count, ptrdiff_t *first, size_t *bytes)
{
    ptrdiff_t lb, extent, tlb, textent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &tlb, &textent);
    *first = tlb;
    *bytes = count > 0 ? (size_t) (count - 1) * (size_t) extent + (size_t) textent : 0;
}

/* The previous module (or any host code) on staged copies: sbuf/rbuf spans
 * copied into pinned memory, the call made there, rbuf's span copied back.
 * rbuf's span is copied in too, so gaps of a derived type survive. */
static int staged_previous(mca_coll_topoar_module_t *m, topoar_gpu_state_t *g, const char *why, const void *sbuf,
                           void *rbuf, int s_dev, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                           ompi_communicator_t *comm)
{
    ptrdiff_t first;
    size_t span, second;
    char *base, *hs, *hr;
    int rc;

    const int route = topoar_route_device_down(mca_coll_topoar_component.cuda_aware);

    if (TOPOAR_ROUTE_DEVICE_DOWN == route) {
        /* A CUDA-aware MPI underneath takes device pointers itself.  What
         * topoar promises of its own reads holds for it too (docs/gpu.md,
         * "Stream semantics"): the legacy stream's earlier work -- a
         * pageable cudaMemcpy H2D whose DMA may still be in flight -- is
         * complete first, whatever stream the MPI underneath copies on. */
        if (0 != GPU->default_stream_sync()) {
            return gpu_error(comm, "cudaStreamSynchronize(0) before handing device buffers down");
        }
        rc = mca_coll_topoar_fallback(m, why, sbuf, rbuf, count, dtype, op, comm);
        mca_coll_topoar_set_last_path(route);
        return rc;
    }
    span_of(dtype, count, &first, &span);
    second = (span + 63) & ~(size_t) 63; /* sbuf's copy: after rbuf's, 64-byte aligned */
    base = (char *) pinned(g, second + span);
    if (NULL == base) {
        return gpu_error(comm, "pinned staging allocation");
    }
    hr = base;
    hs = base + second;
    if (span > 0 && 0 != copy_sync(g, hr, (const char *) rbuf + first, span)) {
        return gpu_error(comm, "staging copy to the host");
    }
    if (MPI_IN_PLACE != sbuf && span > 0) {
        if (s_dev) {
            if (0 != copy_sync(g, hs, (const char *) sbuf + first, span)) {
                return gpu_error(comm, "staging copy to the host");
            }
        } else {
            hs = (char *) sbuf + first; /* host already */
        }
    }
    rc = mca_coll_topoar_fallback(m, why, MPI_IN_PLACE == sbuf ? MPI_IN_PLACE : (const void *) (hs - first),
                                  hr - first, count, dtype, op, comm);
    mca_coll_topoar_set_last_path(route);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (span > 0 && 0 != copy_sync(g, (char *) rbuf + first, hr, span)) {
        return gpu_error(comm, "staging copy to the device");
    }
    return OMPI_SUCCESS;
}

/* ---- NCCL ------------------------------------------------------------------ */

/* Collective over comm: one NCCL communicator for it, made on the device
 * current now.  Any failure on any rank turns NCCL off on comm for all. */
static void nccl_setup(mca_coll_topoar_module_t *m, topoar_gpu_state_t *g, ompi_communicator_t *comm)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    unsigned char id[128];
    int ok = 1, all_ok = 0, rc, rank = ompi_comm_rank(comm);
    bool reserved = false;
    const char *problem = NULL;

    memset(id, 0, sizeof id);
    if (!cm->nccl || !GPU->have_nccl) {
        g->nccl_state = NCCL_OFF; /* the same on every rank: MCA value / build */
        return;
    }
    problem = nccl_place_take();
    reserved = NULL == problem;
    ok = reserved;
    if (0 == rank && ok && 0 != GPU->nccl_unique_id(id)) {
        ok = 0;
        problem = GPU->last_error();
    }
    /* Rank 0's id and whether anyone already failed travel together. */
    rc = m->previous_allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm, m->previous_allreduce_module);
    if (OMPI_SUCCESS == rc && ok) {
        rc = comm->c_coll->coll_bcast(id, (int) sizeof id, MPI_BYTE, 0, comm, comm->c_coll->coll_bcast_module);
    }
    if (OMPI_SUCCESS == rc && ok) {
        if (0 != GPU->get_device(&g->nccl_device) ||
            0 != GPU->nccl_comm_init(&g->nccl, ompi_comm_size(comm), id, rank)) {
            ok = 0;
            problem = GPU->last_error();
            g->nccl = NULL;
        }
        all_ok = ok;
        rc = m->previous_allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, comm, m->previous_allreduce_module);
    }
    if (OMPI_SUCCESS == rc && all_ok) {
        g->nccl_state = NCCL_READY; /* keeps its place */
        return;
    }
    if (reserved) {
        nccl_place_give();
    }
    if (NULL != g->nccl) {
        (void) GPU->nccl_comm_destroy(g->nccl);
        g->nccl = NULL;
    }
    g->nccl_state = NCCL_OFF;
    if (NULL != problem || cm->verbose >= 1) {
        opal_output_verbose(problem ? 1 : 10, cm->output,
                            "coll:topoar: %s: NCCL off on this communicator, device data is staged through "
                            "the host (rank %d: %s)", comm->c_name, rank, problem ? problem : "another rank failed");
    }
}

/* Collective over comm, at the first nccl_hier call (every rank decides it
 * alike): a second NCCL communicator per host, split from comm's
 * (color: the host's index, key: the rank's index there).  Any failure on
 * any rank leaves nccl_hier off on comm for all (its calls run topoar's
 * plan over the first communicator). */
static void nccl_host_setup(mca_coll_topoar_module_t *m, topoar_gpu_state_t *g, ompi_communicator_t *comm)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    int host = 0, local = 0, hosts = 0, ok = 1, all_ok = 0, rc;
    bool reserved = false;
    const char *problem = NULL;

    if (TOPOAR_OK != topoar_engine_host_position(m->engine, &host, &local, &hosts)) {
        ok = 0;
        problem = topoar_engine_error(m->engine);
    } else {
        problem = nccl_place_take();
        reserved = NULL == problem;
        ok = reserved;
    }
    /* ncclCommSplit is collective over comm's NCCL communicator: all or none. */
    rc = m->previous_allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm, m->previous_allreduce_module);
    if (OMPI_SUCCESS == rc && ok) {
        if (0 != GPU->nccl_comm_split(g->nccl, host, local, &g->nccl_host)) {
            ok = 0;
            problem = GPU->last_error();
            g->nccl_host = NULL;
        }
        all_ok = ok;
        rc = m->previous_allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, comm, m->previous_allreduce_module);
    }
    if (OMPI_SUCCESS == rc && all_ok) {
        g->host_state = NCCL_READY;
        opal_output_verbose(20, cm->output, "coll:topoar: %s: nccl_hier: rank %d is rank %d of host %d of %d",
                            comm->c_name, ompi_comm_rank(comm), local, host, hosts);
        return;
    }
    if (reserved) {
        nccl_place_give();
    }
    if (NULL != g->nccl_host) {
        (void) GPU->nccl_comm_destroy(g->nccl_host);
        g->nccl_host = NULL;
    }
    g->host_state = NCCL_OFF;
    opal_output_verbose(problem ? 1 : 10, cm->output,
                        "coll:topoar: %s: nccl_hier off on this communicator, its calls run topoar's plan over "
                        "NCCL (rank %d: %s)", comm->c_name, ompi_comm_rank(comm),
                        problem ? problem : "another rank failed");
}

/* What this communicator can do with device buffers, for the engine's
 * choice of a device call's route: registered once NCCL is set up (or
 * off), again only if nccl_hier's per-host communicator could not be made. */
static void register_caps(mca_coll_topoar_module_t *m, topoar_gpu_state_t *g)
{
    topoar_device_caps_t caps = {NCCL_READY == g->nccl_state, NCCL_OFF != g->host_state,
                                 GPU->nccl_allreduce_supported, GPU->reduce_supported};
    (void) topoar_engine_set_device_caps(m->engine, &caps);
}

typedef struct {
    topoar_gpu_state_t *g;
    int redop, redtype;
} nccl_ctx_t;

static int dt_group_start(void *ctx) { (void) ctx; return GPU->nccl_group_start(); }
static int dt_group_end(void *ctx) { (void) ctx; return GPU->nccl_group_end(); }
static int dt_send(void *ctx, const void *buf, size_t bytes, int peer)
{
    nccl_ctx_t *c = (nccl_ctx_t *) ctx;
    return GPU->nccl_send(buf, bytes, peer, c->g->nccl, c->g->stream);
}
static int dt_recv(void *ctx, void *buf, size_t bytes, int peer)
{
    nccl_ctx_t *c = (nccl_ctx_t *) ctx;
    return GPU->nccl_recv(buf, bytes, peer, c->g->nccl, c->g->stream);
}
static int dt_reduce(void *ctx, const void *in, void *inout, size_t count)
{
    nccl_ctx_t *c = (nccl_ctx_t *) ctx;
    return GPU->reduce(c->redop, c->redtype, in, inout, count, c->g->stream);
}
static int dt_scratch(void *ctx, size_t bytes, void **out)
{
    nccl_ctx_t *c = (nccl_ctx_t *) ctx;
    topoar_gpu_state_t *g = c->g;
    if (g->scratch_bytes < bytes) {
        if (NULL != g->scratch) {
            /* the stream may still use it: finish first */
            (void) GPU->stream_sync(g->stream);
            (void) GPU->dev_free(g->scratch);
            g->scratch = NULL;
            g->scratch_bytes = 0;
        }
        if (0 != GPU->dev_alloc(&g->scratch, bytes)) {
            return -1;
        }
        g->scratch_bytes = bytes;
    }
    *out = g->scratch;
    return 0;
}
static int dt_sync(void *ctx)
{
    nccl_ctx_t *c = (nccl_ctx_t *) ctx;
    return GPU->stream_sync(c->g->stream);
}
static const char *dt_error(void *ctx) { (void) ctx; return GPU->last_error(); }
static int dt_host_reduce_scatter(void *ctx, const void *send, void *recv, size_t recv_count)
{
    nccl_ctx_t *c = (nccl_ctx_t *) ctx;
    return GPU->nccl_reduce_scatter(send, recv, recv_count, c->redop, c->redtype, c->g->nccl_host, c->g->stream);
}
static int dt_host_reduce(void *ctx, const void *send, void *recv, size_t count, int root)
{
    nccl_ctx_t *c = (nccl_ctx_t *) ctx;
    return GPU->nccl_reduce(send, recv, count, c->redop, c->redtype, root, c->g->nccl_host, c->g->stream);
}
static int dt_host_all_gather(void *ctx, const void *send, void *recv, size_t send_count)
{
    nccl_ctx_t *c = (nccl_ctx_t *) ctx;
    return GPU->nccl_all_gather(send, recv, send_count, c->redtype, c->g->nccl_host, c->g->stream);
}
static int dt_host_broadcast(void *ctx, const void *send, void *recv, size_t count, int root)
{
    nccl_ctx_t *c = (nccl_ctx_t *) ctx;
    return GPU->nccl_broadcast(send, recv, count, c->redtype, root, c->g->nccl_host, c->g->stream);
}

/* ---- the call ---------------------------------------------------------------- */

int mca_coll_topoar_gpu_allreduce(mca_coll_topoar_module_t *m, const void *sbuf, void *rbuf, int count,
                                  ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm,
                                  int s_dev, int r_dev, int *host_call, const void **host_sbuf)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    topoar_gpu_state_t *g;
    const char *why;
    ptrdiff_t lb, extent;
    size_t bytes;
    int rc, redop = 0, redtype = 0, own;
    topoar_call_t call;

    if (cm->check_mem_type) {
        /* Do all ranks agree?  MIN and MAX of "device" in one call. */
        int v[2] = {r_dev || s_dev, -(r_dev || s_dev)};
        rc = m->previous_allreduce(MPI_IN_PLACE, v, 2, MPI_INT, MPI_MIN, comm, m->previous_allreduce_module);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        if (v[0] != -v[1]) {
            /* Mixed across ranks: everybody takes the staged previous
             * module, which works whatever each rank passed. */
            static bool told = false;
            if (0 == ompi_comm_rank(comm) && mca_coll_topoar_first_time(&told)) {
                opal_output(0, "coll:topoar: %s: ranks passed buffers in different memory types "
                            "(host on some, device on others); staging every such call", comm->c_name);
            }
            if (!(r_dev || s_dev)) {
                return mca_coll_topoar_fallback(m, "memory types differ across ranks", sbuf, rbuf, count, dtype,
                                                op, comm);
            }
            g = state_of(m, comm);
            return g ? staged_previous(m, g, "memory types differ across ranks", sbuf, rbuf, s_dev, count, dtype,
                                       op, comm)
                     : MPI_ERR_NO_MEM;
        }
        if (!(r_dev || s_dev)) {
            *host_call = 1; /* every rank's buffers on the host: the host call */
            *host_sbuf = sbuf;
            return OMPI_SUCCESS;
        }
    }
    g = state_of(m, comm);
    if (NULL == g) {
        return MPI_ERR_NO_MEM;
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);

    if (1 == ompi_comm_size(comm) && !ompi_datatype_is_predefined(dtype)) {
        return staged_previous(m, g, "one rank, derived datatype", sbuf, rbuf, s_dev, count, dtype, op, comm);
    }
    if (1 == ompi_comm_size(comm)) {
        /* One rank: the result is the input (coll self would memcpy). */
        ptrdiff_t first;
        size_t span;
        span_of(dtype, count, &first, &span);
        if (MPI_IN_PLACE != sbuf && sbuf != rbuf && span > 0 &&
            0 != copy_sync(g, (char *) rbuf + first, (const char *) sbuf + first, span)) {
            return gpu_error(comm, "copy of sbuf into rbuf");
        }
        mca_coll_topoar_set_last_path(TOPOAR_ROUTE_LOCAL);
        mca_coll_topoar_bump(&m->handled);
        return OMPI_SUCCESS;
    }

    why = mca_coll_topoar_ineligible(count, dtype, op);
    own = NULL == why && mca_coll_topoar_op_ids(dtype, op, &redop, &redtype);
    if (NULL == why && !own) {
        why = "no topoar reduction for this op and datatype";
    }
    if (NULL != why) {
        return staged_previous(m, g, why, sbuf, rbuf, s_dev, count, dtype, op, comm);
    }
    bytes = (size_t) count * (size_t) extent;

    /* Mixed buffers: make them one, in rbuf's memory. */
    if (MPI_IN_PLACE != sbuf && sbuf != rbuf && bytes > 0) {
        if (0 != copy_sync(g, rbuf, sbuf, bytes)) {
            return gpu_error(comm, "copy of sbuf into rbuf");
        }
    }
    if (!r_dev) {
        /* rbuf on the host: the host call, in place. */
        *host_call = 1;
        *host_sbuf = MPI_IN_PLACE;
        return OMPI_SUCCESS;
    }

    if (m->nb_provisional) {
        mca_coll_topoar_nb_end_provisional(m, comm); /* set up by a nonblocking call */
    }
    if (TOPOAR_STATE_NEW == m->state) {
        mca_coll_topoar_setup(m, comm);
    }
    if (TOPOAR_STATE_READY != m->state || NULL == m->engine) {
        return staged_previous(m, g, "topoar is off on this communicator", MPI_IN_PLACE, rbuf, 0, count, dtype, op,
                               comm);
    }
    if (NCCL_NEW == g->nccl_state) {
        nccl_setup(m, g, comm);
        register_caps(m, g);
    }
    rc = topoar_engine_prepare_device(m->engine, (size_t) count, (size_t) extent, redop, redtype, &call);
    if (TOPOAR_OK == rc && TOPOAR_ROUTE_NCCL_HIER == call.route && NCCL_NEW == g->host_state) {
        /* nccl_hier's first call: its per-host NCCL communicator (collective;
         * every rank decided the same route).  Without it the route is
         * topoar's plan over NCCL: asked again with what is now known. */
        nccl_host_setup(m, g, comm);
        if (NCCL_READY != g->host_state) {
            register_caps(m, g);
            rc = topoar_engine_prepare_device(m->engine, (size_t) count, (size_t) extent, redop, redtype, &call);
        }
    }
    if (TOPOAR_ERR_UNSUPPORTED == rc) {
        return staged_previous(m, g, topoar_engine_error(m->engine), MPI_IN_PLACE, rbuf, 0, count, dtype, op, comm);
    }
    if (TOPOAR_OK != rc) {
        return mca_coll_topoar_failed(m, comm, "prepare");
    }
    if (TOPOAR_ALG_NCCL_HIER == call.algorithm && TOPOAR_ROUTE_NCCL_HIER != call.route && NULL != call.why &&
        !g->told_hier && count > 0) {
        g->told_hier = true;
        opal_output_verbose(1, cm->output, "coll:topoar: %s: nccl_hier cannot run here (%s): topoar's %s plan "
                            "over NCCL instead", comm->c_name, call.why, topoar_algorithm_name(call.plan_algorithm));
    }

    switch (call.route) {
    case TOPOAR_ROUTE_NCCL_HIER:
    case TOPOAR_ROUTE_NCCL_PLAN: {
        /* topoar's plan over NCCL with its kernels; nccl_hier: NCCL inside
         * the hosts (the host_* callbacks), topoar's plans across them */
        nccl_ctx_t ctx = {g, redop, redtype};
        const bool hier = TOPOAR_ROUTE_NCCL_HIER == call.route;
        topoar_device_transport_t dt = {&ctx, dt_group_start, dt_send, dt_recv, dt_group_end, dt_reduce, dt_scratch,
                                        dt_sync, dt_error,
                                        hier ? dt_host_reduce_scatter : NULL, hier ? dt_host_reduce : NULL,
                                        hier ? dt_host_all_gather : NULL, hier ? dt_host_broadcast : NULL};
        rc = topoar_engine_run_device(m->engine, &call, rbuf, &dt);
        if (TOPOAR_OK != rc) {
            return mca_coll_topoar_failed(m, comm, hier ? "nccl_hier on the device" : "run on the device");
        }
        mca_coll_topoar_count(m, comm, bytes, hier ? call.algorithm : call.plan_algorithm, call.route);
        return OMPI_SUCCESS;
    }
    case TOPOAR_ROUTE_NCCL_ALLREDUCE:
        /* the nccl algorithm (auto's choice within one host, forced, or a
         * rule's) on a pair NCCL reduces itself */
        rc = GPU->nccl_allreduce(rbuf, rbuf, (size_t) count, redop, redtype, g->nccl, g->stream);
        if (0 == rc) {
            rc = GPU->stream_sync(g->stream);
        }
        if (0 != rc) {
            return gpu_error(comm, "ncclAllReduce");
        }
        mca_coll_topoar_count(m, comm, bytes, call.algorithm, call.route);
        return OMPI_SUCCESS;
    case TOPOAR_ROUTE_STAGED: {
        /* through pinned host memory, the host plan prepared for it */
        void *h = pinned(g, bytes);
        if (NULL == h && bytes > 0) {
            return gpu_error(comm, "pinned staging allocation");
        }
        if (bytes > 0 && 0 != copy_sync(g, h, rbuf, bytes)) {
            return gpu_error(comm, "staging copy to the host");
        }
        rc = mca_coll_topoar_run_host(m, &call, h, dtype, op, comm);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        if (bytes > 0 && 0 != copy_sync(g, rbuf, h, bytes)) {
            return gpu_error(comm, "staging copy to the device");
        }
        mca_coll_topoar_count(m, comm, bytes, call.plan_algorithm, call.route);
        return OMPI_SUCCESS;
    }
    default:
        opal_output(0, "coll:topoar: %s: a device call cannot take the route %s", comm->c_name,
                    topoar_route_name(call.route));
        return MPI_ERR_INTERN;
    }
}
