/*
 * topoar_osu_allreduce -- MPI_Allreduce latency benchmark of the topoar
 * project.
 *
 * Written from scratch for topoar.  Its command line and its output table
 * follow the conventions of OSU Micro-Benchmarks' osu_allreduce (same option
 * letters for the common options, same column names and widths), so that
 * tables from both tools can be read and parsed alike.  Extra options show
 * which topoar algorithm ran (-a), run on a communicator that leaves ranks
 * out (-e), repeat the sweep (-r), cap the time per size (-b) and use
 * MPI_IN_PLACE (-l).
 *
 * Measurement, per message size (as OSU does it, so numbers compare):
 *
 *     warmup iterations          (untimed)
 *     repeat `iters` times:      t0 = Wtime; Allreduce; t1 = Wtime; Barrier
 *     per-rank latency         = sum(t1 - t0) / iters
 *     Avg / Min / Max Latency  = mean / min / max of the per-rank latencies
 *
 * Nonblocking mode (-N), columns as OSU's osu_iallreduce:
 *
 *     pure comm:  repeat: t0; MPI_Iallreduce; MPI_Wait; t1; Barrier
 *                 (the per-rank mean, averaged over ranks: Pure Comm.)
 *     overlap:    repeat: t0; MPI_Iallreduce; compute for Pure Comm. time
 *                 (a calibrated loop of arithmetic, in -t + 1 pieces with
 *                 an MPI_Test between them); MPI_Wait; t1; Barrier
 *     Overall     = mean of t1 - t0;  Compute = mean time in the loop
 *     Overlap(%)  = 100 * (1 - (Overall - Compute) / Pure Comm.), in 0..100
 *
 * Data: MPI_FLOAT, MPI_SUM.  With -c every iteration (warmup and timed)
 * refills the send buffer with small integers that depend on the rank, the
 * element index and the iteration, poisons the receive buffer, and checks
 * every element afterwards; integer-valued floats below 2^24 add exactly in
 * any order, so the check is exact.
 *
 * Build:  mpicc -O2 -o topoar_osu_allreduce tools/topoar_osu_allreduce.c
 */

#include <mpi.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topoar_cudart.h"
#include "topoar_mpit_names.h"
#include <unistd.h>

#define BENCH_NAME "topoar_osu_allreduce"
#define BENCH_VERSION "1.0"
#define ALG_PVAR_NAME "coll_topoar_allreduce_last_algorithm"

/* Column layout of OSU's tables: size left-aligned in 10, values right-
 * aligned in 20, the iteration count in 12. */
#define SIZE_WIDTH 10
#define FIELD_WIDTH 20
#define ITER_WIDTH 12
#define PRECISION 2

struct bench_options {
    size_t min_size;
    size_t max_size;
    int iters;            /* timed iterations, sizes below large_threshold */
    int warmup;           /* warmup iterations, sizes below large_threshold */
    int iters_large;      /* timed iterations, sizes >= large_threshold */
    int warmup_large;
    size_t large_threshold;
    int full;             /* -f */
    int validate;         /* -c */
    int show_alg;         /* -a */
    int in_place;         /* -l */
    int repeats;          /* -r */
    double time_budget;   /* -b: seconds per size and repeat, 0 = no cap */
    char *exclude_spec;   /* -e */
    int device;           /* -d cuda */
    int nonblocking;      /* -N */
    int test_calls;       /* -t: MPI_Test calls during the computation (-N) */
};

static int world_rank = 0;

/* -d cuda: the CUDA runtime (loaded at run time, topoar_cudart.h);
 * dev.send/dev.recv mirror the host buffers on the device. */
static struct {
    topoar_cudart_t rt;
    void *send, *recv;
} dev;

static void die(const char *fmt, ...);

static void device_init(size_t bytes)
{
    char why[256];
    if (0 != topoar_cudart_load(&dev.rt, why, sizeof why))
        die("-d cuda: %s", why);
    if (0 != dev.rt.malloc_(&dev.send, bytes ? bytes : 1) || 0 != dev.rt.malloc_(&dev.recv, bytes ? bytes : 1))
        die("-d cuda: cudaMalloc of %zu bytes failed", bytes);
}

/* TOPOAR_H2D or TOPOAR_D2H */
static void device_copy(void *dst, const void *src, size_t bytes, int kind)
{
    if (0 != dev.rt.memcpy_(dst, src, bytes, kind))
        die("-d cuda: cudaMemcpy failed");
}

/* ------------------------------------------------------------------ */
/* error handling                                                      */
/* ------------------------------------------------------------------ */

static void die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s [rank %d]: ", BENCH_NAME, world_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
    exit(EXIT_FAILURE); /* not reached */
}

/* Every MPI call goes through this; the communicators use
 * MPI_ERRORS_RETURN so failures are reported with their place. */
