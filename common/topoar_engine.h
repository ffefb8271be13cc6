/*
 * topoar engine: the C interface the Open MPI glue (ompi_coll_topoar/) calls.
 *
 * Everything behind it is C++ (common/); nothing here throws.  The glue
 * supplies the point-to-point transport and the local reduction as
 * callbacks, so the engine never sees an Open MPI type.
 *
 * Return values: TOPOAR_OK (0) or one of the TOPOAR_ERR_* codes; the engine
 * keeps a message with the details (topoar_engine_error()).
 */
#ifndef TOPOAR_ENGINE_H
#define TOPOAR_ENGINE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    TOPOAR_OK = 0,
    TOPOAR_ERR_INVALID = 1,     /* bad parameter value or input file */
    TOPOAR_ERR_UNSUPPORTED = 2, /* valid, but not handled: fall back */
    TOPOAR_ERR_IO = 3,          /* a file could not be read */
    TOPOAR_ERR_TRANSPORT = 4,   /* a send/recv/wait callback failed */
    TOPOAR_ERR_INTERNAL = 5,    /* a bug */
};

/* Values match topoar::Algorithm and the MCA/MPI_T enums. */
enum {
    TOPOAR_ALG_AUTO = 0,
    TOPOAR_ALG_RING = 1,
    TOPOAR_ALG_RECURSIVE_DOUBLING = 2,
    TOPOAR_ALG_HRING = 3,
    TOPOAR_ALG_FLEXREDUCE = 4,
    TOPOAR_ALG_TREE = 5,
    TOPOAR_NUM_ALGS = 6,
};

const char *topoar_algorithm_name(int algorithm);

typedef struct topoar_transport {
    void *ctx;
    int (*isend)(void *ctx, const void *buf, size_t bytes, int peer, void **req);
    int (*irecv)(void *ctx, void *buf, size_t bytes, int peer, void **req);
    int (*wait)(void *ctx, void **req);
    /* *done = 1 once the request completed (it is then freed); cheap, does
     * not drive communication itself */
    int (*test)(void *ctx, void **req, int *done);
    /* drives outstanding communication once */
    void (*progress)(void *ctx);
    /* ends a posted request that will not be waited for (after a failure):
     * cancel it where possible and free it; NULL: the engine calls wait */
    int (*cancel)(void *ctx, void **req);
} topoar_transport_t;

/* inout[i] = in[i] (op) inout[i] for count elements */
typedef struct topoar_reducer {
    void *ctx;
    void (*reduce)(void *ctx, const void *in, void *inout, size_t count);
} topoar_reducer_t;

typedef struct topoar_config {
    int algorithm;            /* TOPOAR_ALG_*; AUTO lets the engine choose */
    size_t segment_bytes;     /* largest message; 0 = whole operations */
    size_t pipeline_bytes;    /* pipelining unit planned into rounds; 0 = none */
    size_t small_msg_bytes;   /* auto: at or below, the latency algorithm */
    int single_node_hand_down; /* auto within one host: use the previous module */
    const char *topology_file; /* NULL or "" when unset */
    const char *rack_file;
    /* Up-link defaults per level, "BANDWIDTH[,LATENCY]" such as
     * "200Mbit,50us"; NULL or "" keeps the built-in default.  Checked by
     * topoar_engine_setup(). */
    const char *socket_link, *node_link, *rack_link, *spine_link;
    /* Rules file for auto (docs/rules-format.md); NULL or "" = none.  Read
     * by topoar_engine_setup(); a bad file fails it. */
    const char *rules_file;
    /* auto's default table from the cost model (0: the fixed built-in
     * choice only), and the model's per-message overhead ("40us"; NULL or
     * "" keeps the default; a bad value fails topoar_engine_setup()). */
    int model_table;
    const char *model_overhead;
    /* How much faster a candidate must be predicted than a simpler one to
     * win a size of that table ("0.15" or "15%"; NULL or "" keeps the
     * default; a bad value fails topoar_engine_setup()). */
    const char *model_margin;
} topoar_config_t;

/* What each rank contributes to topology discovery (exchanged by allgather:
 * plain fixed-size data). */
#define TOPOAR_NAME_MAX 128
typedef struct topoar_rank_info {
    char host[TOPOAR_NAME_MAX];
    char slurm_addr[TOPOAR_NAME_MAX];
    char slurm_pattern[TOPOAR_NAME_MAX];
    int socket; /* -1: unbound or unknown */
    int pad;
} topoar_rank_info_t;

/* Fills in this process's host name, socket (hwloc) and Slurm topology. */
void topoar_local_rank_info(topoar_rank_info_t *out);

typedef struct topoar_engine topoar_engine_t;

topoar_engine_t *topoar_engine_create(int rank, int size, const topoar_config_t *cfg);
void topoar_engine_destroy(topoar_engine_t *engine);

/* Builds the topology from every rank's info (size entries, by rank). */
int topoar_engine_setup(topoar_engine_t *engine, const topoar_rank_info_t *all);

/* In-place all-reduce of count elements of elem_size bytes (the extent) in
 * buf.  *algorithm_used receives the TOPOAR_ALG_* that ran. */
int topoar_engine_allreduce(topoar_engine_t *engine, void *buf, size_t count, size_t elem_size,
                            const topoar_transport_t *transport, const topoar_reducer_t *reducer,
                            int *algorithm_used);

/* Nonzero when topoar_engine_allreduce would hand a call of `bytes` bytes
 * down (auto on a one-host communicator without a matching rule), with the
 * reason in *why: the caller passes it to the previous module at once. */
int topoar_engine_hands_down(const topoar_engine_t *engine, size_t bytes, const char **why);

/* Nonzero when every call would be handed down (auto on a one-host
 * communicator without a rules file), whatever its size; the reason in
 * *why (left alone otherwise). */
int topoar_engine_hands_down_all(const topoar_engine_t *engine, const char **why);

/* The algorithm auto would run for a message of `bytes` bytes. */
int topoar_engine_choose(const topoar_engine_t *engine, size_t bytes);

/* What decided the algorithm of the most recent allreduce: "forced",
 * "default", a rule's "file:line", or "file:line (ALG unsupported here) ->
 * default" (valid until the next call). */
const char *topoar_engine_last_origin(topoar_engine_t *engine);

/* The last error's message ("" if none). */
const char *topoar_engine_error(const topoar_engine_t *engine);

/* The discovered topology as a printable tree (valid until the next call). */
const char *topoar_engine_describe(topoar_engine_t *engine);

/* The discovered topology in the topology file format (docs/topology-format.md). */
const char *topoar_engine_topology_text(topoar_engine_t *engine);

#ifdef __cplusplus
}
#endif

#endif /* TOPOAR_ENGINE_H */
