/*
 * topoar module: one per communicator -- its life (construct, enable, which
 * remembers the allreduce it overrides, destruct), its collective set-up at
 * the first eligible call, and the one way to the previous module, where
 * every call topoar does not handle goes.
 */
#include "coll_topoar.h"
#include "config/params.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>

#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"
#include "ompi/proc/proc.h"
#include "opal/runtime/opal_progress.h"

static bool all_on_this_host(ompi_communicator_t *comm);

static void topoar_module_construct(mca_coll_topoar_module_t *m)
{
    m->previous_allreduce = NULL;
    m->previous_allreduce_module = NULL;
    m->previous_iallreduce = NULL;
    m->previous_iallreduce_module = NULL;
    m->previous_allreduce_init = NULL;
    m->previous_allreduce_init_module = NULL;
    m->ihandled = m->ifallback = m->phandled = m->pfallback = 0;
    m->bhandled = m->bfallback = 0;
    m->previous_barrier = NULL;
    m->previous_barrier_module = NULL;
    m->bar_armed = 0;
    m->bar_nsteps = 0;
    m->bar_hosts = 0;
    m->nb_setup = NULL;
    m->nb_records = NULL;
    m->nb_defaults = NULL;
    m->nb_provisional = false;
    m->nb_kept = NULL;
    /* set by the blocking set-up when it gives the engine I/O; a
     * nonblocking set-up gives none (and leaves it idle) */
    m->io_ctx.comm = NULL;
    m->io_ctx.idle = 0;
    m->io_ctx.polling = false;
    m->io_ctx.local = false;
    m->all_local = false;
    m->io_ctx.tag = MCA_COLL_BASE_TAG_ALLREDUCE;
    m->blocking_reduce.op = NULL;
    m->blocking_reduce.dtype = NULL;
    m->engine = NULL;
    m->state = TOPOAR_STATE_NEW;
    m->handled = 0;
    m->fallback = 0;
    m->logged_classes = 0;
    m->hand_down_all = NULL;
    m->one_host_checked = false;
    m->gpu = NULL;
    m->gpu_free = NULL;
    for (int i = 0; i < TOPOAR_ALG_MAX; ++i) {
        m->by_algorithm[i] = 0;
    }
}

static void topoar_module_destruct(mca_coll_topoar_module_t *m)
{
    if (NULL != m->gpu_free) { /* the device call's state (coll_topoar_gpu.c) */
        m->gpu_free(m);
    }
    if (NULL != m->previous_allreduce_module) {
        OBJ_RELEASE(m->previous_allreduce_module);
        m->previous_allreduce_module = NULL;
    }
    if (NULL != m->previous_iallreduce_module) {
        OBJ_RELEASE(m->previous_iallreduce_module);
        m->previous_iallreduce_module = NULL;
    }
    if (NULL != m->previous_allreduce_init_module) {
        OBJ_RELEASE(m->previous_allreduce_init_module);
        m->previous_allreduce_init_module = NULL;
    }
    if (NULL != m->previous_barrier_module) {
        OBJ_RELEASE(m->previous_barrier_module);
        m->previous_barrier_module = NULL;
    }
    if (NULL != m->engine) {
        topoar_engine_destroy(m->engine);
        m->engine = NULL;
    }
    free(m->nb_records);
    m->nb_records = NULL;
    free(m->nb_kept); /* its records are nb_records */
    m->nb_kept = NULL;
    if (NULL != m->nb_defaults) {
        topoar_engine_destroy(m->nb_defaults);
        m->nb_defaults = NULL;
    }
}

OBJ_CLASS_INSTANCE(mca_coll_topoar_module_t, mca_coll_base_module_t, topoar_module_construct,
                   topoar_module_destruct);

