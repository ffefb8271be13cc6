/* adapt_loop: a long run of equal MPI_Allreduce calls (float sum), each
 * timed; rank 0 prints one line per call: "call N seconds T at S" (S: seconds
 * since the start), and the median of the last K calls at the end.  For the
 * online-adaptation benchmark (tests/bench/adapt.sh): a link is throttled
 * from outside while it runs.
 *
 *   adapt_loop [-n CALLS] [-s BYTES] [-k LAST] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int calls = 100, last = 15, rank;
    size_t bytes = 8u << 20;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (0 == strcmp(argv[i], "-n")) calls = atoi(argv[i + 1]);
        else if (0 == strcmp(argv[i], "-s")) bytes = (size_t) strtoull(argv[i + 1], NULL, 10);
        else if (0 == strcmp(argv[i], "-k")) last = atoi(argv[i + 1]);
    }
    if (calls < 1 || last < 1 || last > calls || bytes < sizeof(float)) {
        if (0 == rank) fprintf(stderr, "adapt_loop: bad arguments\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int count = (int) (bytes / sizeof(float));
    float *buf = malloc((size_t) count * sizeof(float));
    double *t = malloc((size_t) calls * sizeof(double));
    if (!buf || !t) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 0; i < count; i++) buf[i] = 1.0f;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int c = 0; c < calls; c++) {
        double t0 = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        /* the slowest rank's time: what the job waits for */
        double mine = t1 - t0;
        MPI_Reduce(&mine, &t[c], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            printf("call %d seconds %.4f at %.2f\n", c, t[c], t1 - start);
            fflush(stdout);
        }
        for (int i = 0; i < count; i++) buf[i] = 1.0f;
    }
    if (0 == rank) {
        qsort(t + calls - last, (size_t) last, sizeof(double), cmp);
        printf("median of the last %d calls: %.4f s\n", last, t[calls - last + last / 2]);
    }
    free(buf);
    free(t);
    MPI_Finalize();
    return 0;
}
