/*
 * topoar's MPI_T variables and logging: the performance variables (proof of
 * who ran a call), the per-call counters and the once-per-size-class log,
 * run-time notices and the report of a failed call.
 */
#include "coll_topoar.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"

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

/* The module behind the communicator's allreduce if it is topoar's (by its
 * class), else NULL. */
static mca_coll_topoar_module_t *pvar_module(void *obj)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) obj;
    mca_coll_base_module_t *b;
    if (NULL == comm || ompi_comm_invalid(comm) || NULL == comm->c_coll) {
        return NULL;
    }
    b = comm->c_coll->coll_allreduce_module;
    if (NULL == b || b->super.obj_class != OBJ_CLASS(mca_coll_topoar_module_t)) {
        return NULL;
    }
    return (mca_coll_topoar_module_t *) b;
}

/* The per-communicator counters, by their offset in the module. */
static int pvar_get_counter(const mca_base_pvar_t *pvar, void *value, void *obj)
{
    mca_coll_topoar_module_t *m = pvar_module(obj);
    size_t offset = (size_t) (uintptr_t) pvar->ctx;
    *(unsigned long long *) value =
        m ? mca_coll_topoar_read((const unsigned long long *) ((const char *) m + offset)) : 0;
    return OMPI_SUCCESS;
}

static const struct {
    const char *name, *help;
    size_t offset;
} counters[] = {
    {"allreduce_handled", "MPI_Allreduce calls on this communicator executed by topoar itself",
     offsetof(mca_coll_topoar_module_t, handled)},
    {"allreduce_fallback", "MPI_Allreduce calls on this communicator handed to the previous coll module",
     offsetof(mca_coll_topoar_module_t, fallback)},
    {"iallreduce_handled", "MPI_Iallreduce calls on this communicator executed by topoar itself",
     offsetof(mca_coll_topoar_module_t, ihandled)},
    {"iallreduce_fallback", "MPI_Iallreduce calls on this communicator handed to the previous coll module",
     offsetof(mca_coll_topoar_module_t, ifallback)},
    {"allreduce_init_handled",
     "Starts of persistent allreduce requests on this communicator executed by topoar itself",
     offsetof(mca_coll_topoar_module_t, phandled)},
    {"allreduce_init_fallback",
     "Persistent allreduce requests on this communicator handed to the previous coll module (counted "
     "once, at init; a request on device buffers whose starts run the blocking device path counts at "
     "every start)",
     offsetof(mca_coll_topoar_module_t, pfallback)},
    {"barrier_handled", "MPI_Barrier calls on this communicator executed by topoar itself (coll_topoar_barrier)",
     offsetof(mca_coll_topoar_module_t, bhandled)},
    {"barrier_fallback", "MPI_Barrier calls on this communicator handed to the previous coll module",
     offsetof(mca_coll_topoar_module_t, bfallback)},
};

int mca_coll_topoar_register_pvars(void)
{
    const mca_base_component_t *c = &mca_coll_topoar_component.super.collm_version;
    int rc;

    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); ++i) {
        rc = mca_base_component_pvar_register(
            c, counters[i].name, counters[i].help, OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_MPI_COMM,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, pvar_get_counter, NULL, pvar_notify,
            (void *) (uintptr_t) counters[i].offset);
        if (rc < 0) {
            return rc;
        }
    }
    /* Plain int, no MPI_T enum: Open MPI 4.1.4's ompi_info crashes while
     * printing a performance variable that has one.  The values are listed
     * in the description, from the engine's algorithm table (tools read
     * the names from there). */
    {
        static char desc[2048];
        size_t len;
        int count = topoar_algorithm_count();
        len = (size_t) snprintf(desc, sizeof(desc),
                                "Algorithm of the most recent MPI_Allreduce in this process: 0 none");
        for (int i = 1; i < count && len < sizeof(desc); ++i) {
            len += (size_t) snprintf(desc + len, sizeof(desc) - len, ", %d %s", i, topoar_algorithm_name(i));
        }
        if (len < sizeof(desc)) {
            snprintf(desc + len, sizeof(desc) - len, ", %d fallback (handed down)", TOPOAR_LAST_FALLBACK);
        }
        rc = mca_base_component_pvar_register(
            c, "allreduce_last_algorithm", desc,
            OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_STATE, MCA_BASE_VAR_TYPE_INT, NULL,
            MCA_BASE_VAR_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
            NULL, NULL, NULL, &mca_coll_topoar_component.last_algorithm);
    }
    if (rc < 0) {
        return rc;
    }
    {
        /* The routes' table (decide/route.h): the value is the route. */
        static char desc[1024];
        size_t len = (size_t) snprintf(desc, sizeof(desc), "How the most recent MPI_Allreduce in this process ran:");
        for (int r = 0; r < TOPOAR_ROUTE_COUNT && len < sizeof(desc); ++r) {
            len += (size_t) snprintf(desc + len, sizeof(desc) - len, "%s %d %s", r ? "," : "", r,
                                     topoar_route_text(r));
        }
        rc = mca_base_component_pvar_register(
            c, "allreduce_last_path", desc,
            OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_STATE, MCA_BASE_VAR_TYPE_INT, NULL,
            MCA_BASE_VAR_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
            NULL, NULL, NULL, &mca_coll_topoar_component.last_path);
    }
    return rc < 0 ? rc : OMPI_SUCCESS;
}

/* Log the algorithm once per power-of-two size class (verbose 20, rank 0). */
static void log_choice(mca_coll_topoar_module_t *m, ompi_communicator_t *comm, size_t bytes, int alg)
{
    int cls = topoar_size_class(bytes);
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
                           int route)
{
    mca_coll_topoar_bump(&m->handled);
    if (algorithm >= 0 && algorithm < TOPOAR_ALG_MAX) {
        m->by_algorithm[algorithm]++;
    }
    mca_coll_topoar_set_last(algorithm, route);
    log_choice(m, comm, bytes, algorithm);
}

/* What the engine decided at run time (online adaptation, the large-message
 * check, a contest's outcome), each line naming itself, on rank 0 at verbose
 * 10; taking it clears it on every rank. */
void mca_coll_topoar_print_notice(mca_coll_topoar_module_t *m, ompi_communicator_t *comm)
{
    if (mca_coll_topoar_component.verbose >= 10) {
        const char *notice = topoar_engine_notice(m->engine);
        if (NULL != notice && 0 == ompi_comm_rank(comm)) {
            opal_output(0, "coll:topoar: %s: %s", comm->c_name, notice);
        }
    }
}