int mca_coll_topoar_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
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
    m->all_local = all_on_this_host(comm);
    /* Nonblocking and persistent: what the communicator has now (libnbc's,
     * usually); without one, topoar does not take those calls either (the
     * module's slots stay as the previous module's). */
    if (NULL != comm->c_coll->coll_iallreduce && NULL != comm->c_coll->coll_iallreduce_module) {
        m->previous_iallreduce = comm->c_coll->coll_iallreduce;
        m->previous_iallreduce_module = comm->c_coll->coll_iallreduce_module;
        OBJ_RETAIN(m->previous_iallreduce_module);
    }
    if (NULL != comm->c_coll->coll_allreduce_init && NULL != comm->c_coll->coll_allreduce_init_module) {
        m->previous_allreduce_init = comm->c_coll->coll_allreduce_init;
        m->previous_allreduce_init_module = comm->c_coll->coll_allreduce_init_module;
        OBJ_RETAIN(m->previous_allreduce_init_module);
    }
    /* MPI_Barrier (set by comm_query when coll_topoar_barrier is on):
     * only across hosts, and only over a barrier to hand down to. */
    if (NULL != m->super.coll_barrier) {
        if (m->all_local || NULL == comm->c_coll->coll_barrier || NULL == comm->c_coll->coll_barrier_module) {
            m->super.coll_barrier = NULL;
        } else {
            m->previous_barrier = comm->c_coll->coll_barrier;
            m->previous_barrier_module = comm->c_coll->coll_barrier_module;
            OBJ_RETAIN(m->previous_barrier_module);
            MCA_COLL_TOPOAR_INSTALL(comm, barrier, mca_coll_topoar_barrier, module);
        }
    }
    /* coll_topoar_compat.h: Open MPI main's modules install themselves */
    MCA_COLL_TOPOAR_INSTALL(comm, allreduce, mca_coll_topoar_allreduce, module);
    MCA_COLL_TOPOAR_INSTALL(comm, iallreduce, mca_coll_topoar_iallreduce, module);
    MCA_COLL_TOPOAR_INSTALL(comm, allreduce_init, mca_coll_topoar_allreduce_init, module);
    return OMPI_SUCCESS;
}

#if MCA_COLL_TOPOAR_INSTALLS_ITSELF
/* Open MPI main: give back what enable took (the base calls disable in the
 * reverse order of enable, so the module below is still there). */
int mca_coll_topoar_module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_topoar_module_t *m = (mca_coll_topoar_module_t *) module;
    MCA_COLL_TOPOAR_RESTORE(comm, allreduce_init, module, m->previous_allreduce_init,
                            m->previous_allreduce_init_module);
    MCA_COLL_TOPOAR_RESTORE(comm, iallreduce, module, m->previous_iallreduce, m->previous_iallreduce_module);
    MCA_COLL_TOPOAR_RESTORE(comm, allreduce, module, m->previous_allreduce, m->previous_allreduce_module);
    if (NULL != m->previous_barrier) {
        MCA_COLL_TOPOAR_RESTORE(comm, barrier, module, m->previous_barrier, m->previous_barrier_module);
    }
    return OMPI_SUCCESS;
}
#endif

/* What a process computes from its parameters' values, kept while they
 * keep them (MPI_T may change them; checked by value on each use). */
typedef struct {
    bool valid;
    unsigned char raw[sizeof(mca_coll_topoar_component.params)];
    char *strings[TOPOAR_PARAM_MAX];
} params_seen_t;

static bool param_is_string(int i)
{
    topoar_param_info_t p;
    return TOPOAR_OK == topoar_param_info(i, &p) && TOPOAR_PARAM_STRING == p.type;
}

/* The string parameters' indices, found once (the table is fixed): the
 * check below runs at every new communicator's first call. */
static int string_params[TOPOAR_PARAM_MAX];
static int num_string_params = -1;

static void find_string_params(void)
{
    if (num_string_params >= 0) {
        return;
    }
    int n = 0;
    for (int i = 0; i < mca_coll_topoar_component.num_params && i < TOPOAR_PARAM_MAX; ++i) {
        if (param_is_string(i)) {
            string_params[n++] = i;
        }
    }
    num_string_params = n;
}

/* Whether the parameters still have the values `seen` was taken from.
 * Strings by contents: MPI_T may free one and allocate the next at the same
 * address. */
static bool params_unchanged(const params_seen_t *seen)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    if (!seen->valid || 0 != memcmp(seen->raw, cm->params, sizeof(seen->raw))) {
        return false;
    }
    find_string_params();
    for (int k = 0; k < num_string_params; ++k) {
        const int i = string_params[k];
        const char *now = cm->params[i].s, *then = seen->strings[i];
        if ((NULL == now) != (NULL == then) || (NULL != now && 0 != strcmp(now, then))) {
            return false;
        }
    }
    return true;
}

static void params_forget(params_seen_t *seen)
{
    for (int i = 0; i < TOPOAR_PARAM_MAX; ++i) {
        free(seen->strings[i]);
        seen->strings[i] = NULL;
    }
    seen->valid = false;
}

static void params_take(params_seen_t *seen)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    params_forget(seen);
    memcpy(seen->raw, cm->params, sizeof(seen->raw));
    seen->valid = true;
    for (int i = 0; i < cm->num_params; ++i) {
        if (param_is_string(i) && NULL != cm->params[i].s) {
            seen->strings[i] = strdup(cm->params[i].s);
            if (NULL == seen->strings[i]) {
                seen->valid = false; /* computed again next time */
            }
        }
    }
}

/* Whether a parameter names a file (whose contents count in its
 * fingerprint and may change while the value does not). */
