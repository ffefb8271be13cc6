/*
 * topoar's MPI_Barrier on communicators that span hosts: this rank's
 * steps from the engine (common/planners/planner_barrier.hpp: in along
 * each host's binomial tree, across among the hosts' first ranks, out
 * down the tree; zero-byte messages), walked over the PML.
 *
 * Which barrier runs is decided alike on every rank: topoar's only once
 * the layout is made, by the first blocking allreduce that runs with
 * topoar set up (mca_coll_topoar_barrier_arm, the same call on every
 * rank); before that, when the layout cannot be made (no host level), or
 * with coll_topoar_barrier never (then the module takes no barrier at
 * all), the previous module's.  With auto (the default) that call also
 * times both and keeps the faster: fewer messages cross hosts in
 * topoar's, but it has more steps in a row (in, across, out), and where
 * the hosts' links are about as fast as the ranks within a host (or the
 * cores are shared) the previous module's flat one can be faster; no
 * formula of ours knows that as well as a stopwatch does.
 */
#include "coll_topoar.h"

#include <float.h>
#include <time.h>

#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"
#include "opal/util/output.h"

static int send0(int peer, struct ompi_communicator_t *comm)
{
    return MCA_PML_CALL(send(NULL, 0, MPI_BYTE, peer, MCA_COLL_BASE_TAG_BARRIER, MCA_PML_BASE_SEND_STANDARD, comm));
}

static int recv0(int peer, struct ompi_communicator_t *comm)
{
    return MCA_PML_CALL(recv(NULL, 0, MPI_BYTE, peer, MCA_COLL_BASE_TAG_BARRIER, comm, MPI_STATUS_IGNORE));
}

static int run_barrier(const mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm)
{
    int rc = OMPI_SUCCESS;

    for (int k = 0; k < m->bar_nsteps && OMPI_SUCCESS == rc; ++k) {
        const topoar_barrier_step_t *s = &m->bar_steps[k];
        ompi_request_t *req = MPI_REQUEST_NULL;
        switch (s->kind) {
        case TOPOAR_BARRIER_SEND: rc = send0(s->to, comm); break;
        case TOPOAR_BARRIER_RECV: rc = recv0(s->from, comm); break;
        default: /* TOPOAR_BARRIER_EXCHANGE */
            rc = MCA_PML_CALL(irecv(NULL, 0, MPI_BYTE, s->from, MCA_COLL_BASE_TAG_BARRIER, comm, &req));
            if (OMPI_SUCCESS != rc) {
                break;
            }
            rc = send0(s->to, comm);
            if (OMPI_SUCCESS != rc) {
                (void) ompi_request_cancel(req);
                (void) ompi_request_wait(&req, MPI_STATUS_IGNORE);
                break;
            }
            rc = ompi_request_wait(&req, MPI_STATUS_IGNORE);
            break;
        }
    }
    return rc;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* coll_topoar_barrier auto: times `trial` barriers of each kind in four
 * interleaved blocks (the previous module's first in even blocks, topoar's
 * first in odd ones); per rank each kind's best block (its mean per
 * barrier), then the slowest rank's, which the previous module's
 * allreduce gives every rank alike.  us[0]: the previous module's, us[1]:
 * topoar's, in microseconds. */
static int time_both(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm, int trial, double us[2])
{
    const int blocks = trial < 4 ? trial : 4;
    double best[2] = {DBL_MAX, DBL_MAX};
    int rc;

    for (int b = 0; b < blocks; ++b) {
        const int per = trial / blocks + (b < trial % blocks ? 1 : 0);
        for (int k = 0; k < 2; ++k) {
            const int kind = (b & 1) ? 1 - k : k;
            const double t0 = now();
            for (int j = 0; j < per; ++j) {
                rc = kind ? run_barrier(m, comm) : m->previous_barrier(comm, m->previous_barrier_module);
                if (OMPI_SUCCESS != rc) {
                    return rc;
                }
            }
            const double t = (now() - t0) / per;
            if (t < best[kind]) {
                best[kind] = t;
            }
        }
    }
    rc = m->previous_allreduce(best, us, 2, MPI_DOUBLE, MPI_MAX, comm, m->previous_allreduce_module);
    us[0] *= 1e6;
    us[1] *= 1e6;
    return rc;
}

