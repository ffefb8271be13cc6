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

#include "decide/route.h" /* TOPOAR_ROUTE_*: a call's route */

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

/* Algorithms: the table of common/core/algorithm.hpp.  Their numbers are the
 * MCA/MPI_T values and never change; 0 is auto.  Everything else (names,
 * descriptions, how many) comes from the accessors below. */
enum {
    TOPOAR_ALG_AUTO = 0,
    /* The device-only algorithms the GPU path runs itself (checked against
     * the table at compile time, engine_c.cpp). */
    TOPOAR_ALG_NCCL = 6,
    TOPOAR_ALG_NCCL_HIER = 7,
    TOPOAR_ALG_MAX = 32, /* every number is below this (array sizes) */
};

typedef struct topoar_algorithm_info {
    int id;                  /* its number (= index) */
    const char *name;        /* "ring", ... */
    const char *alias;       /* a deprecated name still accepted, or NULL */
    const char *description; /* one line */
    int multi_host;          /* shaped for several hosts */
    int device_only;         /* device buffers only (the GPU path runs it) */
} topoar_algorithm_info_t;

/* Numbers 0 .. topoar_algorithm_count() - 1. */
int topoar_algorithm_count(void);
/* TOPOAR_OK, or TOPOAR_ERR_INVALID for a number outside the table. */
int topoar_algorithm_info(int id, topoar_algorithm_info_t *out);
/* "unknown" outside the table. */
const char *topoar_algorithm_name(int id);
/* A name or deprecated alias -> its number; -1 if unknown. */
int topoar_algorithm_from_name(const char *name);

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
    TOPOAR_ORIGIN_MEASURED = 5,  /* small messages: the contender measured
                                  * fastest (coll_topoar_trial_calls) */
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
    /* a synchronous send: complete once the receiver has matched it (the
     * PML's synchronous mode); NULL: the engine uses isend */
    int (*issend)(void *ctx, const void *buf, size_t bytes, int peer, void **req);
} topoar_transport_t;

/* inout[i] = in[i] (op) inout[i] for count elements */
typedef struct topoar_reducer {
    void *ctx;
    void (*reduce)(void *ctx, const void *in, void *inout, size_t count);
} topoar_reducer_t;

/* Parameters: the table of common/config/params.hpp.  The glue registers one
 * coll_topoar_NAME MCA variable per entry and hands the values back by name
 * as text (topoar_config_t). */
enum {
    TOPOAR_PARAM_INT = 0,
    TOPOAR_PARAM_SIZE = 1,      /* bytes, size_t */
    TOPOAR_PARAM_BOOL = 2,
    TOPOAR_PARAM_STRING = 3,
    TOPOAR_PARAM_ALGORITHM = 4, /* an int of an enum of the algorithm names */
    TOPOAR_PARAM_MAX = 64,      /* at most this many entries (the table's rows, glue's included) */
};

typedef struct topoar_param_info {
    const char *name;          /* without "coll_topoar_" */
    int type;                  /* TOPOAR_PARAM_* */
    const char *default_value; /* text, as a value is handed over */
    int level;                 /* ompi_info level 1..9 */
    int must_agree;            /* compared across ranks at set-up */
    int settable;              /* MPI_T may write it at run time */
    const char *help;
} topoar_param_info_t;

int topoar_param_count(void);
/* TOPOAR_OK, or TOPOAR_ERR_INVALID for an index outside the table. */
int topoar_param_info(int index, topoar_param_info_t *out);

/* An engine's configuration: parameters by name, values as text (numbers
 * in decimal, booleans 1/0, algorithms by name or number, "" keeps the
 * default).  Parameters not listed keep their defaults. */
typedef struct topoar_config {
    int count;
    const char *const *names;
    const char *const *values;
} topoar_config_t;

/* What each rank contributes to topology discovery (exchanged by allgather:
 * plain fixed-size data). */
