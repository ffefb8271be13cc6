/*
 * topoar MPI_Allreduce entry point: eligibility checks, lazy collective
 * set-up, the transport and reduction callbacks handed to the engine, and
 * the single fallback path to the previous module.
 */
#include "coll_topoar.h"
#include "coll_topoar_ops.h"
#include "topoar_reduce.h"
#include "topoar_cuda.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/proc/proc.h"
#include "opal/mca/hwloc/base/base.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"

/* ---- callbacks for the engine -------------------------------------------- */

/* The transport's context: the communicator, and how many times this call
 * has found nothing to do.  A call starts without making opal_progress poll
 * the event library on every pass: the TCP BTL's sockets are still polled at
 * the progress engine's tick, as for tuned, and a poll() per pass made small
 * calls across hosts up to a third slower at some sizes, within noise at
 * others (docs/performance.md, "What mattered").  A call
 * that has gone idle kPollAfterIdle times asks for every-pass polling for the
 * rest of the call, so a long wait on TCP (a connection being set up, a
 * congested link) never waits for the tick. */
typedef mca_coll_topoar_pml_ctx_t pml_ctx_t;

enum { kPollAfterIdle = 64 };

static int pml_isend(void *ctx, const void *buf, size_t bytes, int peer, void **req)
{
    return MCA_PML_CALL(isend(buf, bytes, MPI_BYTE, peer, MCA_COLL_BASE_TAG_ALLREDUCE,
                              MCA_PML_BASE_SEND_STANDARD, ((pml_ctx_t *) ctx)->comm,
                              (ompi_request_t **) req));
}

static int pml_irecv(void *ctx, void *buf, size_t bytes, int peer, void **req)
{
    return MCA_PML_CALL(irecv(buf, bytes, MPI_BYTE, peer, MCA_COLL_BASE_TAG_ALLREDUCE,
                              ((pml_ctx_t *) ctx)->comm, (ompi_request_t **) req));
}

static int pml_wait(void *ctx, void **req)
{
    (void) ctx;
    return ompi_request_wait((ompi_request_t **) req, MPI_STATUS_IGNORE);
}

/* The local reduction goes through PMPI_Reduce_local (inout = in op inout),
 * which is ompi_op_reduce underneath: Debian's libopenmpi-dev lacks a header
 * that ompi/op/op.h needs, and the public call keeps user operations and
 * every predefined op/type pair working alike. */
/* Completion check without a progress call: the executor polls many
 * requests per pass and drives progress once (pml_progress), so processes
 * sharing a core waste less time in the network stack. */
static int pml_test(void *ctx, void **req, int *done)
{
    ompi_request_t **r = (ompi_request_t **) req;
    (void) ctx;
    *done = 0;
    if (!REQUEST_COMPLETE(*r)) {
        return OMPI_SUCCESS;
    }
    *done = 1;
    return ompi_request_wait(r, MPI_STATUS_IGNORE); /* frees it */
}

/* After a failure: cancel a posted request and complete it, so nothing is
 * left posted on the caller's buffers (ob1 cannot cancel sends: the wait
 * then completes them). */
static int pml_cancel(void *ctx, void **req)
{
    ompi_request_t **r = (ompi_request_t **) req;
    (void) ctx;
    (void) ompi_request_cancel(*r);
    return ompi_request_wait(r, MPI_STATUS_IGNORE);
}

static void pml_progress(void *ctx)
{
    pml_ctx_t *c = (pml_ctx_t *) ctx;
    if (!c->polling && ++c->idle >= kPollAfterIdle) {
        opal_progress_event_users_increment();
        c->polling = true;
    }
    opal_progress();
}

typedef struct {
    struct ompi_op_t *op;
    ompi_datatype_t *dtype;
    size_t extent;
    int redop, redtype; /* topoar's own reduction when own != 0 */
    int own;
} reduce_ctx_t;

