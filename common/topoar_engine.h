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

/* Where a call's buffers live (values match topoar::MemType). */
enum {
    TOPOAR_MEM_HOST = 1,
    TOPOAR_MEM_CUDA = 2,
};

/* What decided a call's algorithm (values match topoar::Origin). */
enum {
    TOPOAR_ORIGIN_FORCED = 0,    /* coll_topoar_allreduce_algorithm */
    TOPOAR_ORIGIN_RULE = 1,      /* a rule of the rules file */
    TOPOAR_ORIGIN_MODEL = 2,     /* the cost-model table */
    TOPOAR_ORIGIN_BUILTIN = 3,   /* the fixed built-in choice */
    TOPOAR_ORIGIN_HAND_DOWN = 4, /* auto gives the call to the previous module */
};

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

/* One call, asked once: topoar_engine_prepare() decides (and plans on the
 * first use of a size); the glue then either hands the call down
 * (call->hand_down, reason in call->why) or runs it with
 * topoar_engine_run().  A prepared call stays valid until the next
 * topoar_engine_prepare() on the same engine.  TOPOAR_ERR_UNSUPPORTED from
 * prepare was decided identically on every rank before anything moved: the
 * caller falls back. */
typedef struct topoar_call {
    int hand_down;      /* nonzero: give the call to the previous module */
    const char *why;    /* hand_down: the reason (static text) */
    int algorithm;      /* TOPOAR_ALG_* that topoar_engine_run() executes */
    int origin;         /* TOPOAR_ORIGIN_* */
    int mem;            /* TOPOAR_MEM_* as passed to prepare */
    size_t count;       /* elements */
    size_t elem_size;   /* bytes per element (the extent) */
} topoar_call_t;

int topoar_engine_prepare(topoar_engine_t *engine, size_t count, size_t elem_size, int mem,
                          topoar_call_t *call);

/* In-place all-reduce of call->count elements in buf, with the call the
 * last topoar_engine_prepare() returned. */
int topoar_engine_run(topoar_engine_t *engine, const topoar_call_t *call, void *buf,
                      const topoar_transport_t *transport, const topoar_reducer_t *reducer);

/* Stream-ordered operations on device memory (cuda/ fills them with NCCL and
 * topoar's kernels).  Each enqueues and returns; synchronize waits.  All
 * return 0 or nonzero with the details from error(ctx). */
typedef struct topoar_device_transport {
    void *ctx;
    int (*group_start)(void *ctx);
    int (*send)(void *ctx, const void *buf, size_t bytes, int peer);
    int (*recv)(void *ctx, void *buf, size_t bytes, int peer);
    int (*group_end)(void *ctx);
    /* inout[i] = in[i] (op) inout[i], count elements, after the group */
    int (*reduce)(void *ctx, const void *in, void *inout, size_t count);
    /* device scratch of at least bytes, kept across calls */
    int (*scratch)(void *ctx, size_t bytes, void **out);
    int (*synchronize)(void *ctx);
    const char *(*error)(void *ctx);
} topoar_device_transport_t;

/* topoar_engine_run() on device memory: the prepared call's plan, one
 * grouped launch per round, reductions on the same stream; returns once the
 * result is in buf (the stream is synchronized). */
int topoar_engine_run_device(topoar_engine_t *engine, const topoar_call_t *call, void *buf,
                             const topoar_device_transport_t *transport);

/* Nonzero when every host call would be handed down (auto on a one-host
 * communicator without a rules file), whatever its size; the reason in
 * *why (left alone otherwise).  Known once set-up succeeded. */
int topoar_engine_hands_down_all(const topoar_engine_t *engine, const char **why);

/* Hosts the communicator spans (0 before set-up). */
int topoar_engine_num_hosts(const topoar_engine_t *engine);

/* What decided the last prepared call, for people: "forced", "cost model",
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
