/*
 * topoar_reduce_bench: speed of topoar's own local reduction
 * (topoar_reduce_host) against Open MPI's (PMPI_Reduce_local, i.e.
 * ompi_op_reduce with whichever op component Open MPI selected: op/avx
 * unless run with --mca op ^avx).
 *
 *   mpirun -np 1 topoar_reduce_bench [-r REPS] [-s MiB,MiB,...]
 *
 * For each case and size: REPS interleaved repetitions (the order of the
 * two alternates), the median of each, and own/Open MPI (below 1: topoar
 * faster).  It also checks both give the same result on data that wraps
 * int8 sums, and says so when Open MPI's differs (open-mpi/ompi#8045:
 * op/avx saturates 8- and 16-bit integer sums).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topoar_reduce.h"

struct bench_case {
    const char *name;
    MPI_Datatype dtype;
    MPI_Op op;
    int redtype, redop;
    size_t elem;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Small values in every type's terms, so repeated sums stay finite. */
static void fill(void *buf, size_t bytes, int redtype, unsigned seed)
{
    size_t i;
    switch (redtype) {
    case TOPOAR_REDTYPE_FLOAT32:
        for (i = 0; i < bytes / 4; ++i) ((float *) buf)[i] = (float) ((i * 7 + seed) % 100) * 0.001f;
        break;
    case TOPOAR_REDTYPE_FLOAT64:
        for (i = 0; i < bytes / 8; ++i) ((double *) buf)[i] = (double) ((i * 7 + seed) % 100) * 0.001;
        break;
    default:
        for (i = 0; i < bytes; ++i) ((unsigned char *) buf)[i] = (unsigned char) (i * 31 + seed);
        break;
    }
}

/* Same result from both on data where int8 sums wrap (127 + 1 ...). */
static void check_same(const struct bench_case *c)
{
    enum { N = 4096 };
    static unsigned char in[N * 8], a[N * 8], b[N * 8];
    size_t n = N, i;
    fill(in, n * c->elem, c->redtype, 3);
    fill(a, n * c->elem, c->redtype, 90);
    if (c->redtype == TOPOAR_REDTYPE_INT8)
        for (i = 0; i < n; ++i) in[i] = 100, a[i] = 100;
    memcpy(b, a, n * c->elem);
    topoar_reduce_host(c->redop, c->redtype, in, a, n);
    PMPI_Reduce_local(in, b, (int) n, c->dtype, c->op);
    if (memcmp(a, b, n * c->elem) != 0) {
        size_t first = 0;
        while (first < n * c->elem && a[first] == b[first]) ++first;
        printf("# %-8s results DIFFER from byte %zu (topoar %d, Open MPI %d)%s\n", c->name, first,
               (int) (signed char) a[first], (int) (signed char) b[first],
               c->redtype == TOPOAR_REDTYPE_INT8 ? ": Open MPI's op/avx saturates int8 sums (ompi#8045)" : "");
    } else {
        printf("# %-8s results identical\n", c->name);
    }
}

int main(int argc, char **argv)
{
    int reps = 21, nsizes = 4, s, k, r;
    size_t sizes_mib[16] = {1, 4, 16, 32};
    const struct bench_case cases[] = {
        {"sum f32", MPI_FLOAT, MPI_SUM, TOPOAR_REDTYPE_FLOAT32, TOPOAR_REDOP_SUM, 4},
        {"sum f64", MPI_DOUBLE, MPI_SUM, TOPOAR_REDTYPE_FLOAT64, TOPOAR_REDOP_SUM, 8},
        {"sum i32", MPI_INT32_T, MPI_SUM, TOPOAR_REDTYPE_INT32, TOPOAR_REDOP_SUM, 4},
        {"sum i8", MPI_INT8_T, MPI_SUM, TOPOAR_REDTYPE_INT8, TOPOAR_REDOP_SUM, 1},
        {"min f32", MPI_FLOAT, MPI_MIN, TOPOAR_REDTYPE_FLOAT32, TOPOAR_REDOP_MIN, 4},
    };
    const int ncases = (int) (sizeof cases / sizeof cases[0]);

    MPI_Init(&argc, &argv);
    for (k = 1; k < argc; ++k) {
        if (!strcmp(argv[k], "-r") && k + 1 < argc) {
            reps = atoi(argv[++k]);
        } else if (!strcmp(argv[k], "-s") && k + 1 < argc) {
            char *p = argv[++k];
            nsizes = 0;
            while (*p && nsizes < 16) {
                sizes_mib[nsizes++] = strtoul(p, &p, 10);
                if (*p == ',') ++p;
            }
        } else {
            fprintf(stderr, "usage: %s [-r REPS] [-s MiB,MiB,...]\n", argv[0]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (reps < 1) reps = 1;

    for (k = 0; k < ncases; ++k) check_same(&cases[k]);
    printf("# medians of %d interleaved repetitions; ratio = topoar / Open MPI (below 1: topoar faster)\n", reps);
    printf("%-8s %8s %12s %12s %10s %10s %7s\n", "case", "MiB", "topoar_us", "ompi_us", "topoar_GB/s", "ompi_GB/s",
           "ratio");
    for (s = 0; s < nsizes; ++s) {
        size_t bytes = sizes_mib[s] << 20;
        char *in = malloc(bytes), *io = malloc(bytes);
        double *t_own = malloc(reps * sizeof(double)), *t_ompi = malloc(reps * sizeof(double));
        if (!in || !io || !t_own || !t_ompi) {
            fprintf(stderr, "out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (k = 0; k < ncases; ++k) {
            const struct bench_case *c = &cases[k];
            size_t n = bytes / c->elem;
            double own, ompi;
            fill(in, bytes, c->redtype, 1);
            fill(io, bytes, c->redtype, 2);
            /* one warm-up each */
            topoar_reduce_host(c->redop, c->redtype, in, io, n);
            PMPI_Reduce_local(in, io, (int) n, c->dtype, c->op);
            for (r = 0; r < reps; ++r) {
                int first_own = r % 2 == 0, j;
                for (j = 0; j < 2; ++j) {
                    double t0 = MPI_Wtime();
                    if ((j == 0) == first_own) {
                        topoar_reduce_host(c->redop, c->redtype, in, io, n);
                        t_own[r] = MPI_Wtime() - t0;
                    } else {
                        PMPI_Reduce_local(in, io, (int) n, c->dtype, c->op);
                        t_ompi[r] = MPI_Wtime() - t0;
                    }
                }
            }
            own = median(t_own, reps);
            ompi = median(t_ompi, reps);
            printf("%-8s %8zu %12.1f %12.1f %10.2f %10.2f %7.3f\n", c->name, sizes_mib[s], own * 1e6, ompi * 1e6,
                   bytes / own * 1e-9, bytes / ompi * 1e-9, own / ompi);
            fflush(stdout);
        }
        free(in);
        free(io);
        free(t_own);
        free(t_ompi);
    }
    MPI_Finalize();
    return 0;
}