static void op_reduce(void *ctx, const void *in, void *inout, size_t count)
{
    reduce_ctx_t *r = (reduce_ctx_t *) ctx;
    /* Predefined op/type pairs: topoar's own typed loops (wrapping integer
     * arithmetic, vectorized; common/reduce/).  Everything else: Open MPI. */
    if (r->own && 0 == topoar_reduce_host(r->redop, r->redtype, in, inout, count)) {
        return;
    }
    const char *src = (const char *) in;
    char *dst = (char *) inout;
    while (count > 0) {
        int n = count > (size_t) INT_MAX ? INT_MAX : (int) count;
        PMPI_Reduce_local(src, dst, n, r->dtype, r->op);
        src += (size_t) n * r->extent;
        dst += (size_t) n * r->extent;
        count -= (size_t) n;
    }
}

/* ---- set-up ----------------------------------------------------------------- */

/* A setting that must agree differs between rank 0 and rank `other`: said
 * once, by the differing rank, with both values (rank 0's arrives by a
 * broadcast every rank takes part in; all of them saw the same gathered
 * data, so all of them are here). */
static void report_mismatch(ompi_communicator_t *comm, const mca_coll_topoar_config_t *conf, int param,
                            int other, bool say)
{
    topoar_param_info_t p;
    char mine[512] = "", first[512] = "";
    int rank = ompi_comm_rank(comm);
    if (TOPOAR_OK != topoar_param_info(param, &p)) {
        p.name = "?";
    }
    for (int k = 0; k < conf->cfg.count; ++k) {
        if (0 == strcmp(conf->cfg.names[k], p.name)) {
            snprintf(mine, sizeof(mine), "%s", conf->cfg.values[k]);
        }
    }
    if (0 == rank) {
        memcpy(first, mine, sizeof(first));
    }
    if (OMPI_SUCCESS != comm->c_coll->coll_bcast(first, (int) sizeof(first), MPI_BYTE, 0, comm,
                                                 comm->c_coll->coll_bcast_module)) {
        snprintf(first, sizeof(first), "?");
    }
    if (rank == other && say) {
        opal_output(0, "coll:topoar: set-up failed on %s: coll_topoar_%s differs across ranks: rank 0 has "
                    "'%s', rank %d has '%s'%s; using the previous allreduce on this communicator",
                    comm->c_name, p.name, first, rank, mine,
                    0 == strcmp(first, mine) ? " (the files' contents differ)" : "");
    }
}

/* Whether every member of comm runs on this host (Open MPI's own locality
 * flags: no communication, and the same answer on every member). */
static bool all_members_on_this_host(ompi_communicator_t *comm)
{
    int n = ompi_comm_size(comm);
    for (int i = 0; i < n; i++) {
        ompi_proc_t *p = ompi_comm_peer_lookup(comm, i);
        if (NULL == p || !OPAL_PROC_ON_LOCAL_NODE(p->super.proc_flags)) {
            return false;
        }
    }
    return true;
}

/* A communicator within one host that auto hands down entirely needs no
 * rank records, topology or engine: one small allreduce checks that every
 * member has the same settings, the same GPU state and the same answer
 * (a short-lived communicator's first call paid an allgather and an
 * agreement allreduce before).  Returns true when that settled the
 * set-up; false sends every member, alike, through the full set-up (which
 * names a difference, or runs topoar on this communicator). */
static bool single_host_hand_down(mca_coll_topoar_module_t *m, ompi_communicator_t *comm,
                                  const mca_coll_topoar_config_t *conf, const topoar_rank_info_t *mine)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    const char *why = NULL;
    int hands_down = topoar_config_hands_down_single_host(&conf->cfg, &why);
    unsigned long long h = 14695981039346656037ull, d[2];
    const unsigned char *b = (const unsigned char *) mine->settings;
    size_t i;
    for (i = 0; i < sizeof(mine->settings); i++) {
        h = (h ^ b[i]) * 1099511628211ull;
    }
    h = (h ^ (unsigned long long) (NULL != cm->gpu)) * 1099511628211ull;
    h = (h ^ (unsigned long long) hands_down) * 1099511628211ull;
    d[0] = h;
    d[1] = ~h;
    if (OMPI_SUCCESS != m->previous_allreduce(MPI_IN_PLACE, d, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm,
                                              m->previous_allreduce_module)) {
        return false;
    }
    /* All equal iff the largest hash is the complement of the largest
     * complement (= the smallest hash). */
    if (d[0] != ~d[1] || !hands_down || NULL != cm->gpu) {
        return false;
    }
    m->hand_down_all = why;
    m->state = TOPOAR_STATE_READY;
    if (0 == ompi_comm_rank(comm)) {
        opal_output_verbose(10, cm->output, "coll:topoar: %s (%d ranks, one host): every call handed down, "
                            "set up without rank records", comm->c_name, ompi_comm_size(comm));
    }
    return true;
}

