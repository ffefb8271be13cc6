/* hostinfo: smoke test for an emulated cluster (tests/cluster/topoar-cluster).
 *
 *   hostinfo [BYTES [ITERS]]
 *
 * Every rank prints its rank, hostname and node-local rank count.  Checks:
 *   - an MPI_Allreduce(MPI_SUM) of the ranks gives size*(size-1)/2;
 *   - ranks share an MPI_COMM_TYPE_SHARED communicator exactly when they
 *     report the same hostname (the emulated nodes are told apart).
 * With BYTES > 0 it then times ITERS (default 5) float MPI_Allreduce calls
 * of BYTES bytes after one warm-up call, checks the result and prints the
 * minimum and mean time (slowest rank per call).
 * Exit status 0 when all checks pass, 1 otherwise (on every rank).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, len, local_size, local_rank, failed = 0, any_failed;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm local;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                        MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &local_size);
    MPI_Comm_rank(local, &local_rank);

    long long mine = rank, sum = -1;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (sum != (long long)size * (size - 1) / 2) {
        fprintf(stderr, "rank %d: allreduce sum %lld, expected %lld\n", rank,
                sum, (long long)size * (size - 1) / 2);
        failed = 1;
    }

    /* node leader (world rank of local rank 0) per rank, and all names */
    int leader = rank;
    MPI_Bcast(&leader, 1, MPI_INT, 0, local);
    int *leaders = malloc(sizeof(int) * size);
    char *names = malloc((size_t)MPI_MAX_PROCESSOR_NAME * size);
    MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names,
                  MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) {
        int same_node = leaders[i] == leader;
        int same_name = strcmp(names + (size_t)i * MPI_MAX_PROCESSOR_NAME,
                               name) == 0;
        if (same_node != same_name) {
            fprintf(stderr, "rank %d (%s): rank %d (%s) same node %d but "
                    "same hostname %d\n", rank, name, i,
                    names + (size_t)i * MPI_MAX_PROCESSOR_NAME, same_node,
                    same_name);
            failed = 1;
        }
    }
    int nodes = 0;
    for (int i = 0; i < size; i++)
        nodes += leaders[i] == i;

    /* ordered output: rank 0 prints every rank's line */
    char line[256];
    snprintf(line, sizeof line, "rank %d/%d host %.200s local %d/%d", rank, size,
             name, local_rank, local_size);
    char *lines = rank == 0 ? malloc(sizeof line * size) : NULL;
    MPI_Gather(line, sizeof line, MPI_CHAR, lines, sizeof line, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        for (int i = 0; i < size; i++)
            printf("%s\n", lines + sizeof line * i);
        printf("nodes %d\n", nodes);
        fflush(stdout);
        free(lines);
    }

    long bytes = argc > 1 ? atol(argv[1]) : 0;
    int iters = argc > 2 ? atoi(argv[2]) : 5;
    if (bytes > 0 && iters > 0) {
        size_t n = (size_t)bytes / sizeof(float);
        float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
        /* small integers: float sums are exact in any order */
        for (size_t i = 0; i < n; i++)
            in[i] = (float)((rank + i) % 7);
        double tmin = 1e30, tsum = 0;
        for (int it = -1; it < iters; it++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t = MPI_Wtime() - t0, tmax;
            MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (it < 0)
                continue;
            tsum += tmax;
            if (tmax < tmin)
                tmin = tmax;
        }
        for (size_t i = 0; i < n; i++) {
            float expect = 0;
            for (int r = 0; r < size; r++)
                expect += (float)((r + i) % 7);
            if (out[i] != expect) {
                fprintf(stderr, "rank %d: element %zu is %g, expected %g\n",
                        rank, i, out[i], expect);
                failed = 1;
                break;
            }
        }
        if (rank == 0)
            printf("allreduce %ld bytes float x%d: min %.4f s mean %.4f s\n",
                   bytes, iters, tmin, tsum / iters);
        free(in);
        free(out);
    }

    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("hostinfo: %s\n", any_failed ? "FAILED" : "OK");
    free(leaders);
    free(names);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return any_failed ? 1 : 0;
}
