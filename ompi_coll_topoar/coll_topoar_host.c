/*
 * topoar's host call: MPI_Allreduce on host buffers -- eligibility, the
 * lazy collective set-up, one question to the engine (the call's route) and
 * a switch on its answer.
 */
#include "coll_topoar.h"
#include "coll_topoar_ops.h"

#include <string.h>
#include <time.h>

#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"

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
    rc = call->fast ? mca_coll_topoar_run_fast(m, call, rbuf, dtype, op, comm)
                    : mca_coll_topoar_run_host(m, call, rbuf, dtype, op, comm);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    mca_coll_topoar_count(m, comm, bytes, call->plan_algorithm, call->route);
    return OMPI_SUCCESS;
}

/* A turn of auto's small-message contest (coll_topoar_trial_calls): the
 * previous module's or one of topoar's plans, timed either way; at the
 * contest's last call the engine has the ranks agree (collective).  Also the
 * previous module's turn in the large-message model check (CHECK_DOWN). */
static int contest_turn(mca_coll_topoar_module_t *m, const topoar_call_t *call, const void *sbuf, void *rbuf,
                      int count, ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm,
                      size_t bytes)
{
    double t0 = mca_coll_topoar_now();
    int rc;
    if (TOPOAR_ROUTE_CONTEST_DOWN == call->route || TOPOAR_ROUTE_CHECK_DOWN == call->route) {
        rc = mca_coll_topoar_fallback(m, call->why, sbuf, rbuf, count, dtype, op, comm);
        mca_coll_topoar_set_last_path(call->route);
    } else {
        rc = run_prepared(m, call, sbuf, rbuf, dtype, op, comm, bytes);
    }
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (TOPOAR_OK != topoar_engine_trial_done(m->engine, call, mca_coll_topoar_now() - t0)) {
        return mca_coll_topoar_failed(m, comm, "small-message trial");
    }
    mca_coll_topoar_print_notice(m, comm);
    return OMPI_SUCCESS;
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

    /* Set up by a nonblocking call: this first blocking call completes
     * the set-up (coll_topoar_nonblocking.c). */
    if (m->nb_provisional) {
        mca_coll_topoar_nb_end_provisional(m, comm);
    }
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
    ompi_datatype_get_extent(dtype, &lb, &extent);
    bytes = (size_t) count * (size_t) extent;
    if (TOPOAR_STATE_NEW == m->state) {
        int outcome = 0;
        const bool one_host = m->all_local;
        if (!one_host && mca_coll_topoar_gathers_first_call(comm, bytes)) {
            /* Across hosts, little data: the records travel with it, in one
             * allgather every member makes whatever its settings (decided
             * from the call and the size of comm), and every member reduces
             * the data itself; the next call completes the set-up (or this
             * one, coll_topoar_deferred_setup 0, once the records showed
             * every rank has the same settings). */
            double t0 = mca_coll_topoar_now();
            rc = mca_coll_topoar_nb_gather_first_call(m, comm, sbuf, rbuf, count, dtype, op, (size_t) extent);
            if (OMPI_SUCCESS != rc) {
                m->state = TOPOAR_STATE_FAILED;
                opal_output(0, "coll:topoar: %s: the first allreduce (with the ranks' records) failed on rank %d; "
                            "topoar is off on this communicator", comm->c_name, ompi_comm_rank(comm));
                return rc;
            }
            mca_coll_topoar_bump(&m->handled);
            mca_coll_topoar_set_last_path(TOPOAR_ROUTE_HOST);
            if (0 == ompi_comm_rank(comm)) {
                opal_output_verbose(20, mca_coll_topoar_component.output,
                                    "coll:topoar: %s: first call of %d x %s with the ranks' records (one allgather, "
                                    "reduced by every rank): %.1f us", comm->c_name, count, dtype->name,
                                    1e6 * (mca_coll_topoar_now() - t0));
            }
            if (TOPOAR_STATE_READY == __atomic_load_n(&m->state, __ATOMIC_ACQUIRE) &&
                !mca_coll_topoar_setup_deferred()) {
                mca_coll_topoar_nb_end_provisional(m, comm);
            }
            return OMPI_SUCCESS;
        }
        if (!one_host) {
            /* Across hosts: every member starts the nonblocking allgather
             * of the ranks' records (coll_topoar_nonblocking.c) first, so a
             * member that decided otherwise (its settings differ) is not
             * left waiting for it.  A small first call then goes to the
             * previous module while the records travel (not when that
             * module's result could differ from topoar's own: 8- and
             * 16-bit integer sums with op/avx), and the next call completes
             * the set-up; otherwise this call completes it and runs.  With
             * no nonblocking allgather on the communicator (no libnbc:
             * alike on every member) the blocking set-up runs; any other
             * failure to start is memory's, and leaves topoar off. */
            double t0 = mca_coll_topoar_now(), t1;
            rc = mca_coll_topoar_nb_start_setup(m, comm);
            t1 = mca_coll_topoar_now();
            if (OMPI_SUCCESS == rc) {
                if (mca_coll_topoar_defers_first_call(
                        bytes, 0 != mca_coll_topoar_blocking_may_differ(m, dtype, op, (size_t) extent))) {
                    rc = mca_coll_topoar_fallback(m, "set-up under way (coll_topoar_deferred_setup)", sbuf, rbuf,
                                                  count, dtype, op, comm);
                    if (0 == ompi_comm_rank(comm)) {
                        opal_output_verbose(20, mca_coll_topoar_component.output,
                                            "coll:topoar: %s: first call beside the set-up: %.1f us to start it, "
                                            "%.1f us for the call", comm->c_name, 1e6 * (t1 - t0),
                                            1e6 * (mca_coll_topoar_now() - t1));
                    }
                    return rc;
                }
                mca_coll_topoar_nb_end_provisional(m, comm);
                outcome = 1;
            } else if (OMPI_ERR_NOT_SUPPORTED != rc) {
                m->state = TOPOAR_STATE_FAILED;
                outcome = 1;
            }
        } else if (!m->one_host_checked && NULL == mca_coll_topoar_component.gpu) {
            /* The first call within one host (coll_topoar_module.c): a
             * member that hands down runs it while the agreement travels. */
            mca_coll_topoar_one_host_t c;
            (void) mca_coll_topoar_one_host_start(m, comm, &c);
            if (NULL != c.why) {
                rc = mca_coll_topoar_fallback(m, c.why, sbuf, rbuf, count, dtype, op, comm);
                (void) mca_coll_topoar_one_host_finish(m, comm, &c);
                return rc;
            }
            outcome = mca_coll_topoar_one_host_finish(m, comm, &c);
        }
        if (0 == outcome) { /* not decided above: set-up (which agrees first within one host) */
            mca_coll_topoar_setup(m, comm);
        }
        if (NULL != m->hand_down_all) { /* set up without an engine (one host, auto) */
            return mca_coll_topoar_fallback(m, m->hand_down_all, sbuf, rbuf, count, dtype, op, comm);
        }
        if (TOPOAR_STATE_NEW == m->state) { /* one host, the ranks' settings differ */
            return mca_coll_topoar_fallback(m, "the ranks' settings differ (set up at the next call)", sbuf, rbuf,
                                            count, dtype, op, comm);
        }
    }
    if (TOPOAR_STATE_READY != m->state) {
        return mca_coll_topoar_fallback(m, "topoar is off on this communicator (set-up or an earlier call failed)",
                                        sbuf, rbuf, count, dtype, op, comm);
    }
    if (0 == m->bar_armed) { /* the barrier's layout: this call, alike on every rank */
        mca_coll_topoar_barrier_arm(m, comm);
    }

    /* The one question per call: hand down, or which plan.  Answered before
     * any copy or progress bookkeeping (auto on one host goes straight to
     * the previous module; measured: docs/performance.md, node4). */
    rc = topoar_engine_prepare(m->engine, (size_t) count, (size_t) extent, TOPOAR_MEM_HOST,
                               mca_coll_topoar_blocking_may_differ(m, dtype, op, (size_t) extent)
                                   ? TOPOAR_PREPARE_OWN_RESULT_ONLY : 0,
                               &call);
    if (TOPOAR_ERR_UNSUPPORTED == rc) {
        /* Decided before any message moved, identically on every rank. */
        return mca_coll_topoar_fallback(m, topoar_engine_error(m->engine), sbuf, rbuf, count, dtype, op, comm);
    }
    if (TOPOAR_OK != rc) {
        return mca_coll_topoar_failed(m, comm, "prepare");
    }
    switch (call.route) {
    case TOPOAR_ROUTE_HOST:
        return run_prepared(m, &call, sbuf, rbuf, dtype, op, comm, bytes);
    case TOPOAR_ROUTE_HAND_DOWN:
        return mca_coll_topoar_fallback(m, call.why, sbuf, rbuf, count, dtype, op, comm);
    case TOPOAR_ROUTE_CONTEST_HOST:
    case TOPOAR_ROUTE_CONTEST_DOWN:
    case TOPOAR_ROUTE_CHECK_DOWN:
        return contest_turn(m, &call, sbuf, rbuf, count, dtype, op, comm, bytes);
    default:
        opal_output(0, "coll:topoar: %s: a host call cannot take the route %s", comm->c_name,
                    topoar_route_name(call.route));
        return MPI_ERR_INTERN;
    }
}