/* The allgather set-up's link probes share their results with. */
static int setup_allgather(void *ctx, const void *mine, size_t bytes, void *all)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) ctx;
    if (bytes > (size_t) INT_MAX) {
        return 1;
    }
    return OMPI_SUCCESS != comm->c_coll->coll_allgather(mine, (int) bytes, MPI_BYTE, all, (int) bytes, MPI_BYTE,
                                                        comm, comm->c_coll->coll_allgather_module);
}

/* Collective over comm: gathers every rank's host/socket/Slurm data and
 * settings fingerprints with the underlying allgather, checks that the
 * settings that decide message pairing agree, builds the topology, and
 * makes all ranks agree on the outcome (one failing rank disables topoar on
 * comm for everyone). */
void mca_coll_topoar_setup(mca_coll_topoar_module_t *m, ompi_communicator_t *comm)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    topoar_rank_info_t mine, *all = NULL;
    const char *problem = NULL;
    int rc, first_failed, bad_param = -1, bad_rank = -1;
    /* Said once per process (the same file problem would repeat on every
     * communicator); later ones at verbose level 1.  Set-ups of different
     * communicators may run in different threads at once. */
    static bool told = false;
    mca_coll_topoar_config_t conf;

    mca_coll_topoar_config(&conf);
    topoar_local_rank_info(&mine);
    topoar_settings_fingerprint(&conf.cfg, &mine);
    if (all_members_on_this_host(comm) && single_host_hand_down(m, comm, &conf, &mine)) {
        return;
    }
    all = (topoar_rank_info_t *) calloc((size_t) size, sizeof(*all));
    m->engine = topoar_engine_create(rank, size, &conf.cfg);
    if (NULL == all || NULL == m->engine) {
        problem = "out of memory";
    }
    /* Every rank takes part in the allgather, even one that already failed,
     * so no rank is left waiting. */
    rc = comm->c_coll->coll_allgather(&mine, (int) sizeof(mine), MPI_BYTE,
                                      all ? (void *) all : (void *) &mine, all ? (int) sizeof(mine) : 0,
                                      MPI_BYTE, comm, comm->c_coll->coll_allgather_module);
    if (NULL == problem && OMPI_SUCCESS != rc) {
        problem = "allgather of rank data failed";
    }
    if (NULL == problem && topoar_settings_mismatch(all, size, &bad_param, &bad_rank)) {
        problem = "settings differ across ranks";
    }
    if (NULL == problem) {
        /* Links between hosts may be measured here (coll_topoar_probe):
         * point-to-point over comm, as the calls will run. */
        /* The engine keeps the transport (its callbacks and context) for
         * online adaptation, so the context is the module's, not this
         * frame's.  Polled throughout set-up (below); a later use inside a
         * call starts like a call (mca_coll_topoar_run_host ends it). */
        m->io_ctx = (pml_ctx_t){comm, 0, true};
        topoar_transport_t transport = {&m->io_ctx, pml_isend, pml_irecv, pml_wait, pml_test, pml_progress,
                                        pml_cancel};
        topoar_setup_io_t io = {&transport, comm, setup_allgather};
        opal_progress_event_users_increment();
        rc = topoar_engine_setup_io(m->engine, all, &io);
        opal_progress_event_users_decrement();
        m->io_ctx.polling = false;
        if (TOPOAR_OK != rc) {
            problem = topoar_engine_error(m->engine);
        }
    }

    /* Agree: the lowest failing rank, or INT_MAX when all succeeded. */
    first_failed = problem ? rank : INT_MAX;
    rc = m->previous_allreduce(MPI_IN_PLACE, &first_failed, 1, MPI_INT, MPI_MIN, comm,
                               m->previous_allreduce_module);
    if (OMPI_SUCCESS != rc) {
        first_failed = 0;
        if (NULL == problem) {
            problem = "could not agree on the set-up outcome";
        }
    }
    if (INT_MAX == first_failed) {
        m->state = TOPOAR_STATE_READY;
        (void) topoar_engine_hands_down_all(m->engine, &m->hand_down_all);
        if (0 == rank && cm->verbose >= 10) {
            opal_output(0, "coll:topoar: topology of %s (%d ranks):\n%s", comm->c_name, size,
                        topoar_engine_describe(m->engine));
        }
    } else {
        m->state = TOPOAR_STATE_FAILED;
        if (bad_param >= 0) {
            /* Every rank found the same mismatch in the same gathered data. */
            bool first = mca_coll_topoar_first_time(&told);
            report_mismatch(comm, &conf, bad_param, bad_rank, first || cm->verbose >= 1);
        } else if (rank == first_failed && NULL != problem &&
                   (mca_coll_topoar_first_time(&told) || cm->verbose >= 1)) {
            opal_output(0, "coll:topoar: set-up failed on %s (rank %d): %s; using the previous "
                        "allreduce on this communicator", comm->c_name, rank, problem);
        }
    }
    free(all);
}