void mca_coll_topoar_barrier_arm(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm)
{
    if (0 != m->bar_armed) {
        return;
    }
    m->bar_armed = -1;
    if (NULL == m->previous_barrier || NULL == m->engine) {
        return;
    }
    if (TOPOAR_OK != topoar_engine_barrier_steps(m->engine, m->bar_steps, &m->bar_nsteps, &m->bar_hosts) ||
        m->bar_hosts < 2) {
        opal_output_verbose(20, mca_coll_topoar_component.output,
                            "coll:topoar: %s: MPI_Barrier stays the previous module's (%s)", comm->c_name,
                            1 == m->bar_hosts ? "one host" : topoar_engine_error(m->engine));
        return;
    }
    const char *scheme = 0 == (m->bar_hosts & (m->bar_hosts - 1)) ? "pairwise exchange" : "dissemination";
    const int trial = mca_coll_topoar_component.barrier_trial;
    const int timed = TOPOAR_BARRIER_AUTO == mca_coll_topoar_component.barrier && trial > 0;
    if (timed) {
        const int kept = topoar_engine_barrier_kept(m->engine);
        if (TOPOAR_BARRIER_KEPT_NONE != kept) {
            /* Settled on an earlier communicator of this shape, held alike. */
            if (0 == ompi_comm_rank(comm)) {
                opal_output_verbose(20, mca_coll_topoar_component.output,
                                    "coll:topoar: %s: MPI_Barrier: %s, as timed on an earlier communicator of "
                                    "this shape", comm->c_name,
                                    TOPOAR_BARRIER_KEPT_TOPOAR == kept ? "topoar's runs" : "the previous module's stays");
            }
            if (TOPOAR_BARRIER_KEPT_TOPOAR != kept) {
                return;
            }
        } else {
            double us[2];
            const int rc = time_both(m, comm, trial, us);
            if (OMPI_SUCCESS != rc) {
                /* A failed message: the communicator is broken; the previous
                 * module's barrier reports what follows. */
                opal_output(0, "coll:topoar: %s: timing MPI_Barrier failed on rank %d (error %d): the previous "
                               "module's barrier stays", comm->c_name, ompi_comm_rank(comm), rc);
                return;
            }
            const int wins = us[1] < us[0];
            if (0 == ompi_comm_rank(comm)) {
                opal_output_verbose(20, mca_coll_topoar_component.output,
                                    "coll:topoar: %s: MPI_Barrier timed (%d of each, slowest rank's best block): "
                                    "topoar's %.1f us, the previous module's %.1f us: %s",
                                    comm->c_name, trial, us[1], us[0],
                                    wins ? "topoar's runs" : "the previous module's stays");
            }
            topoar_engine_keep_barrier(m->engine, wins ? TOPOAR_BARRIER_KEPT_TOPOAR : TOPOAR_BARRIER_KEPT_PREVIOUS);
            if (!wins) {
                return;
            }
        }
    }
    m->bar_armed = 1;
    if (0 == ompi_comm_rank(comm)) {
        opal_output_verbose(20, mca_coll_topoar_component.output,
                            "coll:topoar: %s: MPI_Barrier is topoar's: %d hosts, their first ranks in a %s%s",
                            comm->c_name, m->bar_hosts, scheme,
                            timed ? "" : " (untimed)");
    }
}

int mca_coll_topoar_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_topoar_module_t *m = (mca_coll_topoar_module_t *) module;
    int rc;

    if (1 != m->bar_armed) {
        mca_coll_topoar_bump(&m->bfallback);
        return m->previous_barrier(comm, m->previous_barrier_module);
    }
    rc = run_barrier(m, comm);
    if (OMPI_SUCCESS != rc) {
        opal_output(0, "coll:topoar: %s: MPI_Barrier failed on rank %d (error %d)", comm->c_name,
                    ompi_comm_rank(comm), rc);
        return rc;
    }
    mca_coll_topoar_bump(&m->bhandled);
    return OMPI_SUCCESS;
}