static bool params_name_a_file(void)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    for (int i = 0; i < cm->num_params; ++i) {
        topoar_param_glue_t g;
        if (param_is_string(i) && 0 == topoar_param_glue(i, &g) && g.names_file && NULL != cm->params[i].s &&
            '\0' != cm->params[i].s[0]) {
            return true;
        }
    }
    return false;
}

/* One parameter's value as text, from its MCA storage `st` (an int for
 * algorithms and keywords); `num` holds a formatted number. */
static const char *param_text(const topoar_param_info_t *p, const topoar_param_glue_t *g, const void *st, char *num,
                              size_t len)
{
    switch (p->type) {
    case TOPOAR_PARAM_INT: snprintf(num, len, "%d", *(const int *) st); return num;
    case TOPOAR_PARAM_SIZE: snprintf(num, len, "%zu", *(const size_t *) st); return num;
    case TOPOAR_PARAM_BOOL: snprintf(num, len, "%d", *(const bool *) st ? 1 : 0); return num;
    case TOPOAR_PARAM_ALGORITHM: {
        /* MPI_T may have written any int: the engine rejects it by number. */
        const int v = *(const int *) st;
        if (v >= 0 && v < topoar_algorithm_count()) {
            return topoar_algorithm_name(v);
        }
        snprintf(num, len, "%d", v);
        return num;
    }
    case TOPOAR_PARAM_KEYWORD: {
        /* By name, as the user wrote it (a mismatch report shows it). */
        const int v = *(const int *) st;
        int k = 0;
        while (NULL != g->keywords && NULL != g->keywords[k] && k < v) {
            ++k;
        }
        if (v >= 0 && k == v && NULL != g->keywords && NULL != g->keywords[k]) {
            return g->keywords[k];
        }
        snprintf(num, len, "%d", v);
        return num;
    }
    default: {
        const char *text = *(char *const *) st;
        return NULL != text ? text : "";
    }
    }
}

/* The parameters' current values as name/value text for
 * topoar_engine_create: every engine row (the MCA storage of
 * coll_topoar_component.c), and the glue's own rows that must agree
 * (coll_topoar_barrier, coll_topoar_nccl, ...), so that set-up compares
 * their fingerprints with the engine's (the engine parses none of them:
 * set_param passes over glue rows).  None of those glue rows is settable
 * through MPI_T (test_engine checks), so the cache of these texts stays
 * right. */
void mca_coll_topoar_config(mca_coll_topoar_config_t *out)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    int n = 0;
    for (int i = 0; i < topoar_param_count() && n < TOPOAR_PARAM_MAX; ++i) {
        topoar_param_info_t p;
        topoar_param_glue_t g;
        const void *st = NULL;
        if (TOPOAR_OK != topoar_param_info(i, &p) || 0 != topoar_param_glue(i, &g)) {
            continue;
        }
        if (!g.glue_only) {
            st = i < cm->num_params ? (const void *) &cm->params[i] : NULL;
        } else if (p.must_agree) {
            st = mca_coll_topoar_glue_storage(p.name);
        }
        if (NULL == st) {
            continue;
        }
        out->names[n] = p.name;
        out->values[n] = param_text(&p, &g, st, out->numbers[n], sizeof(out->numbers[n]));
        ++n;
    }
    out->cfg.count = n;
    out->cfg.names = out->names;
    out->cfg.values = out->values;
}

/* What the parameters give every set-up of this process, kept while they
 * keep their values (params_unchanged, checked once per use): their texts
 * (~30 numbers formatted were a few microseconds of a small first call),
 * and, while no parameter names a file (a file's contents may change under
 * the same name), the settings fingerprints (parsing them took ~20-40 us of
 * a set-up), their hash and whether auto hands every call down within one
 * host (its reason, or NULL). */
static pthread_mutex_t settings_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    params_seen_t seen;
    mca_coll_topoar_config_t conf;
    bool settings_kept;
    unsigned long long settings[TOPOAR_PARAM_MAX];
    unsigned long long hash; /* of settings (settings_hash) */
    const char *one_host_why;
} params_cache;

/* FNV-1a over the settings' bytes: a quarter of a microsecond, so it is
 * kept with them rather than made at every communicator's first call. */
static unsigned long long settings_hash(const unsigned long long *settings)
{
    unsigned long long h = 14695981039346656037ull;
    const unsigned char *b = (const unsigned char *) settings;
    for (size_t i = 0; i < sizeof(params_cache.settings); i++) {
        h = (h ^ b[i]) * 1099511628211ull;
    }
    return h;
}

/* Under settings_lock: the texts made again when a parameter changed. */
static void params_refresh_locked(void)
{
    if (!params_unchanged(&params_cache.seen)) {
        mca_coll_topoar_config(&params_cache.conf);
        params_take(&params_cache.seen);
        params_cache.settings_kept = false;
    }
}

/* Under settings_lock, after params_refresh_locked: fills mine->settings
 * (mine may be NULL), *one_host_why and *hash (may be NULL). */
