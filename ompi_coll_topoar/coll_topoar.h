/*
 * topoar: a topology-aware MPI_Allreduce as an Open MPI coll component.
 *
 * This directory is the thin C glue: MCA parameters and performance
 * variables (coll_topoar_component.c), per-communicator modules
 * (coll_topoar_module.c) and the MPI_Allreduce entry point with its
 * eligibility checks and fallback (coll_topoar_allreduce.c).  The algorithms
 * live in ../common (C++, behind topoar_engine.h).
 */
#ifndef MCA_COLL_TOPOAR_EXPORT_H
#define MCA_COLL_TOPOAR_EXPORT_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/mca/coll/coll.h"

#include "topoar_engine.h"

BEGIN_C_DECLS

typedef struct mca_coll_topoar_component_t {
    mca_coll_base_component_2_0_0_t super;

    int priority;
    int verbose;
    int output;               /* opal_output stream */
    int algorithm;            /* TOPOAR_ALG_* forced, or AUTO */
    size_t segment_size;      /* bytes: largest message */
    size_t pipeline_size;     /* bytes: pipelining unit planned into rounds */
    size_t small_msg_size;    /* bytes: auto's latency-algorithm threshold */
    bool single_node_fallback; /* auto within one host: previous module */
    char *topology_file;
    char *rack_file;
    char *socket_link, *node_link, *rack_link, *spine_link; /* "BW[,LAT]" */
    char *rules_file;         /* decision rules for auto; NULL = none */
    bool model_table;         /* auto: default table from the cost model */
    char *model_overhead;     /* the model's per-message overhead, "40us" */
    char *model_margin;       /* default table: gain a complex plan needs, "15%" */

    int last_algorithm;       /* MPI_T: algorithm of the last call */
} mca_coll_topoar_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_topoar_component_t mca_coll_topoar_component;

/* Values of the last_algorithm variable beyond the TOPOAR_ALG_* ones. */
#define TOPOAR_LAST_NONE 0
#define TOPOAR_LAST_FALLBACK 100

enum { TOPOAR_STATE_NEW = 0, TOPOAR_STATE_READY = 1, TOPOAR_STATE_FAILED = -1 };

typedef struct mca_coll_topoar_module_t {
    mca_coll_base_module_t super;

    /* What ran before us: every unsupported call goes there. */
    mca_coll_base_module_allreduce_fn_t previous_allreduce;
    mca_coll_base_module_t *previous_allreduce_module;

    topoar_engine_t *engine;
    int state;                /* TOPOAR_STATE_* */

    /* Proof of who did the work (MPI_T, verbose). */
    unsigned long long handled;
    unsigned long long fallback;
    unsigned long long by_algorithm[TOPOAR_NUM_ALGS];
    unsigned long long logged_classes; /* bit k: a 2^k-byte call was logged */
    const char *hand_down_all; /* set up, and auto hands every call down: why */
} mca_coll_topoar_module_t;

OBJ_CLASS_DECLARATION(mca_coll_topoar_module_t);

int mca_coll_topoar_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_topoar_comm_query(struct ompi_communicator_t *comm, int *priority);

int mca_coll_topoar_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                              struct ompi_op_t *op, struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *module);

/* The module behind comm's allreduce if it is ours, else NULL. */
mca_coll_topoar_module_t *mca_coll_topoar_module_of(struct ompi_communicator_t *comm);

END_C_DECLS

#endif /* MCA_COLL_TOPOAR_EXPORT_H */
