/*
 * topoar: a topology-aware MPI_Allreduce as an Open MPI coll component.
 *
 * This directory is the thin C glue, one job per file; a file calls only
 * the files below it (no circle):
 *
 *   coll_topoar_component.c  registration: MCA parameters, open/close,
 *                            comm_query (offers a module)
 *   coll_topoar_allreduce.c  the entry point: host or device buffers
 *   coll_topoar_host.c       the host call: eligibility, set-up, the route
 *   coll_topoar_gpu.c        the device call (never the host entry), NCCL
 *   coll_topoar_nonblocking.c  MPI_Iallreduce and persistent allreduce:
 *                            requests, the progress callback, the
 *                            nonblocking set-up
 *   coll_topoar_module.c     the module's life, its collective set-up,
 *                            which calls it takes, the fallback to the
 *                            previous module
 *   coll_topoar_transport.c  the PML transport and local reduction the
 *                            engine runs a prepared call with
 *   coll_topoar_log.c        MPI_T variables, counters, logging, failures
 *   coll_topoar_ops.c        (op, datatype) -> topoar's own reduction ids
 *
 * The algorithms live in ../common (C++, behind topoar_engine.h).
 */
#ifndef MCA_COLL_TOPOAR_EXPORT_H
#define MCA_COLL_TOPOAR_EXPORT_H

#include "ompi_config.h"

#include "mpi.h"
#include <time.h>
#include "ompi/mca/coll/coll.h"
#include "coll_topoar_compat.h"

#include "topoar_engine.h"

BEGIN_C_DECLS

typedef struct mca_coll_topoar_component_t {
    mca_coll_topoar_base_component_t super; /* coll_topoar_compat.h */

    int priority;             /* these and the GPU path's below: the */
    int verbose;              /* table's glue-only rows (config/params.h) */
    int output;               /* opal_output stream */
    /* The engine's parameters (topoar_param_info: the table's leading
     * rows), registered by the same walk; MCA storage by table index. */
    int num_params;
    union {
        int i;     /* TOPOAR_PARAM_INT, TOPOAR_PARAM_ALGORITHM */
        size_t z;  /* TOPOAR_PARAM_SIZE */
        bool b;    /* TOPOAR_PARAM_BOOL */
        char *s;   /* TOPOAR_PARAM_STRING */
    } params[TOPOAR_PARAM_MAX];

    /* MPI_T: algorithm and TOPOAR_ROUTE_* of this process's last call, in
     * whichever thread it ran: written with mca_coll_topoar_set_last*. */
    int last_algorithm;
    int last_path;

    /* GPU path (coll_topoar_gpu.c) */
    bool cuda;                /* try the GPU path at all */
    char *cuda_library;       /* libtopoar_cuda.so to dlopen */
    bool nccl;                /* device data through NCCL when possible */
    bool check_mem_type;      /* verify every rank passes the same memory type */
    int nccl_max_comms;       /* NCCL communicators per process at most */
    bool mem_type_cache;      /* cache host pointers in the memory-type question */
    int barrier;              /* TOPOAR_BARRIER_* (coll_topoar_barrier) */
    int barrier_trial;        /* barriers of each kind auto times (coll_topoar_barrier_trial) */
    int cuda_aware_mpi;       /* TOPOAR_CUDA_AWARE_* (coll_topoar_cuda_aware_mpi) */
    bool cuda_aware;          /* decided at open: device buffers go to the
                               * previous module unstaged */
    char cuda_aware_why[160]; /* how that was decided (verbose output) */
    const struct topoar_cuda_api *gpu; /* NULL: GPU path off */
    void *gpu_handle;         /* dlopen handle */
} mca_coll_topoar_component_t;

/* coll_topoar_cuda_aware_mpi: may device pointers go to the previous
 * module (and the PML under it) without staging? */
enum {
    TOPOAR_CUDA_AWARE_NEVER = 0,  /* always stage through pinned host memory */
    TOPOAR_CUDA_AWARE_AUTO = 1,   /* when MPIX_Query_cuda_support() says so */
    TOPOAR_CUDA_AWARE_ALWAYS = 2, /* without asking (an MPI the query does not know) */
};

/* coll_topoar_barrier: which MPI_Barrier runs across hosts. */
enum {
    TOPOAR_BARRIER_NEVER = 0,  /* the previous module's, always */
    TOPOAR_BARRIER_AUTO = 1,   /* the faster of topoar's and the previous one's, timed once */
    TOPOAR_BARRIER_ALWAYS = 2, /* topoar's, untimed */
};