static void settings_locked(topoar_rank_info_t *mine, const char **one_host_why, unsigned long long *hash)
{
    if (!params_cache.settings_kept) {
        topoar_rank_info_t scratch;
        topoar_rank_info_t *into = NULL != mine ? mine : &scratch;
        const char *why = NULL; /* set only when it hands down */
        if (NULL == mine) {
            memset(&scratch, 0, sizeof(scratch));
        }
        topoar_settings_fingerprint(&params_cache.conf.cfg, into);
        (void) topoar_config_hands_down_single_host(&params_cache.conf.cfg, &why);
        if (params_name_a_file()) { /* made again at every use */
            *one_host_why = why;
            if (NULL != hash) {
                *hash = settings_hash(into->settings);
            }
            return;
        }
        memcpy(params_cache.settings, into->settings, sizeof(into->settings));
        params_cache.hash = settings_hash(into->settings);
        params_cache.one_host_why = why;
        params_cache.settings_kept = true;
    }
    if (NULL != mine) {
        memcpy(mine->settings, params_cache.settings, sizeof(mine->settings));
    }
    if (NULL != hash) {
        *hash = params_cache.hash;
    }
    *one_host_why = params_cache.one_host_why;
}

static void settings_now(const char **one_host_why, unsigned long long *hash)
{
    pthread_mutex_lock(&settings_lock);
    params_refresh_locked();
    settings_locked(NULL, one_host_why, hash);
    pthread_mutex_unlock(&settings_lock);
}

void mca_coll_topoar_local_info(mca_coll_topoar_config_t *conf, topoar_rank_info_t *mine)
{
    const char *why;
    topoar_local_rank_info(mine);
    pthread_mutex_lock(&settings_lock);
    params_refresh_locked();
    *conf = params_cache.conf;
    conf->cfg.names = conf->names;
    conf->cfg.values = conf->values;
    for (int k = 0; k < conf->cfg.count; ++k) {
        if (params_cache.conf.values[k] == params_cache.conf.numbers[k]) {
            conf->values[k] = conf->numbers[k]; /* the copy's own text, not the cache's */
        }
    }
    settings_locked(mine, &why, NULL);
    pthread_mutex_unlock(&settings_lock);
}

/* A setting that must agree differs between rank 0 and rank `other`: said
 * once, by the differing rank, with both values (rank 0's arrives by a
 * broadcast every rank takes part in; all of them saw the same gathered
 * data, so all of them are here). */
static void report_mismatch(ompi_communicator_t *comm, const mca_coll_topoar_config_t *conf, int param,
                            int other, bool say)
{
    topoar_param_info_t p;
    char mine[512] = "", first[512] = "";
    int rank = ompi_comm_rank(comm);
    if (TOPOAR_OK != topoar_param_info(param, &p)) {
        p.name = "?";
    }
    for (int k = 0; k < conf->cfg.count; ++k) {
        if (0 == strcmp(conf->cfg.names[k], p.name)) {
            snprintf(mine, sizeof(mine), "%s", conf->cfg.values[k]);
        }
    }
    if (0 == rank) {
        memcpy(first, mine, sizeof(first));
    }
    if (OMPI_SUCCESS != comm->c_coll->coll_bcast(first, (int) sizeof(first), MPI_BYTE, 0, comm,
                                                 comm->c_coll->coll_bcast_module)) {
        snprintf(first, sizeof(first), "?");
    }
    if (rank == other && say) {
        opal_output(0, "coll:topoar: set-up failed on %s: coll_topoar_%s differs across ranks: rank 0 has "
                    "'%s', rank %d has '%s'%s; using the previous allreduce on this communicator",
                    comm->c_name, p.name, first, rank, mine,
                    0 == strcmp(first, mine) ? " (the files' contents differ)" : "");
    }
}

/* Whether every member of comm runs on this host (Open MPI's own locality
 * flags: no communication, and the same answer on every member). */
static bool all_on_this_host(ompi_communicator_t *comm)
{
    int n = ompi_comm_size(comm);
    for (int i = 0; i < n; i++) {
        ompi_proc_t *p = ompi_comm_peer_lookup(comm, i);
        if (NULL == p || !OPAL_PROC_ON_LOCAL_NODE(p->super.proc_flags)) {
            return false;
        }
    }
    return true;
}

/* The index of the engine's parameter `name` in cm->params, or -1. */
static int engine_param_index(const char *name)
{
    topoar_param_info_t p;
    for (int i = 0; i < mca_coll_topoar_component.num_params; ++i) {
        if (TOPOAR_OK == topoar_param_info(i, &p) && 0 == strcmp(p.name, name)) {
            return i;
        }
    }
    return -1;
}

