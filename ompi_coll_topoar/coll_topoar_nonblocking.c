/*
 * topoar's nonblocking and persistent allreduce: MPI_Iallreduce and
 * MPIX_Allreduce_init / MPI_Allreduce_init run topoar's plans as
 * operations (topoar_op_t) advanced from a progress callback.
 *
 *   requests   derive from Open MPI's nbc request (the MPI binding writes
 *              the op and datatype it retains into it); start, free and
 *              cancel as the standard says (cancel is erroneous for
 *              collectives: MPI_ERR_REQUEST; free of an active request
 *              lets it complete and frees it then).
 *   tags       one per operation, reserved from the communicator's
 *              nonblocking tags when the call is made (the same counter
 *              libnbc takes its tags from, so the order agrees on every
 *              rank); persistent requests reserve theirs at init.
 *   progress   one callback registered when first needed; cheap when
 *              nothing is active (one relaxed load); a trylock makes it
 *              safe against recursion and threads; it advances every
 *              running operation one pass, in start order.
 *   set-up     a communicator whose first allreduce is nonblocking (or a
 *              persistent init) starts its set-up as a nonblocking
 *              allgather of the rank records (the previous module's, at
 *              the call); the calls made meanwhile wait in order and are
 *              run by topoar when it completes (in progress, or in a
 *              blocking call, which completes it first).  No probes run
 *              there: the links come from a file, Slurm,
 *              coll_topoar_node_link, else they are assumed, and auto's
 *              contests wait; the first blocking allreduce on the
 *              communicator sets it up again from the same records with
 *              probes and contests (mca_coll_topoar_setup_complete).
 *              Until that blocking call every nonblocking call is topoar's
 *              (m->nb_provisional): ranks see the set-up complete at
 *              different calls, so what it decided (auto on one host hands
 *              calls down, a settings mismatch turns topoar off) holds only
 *              from a call every rank reaches in the same place.
 *   device     buffers in device memory are staged through host memory
 *              (copied in at the call, out at completion) when the
 *              communicator has an engine; else the call runs blocking
 *              through the device path and returns a completed request.
 *
 * Nonblocking calls are never timed: no contest turn, no online
 * adaptation (TOPOAR_PREPARE_NONBLOCKING).
 */
#include "coll_topoar.h"
#include "coll_topoar_ops.h"
#include "topoar_cuda.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/request/request.h"

enum { PHASE_IDLE = 0, PHASE_PENDING = 1, PHASE_RUNNING = 2 };
enum { kPassesPerProgress = 8 };

typedef struct mca_coll_topoar_request_t {
    ompi_coll_base_nbc_request_t super;
    struct mca_coll_topoar_request_t *next; /* in the active list */
    mca_coll_topoar_module_t *m;            /* retained */
    ompi_communicator_t *comm;              /* retained */
    topoar_op_t *op;                        /* NULL: not prepared yet */
    mca_coll_topoar_pml_ctx_t pctx;
    mca_coll_topoar_reduce_ctx_t rctx;
    topoar_transport_t transport;
    topoar_reducer_t reducer;
    const void *sbuf;
    void *rbuf;
    int count;
    ompi_datatype_t *dtype;
    struct ompi_op_t *mop;
    size_t extent, bytes;
    void *stage;     /* host copy of device buffers, or NULL */
    bool device;     /* sbuf or rbuf in device memory: staged */
    int phase;       /* PHASE_*, under the lock */
    bool free_when_done;
    bool retained_op;
    /* Device buffers topoar cannot stage here (a one-host communicator
     * handed down without an engine) and the previous module may not
     * take: each start runs the blocking device path and completes. */
    bool blocking;
    unsigned long long *counter; /* ihandled or phandled */
} mca_coll_topoar_request_t;

/* A set-up in flight: this rank's record, everyone's (by the allgather). */
struct mca_coll_topoar_nb_setup {
    mca_coll_topoar_config_t conf;
    topoar_rank_info_t mine;
    topoar_rank_info_t *all;
    ompi_request_t *req; /* NULL: the records came with a blocking call (gather_first_call) */
    mca_coll_topoar_module_t *m;
    ompi_communicator_t *comm;
    bool by_blocking; /* started by a blocking call, which (or the next) completes it */
    bool parked;      /* by_blocking, arrived, nothing waits: no longer counted in nb.active */
    struct mca_coll_topoar_nb_setup *next;
};

/* Process-wide: the running and pending requests (start order) and the
 * set-ups in flight, under one lock; `active` counts both and is read
 * without it. */
static struct {
    pthread_mutex_t lock;
    int active;
    int remote; /* of active: on communicators that span hosts */
    bool registered;
    bool polling; /* raised opal_progress's event users */
    mca_coll_topoar_request_t *head, *tail;
    struct mca_coll_topoar_nb_setup *setups;
} nb = {PTHREAD_MUTEX_INITIALIZER, 0, 0, false, false, NULL, NULL, NULL};

static int nb_progress(void);
static topoar_engine_t *engine_from_records(ompi_communicator_t *comm, const topoar_config_t *conf,
                                            const topoar_rank_info_t *all, const char **why);

static void req_construct(mca_coll_topoar_request_t *r)
{
    r->next = NULL;
    r->m = NULL;
    r->comm = NULL;
    r->op = NULL;
    r->stage = NULL;
    r->device = false;
    r->phase = PHASE_IDLE;
    r->free_when_done = false;
    r->retained_op = false;
    r->blocking = false;
    r->counter = NULL;
}

static OBJ_CLASS_INSTANCE(mca_coll_topoar_request_t, ompi_coll_base_nbc_request_t, req_construct, NULL);

/* ---- the active list (under nb.lock) -------------------------------------- */

