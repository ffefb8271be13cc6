/*
 * topoar's MPI_Allreduce entry point: asks where the buffers live and hands
 * the call to the device call (coll_topoar_gpu.c) or the host call
 * (coll_topoar_host.c).  The device call never calls the host entry back:
 * when a call turns out to be a host call (every rank's buffers on the
 * host under coll_topoar_check_mem_type, or rbuf on the host once sbuf was
 * copied into it) it says so and the host call runs from here.
 */
#include "coll_topoar.h"
#include "topoar_cuda.h"

int mca_coll_topoar_allreduce(const void *sbuf, void *rbuf, mca_coll_topoar_count_t count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_topoar_module_t *m = (mca_coll_topoar_module_t *) module;
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;

    if (MCA_COLL_TOPOAR_COUNT_TOO_BIG(count)) { /* main's size_t counts beyond int: whole to the previous module */
        mca_coll_topoar_bump(&m->fallback);
        mca_coll_topoar_set_last(TOPOAR_LAST_FALLBACK, TOPOAR_ROUTE_HAND_DOWN);
        return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
    }

    /* GPU path on: device buffers must never reach host code (not even the
     * previous module, which would memcpy them).  One pointer query per
     * buffer; with check_mem_type every call goes there to agree. */
    if (NULL != cm->gpu) {
        int s_dev = MPI_IN_PLACE != sbuf && TOPOAR_CUDA_MEM_DEVICE == cm->gpu->mem_type(sbuf);
        int r_dev = TOPOAR_CUDA_MEM_DEVICE == cm->gpu->mem_type(rbuf);
        if (s_dev || r_dev || cm->check_mem_type) {
            /* host_call set: a host call after all, with host_sbuf as the
             * send buffer (MPI_IN_PLACE when sbuf was copied into a host
             * rbuf); else the device call took it. */
            int host_call = 0;
            const void *host_sbuf = sbuf;
            int rc = mca_coll_topoar_gpu_allreduce(m, sbuf, rbuf, (int) count, dtype, op, comm, s_dev, r_dev, &host_call,
                                                   &host_sbuf);
            if (OMPI_SUCCESS != rc || !host_call) {
                return rc;
            }
            sbuf = host_sbuf;
        }
    }
    return mca_coll_topoar_allreduce_host(m, sbuf, rbuf, (int) count, dtype, op, comm);
}