#define TOPOAR_NAME_MAX 128
typedef struct topoar_rank_info {
    char host[TOPOAR_NAME_MAX];
    char slurm_addr[TOPOAR_NAME_MAX];
    char slurm_pattern[TOPOAR_NAME_MAX];
    int socket; /* -1: unbound or unknown */
    /* Small-message contest outcomes its process keeps for the job (0:
     * none; all 0 spares set-up agreeing on them). */
    int contest_outcomes;
    /* Per parameter of the table (by index): a fingerprint of its value
     * (and file contents) when it must agree across ranks, else 0. */
    unsigned long long settings[TOPOAR_PARAM_MAX];
    /* The widest network this process measured (0: none); equal on every
     * rank lets set-up reuse it instead of probing (coll_topoar_probe). */
    unsigned long long probe_digest;
    /* Its fastest network port that is up (sysfs), bytes/s; 0: unknown. */
    double nic_bandwidth;
} topoar_rank_info_t;

/* Fills in this process's host name, socket (hwloc) and Slurm topology;
 * with cfg (may be NULL), also the settings fingerprints. */
void topoar_local_rank_info(topoar_rank_info_t *out);
void topoar_settings_fingerprint(const topoar_config_t *cfg, topoar_rank_info_t *out);

/* After the allgather of every rank's info (size entries): nonzero when a
 * parameter that must agree differs; *param: its index in the table,
 * *rank: the lowest rank that differs from rank 0.  A pure function of
 * the gathered data, so every rank gets the same answer. */
int topoar_settings_mismatch(const topoar_rank_info_t *all, int size, int *param, int *rank);

typedef struct topoar_engine topoar_engine_t;

topoar_engine_t *topoar_engine_create(int rank, int size, const topoar_config_t *cfg);

/* Nonzero when an engine with these settings hands every host call on a
 * communicator within one host to the previous module (auto, the
 * single-node fallback, no rules, topology or rack file), with the reason
 * it gives in *why:
 * such a communicator needs no rank records and no engine.  0 on any
 * setting that does not parse (the full set-up reports it). */
int topoar_config_hands_down_single_host(const topoar_config_t *cfg, const char **why);
void topoar_engine_destroy(topoar_engine_t *engine);

/* Builds the topology from every rank's info (size entries, by rank).
 * A bad parameter value is reported by topoar_engine_setup(), which fails
 * then (NULL: out of memory).  Links between hosts are assumed. */
int topoar_engine_setup(topoar_engine_t *engine, const topoar_rank_info_t *all);

/* What set-up may use to measure the links between hosts (coll_topoar_probe):
 * the point-to-point transport of the calls, and an allgather over the
 * communicator (every rank gives bytes at mine; all receives size x bytes,
 * by rank; returns 0 or nonzero on failure). */
typedef struct topoar_setup_io {
    const topoar_transport_t *transport;
    void *ctx;
    int (*allgather)(void *ctx, const void *mine, size_t bytes, void *all);
} topoar_setup_io_t;

/* topoar_engine_setup(), measuring the links when no file, Slurm address or
 * coll_topoar_node_link describes them and the communicator spans several
 * hosts.  Collective then: every rank calls it (io may be NULL: nothing is
 * measured). */
int topoar_engine_setup_io(topoar_engine_t *engine, const topoar_rank_info_t *all, const topoar_setup_io_t *io);

/* One call, asked once: topoar_engine_prepare() decides the call's route
 * (decide/route.h; and plans on the first use of a size); the glue
 * switches on call->route: hands the call down, or runs it with
 * topoar_engine_run() (host routes) or topoar_engine_run_device() (device
 * routes).  A prepared call stays valid until the next
 * topoar_engine_prepare() on the same engine.  TOPOAR_ERR_UNSUPPORTED from
 * prepare was decided identically on every rank before anything moved: the
 * caller falls back. */
