/*
 * topoar's transport callbacks: the PML point-to-point transport and the
 * local reduction the engine runs a prepared call with, and running one
 * (host memory: the caller's buffer or a staging copy).
 */
#include "coll_topoar.h"
#include "coll_topoar_ops.h"
#include "topoar_reduce.h"

#include <limits.h>

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"

/* The transport's context: the communicator, and how many times this call
 * has found nothing to do.  A call starts without making opal_progress poll
 * the event library on every pass: the TCP BTL's sockets are still polled at
 * the progress engine's tick, as for tuned, and a poll() per pass made small
 * calls across hosts up to a third slower at some sizes, within noise at
 * others (docs/performance.md, "What mattered").  A call
 * that has gone idle kPollAfterIdle times asks for every-pass polling for the
 * rest of the call, so a long wait on TCP (a connection being set up, a
 * congested link) never waits for the tick.  Not within one host: there
 * the peers' messages arrive through shared memory, which every pass
 * reads, and a poll() per pass (a system call, and a clock read before it)
 * only delays seeing them (docs/performance.md, "The latency floor"). */
typedef mca_coll_topoar_pml_ctx_t pml_ctx_t;

enum { kPollAfterIdle = 64 };

static int pml_isend(void *ctx, const void *buf, size_t bytes, int peer, void **req)
{
    return MCA_PML_CALL(isend(buf, bytes, MPI_BYTE, peer, ((pml_ctx_t *) ctx)->tag,
                              MCA_PML_BASE_SEND_STANDARD, ((pml_ctx_t *) ctx)->comm,
                              (ompi_request_t **) req));
}

/* Synchronous: complete once the receiver matched it; the executor's sends
 * across hosts under the flight bound (exec/schedule_policy.hpp,
 * kMinSendCredit). */
static int pml_issend(void *ctx, const void *buf, size_t bytes, int peer, void **req)
{
    return MCA_PML_CALL(isend(buf, bytes, MPI_BYTE, peer, ((pml_ctx_t *) ctx)->tag,
                              MCA_PML_BASE_SEND_SYNCHRONOUS, ((pml_ctx_t *) ctx)->comm,
                              (ompi_request_t **) req));
}

static int pml_irecv(void *ctx, void *buf, size_t bytes, int peer, void **req)
{
    return MCA_PML_CALL(irecv(buf, bytes, MPI_BYTE, peer, ((pml_ctx_t *) ctx)->tag,
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

static void pml_progress(void *ctx);

/* The fast path's wait for a round's requests.  It drives progress itself,
 * with the executor's polling rule (pml_progress: every-pass polling of
 * the event library only after kPollAfterIdle passes found nothing), not
 * through ompi_request_wait_all, which never asks for it: across hosts a
 * round's TCP message then waited for the progress engine's tick.  On an
 * error every request still posted is cancelled and completed, so none
 * outlives the call. */
static int pml_wait_all(void *ctx, int n, void **reqs)
{
    ompi_request_t **r = (ompi_request_t **) reqs;
    int k = 0, rc;
    while (k < n) {
        if (REQUEST_COMPLETE(r[k])) {
            ++k;
        } else {
            pml_progress(ctx);
        }
    }
    rc = ompi_request_wait_all((size_t) n, r, MPI_STATUSES_IGNORE); /* all complete: frees them */
    if (OMPI_SUCCESS != rc) {
        for (int i = 0; i < n; ++i) {
            if (MPI_REQUEST_NULL != r[i]) {
                (void) pml_cancel(ctx, &reqs[i]);
            }
        }
    }
    return rc;
}

static void pml_cancel_quietly(void *ctx, void **req)
{
    (void) pml_cancel(ctx, req);
}

static void pml_progress(void *ctx)
{
    pml_ctx_t *c = (pml_ctx_t *) ctx;
    if (!c->polling && !c->local && ++c->idle >= kPollAfterIdle) {
        opal_progress_event_users_increment();
        c->polling = true;
    }
    opal_progress();
}

typedef mca_coll_topoar_reduce_ctx_t reduce_ctx_t;

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

void mca_coll_topoar_pml_transport(mca_coll_topoar_pml_ctx_t *ctx, topoar_transport_t *out)
{
    topoar_transport_t t = {ctx, pml_isend, pml_irecv, pml_wait, pml_test, pml_progress, pml_cancel, pml_issend};
    *out = t;
}

void mca_coll_topoar_host_reducer(mca_coll_topoar_reduce_ctx_t *ctx, ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  size_t extent, topoar_reducer_t *out)
{
    ctx->op = op;
    ctx->dtype = dtype;
    ctx->extent = extent;
    ctx->own = mca_coll_topoar_op_ids(dtype, op, &ctx->redop, &ctx->redtype);
    out->ctx = ctx;
    out->reduce = op_reduce;
}

/* The local reduction of the module's blocking calls (one at a time on a
 * communicator): the (dtype, op) lookup is made again only when they
 * change. */
static reduce_ctx_t *blocking_reducer(mca_coll_topoar_module_t *m, ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      size_t extent, topoar_reducer_t *out)
{
    reduce_ctx_t *r = &m->blocking_reduce;
    if (r->op != op || r->dtype != dtype || r->extent != extent) {
        mca_coll_topoar_host_reducer(r, dtype, op, extent, out);
        r->may_differ = mca_coll_topoar_previous_may_differ(dtype, op, extent);
    }
    out->ctx = r;
    out->reduce = op_reduce;
    return r;
}

int mca_coll_topoar_blocking_may_differ(mca_coll_topoar_module_t *m, ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        size_t extent)
{
    topoar_reducer_t reducer;
    return blocking_reducer(m, dtype, op, extent, &reducer)->may_differ;
}

void mca_coll_topoar_reduce_local(mca_coll_topoar_module_t *m, ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  size_t extent, const void *in, void *inout, size_t count)
{
    topoar_reducer_t reducer;
    reduce_ctx_t *r = blocking_reducer(m, dtype, op, extent, &reducer);
    op_reduce(r, in, inout, count);
}

int mca_coll_topoar_run_fast(mca_coll_topoar_module_t *m, const topoar_call_t *call, void *rbuf,
                             ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm)
{
    pml_ctx_t pctx = {comm, 0, false, m->all_local, MCA_COLL_BASE_TAG_ALLREDUCE};
    const topoar_fast_transport_t transport = {&pctx, pml_isend, pml_irecv, pml_wait_all, pml_cancel_quietly};
    topoar_reducer_t reducer;
    const reduce_ctx_t *r = blocking_reducer(m, dtype, op, call->elem_size, &reducer);
    int rc;
    rc = topoar_engine_run_fast(m->engine, call, rbuf, &transport, r->own ? r->redop : -1, r->own ? r->redtype : -1,
                                &reducer);
    if (pctx.polling) {
        opal_progress_event_users_decrement();
    }
    if (TOPOAR_OK != rc) {
        return mca_coll_topoar_failed(m, comm, "run");
    }
    return OMPI_SUCCESS;
}

int mca_coll_topoar_run_host(mca_coll_topoar_module_t *m, const topoar_call_t *call, void *rbuf,
                             ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm)
{
    int rc;
    topoar_reducer_t reducer;
    pml_ctx_t pctx = {comm, 0, false, m->all_local, MCA_COLL_BASE_TAG_ALLREDUCE};
    topoar_transport_t transport;

    mca_coll_topoar_pml_transport(&pctx, &transport);
    (void) blocking_reducer(m, dtype, op, call->elem_size, &reducer);
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
    mca_coll_topoar_print_notice(m, comm); /* online adaptation, the large-message check */
    return OMPI_SUCCESS;
}