MCA_COLL_TOPOAR_DECLSPEC extern mca_coll_topoar_component_t mca_coll_topoar_component;

/* Values of the last_algorithm variable beyond the TOPOAR_ALG_* ones. */
#define TOPOAR_LAST_NONE 0
#define TOPOAR_LAST_FALLBACK 100

/* SETTING_UP: a nonblocking set-up is in flight (coll_topoar_nonblocking.c):
 * its allgather runs under progress; a blocking call first completes it. */
enum { TOPOAR_STATE_NEW = 0, TOPOAR_STATE_READY = 1, TOPOAR_STATE_SETTING_UP = 2, TOPOAR_STATE_FAILED = -1 };

/* The point-to-point transport's context (coll_topoar_allreduce.c): the
 * communicator, and how often the current call has found nothing to do. */
typedef struct mca_coll_topoar_pml_ctx_t {
    struct ompi_communicator_t *comm;
    unsigned idle;
    bool polling; /* this call raised opal_progress's event users */
    /* Every peer on this host (shared memory): a long wait never raises
     * opal_progress's event users, as no socket needs reading at once. */
    bool local;
    /* The messages' tag: MCA_COLL_BASE_TAG_ALLREDUCE for blocking calls
     * (they are ordered), one reserved from the communicator's
     * nonblocking tags per nonblocking operation (several may be
     * outstanding). */
    int tag;
} mca_coll_topoar_pml_ctx_t;

/* The local reduction's context (coll_topoar_transport.c). */
typedef struct mca_coll_topoar_reduce_ctx_t {
    struct ompi_op_t *op;
    struct ompi_datatype_t *dtype;
    size_t extent;
    int redop, redtype; /* topoar's own reduction when own != 0 */
    int own;
    /* The module's blocking calls only: mca_coll_topoar_previous_may_differ
     * of (dtype, op, extent), asked once per pair instead of per call. */
    int may_differ;
} mca_coll_topoar_reduce_ctx_t;

typedef struct mca_coll_topoar_module_t {
    mca_coll_base_module_t super;

    /* What ran before us: every unsupported call goes there. */
    mca_coll_base_module_allreduce_fn_t previous_allreduce;
    mca_coll_base_module_t *previous_allreduce_module;
    /* The same for nonblocking and persistent allreduce (NULL: none). */
    mca_coll_base_module_iallreduce_fn_t previous_iallreduce;
    mca_coll_base_module_t *previous_iallreduce_module;
    mca_coll_base_module_allreduce_init_fn_t previous_allreduce_init;
    mca_coll_base_module_t *previous_allreduce_init_module;
    /* MPI_Barrier across hosts (coll_topoar_barrier.c; NULL: not taken). */
    mca_coll_base_module_barrier_fn_t previous_barrier;
    mca_coll_base_module_t *previous_barrier_module;
    /* This rank's barrier steps (topoar_engine_barrier_steps), taken by the
     * first blocking allreduce that finds topoar set up (the same call on
     * every rank): bar_armed 1 topoar's barrier runs, 0 not yet decided, -1
     * the previous module's for good. */
    int bar_armed;
    int bar_nsteps, bar_hosts;
    topoar_barrier_step_t bar_steps[TOPOAR_BARRIER_MAX_STEPS];

    topoar_engine_t *engine;
    int state;                /* TOPOAR_STATE_* */

    /* Proof of who did the work (MPI_T, verbose). */
    unsigned long long handled;   /* mca_coll_topoar_bump: MPI_T reads them */
    unsigned long long fallback;
    unsigned long long ihandled;  /* MPI_Iallreduce: topoar / handed down */
    unsigned long long ifallback;
    unsigned long long phandled;  /* persistent allreduce, per start */
    unsigned long long pfallback;
    unsigned long long bhandled;  /* MPI_Barrier: topoar / handed down */
    unsigned long long bfallback;
    unsigned long long by_algorithm[TOPOAR_ALG_MAX];
    unsigned long long logged_classes; /* bit k: a 2^k-byte call was logged */
    const char *hand_down_all; /* set up, and auto hands every call down: why */
    /* The one-host agreement of the first blocking call has run (its
     * outcome: state READY with hand_down_all, the full set-up, or, when
     * the members differ, still NEW: the full set-up at the next call). */
    bool one_host_checked;
    /* Every member on this host (Open MPI's locality flags, when the module
     * is enabled: no communication, the same on every member). */
    bool all_local;
    struct topoar_gpu_state *gpu; /* device-buffer state (coll_topoar_gpu.c) */
    /* frees it with the module (set by coll_topoar_gpu.c with the state) */
    void (*gpu_free)(struct mca_coll_topoar_module_t *m);
    /* The context of the transport set-up hands the engine, which keeps it
     * for online adaptation: it measures the links again in the middle of
     * a later call, so it lives as long as the module. */
    mca_coll_topoar_pml_ctx_t io_ctx;
    /* The blocking calls' local reduction (fast path and executor), for
     * the (dtype, op) of the last one (op NULL: none yet); looked up again
     * when they change. */
    mca_coll_topoar_reduce_ctx_t blocking_reduce;
    /* A nonblocking set-up in flight (state SETTING_UP), or NULL. */
    struct mca_coll_topoar_nb_setup *nb_setup;
    /* Set up by a nonblocking call, until the first blocking allreduce
     * (mca_coll_topoar_nb_end_provisional): every nonblocking call is
     * topoar's, whatever the set-up decided and whenever this rank saw it
     * complete -- the one rule every rank applies alike to each call.
     * nb_records: every rank's records, for the set-up's completion
     * (probes, contests) at that blocking call; nb_defaults: an engine of
     * the default settings for calls the settings cannot plan. */
    bool nb_provisional;
    topoar_rank_info_t *nb_records;
    topoar_engine_t *nb_defaults;
    /* A set-up a blocking call started (coll_topoar_host.c) whose allgather
     * completed with no nonblocking call waiting for it: its settings,
     * kept so the blocking call that completes it builds the engine once
     * (mca_coll_topoar_nb_take_engine); NULL otherwise. */
    struct mca_coll_topoar_nb_setup *nb_kept;
} mca_coll_topoar_module_t;