typedef struct topoar_call {
    int route;          /* TOPOAR_ROUTE_* */
    const char *why;    /* for verbose output, or NULL: why the call is
                         * handed down, or why nccl_hier does not run
                         * (static or engine text, valid as the call) */
    int algorithm;      /* the algorithm decided (a device-only one, e.g.
                         * nccl, is run by the GPU path itself) */
    int plan_algorithm; /* the algorithm of the plan topoar_engine_run()
                         * and _run_device() execute (= algorithm, or the
                         * built-in choice behind a device-only one) */
    int origin;         /* TOPOAR_ORIGIN_* */
    int mem;            /* TOPOAR_MEM_* as passed to prepare */
    size_t count;       /* elements */
    size_t elem_size;   /* bytes per element (the extent) */
    int fast;           /* 1: a small host call that topoar_engine_run_fast()
                         * may run (route HOST or CONTEST_HOST) */
} topoar_call_t;

/* prepare's flags.  OWN_RESULT_ONLY: the previous module's result for
 * this call's (op, type) can differ from topoar's own beyond floating-point
 * rounding (Open MPI 4.1's op/avx saturates 8- and 16-bit integer sums that
 * topoar wraps, open-mpi/ompi#8045), so it never runs the call for speed:
 * it takes no contest turn, and a size class it won runs auto's table's
 * choice for this call.  Every rank must pass the same flags. */
#define TOPOAR_PREPARE_OWN_RESULT_ONLY 1
/* NONBLOCKING: an MPI_Iallreduce or a persistent allreduce.  Never timed:
 * no contest turn (a size class still in contest, or won by the previous
 * module's blocking allreduce, runs topoar's best known plan), no online
 * adaptation; the route is HOST or HAND_DOWN (to the previous module's
 * nonblocking allreduce).  NO_HAND_DOWN: topoar runs the call even where
 * auto would hand it down (its built-in choice): calls queued while a
 * nonblocking set-up completed. */
#define TOPOAR_PREPARE_NONBLOCKING 2
#define TOPOAR_PREPARE_NO_HAND_DOWN 4

/* Host calls (TOPOAR_MEM_HOST); a contest turn (TOPOAR_ROUTE_CONTEST_*)
 * is timed by the glue and reported with topoar_engine_trial_done().
 * flags: TOPOAR_PREPARE_* above, or 0. */
int topoar_engine_prepare(topoar_engine_t *engine, size_t count, size_t elem_size, int mem, int flags,
                          topoar_call_t *call);

/* What the glue can do with device buffers on this communicator, registered
 * once it set them up (again only if one of them changes): the routes of
 * device calls follow from it (decide/route.hpp). */
typedef struct topoar_device_caps {
    int nccl;       /* an NCCL communicator over the communicator is ready */
    int host_comms; /* nccl_hier's per-host NCCL communicator is ready or
                     * may still be made */
    /* Whether ncclAllReduce / topoar's device kernels reduce an (op, type)
     * pair (TOPOAR_REDUCE_* numbers); NULL: no. */
    int (*nccl_reduces)(int redop, int redtype);
    int (*kernels_reduce)(int redop, int redtype);
} topoar_device_caps_t;
int topoar_engine_set_device_caps(topoar_engine_t *engine, const topoar_device_caps_t *caps);

/* A device call (TOPOAR_MEM_CUDA) of the (op, type) pair redop/redtype. */
int topoar_engine_prepare_device(topoar_engine_t *engine, size_t count, size_t elem_size, int redop, int redtype,
                                 topoar_call_t *call);

/* In-place all-reduce of call->count elements in buf, with the call the
 * last topoar_engine_prepare() returned (route HOST, CONTEST_HOST or
 * STAGED; buf in host memory). */
int topoar_engine_run(topoar_engine_t *engine, const topoar_call_t *call, void *buf,
                      const topoar_transport_t *transport, const topoar_reducer_t *reducer);

/* The small-message fast path (common/exec/fast_executor.hpp): a call with
 * call->fast set runs its plan round after round, each round's requests
 * posted through these callbacks and waited for together; bit-identical to
 * topoar_engine_run().  wait_all(n, reqs) returns 0 or an error, and
 * either way leaves none of the n requests posted; cancel ends one posted
 * request after a failure elsewhere in its round. */
typedef struct topoar_fast_transport {
    void *ctx;
    int (*isend)(void *ctx, const void *buf, size_t bytes, int peer, void **req);
    int (*irecv)(void *ctx, void *buf, size_t bytes, int peer, void **req);
    int (*wait_all)(void *ctx, int n, void **reqs);
    void (*cancel)(void *ctx, void **req);
} topoar_fast_transport_t;