/* The indices of the parameters the first call's decisions read, found once. */
static int deferred_index = -2, algorithm_index = -2, max_size_index = -2;
static void find_first_call_params(void)
{
    if (-2 == deferred_index) {
        algorithm_index = engine_param_index("allreduce_algorithm");
        max_size_index = engine_param_index("trial_max_size");
        deferred_index = engine_param_index("deferred_setup");
    }
}

/* Only settings every rank must agree on decide it (the records' check
 * finds a rank that differs, whichever way it went: every member starts
 * the same nonblocking allgather either way).  auto only: a forced
 * algorithm runs from the first call. */
bool mca_coll_topoar_defers_first_call(size_t bytes, bool may_differ)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    find_first_call_params();
    if (deferred_index < 0 || algorithm_index < 0 || max_size_index < 0) {
        return false;
    }
    return !may_differ && cm->params[deferred_index].b && TOPOAR_ALG_AUTO == cm->params[algorithm_index].i &&
           bytes <= cm->params[max_size_index].z;
}

/* coll_topoar_deferred_setup: the set-up of a communicator spanning hosts
 * completes at its second blocking call, not its first (must agree: read
 * only once the records showed that every rank has the same). */
bool mca_coll_topoar_setup_deferred(void)
{
    find_first_call_params();
    return deferred_index < 0 || mca_coll_topoar_component.params[deferred_index].b;
}

/* ---- one host: the first call's agreement --------------------------------
 *
 * A communicator within one host that auto hands down entirely needs no
 * rank records, topology or engine: its members only check that they all
 * have the same settings, the same GPU state and the same answer, with one
 * small allreduce (MAX of a digest and of its complement: all equal iff
 * the largest digest is the complement of the largest complement).  The
 * check is started nonblocking (up to MCA_COLL_TOPOAR_AGREE_DIRECT_MAX
 * members by point-to-point posts to each other, larger groups through the
 * previous module's nonblocking allreduce), so a member that hands down
 * runs the call itself at once, beside it:
 *
 *   every member      start the agreement(digest)
 *   hands down        previous allreduce(call)   wait(digest)
 *   does not          wait(digest)  -> all equal: the full set-up, this call
 *                                   -> differ:    previous allreduce(call)
 *
 * so every member runs the same two collectives in the same order, and when
 * the digests differ every member has given this call to the previous
 * module and runs the full set-up, which names the difference, at the next
 * one.  A short-lived communicator's first call paid the agreement's round
 * trip and ~20-40 us of parameter parsing before the call itself; now the
 * round trip overlaps the call and what the digest is made of is kept per
 * process while the parameters keep their values (params_cache). */

/* This member's digest; *why: auto hands every call down on one host
 * (NULL: it does not). */
static unsigned long long one_host_digest(const char **why)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    unsigned long long h;
    settings_now(why, &h);
    h = (h ^ (unsigned long long) (NULL != *why)) * 1099511628211ull;
    return (h ^ (unsigned long long) (NULL != cm->gpu)) * 1099511628211ull;
}

void mca_coll_topoar_one_host_release(void)
{
    pthread_mutex_lock(&settings_lock);
    params_forget(&params_cache.seen);
    pthread_mutex_unlock(&settings_lock);
}

/* Small groups exchange the digests directly: every member posts a
 * receive from and a send to every other one, on a tag reserved from the
 * communicator's nonblocking tags (every member reserves it here, at its
 * first blocking call).  No collective module is involved, so none is left
 * polling opal_progress for the rest of the job (libnbc registers its
 * progress callback on a communicator's first nonblocking collective and
 * keeps it while the communicator lives), and nothing is scheduled: the
 * agreement costs a member 2 (n - 1) point-to-point posts. */
static int one_host_post(ompi_communicator_t *comm, mca_coll_topoar_one_host_t *c)
{
    const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    const int tag = ompi_coll_base_nbc_reserve_tags(comm, 1);
    int rc = OMPI_SUCCESS;
    for (int i = 0; i < n && OMPI_SUCCESS == rc; ++i) {
        if (i != me) {
            rc = MCA_PML_CALL(irecv(&c->got[2 * i], 2, MPI_UNSIGNED_LONG_LONG, i, tag, comm, &c->reqs[c->nreqs]));
            c->nreqs += OMPI_SUCCESS == rc;
        }
    }
    for (int i = 0; i < n && OMPI_SUCCESS == rc; ++i) {
        if (i != me) {
            rc = MCA_PML_CALL(isend(c->d, 2, MPI_UNSIGNED_LONG_LONG, i, tag, MCA_PML_BASE_SEND_STANDARD, comm,
                                    &c->reqs[c->nreqs]));
            c->nreqs += OMPI_SUCCESS == rc;
        }
    }
    if (OMPI_SUCCESS != rc) { /* cancel what waits (sends complete), so nothing stays posted */
        for (int k = 0; k < c->nreqs; ++k) {
            (void) ompi_request_cancel(c->reqs[k]);
        }
        (void) ompi_request_wait_all((size_t) c->nreqs, c->reqs, MPI_STATUSES_IGNORE);
        c->nreqs = 0;
    }
    return rc;
}