OBJ_CLASS_DECLARATION(mca_coll_topoar_module_t);

int mca_coll_topoar_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_topoar_comm_query(struct ompi_communicator_t *comm, int *priority);

int mca_coll_topoar_allreduce(const void *sbuf, void *rbuf, mca_coll_topoar_count_t count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

/* Shared by the host path (coll_topoar_allreduce.c) and the GPU path
 * (coll_topoar_gpu.c). */
void mca_coll_topoar_setup(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm);
/* The first blocking call on a communicator within this host
 * (coll_topoar_module.c): every member starts the agreement, whatever its
 * settings; a member whose *why is set hands every call down and may run
 * the call through the previous module before finishing it.  finish: 1
 * every member hands down (state READY), 0 none does and the full set-up
 * follows, -1 they differ (or the agreement failed): this call is the
 * previous module's on every member, the next one runs the full set-up.
 * mca_coll_topoar_setup runs both when the call has not. */
#define MCA_COLL_TOPOAR_AGREE_DIRECT_MAX 16
typedef struct mca_coll_topoar_one_host {
    unsigned long long d[2];
    struct ompi_request_t *req; /* the previous module's iallreduce, or NULL */
    /* Up to MCA_COLL_TOPOAR_AGREE_DIRECT_MAX members: every member sends
     * d to every other one (the PML's, no collective), got[] receives. */
    unsigned long long got[2 * MCA_COLL_TOPOAR_AGREE_DIRECT_MAX];
    struct ompi_request_t *reqs[2 * MCA_COLL_TOPOAR_AGREE_DIRECT_MAX];
    int nreqs;
    const char *why;
    int rc;
} mca_coll_topoar_one_host_t;
int mca_coll_topoar_one_host_start(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm,
                                   mca_coll_topoar_one_host_t *c);
int mca_coll_topoar_one_host_finish(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm,
                                    mca_coll_topoar_one_host_t *c);
/* Frees the per-process digest cache (component close). */
void mca_coll_topoar_one_host_release(void);
int mca_coll_topoar_fallback(mca_coll_topoar_module_t *m, const char *why, const void *sbuf, void *rbuf,
                             int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm);
/* Why topoar cannot take this call, or NULL. */
const char *mca_coll_topoar_ineligible(int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op);
/* topoar's host path on rbuf in place after prepare (host memory, which may
 * be a staging buffer); marks the communicator failed on an error. */
int mca_coll_topoar_run_host(mca_coll_topoar_module_t *m, const topoar_call_t *call, void *rbuf,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm);
/* The same for a prepared call with call->fast set: the small-message fast
 * path (topoar_engine_run_fast), the PML's requests posted directly. */
int mca_coll_topoar_run_fast(mca_coll_topoar_module_t *m, const topoar_call_t *call, void *rbuf,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm);
int mca_coll_topoar_failed(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm, const char *where);
void mca_coll_topoar_count(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm, size_t bytes,
                           int algorithm, int route);

/* coll_topoar_barrier.c: the module's MPI_Barrier, and its layout, made
 * (once) by a blocking allreduce that runs with topoar set up. */
int mca_coll_topoar_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
void mca_coll_topoar_barrier_arm(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm);

/* The host path of a call (no memory-type question). */
int mca_coll_topoar_allreduce_host(mca_coll_topoar_module_t *m, const void *sbuf, void *rbuf, int count,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm);

/* GPU path: open/close the CUDA library; nonzero if sbuf or rbuf is device
 * memory (only asked when the GPU path is on); the device call; per-module
 * state freed with the module. */
void mca_coll_topoar_gpu_open(void);
void mca_coll_topoar_gpu_close(void);
/* *host_call set: not a device call after all; the caller runs the host
 * call with *host_sbuf as the send buffer. */
int mca_coll_topoar_gpu_allreduce(mca_coll_topoar_module_t *m, const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, int s_dev, int r_dev, int *host_call,
                                  const void **host_sbuf);

/* coll_topoar_nonblocking.c: the module's iallreduce and allreduce_init;
 * a blocking call on a communicator whose nonblocking set-up is in flight
 * completes it first (state READY or FAILED after); the component's
 * close. */
int mca_coll_topoar_iallreduce(const void *sbuf, void *rbuf, mca_coll_topoar_count_t count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module);
int mca_coll_topoar_allreduce_init(const void *sbuf, void *rbuf, mca_coll_topoar_count_t count,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                   ompi_request_t **request, mca_coll_base_module_t *module);
/* A blocking call starts a set-up by the nonblocking allgather of the ranks'
 * records (state NEW; otherwise nothing); it or the next blocking call
 * completes it (mca_coll_topoar_nb_end_provisional), which builds the
 * engine: progress leaves that to it unless a nonblocking call waits. */
int mca_coll_topoar_nb_start_setup(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm);
/* The engine of a set-up a blocking call started, finished without one (m->nb_kept), with
 * the settings its record was made with; NULL when there is none to build
 * or no memory.  Frees what was kept. */
topoar_engine_t *mca_coll_topoar_nb_take_engine(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm);
/* The first blocking call on a communicator spanning hosts, when its data
 * is small (mca_coll_topoar_gathers_first_call: decided from the call and
 * the communicator's size alone, so alike on every member whatever its
 * settings): one allgather of every member's data and record, each
 * member's result every member's data reduced in rank order by the
 * reduction topoar's own calls use; the records are then the set-up's, as
 * the nonblocking allgather's would be (a settings mismatch is found
 * there), and the next blocking call completes it.  rbuf holds the result
 * on success. */
bool mca_coll_topoar_gathers_first_call(struct ompi_communicator_t *comm, size_t bytes);
int mca_coll_topoar_nb_gather_first_call(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm,
                                         const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                         struct ompi_op_t *op, size_t extent);
/* Whether a communicator's first blocking call, spanning hosts, of `bytes`
 * goes to the previous module beside its set-up (coll_topoar_deferred_setup:
 * decided from settings that agree across ranks; never when the previous
 * module's result could differ from topoar's own, may_differ). */
bool mca_coll_topoar_defers_first_call(size_t bytes, bool may_differ);
bool mca_coll_topoar_setup_deferred(void);
void mca_coll_topoar_setup_wait(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm);
void mca_coll_topoar_setup_complete(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm, double waited);
/* The first blocking allreduce on a communicator set up by a nonblocking
 * call (m->nb_provisional): completes the set-up (waits for it, then probes
 * and contests) and ends the provisional rule.  Collective. */
void mca_coll_topoar_nb_end_provisional(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm);
void mca_coll_topoar_nonblocking_close(void);

/* coll_topoar_module.c: enable (remembers the previous allreduce). */
int mca_coll_topoar_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm);
#if MCA_COLL_TOPOAR_INSTALLS_ITSELF
int mca_coll_topoar_module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm);
#endif
/* coll_topoar_transport.c: the PML transport over ctx; the local
 * reduction of (dtype, op) over ctx. */
