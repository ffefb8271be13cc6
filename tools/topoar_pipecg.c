/*
 * topoar_pipecg -- a pipelined-CG-like loop: per iteration one
 * MPI_Iallreduce of 3 doubles overlapped with a local stencil.
 *
 * Written for topoar (issue 23).  Pipelined Krylov solvers (PETSc's
 * KSPPIPECG and friends) start the reduction of their dot products, apply
 * the operator while it is in flight, and wait before the scalars are
 * needed.  This program does the same with a local 1-D (3-point) or 2-D
 * (5-point, periodic) stencil standing in for the matrix product:
 *
 *     for each iteration k:
 *         loc = (dot(u,u), sum(u)) scaled and rounded to integers, k-term
 *         MPI_Iallreduce(loc -> glob, 3 doubles, MPI_SUM)      (--blocking:
 *         v = s * A u      (the stencil; --tests N: N MPI_Test  MPI_Allreduce
 *                           calls spread over it)               after the
 *         MPI_Wait                                              stencil)
 *         s = 1 / rms(u) from glob (the next iteration needs the result)
 *         u = v
 *
 * The reduced values are integers below 2^53, so every order of summation
 * gives the same bits.  Checks (any mismatch: a message and exit 1):
 *   - glob[2] = (k % 1000 + 1) * np(np+1)/2, every iteration (analytic);
 *   - after each repeat, one blocking MPI_Allreduce of every iteration's
 *     local values must equal what the iterations received.
 *
 * Output: per mode, the median time per iteration over the repeats (each
 * repeat: the slowest rank's time / iterations), min and max, and the
 * stencil alone per iteration ("compute").  Overlap estimate printed with
 * --mode both: (blocking - nonblocking) / min(compute, blocking - compute),
 * clipped to 0..100 %.
 *
 * Options:
 *   --size N        stencil points per rank (default 65536; 2-D: rounded
 *                   down to a square)
 *   --dim 1|2       1-D or 2-D stencil (default 1)
 *   --iters N       iterations per repeat (default 2000)
 *   --repeats R     timed repeats; the median is printed (default 5)
 *   --warmup N      untimed iterations before the repeats (default 50)
 *   --tests N       MPI_Test calls spread over each stencil (default 0)
 *   --mode M        nonblocking (default), blocking, or both (repeats of
 *                   the two interleaved in one job)
 *   --blocking      the same as --mode blocking
 *
 * Build:  mpicc -O2 -o topoar_pipecg tools/topoar_pipecg.c -lm
 */
#include <mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCALE 1048576.0 /* 2^20: the dot product's fraction kept before rounding */

static struct {
    long size;
    int dim, iters, repeats, warmup, tests;
    int nonblocking, blocking;
} opt = {65536, 1, 2000, 5, 50, 0, 1, 0};

static int rank = 0, nprocs = 1;
static long side = 0; /* 2-D: the local grid is side x side */

static void die(const char *msg)
{
    if (rank == 0) fprintf(stderr, "topoar_pipecg: %s\n", msg);
    MPI_Finalize();
    exit(2);
}

/* v = s * A u over rows [r0, r1) (1-D: points), periodic. */
static void stencil_part(const double *u, double *v, double s, long r0, long r1)
{
    if (opt.dim == 1) {
        long n = opt.size;
        double c0 = 0.5 * s, c1 = 0.25 * s;
        for (long i = r0; i < r1; i++) {
            double l = u[i == 0 ? n - 1 : i - 1], r = u[i == n - 1 ? 0 : i + 1];
            v[i] = c0 * u[i] + c1 * (l + r);
        }
    } else {
        double c0 = 0.5 * s, c1 = 0.125 * s;
        for (long y = r0; y < r1; y++) {
            const double *row = u + y * side;
            const double *up = u + (y == 0 ? side - 1 : y - 1) * side;
            const double *dn = u + (y == side - 1 ? 0 : y + 1) * side;
            double *out = v + y * side;
            for (long x = 0; x < side; x++) {
                double w = row[x == 0 ? side - 1 : x - 1], e = row[x == side - 1 ? 0 : x + 1];
                out[x] = c0 * row[x] + c1 * (w + e + up[x] + dn[x]);
            }
        }
    }
}

/* The stencil in tests+1 pieces, an MPI_Test on `req` between them. */
static void stencil(const double *u, double *v, double s, MPI_Request *req)
{
    long rows = opt.dim == 1 ? opt.size : side;
    int pieces = opt.tests + 1;
    for (int p = 0; p < pieces; p++) {
        stencil_part(u, v, s, rows * p / pieces, rows * (p + 1) / pieces);
        if (req && p + 1 < pieces) {
            int flag;
            MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        }
    }
}

