/*
 * test_allreduce.c - MPI correctness sweep for MPI_Allreduce (topoar).
 *
 * Runs under mpirun at any np (designed for 1..8) with any coll component
 * stack.  Covered: every predefined op valid on every predefined C type (all
 * integer types, float/double/long double, float/double complex, C_BOOL, BYTE,
 * the MINLOC/MAXLOC pair types), commutative and non-commutative user ops
 * (one on a derived datatype with holes), counts 0, 1, < np, 7, 1001 and
 * >= 1M (64K with --quick), MPI_IN_PLACE, and the communicators WORLD, a dup,
 * a parity split, WORLD without rank 0, a reversed-order split, SELF, a burst
 * of 200 back-to-back calls and 10 create/use/free cycles.  Each case checks:
 *   - every element equals a reference computed locally (inputs are chosen so
 *     the exact result does not depend on the reduction order: small integers
 *     without overflow, quarter-integers in floats, products of +-1/2, +-1,
 *     +-2, Gaussian integers, ...).  Long results: each rank checks one block
 *     of elements, which with the next check still covers every element;
 *   - the result is bit-identical on all ranks of the communicator (hashes
 *     gathered to its rank 0), also for inputs whose floating-point rounding
 *     depends on the order ("approx" cases: there the values are only checked
 *     against a rigorous error bound).  A case that differs across ranks is
 *     re-run with full checking on every rank to print index/got/expected;
 *   - the send buffer is unchanged, nothing is written outside the receive
 *     buffer (guard zones) nor into the holes of a derived datatype.
 * With --expect-topoar it also asserts, through topoar's MPI_T performance
 * variables, that topoar executed every eligible call itself and handed every
 * non-commutative user op to the previous module (see pv_class()).
 *
 * Output: one line per failure (rank, case, index, got, expected); at the end
 * rank 0 prints exactly "N passed, M failed" (a case counts once per
 * communicator instance and fails if it fails on any rank).  Exit status is
 * nonzero if anything failed.
 *
 * Options: --quick          fewer small counts, largest count 64K elements
 *          --expect-topoar  assert the topoar pvar counters (fail if absent)
 *          --relax T1,T2    with --expect-topoar: no assertion on these type
 *                           names (e.g. MPI_LONG_DOUBLE)
 *          --either-upto B  with --expect-topoar: calls of at most B bytes
 *                           may be topoar's or the previous module's (auto's
 *                           small-message contest, coll_topoar_trial_calls,
 *                           hands some of them down)
 *          --seed N         change all input values
 *          --verbose        print every case;  --timing  time per phase
 *          --device         buffers in GPU memory (libcudart.so.13 loaded at
 *                           run time; the real one or tests/fake_cuda's):
 *                           inputs are copied to the device before each
 *                           call and results back after it, so every check
 *                           above applies; MPI_COMM_SELF is skipped (coll
 *                           self copies buffers with memcpy)
 *          --device-mixed   like --device, but one of sbuf/rbuf on the host
 *                           and the other on the device (alternating)
 *          --expect-path P  with --device and --expect-topoar: every call
 *                           topoar handles ran path P (nccl: topoar's plan
 *                           over NCCL, ncclAllReduce or nccl_hier; staged: through
 *                           pinned host memory), read from
 *                           coll_topoar_allreduce_last_path;
 *                           nccl_hier: NCCL inside the hosts (path 8) for
 *                           the pairs NCCL reduces (sum/prod/min/max on 8,
 *                           32, 64-bit integers, float, double), topoar's
 *                           plan over NCCL (3) for the others, long double
 *                           staged (5);
 *                           with --device alone, P down (staged to the
 *                           previous module) or device-down (device
 *                           buffers given to it as they are, a CUDA-aware
 *                           MPI underneath): every call of count >= 1 on a
 *                           communicator of 2 or more ranks went that way
 *
 * Known library bugs worked around (detected, noted in the output):
 *  - Open MPI 4.1.x op/avx saturates 8/16-bit integer sums on overflow
 *    (open-mpi/ompi#8045): SUM inputs here never overflow; wrapping sums are
 *    tested through a user op only.
 *  - Open MPI 4.1.2-4.1.4 compares MPI_UNSIGNED_LONG as signed in MIN/MAX
 *    (open-mpi/ompi#10525): probed with MPI_Reduce_local; if present, MIN/MAX
 *    inputs of that type stay below the sign bit.
 *  - Open MPI 4.1 rejects predefined ops on derived datatypes (MPI_ERR_OP), so
 *    derived types are only used with user ops.
 */
#include <mpi.h>

#include <complex.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "topoar_cudart.h"
#include "topoar_mpit_names.h"

/* ------------------------------------------------------------------------ */
/* options and global state                                                  */

static int opt_quick = 0;
static int opt_expect = 0;
static int opt_verbose = 0;
static int opt_timing = 0;
static int opt_device = 0;   /* 1: --device, 2: --device-mixed */
static int opt_expect_path = 0; /* 0: any; else TOPOAR_PATH_* value */
static int opt_path_every = 0;  /* the path applies to every call (down, device-down) */
static long n_path_bad = 0;
static uint64_t opt_seed = 0x746f706f6172ULL; /* "topoar" */
static char opt_relax[1024] = "";
static size_t opt_either_upto = 0; /* --either-upto: calls of at most this many bytes may go either way */

static int world_rank = 0, world_size = 1;

/* per-process tallies; only a communicator's rank 0 counts its cases */
static long n_passed = 0, n_failed = 0;

#define GUARD 64             /* guard bytes on each side of every buffer */
#define SPAT 0x5a            /* fill pattern of send buffers */
#define RPAT 0xa5            /* fill pattern of receive buffers */
#define BATCH_CASES 64       /* cases issued back to back before checking */
#define BATCH_BYTES (4u << 20)
#define SLICE_MIN 256         /* longer results: each rank checks a block */
#define MAX_RERUN 4           /* diagnostic re-runs per case list */
#define MAX_PRINT 4          /* mismatching elements printed per case and rank */

/* ------------------------------------------------------------------------ */
/* datatypes                                                                 */

enum bkind { B_INT, B_FLT, B_CPLX, B_BOOL, B_BYTE, B_PAIR, B_MAT, B_D2 };
enum fsub { F_FLOAT, F_DOUBLE, F_LDOUBLE };
enum psub { P_2INT, P_FLOAT_INT, P_DOUBLE_INT, P_LONG_INT };

struct pr_2int { int v; int i; };
struct pr_fi { float v; int i; };
struct pr_di { double v; int i; };
struct pr_li { long v; int i; };

/* bytes of a long double that carry its value (x87 80-bit format: 10) */
#define LDBL_BYTES (LDBL_MANT_DIG == 64 ? 10 : (int)sizeof(long double))

typedef struct {
    const char *name;
    MPI_Datatype dt;
    int bk;          /* enum bkind of the basic values */
    int size;        /* bytes of one basic value (integers) */
    int sgn;         /* integers: signed */
    int sub;         /* enum fsub / enum psub */
    int nbase;       /* basic values per element (derived types) */
    size_t bstride;  /* bytes between basic values of one element */
    size_t extent;   /* bytes per element */
    int predefined;  /* predefined MPI datatype */
    int minmax_bug;  /* library compares this unsigned type as signed */
    int holes;       /* element has bytes outside its type map */
} tdesc;

#define MAXT 48
static tdesc T[MAXT];
static int nT = 0;
static MPI_Datatype dt_vec2d, dt_mat, dt_d2;

static int add_type(const char *name, MPI_Datatype dt, int bk, int size, int sgn, int sub)
{
    tdesc *t = &T[nT];
    memset(t, 0, sizeof(*t));
    t->name = name; t->dt = dt; t->bk = bk; t->size = size; t->sgn = sgn; t->sub = sub;
    t->nbase = 1; t->bstride = 0; t->predefined = 1;
    MPI_Aint lb, ext;
    MPI_Type_get_extent(dt, &lb, &ext);
    t->extent = (size_t)ext;
    return nT++;
}

static int T_INT, T_UNSIGNED, T_DOUBLE, T_FLOAT, T_INT16, T_UINT8, T_DOUBLE_INT,
    T_LDOUBLE, T_FCPLX, T_DCPLX, T_VEC2D, T_MAT, T_D2, T_LONG, T_BOOL;

