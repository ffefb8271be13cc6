/*
 * topoar module: one per communicator.  comm_query decides whether topoar
 * offers itself; enable remembers the allreduce it overrides, which is where
 * every call topoar does not handle goes.
 */
#include "coll_topoar.h"

#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/base.h"

static void topoar_module_construct(mca_coll_topoar_module_t *m)
{
    m->previous_allreduce = NULL;
    m->previous_allreduce_module = NULL;
    m->engine = NULL;
    m->state = TOPOAR_STATE_NEW;
    m->handled = 0;
    m->fallback = 0;
    m->logged_classes = 0;
    m->hand_down_all = NULL;
    m->gpu = NULL;
    for (int i = 0; i < TOPOAR_ALG_MAX; ++i) {
        m->by_algorithm[i] = 0;
    }
}

static void topoar_module_destruct(mca_coll_topoar_module_t *m)
{
    mca_coll_topoar_gpu_free(m);
    if (NULL != m->previous_allreduce_module) {
        OBJ_RELEASE(m->previous_allreduce_module);
        m->previous_allreduce_module = NULL;
    }
    if (NULL != m->engine) {
        topoar_engine_destroy(m->engine);
        m->engine = NULL;
    }
}

OBJ_CLASS_INSTANCE(mca_coll_topoar_module_t, mca_coll_base_module_t, topoar_module_construct,
                   topoar_module_destruct);

int mca_coll_topoar_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    return OMPI_SUCCESS;
}

static int topoar_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_topoar_module_t *m = (mca_coll_topoar_module_t *) module;

    if (NULL == comm->c_coll->coll_allreduce || NULL == comm->c_coll->coll_allreduce_module) {
        opal_output_verbose(1, mca_coll_topoar_component.output,
                            "coll:topoar: no underlying allreduce on %s; topoar disabled there",
                            comm->c_name);
        return OMPI_ERROR;
    }
    m->previous_allreduce = comm->c_coll->coll_allreduce;
    m->previous_allreduce_module = comm->c_coll->coll_allreduce_module;
    OBJ_RETAIN(m->previous_allreduce_module);
    MCA_COLL_TOPOAR_INSTALL(comm, mca_coll_topoar_allreduce, module); /* coll_topoar_compat.h */
    return OMPI_SUCCESS;
}

#if MCA_COLL_TOPOAR_INSTALLS_ITSELF
/* Open MPI main: give back what enable took (the base calls disable in the
 * reverse order of enable, so the module below is still there). */
static int topoar_module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_topoar_module_t *m = (mca_coll_topoar_module_t *) module;
    MCA_COLL_TOPOAR_RESTORE(comm, module, m->previous_allreduce, m->previous_allreduce_module);
    return OMPI_SUCCESS;
}
#endif

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
    m->super.coll_module_enable = topoar_module_enable;
#if MCA_COLL_TOPOAR_INSTALLS_ITSELF
    m->super.coll_module_disable = topoar_module_disable;
#endif
    m->super.coll_allreduce = mca_coll_topoar_allreduce;
    return &m->super;
}

mca_coll_topoar_module_t *mca_coll_topoar_module_of(struct ompi_communicator_t *comm)
{
    if (NULL == comm->c_coll || comm->c_coll->coll_allreduce != mca_coll_topoar_allreduce) {
        return NULL;
    }
    return (mca_coll_topoar_module_t *) comm->c_coll->coll_allreduce_module;
}
