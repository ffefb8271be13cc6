/*
 * Which MPI_Allreduce calls topoar's own typed reduction
 * (common/reduce/topoar_reduce.h) can reduce: a predefined op on a
 * predefined datatype, mapped to topoar's op and element type.
 */
#ifndef MCA_COLL_TOPOAR_OPS_H
#define MCA_COLL_TOPOAR_OPS_H

#include "ompi_config.h"

#include "mpi.h"

BEGIN_C_DECLS

/* Returns 1 and sets *redop (TOPOAR_REDOP_*) and *redtype (TOPOAR_REDTYPE_*)
 * when (dtype, op) is a predefined pair that MPI defines and topoar reduces
 * itself on the host (topoar_reduce_supported(*redop, *redtype, 0) holds;
 * whether the CUDA kernels take it too is topoar_reduce_supported(.., 1)).
 * Returns 0, leaving both untouched, for everything else: user-defined ops,
 * derived datatypes, MPI_REPLACE/MPI_NO_OP, pairs the standard does not
 * define (then the previous module reports the error as Open MPI would),
 * and types whose size is not known here.  One element of *redtype is
 * exactly one element (extent) of dtype. */
int mca_coll_topoar_op_ids(struct ompi_datatype_t *dtype, struct ompi_op_t *op, int *redop, int *redtype);

/* 1 when the previous module's result for this call can differ from
 * topoar's own beyond floating-point rounding, so that only topoar may run
 * it (TOPOAR_PREPARE_OWN_RESULT_ONLY): an 8- or 16-bit integer SUM or PROD
 * that topoar reduces itself (wrapping, as MPI says) and that Open MPI's
 * own reduction, which every other module uses, computes otherwise.  Open
 * MPI 4.1's op/avx saturates such sums instead of wrapping
 * (open-mpi/ompi#8045); whether this Open MPI does is measured once per
 * process and pair with MPI_Reduce_local on inputs that overflow, so
 * `--mca op ^avx` or a fixed Open MPI gives 0.  extent: dtype's extent (a
 * first filter that keeps the common calls off the lookup). */
int mca_coll_topoar_previous_may_differ(struct ompi_datatype_t *dtype, struct ompi_op_t *op, size_t extent);

END_C_DECLS

#endif /* MCA_COLL_TOPOAR_OPS_H */