static void init_types(void)
{
    int char_signed = ((char)-1) < 0;
    add_type("MPI_CHAR", MPI_CHAR, B_INT, 1, char_signed, 0);
    add_type("MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, B_INT, 1, 1, 0);
    T_UINT8 = add_type("MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, B_INT, 1, 0, 0);
    add_type("MPI_SHORT", MPI_SHORT, B_INT, sizeof(short), 1, 0);
    add_type("MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, B_INT, sizeof(short), 0, 0);
    T_INT = add_type("MPI_INT", MPI_INT, B_INT, sizeof(int), 1, 0);
    T_UNSIGNED = add_type("MPI_UNSIGNED", MPI_UNSIGNED, B_INT, sizeof(unsigned), 0, 0);
    T_LONG = add_type("MPI_LONG", MPI_LONG, B_INT, sizeof(long), 1, 0);
    add_type("MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, B_INT, sizeof(long), 0, 0);
    add_type("MPI_LONG_LONG", MPI_LONG_LONG, B_INT, sizeof(long long), 1, 0);
    add_type("MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, B_INT, sizeof(long long), 0, 0);
    add_type("MPI_INT8_T", MPI_INT8_T, B_INT, 1, 1, 0);
    T_INT16 = add_type("MPI_INT16_T", MPI_INT16_T, B_INT, 2, 1, 0);
    add_type("MPI_INT32_T", MPI_INT32_T, B_INT, 4, 1, 0);
    add_type("MPI_INT64_T", MPI_INT64_T, B_INT, 8, 1, 0);
    add_type("MPI_UINT8_T", MPI_UINT8_T, B_INT, 1, 0, 0);
    add_type("MPI_UINT16_T", MPI_UINT16_T, B_INT, 2, 0, 0);
    add_type("MPI_UINT32_T", MPI_UINT32_T, B_INT, 4, 0, 0);
    add_type("MPI_UINT64_T", MPI_UINT64_T, B_INT, 8, 0, 0);
    T_FLOAT = add_type("MPI_FLOAT", MPI_FLOAT, B_FLT, 4, 1, F_FLOAT);
    T_DOUBLE = add_type("MPI_DOUBLE", MPI_DOUBLE, B_FLT, 8, 1, F_DOUBLE);
    T_LDOUBLE = add_type("MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, B_FLT, sizeof(long double), 1, F_LDOUBLE);
    T_FCPLX = add_type("MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, B_CPLX, 8, 1, F_FLOAT);
    T_DCPLX = add_type("MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, B_CPLX, 16, 1, F_DOUBLE);
    T_BOOL = add_type("MPI_C_BOOL", MPI_C_BOOL, B_BOOL, sizeof(_Bool), 0, 0);
    add_type("MPI_BYTE", MPI_BYTE, B_BYTE, 1, 0, 0);
    add_type("MPI_2INT", MPI_2INT, B_PAIR, 4, 1, P_2INT);
    add_type("MPI_FLOAT_INT", MPI_FLOAT_INT, B_PAIR, 4, 1, P_FLOAT_INT);
    T_DOUBLE_INT = add_type("MPI_DOUBLE_INT", MPI_DOUBLE_INT, B_PAIR, 8, 1, P_DOUBLE_INT);
    add_type("MPI_LONG_INT", MPI_LONG_INT, B_PAIR, sizeof(long), 1, P_LONG_INT);

    /* for user ops: two doubles with an 8-byte hole between them, which must
       survive (Open MPI 4.1 rejects predefined ops on derived types) */
    MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &dt_vec2d);
    MPI_Type_commit(&dt_vec2d);
    T_VEC2D = add_type("vector(2,1,2,MPI_DOUBLE)", dt_vec2d, B_FLT, 8, 1, F_DOUBLE);
    T[T_VEC2D].nbase = 2; T[T_VEC2D].bstride = 2 * sizeof(double);
    T[T_VEC2D].predefined = 0; T[T_VEC2D].holes = 1;

    /* for user ops: 2x2 matrix of uint32 (non-commutative product) */
    MPI_Type_contiguous(4, MPI_UNSIGNED, &dt_mat);
    MPI_Type_commit(&dt_mat);
    T_MAT = add_type("mat2x2(MPI_UNSIGNED)", dt_mat, B_MAT, 16, 0, 0);
    T[T_MAT].predefined = 0;
    /* for user ops: (max, sum) pair of doubles */
    MPI_Type_contiguous(2, MPI_DOUBLE, &dt_d2);
    MPI_Type_commit(&dt_d2);
    T_D2 = add_type("contig(2,MPI_DOUBLE)", dt_d2, B_D2, 16, 1, 0);
    T[T_D2].predefined = 0;
}

/* ------------------------------------------------------------------------ */
/* operations                                                                */

enum opid {
    O_SUM, O_PROD, O_MIN, O_MAX, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR,
    O_MINLOC, O_MAXLOC,
    O_U_WSUM,   /* user, commutative: wrapping sum of unsigned */
    O_U_MAXSUM, /* user, commutative: (max, sum) on contig(2,double) */
    O_U_VMAX,   /* user, commutative: max on vector(2,1,2,double) (holes) */
    O_U_FIRST,  /* user, non-commutative: a o b = a, on MPI_INT */
    O_U_MAT,    /* user, non-commutative: 2x2 matrix product mod 2^32 */
    O_N
};

typedef struct {
    const char *name;
    MPI_Op op;
    int user;
    int commute;
} opdesc;

static opdesc O[O_N];

static void u_maxsum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const double *a = in;
    double *b = inout;
    for (int i = 0; i < *len; i++) {
        if (a[2 * i] > b[2 * i]) b[2 * i] = a[2 * i];
        b[2 * i + 1] = a[2 * i + 1] + b[2 * i + 1];
    }
}

static void u_vmax(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const double *a = in;
    double *b = inout;
    for (int i = 0; i < *len; i++)
        for (int j = 0; j < 3; j += 2) /* element = d, hole, d */
            if (a[3 * i + j] > b[3 * i + j]) b[3 * i + j] = a[3 * i + j];
}

/* MPI applies user ops as inout = in o inout, in holding lower ranks */
static void mat_mul(const uint32_t *a, const uint32_t *b, uint32_t *c)
{
    uint32_t r0 = a[0] * b[0] + a[1] * b[2];
    uint32_t r1 = a[0] * b[1] + a[1] * b[3];
    uint32_t r2 = a[2] * b[0] + a[3] * b[2];
    uint32_t r3 = a[2] * b[1] + a[3] * b[3];
    c[0] = r0; c[1] = r1; c[2] = r2; c[3] = r3;
}

static void u_mat(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const uint32_t *a = in;
    uint32_t *b = inout;
    for (int i = 0; i < *len; i++) mat_mul(a + 4 * i, b + 4 * i, b + 4 * i);
}

static void init_ops(void)
{
    const char *names[TU_NPREDEFINED];
    MPI_Op ops[TU_NPREDEFINED];
    tu_predefined_ops(names, ops);
    for (int i = 0; i <= O_MAXLOC; i++) {
        O[i].name = names[i]; O[i].op = ops[i]; O[i].user = 0; O[i].commute = 1;
    }
    O[O_U_WSUM].name = "user_wsum(commute=1)";
    MPI_Op_create(tu_u_wsum, 1, &O[O_U_WSUM].op);
    O[O_U_MAXSUM].name = "user_maxsum(commute=1)";
    MPI_Op_create(u_maxsum, 1, &O[O_U_MAXSUM].op);
    O[O_U_VMAX].name = "user_vmax(commute=1)";
    MPI_Op_create(u_vmax, 1, &O[O_U_VMAX].op);
    O[O_U_FIRST].name = "user_first(commute=0)";
    MPI_Op_create(tu_u_first, 0, &O[O_U_FIRST].op);
    O[O_U_MAT].name = "user_matmul(commute=0)";
    MPI_Op_create(u_mat, 0, &O[O_U_MAT].op);
    O[O_U_WSUM].user = O[O_U_MAXSUM].user = O[O_U_VMAX].user = 1;
    O[O_U_FIRST].user = O[O_U_MAT].user = 1;
    O[O_U_WSUM].commute = O[O_U_MAXSUM].commute = O[O_U_VMAX].commute = 1;
    O[O_U_FIRST].commute = O[O_U_MAT].commute = 0;
}

static void free_ops_types(void)
{
    for (int i = O_U_WSUM; i < O_N; i++) MPI_Op_free(&O[i].op);
    MPI_Type_free(&dt_vec2d);
    MPI_Type_free(&dt_mat);
    MPI_Type_free(&dt_d2);
}

/* is a predefined op valid on this type (MPI-3.1 5.9.2)? */
static int op_valid(const tdesc *t, int op)
{
    switch (t->bk) {
    case B_INT: return op <= O_BXOR;
    case B_FLT: return op <= O_MAX;
    case B_CPLX: return op == O_SUM || op == O_PROD;
    case B_BOOL: return op == O_LAND || op == O_LOR || op == O_LXOR;
    case B_BYTE: return op == O_BAND || op == O_BOR || op == O_BXOR;
    case B_PAIR: return op == O_MINLOC || op == O_MAXLOC;
    default: return 0;
    }
}

/* ------------------------------------------------------------------------ */
/* values                                                                    */

/* one basic value of any kind, wide enough for exact reference arithmetic */
typedef struct {
    uint64_t u;        /* integers (sign-extended), bool, byte, pair int value */
    long double re;    /* floats, complex real part, pair float value, d2[0] */
    long double im;    /* complex imaginary part, d2[1] */
    int loc;           /* pair index */
    uint32_t m[4];     /* 2x2 matrix */
} val_t;

static uint64_t hv(uint64_t seed, int rank, size_t idx)
{
    return tu_smix(seed ^ ((uint64_t)(rank + 1) * 0xd1b54a32d192ed03ULL) ^ ((uint64_t)idx * 0x9e3779b97f4a7c15ULL));
}

static uint64_t norm_int(int size, int sgn, uint64_t u)
{
    if (size >= 8) return u;
    unsigned bits = (unsigned)size * 8;
    uint64_t m = (1ULL << bits) - 1;
    u &= m;
    if (sgn && ((u >> (bits - 1)) & 1)) u |= ~m;
    return u;
}

static uint64_t int_max(int size, int sgn)
{
    unsigned bits = (unsigned)size * 8;
    if (sgn) return (1ULL << (bits - 1)) - 1;
    return bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
}

/* round a value to what the datatype can hold */
static void canon(const tdesc *t, val_t *v)
{
    switch (t->bk) {
    case B_INT: v->u = norm_int(t->size, t->sgn, v->u); break;
    case B_BYTE: v->u &= 0xff; break;
    case B_BOOL: v->u = v->u != 0; break;
    case B_FLT:
    case B_CPLX:
        if (t->sub == F_FLOAT) { v->re = (float)v->re; v->im = (float)v->im; }
        else if (t->sub == F_DOUBLE) { v->re = (double)v->re; v->im = (double)v->im; }
        break;
    case B_PAIR:
        if (t->sub == P_2INT) v->u = norm_int(4, 1, v->u);
        else if (t->sub == P_LONG_INT) v->u = norm_int(sizeof(long), 1, v->u);
        else if (t->sub == P_FLOAT_INT) v->re = (float)v->re;
        else v->re = (double)v->re;
        break;
    case B_D2: v->re = (double)v->re; v->im = (double)v->im; break;
    default: break;
    }
}

enum pattern { PAT_EXACT, PAT_APPROX };

/* uniform-enough value in [0, n) without a division */
static uint64_t below(uint64_t h, uint64_t n)
{
    if (n <= (1ULL << 32)) return ((h >> 32) * n) >> 32;
    return h % n;
}

static long double quarter(uint64_t h) { return ((long double)(int64_t)below(h, 801) - 400) * 0.25L; }

static long double pow2_tab[41]; /* 2^-20 .. 2^20 */

/* exactly representable in float: 21-bit integer times 2^[-20,20] */
static long double spread(uint64_t h)
{
    int64_t k = (int64_t)(h % (1u << 21)) - (1 << 20);
    return (long double)k * pow2_tab[(h >> 32) % 41];
}

/* random value in [-2^e, 2^e], e in [-10,10]: sums round order-dependently */
static long double rnd(uint64_t h)
{
    long double f = (long double)(h >> 11) * 0x1p-53L * 2 - 1;
    return ldexpl(f, (int)(h % 21) - 10);
}

/* input value `bidx` (basic-value index) of comm rank `rank` */
static val_t gen(const tdesc *t, int op, int pat, uint64_t seed, int rank, size_t bidx, int n)
{
    val_t v;
    memset(&v, 0, sizeof(v));
    uint64_t h = hv(seed, rank, bidx);
    int mode = (int)(bidx % 3);
    switch (t->bk) {
    case B_INT:
    case B_BYTE:
    case B_BOOL: {
        int size = t->bk == B_INT ? t->size : 1;
        int sgn = t->bk == B_INT ? t->sgn : 0;
        if (op == O_SUM) {
            /* n * bound fits: no overflow, so avx saturation (ompi#8045) is moot */
            uint64_t b = int_max(size, sgn) / (uint64_t)n;
            if (b > (1ULL << 62)) b = 1ULL << 62;
            v.u = sgn ? (uint64_t)((int64_t)below(h, 2 * b + 1) - (int64_t)b) : below(h, b + 1);
        } else if (op == O_PROD) {
            /* |factor| <= 2 on at most 6 ranks per element: |product| <= 64 */
            int two_ok = (int)((rank + bidx) % (size_t)n) < 6;
            int64_t mag = (two_ok && (h & 2)) ? 2 : 1;
            if ((h >> 8) % 32 == 0) mag = 0;
            v.u = (uint64_t)((sgn && (h & 4)) ? -mag : mag);
        } else if (op == O_LAND || op == O_LOR || op == O_LXOR) {
            /* mode 0 mostly true, mode 1 mostly false, mode 2 half/half */
            int zero = mode == 0 ? (h % (2 * (uint64_t)n) == 0)
                     : mode == 1 ? (h % (2 * (uint64_t)n) != 0) : (int)(h & 1);
            if (zero) v.u = 0;
            else {
                v.u = norm_int(size, sgn, tu_smix(h));
                if (v.u == 0) v.u = 1;
            }
        } else if (op == O_BAND || op == O_BOR || op == O_BXOR) {
            v.u = mode == 0 ? h : mode == 1 ? (h | 0xf0f0f0f0f0f0f0f0ULL) : (h & 0x0f0f0f0f0f0f0f0fULL);
        } else {
            v.u = h; /* MIN, MAX, user ops: full range */
            if (t->minmax_bug) v.u = norm_int(size, 0, h) >> 1; /* stay below the sign bit */
        }
        break;
    }
    case B_FLT:
        if (pat == PAT_APPROX) {
            if (op == O_PROD) v.re = 1 + ((long double)(h >> 11) * 0x1p-53L - 0.5L) / 2;
            else v.re = rnd(h);
        } else if (op == O_SUM) {
            v.re = quarter(h);
        } else if (op == O_PROD) {
            static const long double f[] = {0.5L, 1, 2};
            v.re = f[h % 3] * ((h & 8) ? -1 : 1);
        } else {
            v.re = spread(h);
        }
        break;
    case B_CPLX:
        if (pat == PAT_APPROX) {
            v.re = rnd(h); v.im = rnd(tu_smix(h));
        } else if (op == O_SUM) {
            v.re = quarter(h); v.im = quarter(tu_smix(h));
        } else {
            /* products of these stay Gaussian integers / halves: exact */
            static const long double re[] = {1, -1, 0, 0, 1, 1, 2, 0};
            static const long double im[] = {0, 0, 1, -1, 1, -1, 0, 0.5L};
            v.re = re[h % 8]; v.im = im[h % 8];
        }
        break;
    case B_PAIR:
        /* even indices: few distinct values, so ties test the lowest-index rule */
        v.loc = (int)(tu_smix(h) % 64);
        if (t->sub == P_FLOAT_INT || t->sub == P_DOUBLE_INT)
            v.re = (bidx % 2 == 0) ? ((long double)(int)(h % 5) - 2) / 2 : spread(h);
        else
            v.u = (bidx % 2 == 0) ? (uint64_t)((int64_t)(h % 5) - 2) : h;
        break;
    case B_MAT:
        v.m[0] = (uint32_t)h; v.m[1] = (uint32_t)(h >> 32);
        v.m[2] = (uint32_t)tu_smix(h); v.m[3] = (uint32_t)(tu_smix(h) >> 32);
        break;
    case B_D2:
        v.re = spread(h); v.im = quarter(tu_smix(h));
        break;
    }
    canon(t, &v);
    return v;
}

static int cmp_pair(const tdesc *t, const val_t *a, const val_t *b)
{
    if (t->sub == P_FLOAT_INT || t->sub == P_DOUBLE_INT)
        return a->re < b->re ? -1 : a->re > b->re ? 1 : 0;
    int64_t x = (int64_t)a->u, y = (int64_t)b->u;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* a o b with a holding the lower ranks (MPI order) */
static val_t apply(const tdesc *t, int op, val_t a, const val_t *b)
{
    switch (t->bk) {
    case B_INT:
    case B_BYTE:
    case B_BOOL: {
        int sgn = t->bk == B_INT && t->sgn;
        switch (op) {
        case O_SUM: case O_U_WSUM: a.u += b->u; break;
        case O_PROD: a.u *= b->u; break;
        case O_MIN:
            if (sgn ? (int64_t)b->u < (int64_t)a.u : b->u < a.u) a.u = b->u;
            break;
        case O_MAX:
            if (sgn ? (int64_t)b->u > (int64_t)a.u : b->u > a.u) a.u = b->u;
            break;
        case O_LAND: a.u = a.u != 0 && b->u != 0; break;
        case O_LOR: a.u = a.u != 0 || b->u != 0; break;
        case O_LXOR: a.u = (a.u != 0) != (b->u != 0); break;
        case O_BAND: a.u &= b->u; break;
        case O_BOR: a.u |= b->u; break;
        case O_BXOR: a.u ^= b->u; break;
        case O_U_FIRST: break;
        }
        canon(t, &a);
        break;
    }
    case B_FLT:
        switch (op) {
        case O_SUM: a.re += b->re; break;
        case O_PROD: a.re *= b->re; break;
        case O_MIN: if (b->re < a.re) a.re = b->re; break;
        case O_MAX: case O_U_VMAX: if (b->re > a.re) a.re = b->re; break;
        }
        break;
    case B_CPLX:
        if (op == O_SUM) {
            a.re += b->re; a.im += b->im;
        } else {
            long double r = a.re * b->re - a.im * b->im;
            long double i = a.re * b->im + a.im * b->re;
            a.re = r; a.im = i;
        }
        break;
    case B_PAIR: {
        int c = cmp_pair(t, &a, b);
        if ((op == O_MINLOC && c > 0) || (op == O_MAXLOC && c < 0)) a = *b;
        else if (c == 0 && b->loc < a.loc) a.loc = b->loc;
        break;
    }
    case B_MAT:
        mat_mul(a.m, b->m, a.m);
        break;
    case B_D2:
        if (b->re > a.re) a.re = b->re;
        a.im += b->im;
        break;
    }
    return a;
}

static void *vptr(const tdesc *t, char *base, size_t elem, int j)
{
    return base + elem * t->extent + (size_t)j * t->bstride;
}

static size_t pair_loc_off(int sub)
{
    switch (sub) {
    case P_2INT: return offsetof(struct pr_2int, i);
    case P_FLOAT_INT: return offsetof(struct pr_fi, i);
    case P_DOUBLE_INT: return offsetof(struct pr_di, i);
    default: return offsetof(struct pr_li, i);
    }
}

static void store_flt(int sub, char *p, long double x)
{
    if (sub == F_FLOAT) { float f = (float)x; memcpy(p, &f, 4); }
    else if (sub == F_DOUBLE) { double d = (double)x; memcpy(p, &d, 8); }
    else memcpy(p, &x, LDBL_BYTES); /* padding bytes stay as initialised */
}

static long double load_flt(int sub, const char *p)
{
    if (sub == F_FLOAT) { float f; memcpy(&f, p, 4); return f; }
    if (sub == F_DOUBLE) { double d; memcpy(&d, p, 8); return d; }
    long double x = 0;
    memcpy(&x, p, LDBL_BYTES);
    return x;
}

static int flt_size(int sub) { return sub == F_FLOAT ? 4 : sub == F_DOUBLE ? 8 : LDBL_BYTES; }

static uint64_t load_int(const char *p, int size, int sgn) { return norm_int(size, sgn, tu_load_uint(p, size)); }

static void store(const tdesc *t, char *p, const val_t *v)
{
    switch (t->bk) {
    case B_INT: tu_store_int(p, t->size, v->u); break;
    case B_BYTE:
    case B_BOOL: { unsigned char c = (unsigned char)v->u; memcpy(p, &c, 1); break; }
    case B_FLT: store_flt(t->sub, p, v->re); break;
    case B_CPLX: {
        int s = t->sub == F_FLOAT ? 4 : 8;
        store_flt(t->sub, p, v->re);
        store_flt(t->sub, p + s, v->im);
        break;
    }
    case B_PAIR:
        if (t->sub == P_FLOAT_INT) store_flt(F_FLOAT, p, v->re);
        else if (t->sub == P_DOUBLE_INT) store_flt(F_DOUBLE, p, v->re);
        else tu_store_int(p, t->sub == P_2INT ? 4 : (int)sizeof(long), v->u);
        memcpy(p + pair_loc_off(t->sub), &v->loc, sizeof(int));
        break;
    case B_MAT: memcpy(p, v->m, 16); break;
    case B_D2: store_flt(F_DOUBLE, p, v->re); store_flt(F_DOUBLE, p + 8, v->im); break;
    }
}

static val_t load(const tdesc *t, const char *p)
{
    val_t v;
    memset(&v, 0, sizeof(v));
    switch (t->bk) {
    case B_INT: v.u = load_int(p, t->size, t->sgn); break;
    case B_BYTE:
    case B_BOOL: { unsigned char c; memcpy(&c, p, 1); v.u = c; break; } /* raw: a bool of 2 is wrong */
    case B_FLT: v.re = load_flt(t->sub, p); break;
    case B_CPLX: {
        int s = t->sub == F_FLOAT ? 4 : 8;
        v.re = load_flt(t->sub, p);
        v.im = load_flt(t->sub, p + s);
        break;
    }
    case B_PAIR:
        if (t->sub == P_FLOAT_INT) v.re = load_flt(F_FLOAT, p);
        else if (t->sub == P_DOUBLE_INT) v.re = load_flt(F_DOUBLE, p);
        else v.u = load_int(p, t->sub == P_2INT ? 4 : (int)sizeof(long), 1);
        memcpy(&v.loc, p + pair_loc_off(t->sub), sizeof(int));
        break;
    case B_MAT: memcpy(v.m, p, 16); break;
    case B_D2: v.re = load_flt(F_DOUBLE, p); v.im = load_flt(F_DOUBLE, p + 8); break;
    }
    return v;
}

static int veq(const tdesc *t, const val_t *a, const val_t *b)
{
    switch (t->bk) {
    case B_INT: case B_BYTE: case B_BOOL: return a->u == b->u;
    case B_FLT: return a->re == b->re;
    case B_CPLX: case B_D2: return a->re == b->re && a->im == b->im;
    case B_PAIR: return cmp_pair(t, a, b) == 0 && a->loc == b->loc;
    case B_MAT: return memcmp(a->m, b->m, sizeof(a->m)) == 0;
    }
    return 0;
}

static void vfmt(const tdesc *t, const val_t *v, char *s, size_t n)
{
    switch (t->bk) {
    case B_INT: case B_BYTE: case B_BOOL:
        if (t->bk == B_INT && t->sgn) snprintf(s, n, "%lld", (long long)(int64_t)v->u);
        else snprintf(s, n, "%llu(0x%llx)", (unsigned long long)v->u, (unsigned long long)v->u);
        break;
    case B_FLT: snprintf(s, n, "%.21Lg", v->re); break;
    case B_CPLX: case B_D2: snprintf(s, n, "(%.21Lg,%.21Lg)", v->re, v->im); break;
    case B_PAIR:
        if (t->sub == P_FLOAT_INT || t->sub == P_DOUBLE_INT)
            snprintf(s, n, "(%.21Lg,loc %d)", v->re, v->loc);
        else
            snprintf(s, n, "(%lld,loc %d)", (long long)(int64_t)v->u, v->loc);
        break;
    case B_MAT:
        snprintf(s, n, "[%u %u; %u %u]", v->m[0], v->m[1], v->m[2], v->m[3]);
        break;
    }
}

/* FNV-1a, for short strings; results are hashed per value with hmix()
   over the bytes that carry values (no padding, no holes) */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) { h ^= c[i]; h *= 0x100000001b3ULL; }
    return h;
}

static uint64_t hmix(uint64_t h, const void *p, size_t n)
{
    uint64_t w[2] = {0, 0};
    memcpy(w, p, n);
    h = (h ^ w[0]) * 0x9e3779b97f4a7c15ULL;
    if (n > 8) h = (h ^ w[1]) * 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}

static uint64_t hash_value(const tdesc *t, uint64_t h, const char *p)
{
    switch (t->bk) {
    case B_INT: return hmix(h, p, (size_t)t->size);
    case B_BYTE: case B_BOOL: return hmix(h, p, 1);
    case B_FLT: return hmix(h, p, (size_t)flt_size(t->sub));
    case B_CPLX: {
        int s = t->sub == F_FLOAT ? 4 : 8;
        return hmix(hmix(h, p, (size_t)s), p + s, (size_t)s);
    }
    case B_PAIR: {
        size_t vs = t->sub == P_2INT || t->sub == P_FLOAT_INT ? 4 : 8;
        return hmix(hmix(h, p, vs), p + pair_loc_off(t->sub), sizeof(int));
    }
    default: return hmix(h, p, 16);
    }
}

/*
 * Open MPI 4.1.2-4.1.4 compares MPI_UNSIGNED_LONG as signed long in MIN/MAX
 * (open-mpi/ompi#10525, fixed by #10538).  Probe the library's own reduction
 * (MPI_Reduce_local) for every unsigned type; where it is wrong, MIN/MAX
 * inputs stay below the sign bit so the test checks the collective, not that
 * bug.  Returns the number of affected types.
 */
static int probe_minmax_bug(void)
{
    int nbug = 0;
    for (int i = 0; i < nT; i++) {
        tdesc *t = &T[i];
        if (t->bk != B_INT || t->sgn || !t->predefined) continue;
        char a[16], b[16];
        val_t hi, lo;
        memset(&hi, 0, sizeof(hi));
        memset(&lo, 0, sizeof(lo));
        hi.u = int_max(t->size, 0);
        store(t, a, &hi);
        store(t, b, &lo);
        MPI_Reduce_local(a, b, 1, t->dt, MPI_MAX);
        val_t r = load(t, b);
        if (r.u != hi.u) {
            t->minmax_bug = 1;
            nbug++;
            if (world_rank == 0)
                printf("note: this MPI's MIN/MAX on %s compares signed (ompi#10525): inputs kept < 2^%d\n",
                       t->name, 8 * t->size - 1);
        }
    }
    return nbug;
}

static long double eps_of(int sub)
{
    return sub == F_FLOAT ? FLT_EPSILON : sub == F_DOUBLE ? DBL_EPSILON : LDBL_EPSILON;
}

/* ------------------------------------------------------------------------ */
/* MPI_T: topoar's performance variables                                     */

static struct {
    int inited;
    int have;                 /* both counters found */
    int idx_h, idx_f, idx_alg;
    MPI_Datatype dt_h, dt_f;
    int cont_h, cont_f, cont_alg;
    MPI_T_enum alg_enum;
    MPI_T_pvar_session sess;
    MPI_T_pvar_handle alg_handle, path_handle;
    int alg_ok, path_ok;
    char missing[256];
} pv;

static char alg_desc[2048]; /* the last_algorithm variable's description */

static int find_pvar(const char *want, int *idx, MPI_Datatype *dt, int *cls, int *bind,
                     int *cont, MPI_T_enum *en)
{
    int is_alg = strstr(want, "last_algorithm") != NULL;
    return tu_find_pvar(want, idx, dt, cls, bind, cont, en, is_alg ? alg_desc : NULL, (int)sizeof(alg_desc));
}

static void pv_init(void)
{
    int prov, cls, bind;
    memset(&pv, 0, sizeof(pv));
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &prov) != MPI_SUCCESS) {
        snprintf(pv.missing, sizeof(pv.missing), "MPI_T_init_thread failed");
        return;
    }
    pv.inited = 1;
    if (MPI_T_pvar_session_create(&pv.sess) != MPI_SUCCESS) {
        snprintf(pv.missing, sizeof(pv.missing), "MPI_T_pvar_session_create failed");
        pv.inited = 2;
        return;
    }
    int okh = find_pvar("coll_topoar_allreduce_handled", &pv.idx_h, &pv.dt_h, &cls, &bind, &pv.cont_h, NULL);
    if (okh && (cls != MPI_T_PVAR_CLASS_COUNTER || bind != MPI_T_BIND_MPI_COMM)) okh = 0;
    int okf = find_pvar("coll_topoar_allreduce_fallback", &pv.idx_f, &pv.dt_f, &cls, &bind, &pv.cont_f, NULL);
    if (okf && (cls != MPI_T_PVAR_CLASS_COUNTER || bind != MPI_T_BIND_MPI_COMM)) okf = 0;
    pv.have = okh && okf;
    if (!pv.have)
        snprintf(pv.missing, sizeof(pv.missing), "%s%s",
                 okh ? "" : "coll_topoar_allreduce_handled (COUNTER, bound to MPI_COMM) ",
                 okf ? "" : "coll_topoar_allreduce_fallback (COUNTER, bound to MPI_COMM)");

    MPI_Datatype dt;
    int cnt;
    if (find_pvar("coll_topoar_allreduce_last_algorithm", &pv.idx_alg, &dt, &cls, &bind, &pv.cont_alg,
                  &pv.alg_enum) && bind == MPI_T_BIND_NO_OBJECT && dt == MPI_INT) {
        if (MPI_T_pvar_handle_alloc(pv.sess, pv.idx_alg, NULL, &pv.alg_handle, &cnt) == MPI_SUCCESS) {
            pv.alg_ok = 1;
            if (!pv.cont_alg) MPI_T_pvar_start(pv.sess, pv.alg_handle);
        }
    }
    int idx_path, cont_path;
    if (find_pvar("coll_topoar_allreduce_last_path", &idx_path, &dt, &cls, &bind, &cont_path, NULL) &&
        bind == MPI_T_BIND_NO_OBJECT && dt == MPI_INT &&
        MPI_T_pvar_handle_alloc(pv.sess, idx_path, NULL, &pv.path_handle, &cnt) == MPI_SUCCESS) {
        pv.path_ok = 1;
        if (!cont_path) MPI_T_pvar_start(pv.sess, pv.path_handle);
    }
}

static int last_path(void)
{
    int val = -1;
    if (!pv.path_ok || MPI_T_pvar_read(pv.sess, pv.path_handle, &val) != MPI_SUCCESS) return -1;
    return val;
}

static int read_counter(MPI_T_pvar_handle h, MPI_Datatype dt, unsigned long long *out)
{
    return tu_read_counter(pv.sess, h, dt, out);
}

/* name of the algorithm of the most recent allreduce, if the pvar exists */
static int last_algorithm(char *name, int len)
{
    int val = -1, num = 0, nlen;
    char ename[128];
    if (!pv.alg_ok || MPI_T_pvar_read(pv.sess, pv.alg_handle, &val) != MPI_SUCCESS) return 0;
    snprintf(name, (size_t)len, "%d", val);
    nlen = sizeof(ename);
    if (pv.alg_enum == MPI_T_ENUM_NULL || MPI_T_enum_get_info(pv.alg_enum, &num, ename, &nlen) != MPI_SUCCESS) {
        /* no enum attached: the names listed in the pvar's description */
        char n[64] = "?";
        (void) topoar_name_in_description(alg_desc, val, n, sizeof(n));
        snprintf(name, (size_t)len, "%s (value %d; the pvar has no MPI_T enum)", n, val);
        return 1;
    }
    for (int i = 0; i < num; i++) {
        int v;
        char iname[128];
        int ilen = sizeof(iname);
        if (MPI_T_enum_get_item(pv.alg_enum, i, &v, iname, &ilen) == MPI_SUCCESS && v == val) {
            snprintf(name, (size_t)len, "%s", iname);
            break;
        }
    }
    return 1;
}

static void pv_finalize(void)
{
    if (pv.alg_ok) MPI_T_pvar_handle_free(pv.sess, &pv.alg_handle);
    if (pv.path_ok) MPI_T_pvar_handle_free(pv.sess, &pv.path_handle);
    if (pv.inited == 1) MPI_T_pvar_session_free(&pv.sess);
    if (pv.inited) MPI_T_finalize();
}

/* ------------------------------------------------------------------------ */
/* communicator context                                                      */

typedef struct {
    MPI_Comm comm;
    char name[64];
    int rank, size;
    int pv_ok;                  /* counters bound to this comm */
    MPI_T_pvar_handle hh, hf;
    int pv_warned;
    unsigned long long tot_h, tot_f, tot_calls; /* deltas seen over our calls */
} cctx;

static void cctx_init(cctx *c, MPI_Comm comm, const char *name)
{
    memset(c, 0, sizeof(*c));
    c->comm = comm;
    MPI_Comm_rank(comm, &c->rank);
    MPI_Comm_size(comm, &c->size);
    snprintf(c->name, sizeof(c->name), "%s(size=%d)", name, c->size);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (pv.have) {
        int cnt;
        MPI_Comm obj = comm;
        if (MPI_T_pvar_handle_alloc(pv.sess, pv.idx_h, &obj, &c->hh, &cnt) == MPI_SUCCESS) {
            if (MPI_T_pvar_handle_alloc(pv.sess, pv.idx_f, &obj, &c->hf, &cnt) == MPI_SUCCESS) {
                c->pv_ok = 1;
                if (!pv.cont_h) MPI_T_pvar_start(pv.sess, c->hh);
                if (!pv.cont_f) MPI_T_pvar_start(pv.sess, c->hf);
            } else {
                MPI_T_pvar_handle_free(pv.sess, &c->hh);
            }
        }
    }
}

static void cctx_free(cctx *c, int free_comm)
{
    if (c->pv_ok) {
        MPI_T_pvar_handle_free(pv.sess, &c->hh);
        MPI_T_pvar_handle_free(pv.sess, &c->hf);
        c->pv_ok = 0;
    }
    if (free_comm) MPI_Comm_free(&c->comm);
}

static int pv_read2(cctx *c, unsigned long long *h, unsigned long long *f)
{
    if (!c->pv_ok) return 0;
    return read_counter(c->hh, pv.dt_h, h) && read_counter(c->hf, pv.dt_f, f);
}

/* ------------------------------------------------------------------------ */
/* test cases                                                                */

typedef struct {
    int t, op;
    size_t count;
    int inplace;
    int pat;
    uint64_t seed;
    int id;
} case_t;

typedef struct {
    int n, cap;
    case_t *v;
    const char *phase;
} caselist;

static void cl_add(caselist *cl, int t, int op, size_t count, int inplace, int pat)
{
    if (cl->n == cl->cap) {
        cl->cap = cl->cap ? 2 * cl->cap : 256;
        cl->v = realloc(cl->v, (size_t)cl->cap * sizeof(case_t));
        if (!cl->v) { fprintf(stderr, "out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    }
    case_t *c = &cl->v[cl->n];
    c->t = t; c->op = op; c->count = count; c->inplace = inplace; c->pat = pat;
    c->id = cl->n;
    c->seed = tu_smix(opt_seed ^ tu_smix(fnv(0xcbf29ce484222325ULL, cl->phase, strlen(cl->phase)) ^
                                   ((uint64_t)cl->n << 20) ^ (uint64_t)(t * 131 + op)));
    cl->n++;
}

enum { PV_EITHER, PV_HANDLED, PV_FALLBACK };

static int relaxed(const tdesc *t)
{
    size_t l = strlen(t->name);
    const char *p = opt_relax;
    while ((p = strstr(p, t->name)) != NULL) {
        if ((p == opt_relax || p[-1] == ',') && (p[l] == ',' || p[l] == 0)) return 1;
        p += l;
    }
    return 0;
}

/*
 * What topoar must do with a call (asserted with --expect-topoar only):
 *  HANDLED:  predefined op on a predefined basic type (not a pair type),
 *            count >= 1, communicator size >= 2;
 *  FALLBACK: non-commutative user op, count >= 1, size >= 2;
 *  EITHER:   everything else (commutative user ops, count 0, size 1, derived
 *            types, MINLOC/MAXLOC pair types, --relax types, calls of at most
 *            --either-upto bytes): no assertion beyond "at most one of the
 *            counters moved".
 */
static int pv_class(const cctx *c, const case_t *cs)
{
    const tdesc *t = &T[cs->t];
    const opdesc *o = &O[cs->op];
    if (c->size < 2 || cs->count == 0) return PV_EITHER;
    if (o->user) return o->commute ? PV_EITHER : PV_FALLBACK;
    if (!t->predefined || t->bk == B_PAIR || relaxed(t)) return PV_EITHER;
    if (cs->count * t->extent <= opt_either_upto) return PV_EITHER;
    return PV_HANDLED;
}

static void case_desc(const cctx *c, const case_t *cs, const char *phase, char *s, size_t n)
{
    snprintf(s, n, "case %s#%d comm=%s type=%s op=%s count=%zu inplace=%d input=%s",
             phase, cs->id, c->name, T[cs->t].name, O[cs->op].name, cs->count, cs->inplace,
             cs->pat == PAT_EXACT ? "exact" : "approx");
}

typedef struct {
    char *sraw, *rraw, *scopy;
    size_t bytes;
} bufs_t;

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", world_rank, n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static void fill_input(const tdesc *t, const case_t *cs, int rank, int n, char *buf)
{
    for (size_t i = 0; i < cs->count; i++)
        for (int j = 0; j < t->nbase; j++) {
            val_t v = gen(t, cs->op, cs->pat, cs->seed, rank, i * (size_t)t->nbase + (size_t)j, n);
            store(t, vptr(t, buf, i, j), &v);
        }
}

static void prep(const cctx *c, const case_t *cs, bufs_t *b)
{
    const tdesc *t = &T[cs->t];
    b->bytes = cs->count * t->extent + 2 * GUARD;
    b->rraw = xmalloc(b->bytes);
    memset(b->rraw, RPAT, b->bytes);
    b->sraw = b->scopy = NULL;
    if (cs->inplace) {
        fill_input(t, cs, c->rank, c->size, b->rraw + GUARD);
    } else {
        b->sraw = xmalloc(b->bytes);
        memset(b->sraw, SPAT, b->bytes);
        fill_input(t, cs, c->rank, c->size, b->sraw + GUARD);
        b->scopy = xmalloc(b->bytes);
        memcpy(b->scopy, b->sraw, b->bytes);
    }
}

/* --device: the CUDA runtime, loaded at run time (topoar_cudart.h). */
static topoar_cudart_t cu;

static void cuda_init(void)
{
    char why[256];
    if (0 != topoar_cudart_load(&cu, why, sizeof why)) {
        fprintf(stderr, "rank %d: --device: %s\n", world_rank, why);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static char *dev_copy_of(const char *host, size_t bytes)
{
    void *d = NULL;
    if (cu.malloc_(&d, bytes ? bytes : 1) != 0 || cu.memcpy_(d, host, bytes, TOPOAR_H2D) != 0) {
        fprintf(stderr, "rank %d: --device: cudaMalloc/cudaMemcpy failed\n", world_rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return d;
}

static void dev_back(char *host, char *dev, size_t bytes)
{
    if (cu.memcpy_(host, dev, bytes, TOPOAR_D2H) != 0 || cu.free_(dev) != 0) {
        fprintf(stderr, "rank %d: --device: cudaMemcpy back failed\n", world_rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static int last_path(void);
static int pv_class(const cctx *c, const case_t *cs);

static int do_call(const cctx *c, const case_t *cs, bufs_t *b)
{
    if (!opt_device)
        return MPI_Allreduce(cs->inplace ? MPI_IN_PLACE : (void *)(b->sraw + GUARD), b->rraw + GUARD,
                             (int)cs->count, T[cs->t].dt, O[cs->op].op, c->comm);
    /* --device-mixed: one buffer on the host, the other on the device,
     * alternating by case (the same on every rank) */
    int r_on_dev = opt_device == 1 || (cs->id & 1), s_on_dev = opt_device == 1 || !(cs->id & 1);
    char *dr = r_on_dev ? dev_copy_of(b->rraw, b->bytes) : b->rraw;
    char *ds = cs->inplace ? NULL : s_on_dev ? dev_copy_of(b->sraw, b->bytes) : b->sraw;
    int rc = MPI_Allreduce(cs->inplace ? MPI_IN_PLACE : (void *)(ds + GUARD), dr + GUARD, (int)cs->count,
                           T[cs->t].dt, O[cs->op].op, c->comm);
    if (r_on_dev) dev_back(b->rraw, dr, b->bytes);
    if (ds && s_on_dev) dev_back(b->sraw, ds, b->bytes);
    if (opt_device == 2 && !r_on_dev) return rc; /* host result: no device path to assert */
    if (rc == MPI_SUCCESS && opt_path_every && c->size >= 2 && cs->count > 0) { /* count 0: MPI returns first */
        int got = last_path();
        if (got != opt_expect_path) {
            printf("FAIL rank %d (world %d): comm=%s type=%s op=%s count=%zu: last_path %d, expected %d\n",
                   c->rank, world_rank, c->name, T[cs->t].name, O[cs->op].name, cs->count, got, opt_expect_path);
            n_path_bad++;
        }
    } else if (rc == MPI_SUCCESS && opt_expect && opt_expect_path == 8 && c->size >= 2 &&
               pv_class(c, cs) == PV_HANDLED) {
        /* nccl_hier: exactly the pairs NCCL reduces itself */
        const tdesc *t = &T[cs->t];
        int nccl_pair = cs->op <= O_MAX && ((t->bk == B_INT && (t->size == 1 || t->size == 4 || t->size == 8)) ||
                                            (t->bk == B_FLT && (t->size == 4 || t->size == 8)));
        int want = nccl_pair ? 8 : t->bk == B_FLT && t->size > 8 ? 5 : 3, got = last_path();
        if (got != want) {
            printf("FAIL rank %d (world %d): comm=%s type=%s op=%s count=%zu: last_path %d, expected %d (nccl_hier)\n",
                   c->rank, world_rank, c->name, t->name, O[cs->op].name, cs->count, got, want);
            n_path_bad++;
        }
    } else if (rc == MPI_SUCCESS && opt_expect && opt_expect_path && c->size >= 2 && pv_class(c, cs) == PV_HANDLED) {
        int got = last_path();
        /* nccl: topoar's plan over NCCL (3), ncclAllReduce itself (4) or
         * nccl_hier (8, auto may choose it across hosts) */
        /* long double has no device kernel: staged (5) by design */
        int staged_ok = opt_expect_path == 3 && got == 5 && strstr(T[cs->t].name, "LONG_DOUBLE") != NULL;
        if (got != opt_expect_path && !(opt_expect_path == 3 && (got == 4 || got == 8)) && !staged_ok) {
            printf("FAIL rank %d (world %d): comm=%s type=%s op=%s count=%zu: last_path %d, expected %d\n",
                   c->rank, world_rank, c->name, T[cs->t].name, O[cs->op].name, cs->count, got, opt_expect_path);
            n_path_bad++;
        }
    }
    return rc;
}

#define FAILF(...) do { char m_[512]; snprintf(m_, sizeof(m_), __VA_ARGS__); \
    printf("FAIL rank %d (world %d): %s: %s\n", c->rank, world_rank, desc, m_); fflush(stdout); } while (0)

/* checks one finished call; returns 1 if it failed; *hash gets the result hash */
static int check(const cctx *c, const case_t *cs, const char *phase, bufs_t *b, int rc, uint64_t *hash,
                 int full)
{
    const tdesc *t = &T[cs->t];
    char desc[400];
    int fail = 0;
    case_desc(c, cs, phase, desc, sizeof(desc));
    *hash = 0xcbf29ce484222325ULL;
    if (rc != MPI_SUCCESS) {
        char es[MPI_MAX_ERROR_STRING];
        int el;
        MPI_Error_string(rc, es, &el);
        FAILF("MPI_Allreduce returned %d (%s)", rc, es);
        fail = 1;
        goto out;
    }
    char *r = b->rraw + GUARD;
    for (size_t k = 0; k < GUARD; k++) {
        if ((unsigned char)b->rraw[k] != RPAT || (unsigned char)r[cs->count * t->extent + k] != RPAT) {
            FAILF("write outside the receive buffer (guard byte %s+%zu changed)",
                  (unsigned char)b->rraw[k] != RPAT ? "before" : "after", k);
            fail = 1;
            break;
        }
    }
    if (b->sraw && memcmp(b->sraw, b->scopy, b->bytes) != 0) {
        size_t k = 0;
        while (b->sraw[k] == b->scopy[k]) k++;
        FAILF("send buffer modified (first changed byte %ld relative to sendbuf)", (long)k - GUARD);
        fail = 1;
    }
    if (t->holes) {
        size_t bad = 0;
        for (size_t i = 0; i < cs->count && !bad; i++)
            for (size_t k = 0; k < t->extent; k++) {
                int covered = 0;
                for (int j = 0; j < t->nbase; j++)
                    if (k >= (size_t)j * t->bstride && k < (size_t)j * t->bstride + (size_t)t->size) covered = 1;
                if (!covered && (unsigned char)r[i * t->extent + k] != RPAT) { bad = i + 1; break; }
            }
        if (bad) {
            FAILF("hole of the datatype overwritten in element %zu", bad - 1);
            fail = 1;
        }
    }
    for (size_t i = 0; i < cs->count; i++)
        for (int j = 0; j < t->nbase; j++) *hash = hash_value(t, *hash, vptr(t, r, i, j));
    /*
     * The reference costs np inputs per element.  For long vectors each rank
     * checks only its block of elements: together with the cross-rank
     * bit-identity of the whole result (hash, checked by the caller) every
     * element of every rank is still verified.
     */
    size_t lo = 0, hi = cs->count;
    if (!full && cs->count * (size_t)t->nbase > SLICE_MIN) {
        lo = cs->count * (size_t)c->rank / (size_t)c->size;
        hi = cs->count * (size_t)(c->rank + 1) / (size_t)c->size;
    }
    size_t nbad = 0;
    for (size_t i = lo; i < hi; i++) {
        for (int j = 0; j < t->nbase; j++) {
            size_t bidx = i * (size_t)t->nbase + (size_t)j;
            const char *p = vptr(t, r, i, j);
            val_t got = load(t, p);
            val_t exp = gen(t, cs->op, cs->pat, cs->seed, 0, bidx, c->size);
            int ok;
            if (cs->pat == PAT_EXACT) {
                for (int q = 1; q < c->size; q++) {
                    val_t in = gen(t, cs->op, cs->pat, cs->seed, q, bidx, c->size);
                    exp = apply(t, cs->op, exp, &in);
                }
                canon(t, &exp);
                ok = veq(t, &got, &exp);
            } else {
                /* rigorous bound: |fl(sum) - sum| <= (n-1) u sum|x| (+ reference error) */
                long double sa_re = fabsl(exp.re), sa_im = fabsl(exp.im);
                for (int q = 1; q < c->size; q++) {
                    val_t in = gen(t, cs->op, cs->pat, cs->seed, q, bidx, c->size);
                    exp = apply(t, cs->op, exp, &in);
                    sa_re += fabsl(in.re);
                    sa_im += fabsl(in.im);
                }
                long double tol = 4 * (c->size + 1) * eps_of(t->sub);
                if (cs->op == O_PROD) {
                    ok = fabsl(got.re - exp.re) <= tol * fabsl(exp.re);
                } else {
                    ok = fabsl(got.re - exp.re) <= tol * sa_re + LDBL_MIN;
                    if (t->bk == B_CPLX) ok = ok && fabsl(got.im - exp.im) <= tol * sa_im + LDBL_MIN;
                }
            }
            if (!ok) {
                if (nbad < MAX_PRINT) {
                    char gs[160], es[160];
                    vfmt(t, &got, gs, sizeof(gs));
                    vfmt(t, &exp, es, sizeof(es));
                    if (t->nbase > 1)
                        FAILF("index %zu[%d]: got %s expected %s%s", i, j, gs, es,
                              cs->pat == PAT_APPROX ? " (beyond error bound)" : "");
                    else
                        FAILF("index %zu: got %s expected %s%s", i, gs, es,
                              cs->pat == PAT_APPROX ? " (beyond error bound)" : "");
                }
                nbad++;
            }
        }
    }
    if (nbad) {
        if (nbad > MAX_PRINT) FAILF("%zu of the %zu elements checked here (index %zu..%zu) wrong", nbad, hi - lo, lo, hi - 1);
        fail = 1;
    }
out:
    free(b->rraw);
    free(b->sraw);
    free(b->scopy);
    return fail;
}

static int rec_fail_any(const uint64_t *all, int size, int nc, int i)
{
    for (int q = 0; q < size; q++)
        if (all[(size_t)q * (size_t)(2 * nc) + 2 * (size_t)i]) return 1;
    return 0;
}

/* asserts the counter deltas over a batch of calls; returns 1 on failure */
static int check_pv(cctx *c, const char *desc, int ncalls, int n_handled, int n_fallback,
                    unsigned long long dh, unsigned long long df)
{
    /* n_handled calls must be topoar's, n_fallback the previous module's,
       the remaining (either) calls may count once in one of the two */
    int either = ncalls - n_handled - n_fallback;
    int bad = !(dh >= (unsigned long long)n_handled && df >= (unsigned long long)n_fallback &&
                dh + df <= (unsigned long long)ncalls &&
                dh <= (unsigned long long)(n_handled + either) &&
                df <= (unsigned long long)(n_fallback + either));
    if (bad)
        printf("FAIL rank %d (world %d): %s: topoar pvars: handled +%llu fallback +%llu, expected "
               "handled +%d fallback +%d (+%d either way) over %d calls\n",
               c->rank, world_rank, desc, dh, df, n_handled, n_fallback, either, ncalls);
    return bad;
}

/*
 * Runs a list of cases on one communicator.  Every rank keeps (fail, hash)
 * per case; rank 0 of the communicator gathers them, asserts bit-identity
 * across ranks and counts each case once.  In burst mode all calls are issued
 * back to back before anything is checked.
 */
static void run_cases(cctx *c, caselist *cl, int burst)
{
    int nc = cl->n;
    uint64_t *rec = xmalloc((size_t)(2 * nc + 1) * sizeof(uint64_t));
    bufs_t *bb = burst ? xmalloc((size_t)nc * sizeof(bufs_t)) : NULL;
    int *rcs = burst ? xmalloc((size_t)nc * sizeof(int)) : NULL;
    char desc[400];
    unsigned long long h0 = 0, f0 = 0, h1 = 0, f1 = 0;
    int pvon = c->pv_ok;

    if (opt_expect && pv.have && !c->pv_ok && c->size >= 2 && c->rank == 0)
        printf("FAIL rank 0 (world %d): comm %s: cannot bind the topoar pvars to this communicator\n",
               world_rank, c->name);

    if (burst) {
        int nh = 0, nf = 0;
        for (int i = 0; i < nc; i++) {
            prep(c, &cl->v[i], &bb[i]);
            int k = pv_class(c, &cl->v[i]);
            nh += k == PV_HANDLED;
            nf += k == PV_FALLBACK;
        }
        if (pvon) pvon = pv_read2(c, &h0, &f0);
        for (int i = 0; i < nc; i++) rcs[i] = do_call(c, &cl->v[i], &bb[i]);
        if (pvon) pvon = pv_read2(c, &h1, &f1);
        for (int i = 0; i < nc; i++) rec[2 * i] = (uint64_t)check(c, &cl->v[i], cl->phase, &bb[i], rcs[i], &rec[2 * i + 1], 0);
        if (pvon) {
            c->tot_h += h1 - h0; c->tot_f += f1 - f0; c->tot_calls += (unsigned long long)nc;
            snprintf(desc, sizeof(desc), "burst %s of %d calls on comm %s", cl->phase, nc, c->name);
            /* a pvar failure is charged to the last case of the burst */
            if (opt_expect && nc > 0 && check_pv(c, desc, nc, nh, nf, h1 - h0, f1 - f0)) rec[2 * (nc - 1)] |= 1;
        }
    } else {
        /* batches: prepare, call back to back (counters read around each call),
           then check -- ranks do not wait for each other's checking in every call */
        unsigned long long *ph = xmalloc((size_t)nc * 4 * sizeof(unsigned long long));
        int *pok = xmalloc((size_t)nc * sizeof(int));
        bb = xmalloc((size_t)nc * sizeof(bufs_t));
        rcs = xmalloc((size_t)nc * sizeof(int));
        for (int i0 = 0; i0 < nc;) {
            int i1 = i0;
            size_t bytes = 0;
            while (i1 < nc && i1 - i0 < BATCH_CASES && (i1 == i0 || bytes < BATCH_BYTES)) {
                bytes += cl->v[i1].count * T[cl->v[i1].t].extent;
                i1++;
            }
            for (int i = i0; i < i1; i++) prep(c, &cl->v[i], &bb[i]);
            for (int i = i0; i < i1; i++) {
                case_t *cs = &cl->v[i];
                if (opt_verbose && c->rank == 0) {
                    case_desc(c, cs, cl->phase, desc, sizeof(desc));
                    printf("run %s\n", desc);
                    fflush(stdout);
                }
                unsigned long long *q = ph + 4 * i;
                pok[i] = pvon && pv_read2(c, &q[0], &q[1]);
                rcs[i] = do_call(c, cs, &bb[i]);
                pok[i] = pok[i] && pv_read2(c, &q[2], &q[3]);
            }
            for (int i = i0; i < i1; i++) {
                case_t *cs = &cl->v[i];
                unsigned long long *q = ph + 4 * i;
                rec[2 * i] = (uint64_t)check(c, cs, cl->phase, &bb[i], rcs[i], &rec[2 * i + 1], 0);
                if (pok[i]) {
                    c->tot_h += q[2] - q[0]; c->tot_f += q[3] - q[1]; c->tot_calls++;
                    if (opt_expect) {
                        int k = pv_class(c, cs);
                        case_desc(c, cs, cl->phase, desc, sizeof(desc));
                        if (check_pv(c, desc, 1, k == PV_HANDLED, k == PV_FALLBACK, q[2] - q[0], q[3] - q[1]))
                            rec[2 * i] |= 1;
                    }
                } else if (opt_expect && pv.have && c->size >= 2 && pv_class(c, cs) != PV_EITHER) {
                    rec[2 * i] |= 1; /* cannot prove what ran the call */
                }
            }
            i0 = i1;
        }
        free(ph);
        free(pok);
    }

    uint64_t *all = NULL;
    int rerun[MAX_RERUN], nrerun = 0;
    if (c->rank == 0) all = xmalloc((size_t)c->size * (size_t)(2 * nc + 1) * sizeof(uint64_t));
    MPI_Gather(rec, 2 * nc, MPI_UINT64_T, all, 2 * nc, MPI_UINT64_T, 0, c->comm);
    if (c->rank == 0) {
        for (int i = 0; i < nc; i++) {
            int fail = 0;
            for (int q = 0; q < c->size; q++) {
                uint64_t *rq = all + (size_t)q * (size_t)(2 * nc);
                if (rq[2 * i]) fail = 1;
                if (rq[2 * i + 1] != all[2 * i + 1]) {
                    case_desc(c, &cl->v[i], cl->phase, desc, sizeof(desc));
                    printf("FAIL comm rank %d: %s: result not bit-identical across ranks "
                           "(hash %016llx, comm rank 0 has %016llx)\n",
                           q, desc, (unsigned long long)rq[2 * i + 1], (unsigned long long)all[2 * i + 1]);
                    fail = 1;
                }
            }
            if (fail) n_failed++;
            else n_passed++;
            if (fail && !rec_fail_any(all, c->size, nc, i) && nrerun < MAX_RERUN) rerun[nrerun++] = i;
        }
        fflush(stdout);
        free(all);
    }
    /*
     * Cases whose results differed across ranks with no rank seeing a wrong
     * value in its own block: run them again with every rank checking every
     * element, to print the index, got and expected (not counted again).
     */
    MPI_Bcast(&nrerun, 1, MPI_INT, 0, c->comm);
    if (nrerun) {
        MPI_Bcast(rerun, nrerun, MPI_INT, 0, c->comm);
        char ph[64];
        snprintf(ph, sizeof(ph), "%s(rerun,full-check)", cl->phase);
        for (int k = 0; k < nrerun; k++) {
            bufs_t b;
            uint64_t h;
            prep(c, &cl->v[rerun[k]], &b);
            int rc = do_call(c, &cl->v[rerun[k]], &b);
            check(c, &cl->v[rerun[k]], ph, &b, rc, &h, 1);
        }
    }
    free(rec);
    free(bb);
    free(rcs);
}

/* ------------------------------------------------------------------------ */
/* suites                                                                    */

static size_t large_n(void) { return opt_quick ? (size_t)1 << 16 : (size_t)1 << 20; }

/* every predefined (type, op) pair, counts 0, 1, < n, 7, 1001 (--quick: fewer), in-place mixed */
static void suite_full(caselist *cl, int n)
{
    size_t counts[8];
    int nc = 0;
    counts[nc++] = 0;
    counts[nc++] = 1;
    if (!opt_quick && n / 2 >= 2 && n / 2 != 7) counts[nc++] = (size_t)(n / 2);
    if (n - 1 >= 2 && n - 1 != n / 2 && n - 1 != 7) counts[nc++] = (size_t)(n - 1);
    if (!opt_quick || n - 1 < 2) counts[nc++] = 7;
    counts[nc++] = 1001;
    for (int t = 0; t < nT; t++) {
        if (!T[t].predefined) continue;
        for (int op = 0; op <= O_MAXLOC; op++) {
            if (!op_valid(&T[t], op)) continue;
            for (int k = 0; k < nc; k++) cl_add(cl, t, op, counts[k], (t + op + k) & 1, PAT_EXACT);
        }
    }
    /* order-dependent rounding: only cross-rank bit-identity + error bound */
    int ft[] = {T_FLOAT, T_DOUBLE, T_LDOUBLE};
    for (int i = 0; i < 3; i++) {
        cl_add(cl, ft[i], O_SUM, 7, 0, PAT_APPROX);
        cl_add(cl, ft[i], O_SUM, 1001, 1, PAT_APPROX);
        cl_add(cl, ft[i], O_PROD, 1001, 0, PAT_APPROX);
    }
    cl_add(cl, T_DCPLX, O_SUM, 1001, 0, PAT_APPROX);
    cl_add(cl, T_FCPLX, O_SUM, 7, 1, PAT_APPROX);
    /* user ops */
    size_t uc[] = {0, 1, 3, 7, 1001};
    for (int k = 0; k < 5; k++) {
        for (int ip = 0; ip < 2; ip++) {
            cl_add(cl, T_UNSIGNED, O_U_WSUM, uc[k], ip, PAT_EXACT);
            cl_add(cl, T_D2, O_U_MAXSUM, uc[k], ip, PAT_EXACT);
            cl_add(cl, T_INT, O_U_FIRST, uc[k], ip, PAT_EXACT);
            cl_add(cl, T_MAT, O_U_MAT, uc[k], ip, PAT_EXACT);
        }
    }
    /* user op on a datatype with holes */
    cl_add(cl, T_VEC2D, O_U_VMAX, 1, 0, PAT_EXACT);
    cl_add(cl, T_VEC2D, O_U_VMAX, 7, 1, PAT_EXACT);
    cl_add(cl, T_VEC2D, O_U_VMAX, 333, 0, PAT_EXACT);
    cl_add(cl, T_VEC2D, O_U_VMAX, 1001, 1, PAT_EXACT);
}

/* large counts on a few types (>= 1M elements, 64K with --quick) */
static void suite_large(caselist *cl)
{
    size_t L = large_n();
    /* >= L elements */
    cl_add(cl, T_DOUBLE, O_SUM, L + 1, 0, PAT_EXACT);
    cl_add(cl, T_INT, O_SUM, L, 1, PAT_EXACT);
    cl_add(cl, T_UINT8, O_BXOR, L + 1, 1, PAT_EXACT);
    cl_add(cl, T_DOUBLE, O_SUM, L + 3, 0, PAT_APPROX);
    /* about L/8 elements: still many pipeline segments */
    cl_add(cl, T_FLOAT, O_MAX, L / 8 + 7, 0, PAT_EXACT);
    cl_add(cl, T_INT16, O_SUM, L / 8 + 3, 0, PAT_EXACT);
    cl_add(cl, T_DOUBLE_INT, O_MINLOC, L / 8 + 1, 0, PAT_EXACT);
    cl_add(cl, T_LDOUBLE, O_SUM, L / 8 + 5, 1, PAT_EXACT);
    cl_add(cl, T_DCPLX, O_PROD, L / 8 + 1, 0, PAT_EXACT);
    cl_add(cl, T_MAT, O_U_MAT, L / 8 + 1, 0, PAT_EXACT);
    cl_add(cl, T_UNSIGNED, O_U_WSUM, L / 8 + 1, 1, PAT_EXACT);
}

/* each predefined (type, op) pair once, rotating count and in-place */
static void suite_reduced(caselist *cl, int n, int with_medium)
{
    size_t rot[4] = {1, 7, 1001, n > 2 ? (size_t)(n - 1) : 3};
    int k = 0;
    for (int t = 0; t < nT; t++) {
        if (!T[t].predefined) continue;
        for (int op = 0; op <= O_MAXLOC; op++) {
            if (!op_valid(&T[t], op)) continue;
            cl_add(cl, t, op, rot[k % 4], (k / 4) & 1, PAT_EXACT);
            k++;
        }
    }
    cl_add(cl, T_INT, O_SUM, 0, 0, PAT_EXACT);
    cl_add(cl, T_DOUBLE, O_SUM, 0, 1, PAT_EXACT);
    cl_add(cl, T_DOUBLE, O_SUM, 1001, 0, PAT_APPROX);
    cl_add(cl, T_FLOAT, O_SUM, 7, 1, PAT_APPROX);
    cl_add(cl, T_UNSIGNED, O_U_WSUM, 1001, 0, PAT_EXACT);
    cl_add(cl, T_D2, O_U_MAXSUM, 7, 1, PAT_EXACT);
    cl_add(cl, T_INT, O_U_FIRST, 1001, 1, PAT_EXACT);
    cl_add(cl, T_INT, O_U_FIRST, 1, 0, PAT_EXACT);
    cl_add(cl, T_MAT, O_U_MAT, 7, 0, PAT_EXACT);
    cl_add(cl, T_MAT, O_U_MAT, 1001, 1, PAT_EXACT);
    cl_add(cl, T_VEC2D, O_U_VMAX, 101, 1, PAT_EXACT);
    if (with_medium) {
        size_t M = opt_quick ? 20011 : 100003;
        cl_add(cl, T_DOUBLE, O_SUM, M, 0, PAT_EXACT);
        cl_add(cl, T_LONG, O_BXOR, M / 2 + 3, 1, PAT_EXACT);
        cl_add(cl, T_DOUBLE, O_SUM, M / 2 + 1, 1, PAT_APPROX);
    }
}

/* 200 small back-to-back calls: rotate through types, ops, counts 1..64 */
static void suite_burst(caselist *cl, int ncalls)
{
    int k = 0;
    for (int i = 0; i < ncalls; i++) {
        if (i % 17 == 16) {
            int uo[] = {O_U_WSUM, O_U_MAT, O_U_FIRST, O_U_MAXSUM};
            int ut[] = {T_UNSIGNED, T_MAT, T_INT, T_D2};
            int j = (i / 17) % 4;
            cl_add(cl, ut[j], uo[j], (size_t)(1 + i % 64), i & 1, PAT_EXACT);
            continue;
        }
        int t, op;
        do { /* next valid predefined (type, op) pair */
            t = (k / (O_MAXLOC + 1)) % nT;
            op = k % (O_MAXLOC + 1);
            k++;
        } while (!T[t].predefined || !op_valid(&T[t], op));
        cl_add(cl, t, op, (size_t)(1 + (i * 7) % 64), (i / 3) & 1, PAT_EXACT);
    }
}

/* ------------------------------------------------------------------------ */

static void run_suite_on(MPI_Comm comm, const char *name, const char *phase, int kind)
{
    cctx c;
    caselist cl;
    memset(&cl, 0, sizeof(cl));
    cl.phase = phase;
    cctx_init(&c, comm, name);
    switch (kind) {
    case 0: suite_full(&cl, c.size); suite_large(&cl); break;
    case 1: suite_reduced(&cl, c.size, 0); break;
    case 2: suite_reduced(&cl, c.size, 1); break;
    }
    double t0 = MPI_Wtime();
    run_cases(&c, &cl, 0);
    if (opt_timing && c.rank == 0)
        printf("time %s on %s: %d cases %.2f s\n", phase, c.name, cl.n, MPI_Wtime() - t0);
    if (kind == 0) {
        /* back-to-back burst on the same communicator */
        caselist bl;
        memset(&bl, 0, sizeof(bl));
        bl.phase = "burst";
        suite_burst(&bl, 200);
        t0 = MPI_Wtime();
        run_cases(&c, &bl, 1);
        if (opt_timing && c.rank == 0)
            printf("time burst on %s: %d cases %.2f s\n", c.name, bl.n, MPI_Wtime() - t0);
        free(bl.v);
    }
    if (c.pv_ok && c.rank == 0 && world_rank == 0)
        printf("pvar %s: handled +%llu, fallback +%llu over %llu calls\n", c.name, c.tot_h, c.tot_f,
               c.tot_calls);
    cctx_free(&c, 0);
    free(cl.v);
}

static void usage(void)
{
    if (world_rank == 0)
        printf("usage: test_allreduce [--quick] [--expect-topoar] [--relax TYPE,...] [--either-upto BYTES] [--seed N] [--verbose] [--timing]\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) opt_quick = 1;
        else if (!strcmp(argv[i], "--expect-topoar")) opt_expect = 1;
        else if (!strcmp(argv[i], "--verbose")) opt_verbose = 1;
        else if (!strcmp(argv[i], "--timing")) opt_timing = 1;
        else if (!strcmp(argv[i], "--device")) opt_device = 1;
        else if (!strcmp(argv[i], "--device-mixed")) opt_device = 2;
        else if (!strcmp(argv[i], "--expect-path") && i + 1 < argc) {
            i++;
            opt_expect_path = !strcmp(argv[i], "nccl") ? 3 : !strcmp(argv[i], "staged") ? 5
                              : !strcmp(argv[i], "down") ? 6 : !strcmp(argv[i], "device-down") ? 7
                              : !strcmp(argv[i], "nccl_hier") ? 8 : -1;
            opt_path_every = opt_expect_path == 6 || opt_expect_path == 7;
            if (opt_expect_path < 0) {
                fprintf(stderr, "--expect-path: nccl, nccl_hier, staged, down or device-down\n");
                return 2;
            }
        }
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) opt_seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--either-upto") && i + 1 < argc) opt_either_upto = (size_t) strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--relax") && i + 1 < argc) snprintf(opt_relax, sizeof(opt_relax), "%s", argv[++i]);
        else if (!strncmp(argv[i], "--relax=", 8)) snprintf(opt_relax, sizeof(opt_relax), "%s", argv[i] + 8);
        else {
            usage();
            MPI_Finalize();
            return !strcmp(argv[i], "--help") ? 0 : 2;
        }
    }

    for (int e = 0; e <= 40; e++) pow2_tab[e] = ldexpl(1.0L, e - 20);
    init_types();
    init_ops();
    probe_minmax_bug();
    pv_init();
    if (opt_device) cuda_init();
    long extra_failed = 0;
    if (world_rank == 0) {
        if (pv.have) printf("topoar pvars found%s\n", opt_expect ? ", asserting handled/fallback counts" : "");
        else if (opt_expect) {
            printf("FAIL: --expect-topoar given but topoar's MPI_T pvars are missing: %s -- is the topoar "
                   "component loaded (--mca mca_base_component_path ... --mca coll topoar,...)?\n", pv.missing);
            extra_failed = 1;
        } else printf("topoar pvars not found (%s): pvar checks skipped\n", pv.missing);
        fflush(stdout);
    }

    /* 1. MPI_COMM_WORLD: everything, then a 200-call burst */
    run_suite_on(MPI_COMM_WORLD, "world", "world", 0);

    /* 2. duplicate of world */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    run_suite_on(dup, "dup", "dup", 2);
    MPI_Comm_free(&dup);

    /* 3. split by parity: sizes ceil(np/2) and floor(np/2) */
    MPI_Comm par;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &par);
    run_suite_on(par, world_rank % 2 ? "odd" : "even", "parity", 1);
    MPI_Comm_free(&par);

    /* 4. everyone but world rank 0 */
    MPI_Comm ex0;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank == 0 ? MPI_UNDEFINED : 1, world_rank, &ex0);
    if (ex0 != MPI_COMM_NULL) {
        run_suite_on(ex0, "excl0", "excl0", 2);
        MPI_Comm_free(&ex0);
    }

    /* 5. reversed rank order (non-commutative ops must follow the new order) */
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, -world_rank, &rev);
    run_suite_on(rev, "reversed", "reversed", 2);
    MPI_Comm_free(&rev);

    /* 6. MPI_COMM_SELF (not with --device: coll self memcpy()s buffers) */
    if (!opt_device) run_suite_on(MPI_COMM_SELF, "self", "self", 1);

    /* 7. communicator churn: per-communicator state must be created/freed cleanly */
    double tch = MPI_Wtime();
    for (int it = 0; it < 10; it++) {
        MPI_Comm d;
        cctx c;
        caselist cl;
        memset(&cl, 0, sizeof(cl));
        cl.phase = "churn";
        if (it % 2) MPI_Comm_dup(MPI_COMM_WORLD, &d);
        else MPI_Comm_split(MPI_COMM_WORLD, 0, (world_rank * 3) % world_size, &d);
        cctx_init(&c, d, it % 2 ? "churn-dup" : "churn-permuted");
        cl_add(&cl, T_MAT, O_U_MAT, 5, 1, PAT_EXACT);
        cl_add(&cl, T_INT, O_SUM, 7 + (size_t)it, it & 1, PAT_EXACT);
        cl_add(&cl, T_DOUBLE, O_MAX, 1001, 0, PAT_EXACT); /* last call: eligible */
        run_cases(&c, &cl, 0);
        cctx_free(&c, 1);
        free(cl.v);
    }

    if (opt_timing && world_rank == 0) printf("time churn: %.2f s\n", MPI_Wtime() - tch);
    char alg[128];
    int have_alg = last_algorithm(alg, sizeof(alg));

    long loc[2] = {n_passed, n_failed + n_path_bad}, tot[2] = {0, 0};
    MPI_Reduce(loc, tot, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    tot[1] += extra_failed;
    MPI_Bcast(&tot[1], 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (world_rank == 0) {
        if (have_alg) printf("topoar last_algorithm: %s\n", alg);
        printf("%ld passed, %ld failed\n", tot[0], tot[1]);
        fflush(stdout);
    }

    pv_finalize();
    free_ops_types();
    MPI_Finalize();
    return tot[1] ? 1 : 0;
}