int mca_coll_topoar_one_host_start(mca_coll_topoar_module_t *m, ompi_communicator_t *comm,
                                   mca_coll_topoar_one_host_t *c)
{
    unsigned long long h = one_host_digest(&c->why);
    c->d[0] = h;
    c->d[1] = ~h;
    c->req = MPI_REQUEST_NULL;
    c->nreqs = 0;
    if (ompi_comm_size(comm) <= MCA_COLL_TOPOAR_AGREE_DIRECT_MAX) {
        c->rc = one_host_post(comm, c);
        return c->rc;
    }
    /* Larger groups: the previous module's nonblocking allreduce of the
     * digests (MAX), or without one (every member has the same coll
     * components) the blocking one: the same agreement, not beside the
     * call. */
    if (NULL != m->previous_iallreduce) {
        c->rc = m->previous_iallreduce(MPI_IN_PLACE, c->d, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm, &c->req,
                                       m->previous_iallreduce_module);
    } else {
        c->rc = m->previous_allreduce(MPI_IN_PLACE, c->d, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm,
                                      m->previous_allreduce_module);
    }
    return OMPI_SUCCESS == c->rc && MPI_REQUEST_NULL == c->req ? OMPI_SUCCESS : c->rc;
}

int mca_coll_topoar_one_host_finish(mca_coll_topoar_module_t *m, ompi_communicator_t *comm,
                                    mca_coll_topoar_one_host_t *c)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    int rc = c->rc;
    if (OMPI_SUCCESS == rc && MPI_REQUEST_NULL != c->req) {
        rc = ompi_request_wait(&c->req, MPI_STATUS_IGNORE); /* complete: frees it */
    }
    if (OMPI_SUCCESS == rc && c->nreqs > 0) {
        const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
        rc = ompi_request_wait_all((size_t) c->nreqs, c->reqs, MPI_STATUSES_IGNORE);
        for (int i = 0; i < n && OMPI_SUCCESS == rc; ++i) {
            if (i != me) { /* the MAX of every member's pair, as the allreduce above gives */
                c->d[0] = c->got[2 * i] > c->d[0] ? c->got[2 * i] : c->d[0];
                c->d[1] = c->got[2 * i + 1] > c->d[1] ? c->got[2 * i + 1] : c->d[1];
            }
        }
    }
    m->one_host_checked = true;
    if (OMPI_SUCCESS != rc || c->d[0] != ~c->d[1]) {
        opal_output_verbose(10, cm->output, "coll:topoar: %s (%d ranks, one host): %s; this call is the previous "
                            "module's, the next one sets up with every rank's record", comm->c_name,
                            ompi_comm_size(comm), OMPI_SUCCESS != rc ? "the set-up agreement failed"
                                                                      : "the ranks' settings or GPU state differ");
        return -1;
    }
    if (NULL == c->why || NULL != cm->gpu) {
        return 0;
    }
    m->hand_down_all = c->why;
    m->state = TOPOAR_STATE_READY;
    if (0 == ompi_comm_rank(comm)) {
        opal_output_verbose(10, cm->output, "coll:topoar: %s (%d ranks, one host): every call handed down, "
                            "set up without rank records", comm->c_name, ompi_comm_size(comm));
    }
    return 1;
}

/* The allgather set-up's link probes share their results with. */
static int setup_allgather(void *ctx, const void *mine, size_t bytes, void *all)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) ctx;
    if (bytes > (size_t) INT_MAX) {
        return 1;
    }
    return OMPI_SUCCESS != comm->c_coll->coll_allgather(mine, (int) bytes, MPI_BYTE, all, (int) bytes, MPI_BYTE,
                                                        comm, comm->c_coll->coll_allgather_module);
}

/* The engine's set-up with I/O over comm (links between hosts may be
 * measured: point-to-point over comm, as the calls will run); NULL or the
 * problem.  The engine keeps the transport (its callbacks and context) for
 * online adaptation, so the context is the module's, not this frame's.
 * Polled throughout set-up; a later use inside a call starts like a call
 * (mca_coll_topoar_run_host ends it). */