#define MPI_TRY(call)                                                       \
    do {                                                                    \
        int mpi_try_rc_ = (call);                                           \
        if (MPI_SUCCESS != mpi_try_rc_) {                                   \
            char mpi_try_msg_[MPI_MAX_ERROR_STRING];                        \
            int mpi_try_len_ = 0;                                           \
            if (MPI_SUCCESS !=                                              \
                MPI_Error_string(mpi_try_rc_, mpi_try_msg_, &mpi_try_len_)) \
                snprintf(mpi_try_msg_, sizeof(mpi_try_msg_), "code %d",     \
                         mpi_try_rc_);                                      \
            die("%s:%d: %s failed: %s", __FILE__, __LINE__, #call,          \
                mpi_try_msg_);                                              \
        }                                                                   \
    } while (0)

static void *xmalloc(size_t bytes, const char *what)
{
    void *p = NULL;

    /* 64-byte alignment: what a vectorised reduction likes */
    if (0 != posix_memalign(&p, 64, bytes ? bytes : 1))
        die("cannot allocate %zu bytes for %s", bytes, what);
    return p;
}

/* ------------------------------------------------------------------ */
/* command line                                                        */
/* ------------------------------------------------------------------ */

static void usage(FILE *out)
{
    fprintf(out,
"Usage: %s [options]\n"
"MPI_Allreduce (MPI_FLOAT, MPI_SUM) latency, OSU-style output.\n"
"Options shared with OSU's osu_allreduce:\n"
"  -m [MIN:]MAX   message sizes in bytes, doubling from MIN to MAX\n"
"                 (default 4:1048576; sizes below 4 bytes are skipped)\n"
"  -i ITER        timed iterations per size (default 1000)\n"
"  -x WARMUP      warmup iterations per size (default 100)\n"
"  -f             full output: Min, Max Latency and Iterations columns\n"
"  -c             validate every result (adds a Validation column)\n"
"  -l             use MPI_IN_PLACE\n"
"  -d cuda|host   buffers in GPU memory (libcudart.so.13 loaded at run time;\n"
"                 one device per local rank) or host memory (default)\n"
"  -h             this help\n"
"topoar's own options:\n"
"  -I ITER        timed iterations for sizes >= the large threshold\n"
"                 (default min(ITER, 100))  [differs from OSU's -I]\n"
"  -X WARMUP      warmup iterations for large sizes (default min(WARMUP, 10))\n"
"  -L BYTES       large-message threshold (default 1048576)\n"
"  -b SECONDS     cap the timed time per size: fewer iterations when the\n"
"                 warmup says they would take longer (default: no cap)\n"
"  -a             add an Algorithm column: topoar's algorithm of the last\n"
"                 timed call (MPI_T pvar " ALG_PVAR_NAME "),\n"
"                 \"-\" where the variable does not exist\n"
"  -e R1,R2,...   leave these MPI_COMM_WORLD ranks out: the benchmark runs on\n"
"                 a sub-communicator of the others; the excluded ranks wait\n"
"  -r N           repeat the whole size sweep N times, one table each\n"
"  -N             nonblocking: MPI_Iallreduce + MPI_Wait, alone (Pure Comm.)\n"
"                 and around a computation as long as that (Overall,\n"
"                 Compute, Overlap columns, as OSU's osu_iallreduce)\n"
"  -t CALLS       with -N: MPI_Test calls during the computation (default 0;\n"
"                 OSU's -t)\n",
            BENCH_NAME);
}

