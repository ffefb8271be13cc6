/*
 * test_threads.c - MPI_Allreduce from several threads at once
 * (MPI_THREAD_MULTIPLE), each on its own communicators.
 *
 * The main thread makes one duplicate of MPI_COMM_WORLD per thread (the
 * "parent"; nothing runs on it yet) and starts --threads T threads
 * (default 4), which wait for each other and then, all at once:
 *   1. run --calls N allreduces on their parent: topoar's collective
 *      set-up of T communicators runs concurrently, in T threads;
 *   2. --rounds R times (default 6): make a communicator from their parent
 *      (MPI_Comm_dup, MPI_Comm_split with the rank order reversed, or by
 *      parity from 4 ranks up: distinct parents, so the concurrent
 *      creations are legal MPI), run N allreduces on it (set-up racing the
 *      other threads' set-ups and calls), free it.
 * Calls rotate through counts 1 .. 70000 (several 32 KiB segments),
 * MPI_INT/MPI_DOUBLE sums, MPI_LONG_LONG max and MPI_UNSIGNED bxor, in
 * place on every other call; each result must be bit-identical to a
 * reference computed locally (the inputs make every order give the same
 * bits).
 *
 * --nb-first K: on every communicator, K MPI_Iallreduce calls (MPI_INT sum,
 * 1000..1000+K-1 elements) are started first -- topoar's set-up then runs
 * as a nonblocking allgather, with the calls queued behind it -- and the
 * N blocking calls run while they are outstanding (the first one completes
 * the set-up, which another thread's progress may be finishing at that
 * moment); then MPI_Waitall, and each nonblocking result is checked too.
 * --nb-down: those K calls use a non-commutative user op (the lowest
 * rank's value), which topoar hands to the previous module (libnbc): the
 * first blocking call then runs topoar's blocking set-up while they are
 * outstanding, progressed by any thread.
 *
 * --expect-path host|down: per communicator, topoar's MPI_T counter
 * coll_topoar_allreduce_handled must equal N (host: topoar executed every
 * call) or 0 (down: every call handed to the previous module); read by each
 * thread through its own MPI_T session.
 *
 * Without MPI_THREAD_MULTIPLE from MPI_Init_thread: says SKIP, exits 77.
 * Output: "N passed, M failed" on rank 0 (one case per thread and
 * communicator); exit status nonzero if anything failed.
 */
#include <mpi.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topoar_pvars.h"

#define MAX_THREADS 32

static int world_rank, world_size;
static int n_threads = 4, n_rounds = 6, n_calls = 24;
static int expect_path = -1;
static int n_nb_first = 0, nb_down = 0;
static MPI_Op op_first = MPI_OP_NULL; /* --nb-down: non-commutative, keeps the lowest rank's value */
#define MAX_NB_FIRST 16
#define NB_FIRST_COUNT 1000
static uint64_t seed = 0x7468726561647321ULL;
static pthread_barrier_t start_line;

static const size_t counts[] = {1, 2, 7, 33, 256, 1000, 4099, 9000, 70000};
#define N_COUNTS (sizeof(counts) / sizeof(counts[0]))
#define MAX_COUNT 70000

enum { K_INT_SUM, K_DOUBLE_SUM, K_LLONG_MAX, K_UNSIGNED_BXOR, K_N };

typedef struct {
    int id;
    MPI_Comm parent;
    long passed, failed;
    char *sb, *rb, *ref;
} thread_t;

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Input element k of comm rank r for call `call`: sums of these small
 * integers are exact, so every reduction order gives the same bits. */
static uint64_t in_bits(uint64_t call, int r, size_t k)
{
    return mix(call ^ mix((uint64_t)r * 0x100000001b3ULL + k));
}

static size_t elem_size(int kind)
{
    return kind == K_INT_SUM ? sizeof(int) : kind == K_DOUBLE_SUM ? sizeof(double)
         : kind == K_LLONG_MAX ? sizeof(long long) : sizeof(unsigned);
}

static void put(int kind, char *buf, size_t k, uint64_t h)
{
    switch (kind) {
    case K_INT_SUM: ((int *)buf)[k] = (int)(h % 2001) - 1000; break;
    case K_DOUBLE_SUM: ((double *)buf)[k] = ((double)(h % 4001) - 2000) * 0.25; break;
    case K_LLONG_MAX: ((long long *)buf)[k] = (long long)h; break;
    default: ((unsigned *)buf)[k] = (unsigned)h; break;
    }
}

static void reference(int kind, char *ref, size_t n, uint64_t call, int size)
{
    for (size_t k = 0; k < n; k++) {
        int is = 0;
        double ds = 0;
        long long lm = 0;
        unsigned ux = 0;
        for (int r = 0; r < size; r++) {
            uint64_t h = in_bits(call, r, k);
            is += (int)(h % 2001) - 1000;
            ds += ((double)(h % 4001) - 2000) * 0.25;
            if (r == 0 || (long long)h > lm) lm = (long long)h;
            ux ^= (unsigned)h;
        }
        switch (kind) {
        case K_INT_SUM: ((int *)ref)[k] = is; break;
        case K_DOUBLE_SUM: ((double *)ref)[k] = ds; break;
        case K_LLONG_MAX: ((long long *)ref)[k] = lm; break;
        default: ((unsigned *)ref)[k] = ux; break;
        }
    }
}