/* Every change of nb.active (a request on the list, a set-up in flight)
 * goes through here: the progress callback is registered when first
 * needed, and the event library is polled on every progress call while
 * anything is active on a communicator that spans hosts (TCP sockets then
 * need no tick to be read), as a blocking call there does once it has gone
 * idle.  Within one host (m->all_local) messages arrive through shared
 * memory, which every progress call reads, and a poll() per call only
 * slowed them: a communicator split on one host, whose context id is
 * agreed by nonblocking allreduces on the parent, took 12-13 us against
 * 7-10 without the polling (docs/performance.md, "The latency floor"). */
static void active_add(int delta, const mca_coll_topoar_module_t *m)
{
    __atomic_store_n(&nb.active, nb.active + delta, __ATOMIC_RELAXED);
    if (!m->all_local) {
        nb.remote += delta;
    }
    if (!nb.registered && nb.active > 0) {
        nb.registered = OPAL_SUCCESS == opal_progress_register(nb_progress);
    }
    if (nb.remote > 0 && !nb.polling) {
        opal_progress_event_users_increment();
        nb.polling = true;
    } else if (0 == nb.remote && nb.polling) {
        opal_progress_event_users_decrement();
        nb.polling = false;
    }
}

static void list_append(mca_coll_topoar_request_t *r)
{
    r->next = NULL;
    if (NULL == nb.tail) {
        nb.head = nb.tail = r;
    } else {
        nb.tail->next = r;
        nb.tail = r;
    }
    active_add(1, r->m);
}

/* Takes r off the list (a walk: few operations are outstanding). */
static void list_remove(mca_coll_topoar_request_t *r)
{
    mca_coll_topoar_request_t *prev = NULL, *q = nb.head;
    while (q != NULL && q != r) {
        prev = q;
        q = q->next;
    }
    if (NULL == q) {
        return;
    }
    if (NULL == prev) {
        nb.head = r->next;
    } else {
        prev->next = r->next;
    }
    if (nb.tail == r) {
        nb.tail = prev;
    }
    r->next = NULL;
    active_add(-1, r->m);
}

/* ---- requests ------------------------------------------------------------- */

static void req_release(mca_coll_topoar_request_t *r)
{
    topoar_op_destroy(r->op);
    r->op = NULL;
    free(r->stage);
    r->stage = NULL;
    if (r->retained_op) {
        OBJ_RELEASE(r->mop);
    }
    OBJ_RELEASE(r->m);
    OBJ_RELEASE(r->comm);
    OMPI_REQUEST_FINI(&r->super.super);
    OBJ_RELEASE(r);
}

/* Copies between the caller's device buffer and the host stage. */
static int stage_copy(void *dst, const void *src, size_t bytes)
{
    const struct topoar_cuda_api *g = mca_coll_topoar_component.gpu;
    if (NULL == g || 0 != g->memcpy_async(dst, src, bytes, NULL) || 0 != g->default_stream_sync()) {
        return MPI_ERR_INTERN;
    }
    return OMPI_SUCCESS;
}

/* Ends a run: the result out of the stage, the status, MPI completion.
 * Under the lock, r already off the list.  A request freed while active is
 * released here (after the lock: *release set). */
static void finish(mca_coll_topoar_request_t *r, int rc, const char *what, bool *release)
{
    if (OMPI_SUCCESS != rc) {
        opal_output(0, "coll:topoar: %s: nonblocking allreduce of %d x %s failed (%s): %s", r->comm->c_name,
                    r->count, r->dtype->name, what, r->op ? topoar_op_error(r->op) : "");
    }
    if (OMPI_SUCCESS == rc && r->device) {
        rc = stage_copy(r->rbuf, r->stage, r->bytes);
    }
    r->phase = PHASE_IDLE;
    if (!r->super.super.req_persistent) {
        topoar_op_destroy(r->op); /* its memory goes now, not at MPI_Wait */
        r->op = NULL;
    }
    r->super.super.req_status.MPI_ERROR = rc;
    /* Completed even when freed while active: the MPI binding's completion
     * callback (releasing what it retained) runs either way. */
    ompi_request_complete(&r->super.super, !r->free_when_done);
    *release = r->free_when_done;
}

/* Prepares r's operation on its module's engine (state READY, or FAILED
 * with the engine a failed nonblocking set-up left for the calls it had
 * queued). */
static int prepare_on(mca_coll_topoar_request_t *r, topoar_engine_t *engine, int flags, int *route)
{
    topoar_call_t call;
    int rc;
    *route = TOPOAR_ROUTE_NONE;
    if (NULL == engine) {
        return MPI_ERR_INTERN;
    }
    rc = topoar_engine_prepare(engine, (size_t) r->count, r->extent, TOPOAR_MEM_HOST,
                               flags | TOPOAR_PREPARE_NONBLOCKING, &call);
    if (TOPOAR_ERR_UNSUPPORTED == rc) {
        /* decided alike on every rank (a forced algorithm that cannot run
         * host calls, ...): the previous module's, like a blocking call */
        *route = TOPOAR_ROUTE_HAND_DOWN;
        opal_output_verbose(50, mca_coll_topoar_component.output, "coll:topoar: %s: nonblocking: %s",
                            r->comm->c_name, topoar_engine_error(engine));
        return OMPI_SUCCESS;
    }
    if (TOPOAR_OK != rc) {
        opal_output_verbose(1, mca_coll_topoar_component.output, "coll:topoar: %s: nonblocking prepare: %s",
                            r->comm->c_name, topoar_engine_error(engine));
        return MPI_ERR_INTERN;
    }
    *route = call.route;
    if (TOPOAR_ROUTE_HOST != call.route) {
        return OMPI_SUCCESS; /* the caller hands it down */
    }
    r->op = topoar_engine_op_create(engine, &call, &r->transport, &r->reducer);
    if (NULL == r->op) {
        return MPI_ERR_NO_MEM;
    }
    opal_output_verbose(50, mca_coll_topoar_component.output, "coll:topoar: %s: %s of %d x %s by topoar (%s)",
                        r->comm->c_name, r->super.super.req_persistent ? "persistent allreduce" : "iallreduce",
                        r->count, r->dtype->name, topoar_algorithm_name(call.plan_algorithm));
    return OMPI_SUCCESS;
}

