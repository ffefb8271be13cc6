/*
 * test_int_validate: OSU-style validation of integer sums and products
 * whose results overflow, for every predefined integer type, while auto's
 * small-message contest (coll_topoar_trial_calls) runs.
 *
 * MPI says an integer SUM or PROD wraps modulo 2^bits.  topoar's own
 * reduction wraps; Open MPI 4.1's op/avx saturates 8- and 16-bit sums
 * (open-mpi/ompi#8045), and every module that reduces through Open MPI's
 * op (tuned, han) inherits that.  During a contest the previous module
 * takes turns, and it may win a size class: a call it ran would come back
 * saturated, so the right answer would depend on the contest.  topoar
 * keeps the previous module off such calls (TOPOAR_PREPARE_OWN_RESULT_ONLY);
 * this program checks every result against the wrapped sum or product,
 * bit for bit, on every rank.
 *
 * Per size (1 element up to --max-bytes of the widest type, powers of
 * two), --reps rounds over every type and op in turn, so contest turns
 * fall on every type.  Not in place, as OSU's benchmark calls it.
 * Exit 0 when every check passed; a failure names the call and element.
 *
 * usage: test_int_validate [--max-bytes B] [--reps R] [--ops sum,prod]
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct itype {
    MPI_Datatype dt;
    const char *name;
    int size;
};

static const struct itype types[] = {
    {MPI_INT, "MPI_INT", sizeof(int)},
    {MPI_CHAR, "MPI_CHAR", 1},
    {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 1},
    {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 1},
    {MPI_INT8_T, "MPI_INT8_T", 1},
    {MPI_UINT8_T, "MPI_UINT8_T", 1},
    {MPI_SHORT, "MPI_SHORT", sizeof(short)},
    {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", sizeof(short)},
    {MPI_INT16_T, "MPI_INT16_T", 2},
    {MPI_UINT16_T, "MPI_UINT16_T", 2},
    {MPI_UNSIGNED, "MPI_UNSIGNED", sizeof(unsigned)},
    {MPI_INT32_T, "MPI_INT32_T", 4},
    {MPI_UINT32_T, "MPI_UINT32_T", 4},
    {MPI_LONG, "MPI_LONG", sizeof(long)},
    {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", sizeof(long)},
    {MPI_LONG_LONG, "MPI_LONG_LONG", sizeof(long long)},
    {MPI_INT64_T, "MPI_INT64_T", 8},
    {MPI_UINT64_T, "MPI_UINT64_T", 8},
};
#define NTYPES ((int) (sizeof types / sizeof types[0]))

/* Rank r's input element i: large enough that sums over a few ranks
 * overflow 8- and 16-bit types; products of small odd and even factors
 * overflow them too.  Integer types here are two's complement, so the
 * wrapped result is the unsigned computation truncated to `size` bytes. */
static uint64_t input(int is_prod, int rank, size_t i)
{
    if (is_prod) {
        return (uint64_t) (3 + (rank + i) % 7); /* 3..9 */
    }
    return (uint64_t) (0x6f + 37 * (uint64_t) rank + 11 * (uint64_t) i) * 0x0101010101010101ull;
}

static void store(void *buf, int size, size_t i, uint64_t v)
{
    switch (size) {
    case 1: ((uint8_t *) buf)[i] = (uint8_t) v; break;
    case 2: ((uint16_t *) buf)[i] = (uint16_t) v; break;
    case 4: ((uint32_t *) buf)[i] = (uint32_t) v; break;
    default: ((uint64_t *) buf)[i] = v; break;
    }
}

static uint64_t load(const void *buf, int size, size_t i)
{
    switch (size) {
    case 1: return ((const uint8_t *) buf)[i];
    case 2: return ((const uint16_t *) buf)[i];
    case 4: return ((const uint32_t *) buf)[i];
    default: return ((const uint64_t *) buf)[i];
    }
}

static uint64_t truncate_to(int size, uint64_t v)
{
    return size >= 8 ? v : v & ((1ull << (8 * size)) - 1);
}

int main(int argc, char **argv)
{
    size_t max_bytes = 65536;
    int reps = 16, rank, nranks, i, failures = 0, do_sum = 1, do_prod = 1;
    long calls = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
            max_bytes = (size_t) strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--ops") && i + 1 < argc) {
            ++i;
            do_sum = NULL != strstr(argv[i], "sum");
            do_prod = NULL != strstr(argv[i], "prod");
        } else {
            if (0 == rank) {
                fprintf(stderr, "usage: test_int_validate [--max-bytes B] [--reps R] [--ops sum,prod]\n");
            }
            MPI_Finalize();
            return 2;
        }
    }
    void *sbuf = malloc(max_bytes), *rbuf = malloc(max_bytes);
    if (NULL == sbuf || NULL == rbuf) {
        fprintf(stderr, "test_int_validate: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t count = 1; count <= max_bytes; count *= 2) {
        for (int rep = 0; rep < reps && failures < 10; ++rep) {
            for (int t = 0; t < NTYPES && failures < 10; ++t) {
                const struct itype *ty = &types[t];
                if (count * (size_t) ty->size > max_bytes) {
                    continue;
                }
                for (int is_prod = 0; is_prod < 2; ++is_prod) {
                    if ((is_prod && !do_prod) || (!is_prod && !do_sum)) {
                        continue;
                    }
                    for (size_t k = 0; k < count; ++k) {
                        store(sbuf, ty->size, k, input(is_prod, rank, k + (size_t) rep));
                    }
                    memset(rbuf, 0xa5, count * (size_t) ty->size);
                    MPI_Allreduce(sbuf, rbuf, (int) count, ty->dt, is_prod ? MPI_PROD : MPI_SUM, MPI_COMM_WORLD);
                    ++calls;
                    for (size_t k = 0; k < count; ++k) {
                        uint64_t want = is_prod ? 1 : 0;
                        for (int r = 0; r < nranks; ++r) {
                            uint64_t v = input(is_prod, r, k + (size_t) rep);
                            want = is_prod ? want * truncate_to(ty->size, v) : want + v;
                        }
                        want = truncate_to(ty->size, want);
                        uint64_t got = load(rbuf, ty->size, k);
                        if (got != want) {
                            if (failures < 10) {
                                fprintf(stderr,
                                        "test_int_validate: rank %d: %s %s count %zu (round %d): element %zu "
                                        "is 0x%llx, the wrapped result is 0x%llx\n",
                                        rank, ty->name, is_prod ? "MPI_PROD" : "MPI_SUM", count, rep, k,
                                        (unsigned long long) got, (unsigned long long) want);
                            }
                            ++failures;
                            break;
                        }
                    }
                }
            }
        }
    }
    int all_failures = 0;
    MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_int_validate: %ld calls per rank, %d types, sizes 1 element to %zu bytes, %d ranks: %s\n",
               calls, NTYPES, max_bytes, nranks, all_failures ? "FAILED" : "all results wrap as MPI says");
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return all_failures ? 1 : 0;
}
