/*
 * soak.c - long-running MPI_Allreduce soak: no leak, no growth.
 *
 * Phase 1 (--cycles N, default 10000): N communicator life cycles on
 * MPI_COMM_WORLD, rotating through MPI_Comm_dup, MPI_Comm_split with the
 * rank order reversed and MPI_Comm_split by parity (one colour below 4
 * ranks); on each new communicator one MPI_Allreduce (topoar's set-up runs
 * there, at the first call) whose result is checked, then MPI_Comm_free.
 * Counts rotate through 1..31 elements, every 10th cycle 5000 doubles (more
 * than one 32 KiB segment), in place on every other cycle.
 *
 * Phase 2 (--calls N, default 100000): N back-to-back small allreduces
 * (1..8 ints or doubles, in place on every other call) on one duplicate of
 * MPI_COMM_WORLD, every result checked.
 *
 * Memory: each phase samples this process's resident set (VmRSS from
 * /proc/self/status) and the heap in use (glibc mallinfo2: bytes malloc
 * handed out and not got back) after its first 10 % (warm-up: Open MPI's
 * free lists and topoar's caches have reached their size) and at its end.
 * The largest growth over the ranks must stay within --rss-bound KiB
 * (default 2048) for RSS and --heap-bound KiB (default 256) for the heap.
 * The heap bound is the sharp one: 30 bytes lost per cycle over the 9,000
 * cycles after warm-up exceed it (RSS moves by pages and is noisier).  It
 * leaves room for a one-time step: under load Open MPI sometimes grows a
 * free list once more after warm-up (seen: +48 KiB on one rank).  Run
 * with glibc's per-thread cache off (GLIBC_TUNABLES=glibc.malloc.
 * tcache_count=0): freed blocks parked there count as in use, and the
 * cache fills slowly up to ~230 KiB.  --report prints every 10 %.
 *
 * --expect-path host|down: every call must have run that way, read from
 * topoar's MPI_T variable coll_topoar_allreduce_last_path (host: topoar
 * executed it; down: handed to the previous module, auto's default on one
 * host); with host, phase 2's communicator must also count every call in
 * coll_topoar_allreduce_handled.  Without it, no MPI_T check.
 *
 * Output: per phase one line "soak: PHASE: ..." with the numbers, then
 * "soak: N passed, M failed"; exit status nonzero on any failure.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "topoar_pvars.h"

static int world_rank, world_size;
static int expect_path = -1; /* -1: no check; else TP_PATH_* */
static long bad_results = 0, bad_paths = 0;
static tp_pvars pv;

/* VmRSS in KiB, -1 if unknown. */
static long rss_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kib = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kib;
}

/* Heap bytes in use (malloc'd, not freed) in KiB, -1 if unknown. */
static long heap_kib(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 m = mallinfo2();
    return (long)((m.uordblks + m.hblkhd) / 1024);
#else
    return -1;
#endif
}

typedef struct {
    const char *name;
    long n, warm_at;
    long rss_warm, rss_end, heap_warm, heap_end;
    double t0;
} phase_t;

static void phase_begin(phase_t *p, const char *name, long n)
{
    memset(p, 0, sizeof(*p));
    p->name = name;
    p->n = n;
    p->warm_at = n / 10 > 0 ? n / 10 : 1;
    MPI_Barrier(MPI_COMM_WORLD);
    p->t0 = MPI_Wtime();
}

/* Call after iteration i (0-based) is complete. */
static void phase_step(phase_t *p, long i, int report)
{
    long done = i + 1;
    if (done == p->warm_at) {
        p->rss_warm = rss_kib();
        p->heap_warm = heap_kib();
    }
    if (report && world_rank == 0 && p->n >= 10 && done % (p->n / 10) == 0)
        printf("soak: %s: %ld/%ld  rss %ld KiB  heap in use %ld KiB  (%.1f s)\n", p->name, done, p->n, rss_kib(),
               heap_kib(), MPI_Wtime() - p->t0);
}