static int prepare_op(mca_coll_topoar_request_t *r, int flags, int *route)
{
    return prepare_on(r, r->m->engine, flags, route);
}

/* A call made while the communicator's set-up by a nonblocking call is
 * provisional (m->nb_provisional): topoar's, whatever the set-up decided;
 * with the default settings' plan when the settings cannot plan it.
 * Under the lock. */
static int prepare_provisional(mca_coll_topoar_request_t *r)
{
    mca_coll_topoar_module_t *m = r->m;
    int route = TOPOAR_ROUTE_NONE, rc;
    if (NULL == m->engine && NULL != m->nb_kept && NULL != m->nb_records &&
        TOPOAR_STATE_READY == __atomic_load_n(&m->state, __ATOMIC_ACQUIRE)) {
        /* The records arrived with nothing waiting (a set-up a blocking
         * call started: the engine was left to the call that completes it);
         * this call needs it now.  From the same records and settings as
         * finish_setup would have built it; the completing call sets it up
         * again with I/O. */
        const char *why = NULL;
        m->engine = engine_from_records(r->comm, &m->nb_kept->conf.cfg, m->nb_records, &why);
        free(m->nb_kept);
        m->nb_kept = NULL;
        if (NULL == m->engine) {
            opal_output_verbose(1, mca_coll_topoar_component.output, "coll:topoar: %s: nonblocking set-up: %s",
                                r->comm->c_name, why ? why : "?");
        }
    }
    rc = prepare_op(r, TOPOAR_PREPARE_NO_HAND_DOWN, &route);
    if (OMPI_SUCCESS == rc && NULL == r->op && TOPOAR_ROUTE_HAND_DOWN == route) {
        if (NULL == m->nb_defaults && NULL != m->nb_records) {
            const char *why = NULL;
            m->nb_defaults = engine_from_records(r->comm, NULL, m->nb_records, &why);
        }
        rc = prepare_on(r, m->nb_defaults, TOPOAR_PREPARE_NO_HAND_DOWN, &route);
    }
    if (OMPI_SUCCESS == rc && NULL == r->op) {
        rc = MPI_ERR_INTERN;
    }
    return rc;
}

/* Starts r's operation on its data (under the lock, r on the list):
 * running, or finished at once (nothing to move, or a failure). */
static void run(mca_coll_topoar_request_t *r, bool *release)
{
    void *work = r->device ? r->stage : r->rbuf;
    int rc = topoar_op_start(r->op, work);
    if (TOPOAR_OK != rc) {
        list_remove(r);
        finish(r, MPI_ERR_INTERN, "start", release);
        return;
    }
    r->phase = PHASE_RUNNING;
    mca_coll_topoar_bump(r->counter);
}

/* ---- the nonblocking set-up ------------------------------------------------ */

/* The engine from every rank's records, without probes; NULL on failure
 * (*why says).  conf NULL: the defaults. */
static topoar_engine_t *engine_from_records(ompi_communicator_t *comm, const topoar_config_t *conf,
                                            const topoar_rank_info_t *all, const char **why)
{
    topoar_config_t none = {0, NULL, NULL};
    topoar_engine_t *e = topoar_engine_create(ompi_comm_rank(comm), ompi_comm_size(comm), conf ? conf : &none);
    if (NULL == e) {
        *why = "out of memory";
        return NULL;
    }
    if (TOPOAR_OK != topoar_engine_setup(e, all)) {
        *why = topoar_engine_error(e);
        /* the text lives in the engine: said before it goes */
        opal_output_verbose(1, mca_coll_topoar_component.output, "coll:topoar: %s: nonblocking set-up: %s",
                            comm->c_name, *why);
        *why = "the engine's set-up failed";
        topoar_engine_destroy(e);
        return NULL;
    }
    return e;
}

/* Whether a call of m waits in the queue for its set-up (under the lock). */
static bool has_pending(const mca_coll_topoar_module_t *m)
{
    for (const mca_coll_topoar_request_t *r = nb.head; r != NULL; r = r->next) {
        if (r->m == m && PHASE_PENDING == r->phase) {
            return true;
        }
    }
    return false;
}

topoar_engine_t *mca_coll_topoar_nb_take_engine(mca_coll_topoar_module_t *m, ompi_communicator_t *comm)
{
    struct mca_coll_topoar_nb_setup *s = m->nb_kept;
    topoar_engine_t *e = NULL;
    if (NULL != s) {
        e = topoar_engine_create(ompi_comm_rank(comm), ompi_comm_size(comm), &s->conf.cfg);
        m->nb_kept = NULL;
        free(s);
    }
    return e;
}

/* The allgather completed (under the lock): the engine, the calls queued
 * meanwhile prepared and started in their order, then the state.  Every
 * rank decides alike from the same records: settings that must agree but
 * differ, or a set-up that fails, leave the communicator to the previous
 * module (FAILED), and the queued calls run with an engine of the default
 * settings over the same records.
 *
 * Any thread's progress may run this while the communicator's own thread
 * waits in a blocking call (mca_coll_topoar_setup_wait), which leaves its
 * loop, without the lock, as soon as it sees the state change and then
 * prepares and runs on m->engine, which is not thread-safe.  So the state
 * is published last, after this function's last use of the engine: before
 * that, a blocking call here found "the call is not the last one prepared
 * on this engine", failed with truncated messages or hung (tests/mpi/
 * test_threads --nb-first). */