/* ---- the call ------------------------------------------------------------- */

int mca_coll_topoar_fallback(mca_coll_topoar_module_t *m, const char *why, const void *sbuf, void *rbuf,
                             int count, ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm)
{
    mca_coll_topoar_bump(&m->fallback);
    mca_coll_topoar_set_last(TOPOAR_LAST_FALLBACK, TOPOAR_PATH_HAND_DOWN);
    opal_output_verbose(50, mca_coll_topoar_component.output,
                        "coll:topoar: %s: allreduce of %d x %s passed down (%s)", comm->c_name, count,
                        dtype->name, why);
    return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
}

/* Why topoar cannot take this call, or NULL if it can. */
const char *mca_coll_topoar_ineligible(int count, ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    ptrdiff_t lb, extent;
    int commute = 0;
    if (count < 0) {
        return "negative count";
    }
    if (MPI_SUCCESS != PMPI_Op_commutative(op, &commute) || !commute) {
        return "non-commutative operation";
    }
    if (!ompi_datatype_is_predefined(dtype)) {
        return "derived datatype";
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);
    if (0 != lb || extent <= 0) {
        return "datatype with a lower bound or empty extent";
    }
    return NULL;
}

/* Log the algorithm once per power-of-two size class (verbose 20, rank 0). */
static void log_choice(mca_coll_topoar_module_t *m, ompi_communicator_t *comm, size_t bytes, int alg)
{
    int cls = 0;
    while (cls < 63 && ((size_t) 1 << (cls + 1)) <= bytes) {
        ++cls;
    }
    bool first_of_class = !(m->logged_classes & (1ull << cls));
    m->logged_classes |= 1ull << cls;
    if (mca_coll_topoar_component.verbose >= 50 ||
        (mca_coll_topoar_component.verbose >= 20 && 0 == ompi_comm_rank(comm) && first_of_class)) {
        opal_output(0, "coll:topoar: %s: allreduce of %zu bytes (class 2^%d) -> %s (%s)", comm->c_name, bytes,
                    cls, topoar_algorithm_name(alg), topoar_engine_last_origin(m->engine));
    }
}

/* A failure while messages moved: topoar is off on this communicator from
 * now on (later calls fall back), said once per communicator. */
int mca_coll_topoar_failed(mca_coll_topoar_module_t *m, ompi_communicator_t *comm, const char *where)
{
    m->state = TOPOAR_STATE_FAILED;
    opal_output(0, "coll:topoar: %s: allreduce failed on rank %d (%s): %s; topoar is off on this "
                "communicator from now on", comm->c_name, ompi_comm_rank(comm), where,
                topoar_engine_error(m->engine));
    return MPI_ERR_INTERN;
}