/* Collective over WORLD; returns nonzero if the phase grew beyond a bound. */
static int phase_end(phase_t *p, long rss_bound, long heap_bound)
{
    if (p->n <= 0) return 0; /* skipped (--cycles 0 or --calls 0): same on every rank */
    p->rss_end = rss_kib();
    p->heap_end = heap_kib();
    double secs = MPI_Wtime() - p->t0;
    /* the largest growth of each and the rank that had it */
    struct { long v; int rank; } mine[2] = {{p->rss_end - p->rss_warm, world_rank},
                                           {p->heap_end - p->heap_warm, world_rank}}, worst[2];
    int unknown = p->rss_warm < 0 || p->rss_end < 0, any_unknown = 0;
    MPI_Allreduce(mine, worst, 2, MPI_LONG_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    MPI_Allreduce(&unknown, &any_unknown, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int heap_known = p->heap_warm >= 0;
    int bad = any_unknown || worst[0].v > rss_bound || (heap_known && worst[1].v > heap_bound);
    if (world_rank == 0) {
        printf("soak: %s: %ld in %.1f s; rank 0 rss %ld -> %ld KiB, heap in use %ld -> %ld KiB "
               "(after %ld, at the end); largest growth over %d ranks: rss %+ld KiB (rank %d, bound %ld), "
               "heap %+ld KiB (rank %d, bound %ld)%s\n",
               p->name, p->n, secs, p->rss_warm, p->rss_end, p->heap_warm, p->heap_end, p->warm_at, world_size,
               worst[0].v, worst[0].rank, rss_bound, heap_known ? worst[1].v : 0, worst[1].rank, heap_bound,
               any_unknown ? " -- FAIL: VmRSS unreadable" : bad ? " -- FAIL: grew" : "");
        fflush(stdout);
    }
    return bad;
}

static void check_path(void)
{
    if (expect_path < 0) return;
    int got = tp_last_path(&pv);
    if (got != expect_path) {
        if (bad_paths < 5)
            printf("FAIL rank %d: last_path %d, expected %d\n", world_rank, got, expect_path);
        bad_paths++;
    }
}

/* Element k of comm rank r's input for call c: small integers, so every
 * sum is exact in double and the result is the same in any order. */
static int in_val(int r, long c, size_t k) { return (r + 1) * (int)(k % 97 + 1) + (int)(c % 13); }

static int ref_sum(int size, long c, size_t k)
{
    return (int)(k % 97 + 1) * size * (size + 1) / 2 + size * (int)(c % 13);
}

/* One checked allreduce of n ints (or doubles) on comm; in place or not. */
static void checked_allreduce(MPI_Comm comm, long c, size_t n, int dbl, int inplace, void *sb, void *rb)
{
    int r, size;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &size);
    for (size_t k = 0; k < n; k++) {
        if (dbl) ((double *)(inplace ? rb : sb))[k] = in_val(r, c, k);
        else ((int *)(inplace ? rb : sb))[k] = in_val(r, c, k);
    }
    int rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : sb, rb, (int)n, dbl ? MPI_DOUBLE : MPI_INT, MPI_SUM, comm);
    check_path();
    long wrong = rc != MPI_SUCCESS;
    for (size_t k = 0; k < n && !wrong; k++) {
        int want = ref_sum(size, c, k);
        wrong = dbl ? ((double *)rb)[k] != (double)want : ((int *)rb)[k] != want;
        if (wrong && bad_results < 5)
            printf("FAIL rank %d: call %ld (%zu %s%s) element %zu: got %g, expected %d\n", world_rank, c, n,
                   dbl ? "doubles" : "ints", inplace ? ", in place" : "", k,
                   dbl ? ((double *)rb)[k] : (double)((int *)rb)[k], want);
    }
    bad_results += wrong;
}

static void usage(void)
{
    if (world_rank == 0)
        printf("usage: soak [--cycles N] [--calls N] [--rss-bound KIB] [--heap-bound KIB] "
               "[--expect-path host|down] [--report]\n");
}