static int parse_size(const char *s, size_t *out)
{
    char *end = NULL;
    unsigned long long v;

    if (NULL == s || '\0' == *s || '-' == *s)
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (0 != errno || end == s)
        return -1;
    /* optional binary suffix: 64K, 4M */
    if ('k' == *end || 'K' == *end) {
        v <<= 10;
        end++;
    } else if ('m' == *end || 'M' == *end) {
        v <<= 20;
        end++;
    } else if ('g' == *end || 'G' == *end) {
        v <<= 30;
        end++;
    }
    if ('\0' != *end)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_int(const char *s, int min, int *out)
{
    char *end = NULL;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (0 != errno || end == s || '\0' != *end || v < min || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

/* "-m MAX", "-m MIN:MAX", "-m MIN:" */
static int parse_range(char *arg, struct bench_options *o)
{
    char *colon = strchr(arg, ':');

    if (NULL == colon)
        return parse_size(arg, &o->max_size);
    *colon = '\0';
    if ('\0' != arg[0] && parse_size(arg, &o->min_size))
        return -1;
    if ('\0' != colon[1] && parse_size(colon + 1, &o->max_size))
        return -1;
    return 0;
}

/* Returns 0 to run, 1 for help printed, -1 for bad usage (message printed
 * by rank 0). */
static int parse_options(int argc, char **argv, struct bench_options *o)
{
    int c, iters_large_set = 0, warmup_large_set = 0;
    char range_buf[128];

    memset(o, 0, sizeof(*o));
    o->min_size = 4;
    o->max_size = 1 << 20;
    o->iters = 1000;
    o->warmup = 100;
    o->large_threshold = 1 << 20;
    o->repeats = 1;

    opterr = 0;
    while (-1 != (c = getopt(argc, argv, ":m:i:x:I:X:L:b:e:r:d:t:fclahN"))) {
        switch (c) {
        case 'm':
            if (strlen(optarg) >= sizeof(range_buf))
                goto bad;
            strcpy(range_buf, optarg);
            if (parse_range(range_buf, o))
                goto bad;
            break;
        case 'i':
            if (parse_int(optarg, 1, &o->iters))
                goto bad;
            break;
        case 'x':
            if (parse_int(optarg, 0, &o->warmup))
                goto bad;
            break;
        case 'I':
            if (parse_int(optarg, 1, &o->iters_large))
                goto bad;
            iters_large_set = 1;
            break;
        case 'X':
            if (parse_int(optarg, 0, &o->warmup_large))
                goto bad;
            warmup_large_set = 1;
            break;
        case 'L':
            if (parse_size(optarg, &o->large_threshold))
                goto bad;
            break;
        case 'b': {
            char *end = NULL;
            o->time_budget = strtod(optarg, &end);
            if (end == optarg || '\0' != *end || !(o->time_budget >= 0.0))
                goto bad;
            break;
        }
        case 'e':
            o->exclude_spec = optarg;
            break;
        case 'r':
            if (parse_int(optarg, 1, &o->repeats))
                goto bad;
            break;
        case 'd':
            if (0 == strcmp(optarg, "cuda")) o->device = 1;
            else if (0 == strcmp(optarg, "host")) o->device = 0;
            else { fprintf(stderr, "%s: -d takes cuda or host\n", BENCH_NAME); return -1; }
            break;
        case 't':
            if (parse_int(optarg, 0, &o->test_calls))
                goto bad;
            break;
        case 'N': o->nonblocking = 1; break;
        case 'f': o->full = 1; break;
        case 'c': o->validate = 1; break;
        case 'l': o->in_place = 1; break;
        case 'a': o->show_alg = 1; break;
        case 'h':
            if (0 == world_rank)
                usage(stdout);
            return 1;
        default:
            goto bad;
        }
    }
    if (optind < argc)
        goto bad;
    if (!iters_large_set)
        o->iters_large = o->iters < 100 ? o->iters : 100;
    if (!warmup_large_set)
        o->warmup_large = o->warmup < 10 ? o->warmup : 10;
    if (o->min_size < 1)
        o->min_size = 1;
    if (o->min_size > o->max_size || o->max_size > ((size_t)INT_MAX) * 4)
        goto bad;
    if (o->nonblocking && o->device) {
        if (0 == world_rank)
            fprintf(stderr, "%s: -N with -d cuda is not supported\n", BENCH_NAME);
        return -1;
    }
    return 0;

bad:
    if (0 == world_rank) {
        if (optind <= argc && optind > 0)
            fprintf(stderr, "%s: invalid option or argument near '%s'\n",
                    BENCH_NAME, argv[optind - 1]);
        usage(stderr);
    }
    return -1;
}

/* Marks excluded[r] for every rank in "1,3,5"; returns the number of
 * distinct ranks, or -1 on a malformed list or a rank out of range. */
static int parse_exclude(const char *spec, int nranks, char *excluded)
{
    const char *p = spec;
    int count = 0;

    while ('\0' != *p) {
        char *end = NULL;
        long r;

        errno = 0;
        r = strtol(p, &end, 10);
        if (0 != errno || end == p || r < 0 || r >= nranks)
            return -1;
        if (!excluded[r]) {
            excluded[r] = 1;
            count++;
        }
        p = end;
        if (',' == *p)
            p++;
        else if ('\0' != *p)
            return -1;
    }
    return count;
}

/* ------------------------------------------------------------------ */
/* topoar's last-algorithm performance variable (MPI_T)                */
/* ------------------------------------------------------------------ */

struct alg_probe {
    int available;
    char desc[2048];            /* the variable's description */
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle;
    MPI_T_enum enumtype;
    int num_items;
};

static void alg_probe_open(struct alg_probe *p)
{
    int provided, index, rc, count;
    int name_len, desc_len, verbosity, var_class, bind, readonly, cont, atomic;
    char name[256], desc[2048];
    MPI_Datatype dtype;

    memset(p, 0, sizeof(*p));
    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided))
        return;
    if (MPI_SUCCESS != MPI_T_pvar_get_index(ALG_PVAR_NAME,
                                            MPI_T_PVAR_CLASS_STATE, &index))
        return; /* topoar not loaded: the column shows "-" */

    name_len = sizeof(name);
    desc_len = sizeof(desc);
    if (MPI_SUCCESS != MPI_T_pvar_get_info(index, name, &name_len, &verbosity,
                                           &var_class, &dtype, &p->enumtype,
                                           desc, &desc_len, &bind, &readonly,
                                           &cont, &atomic))
        return;
    snprintf(p->desc, sizeof(p->desc), "%s", desc);
    if (MPI_INT != dtype || MPI_T_BIND_NO_OBJECT != bind) {
        if (0 == world_rank)
            fprintf(stderr, "%s: warning: pvar %s has an unexpected type or "
                    "binding; algorithm column disabled\n", BENCH_NAME,
                    ALG_PVAR_NAME);
        return;
    }
    if (MPI_T_ENUM_NULL != p->enumtype) {
        char ename[256];
        int elen = sizeof(ename);
        if (MPI_SUCCESS != MPI_T_enum_get_info(p->enumtype, &p->num_items,
                                               ename, &elen))
            p->num_items = 0;
    }
    if (MPI_SUCCESS != MPI_T_pvar_session_create(&p->session))
        return;
    if (MPI_SUCCESS != MPI_T_pvar_handle_alloc(p->session, index, NULL,
                                               &p->handle, &count) ||
        1 != count) {
        MPI_T_pvar_session_free(&p->session);
        return;
    }
    if (!cont) {
        rc = MPI_T_pvar_start(p->session, p->handle);
        if (MPI_SUCCESS != rc && MPI_T_ERR_PVAR_NO_STARTSTOP != rc) {
            MPI_T_pvar_handle_free(p->session, &p->handle);
            MPI_T_pvar_session_free(&p->session);
            return;
        }
    }
    p->available = 1;
}

/* Name of the algorithm of this process's latest allreduce: the enum
 * item's name, the number if it has none, "-" without the variable. */
static void alg_probe_read(struct alg_probe *p, char *out, size_t out_len)
{
    int value = 0, i;

    snprintf(out, out_len, "-");
    if (!p->available)
        return;
    if (MPI_SUCCESS != MPI_T_pvar_read(p->session, p->handle, &value)) {
        snprintf(out, out_len, "?");
        return;
    }
    for (i = 0; i < p->num_items; i++) {
        char item[128];
        int item_value, item_len = sizeof(item);
        if (MPI_SUCCESS == MPI_T_enum_get_item(p->enumtype, i, &item_value,
                                               item, &item_len) &&
            item_value == value) {
            snprintf(out, out_len, "%s", item);
            return;
        }
    }
    /* topoar registers the variable without an MPI_T enum (Open MPI
     * 4.1.4's ompi_info crashes on enum pvars); its description lists the
     * values, from topoar's algorithm table. */
    if (!topoar_name_in_description(p->desc, value, out, out_len))
        snprintf(out, out_len, "%d", value);
}

static void alg_probe_close(struct alg_probe *p)
{
    if (p->available) {
        MPI_T_pvar_handle_free(p->session, &p->handle);
        MPI_T_pvar_session_free(&p->session);
    }
    MPI_T_finalize(); /* pairs with MPI_T_init_thread, which may have
                         succeeded even when the variable is missing */
}

/* ------------------------------------------------------------------ */
/* data and validation                                                 */
/* ------------------------------------------------------------------ */

/* Small integers: the sum over at most 2^16 ranks stays below 2^24 and is
 * exact in float whatever the reduction order. */
static inline float pattern(int rank, size_t i, int iter)
{
    return (float)((int)((i * 7 + (size_t)iter * 3 + (size_t)rank * 5) % 31)
                   - 15 + (rank % 3));
}

static void fill_send(float *buf, size_t n, int rank, int iter)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = pattern(rank, i, iter);
}

