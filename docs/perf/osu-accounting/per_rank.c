/* per_rank SIZE ITERS: OSU osu_allreduce's loop (each call timed alone,
 * then MPI_Barrier), float sum of SIZE bytes, ITERS timed calls after 100.
 * Prints each rank's host, its mean allreduce time and its mean barrier
 * time (us): OSU reports the mean of the first column over the ranks.
 * A measurement tool for docs/performance.md ("OSU's number at a
 * link-bound size"), not part of the product. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_RANKS 64
#define WARMUP 100

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3 || size > MAX_RANKS) {
        if (rank == 0) fprintf(stderr, "usage: per_rank SIZE ITERS (at most %d ranks)\n", MAX_RANKS);
        MPI_Finalize();
        return 1;
    }
    const int count = atoi(argv[1]) / (int)sizeof(float), iters = atoi(argv[2]);
    float *src = malloc(sizeof(float) * (size_t)(count > 0 ? count : 1));
    float *dst = malloc(sizeof(float) * (size_t)(count > 0 ? count : 1));
    for (int i = 0; i < count; ++i) src[i] = 1.0f;
    double in_allreduce = 0, in_barrier = 0;
    for (int i = 0; i < iters + WARMUP; ++i) {
        const double t0 = MPI_Wtime();
        MPI_Allreduce(src, dst, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        const double t1 = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        const double t2 = MPI_Wtime();
        if (i >= WARMUP) {
            in_allreduce += t1 - t0;
            in_barrier += t2 - t1;
        }
    }
    double mine[2] = {in_allreduce / iters * 1e6, in_barrier / iters * 1e6}, all[2 * MAX_RANKS];
    char host[64] = {0}, hosts[64 * MAX_RANKS];
    gethostname(host, sizeof host - 1);
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(host, 64, MPI_CHAR, hosts, 64, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int r = 0; r < size; ++r)
            printf("rank %d %s allreduce %.1f barrier %.1f\n", r, hosts + 64 * r, all[2 * r], all[2 * r + 1]);
    free(src);
    free(dst);
    MPI_Finalize();
    return 0;
}
