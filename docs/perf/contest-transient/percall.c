/* 50 calls of MPI_Allreduce, 8 B (2 floats, sum); prints every call's time (slowest rank's), us. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, n = 50; float s[2] = {1, 2}, r[2]; double t[50], m[50];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) { double t0 = MPI_Wtime(); MPI_Allreduce(s, r, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); t[i] = MPI_Wtime() - t0; }
    MPI_Reduce(t, m, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (0 == rank) { for (int i = 0; i < n; i++) printf("%.1f ", m[i] * 1e6); printf("\n"); }
    MPI_Finalize(); return 0;
}