int main(int argc, char **argv)
{
    long cycles = 10000, calls = 100000, rss_bound = 2048, heap_bound = 256;
    int report = 0, prov;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cycles") && i + 1 < argc) cycles = atol(argv[++i]);
        else if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atol(argv[++i]);
        else if (!strcmp(argv[i], "--rss-bound") && i + 1 < argc) rss_bound = atol(argv[++i]);
        else if (!strcmp(argv[i], "--heap-bound") && i + 1 < argc) heap_bound = atol(argv[++i]);
        else if (!strcmp(argv[i], "--report")) report = 1;
        else if (!strcmp(argv[i], "--expect-path") && i + 1 < argc) {
            i++;
            expect_path = !strcmp(argv[i], "host") ? TP_PATH_HOST : !strcmp(argv[i], "down") ? TP_PATH_HAND_DOWN : -2;
            if (expect_path == -2) {
                usage();
                MPI_Finalize();
                return 2;
            }
        } else {
            usage();
            MPI_Finalize();
            return !strcmp(argv[i], "--help") ? 0 : 2;
        }
    }
    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    if (expect_path >= 0 && !tp_open(&pv)) {
        if (world_rank == 0)
            printf("FAIL: --expect-path given but topoar's MPI_T variables are missing (is the component "
                   "loaded?)\n");
        MPI_T_finalize();
        MPI_Finalize();
        return 1;
    }

    size_t big = 5000;
    void *sb = malloc(big * sizeof(double)), *rb = malloc(big * sizeof(double));
    int failed = 0;

    /* Phase 1: communicator life cycles. */
    phase_t p;
    phase_begin(&p, "dup/split/free cycles", cycles);
    for (long i = 0; i < cycles; i++) {
        MPI_Comm c;
        switch (i % 3) {
        case 0: MPI_Comm_dup(MPI_COMM_WORLD, &c); break;
        case 1: MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - 1 - world_rank, &c); break;
        default: MPI_Comm_split(MPI_COMM_WORLD, world_size >= 4 ? world_rank % 2 : 0, world_rank, &c); break;
        }
        size_t n = i % 10 == 9 ? big : (size_t)(1 + i % 31);
        checked_allreduce(c, i, n, i % 10 == 9 || i % 2, (int)(i / 3 % 2), sb, rb);
        MPI_Comm_free(&c);
        phase_step(&p, i, report);
    }
    failed |= phase_end(&p, rss_bound, heap_bound);

    /* Phase 2: back-to-back small calls on one communicator. */
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    tp_count handled;
    tp_count_begin(&pv, d, &handled);
    int keep = expect_path;
    phase_begin(&p, "back-to-back small allreduces", calls);
    for (long j = 0; j < calls; j++) {
        expect_path = j % 100 == 0 ? keep : -1; /* the MPI_T read: on every 100th call */
        checked_allreduce(d, j, (size_t)(1 + j % 8), (int)(j % 2), (int)(j / 2 % 2), sb, rb);
        phase_step(&p, j, report);
    }
    expect_path = keep;
    failed |= phase_end(&p, rss_bound, heap_bound);
    if (expect_path == TP_PATH_HOST) {
        long long h = tp_count_end(&pv, &handled);
        if (h != calls) {
            printf("FAIL rank %d: coll_topoar_allreduce_handled on the phase-2 communicator is %lld, expected %ld\n",
                   world_rank, h, calls);
            bad_paths++;
        }
    } else {
        (void)tp_count_end(&pv, &handled);
    }
    MPI_Comm_free(&d);

    long bad[2] = {bad_results, bad_paths}, all_bad[2];
    MPI_Allreduce(bad, all_bad, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int any_failed = 0;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (world_rank == 0) {
        /* three checks: results, paths, memory */
        int nfail = (all_bad[0] > 0) + (all_bad[1] > 0) + (any_failed != 0);
        printf("soak: %ld wrong results, %ld calls on an unexpected path\n", all_bad[0], all_bad[1]);
        printf("soak: %d passed, %d failed\n", 3 - nfail, nfail);
    }
    free(sb);
    free(rb);
    tp_close(&pv);
    MPI_T_finalize();
    MPI_Finalize();
    return all_bad[0] || all_bad[1] || any_failed;
}
