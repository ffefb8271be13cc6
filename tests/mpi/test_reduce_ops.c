/*
 * The glue's map from MPI ops/datatypes to topoar's own reduction
 * (ompi_coll_topoar/coll_topoar_ops.c), checked against Open MPI itself.
 * One rank is enough.  For every predefined op and a list of datatypes:
 *   - a pair topoar claims must be one Open MPI accepts, one topoar element
 *     must be one extent of the datatype, and topoar_reduce_host must give
 *     the same result as PMPI_Reduce_local on 1000 elements (run with op/avx
 *     off: its int8/int16 sums saturate, open-mpi/ompi#8045);
 *   - a pair Open MPI accepts and topoar does not claim must be one of the
 *     documented exceptions (MPI_BYTE arithmetic, logical ops on the
 *     multi-language types, types topoar has no element type for);
 *   - user-defined ops, MPI_REPLACE and derived datatypes are never claimed.
 * Open MPI 4.1.4's MIN/MAX compare MPI_UNSIGNED_LONG as signed
 * (open-mpi/ompi#10525, fixed after 4.1.4) and MPI_OFFSET as unsigned:
 * topoar's results for those are checked against Open MPI's on
 * MPI_UINT64_T / MPI_INT64_T instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_topoar_ops.c" /* the unit under test, with its static table */

#define N 1000
#define D(x) {#x, x}

static int failures;

static void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) in; (void) inout; (void) len; (void) dt;
}

/* Data the op is defined on, identical padding in every copy. */
static void fill(unsigned char *buf, size_t extent, int redtype, int op, unsigned seed)
{
    size_t i, b;
    srand(seed);
    memset(buf, 0, extent * N);
    for (i = 0; i < N; ++i) {
        unsigned char *e = buf + i * extent;
        int small = rand() % 512 - 256; /* multiples of 1/4 below 64: exact sums and products */
        switch (redtype) {
        case TOPOAR_REDTYPE_FLOAT32: *(float *) e = small / 4.0f; break;
        case TOPOAR_REDTYPE_FLOAT64: *(double *) e = small / 4.0; break;
        case TOPOAR_REDTYPE_LONG_DOUBLE: *(long double *) e = small / 4.0L; break;
        case TOPOAR_REDTYPE_COMPLEX_FLOAT: ((float *) e)[0] = small / 4.0f; ((float *) e)[1] = (rand() % 64) / 4.0f; break;
        case TOPOAR_REDTYPE_COMPLEX_DOUBLE: ((double *) e)[0] = small / 4.0; ((double *) e)[1] = (rand() % 64) / 4.0; break;
        case TOPOAR_REDTYPE_FLOAT_INT: *(float *) e = rand() % 3; ((int *) e)[1] = rand() % 9; break;
        case TOPOAR_REDTYPE_DOUBLE_INT: *(double *) e = rand() % 3; *(int *) (e + 8) = rand() % 9; break;
        case TOPOAR_REDTYPE_LONG_INT: *(long *) e = rand() % 3 - 1; *(int *) (e + 8) = rand() % 9; break;
        case TOPOAR_REDTYPE_2INT: ((int *) e)[0] = rand() % 3 - 1; ((int *) e)[1] = rand() % 9; break;
        case TOPOAR_REDTYPE_SHORT_INT: *(short *) e = rand() % 3 - 1; *(int *) (e + 4) = rand() % 9; break;
        case TOPOAR_REDTYPE_LONG_DOUBLE_INT: *(long double *) e = rand() % 3; *(int *) (e + 16) = rand() % 9; break;
        default: /* integers: any bits, so signedness matters for min/max; logical: 0/1 */
            if (op >= TOPOAR_REDOP_LAND && op <= TOPOAR_REDOP_LXOR && redtype == TOPOAR_REDTYPE_BOOL) {
                e[0] = rand() % 2;
            } else if (op >= TOPOAR_REDOP_LAND && op <= TOPOAR_REDOP_LXOR && rand() % 2) {
                memset(e, 0, extent);
            } else {
                for (b = 0; b < extent; ++b) e[b] = (unsigned char) rand();
            }
        }
    }
}

/* long double carries 6 bytes of padding an x87 store may leave alone. */
static int same(const unsigned char *a, const unsigned char *b, size_t extent, int redtype)
{
    size_t i;
    for (i = 0; i < N; ++i, a += extent, b += extent) {
        if (redtype == TOPOAR_REDTYPE_LONG_DOUBLE || redtype == TOPOAR_REDTYPE_LONG_DOUBLE_INT) {
            if (*(const long double *) a != *(const long double *) b) return 0;
            if (redtype == TOPOAR_REDTYPE_LONG_DOUBLE_INT && *(const int *) (a + 16) != *(const int *) (b + 16)) return 0;
        } else if (memcmp(a, b, extent) != 0) {
            return 0;
        }
    }
    return 1;
}

