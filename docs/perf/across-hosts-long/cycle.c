/* cycle: OSU's loop (allreduce, barrier) timed two ways per size: the
 * allreduce alone as OSU does (mean over ranks of the mean call time) and
 * the whole iteration (loop wall time / iterations, rank 0). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np, iters = 2000, skip = 300;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    size_t lo = argc > 1 ? strtoul(argv[1], 0, 10) : 8, hi = argc > 2 ? strtoul(argv[2], 0, 10) : 65536;
    float *s = malloc(hi), *r = malloc(hi);
    for (size_t i = 0; i < hi / 4; ++i) s[i] = (float) (rank + i % 7);
    if (rank == 0) printf("# size osu_avg_us cycle_us barrier_share\n");
    for (size_t b = lo; b <= hi; b *= 2) {
        int n = (int) (b / 4);
        double t = 0, t0 = 0;
        for (int i = 0; i < iters + skip; ++i) {
            if (i == skip) { MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime(); }
            double a = MPI_Wtime();
            MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double z = MPI_Wtime();
            MPI_Barrier(MPI_COMM_WORLD);
            if (i >= skip) t += z - a;
        }
        double cyc = (MPI_Wtime() - t0) / iters, avg = t / iters, sum;
        MPI_Reduce(&avg, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) printf("%zu %.2f %.2f\n", b, 1e6 * sum / np, 1e6 * cyc);
    }
    free(s); free(r);
    MPI_Finalize();
    return 0;
}