void mca_coll_topoar_pml_transport(mca_coll_topoar_pml_ctx_t *ctx, topoar_transport_t *out);
/* The blocking calls' (dtype, op) pair on m, looked up again only when it
 * changes: may the previous module's result differ from topoar's own
 * (mca_coll_topoar_previous_may_differ)? */
int mca_coll_topoar_blocking_may_differ(mca_coll_topoar_module_t *m, struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op, size_t extent);
void mca_coll_topoar_host_reducer(mca_coll_topoar_reduce_ctx_t *ctx, struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, size_t extent, topoar_reducer_t *out);
/* inout = in (op) inout over count elements, with the reduction of m's
 * blocking calls (topoar's own typed loops where it has them). */
void mca_coll_topoar_reduce_local(mca_coll_topoar_module_t *m, struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, size_t extent, const void *in, void *inout, size_t count);
/* coll_topoar_log.c: MPI_T variables (at register); what the engine decided
 * at run time (online adaptation, a contest's outcome), on rank 0 at
 * verbose 10. */
int mca_coll_topoar_register_pvars(void);
void mca_coll_topoar_print_notice(mca_coll_topoar_module_t *m, struct ompi_communicator_t *comm);

/* The engine parameters' current values as name/value text for
 * topoar_engine_create (coll_topoar_module.c). */