static int is(const char *a, const char *b) { return strcmp(a, b) == 0; }

/* The datatype whose Open MPI reduction is the reference (see above). */
static MPI_Datatype reference_type(const char *dname, MPI_Datatype d, int op_index)
{
    if (op_index == 2 || op_index == 3) { /* MIN, MAX */
        if (is(dname, "MPI_UNSIGNED_LONG") && sizeof(unsigned long) == 8) return MPI_UINT64_T;
        if (is(dname, "MPI_OFFSET") && sizeof(MPI_Offset) == 8) return MPI_INT64_T;
    }
    return d;
}

/* Pairs Open MPI reduces and topoar deliberately hands down. */
static int documented_exception(const char *dname, int op_index)
{
    const int logical = op_index >= 4 && op_index <= 6, bitwise = op_index >= 7 && op_index <= 9;
    if (is(dname, "MPI_BYTE")) return !bitwise;
    if (is(dname, "MPI_AINT") || is(dname, "MPI_OFFSET") || is(dname, "MPI_COUNT")) return logical;
    /* Open MPI allows logical ops on these Fortran integers, not on INTEGER
     * and INTEGER4; the standard on none. */
    if (is(dname, "MPI_INTEGER1") || is(dname, "MPI_INTEGER2") || is(dname, "MPI_INTEGER8")) return logical;
    return is(dname, "MPI_WCHAR") || is(dname, "MPI_C_LONG_DOUBLE_COMPLEX") || is(dname, "MPI_REAL16") ||
           is(dname, "MPI_2REAL") || is(dname, "MPI_2DOUBLE_PRECISION") || is(dname, "MPI_COMPLEX32");
}