static void finish_setup(struct mca_coll_topoar_nb_setup *s, mca_coll_topoar_request_t **released)
{
    mca_coll_topoar_module_t *m = s->m;
    ompi_communicator_t *comm = s->comm;
    struct mca_coll_topoar_nb_setup **pp;
    mca_coll_topoar_request_t *r, *next;
    const char *why = NULL;
    int bad_param = -1, bad_rank = -1, rc, state;
    topoar_engine_t *e = NULL;
    bool failed = false, lazy = s->by_blocking && !has_pending(m);

    for (pp = &nb.setups; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    if (!s->parked) {
        active_add(-1, m);
    }
    rc = NULL == s->req ? OMPI_SUCCESS : ompi_request_wait(&s->req, MPI_STATUS_IGNORE); /* complete: frees it */
    if (OMPI_SUCCESS != rc) {
        why = "the allgather of rank data failed";
    } else if (topoar_settings_mismatch(s->all, ompi_comm_size(comm), &bad_param, &bad_rank)) {
        topoar_param_info_t p;
        failed = true;
        why = "settings differ across ranks";
        if (TOPOAR_OK == topoar_param_info(bad_param, &p) && ompi_comm_rank(comm) == bad_rank) {
            opal_output(0, "coll:topoar: set-up failed on %s: coll_topoar_%s differs between rank 0 and rank %d; "
                        "using the previous allreduce on this communicator", comm->c_name, p.name, bad_rank);
        }
    } else if (lazy) {
        /* nothing waits for the engine: the completing call builds it */
    } else if (NULL == (e = engine_from_records(comm, &s->conf.cfg, s->all, &why))) {
        failed = true;
    }
    if (failed && !lazy) {
        e = engine_from_records(comm, NULL, s->all, &why); /* for the queued calls only */
    }
    m->engine = e;
    m->hand_down_all = NULL;
    if (NULL != e && !failed) {
        (void) topoar_engine_hands_down_all(e, &m->hand_down_all);
    }
    state = (NULL != e || (lazy && NULL == why)) && !failed ? TOPOAR_STATE_READY : TOPOAR_STATE_FAILED;
    if (0 == ompi_comm_rank(comm)) {
        if (TOPOAR_STATE_READY == state && lazy) {
            opal_output_verbose(20, mca_coll_topoar_component.output,
                                "coll:topoar: %s (%d ranks): the ranks' records arrived (set-up started by a blocking "
                                "allreduce, which or the next completes it)", comm->c_name, ompi_comm_size(comm));
        } else if (TOPOAR_STATE_READY == state) {
            if (mca_coll_topoar_component.verbose >= 10) { /* the description is built text */
                opal_output_verbose(10, mca_coll_topoar_component.output,
                                    "coll:topoar: %s (%d ranks) set up by a nonblocking call (no link probes):\n%s",
                                    comm->c_name, ompi_comm_size(comm), topoar_engine_describe(e));
            }
        } else {
            opal_output_verbose(1, mca_coll_topoar_component.output,
                                "coll:topoar: %s: nonblocking set-up failed (%s); the previous module takes "
                                "later calls", comm->c_name, why ? why : "?");
        }
    }
    /* The records stay until the first blocking allreduce (the set-up's
     * completion; the defaults' engine for calls the settings cannot plan). */
    m->nb_records = s->all;
    /* The calls queued meanwhile, in their order. */
    for (r = nb.head; r != NULL; r = next) {
        bool release = false;
        next = r->next;
        if (r->m != m || PHASE_PENDING != r->phase) {
            continue;
        }
        rc = NULL == e ? MPI_ERR_INTERN : prepare_provisional(r);
        if (OMPI_SUCCESS != rc || NULL == r->op) {
            list_remove(r);
            finish(r, OMPI_SUCCESS != rc ? rc : MPI_ERR_INTERN, why ? why : "prepare", &release);
        } else {
            run(r, &release);
        }
        if (release) { /* freed while queued, and done: released after the lock */
            r->next = *released;
            *released = r;
        }
    }
    /* Last (see above): a blocking call waiting for it may use m->engine
     * from now on. */
    m->nb_setup = NULL;
    if (lazy && TOPOAR_STATE_READY == state) {
        s->all = NULL; /* m->nb_records */
        m->nb_kept = s;
        s = NULL;
    }
    __atomic_store_n(&m->state, state, __ATOMIC_RELEASE);
    free(s);
    OBJ_RELEASE(comm); /* retained by start_setup: the module may go now */
    OBJ_RELEASE(m);
}

/* A set-up still in flight when its communicator is freed (a deferred first
 * call and no second one: coll_topoar_deferred_setup) is completed there,
 * so no request outlives the communicator: MPI_Comm_free is collective, and
 * every member started the same allgather.  An attribute whose deletion
 * does it; not copied by MPI_Comm_dup. */
static int drain_setup(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    mca_coll_topoar_module_t *m = (mca_coll_topoar_module_t *) attr;
    (void) keyval;
    (void) extra;
    if (TOPOAR_STATE_SETTING_UP == __atomic_load_n(&m->state, __ATOMIC_ACQUIRE)) {
        mca_coll_topoar_setup_wait(m, comm);
    }
    OBJ_RELEASE(m); /* retained with the attribute */
    return MPI_SUCCESS;
}

/* A keyval of its own for each communicator, freed at once: it lives as
 * long as its attribute, so nothing is left at MPI_Finalize.  Not under
 * nb.lock: MPI_Comm_free may hold the attributes' lock when it calls
 * drain_setup, which takes nb.lock. */
static void drain_at_free(mca_coll_topoar_module_t *m, ompi_communicator_t *comm)
{
    int keyval = MPI_KEYVAL_INVALID;
    if (MPI_SUCCESS != PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, drain_setup, &keyval, NULL)) {
        return;
    }
    OBJ_RETAIN(m);
    if (MPI_SUCCESS != PMPI_Comm_set_attr(comm, keyval, m)) {
        OBJ_RELEASE(m);
    }
    (void) PMPI_Comm_free_keyval(&keyval);
}

/* Starts the set-up of a communicator spanning hosts: the allgather of the
 * rank records, by the previous module's nonblocking allgather (now, at
 * the call: its tag is taken in the call's order).  Under the lock. */