static long points(void) { return opt.dim == 1 ? opt.size : side * side; }

/* Runs `iters` iterations from u (state kept across calls through u and
 * *s).  loc/glob: 3 doubles per iteration, or NULL (warmup).  Returns 0,
 * or 1 on an analytic mismatch (the first one reported). */
static int iterate(double **u, double **v, double *s, int iters, int nonblocking, double *loc, double *glob,
                   long k0)
{
    long n = points();
    double tri = 0.5 * nprocs * (nprocs + 1.0);
    int bad = 0;
    for (int it = 0; it < iters; it++) {
        long k = k0 + it;
        double l[3], g[3], dot = 0, sum = 0;
        const double *uu = *u;
        for (long i = 0; i < n; i++) {
            dot += uu[i] * uu[i];
            sum += uu[i];
        }
        l[0] = rint(dot * SCALE / n); /* mean square, 2^-20 units */
        l[1] = rint(sum * SCALE / n);
        l[2] = (double)(k % 1000 + 1) * (rank + 1);
        if (nonblocking) {
            MPI_Request req;
            MPI_Iallreduce(l, g, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
            stencil(*u, *v, *s, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            stencil(*u, *v, *s, NULL);
            MPI_Allreduce(l, g, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
        /* on a mismatch, go on: the other ranks may not have seen one */
        if (g[2] != (double)(k % 1000 + 1) * tri && !bad) {
            fprintf(stderr, "topoar_pipecg: rank %d iteration %ld (%s): reduced k-term %.17g, expected %.17g\n",
                    rank, k, nonblocking ? "nonblocking" : "blocking", g[2], (double)(k % 1000 + 1) * tri);
            bad = 1;
        }
        /* rms of u (the mean square over all ranks) sets the next scale */
        double ms = g[0] / SCALE / nprocs;
        *s = ms > 0 ? 1.0 / sqrt(ms) : 1.0;
        if (loc) memcpy(loc + 3 * it, l, sizeof(l));
        if (glob) memcpy(glob + 3 * it, g, sizeof(g));
        double *t = *u; *u = *v; *v = t;
    }
    return bad;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr, "usage: topoar_pipecg [--size N] [--dim 1|2] [--iters N] [--repeats R] [--warmup N]\n"
                        "                     [--tests N] [--mode nonblocking|blocking|both] [--blocking]\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--blocking")) { opt.nonblocking = 0; opt.blocking = 1; continue; }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(); MPI_Finalize(); return 0; }
        if (!v) { usage(); die("an option is missing its value or is unknown"); }
        i++;
        if (!strcmp(a, "--mode")) {
            if (!strcmp(v, "nonblocking")) { opt.nonblocking = 1; opt.blocking = 0; }
            else if (!strcmp(v, "blocking")) { opt.nonblocking = 0; opt.blocking = 1; }
            else if (!strcmp(v, "both")) { opt.nonblocking = 1; opt.blocking = 1; }
            else { usage(); die("--mode: nonblocking, blocking or both"); }
            continue;
        }
        long x = strtol(v, &end, 10);
        if (!end || *end || x < 0) { usage(); die("option values are non-negative integers"); }
        if (!strcmp(a, "--size")) opt.size = x;
        else if (!strcmp(a, "--dim")) opt.dim = (int)x;
        else if (!strcmp(a, "--iters")) opt.iters = (int)x;
        else if (!strcmp(a, "--repeats")) opt.repeats = (int)x;
        else if (!strcmp(a, "--warmup")) opt.warmup = (int)x;
        else if (!strcmp(a, "--tests")) opt.tests = (int)x;
        else { usage(); die("unknown option"); }
    }
    if (opt.dim != 1 && opt.dim != 2) die("--dim must be 1 or 2");
    if (opt.size < 3 || opt.iters < 1 || opt.repeats < 1 || opt.tests > 100000) die("--size >= 3, --iters >= 1, "
                                                                                    "--repeats >= 1");
    if (opt.dim == 2) {
        side = (long)sqrt((double)opt.size);
        while ((side + 1) * (side + 1) <= opt.size) side++;
        if (side < 3) die("--dim 2 needs --size >= 9");
    }
    long n = points();
    double *u = malloc((size_t)n * sizeof(double)), *v = malloc((size_t)n * sizeof(double));
    size_t per_repeat = (size_t)opt.iters * 3 * sizeof(double);
    double *loc = malloc(per_repeat), *glob = malloc(per_repeat), *ref = malloc(per_repeat);
    double *times[2], *comp = malloc((size_t)opt.repeats * sizeof(double));
    times[0] = malloc((size_t)opt.repeats * sizeof(double));
    times[1] = malloc((size_t)opt.repeats * sizeof(double));
    if (!u || !v || !loc || !glob || !ref || !comp || !times[0] || !times[1]) die("out of memory");
    unsigned seed = 12345u + 7919u * (unsigned)rank;
    for (long i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        u[i] = (double)((seed >> 8) & 0xffff) / 65536.0;
    }

    if (rank == 0)
        printf("# topoar_pipecg: np=%d, %s stencil of %ld points per rank, %d iterations x %d repeats (%d warmup), "
               "3 doubles per %s, %d MPI_Test calls per stencil\n",
               nprocs, opt.dim == 1 ? "1-D 3-point" : "2-D 5-point", n, opt.iters, opt.repeats, opt.warmup,
               opt.nonblocking && opt.blocking ? "MPI_Iallreduce / MPI_Allreduce"
               : opt.nonblocking ? "MPI_Iallreduce" : "MPI_Allreduce", opt.tests);
    double s = 1.0;
    int bad = 0;
    long k = 0;
    int wbad = iterate(&u, &v, &s, opt.warmup, opt.nonblocking, NULL, NULL, k);
    MPI_Allreduce(&wbad, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    k += opt.warmup;
    int modes[2], nmodes = 0;
    if (opt.nonblocking) modes[nmodes++] = 1;
    if (opt.blocking) modes[nmodes++] = 0;
    for (int r = 0; r < opt.repeats && !bad; r++) {
        for (int m = 0; m < nmodes && !bad; m++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            int b = iterate(&u, &v, &s, opt.iters, modes[m], loc, glob, k);
            double t = (MPI_Wtime() - t0) / opt.iters, tmax;
            k += opt.iters;
            MPI_Allreduce(&b, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            times[m][r] = tmax;
            if (bad) break;
            /* every iteration's reduction against one blocking allreduce */
            MPI_Allreduce(loc, ref, 3 * opt.iters, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            int mism = 0;
            for (int i = 0; i < 3 * opt.iters; i++)
                if (ref[i] != glob[i]) {
                    fprintf(stderr, "topoar_pipecg: rank %d repeat %d (%s) iteration %d value %d: got %.17g, "
                            "a blocking MPI_Allreduce of the same data gives %.17g\n", rank, r,
                            modes[m] ? "nonblocking" : "blocking", i / 3, i % 3, glob[i], ref[i]);
                    mism = 1;
                    break;
                }
            MPI_Allreduce(&mism, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        }
        /* the stencil alone */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int it = 0; it < opt.iters; it++) {
            stencil(u, v, 1.0, NULL);
            double *t = u; u = v; v = t;
        }
        double t = (MPI_Wtime() - t0) / opt.iters;
        MPI_Allreduce(&t, &comp[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    if (bad) {
        if (rank == 0) printf("topoar_pipecg: FAILED (wrong reduction results)\n");
        MPI_Finalize();
        return 1;
    }
    qsort(comp, (size_t)opt.repeats, sizeof(double), cmp_double);
    double med[2] = {0, 0}, cmed = comp[opt.repeats / 2];
    for (int m = 0; m < nmodes; m++) {
        qsort(times[m], (size_t)opt.repeats, sizeof(double), cmp_double);
        med[m] = times[m][opt.repeats / 2];
        if (rank == 0)
            printf("%-12s median %10.2f us/iter  min %10.2f  max %10.2f  compute %10.2f us/iter  "
                   "(%d iterations x %d repeats, all checked)\n",
                   modes[m] ? "nonblocking" : "blocking", med[m] * 1e6, times[m][0] * 1e6,
                   times[m][opt.repeats - 1] * 1e6, cmed * 1e6, opt.iters, opt.repeats);
    }
    if (rank == 0 && nmodes == 2) {
        double comm = med[1] - cmed, hidden = med[1] - med[0], bound = comm < cmed ? comm : cmed;
        double pct = bound > 0 ? 100.0 * hidden / bound : 0.0;
        pct = pct < 0 ? 0.0 : pct > 100 ? 100.0 : pct;
        printf("nonblocking/blocking %.3f; overlap estimate %.0f%% ((blocking - nonblocking) / min(compute, "
               "blocking - compute), clipped to 0..100)\n", med[0] / med[1], pct);
    }
    free(u); free(v); free(loc); free(glob); free(ref); free(comp); free(times[0]); free(times[1]);
    MPI_Finalize();
    return 0;
}