int main(int argc, char **argv)
{
    struct { const char *name; MPI_Datatype d; } ds[] = {
        D(MPI_CHAR), D(MPI_SIGNED_CHAR), D(MPI_UNSIGNED_CHAR), D(MPI_WCHAR), D(MPI_BYTE), D(MPI_SHORT),
        D(MPI_UNSIGNED_SHORT), D(MPI_INT), D(MPI_UNSIGNED), D(MPI_LONG), D(MPI_UNSIGNED_LONG), D(MPI_LONG_LONG_INT),
        D(MPI_UNSIGNED_LONG_LONG), D(MPI_INT8_T), D(MPI_UINT8_T), D(MPI_INT16_T), D(MPI_UINT16_T), D(MPI_INT32_T),
        D(MPI_UINT32_T), D(MPI_INT64_T), D(MPI_UINT64_T), D(MPI_AINT), D(MPI_OFFSET), D(MPI_COUNT), D(MPI_C_BOOL),
        D(MPI_CXX_BOOL), D(MPI_FLOAT), D(MPI_DOUBLE), D(MPI_LONG_DOUBLE), D(MPI_C_COMPLEX), D(MPI_C_FLOAT_COMPLEX),
        D(MPI_C_DOUBLE_COMPLEX), D(MPI_C_LONG_DOUBLE_COMPLEX), D(MPI_CXX_FLOAT_COMPLEX), D(MPI_CXX_DOUBLE_COMPLEX),
        D(MPI_INTEGER), D(MPI_REAL), D(MPI_DOUBLE_PRECISION), D(MPI_COMPLEX), D(MPI_DOUBLE_COMPLEX),
/* The optional Fortran types: mpi.h declares them only where Open MPI was
 * built with a Fortran compiler that has them (Debian's 4.1.4 has all;
 * an Open MPI 5 configured --disable-mpi-fortran none). */
#ifdef MPI_INTEGER1
        D(MPI_INTEGER1),
#endif
#ifdef MPI_INTEGER2
        D(MPI_INTEGER2),
#endif
#ifdef MPI_INTEGER4
        D(MPI_INTEGER4),
#endif
#ifdef MPI_INTEGER8
        D(MPI_INTEGER8),
#endif
#ifdef MPI_REAL4
        D(MPI_REAL4),
#endif
#ifdef MPI_REAL8
        D(MPI_REAL8),
#endif
#ifdef MPI_REAL16
        D(MPI_REAL16),
#endif
#ifdef MPI_COMPLEX8
        D(MPI_COMPLEX8),
#endif
#ifdef MPI_COMPLEX16
        D(MPI_COMPLEX16),
#endif
#ifdef MPI_COMPLEX32
        D(MPI_COMPLEX32),
#endif
        D(MPI_LOGICAL), D(MPI_FLOAT_INT), D(MPI_DOUBLE_INT),
        D(MPI_LONG_INT), D(MPI_2INT), D(MPI_SHORT_INT), D(MPI_LONG_DOUBLE_INT), D(MPI_2INTEGER), D(MPI_2REAL),
        D(MPI_2DOUBLE_PRECISION),
    };
    struct { const char *name; MPI_Op o; } ops[] = {
        D(MPI_SUM), D(MPI_PROD), D(MPI_MIN), D(MPI_MAX), D(MPI_LAND), D(MPI_LOR),
        D(MPI_LXOR), D(MPI_BAND), D(MPI_BOR), D(MPI_BXOR), D(MPI_MAXLOC), D(MPI_MINLOC),
    };
    static unsigned char in[N * 32], own[N * 32], ref[N * 32];
    int nd = sizeof ds / sizeof ds[0], no = sizeof ops / sizeof ops[0], i, j, claimed_pairs = 0, redop, redtype;
    MPI_Op user_op;
    MPI_Datatype contig;

    setenv("OMPI_MCA_op", "^avx", 1);
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    for (i = 0; i < nd; ++i) {
        MPI_Aint lb, extent;
        MPI_Type_get_extent(ds[i].d, &lb, &extent);
        for (j = 0; j < no; ++j) {
            int claimed = mca_coll_topoar_op_ids(ds[i].d, ops[j].o, &redop, &redtype);
            int ompi_ok;
            memset(ref, 0, sizeof ref);
            ompi_ok = PMPI_Reduce_local(in, ref, 4, ds[i].d, ops[j].o) == MPI_SUCCESS;
            if (!claimed) {
                if (ompi_ok && !documented_exception(ds[i].name, j)) {
                    printf("FAIL %s %s: Open MPI reduces it, topoar does not claim it\n", ds[i].name, ops[j].name);
                    ++failures;
                }
                continue;
            }
            ++claimed_pairs;
            if (!ompi_ok) {
                printf("FAIL %s %s: claimed, but Open MPI rejects it\n", ds[i].name, ops[j].name);
                ++failures;
                continue;
            }
            if (redop != j || (size_t) extent != topoar_reduce_type_size(redtype) || (size_t) extent > 32) {
                printf("FAIL %s %s: mapped to %s/%s (%zu bytes), extent %ld\n", ds[i].name, ops[j].name,
                       topoar_reduce_op_name(redop), topoar_reduce_type_name(redtype),
                       topoar_reduce_type_size(redtype), (long) extent);
                ++failures;
                continue;
            }
            fill(in, extent, redtype, redop, 1 + i * 100 + j);
            fill(own, extent, redtype, redop, 7 + i * 100 + j);
            memcpy(ref, own, extent * N);
            PMPI_Reduce_local(in, ref, N, reference_type(ds[i].name, ds[i].d, j), ops[j].o);
            if (topoar_reduce_host(redop, redtype, in, own, N) != 0 || !same(own, ref, extent, redtype)) {
                printf("FAIL %s %s (%s/%s): results differ from Open MPI's\n", ds[i].name, ops[j].name,
                       topoar_reduce_op_name(redop), topoar_reduce_type_name(redtype));
                ++failures;
            }
        }
    }

    /* Never claimed: user ops, MPI_REPLACE, MPI_NO_OP, derived datatypes. */
    MPI_Op_create(user_fn, 1, &user_op);
    MPI_Type_contiguous(2, MPI_INT, &contig);
    MPI_Type_commit(&contig);
    if (mca_coll_topoar_op_ids(MPI_INT, user_op, &redop, &redtype) ||
        mca_coll_topoar_op_ids(MPI_INT, MPI_REPLACE, &redop, &redtype) ||
        mca_coll_topoar_op_ids(MPI_INT, MPI_NO_OP, &redop, &redtype) ||
        mca_coll_topoar_op_ids(contig, MPI_SUM, &redop, &redtype)) {
        printf("FAIL: a user op, MPI_REPLACE, MPI_NO_OP or a derived datatype was claimed\n");
        ++failures;
    }
    MPI_Op_free(&user_op);
    MPI_Type_free(&contig);

    printf("%d datatypes x %d ops: %d pairs claimed and equal to Open MPI's results; %d failures\n", nd, no,
           claimed_pairs, failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