static int start_setup(mca_coll_topoar_module_t *m, ompi_communicator_t *comm, bool by_blocking)
{
    struct mca_coll_topoar_nb_setup *s;
    int rc;
    if (NULL == comm->c_coll->coll_iallgather) {
        return OMPI_ERR_NOT_SUPPORTED;
    }
    s = (struct mca_coll_topoar_nb_setup *) calloc(1, sizeof(*s));
    if (NULL == s) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    s->all = (topoar_rank_info_t *) calloc((size_t) ompi_comm_size(comm), sizeof(*s->all));
    if (NULL == s->all) {
        free(s);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mca_coll_topoar_local_info(&s->conf, &s->mine);
    s->m = m;
    s->comm = comm;
    s->by_blocking = by_blocking;
    rc = comm->c_coll->coll_iallgather(&s->mine, (int) sizeof(s->mine), MPI_BYTE, s->all, (int) sizeof(s->mine),
                                       MPI_BYTE, comm, &s->req, comm->c_coll->coll_iallgather_module);
    if (OMPI_SUCCESS != rc) {
        free(s->all);
        free(s);
        return rc;
    }
    s->next = nb.setups;
    nb.setups = s;
    m->nb_setup = s;
    m->nb_provisional = true;
    OBJ_RETAIN(m); /* a persistent request that started it may be freed, and its communicator, before it ends */
    OBJ_RETAIN(comm);
    __atomic_store_n(&m->state, TOPOAR_STATE_SETTING_UP, __ATOMIC_RELEASE);
    active_add(1, m);
    opal_output_verbose(20, mca_coll_topoar_component.output,
                        "coll:topoar: %s: set-up started as a nonblocking allgather of the ranks' records",
                        comm->c_name);
    return OMPI_SUCCESS;
}

/* At most this many bytes of data beyond a member's own cross the
 * network per member in a gathered first call: the records travel anyway
 * (hundreds of bytes each), so small data adds little to the allgather.
 * A constant: the choice must not depend on settings (a rank whose
 * settings differ must take part in the same allgather). */
enum { kGatherExtraBytes = 8192 };

bool mca_coll_topoar_gathers_first_call(ompi_communicator_t *comm, size_t bytes)
{
    size_t n = (size_t) ompi_comm_size(comm);
    return n >= 2 && bytes <= kGatherExtraBytes / (n - 1);
}

static size_t round16(size_t x)
{
    return (x + 15) & ~(size_t) 15;
}

int mca_coll_topoar_nb_gather_first_call(mca_coll_topoar_module_t *m, ompi_communicator_t *comm, const void *sbuf,
                                         void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         size_t extent)
{
    size_t n = (size_t) ompi_comm_size(comm), bytes = (size_t) count * extent;
    /* a member's block: its data, then its record, each 16-byte aligned */
    size_t data = round16(bytes), unit = data + round16(sizeof(topoar_rank_info_t));
    struct mca_coll_topoar_nb_setup *s = NULL;
    mca_coll_topoar_request_t *released = NULL, *next;
    char *mine = NULL, *blocks = NULL;
    int rc = OMPI_ERR_OUT_OF_RESOURCE;

    if (unit > (size_t) INT_MAX) {
        return OMPI_ERR_NOT_SUPPORTED; /* not reached: gathers_first_call bounds the data */
    }
    s = (struct mca_coll_topoar_nb_setup *) calloc(1, sizeof(*s));
    mine = (char *) calloc(1, unit);
    blocks = (char *) malloc(n * unit);
    if (NULL != s) {
        s->all = (topoar_rank_info_t *) calloc(n, sizeof(*s->all));
    }
    if (NULL == s || NULL == mine || NULL == blocks || NULL == s->all) {
        goto out;
    }
    mca_coll_topoar_local_info(&s->conf, &s->mine);
    if (bytes > 0) {
        memcpy(mine, MPI_IN_PLACE == sbuf ? rbuf : sbuf, bytes);
    }
    memcpy(mine + data, &s->mine, sizeof(s->mine));
    rc = comm->c_coll->coll_allgather(mine, (int) unit, MPI_BYTE, blocks, (int) unit, MPI_BYTE, comm,
                                      comm->c_coll->coll_allgather_module);
    if (OMPI_SUCCESS != rc) {
        goto out;
    }
    /* The result: every member's data in rank order, alike on every member. */
    if (bytes > 0) {
        memcpy(rbuf, blocks, bytes);
        for (size_t i = 1; i < n; ++i) {
            mca_coll_topoar_reduce_local(m, dtype, op, extent, blocks + i * unit, rbuf, (size_t) count);
        }
    }
    for (size_t i = 0; i < n; ++i) {
        memcpy(&s->all[i], blocks + i * unit + data, sizeof(s->all[i]));
    }
    /* The records have arrived, as a nonblocking allgather's would: the
     * settings are checked, and the next blocking call (or a nonblocking
     * one, which needs the engine first) completes the set-up. */
    s->m = m;
    s->comm = comm;
    s->by_blocking = true;
    s->parked = true; /* never counted as active */
    OBJ_RETAIN(m);
    OBJ_RETAIN(comm);
    pthread_mutex_lock(&nb.lock);
    m->nb_setup = s;
    m->nb_provisional = true;
    __atomic_store_n(&m->state, TOPOAR_STATE_SETTING_UP, __ATOMIC_RELEASE);
    finish_setup(s, &released); /* frees or keeps s */
    s = NULL;
    pthread_mutex_unlock(&nb.lock);
    for (; released != NULL; released = next) { /* none: nothing could wait for this set-up */
        next = released->next;
        req_release(released);
    }
out:
    if (NULL != s) {
        free(s->all);
        free(s);
    }
    free(mine);
    free(blocks);
    return rc;
}

int mca_coll_topoar_nb_start_setup(mca_coll_topoar_module_t *m, ompi_communicator_t *comm)
{
    int rc = OMPI_SUCCESS;
    bool started = false;
    pthread_mutex_lock(&nb.lock);
    if (TOPOAR_STATE_NEW == m->state) {
        rc = start_setup(m, comm, true);
        started = OMPI_SUCCESS == rc;
    }
    pthread_mutex_unlock(&nb.lock);
    if (started) {
        drain_at_free(m, comm);
    }
    return rc;
}

void mca_coll_topoar_setup_wait(mca_coll_topoar_module_t *m, ompi_communicator_t *comm)
{
    (void) comm;
    while (TOPOAR_STATE_SETTING_UP == __atomic_load_n(&m->state, __ATOMIC_ACQUIRE)) {
        mca_coll_topoar_request_t *released = NULL, *next;
        pthread_mutex_lock(&nb.lock);
        if (NULL != m->nb_setup && REQUEST_COMPLETE(m->nb_setup->req)) {
            finish_setup(m->nb_setup, &released);
        }
        pthread_mutex_unlock(&nb.lock);
        for (; released != NULL; released = next) {
            next = released->next;
            req_release(released);
        }
        if (TOPOAR_STATE_SETTING_UP == __atomic_load_n(&m->state, __ATOMIC_ACQUIRE)) {
            opal_progress();
        }
    }
}

/* ---- progress --------------------------------------------------------------- */

static int nb_progress(void)
{
    mca_coll_topoar_request_t *r, *next, *done_head = NULL;
    struct mca_coll_topoar_nb_setup *s, *snext;
    int completed = 0;

    if (0 == __atomic_load_n(&nb.active, __ATOMIC_RELAXED)) {
        return 0;
    }
    if (0 != pthread_mutex_trylock(&nb.lock)) {
        return 0; /* another thread is at it, or this one further up */
    }
    for (s = nb.setups; s != NULL; s = snext) {
        snext = s->next;
        if (!REQUEST_COMPLETE(s->req)) {
            continue;
        }
        /* One a blocking call started is finished by the call that
         * completes it (mca_coll_topoar_setup_wait), not inside another
         * call's progress; once arrived it no longer keeps every progress
         * call polling (a communicator may sit unused for long). */
        if (!s->by_blocking || has_pending(s->m)) {
            finish_setup(s, &done_head);
        } else if (!s->parked) {
            s->parked = true;
            active_add(-1, s->m);
        }
    }
    for (r = nb.head; r != NULL; r = next) {
        int done = 0, rc;
        bool release = false;
        next = r->next;
        if (PHASE_RUNNING != r->phase) {
            continue;
        }
        /* Passes while they find work (what a pass posted may be done at
         * once: eager sends, messages already there), as a blocking call
         * does between its progress calls; a few at most, so other work
         * of this progress call is not held up. */
        for (int pass = 0; pass < kPassesPerProgress; ++pass) {
            int moved = 0;
            rc = topoar_op_advance(r->op, &done, &moved);
            if (TOPOAR_OK != rc || done || !moved) {
                break;
            }
        }
        if (TOPOAR_OK != rc || done) {
            list_remove(r);
            finish(r, TOPOAR_OK == rc ? OMPI_SUCCESS : MPI_ERR_INTERN, "run", &release);
            ++completed;
            if (release) { /* freed while active: released after the lock */
                r->next = done_head;
                done_head = r;
            }
        }
    }
    pthread_mutex_unlock(&nb.lock);
    for (r = done_head; r != NULL; r = next) {
        next = r->next;
        req_release(r);
    }
    return completed;
}

/* ---- request callbacks -------------------------------------------------------- */

static int req_free(ompi_request_t **rp)
{
    mca_coll_topoar_request_t *r = (mca_coll_topoar_request_t *) *rp;
    bool now;
    pthread_mutex_lock(&nb.lock);
    now = PHASE_IDLE == r->phase;
    if (!now) {
        r->free_when_done = true; /* completes in the background, freed then */
    }
    pthread_mutex_unlock(&nb.lock);
    if (now) {
        req_release(r);
    }
    *rp = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

/* Cancelling a collective is erroneous (MPI 4.0, 3.8.4). */
static int req_cancel(ompi_request_t *req, int complete)
{
    (void) req;
    (void) complete;
    return MPI_ERR_REQUEST;
}

/* A run of r on the caller's data: the input into place (rbuf or the
 * stage), then started now, or queued behind the set-up. */
static int begin(mca_coll_topoar_request_t *r)
{
    bool release = false;
    int rc = OMPI_SUCCESS;
    if (r->device) {
        rc = stage_copy(r->stage, MPI_IN_PLACE == r->sbuf ? r->rbuf : r->sbuf, r->bytes);
    } else if (MPI_IN_PLACE != r->sbuf && r->sbuf != r->rbuf) {
        memcpy(r->rbuf, r->sbuf, r->bytes);
    }
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    r->super.super.req_status.MPI_ERROR = OMPI_SUCCESS;
    r->super.super.req_complete = REQUEST_PENDING;
    r->super.super.req_state = OMPI_REQUEST_ACTIVE;
    pthread_mutex_lock(&nb.lock);
    if (NULL == r->op && TOPOAR_STATE_SETTING_UP != r->m->state) {
        /* a persistent request made during a set-up, started after it */
        int route = TOPOAR_ROUTE_NONE;
        rc = r->m->nb_provisional ? prepare_provisional(r) : prepare_op(r, TOPOAR_PREPARE_NO_HAND_DOWN, &route);
        if (OMPI_SUCCESS == rc && NULL == r->op) {
            opal_output(0, "coll:topoar: %s: a persistent allreduce made while the communicator was being set "
                        "up cannot run with these settings (coll_topoar_allreduce_algorithm?); made after the "
                        "first completed allreduce it goes to the previous module", r->comm->c_name);
            rc = OMPI_ERR_NOT_SUPPORTED;
        }
        if (OMPI_SUCCESS != rc) {
            pthread_mutex_unlock(&nb.lock);
            r->super.super.req_complete = REQUEST_COMPLETED;
            r->super.super.req_state = OMPI_REQUEST_INACTIVE;
            return rc;
        }
    }
    list_append(r);
    if (NULL == r->op) {
        r->phase = PHASE_PENDING;
    } else {
        run(r, &release); /* a failure completes it with the error */
    }
    pthread_mutex_unlock(&nb.lock);
    return OMPI_SUCCESS;
}

static int req_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; ++i) {
        mca_coll_topoar_request_t *r = (mca_coll_topoar_request_t *) requests[i];
        int rc;
        if (PHASE_IDLE != r->phase) {
            return MPI_ERR_REQUEST;
        }
        if (r->blocking) {
            r->super.super.req_complete = REQUEST_PENDING;
            r->super.super.req_state = OMPI_REQUEST_ACTIVE;
            rc = mca_coll_topoar_allreduce(r->sbuf, r->rbuf, r->count, r->dtype, r->mop, r->comm, &r->m->super);
            r->super.super.req_status.MPI_ERROR = rc;
            mca_coll_topoar_bump(&r->m->pfallback);
            ompi_request_complete(&r->super.super, false);
            continue;
        }
        rc = begin(r);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

static mca_coll_topoar_request_t *req_new(mca_coll_topoar_module_t *m, ompi_communicator_t *comm, const void *sbuf,
                                          void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                                          bool persistent, bool device)
{
    ptrdiff_t lb, extent;
    mca_coll_topoar_request_t *r = OBJ_NEW(mca_coll_topoar_request_t);
    if (NULL == r) {
        return NULL;
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);
    r->extent = (size_t) extent;
    r->bytes = (size_t) count * (size_t) extent;
    if (device) {
        r->stage = malloc(r->bytes ? r->bytes : 1);
        if (NULL == r->stage) {
            OBJ_RELEASE(r);
            return NULL;
        }
        r->device = true;
    }
    OMPI_REQUEST_INIT(&r->super.super, persistent);
    r->super.super.req_type = OMPI_REQUEST_COLL;
    r->super.super.req_mpi_object.comm = comm;
    r->super.super.req_free = req_free;
    r->super.super.req_cancel = req_cancel;
    r->super.super.req_start = req_start;
    r->m = m;
    OBJ_RETAIN(m);
    r->comm = comm;
    OBJ_RETAIN(comm);
    r->sbuf = sbuf;
    r->rbuf = rbuf;
    r->count = count;
    r->dtype = dtype;
    r->mop = op;
    if (persistent) {
        /* Open MPI 4.1's binding retains nothing for persistent requests;
         * ours holds the op until the request is freed. */
        OBJ_RETAIN(op);
        r->retained_op = true;
    }
    r->counter = persistent ? &m->phandled : &m->ihandled;
    r->pctx.comm = comm;
    r->pctx.idle = 0;
    r->pctx.polling = false;
    r->pctx.local = m->all_local;
    r->pctx.tag = ompi_coll_base_nbc_reserve_tags(comm, 1);
    mca_coll_topoar_pml_transport(&r->pctx, &r->transport);
    mca_coll_topoar_host_reducer(&r->rctx, dtype, op, r->extent, &r->reducer);
    return r;
}

/* ---- the entries -------------------------------------------------------------- */

/* Why topoar does not take this nonblocking call (the previous module does),
 * or NULL; *device set for device buffers. */
static const char *decline(mca_coll_topoar_module_t *m, const void *sbuf, void *rbuf, int count,
                           ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm, bool *device)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    const char *why = mca_coll_topoar_ineligible(count, dtype, op);
    *device = false;
    if (NULL != why) {
        return why;
    }
    if (NULL != cm->gpu) {
        *device = (MPI_IN_PLACE != sbuf && TOPOAR_CUDA_MEM_DEVICE == cm->gpu->mem_type(sbuf)) ||
                  TOPOAR_CUDA_MEM_DEVICE == cm->gpu->mem_type(rbuf);
        if (*device && cm->cuda_aware) {
            return "device buffers, CUDA-aware previous module";
        }
    }
    if (ompi_comm_size(comm) < 2) {
        return "one rank";
    }
    if (m->nb_provisional) {
        return NULL; /* until the first blocking allreduce: topoar's (make()) */
    }
    switch (__atomic_load_n(&m->state, __ATOMIC_ACQUIRE)) {
    case TOPOAR_STATE_NEW:
        /* Set up by this call, without blocking (make(), start_setup()):
         * on one host too, so every rank does the same whatever its
         * settings (a difference is found in the gathered records). */
        return NULL;
    case TOPOAR_STATE_FAILED:
        return "topoar is off on this communicator (set-up or an earlier call failed)";
    case TOPOAR_STATE_READY:
        if (NULL != m->hand_down_all) {
            return m->hand_down_all;
        }
        return NULL;
    default:
        return NULL;
    }
}

/* Makes r's operation (state READY) or queues it (set-up in flight or to
 * start); *hand_down: the engine's route gives the call to the previous
 * module after all. */
static int make(mca_coll_topoar_request_t *r, bool *hand_down)
{
    mca_coll_topoar_module_t *m = r->m;
    int rc = OMPI_SUCCESS, route = TOPOAR_ROUTE_NONE;
    bool started = false;
    *hand_down = false;
    pthread_mutex_lock(&nb.lock);
    if (TOPOAR_STATE_NEW == m->state) {
        rc = start_setup(m, r->comm, false);
        started = OMPI_SUCCESS == rc;
    } else if (m->nb_provisional) {
        if (TOPOAR_STATE_SETTING_UP != m->state) {
            rc = prepare_provisional(r);
        } /* else queued: prepared when the set-up completes */
    } else if (TOPOAR_STATE_READY == m->state) {
        rc = prepare_op(r, r->device ? TOPOAR_PREPARE_NO_HAND_DOWN : 0, &route);
        if (OMPI_SUCCESS == rc && TOPOAR_ROUTE_HOST != route) {
            *hand_down = true;
        }
    }
    pthread_mutex_unlock(&nb.lock);
    if (started) {
        drain_at_free(m, r->comm);
    }
    return rc;
}

/* Device buffers the previous module may not take and topoar does not
 * stage here: the blocking device path, and a request already complete. */
static int device_blocking(mca_coll_topoar_module_t *m, const void *sbuf, void *rbuf, int count,
                           ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm,
                           ompi_request_t **request, const char *why)
{
    mca_coll_topoar_request_t *r;
    int rc = mca_coll_topoar_allreduce(sbuf, rbuf, count, dtype, op, comm, &m->super);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    r = req_new(m, comm, sbuf, rbuf, 0, dtype, op, false, false);
    if (NULL == r) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    r->super.super.req_status.MPI_ERROR = OMPI_SUCCESS;
    ompi_request_complete(&r->super.super, false);
    *request = &r->super.super;
    mca_coll_topoar_bump(&m->ifallback);
    opal_output_verbose(50, mca_coll_topoar_component.output,
                        "coll:topoar: %s: iallreduce of %d x %s on device buffers ran blocking (%s)", comm->c_name,
                        count, dtype->name, why);
    return OMPI_SUCCESS;
}

static int hand_down(mca_coll_topoar_module_t *m, const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                     struct ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request, const char *why)
{
    if (NULL == m->previous_iallreduce) {
        return OMPI_ERR_NOT_SUPPORTED;
    }
    mca_coll_topoar_bump(&m->ifallback);
    opal_output_verbose(50, mca_coll_topoar_component.output,
                        "coll:topoar: %s: iallreduce of %d x %s passed down (%s)", comm->c_name, count, dtype->name,
                        why);
    return m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request, m->previous_iallreduce_module);
}