void mca_coll_topoar_count(mca_coll_topoar_module_t *m, ompi_communicator_t *comm, size_t bytes, int algorithm,
                           int path)
{
    mca_coll_topoar_bump(&m->handled);
    if (algorithm >= 0 && algorithm < TOPOAR_ALG_MAX) {
        m->by_algorithm[algorithm]++;
    }
    mca_coll_topoar_set_last(algorithm, path);
    log_choice(m, comm, bytes, algorithm);
}

/* What the engine decided at run time (online adaptation, a contest's
 * outcome), on rank 0 at verbose 10; taking it clears it on every rank. */
static void print_notice(mca_coll_topoar_module_t *m, ompi_communicator_t *comm, const char *what)
{
    if (mca_coll_topoar_component.verbose >= 10) {
        const char *notice = topoar_engine_notice(m->engine);
        if (NULL != notice && 0 == ompi_comm_rank(comm)) {
            opal_output(0, "coll:topoar: %s: %s%s", comm->c_name, what, notice);
        }
    }
}

int mca_coll_topoar_run_host(mca_coll_topoar_module_t *m, const topoar_call_t *call, void *rbuf,
                             ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm)
{
    int rc;
    reduce_ctx_t rctx = {op, dtype, call->elem_size, 0, 0, 0};
    topoar_reducer_t reducer = {&rctx, op_reduce};
    pml_ctx_t pctx = {comm, 0, false};
    topoar_transport_t transport = {&pctx, pml_isend, pml_irecv, pml_wait, pml_test, pml_progress, pml_cancel};

    rctx.own = mca_coll_topoar_op_ids(dtype, op, &rctx.redop, &rctx.redtype);
    rc = topoar_engine_run(m->engine, call, rbuf, &transport, &reducer);
    if (pctx.polling) {
        opal_progress_event_users_decrement();
    }
    if (m->io_ctx.polling) { /* online adaptation measured the links again */
        opal_progress_event_users_decrement();
        m->io_ctx.polling = false;
    }
    m->io_ctx.idle = 0;
    if (TOPOAR_OK != rc) {
        return mca_coll_topoar_failed(m, comm, "run");
    }
    print_notice(m, comm, "online adaptation: ");
    return OMPI_SUCCESS;
}