static const char *setup_with_io(mca_coll_topoar_module_t *m, ompi_communicator_t *comm,
                                 const topoar_rank_info_t *all)
{
    int rc;
    topoar_transport_t transport;
    topoar_setup_io_t io = {&transport, comm, setup_allgather};
    m->io_ctx = (mca_coll_topoar_pml_ctx_t){comm, 0, true, m->all_local, MCA_COLL_BASE_TAG_ALLREDUCE};
    mca_coll_topoar_pml_transport(&m->io_ctx, &transport);
    opal_progress_event_users_increment();
    rc = topoar_engine_setup_io(m->engine, all, &io);
    opal_progress_event_users_decrement();
    m->io_ctx.polling = false;
    return TOPOAR_OK != rc ? topoar_engine_error(m->engine) : NULL;
}

/* Agree on a set-up's outcome: the lowest failing rank, or INT_MAX when all
 * succeeded (*problem set when the agreement itself failed). */
static int agree(mca_coll_topoar_module_t *m, ompi_communicator_t *comm, const char **problem)
{
    int first_failed = *problem ? ompi_comm_rank(comm) : INT_MAX;
    int rc = m->previous_allreduce(MPI_IN_PLACE, &first_failed, 1, MPI_INT, MPI_MIN, comm,
                                   m->previous_allreduce_module);
    if (OMPI_SUCCESS != rc) {
        first_failed = 0;
        if (NULL == *problem) {
            *problem = "could not agree on the set-up outcome";
        }
    }
    return first_failed;
}

/* A communicator set up by a nonblocking call (coll_topoar_nonblocking.c)
 * got no link probes and no contests: its first blocking allreduce, which
 * every rank reaches at the same call, sets the engine up again from the
 * same records with I/O.  On a failure topoar is off on comm (the calls
 * queued by the nonblocking set-up have all been started by then). */
void mca_coll_topoar_setup_complete(mca_coll_topoar_module_t *m, ompi_communicator_t *comm, double waited)
{
    topoar_rank_info_t *all = m->nb_records;
    const char *problem = NULL;
    int first_failed;
    double t0 = mca_coll_topoar_now(), t1 = t0, t2 = t0, t3;
    m->nb_records = NULL;
    if (NULL == all) {
        return;
    }
    if (TOPOAR_STATE_READY == m->state && NULL == m->engine && NULL != m->nb_kept) {
        /* started by a blocking call: the engine is built here, once
         * (every rank agrees below, one that could not build it too) */
        m->engine = mca_coll_topoar_nb_take_engine(m, comm);
        if (NULL == m->engine) {
            problem = "out of memory";
        }
    }
    if (TOPOAR_STATE_READY == m->state && (NULL != m->engine || NULL != problem) && NULL == m->hand_down_all) {
        t1 = mca_coll_topoar_now();
        if (NULL == problem) {
            problem = setup_with_io(m, comm, all);
        }
        t2 = mca_coll_topoar_now();
        first_failed = agree(m, comm, &problem);
        t3 = mca_coll_topoar_now();
        /* Where a fresh communicator's set-up goes, as each rank saw it
         * (the ranks' differences are the skew the agreement absorbs): the
         * wait for the records, the engine's creation, its set-up (links
         * from this process's measurement, the table, the contests'
         * outcomes agreed) and the agreement on the outcome. */
        opal_output_verbose(20, mca_coll_topoar_component.output,
                            "coll:topoar: %s: set-up completed in %.0f us (records waited for %.0f, engine "
                            "created %.0f, set up %.0f, outcome agreed %.0f)", comm->c_name,
                            1e6 * (waited + t3 - t0), 1e6 * waited, 1e6 * (t1 - t0), 1e6 * (t2 - t1),
                            1e6 * (t3 - t2));
        if (INT_MAX != first_failed) {
            m->state = TOPOAR_STATE_FAILED;
            if (ompi_comm_rank(comm) == first_failed && NULL != problem) {
                opal_output(0, "coll:topoar: set-up failed on %s (rank %d): %s; using the previous allreduce on "
                            "this communicator", comm->c_name, first_failed, problem);
            }
        } else {
            m->hand_down_all = NULL;
            (void) topoar_engine_hands_down_all(m->engine, &m->hand_down_all);
            /* the description is text the engine builds: only when said */
            if (0 == ompi_comm_rank(comm) && mca_coll_topoar_component.verbose >= 10) {
                opal_output_verbose(10, mca_coll_topoar_component.output,
                                    "coll:topoar: %s set up again at its first blocking allreduce (links measured "
                                    "where they can be):\n%s", comm->c_name, topoar_engine_describe(m->engine));
            }
        }
    }
    free(all);
}

void mca_coll_topoar_nb_end_provisional(mca_coll_topoar_module_t *m, ompi_communicator_t *comm)
{
    double t0 = mca_coll_topoar_now();
    if (TOPOAR_STATE_SETTING_UP == __atomic_load_n(&m->state, __ATOMIC_ACQUIRE)) {
        mca_coll_topoar_setup_wait(m, comm);
    }
    mca_coll_topoar_setup_complete(m, comm, mca_coll_topoar_now() - t0);
    if (NULL != m->nb_defaults) {
        topoar_engine_destroy(m->nb_defaults); /* operations keep their own */
        m->nb_defaults = NULL;
    }
    m->nb_provisional = false;
}