typedef struct mca_coll_topoar_config {
    topoar_config_t cfg;
    const char *names[TOPOAR_PARAM_MAX];
    const char *values[TOPOAR_PARAM_MAX];
    char numbers[TOPOAR_PARAM_MAX][32];
} mca_coll_topoar_config_t;
void mca_coll_topoar_config(mca_coll_topoar_config_t *out);
/* Where the glue keeps one of its own variables (a glue-only row of the
 * parameter table, by name); NULL for any other name. */
void *mca_coll_topoar_glue_storage(const char *name);
/* What this rank contributes to a set-up: the parameters' values and this
 * process's record (host, socket, Slurm, settings fingerprints). */
void mca_coll_topoar_local_info(mca_coll_topoar_config_t *conf, topoar_rank_info_t *mine);

/* ---- state shared by threads (MPI_THREAD_MULTIPLE) ------------------------
 * Calls on different communicators may run at once in different threads,
 * and so may their set-ups.  Per-communicator state (the module, its engine)
 * is only touched by the one thread MPI allows on that communicator at a
 * time, except by the nonblocking code (coll_topoar_nonblocking.c), which
 * any thread's progress runs under its lock: a nonblocking set-up finished
 * there uses the engine and then, last, publishes the state that lets the
 * communicator's thread use it (an acquire load there).  Process-wide
 * state is written at component register/open (one thread) and only read
 * afterwards, or goes through these helpers (GCC
 * __atomic builtins, as Open MPI's own headers need a GCC-compatible
 * compiler; relaxed order: each value stands alone, and on x86-64 a relaxed
 * load or store is a plain mov, so single-threaded calls pay nothing). */

/* The MPI_T "last call" variables: one call's value, never a torn one; the
 * two may come from different threads' calls. */
static inline void mca_coll_topoar_set_last_path(int route)
{
    __atomic_store_n(&mca_coll_topoar_component.last_path, route, __ATOMIC_RELAXED);
}
static inline void mca_coll_topoar_set_last(int algorithm, int route)
{
    __atomic_store_n(&mca_coll_topoar_component.last_algorithm, algorithm, __ATOMIC_RELAXED);
    mca_coll_topoar_set_last_path(route);
}

/* A per-communicator counter that an MPI_T reader in another thread may
 * read (coll_topoar_allreduce_handled/_fallback): only the thread calling
 * on the communicator writes it, so a load and a store suffice. */
static inline void mca_coll_topoar_bump(unsigned long long *counter)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}
static inline unsigned long long mca_coll_topoar_read(const unsigned long long *counter)
{
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

/* Seconds on the monotonic clock (call and set-up timings). */
static inline double mca_coll_topoar_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* True the first time any thread asks with this flag (said-once messages). */
static inline bool mca_coll_topoar_first_time(bool *flag)
{
    return !__atomic_exchange_n(flag, true, __ATOMIC_RELAXED);
}

END_C_DECLS

#endif /* MCA_COLL_TOPOAR_EXPORT_H */