int mca_coll_topoar_iallreduce(const void *sbuf, void *rbuf, mca_coll_topoar_count_t count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    mca_coll_topoar_module_t *m = (mca_coll_topoar_module_t *) module;
    mca_coll_topoar_request_t *r;
    bool device = false, down = false;
    const char *why;
    int rc;

    if (MCA_COLL_TOPOAR_COUNT_TOO_BIG(count)) { /* main's size_t counts beyond int: whole to the previous module */
        mca_coll_topoar_bump(&m->ifallback);
        return m->previous_iallreduce ? m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                                               m->previous_iallreduce_module)
                                      : OMPI_ERR_NOT_SUPPORTED;
    }
    why = decline(m, sbuf, rbuf, (int) count, dtype, op, comm, &device);
    if (NULL != why) {
        return device && !mca_coll_topoar_component.cuda_aware
                   ? device_blocking(m, sbuf, rbuf, (int) count, dtype, op, comm, request, why)
                   : hand_down(m, sbuf, rbuf, (int) count, dtype, op, comm, request, why);
    }
    r = req_new(m, comm, sbuf, rbuf, (int) count, dtype, op, false, device);
    if (NULL == r) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    rc = make(r, &down);
    if (OMPI_SUCCESS == rc && down) {
        req_release(r);
        return device ? device_blocking(m, sbuf, rbuf, (int) count, dtype, op, comm, request, "auto's route")
                      : hand_down(m, sbuf, rbuf, (int) count, dtype, op, comm, request, "auto's route");
    }
    if (OMPI_SUCCESS == rc) {
        rc = begin(r);
    }
    if (OMPI_SUCCESS != rc) {
        req_release(r);
        return rc;
    }
    *request = &r->super.super;
    return OMPI_SUCCESS;
}