/* Runs a prepared host call that topoar takes. */
static int run_prepared(mca_coll_topoar_module_t *m, const topoar_call_t *call, const void *sbuf, void *rbuf,
                        ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm, size_t bytes)
{
    int rc;
    if (MPI_IN_PLACE != sbuf && sbuf != rbuf && call->count > 0) {
        /* The engine works in place on rbuf; copy now (after the checks,
         * so a fallback still sees the caller's buffers untouched). */
        memcpy(rbuf, sbuf, bytes);
    }
    rc = mca_coll_topoar_run_host(m, call, rbuf, dtype, op, comm);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    mca_coll_topoar_count(m, comm, bytes, call->plan_algorithm, TOPOAR_PATH_HOST);
    return OMPI_SUCCESS;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* A turn of auto's small-message contest (coll_topoar_trial_calls): the
 * previous module's or one of topoar's plans, timed either way; at the
 * contest's last call the engine has the ranks agree (collective). */
static int trial_turn(mca_coll_topoar_module_t *m, const topoar_call_t *call, const void *sbuf, void *rbuf,
                      int count, ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm,
                      size_t bytes)
{
    double t0 = now_seconds();
    int rc = call->hand_down ? mca_coll_topoar_fallback(m, call->why, sbuf, rbuf, count, dtype, op, comm)
                             : run_prepared(m, call, sbuf, rbuf, dtype, op, comm, bytes);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (TOPOAR_OK != topoar_engine_trial_done(m->engine, call, now_seconds() - t0)) {
        return mca_coll_topoar_failed(m, comm, "small-message trial");
    }
    print_notice(m, comm, "");
    return OMPI_SUCCESS;
}

int mca_coll_topoar_allreduce(const void *sbuf, void *rbuf, mca_coll_topoar_count_t count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_topoar_module_t *m = (mca_coll_topoar_module_t *) module;
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;

    if (MCA_COLL_TOPOAR_COUNT_TOO_BIG(count)) { /* main's size_t counts beyond int: whole to the previous module */
        mca_coll_topoar_bump(&m->fallback);
        mca_coll_topoar_set_last(TOPOAR_LAST_FALLBACK, TOPOAR_PATH_HAND_DOWN);
        return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
    }

    /* GPU path on: device buffers must never reach host code (not even the
     * previous module, which would memcpy them).  One pointer query per
     * buffer; with check_mem_type every call goes there to agree. */
    if (NULL != cm->gpu) {
        int s_dev = MPI_IN_PLACE != sbuf && TOPOAR_CUDA_MEM_DEVICE == cm->gpu->mem_type(sbuf);
        int r_dev = TOPOAR_CUDA_MEM_DEVICE == cm->gpu->mem_type(rbuf);
        if (s_dev || r_dev || cm->check_mem_type) {
            return mca_coll_topoar_gpu_allreduce(m, sbuf, rbuf, (int) count, dtype, op, comm, s_dev, r_dev);
        }
    }
    return mca_coll_topoar_allreduce_host(m, sbuf, rbuf, (int) count, dtype, op, comm);
}

int mca_coll_topoar_allreduce_host(mca_coll_topoar_module_t *m, const void *sbuf, void *rbuf, int count,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm)
{
    const char *why;
    ptrdiff_t lb, extent;
    size_t bytes;
    int rc;
    topoar_call_t call;

    /* auto on one host without rules: every call goes to the previous
     * module, with nothing in between but the counters. */
    if (NULL != m->hand_down_all) {
        return mca_coll_topoar_fallback(m, m->hand_down_all, sbuf, rbuf, count, dtype, op, comm);
    }
    why = mca_coll_topoar_ineligible(count, dtype, op);
    if (NULL == why && ompi_comm_size(comm) < 2) {
        why = "one rank"; /* only taken for device buffers (GPU path) */
    }
    if (NULL != why) {
        return mca_coll_topoar_fallback(m, why, sbuf, rbuf, count, dtype, op, comm);
    }
    if (TOPOAR_STATE_NEW == m->state) {
        mca_coll_topoar_setup(m, comm);
        if (NULL != m->hand_down_all) { /* set up without an engine (one host, auto) */
            return mca_coll_topoar_fallback(m, m->hand_down_all, sbuf, rbuf, count, dtype, op, comm);
        }
    }
    if (TOPOAR_STATE_READY != m->state) {
        return mca_coll_topoar_fallback(m, "topoar is off on this communicator (set-up or an earlier call failed)",
                                        sbuf, rbuf, count, dtype, op, comm);
    }

    ompi_datatype_get_extent(dtype, &lb, &extent);
    bytes = (size_t) count * (size_t) extent;
    /* The one question per call: hand down, or which plan.  Answered before
     * any copy or progress bookkeeping (auto on one host goes straight to
     * the previous module; measured: docs/performance.md, node4). */
    rc = topoar_engine_prepare(m->engine, (size_t) count, (size_t) extent, TOPOAR_MEM_HOST, &call);
    if (TOPOAR_ERR_UNSUPPORTED == rc) {
        /* Decided before any message moved, identically on every rank. */
        return mca_coll_topoar_fallback(m, topoar_engine_error(m->engine), sbuf, rbuf, count, dtype, op, comm);
    }
    if (TOPOAR_OK != rc) {
        return mca_coll_topoar_failed(m, comm, "prepare");
    }
    if (call.trial) {
        return trial_turn(m, &call, sbuf, rbuf, count, dtype, op, comm, bytes);
    }
    if (call.hand_down) {
        return mca_coll_topoar_fallback(m, call.why, sbuf, rbuf, count, dtype, op, comm);
    }
    return run_prepared(m, &call, sbuf, rbuf, dtype, op, comm, bytes);
}