/* Runs the call the last topoar_engine_prepare() returned, call->fast set,
 * in place on buf (host memory).  redop/redtype: the (op, type) pair when
 * topoar reduces it itself (topoar_reduce.h; the common ones are inlined
 * there), else -1 and -1: reducer then reduces.  Not timed for online
 * adaptation (call->fast is never set where it would be). */
int topoar_engine_run_fast(topoar_engine_t *engine, const topoar_call_t *call, void *buf,
                           const topoar_fast_transport_t *transport, int redop, int redtype,
                           const topoar_reducer_t *reducer);

/* Operations: a prepared host call run step by step, for nonblocking and
 * persistent calls.  An operation keeps its own copy of the call (its plans
 * stay alive whatever later calls do to the engine's plan cache) and of the
 * transport and reducer structures (their ctx must outlive it); it owns its
 * scratch and the executor's state, so any number may be outstanding on one
 * engine, each over its own transport (its own tag), completing in any
 * order.  Nothing here is collective or blocks; nothing drives the
 * transport's progress (the caller's progress callback does).  One
 * operation is used by one thread at a time. */
typedef struct topoar_op topoar_op_t;
/* From the call the last topoar_engine_prepare() returned, route HOST;
 * NULL on failure (topoar_engine_error() says why).  The engine may be
 * destroyed before the operation. */
topoar_op_t *topoar_engine_op_create(topoar_engine_t *engine, const topoar_call_t *call,
                                     const topoar_transport_t *transport, const topoar_reducer_t *reducer);
/* Starts a run on buf (in place, already holding this rank's input): posts
 * what may go first.  Again after the previous run finished (persistent
 * calls).  TOPOAR_OK or an error (nothing left posted). */
int topoar_op_start(topoar_op_t *op, void *buf);
/* One pass: applies what arrived, posts what became ready; *done = 1 once
 * the run finished, *moved = 1 when something completed in this pass
 * (another pass may find more at once).  An error ends the run (its posted
 * requests cancelled); topoar_op_error() says where. */
int topoar_op_advance(topoar_op_t *op, int *done, int *moved);
const char *topoar_op_error(const topoar_op_t *op);
/* Frees it; a run still going is given up (its requests cancelled). */
void topoar_op_destroy(topoar_op_t *op);

/* After a contest turn (route CONTEST_HOST or CONTEST_DOWN): its
 * wall time on this rank.  Collective at the contest's last call of a size
 * class (every rank reaches it at the same call): the ranks pool their
 * mean times with one allgather and the fastest contender runs the class from
 * then on; topoar_engine_notice() then says so.  The same after a turn of
 * the previous module in the large-message model check (route CHECK_DOWN),
 * collective at its window's last call. */
int topoar_engine_trial_done(topoar_engine_t *engine, const topoar_call_t *call, double seconds);

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
    /* Collectives among the ranks of this rank's host, on the host's own
     * communicator (nccl_hier; NULL where not provided); counts in
     * elements, NCCL's meaning (exec/device_executor.hpp). */
    int (*host_reduce_scatter)(void *ctx, const void *send, void *recv, size_t recv_count);
    int (*host_reduce)(void *ctx, const void *send, void *recv, size_t count, int root);
    int (*host_all_gather)(void *ctx, const void *send, void *recv, size_t send_count);
    int (*host_broadcast)(void *ctx, const void *send, void *recv, size_t count, int root);
} topoar_device_transport_t;

/* topoar_engine_run() on device memory for the device routes NCCL_PLAN
 * (the prepared call's plan, one grouped launch per round, reductions on
 * the same stream) and NCCL_HIER (host collectives through the transport's
 * host_* callbacks, shard plans across hosts through send/recv; peers:
 * comm ranks); returns once the result is in buf (the stream is
 * synchronized). */
int topoar_engine_run_device(topoar_engine_t *engine, const topoar_call_t *call, void *buf,
                             const topoar_device_transport_t *transport);