int mca_coll_topoar_allreduce_init(const void *sbuf, void *rbuf, mca_coll_topoar_count_t count,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                   ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_topoar_module_t *m = (mca_coll_topoar_module_t *) module;
    mca_coll_topoar_request_t *r;
    bool device = false, hand_down = false;
    const char *why = MCA_COLL_TOPOAR_COUNT_TOO_BIG(count) ? "count beyond int"
                      : decline(m, sbuf, rbuf, (int) count, dtype, op, comm, &device);
    int rc;

    if (NULL != why && device && !mca_coll_topoar_component.cuda_aware) {
        /* The previous module must not see these buffers: every start runs
         * the blocking device path. */
        r = req_new(m, comm, sbuf, rbuf, (int) count, dtype, op, true, false);
        if (NULL == r) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        r->blocking = true;
        opal_output_verbose(50, mca_coll_topoar_component.output,
                            "coll:topoar: %s: persistent allreduce of %d x %s on device buffers: each start runs "
                            "the blocking device path (%s)", comm->c_name, (int) count, dtype->name, why);
        *request = &r->super.super;
        return OMPI_SUCCESS;
    }
    if (NULL == why) {
        r = req_new(m, comm, sbuf, rbuf, (int) count, dtype, op, true, device);
        if (NULL == r) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        rc = make(r, &hand_down);
        if (OMPI_SUCCESS != rc) {
            req_release(r);
            return rc;
        }
        if (!hand_down) {
            *request = &r->super.super;
            return OMPI_SUCCESS;
        }
        req_release(r);
        why = "auto's route";
    }
    if (NULL == m->previous_allreduce_init) {
        return OMPI_ERR_NOT_SUPPORTED;
    }
    mca_coll_topoar_bump(&m->pfallback);
    opal_output_verbose(50, mca_coll_topoar_component.output,
                        "coll:topoar: %s: persistent allreduce of %d x %s passed down (%s)", comm->c_name,
                        (int) count, dtype->name, why);
    return m->previous_allreduce_init(sbuf, rbuf, count, dtype, op, comm, info, request,
                                      m->previous_allreduce_init_module);
}

void mca_coll_topoar_nonblocking_close(void)
{
    pthread_mutex_lock(&nb.lock);
    if (nb.registered) {
        (void) opal_progress_unregister(nb_progress);
        nb.registered = false;
    }
    if (nb.polling) {
        opal_progress_event_users_decrement();
        nb.polling = false;
    }
    pthread_mutex_unlock(&nb.lock);
}