/* inout = in (from the lower ranks) op inout: keeps the lowest rank's value */
static void keep_first(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    memcpy(inout, in, (size_t)*len * sizeof(int));
}

/* n_calls checked allreduces on comm; one case (passed or failed). */
static void run_on(thread_t *t, tp_pvars *pv, MPI_Comm comm, int round, const char *what)
{
    int rank, size;
    long wrong = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    tp_count handled;
    MPI_Request nbreq[MAX_NB_FIRST];
    int *nbbuf[MAX_NB_FIRST];
    tp_count_begin(pv, comm, &handled);
    /* --nb-first: the first calls on comm are nonblocking (the set-up
     * starts without blocking); the blocking calls run while they are out. */
    for (int q = 0; q < n_nb_first; q++) {
        size_t n = NB_FIRST_COUNT + (size_t)q;
        uint64_t call = mix(seed ^ 0x6e62ULL ^ ((uint64_t)t->id << 40) ^ ((uint64_t)(round + 1) << 20) ^ (uint64_t)q);
        nbbuf[q] = malloc(n * sizeof(int));
        if (!nbbuf[q]) {
            printf("rank %d: out of memory\n", world_rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (size_t k = 0; k < n; k++) put(K_INT_SUM, (char *)nbbuf[q], k, in_bits(call, rank, k));
        if (MPI_Iallreduce(MPI_IN_PLACE, nbbuf[q], (int)n, MPI_INT, nb_down ? op_first : MPI_SUM, comm, &nbreq[q]) !=
            MPI_SUCCESS) {
            printf("FAIL rank %d thread %d: %s: MPI_Iallreduce %d failed\n", world_rank, t->id, what, q);
            nbreq[q] = MPI_REQUEST_NULL;
            wrong++;
        }
    }
    for (int j = 0; j < n_calls; j++) {
        int kind = (j + t->id) % K_N;
        size_t n = counts[(size_t)(j + t->id + round) % N_COUNTS];
        int inplace = (j / K_N + t->id) % 2;
        uint64_t call = mix(seed ^ ((uint64_t)t->id << 40) ^ ((uint64_t)(round + 1) << 20) ^ (uint64_t)j);
        char *in = inplace ? t->rb : t->sb;
        for (size_t k = 0; k < n; k++) put(kind, in, k, in_bits(call, rank, k));
        MPI_Datatype dt = kind == K_INT_SUM ? MPI_INT : kind == K_DOUBLE_SUM ? MPI_DOUBLE
                        : kind == K_LLONG_MAX ? MPI_LONG_LONG : MPI_UNSIGNED;
        MPI_Op op = kind == K_LLONG_MAX ? MPI_MAX : kind == K_UNSIGNED_BXOR ? MPI_BXOR : MPI_SUM;
        int rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : t->sb, t->rb, (int)n, dt, op, comm);
        reference(kind, t->ref, n, call, size);
        if (rc != MPI_SUCCESS || memcmp(t->rb, t->ref, n * elem_size(kind)) != 0) {
            if (wrong++ < 3) {
                size_t k = 0;
                while (k < n && !memcmp(t->rb + k * elem_size(kind), t->ref + k * elem_size(kind), elem_size(kind)))
                    k++;
                printf("FAIL rank %d thread %d: %s call %d (kind %d, %zu elements%s): rc %d, first wrong element %zu\n",
                       world_rank, t->id, what, j, kind, n, inplace ? ", in place" : "", rc, k);
            }
        }
    }
    if (n_nb_first > 0 && MPI_Waitall(n_nb_first, nbreq, MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
        printf("FAIL rank %d thread %d: %s: MPI_Waitall of the first nonblocking calls failed\n", world_rank,
               t->id, what);
        wrong++;
    }
    for (int q = 0; q < n_nb_first; q++) {
        size_t n = NB_FIRST_COUNT + (size_t)q;
        uint64_t call = mix(seed ^ 0x6e62ULL ^ ((uint64_t)t->id << 40) ^ ((uint64_t)(round + 1) << 20) ^ (uint64_t)q);
        if (nb_down) /* rank 0's input */
            for (size_t k = 0; k < n; k++) put(K_INT_SUM, t->ref, k, in_bits(call, 0, k));
        else
            reference(K_INT_SUM, t->ref, n, call, size);
        if (memcmp(nbbuf[q], t->ref, n * sizeof(int)) != 0) {
            if (wrong++ < 3)
                printf("FAIL rank %d thread %d: %s: nonblocking call %d (%zu ints) wrong\n", world_rank, t->id, what,
                       q, n);
        }
        free(nbbuf[q]);
    }
    long long h = tp_count_end(pv, &handled);
    if (expect_path >= 0) {
        long long want = expect_path == TP_PATH_HOST ? n_calls : 0;
        if (h != want) {
            printf("FAIL rank %d thread %d: %s: coll_topoar_allreduce_handled %lld, expected %lld\n", world_rank,
                   t->id, what, h, want);
            wrong++;
        }
    }
    if (wrong) t->failed++;
    else t->passed++;
}

static void *thread_main(void *arg)
{
    thread_t *t = arg;
    tp_pvars pv;
    char what[64];
    memset(&pv, 0, sizeof pv);
    if (expect_path >= 0 && !tp_open(&pv)) {
        printf("FAIL rank %d thread %d: topoar's MPI_T variables are missing\n", world_rank, t->id);
        t->failed++;
    }
    pthread_barrier_wait(&start_line);
    run_on(t, &pv, t->parent, -1, "parent");
    for (int r = 0; r < n_rounds; r++) {
        MPI_Comm c;
        int prank, psize;
        MPI_Comm_rank(t->parent, &prank);
        MPI_Comm_size(t->parent, &psize);
        switch (r % 3) {
        case 0:
            MPI_Comm_dup(t->parent, &c);
            snprintf(what, sizeof what, "round %d dup", r);
            break;
        case 1:
            MPI_Comm_split(t->parent, 0, psize - 1 - prank, &c);
            snprintf(what, sizeof what, "round %d reversed split", r);
            break;
        default:
            MPI_Comm_split(t->parent, psize >= 4 ? prank % 2 : 0, prank, &c);
            snprintf(what, sizeof what, "round %d parity split", r);
            break;
        }
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        run_on(t, &pv, c, r, what);
        MPI_Comm_free(&c);
    }
    tp_close(&pv);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0, prov_t = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) n_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) n_rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc) n_calls = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--nb-down")) nb_down = 1;
        else if (!strcmp(argv[i], "--nb-first") && i + 1 < argc) {
            n_nb_first = atoi(argv[++i]);
            if (n_nb_first < 0 || n_nb_first > MAX_NB_FIRST) expect_path = -2;
        }
        else if (!strcmp(argv[i], "--expect-path") && i + 1 < argc) {
            i++;
            expect_path = !strcmp(argv[i], "host") ? TP_PATH_HOST : !strcmp(argv[i], "down") ? TP_PATH_HAND_DOWN : -2;
        } else expect_path = -2;
        if (expect_path == -2 || n_threads < 1 || n_threads > MAX_THREADS) {
            if (world_rank == 0)
                printf("usage: test_threads [--threads T (1..%d)] [--rounds R] [--calls N] [--seed S] "
                       "[--nb-first K (0..%d)] [--nb-down] [--expect-path host|down]\n", MAX_THREADS, MAX_NB_FIRST);
            MPI_Finalize();
            return 2;
        }
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        if (world_rank == 0)
            printf("SKIP: MPI_Init_thread provided thread level %d, not MPI_THREAD_MULTIPLE (%d)\n", provided,
                   MPI_THREAD_MULTIPLE);
        MPI_Finalize();
        return 77;
    }
    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &prov_t);
    MPI_Op_create(keep_first, 0, &op_first);

    thread_t th[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    size_t bytes = MAX_COUNT * sizeof(double);
    pthread_barrier_init(&start_line, NULL, (unsigned)n_threads);
    for (int i = 0; i < n_threads; i++) {
        memset(&th[i], 0, sizeof th[i]);
        th[i].id = i;
        MPI_Comm_dup(MPI_COMM_WORLD, &th[i].parent);
        MPI_Comm_set_errhandler(th[i].parent, MPI_ERRORS_RETURN);
        th[i].sb = malloc(bytes);
        th[i].rb = malloc(bytes);
        th[i].ref = malloc(bytes);
        if (!th[i].sb || !th[i].rb || !th[i].ref) {
            printf("rank %d: out of memory\n", world_rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    double t0 = MPI_Wtime();
    for (int i = 0; i < n_threads; i++)
        if (pthread_create(&tid[i], NULL, thread_main, &th[i]) != 0) {
            printf("rank %d: pthread_create failed\n", world_rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    long tot[2] = {0, 0}, all[2];
    for (int i = 0; i < n_threads; i++) {
        pthread_join(tid[i], NULL);
        tot[0] += th[i].passed;
        tot[1] += th[i].failed;
        MPI_Comm_free(&th[i].parent);
        free(th[i].sb);
        free(th[i].rb);
        free(th[i].ref);
    }
    pthread_barrier_destroy(&start_line);
    double secs = MPI_Wtime() - t0;
    /* a case counts once: passed if it passed on every rank */
    MPI_Allreduce(tot, all, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (world_rank == 0) {
        printf("test_threads: %d ranks x %d threads, %d communicators per thread, %d calls each, %.2f s\n",
               world_size, n_threads, n_rounds + 1, n_calls, secs);
        printf("%ld passed, %ld failed\n", (long)n_threads * (n_rounds + 1) - all[1], all[1]);
    }
    MPI_Op_free(&op_first);
    MPI_T_finalize();
    MPI_Finalize();
    return all[1] ? 1 : 0;
}
