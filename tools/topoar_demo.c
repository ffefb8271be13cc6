/*
 * topoar_demo: an ordinary MPI program that knows nothing about topoar.
 *
 * It sums a vector with MPI_Allreduce for a few sizes and checks the result.
 * Run it with `--mca coll topoar,tuned,libnbc,basic,self` (and
 * `--mca coll_topoar_verbose 20` to see what topoar does); the program
 * itself is unchanged either way.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, errors = 0;
    const int counts[] = {1, 1000, 262144, 2097152};

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k) {
        int n = counts[k];
        float *v = malloc((size_t) n * sizeof(float));
        double t0, t;
        if (NULL == v) {
            fprintf(stderr, "rank %d: out of memory\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int i = 0; i < n; ++i) {
            v[i] = (float) (rank + 1) + (float) (i % 7);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t = MPI_Wtime() - t0;
        for (int i = 0; i < n; ++i) {
            float want = (float) size * (float) (size + 1) / 2.0f + (float) size * (float) (i % 7);
            if (v[i] != want) {
                ++errors;
                break;
            }
        }
        if (0 == rank) {
            printf("allreduce of %9d floats on %d ranks: %10.1f us\n", n, size, t * 1e6);
        }
        free(v);
    }
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("%s\n", errors ? "RESULTS WRONG" : "results correct on every rank");
    }
    MPI_Finalize();
    return errors ? 1 : 0;
}