/* nccl_hier's view of this rank, after set-up: the index of its host
 * (hosts in topology order), its index among the host's ranks (ascending
 * comm rank), and the number of hosts; TOPOAR_ERR_UNSUPPORTED without a
 * host level.  The same on every rank of a host: the color and key of a
 * per-host communicator split. */
int topoar_engine_host_position(topoar_engine_t *engine, int *host, int *local, int *hosts);

/* After set-up, this rank's MPI_Barrier across hosts
 * (common/planners/planner_barrier.hpp: in along each host's binomial
 * tree, across among the hosts' first ranks, out down the tree), as zero-
 * byte message steps into steps[0..*n-1] (at most TOPOAR_BARRIER_MAX_STEPS,
 * the caller's array), and the number of hosts into *hosts.  Every rank's
 * steps fit every other's.  TOPOAR_ERR_UNSUPPORTED without a host level. */
enum {
    TOPOAR_BARRIER_SEND = 0,     /* an empty message to `to` */
    TOPOAR_BARRIER_RECV = 1,     /* wait for one from `from` */
    TOPOAR_BARRIER_EXCHANGE = 2, /* receive from `from` posted, send to `to`, wait */
    TOPOAR_BARRIER_MAX_STEPS = 128
};
typedef struct topoar_barrier_step {
    int kind; /* TOPOAR_BARRIER_SEND, _RECV or _EXCHANGE */
    int to, from; /* comm ranks (-1 where the kind has none) */
} topoar_barrier_step_t;
int topoar_engine_barrier_steps(topoar_engine_t *engine, topoar_barrier_step_t *steps, int *n, int *hosts);

/* MPI_Barrier's kind for this communicator as earlier communicators of
 * the same shape settled it, agreed at set-up (every rank the same):
 * TOPOAR_BARRIER_KEPT_NONE, _PREVIOUS or _TOPOAR.  Keep this
 * communicator's with topoar_engine_keep_barrier (every rank alike: the
 * same agreed result).  Both do nothing useful unless auto's small-message
 * contests can run on the communicator (the store's key is theirs). */
enum { TOPOAR_BARRIER_KEPT_NONE = 0, TOPOAR_BARRIER_KEPT_PREVIOUS = 1, TOPOAR_BARRIER_KEPT_TOPOAR = 2 };
int topoar_engine_barrier_kept(const topoar_engine_t *engine);
void topoar_engine_keep_barrier(topoar_engine_t *engine, int kind);

/* Nonzero when every host call would be handed down (auto on a one-host
 * communicator without a rules file), whatever its size; the reason in
 * *why (left alone otherwise).  Known once set-up succeeded. */
int topoar_engine_hands_down_all(const topoar_engine_t *engine, const char **why);

/* What decided the last prepared call, for people: "forced", "cost model",
 * "default", a rule's "file:line", or "file:line (ALG unsupported here) ->
 * default" (valid until the next call). */
const char *topoar_engine_last_origin(topoar_engine_t *engine);

/* What online adaptation (coll_topoar_adapt) did during the last run, for
 * verbose output, or NULL if nothing.
 *
 * The text results (last_origin, notice, describe, topology_text) each
 * have their own buffer in the engine: a result stays valid until the next
 * call of the same function on the same engine (or its destruction),
 * whatever other function is called in between. */
const char *topoar_engine_notice(topoar_engine_t *engine);

/* The last error's message ("" if none). */
const char *topoar_engine_error(const topoar_engine_t *engine);

/* The discovered topology as a printable tree. */
const char *topoar_engine_describe(topoar_engine_t *engine);

/* The discovered topology in the topology file format (docs/topology-format.md). */
const char *topoar_engine_topology_text(topoar_engine_t *engine);

/* The cost model's software cost per message on this communicator, seconds:
 * measured with the links (coll_topoar_model_overhead auto) or the
 * parameter's value.  The latencies of topoar_engine_topology_text exclude
 * it.  0 before set-up. */
double topoar_engine_model_overhead(const topoar_engine_t *engine);

#ifdef __cplusplus
}
#endif

#endif /* TOPOAR_ENGINE_H */