static size_t count_errors(const float *res, size_t n, int nranks, int iter,
                           size_t *first_bad)
{
    size_t bad = 0;

    for (size_t i = 0; i < n; i++) {
        double want = 0.0;
        for (int r = 0; r < nranks; r++)
            want += pattern(r, i, iter);
        if ((double)res[i] != want) {
            if (0 == bad)
                *first_bad = i;
            bad++;
        }
    }
    return bad;
}

/* ------------------------------------------------------------------ */
/* output                                                              */
/* ------------------------------------------------------------------ */

static void print_header(const struct bench_options *o, int nranks,
                         int world_size, int excluded_count, int repeat)
{
    if (o->nonblocking) {
        printf("# topoar MPI Non-blocking Allreduce Latency Test (%s v%s, OSU-style)\n",
               BENCH_NAME, BENCH_VERSION);
        printf("# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait; MPI_Test calls: %d\n",
               o->test_calls);
    } else {
        printf("# topoar MPI Allreduce Latency Test (%s v%s, OSU-style)\n",
               BENCH_NAME, BENCH_VERSION);
    }
    printf("# Datatype: MPI_FLOAT, op: MPI_SUM%s.\n",
           o->in_place ? ", MPI_IN_PLACE" : "");
    if (excluded_count > 0)
        printf("# Ranks: %d of %d (excluded: %s)\n", nranks, world_size,
               o->exclude_spec);
    else
        printf("# Ranks: %d\n", nranks);
    if (o->repeats > 1)
        printf("# Repeat: %d of %d\n", repeat + 1, o->repeats);
    if (o->nonblocking) {
        printf("%-*s%*s%*s%*s%*s", SIZE_WIDTH, "# Size", FIELD_WIDTH, "Overall(us)", FIELD_WIDTH,
               "Compute(us)", FIELD_WIDTH, "Pure Comm.(us)", FIELD_WIDTH, "Overlap(%)");
        if (o->full)
            printf("%*s%*s%*s", FIELD_WIDTH, "Min Comm.(us)", FIELD_WIDTH, "Max Comm.(us)", ITER_WIDTH,
                   "Iterations");
    } else {
        printf("%-*s%*s", SIZE_WIDTH, "# Size", FIELD_WIDTH, "Avg Latency(us)");
    }
    if (o->full && !o->nonblocking)
        printf("%*s%*s%*s", FIELD_WIDTH, "Min Latency(us)", FIELD_WIDTH,
               "Max Latency(us)", ITER_WIDTH, "Iterations");
    if (o->validate)
        printf("%*s", FIELD_WIDTH, "Validation");
    if (o->show_alg)
        printf("%*s", FIELD_WIDTH, "Algorithm");
    printf("\n");
    fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* one message size                                                    */
/* ------------------------------------------------------------------ */

struct size_result {
    double avg_us, min_us, max_us;  /* -N: of the pure communication */
    double overall_us, compute_us;  /* -N */
    int iters;
    unsigned long long errors; /* summed over ranks */
    char alg[128];             /* as seen by rank 0 of the communicator */
};

static void run_size(const struct bench_options *o, MPI_Comm comm, int rank,
                     int nranks, float *sendbuf, float *recvbuf, size_t count,
                     struct alg_probe *probe, struct size_result *res)
{
    size_t bytes = count * sizeof(float);
    int large = bytes >= o->large_threshold;
    int warmup = large ? o->warmup_large : o->warmup;
    static int ran_before = 0; /* the program's first size on comm */
    int first_size = !ran_before;
    ran_before = 1;
    int iters = large ? o->iters_large : o->iters;
    const void *sbuf = o->in_place ? MPI_IN_PLACE : o->device ? dev.send : (const void *)sendbuf;
    void *rbuf = o->device ? dev.recv : (void *)recvbuf;
    unsigned long long local_errors = 0;
    size_t first_bad = 0;
    double timer = 0.0, lat_us;
    int it, total;

    /* fresh data for the non-validating run; in-place overwrites recvbuf */
    fill_send(o->in_place ? recvbuf : sendbuf, count, rank, 0);

    MPI_TRY(MPI_Barrier(comm));
    {
        /* The first call of the run sets the communicator up (topoar: its
         * set-up, and across hosts with no file the link probes): it is
         * warmup, but not part of the rate -b estimates from. */
        double w0 = MPI_Wtime();
        int rated = warmup;
        for (it = 0; it < warmup; it++) {
            if (1 == it && first_size) {
                w0 = MPI_Wtime();
                rated = warmup - 1;
            }
            if (o->validate || o->in_place || (o->device && 0 == it)) {
                fill_send(o->in_place ? recvbuf : sendbuf, count, rank, it);
                if (o->device)
                    device_copy(o->in_place ? dev.recv : dev.send, o->in_place ? (void *)recvbuf : (void *)sendbuf,
                                bytes, TOPOAR_H2D);
            }
            MPI_TRY(MPI_Allreduce(sbuf, rbuf, (int)count, MPI_FLOAT,
                                  MPI_SUM, comm));
            MPI_TRY(MPI_Barrier(comm));
        }
        /* -b: rank 0's warmup rate decides for everybody (MPI_Bcast, so the
         * allreduce statistics stay those of the measured calls) */
        if (o->time_budget > 0.0) {
            double per_iter = rated > 0 ? (MPI_Wtime() - w0) / rated : 0.0;
            int capped = iters;
            if (per_iter > 0.0 && per_iter * iters > o->time_budget) {
                capped = (int)(o->time_budget / per_iter);
                if (capped < 1)
                    capped = 1;
            }
            MPI_TRY(MPI_Bcast(&capped, 1, MPI_INT, 0, comm));
            iters = capped;
        }
    }

    total = iters;
    for (it = 0; it < total; it++) {
        double t0, t1;
        if (o->validate) {
            fill_send(o->in_place ? recvbuf : sendbuf, count, rank, it);
            if (!o->in_place)
                for (size_t i = 0; i < count; i++)
                    recvbuf[i] = NAN;
            if (o->device) {
                device_copy(dev.recv, recvbuf, bytes, TOPOAR_H2D);
                if (!o->in_place)
                    device_copy(dev.send, sendbuf, bytes, TOPOAR_H2D);
            }
            MPI_TRY(MPI_Barrier(comm));
        } else if (o->in_place) {
            /* keep values bounded: repeated in-place sums would overflow */
            fill_send(recvbuf, count, rank, 0);
            if (o->device)
                device_copy(dev.recv, recvbuf, bytes, TOPOAR_H2D);
            MPI_TRY(MPI_Barrier(comm));
        }
        t0 = MPI_Wtime();
        MPI_TRY(MPI_Allreduce(sbuf, rbuf, (int)count, MPI_FLOAT, MPI_SUM,
                              comm));
        t1 = MPI_Wtime();
        MPI_TRY(MPI_Barrier(comm));
        timer += t1 - t0;
        if (o->validate) {
            if (o->device)
                device_copy(recvbuf, dev.recv, bytes, TOPOAR_D2H);
            local_errors += count_errors(recvbuf, count, nranks, it,
                                         &first_bad);
        }
    }

    /* read before the reductions below, which are allreduces too */
    alg_probe_read(probe, res->alg, sizeof(res->alg));

    if (o->validate && local_errors > 0)
        fprintf(stderr, "%s: rank %d: %llu wrong elements at size %zu "
                "(first at element %zu)\n", BENCH_NAME, rank, local_errors,
                bytes, first_bad);

    lat_us = timer * 1e6 / iters;
    MPI_TRY(MPI_Reduce(&lat_us, &res->min_us, 1, MPI_DOUBLE, MPI_MIN, 0,
                       comm));
    MPI_TRY(MPI_Reduce(&lat_us, &res->max_us, 1, MPI_DOUBLE, MPI_MAX, 0,
                       comm));
    MPI_TRY(MPI_Reduce(&lat_us, &res->avg_us, 1, MPI_DOUBLE, MPI_SUM, 0,
                       comm));
    MPI_TRY(MPI_Reduce(&local_errors, &res->errors, 1,
                       MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, comm));
    res->avg_us /= nranks;
    res->iters = iters;
}

/* ------------------------------------------------------------------ */
/* -N: nonblocking, with a computation to overlap                      */
/* ------------------------------------------------------------------ */

static double work_rate;      /* loop iterations per second (calibrated) */
static volatile double work_sink;

static void work(long n)
{
    double x = work_sink + 1.0;
    for (long i = 0; i < n; i++)
        x = x * 1.0000001 + 1e-7;
    work_sink = x;
}

/* The loop's speed on this rank, over about 0.1 s. */
static void calibrate_work(void)
{
    long n = 1000;
    double t;
    for (;;) {
        double t0 = MPI_Wtime();
        work(n);
        t = MPI_Wtime() - t0;
        if (t > 0.1 || n > (1L << 40))
            break;
        n *= 2;
    }
    work_rate = n / t;
}

/* Computes for about `seconds` in calls + 1 pieces, MPI_Test on req
 * between them; returns the time spent computing (the tests excluded). */
static double compute(double seconds, int calls, MPI_Request *req)
{
    long total = (long)(seconds * work_rate), done = 0;
    double spent = 0.0;
    for (int p = 0; p <= calls; p++) {
        long piece = total * (p + 1) / (calls + 1) - done;
        double t0 = MPI_Wtime();
        work(piece);
        spent += MPI_Wtime() - t0;
        done += piece;
        if (p < calls) {
            int flag;
            MPI_TRY(MPI_Test(req, &flag, MPI_STATUS_IGNORE));
        }
    }
    return spent;
}

static void run_size_nb(const struct bench_options *o, MPI_Comm comm, int rank, int nranks, float *sendbuf,
                        float *recvbuf, size_t count, struct alg_probe *probe, struct size_result *res)
{
    size_t bytes = count * sizeof(float);
    int large = bytes >= o->large_threshold;
    int warmup = large ? o->warmup_large : o->warmup;
    int iters = large ? o->iters_large : o->iters;
    const void *sbuf = o->in_place ? MPI_IN_PLACE : (const void *)sendbuf;
    unsigned long long local_errors = 0;
    size_t first_bad = 0;
    double comm_t = 0.0, overall_t = 0.0, comp_t = 0.0, v;
    MPI_Request req;
    int it;

    fill_send(o->in_place ? recvbuf : sendbuf, count, rank, 0);
    MPI_TRY(MPI_Barrier(comm));
    for (it = 0; it < warmup; it++) {
        if (o->in_place)
            fill_send(recvbuf, count, rank, 0);
        MPI_TRY(MPI_Iallreduce(sbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM, comm, &req));
        MPI_TRY(MPI_Wait(&req, MPI_STATUS_IGNORE));
        MPI_TRY(MPI_Barrier(comm));
    }
    /* 1. the communication alone */
    for (it = 0; it < iters; it++) {
        double t0;
        if (o->in_place) {
            fill_send(recvbuf, count, rank, 0);
            MPI_TRY(MPI_Barrier(comm));
        }
        t0 = MPI_Wtime();
        MPI_TRY(MPI_Iallreduce(sbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM, comm, &req));
        MPI_TRY(MPI_Wait(&req, MPI_STATUS_IGNORE));
        comm_t += MPI_Wtime() - t0;
        MPI_TRY(MPI_Barrier(comm));
    }
    v = comm_t * 1e6 / iters;
    MPI_TRY(MPI_Allreduce(&v, &res->avg_us, 1, MPI_DOUBLE, MPI_SUM, comm));
    res->avg_us /= nranks;
    MPI_TRY(MPI_Reduce(&v, &res->min_us, 1, MPI_DOUBLE, MPI_MIN, 0, comm));
    MPI_TRY(MPI_Reduce(&v, &res->max_us, 1, MPI_DOUBLE, MPI_MAX, 0, comm));

    /* 2. around a computation as long as the mean communication */
    for (it = 0; it < iters; it++) {
        double t0;
        if (o->validate) {
            fill_send(o->in_place ? recvbuf : sendbuf, count, rank, it);
            if (!o->in_place)
                for (size_t i = 0; i < count; i++)
                    recvbuf[i] = NAN;
        } else if (o->in_place) {
            fill_send(recvbuf, count, rank, 0);
        }
        MPI_TRY(MPI_Barrier(comm));
        t0 = MPI_Wtime();
        MPI_TRY(MPI_Iallreduce(sbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM, comm, &req));
        comp_t += compute(res->avg_us * 1e-6, o->test_calls, &req);
        MPI_TRY(MPI_Wait(&req, MPI_STATUS_IGNORE));
        overall_t += MPI_Wtime() - t0;
        if (o->validate)
            local_errors += count_errors(recvbuf, count, nranks, it, &first_bad);
    }
    MPI_TRY(MPI_Barrier(comm));
    alg_probe_read(probe, res->alg, sizeof(res->alg));
    if (o->validate && local_errors > 0)
        fprintf(stderr, "%s: rank %d: %llu wrong elements at size %zu (first at element %zu)\n", BENCH_NAME, rank,
                local_errors, bytes, first_bad);
    v = overall_t * 1e6 / iters;
    MPI_TRY(MPI_Reduce(&v, &res->overall_us, 1, MPI_DOUBLE, MPI_SUM, 0, comm));
    v = comp_t * 1e6 / iters;
    MPI_TRY(MPI_Reduce(&v, &res->compute_us, 1, MPI_DOUBLE, MPI_SUM, 0, comm));
    MPI_TRY(MPI_Reduce(&local_errors, &res->errors, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, comm));
    res->overall_us /= nranks;
    res->compute_us /= nranks;
    res->iters = iters;
}

static double overlap_pct(const struct size_result *r)
{
    double pct;
    if (r->avg_us <= 0.0)
        return 0.0;
    pct = 100.0 * (1.0 - (r->overall_us - r->compute_us) / r->avg_us);
    return pct < 0.0 ? 0.0 : pct > 100.0 ? 100.0 : pct;
}

/* World rank of the sub-communicator's rank 0: the lowest rank kept. */
static int excluded_rank0(const char *excluded, int world_size)
{
    for (int r = 0; r < world_size; r++)
        if (!excluded[r])
            return r;
    return 0;
}

int main(int argc, char **argv)
{
    struct bench_options o;
    struct alg_probe probe;
    MPI_Comm comm = MPI_COMM_NULL;
    int world_size, rank = -1, nranks = 0, excluded_count = 0, prc;
    char *excluded = NULL;
    float *sendbuf = NULL, *recvbuf = NULL;
    unsigned long long total_errors = 0;
    size_t max_count;

    MPI_TRY(MPI_Init(&argc, &argv));
    MPI_TRY(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_TRY(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    MPI_TRY(MPI_Comm_size(MPI_COMM_WORLD, &world_size));

    prc = parse_options(argc, argv, &o);
    if (0 != prc) {
        MPI_Finalize();
        return prc > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
    }

    excluded = calloc((size_t)world_size, 1);
    if (NULL == excluded)
        die("cannot allocate the exclusion table");
    if (NULL != o.exclude_spec) {
        excluded_count = parse_exclude(o.exclude_spec, world_size, excluded);
        if (excluded_count < 0) {
            if (0 == world_rank)
                fprintf(stderr, "%s: -e %s: expected comma-separated ranks "
                        "in 0..%d\n", BENCH_NAME, o.exclude_spec,
                        world_size - 1);
            MPI_Finalize();
            return EXIT_FAILURE;
        }
    }
    if (world_size - excluded_count < 2) {
        if (0 == world_rank)
            fprintf(stderr, "%s: needs at least two participating ranks "
                    "(%d started, %d excluded)\n", BENCH_NAME, world_size,
                    excluded_count);
        MPI_Finalize();
        return EXIT_FAILURE;
    }

    if (excluded_count > 0) {
        MPI_TRY(MPI_Comm_split(MPI_COMM_WORLD,
                               excluded[world_rank] ? MPI_UNDEFINED : 0,
                               world_rank, &comm));
    } else {
        MPI_TRY(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    }

    /* the probe is opened on every rank (MPI_T is per process) */
    alg_probe_open(&probe);

    if (MPI_COMM_NULL != comm) {
        size_t size;

        MPI_TRY(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
        MPI_TRY(MPI_Comm_rank(comm, &rank));
        MPI_TRY(MPI_Comm_size(comm, &nranks));

        max_count = o.max_size / sizeof(float);
        if (max_count > (size_t)INT_MAX)
            die("message size %zu too large for an int count", o.max_size);
        sendbuf = xmalloc(max_count * sizeof(float), "the send buffer");
        recvbuf = xmalloc(max_count * sizeof(float), "the receive buffer");
        if (o.device)
            device_init(max_count * sizeof(float));
        if (o.nonblocking)
            calibrate_work();

        for (int rep = 0; rep < o.repeats; rep++) {
            if (0 == rank)
                print_header(&o, nranks, world_size, excluded_count, rep);
            for (size = o.min_size; size <= o.max_size; size *= 2) {
                struct size_result res;
                size_t count = size / sizeof(float);

                if (0 == count)
                    continue; /* like OSU: sizes below one element */
                memset(&res, 0, sizeof(res));
                if (o.nonblocking)
                    run_size_nb(&o, comm, rank, nranks, sendbuf, recvbuf, count, &probe, &res);
                else
                    run_size(&o, comm, rank, nranks, sendbuf, recvbuf, count,
                             &probe, &res);
                if (0 == rank) {
                    if (o.nonblocking)
                        printf("%-*zu%*.*f%*.*f%*.*f%*.*f", SIZE_WIDTH, size, FIELD_WIDTH, PRECISION,
                               res.overall_us, FIELD_WIDTH, PRECISION, res.compute_us, FIELD_WIDTH, PRECISION,
                               res.avg_us, FIELD_WIDTH, PRECISION, overlap_pct(&res));
                    else
                        printf("%-*zu%*.*f", SIZE_WIDTH, size, FIELD_WIDTH,
                               PRECISION, res.avg_us);
                    if (o.full)
                        printf("%*.*f%*.*f%*d", FIELD_WIDTH, PRECISION,
                               res.min_us, FIELD_WIDTH, PRECISION, res.max_us,
                               ITER_WIDTH, res.iters);
                    if (o.validate)
                        printf("%*s", FIELD_WIDTH,
                               res.errors ? "Fail" : "Pass");
                    if (o.show_alg)
                        printf("%*s", FIELD_WIDTH, res.alg);
                    printf("\n");
                    fflush(stdout);
                    total_errors += res.errors;
                }
                if (size > ((size_t)-1) / 2)
                    break;
            }
        }
        free(sendbuf);
        free(recvbuf);
        MPI_TRY(MPI_Comm_free(&comm));
    }

    alg_probe_close(&probe);

    /* excluded ranks wait here for the others */
    MPI_TRY(MPI_Barrier(MPI_COMM_WORLD));
    {
        unsigned long long e = total_errors;
        MPI_TRY(MPI_Bcast(&e, 1, MPI_UNSIGNED_LONG_LONG,
                          excluded_rank0(excluded, world_size),
                          MPI_COMM_WORLD));
        total_errors = e;
    }
    if (total_errors > 0 && 0 == world_rank)
        fprintf(stderr, "%s: DATA VALIDATION ERROR: %llu wrong elements in "
                "total\n", BENCH_NAME, total_errors);
    free(excluded);
    MPI_Finalize();
    return total_errors > 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
