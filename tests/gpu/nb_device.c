/*
 * MPI_Iallreduce and persistent allreduce on device buffers (the CUDA
 * runtime loaded at run time, tools/topoar_cudart.h; run-gpu-tests.sh puts
 * tests/fake_cuda's runtime first): float sums of counts 1 .. 100,000,
 * in place and not, several outstanding at once, completed in reverse
 * order, and 50 starts of a persistent request with fresh data each time.
 * Results are copied back and compared with the exact sums (small
 * integers).  Exit 0 when every check passed.
 */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topoar_cudart.h"

/* Open MPI 5 has MPI_Allreduce_init while its mpi.h says MPI_VERSION 3. */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define ALLREDUCE_INIT MPI_Allreduce_init
#else
#define ALLREDUCE_INIT MPIX_Allreduce_init
#endif

static topoar_cudart_t rt;
static int rank, size, failed, passed;

static void fill(float *h, int n, int salt)
{
    for (int i = 0; i < n; i++) h[i] = (float) ((rank + 1) * (i % 13 + salt));
}

static void check(const float *h, int n, int salt, const char *what)
{
    float want_scale = (float) (size * (size + 1) / 2);
    for (int i = 0; i < n; i++) {
        float want = want_scale * (float) (i % 13 + salt);
        if (h[i] != want) {
            if (failed++ < 5)
                fprintf(stderr, "rank %d: %s count %d element %d: %g, want %g\n", rank, what, n, i, h[i], want);
            return;
        }
    }
    passed++;
}

int main(int argc, char **argv)
{
    enum { K = 5 };
    const int counts[K] = {1, 7, 1000, 4099, 100000};
    char why[256];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (0 != topoar_cudart_load(&rt, why, sizeof why)) {
        if (0 == rank) fprintf(stderr, "nb_device: %s\n", why);
        MPI_Finalize();
        return 77;
    }
    float *host = malloc(100000 * sizeof(float));
    for (int in_place = 0; in_place < 2; in_place++) {
        void *s[K], *r[K];
        MPI_Request req[K];
        for (int k = 0; k < K; k++) {
            size_t b = (size_t) counts[k] * sizeof(float);
            rt.malloc_(&s[k], b);
            rt.malloc_(&r[k], b);
            fill(host, counts[k], k + in_place);
            rt.memcpy_(in_place ? r[k] : s[k], host, b, TOPOAR_H2D);
            MPI_Iallreduce(in_place ? MPI_IN_PLACE : s[k], r[k], counts[k], MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                           &req[k]);
        }
        for (int k = K - 1; k >= 0; k--) MPI_Wait(&req[k], MPI_STATUS_IGNORE);
        for (int k = 0; k < K; k++) {
            rt.memcpy_(host, r[k], (size_t) counts[k] * sizeof(float), TOPOAR_D2H);
            check(host, counts[k], k + in_place, in_place ? "iallreduce in place" : "iallreduce");
            rt.free_(s[k]);
            rt.free_(r[k]);
        }
    }
    {
        const int n = 4099;
        void *s, *r;
        MPI_Request p;
        rt.malloc_(&s, n * sizeof(float));
        rt.malloc_(&r, n * sizeof(float));
        ALLREDUCE_INIT(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &p);
        for (int it = 0; it < 50; it++) {
            fill(host, n, it);
            rt.memcpy_(s, host, n * sizeof(float), TOPOAR_H2D);
            MPI_Start(&p);
            MPI_Wait(&p, MPI_STATUS_IGNORE);
            rt.memcpy_(host, r, n * sizeof(float), TOPOAR_D2H);
            check(host, n, it, "persistent");
        }
        MPI_Request_free(&p);
        rt.free_(s);
        rt.free_(r);
    }
    free(host);
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) printf("nb_device: np %d, %d checks passed per rank, %d failed in all\n", size, passed, failed);
    MPI_Finalize();
    return failed ? 1 : 0;
}