/* Collective over comm: gathers every rank's host/socket/Slurm data and
 * settings fingerprints with the underlying allgather, checks that the
 * settings that decide message pairing agree, builds the topology, and
 * makes all ranks agree on the outcome (one failing rank disables topoar on
 * comm for everyone). */
void mca_coll_topoar_setup(mca_coll_topoar_module_t *m, ompi_communicator_t *comm)
{
    mca_coll_topoar_component_t *cm = &mca_coll_topoar_component;
    int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    topoar_rank_info_t mine, *all = NULL;
    const char *problem = NULL;
    int rc, first_failed, bad_param = -1, bad_rank = -1;
    /* Said once per process (the same file problem would repeat on every
     * communicator); later ones at verbose level 1.  Set-ups of different
     * communicators may run in different threads at once. */
    static bool told = false;
    mca_coll_topoar_config_t conf;

    if (!m->one_host_checked && m->all_local) {
        mca_coll_topoar_one_host_t c;
        (void) mca_coll_topoar_one_host_start(m, comm, &c);
        if (0 != mca_coll_topoar_one_host_finish(m, comm, &c)) {
            return; /* handed down, or (state still NEW) this call the previous module's */
        }
    }
    mca_coll_topoar_local_info(&conf, &mine);
    all = (topoar_rank_info_t *) calloc((size_t) size, sizeof(*all));
    m->engine = topoar_engine_create(rank, size, &conf.cfg);
    if (NULL == all || NULL == m->engine) {
        problem = "out of memory";
    }
    /* Every rank takes part in the allgather, even one that already failed,
     * so no rank is left waiting. */
    rc = comm->c_coll->coll_allgather(&mine, (int) sizeof(mine), MPI_BYTE,
                                      all ? (void *) all : (void *) &mine, all ? (int) sizeof(mine) : 0,
                                      MPI_BYTE, comm, comm->c_coll->coll_allgather_module);
    if (NULL == problem && OMPI_SUCCESS != rc) {
        problem = "allgather of rank data failed";
    }
    if (NULL == problem && topoar_settings_mismatch(all, size, &bad_param, &bad_rank)) {
        problem = "settings differ across ranks";
    }
    if (NULL == problem) {
        problem = setup_with_io(m, comm, all);
    }
    first_failed = agree(m, comm, &problem);
    if (INT_MAX == first_failed) {
        m->state = TOPOAR_STATE_READY;
        (void) topoar_engine_hands_down_all(m->engine, &m->hand_down_all);
        if (0 == rank && cm->verbose >= 10) {
            opal_output(0, "coll:topoar: topology of %s (%d ranks):\n%s", comm->c_name, size,
                        topoar_engine_describe(m->engine));
        }
    } else {
        m->state = TOPOAR_STATE_FAILED;
        if (bad_param >= 0) {
            /* Every rank found the same mismatch in the same gathered data. */
            bool first = mca_coll_topoar_first_time(&told);
            report_mismatch(comm, &conf, bad_param, bad_rank, first || cm->verbose >= 1);
        } else if (rank == first_failed && NULL != problem &&
                   (mca_coll_topoar_first_time(&told) || cm->verbose >= 1)) {
            opal_output(0, "coll:topoar: set-up failed on %s (rank %d): %s; using the previous "
                        "allreduce on this communicator", comm->c_name, rank, problem);
        }
    }
    free(all);
}


/* ---- the previous module -------------------------------------------------- */

int mca_coll_topoar_fallback(mca_coll_topoar_module_t *m, const char *why, const void *sbuf, void *rbuf,
                             int count, ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm)
{
    mca_coll_topoar_bump(&m->fallback);
    mca_coll_topoar_set_last(TOPOAR_LAST_FALLBACK, TOPOAR_ROUTE_HAND_DOWN);
    opal_output_verbose(50, mca_coll_topoar_component.output,
                        "coll:topoar: %s: allreduce of %d x %s passed down (%s)", comm->c_name, count,
                        dtype->name, why);
    return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
}

/* Why topoar cannot take this call, or NULL if it can. */
const char *mca_coll_topoar_ineligible(int count, ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    ptrdiff_t lb, extent;
    int commute = 0;
    if (count < 0) {
        return "negative count";
    }
    if (MPI_SUCCESS != PMPI_Op_commutative(op, &commute) || !commute) {
        return "non-commutative operation";
    }
    if (!ompi_datatype_is_predefined(dtype)) {
        return "derived datatype";
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);
    if (0 != lb || extent <= 0) {
        return "datatype with a lower bound or empty extent";
    }
    return NULL;
}
