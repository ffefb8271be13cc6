/*
 * topoar_comm_churn: the first and second MPI_Allreduce on communicators
 * formed and freed over and over -- the pattern of partial all-reduce
 * (groups of a few ranks formed per iteration), where a collective
 * component's per-communicator set-up is paid on every first call.
 *
 *   mpirun -np 4 topoar_comm_churn [-g GROUP] [-m BYTES] [-n ITERATIONS]
 *                                  [-f] [-w WARMUP] [-c CALLS]
 *
 * Each iteration splits MPI_COMM_WORLD into groups of GROUP ranks (default
 * 2) whose membership rotates with the iteration (groups of consecutive
 * ranks, shifted by one each time; with -f the same groups every time),
 * times CALLS (default 2) MPI_Allreduce calls of BYTES (default 1 MiB,
 * floats, sum) on the new communicator, and frees it (with -c 1 right
 * after its first call; the times reach rank 0 by MPI_Reduce, so the
 * communicator sees no other allreduce).  The time of a call is the
 * slowest member's.  Rank 0 prints the median and the 10th/90th
 * percentiles of the first and the second call, and with more calls of
 * the mean of the later ones ("later"), over the iterations after WARMUP
 * (default 3), and of the split that made the communicator (MPI_Comm_split
 * over MPI_COMM_WORLD, timed apart: it runs MPI_COMM_WORLD's nonblocking
 * allreduces to agree on a context id, so a component's nonblocking path
 * shows there).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t) n, sizeof *v, cmp);
    int i = (int) (p * (n - 1) + 0.5);
    return v[i];
}

int main(int argc, char **argv)
{
    int rank, size, group = 2, iters = 50, warmup = 3, fixed = 0, calls = 2, opt;
    long bytes = 1 << 20;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "g:m:n:w:c:fh")) != -1) {
        switch (opt) {
        case 'g': group = atoi(optarg); break;
        case 'm': bytes = atol(optarg); break;
        case 'n': iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'c': calls = atoi(optarg); break;
        case 'f': fixed = 1; break;
        default:
            if (0 == rank)
                fprintf(stderr, "usage: topoar_comm_churn [-g GROUP] [-m BYTES] [-n ITERATIONS] [-w WARMUP] [-c CALLS] [-f]\n");
            MPI_Finalize();
            return 'h' == opt ? 0 : 2;
        }
    }
    if (group < 1 || group > size || bytes < 4 || iters < 1 || warmup < 0 || calls < 1 || calls > 100000) {
        if (0 == rank) fprintf(stderr, "topoar_comm_churn: bad arguments\n");
        MPI_Finalize();
        return 2;
    }
    int count = (int) (bytes / 4);
    float *sbuf = malloc((size_t) count * 4), *rbuf = malloc((size_t) count * 4);
    for (int i = 0; i < count; i++) sbuf[i] = (float) (i % 7);
    double *first = malloc(sizeof(double) * (size_t) iters), *second = malloc(sizeof(double) * (size_t) iters);
    double *later = malloc(sizeof(double) * (size_t) iters), *split = malloc(sizeof(double) * (size_t) iters);
    /* calls' times, then the split's */
    double *t = malloc(sizeof(double) * (size_t) (calls + 1)), *tmax = malloc(sizeof(double) * (size_t) (calls + 1));
    int kept = 0, bad = 0;
    for (int it = 0; it < iters + warmup; it++) {
        int shift = fixed ? 0 : it % size;
        int color = ((rank + shift) % size) / group;
        MPI_Comm comm;
        MPI_Barrier(MPI_COMM_WORLD);
        double ts = MPI_Wtime();
        MPI_Comm_split(MPI_COMM_WORLD, color, rank, &comm);
        t[calls] = MPI_Wtime() - ts;
        int n;
        MPI_Comm_size(comm, &n);
        for (int c = 0; c < calls; c++) {
            MPI_Barrier(comm);
            double t0 = MPI_Wtime();
            MPI_Allreduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, comm);
            t[c] = MPI_Wtime() - t0;
        }
        for (int i = 0; i < count; i += 4099)
            if (rbuf[i] != (float) (n * (i % 7))) bad = 1;
        /* Not an allreduce: the communicator gets exactly CALLS of them
         * (with -c 1 it is freed after its first, deferred set-up and all). */
        MPI_Reduce(t, tmax, calls + 1, MPI_DOUBLE, MPI_MAX, 0, comm);
        MPI_Comm_free(&comm);
        /* Rank 0 reports its own group's times. */
        if (it >= warmup) {
            first[kept] = tmax[0];
            second[kept] = calls > 1 ? tmax[1] : 0;
            split[kept] = tmax[calls];
            later[kept] = 0;
            for (int c = 2; c < calls; c++) later[kept] += tmax[c] / (calls - 2);
            kept++;
        }
    }
    int any_bad;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("# %d ranks, groups of %d (%s), %ld bytes, %d iterations after %d warm-up; seconds\n", size, group,
               fixed ? "fixed" : "rotating", bytes, kept, warmup);
        printf("%-8s %12s %12s %12s\n", "call", "p10", "median", "p90");
        double a = pct(first, kept, 0.1), b = pct(first, kept, 0.5), c = pct(first, kept, 0.9);
        printf("%-8s %12.9f %12.9f %12.9f\n", "first", a, b, c);
        if (calls > 1) {
            a = pct(second, kept, 0.1), b = pct(second, kept, 0.5), c = pct(second, kept, 0.9);
            printf("%-8s %12.9f %12.9f %12.9f\n", "second", a, b, c);
        }
        if (calls > 2) {
            a = pct(later, kept, 0.1), b = pct(later, kept, 0.5), c = pct(later, kept, 0.9);
            printf("%-8s %12.9f %12.9f %12.9f\n", "later", a, b, c);
        }
        a = pct(split, kept, 0.1), b = pct(split, kept, 0.5), c = pct(split, kept, 0.9);
        printf("%-8s %12.9f %12.9f %12.9f\n", "split", a, b, c);
        if (any_bad) printf("WRONG RESULTS\n");
    }
    free(sbuf);
    free(rbuf);
    free(first);
    free(second);
    free(later);
    free(split);
    free(t);
    free(tmax);
    MPI_Finalize();
    return any_bad ? 1 : 0;
}
