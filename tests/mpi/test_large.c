/*
 * test_large: MPI_Allreduce of messages of any size, checked element by
 * element on every rank -- the large-message test (above 2 GiB and 4 GiB)
 * and its timing (one call, then more: the first call pays for planning
 * and first-touch, later ones show the steady state).
 *
 *   test_large [--type short|int|float|double] [--count N] [--calls K]
 *              [--not-in-place] [--quiet]
 *
 * Element i of rank r is (7 i + r) mod 13 (exact in every type), so the sum
 * over n ranks is known without a reference buffer: memory is the message
 * (twice with --not-in-place), nothing more.  Rank 0 prints one line per
 * call: "call K: BYTES bytes (...) in T s" (coll_topoar_verbose 20 says which
 * algorithm ran).  Exit status 0 when every element of every call is right
 * on every rank.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_SHORT, T_INT, T_FLOAT, T_DOUBLE };

/* Element i of rank r: (7 i + r) mod 13; it depends on i mod 13 only, so
 * fill and check walk a 13-entry table (they must be much faster than the
 * all-reduce they check). */
static double value(int i13, int r) { return (double) ((7 * i13 + r) % 13); }

#define FILL(T)                                                          \
    do {                                                                 \
        T tab[13], *p = (T *) buf;                                       \
        for (int j = 0; j < 13; j++) tab[j] = (T) value(j, rank);        \
        for (long long i = 0, j = 0; i < count; i++, j = j == 12 ? 0 : j + 1) \
            p[i] = tab[j];                                               \
    } while (0)

static void fill(void *buf, int type, long long count, int rank)
{
    switch (type) {
    case T_SHORT: FILL(short); break;
    case T_INT: FILL(int); break;
    case T_FLOAT: FILL(float); break;
    default: FILL(double); break;
    }
}

#define CHECK(T)                                                         \
    do {                                                                 \
        T tab[13];                                                       \
        const T *p = (const T *) buf;                                    \
        for (int j = 0; j < 13; j++) {                                   \
            double want = 0;                                             \
            for (int r = 0; r < nranks; r++) want += value(j, r);        \
            tab[j] = (T) want;                                           \
        }                                                                \
        for (long long i = 0, j = 0; i < count; i++, j = j == 12 ? 0 : j + 1) \
            if (p[i] != tab[j]) return i;                                \
    } while (0)

/* The first wrong element, or -1. */
static long long check(const void *buf, int type, long long count, int nranks)
{
    switch (type) {
    case T_SHORT: CHECK(short); break;
    case T_INT: CHECK(int); break;
    case T_FLOAT: CHECK(float); break;
    default: CHECK(double); break;
    }
    return -1;
}

int main(int argc, char **argv)
{
    int rank, size, type = T_DOUBLE, calls = 1, in_place = 1, quiet = 0, bad = 0;
    long long count = 1 << 20;
    MPI_Datatype dt[] = {MPI_SHORT, MPI_INT, MPI_FLOAT, MPI_DOUBLE};
    const size_t esize[] = {sizeof(short), sizeof(int), sizeof(float), sizeof(double)};
    const char *tname[] = {"short", "int", "float", "double"};

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--type") && i + 1 < argc) {
            ++i;
            type = -1;
            for (int t = 0; t < 4; t++)
                if (!strcmp(argv[i], tname[t])) type = t;
        } else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
            count = atoll(argv[++i]);
        } else if (!strcmp(argv[i], "--calls") && i + 1 < argc) {
            calls = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--not-in-place")) {
            in_place = 0;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = 1;
        } else {
            type = -1;
        }
    }
    if (type < 0 || count < 0 || count > 2147483647LL || calls < 1) {
        if (0 == rank)
            fprintf(stderr, "usage: test_large [--type short|int|float|double] [--count N <= 2^31-1] "
                            "[--calls K] [--not-in-place] [--quiet]\n");
        MPI_Finalize();
        return 2;
    }
    size_t bytes = (size_t) count * esize[type];
    void *rbuf = malloc(bytes ? bytes : 1), *sbuf = in_place ? NULL : malloc(bytes ? bytes : 1);
    int ok = NULL != rbuf && (in_place || NULL != sbuf), all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok) {
        if (0 == rank) fprintf(stderr, "test_large: cannot allocate %zu bytes on some rank\n", bytes);
        MPI_Finalize();
        return 3;
    }
    for (int c = 0; c < calls; c++) {
        fill(in_place ? rbuf : sbuf, type, count, rank);
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : sbuf, rbuf, (int) count, dt[type], MPI_SUM, MPI_COMM_WORLD);
        t = MPI_Wtime() - t;
        long long wrong = MPI_SUCCESS == rc ? check(rbuf, type, count, size) : 0;
        if (MPI_SUCCESS != rc || wrong >= 0) {
            bad = 1;
            fprintf(stderr, "rank %d call %d: %s\n", rank, c,
                    MPI_SUCCESS != rc ? "MPI_Allreduce failed" : "wrong result");
            if (wrong >= 0) fprintf(stderr, "rank %d: first wrong element %lld\n", rank, wrong);
        }
        if (0 == rank && !quiet) {
            printf("call %d: %zu bytes (%lld x %s%s) in %.3f s\n", c, bytes, count, tname[type],
                   in_place ? ", in place" : "", t);
            fflush(stdout);
        }
    }
    int any_bad;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (0 == rank) printf("%s\n", any_bad ? "FAILED" : "all elements right on all ranks");
    free(rbuf);
    free(sbuf);
    MPI_Finalize();
    return any_bad ? 1 : 0;
}
