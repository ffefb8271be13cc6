/*
 * test_nonblocking.c - MPI correctness sweep for nonblocking (MPI_Iallreduce)
 * and persistent allreduce (MPI_Allreduce_init, or MPIX_Allreduce_init from
 * Open MPI 4.1's pcollreq extension).
 *
 * A plain MPI program: it uses only the standard interface, so it runs
 * against any coll component (libnbc today, topoar when it takes these calls).
 * Runs under mpirun at any np (designed for 1..8).
 *
 * Modes (--mode, default all):
 *   nonblocking  batches of 4-8 MPI_Iallreduce outstanding on one
 *                communicator, of different types, ops and counts; between
 *                the starts an MPI_Ibcast (completed with the batch), a
 *                blocking MPI_Allreduce (checked at once) or an MPI_Barrier;
 *                completion by MPI_Wait, MPI_Waitall, MPI_Waitany, MPI_Test,
 *                MPI_Testall or MPI_Testsome loops, in forward, reverse,
 *                random (one seed on every rank) or random-per-rank order.
 *                On MPI_COMM_WORLD, an uneven split (about a third / two
 *                thirds, reversed rank order) and a dup.
 *   persistent   each case's request initialised once and started 2-3
 *                times with fresh data each start (several outstanding,
 *                MPI_Start and MPI_Startall); then 4 requests started
 *                thousands of times (--starts), each result checked, the
 *                resident memory not growing; MPI_Request_free of a request
 *                never started and of one completed.
 *   mixed        nonblocking, persistent and blocking calls outstanding at
 *                once, on two communicators (WORLD and the split) at once.
 *                Then new communicators (dups and a reversed split), each
 *                with a blocking, a nonblocking and a blocking allreduce.
 *   threads      with MPI_THREAD_MULTIPLE (skipped, said, when the library
 *                does not provide it): --threads threads, each on its own
 *                dup of WORLD, run nonblocking batches at the same time.
 *
 * Cases: every predefined op on every C integer type, float, double, long
 * double, the complex types (SUM, PROD), C_BOOL (logical), BYTE (bitwise),
 * the MINLOC/MAXLOC pair types, a commutative user op (wrapping unsigned
 * sum) and a non-commutative one (keeps the lowest rank's value); counts 0,
 * 1, < np, 7, 1001 and about 1M (64K+3 with --quick); in place or not.
 * Inputs make every result exact whatever the order (small integers,
 * integer-valued floats, products of +-1 and few 2s, complex units), so each
 * element is compared with a reference computed locally from every rank's
 * inputs.  Also checked: the send buffer unchanged, nothing written in the
 * guard zones around both buffers, and every result identical on all ranks
 * (a hash per call, gathered and compared at the end of each phase).
 *
 * Output: the first mismatch of a call, one line (rank, mode, comm, type,
 * op, count, in place, start number, element, expected, got); at the end
 * rank 0 prints "test_nonblocking: N checks passed, M failed".  Exit status
 * nonzero on any failure.
 *
 * Options: --mode M          nonblocking | persistent | mixed | threads | all
 *          --quick           each (type, op) pair once with rotating counts,
 *                            largest count 64K+3, 300 persistent starts
 *          --starts N        persistent starts of the long run (default 3000)
 *          --threads N       threads of the thread mode (default 3)
 *          --expect-topoar   assert through topoar's MPI_T counters (bound to
 *                            each communicator) that topoar ran the calls:
 *                            coll_topoar_iallreduce_handled / _fallback per
 *                            MPI_Iallreduce, coll_topoar_allreduce_init_
 *                            handled per MPI_Start of a persistent
 *                            allreduce topoar runs (_fallback counts a
 *                            request handed down once, at its init); fails
 *                            with a message when a counter does not exist
 *          --either-upto B   with --expect-topoar: calls of at most B bytes
 *                            may be topoar's or the previous module's
 *          --either-first N  with --expect-topoar: the first N calls of each
 *                            kind on each communicator may go either way (a
 *                            set-up finished after the first calls)
 *          --seed N          change every input;  --verbose  say each phase
 */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* Persistent allreduce: MPI 4.0's name (Open MPI 5 has it while still
 * saying MPI_VERSION 3), else Open MPI 4.1's pcollreq extension. */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define HAVE_PERSISTENT 1
#define PERSISTENT_NAME "MPI_Allreduce_init"
#define allreduce_init(s, r, n, d, o, c, q) MPI_Allreduce_init(s, r, n, d, o, c, MPI_INFO_NULL, q)
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define HAVE_PERSISTENT 1
#define PERSISTENT_NAME "MPIX_Allreduce_init"
#define allreduce_init(s, r, n, d, o, c, q) MPIX_Allreduce_init(s, r, n, d, o, c, MPI_INFO_NULL, q)
#else
#define HAVE_PERSISTENT 0
#define PERSISTENT_NAME "(none)"
#endif

/* ------------------------------------------------------------------------ */
/* options and tallies                                                       */

static int opt_quick = 0, opt_expect = 0, opt_verbose = 0;
static int opt_starts = 3000, opt_threads = 3, opt_either_first = 0;
static size_t opt_either_upto = 0;
static uint64_t opt_seed = 0x6e6f6e626c6bULL; /* "nonblk" */
static int world_rank = 0, world_size = 1;
static long n_passed = 0, n_failed = 0; /* checks of this process (threads: under tally_lock) */
static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;

#define GUARD 64      /* guard bytes on each side of every buffer */
#define SPAT 0x5a     /* send buffer pattern */
#define RPAT 0xa5     /* receive buffer pattern */
#define MAX_SLOTS 16  /* requests of one batch */
#define BATCH_BYTES ((size_t)24 << 20)

static void tally(int failed)
{
    pthread_mutex_lock(&tally_lock);
    if (failed) n_failed++;
    else n_passed++;
    pthread_mutex_unlock(&tally_lock);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", world_rank, n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* ------------------------------------------------------------------------ */
/* datatypes and ops                                                         */

enum kind { K_SINT, K_UINT, K_FLT, K_CPLX, K_BOOL, K_BYTE, K_PAIR };
enum fsub { F_FLOAT, F_DOUBLE, F_LDOUBLE, F_INT, F_LONG }; /* F_INT/F_LONG: pair value types */

typedef struct {
    const char *name;
    MPI_Datatype dt;
    int kind;
    int size;      /* bytes of an integer value */
    int sub;       /* enum fsub: floats, complex parts, pair values */
    size_t ioff;   /* pairs: offset of the int index */
    size_t extent; /* bytes per element */
} tdesc;

struct pr_2int { int v; int i; };
struct pr_fi { float v; int i; };
struct pr_di { double v; int i; };
struct pr_li { long v; int i; };

#define MAXT 40
static tdesc T[MAXT];
static int nT = 0;
static int T_INT, T_UNSIGNED, T_DOUBLE, T_FLOAT, T_LONG;

static int add_type(const char *name, MPI_Datatype dt, int kind, int size, int sub, size_t ioff)
{
    tdesc *t = &T[nT];
    MPI_Aint lb, ext;
    MPI_Type_get_extent(dt, &lb, &ext);
    t->name = name; t->dt = dt; t->kind = kind; t->size = size; t->sub = sub; t->ioff = ioff;
    t->extent = (size_t)ext;
    return nT++;
}

static void init_types(void)
{
    add_type("MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, K_SINT, 1, 0, 0);
    add_type("MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, K_UINT, 1, 0, 0);
    add_type("MPI_SHORT", MPI_SHORT, K_SINT, sizeof(short), 0, 0);
    add_type("MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, K_UINT, sizeof(short), 0, 0);
    T_INT = add_type("MPI_INT", MPI_INT, K_SINT, sizeof(int), 0, 0);
    T_UNSIGNED = add_type("MPI_UNSIGNED", MPI_UNSIGNED, K_UINT, sizeof(unsigned), 0, 0);
    T_LONG = add_type("MPI_LONG", MPI_LONG, K_SINT, sizeof(long), 0, 0);
    add_type("MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, K_UINT, sizeof(long), 0, 0);
    add_type("MPI_LONG_LONG", MPI_LONG_LONG, K_SINT, sizeof(long long), 0, 0);
    add_type("MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, K_UINT, sizeof(long long), 0, 0);
    add_type("MPI_INT8_T", MPI_INT8_T, K_SINT, 1, 0, 0);
    add_type("MPI_INT16_T", MPI_INT16_T, K_SINT, 2, 0, 0);
    add_type("MPI_INT32_T", MPI_INT32_T, K_SINT, 4, 0, 0);
    add_type("MPI_INT64_T", MPI_INT64_T, K_SINT, 8, 0, 0);
    add_type("MPI_UINT8_T", MPI_UINT8_T, K_UINT, 1, 0, 0);
    add_type("MPI_UINT16_T", MPI_UINT16_T, K_UINT, 2, 0, 0);
    add_type("MPI_UINT32_T", MPI_UINT32_T, K_UINT, 4, 0, 0);
    add_type("MPI_UINT64_T", MPI_UINT64_T, K_UINT, 8, 0, 0);
    T_FLOAT = add_type("MPI_FLOAT", MPI_FLOAT, K_FLT, 4, F_FLOAT, 0);
    T_DOUBLE = add_type("MPI_DOUBLE", MPI_DOUBLE, K_FLT, 8, F_DOUBLE, 0);
    add_type("MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, K_FLT, 0, F_LDOUBLE, 0);
    add_type("MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, K_CPLX, 0, F_FLOAT, 0);
    add_type("MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, K_CPLX, 0, F_DOUBLE, 0);
    add_type("MPI_C_BOOL", MPI_C_BOOL, K_BOOL, sizeof(_Bool), 0, 0);
    add_type("MPI_BYTE", MPI_BYTE, K_BYTE, 1, 0, 0);
    add_type("MPI_2INT", MPI_2INT, K_PAIR, 0, F_INT, offsetof(struct pr_2int, i));
    add_type("MPI_FLOAT_INT", MPI_FLOAT_INT, K_PAIR, 0, F_FLOAT, offsetof(struct pr_fi, i));
    add_type("MPI_DOUBLE_INT", MPI_DOUBLE_INT, K_PAIR, 0, F_DOUBLE, offsetof(struct pr_di, i));
    add_type("MPI_LONG_INT", MPI_LONG_INT, K_PAIR, 0, F_LONG, offsetof(struct pr_li, i));
}

enum opid {
    O_SUM, O_PROD, O_MIN, O_MAX, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR, O_MINLOC, O_MAXLOC,
    O_U_WSUM,  /* user, commutative: wrapping sum of unsigned (MPI_UNSIGNED only) */
    O_U_FIRST, /* user, non-commutative: a o b = a, the lowest rank's value (MPI_INT only) */
    O_N
};

typedef struct {
    const char *name;
    MPI_Op op;
    int user, commute;
} opdesc;

static opdesc O[O_N];

static void init_ops(void)
{
    const char *names[TU_NPREDEFINED];
    MPI_Op ops[TU_NPREDEFINED];
    tu_predefined_ops(names, ops);
    for (int i = 0; i <= O_MAXLOC; i++) {
        O[i].name = names[i]; O[i].op = ops[i]; O[i].user = 0; O[i].commute = 1;
    }
    O[O_U_WSUM].name = "user_wsum(commute=1)";
    O[O_U_WSUM].user = 1; O[O_U_WSUM].commute = 1;
    MPI_Op_create(tu_u_wsum, 1, &O[O_U_WSUM].op);
    O[O_U_FIRST].name = "user_first(commute=0)";
    O[O_U_FIRST].user = 1; O[O_U_FIRST].commute = 0;
    MPI_Op_create(tu_u_first, 0, &O[O_U_FIRST].op);
}

/* is a predefined op valid on this type (MPI-3.1 5.9.2)? */
static int op_valid(const tdesc *t, int op)
{
    switch (t->kind) {
    case K_SINT: case K_UINT: return op <= O_BXOR;
    case K_FLT: return op <= O_MAX;
    case K_CPLX: return op == O_SUM || op == O_PROD;
    case K_BOOL: return op == O_LAND || op == O_LOR || op == O_LXOR;
    case K_BYTE: return op == O_BAND || op == O_BOR || op == O_BXOR;
    case K_PAIR: return op == O_MINLOC || op == O_MAXLOC;
    default: return 0;
    }
}

/* ------------------------------------------------------------------------ */
/* values: every basic value is an integer (pairs: value and index; complex:
 * real and imaginary part), small enough that each result is exact */

typedef struct { int64_t a, b; } val_t;
#define NOT_INTEGER INT64_MIN /* a float result that is not an integer */

static int64_t sext(uint64_t u, int bytes)
{
    if (bytes >= 8) return (int64_t)u;
    int sh = 64 - 8 * bytes;
    return (int64_t)(u << sh) >> sh;
}

static uint64_t umask(uint64_t u, int bytes) { return bytes >= 8 ? u : u & ((1ULL << (8 * bytes)) - 1); }

/* input element `i` of comm rank `rank` for a call whose data seed is `seed` */
static val_t gen(const tdesc *t, int op, uint64_t seed, int rank, size_t i)
{
    uint64_t h = tu_smix(seed ^ tu_smix(((uint64_t)rank << 40) ^ (uint64_t)i));
    int sgn = t->kind != K_UINT && t->kind != K_BYTE && t->kind != K_BOOL;
    val_t v = {0, 0};
    switch (op) {
    case O_SUM:
        v.a = sgn ? (int64_t)(h % 7) - 3 : (int64_t)(h % 4);
        if (t->kind == K_CPLX) v.b = (int64_t)((h >> 8) % 7) - 3;
        break;
    case O_PROD:
        if (t->kind == K_CPLX) { /* units 1, i, -1, -i */
            static const int re[4] = {1, 0, -1, 0}, im[4] = {0, 1, 0, -1};
            v.a = re[h % 4]; v.b = im[h % 4];
        } else { /* +-1, and 2 from at most one rank in five: 8-bit products fit */
            v.a = ((rank + i) % 5 == 0 && ((h >> 3) & 1)) ? 2 : 1;
            if (sgn && ((h >> 7) & 1)) v.a = -v.a;
        }
        break;
    case O_MIN: case O_MAX:
        v.a = sgn ? (int64_t)(h % 101) - 50 : (int64_t)(h % 101);
        break;
    case O_LAND: v.a = (h % 4) ? (int64_t)(h % 3) + 1 : 0; break;  /* mostly true */
    case O_LOR: v.a = (h % 4) ? 0 : (int64_t)(h % 3) + 1; break;   /* mostly false */
    case O_LXOR: v.a = (h >> 4) & 1 ? (int64_t)(h % 3) + 1 : 0; break;
    case O_BAND: case O_BOR: case O_BXOR: {
        uint64_t u = op == O_BAND ? (h | tu_smix(h)) : op == O_BOR ? (h & tu_smix(h)) : h;
        int bytes = t->size;
        v.a = sgn ? sext(u, bytes) : (int64_t)umask(u, bytes);
        break;
    }
    case O_MINLOC: case O_MAXLOC: /* ties in value, different indices */
        v.a = (int64_t)(h % 11) - 5;
        v.b = (int64_t)((h >> 16) % 13);
        break;
    case O_U_WSUM: v.a = (int64_t)(h & 0xffffffffu); break;
    case O_U_FIRST: v.a = (int32_t)(h >> 7); break;
    }
    if (t->kind == K_BOOL) v.a = v.a != 0;
    return v;
}

/* acc o v, acc holding the lower ranks */
static val_t apply(const tdesc *t, int op, val_t acc, val_t v)
{
    switch (op) {
    case O_SUM: acc.a += v.a; acc.b += v.b; break;
    case O_PROD:
        if (t->kind == K_CPLX) {
            val_t r = {acc.a * v.a - acc.b * v.b, acc.a * v.b + acc.b * v.a};
            acc = r;
        } else {
            acc.a *= v.a;
        }
        break;
    case O_MIN: if (v.a < acc.a) acc.a = v.a; break;
    case O_MAX: if (v.a > acc.a) acc.a = v.a; break;
    case O_LAND: acc.a = acc.a && v.a; break;
    case O_LOR: acc.a = acc.a || v.a; break;
    case O_LXOR: acc.a = (acc.a != 0) != (v.a != 0); break;
    case O_BAND: acc.a &= v.a; break;
    case O_BOR: acc.a |= v.a; break;
    case O_BXOR: acc.a ^= v.a; break;
    case O_MINLOC: if (v.a < acc.a || (v.a == acc.a && v.b < acc.b)) acc = v; break;
    case O_MAXLOC: if (v.a > acc.a || (v.a == acc.a && v.b < acc.b)) acc = v; break;
    case O_U_WSUM: acc.a = (int64_t)(uint32_t)((uint32_t)acc.a + (uint32_t)v.a); break;
    case O_U_FIRST: break;
    }
    return acc;
}

static val_t reference(const tdesc *t, int op, uint64_t seed, int n, size_t i)
{
    val_t acc = gen(t, op, seed, 0, i);
    for (int r = 1; r < n; r++) acc = apply(t, op, acc, gen(t, op, seed, r, i));
    return acc;
}

static void store_int(char *p, int bytes, int64_t x) { tu_store_int(p, bytes, (uint64_t)x); }

static int64_t load_int(const char *p, int bytes, int sgn)
{
    uint64_t u = tu_load_uint(p, bytes);
    return sgn ? sext(u, bytes) : (int64_t)u;
}

static void store_num(char *p, int sub, int64_t x)
{
    switch (sub) {
    case F_FLOAT: { float f = (float)x; memcpy(p, &f, sizeof(f)); break; }
    case F_DOUBLE: { double d = (double)x; memcpy(p, &d, sizeof(d)); break; }
    case F_LDOUBLE: { long double l = (long double)x; memcpy(p, &l, sizeof(l)); break; }
    case F_INT: store_int(p, sizeof(int), x); break;
    default: store_int(p, sizeof(long), x); break;
    }
}

static long double load_flt(const char *p, int sub)
{
    if (sub == F_FLOAT) { float f; memcpy(&f, p, sizeof(f)); return f; }
    if (sub == F_DOUBLE) { double d; memcpy(&d, p, sizeof(d)); return d; }
    long double l; memcpy(&l, p, sizeof(l)); return l;
}

static int64_t load_num(const char *p, int sub)
{
    if (sub == F_INT) return load_int(p, sizeof(int), 1);
    if (sub == F_LONG) return load_int(p, sizeof(long), 1);
    long double x = load_flt(p, sub);
    if (!(x == x) || x != floorl(x) || fabsl(x) > 9e18L) return NOT_INTEGER;
    return (int64_t)x;
}

static size_t part_size(int sub)
{
    return sub == F_FLOAT ? sizeof(float) : sub == F_DOUBLE ? sizeof(double) : sizeof(long double);
}

static void store(const tdesc *t, char *p, val_t v)
{
    switch (t->kind) {
    case K_SINT: case K_UINT: case K_BOOL: case K_BYTE: store_int(p, t->size, v.a); break;
    case K_FLT: store_num(p, t->sub, v.a); break;
    case K_CPLX: store_num(p, t->sub, v.a); store_num(p + part_size(t->sub), t->sub, v.b); break;
    case K_PAIR: store_num(p, t->sub, v.a); store_int(p + t->ioff, sizeof(int), v.b); break;
    }
}

static val_t load(const tdesc *t, const char *p)
{
    val_t v = {0, 0};
    switch (t->kind) {
    case K_SINT: v.a = load_int(p, t->size, 1); break;
    case K_UINT: case K_BOOL: case K_BYTE: v.a = load_int(p, t->size, 0); break;
    case K_FLT: v.a = load_num(p, t->sub); break;
    case K_CPLX: v.a = load_num(p, t->sub); v.b = load_num(p + part_size(t->sub), t->sub); break;
    case K_PAIR: v.a = load_num(p, t->sub); v.b = load_int(p + t->ioff, sizeof(int), 1); break;
    }
    return v;
}

static void fmt(const tdesc *t, const char *p, val_t v, char *s, size_t n)
{
    if (t->kind == K_FLT && p) {
        snprintf(s, n, "%.21Lg", load_flt(p, t->sub));
    } else if (t->kind == K_CPLX && p) {
        snprintf(s, n, "(%.21Lg,%.21Lg)", load_flt(p, t->sub), load_flt(p + part_size(t->sub), t->sub));
    } else if (t->kind == K_CPLX || t->kind == K_PAIR) {
        snprintf(s, n, "(%" PRId64 ",%" PRId64 ")", v.a, v.b);
    } else if (t->kind == K_UINT || t->kind == K_BYTE) {
        snprintf(s, n, "%" PRIu64, (uint64_t)v.a);
    } else {
        snprintf(s, n, "%" PRId64, v.a);
    }
}

static uint64_t hmix(uint64_t h, val_t v) { return tu_smix(h ^ tu_smix((uint64_t)v.a ^ tu_smix((uint64_t)v.b))); }

/* ------------------------------------------------------------------------ */
/* MPI_T: topoar's counters for nonblocking and persistent calls             */

enum { KIND_NB, KIND_PERSIST, KIND_NKINDS };
static const char *kind_name[KIND_NKINDS] = {"iallreduce", "allreduce_init"};

static struct {
    int inited, sess_ok, have;
    MPI_T_pvar_session sess;
    int idx[KIND_NKINDS][2]; /* [kind][handled, fallback] */
    MPI_Datatype dt[KIND_NKINDS][2];
    int cont[KIND_NKINDS][2];
    char missing[512];
} pv;

/* a counter bound to a communicator */
static int find_pvar(const char *want, int *idx, MPI_Datatype *dt, int *cont)
{
    int cls, bind;
    return tu_find_pvar(want, idx, dt, &cls, &bind, cont, NULL, NULL, 0) && cls == MPI_T_PVAR_CLASS_COUNTER &&
           bind == MPI_T_BIND_MPI_COMM;
}

static void pv_init(void)
{
    int prov;
    memset(&pv, 0, sizeof(pv));
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &prov) != MPI_SUCCESS) {
        snprintf(pv.missing, sizeof(pv.missing), "MPI_T_init_thread failed");
        return;
    }
    pv.inited = 1;
    if (MPI_T_pvar_session_create(&pv.sess) != MPI_SUCCESS) {
        snprintf(pv.missing, sizeof(pv.missing), "MPI_T_pvar_session_create failed");
        return;
    }
    pv.sess_ok = 1;
    pv.have = 1;
    for (int k = 0; k < KIND_NKINDS; k++)
        for (int w = 0; w < 2; w++) {
            char name[128];
            snprintf(name, sizeof(name), "coll_topoar_%s_%s", kind_name[k], w ? "fallback" : "handled");
            if (!find_pvar(name, &pv.idx[k][w], &pv.dt[k][w], &pv.cont[k][w])) {
                pv.have = 0;
                size_t l = strlen(pv.missing);
                snprintf(pv.missing + l, sizeof(pv.missing) - l, "%s%s", l ? ", " : "", name);
            }
        }
}

static void pv_finalize(void)
{
    if (pv.sess_ok) MPI_T_pvar_session_free(&pv.sess);
    if (pv.inited) MPI_T_finalize();
}

/* ------------------------------------------------------------------------ */
/* communicator context: what a phase did on it, and the counters' handles   */

typedef struct {
    MPI_Comm comm;
    char name[64];
    int rank, size;
    const char *mode; /* for messages */
    int thread;       /* -1: main */
    int pv_ok;
    MPI_T_pvar_handle h[KIND_NKINDS][2];
    /* calls per kind: count 0 / must be handled / must be handed down / either */
    long calls[KIND_NKINDS], zero[KIND_NKINDS], must_h[KIND_NKINDS], must_f[KIND_NKINDS], either[KIND_NKINDS];
    uint64_t *hashes; /* one per checked call, in start order (the same on every rank) */
    size_t nhash, caphash;
    long failed; /* checks failed on this rank in this context */
} cctx;

static void cctx_init(cctx *c, MPI_Comm comm, const char *name, const char *mode, int thread)
{
    memset(c, 0, sizeof(*c));
    c->comm = comm;
    c->mode = mode;
    c->thread = thread;
    MPI_Comm_rank(comm, &c->rank);
    MPI_Comm_size(comm, &c->size);
    snprintf(c->name, sizeof(c->name), "%s(size=%d)", name, c->size);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (opt_expect && pv.have) {
        int cnt, ok = 1;
        MPI_Comm obj = comm;
        for (int k = 0; k < KIND_NKINDS; k++)
            for (int w = 0; w < 2; w++) {
                if (ok && MPI_T_pvar_handle_alloc(pv.sess, pv.idx[k][w], &obj, &c->h[k][w], &cnt) != MPI_SUCCESS)
                    ok = 0;
                else if (ok && !pv.cont[k][w])
                    MPI_T_pvar_start(pv.sess, c->h[k][w]);
                /* a handle left unallocated is never freed: c->pv_ok stays 0 */
                if (!ok) {
                    fprintf(stderr, "rank %d: cannot bind %s counter to %s\n", world_rank, kind_name[k], c->name);
                    MPI_Abort(MPI_COMM_WORLD, 3);
                }
            }
        c->pv_ok = 1;
    }
}

static void add_hash(cctx *c, uint64_t h)
{
    if (c->nhash == c->caphash) {
        c->caphash = c->caphash ? 2 * c->caphash : 256;
        c->hashes = realloc(c->hashes, c->caphash * sizeof(uint64_t));
        if (!c->hashes) MPI_Abort(MPI_COMM_WORLD, 2);
    }
    c->hashes[c->nhash++] = h;
}

static void fail_msg(cctx *c, const char *fmtstr, const char *what)
{
    char th[32] = "";
    if (c->thread >= 0) snprintf(th, sizeof(th), " thread %d", c->thread);
    fprintf(stderr, "rank %d%s: FAIL mode=%s comm=%s: %s%s\n", world_rank, th, c->mode, c->name, fmtstr, what);
}

/* Every result identical on all ranks: the hashes gathered; then, with
 * --expect-topoar, the counters against the calls made.  Collective on c. */
static void cctx_finish(cctx *c)
{
    long n = (long)c->nhash, nmax = n, nmin = n;
    MPI_Allreduce(&n, &nmax, 1, MPI_LONG, MPI_MAX, c->comm);
    MPI_Allreduce(&n, &nmin, 1, MPI_LONG, MPI_MIN, c->comm);
    int bad = 0;
    if (nmax != nmin) {
        char m[128];
        snprintf(m, sizeof(m), "ranks checked different numbers of calls (%ld..%ld)", nmin, nmax);
        fail_msg(c, m, "");
        bad = 1;
    } else if (n > 0) {
        uint64_t *all = c->rank == 0 ? xmalloc((size_t)n * c->size * sizeof(uint64_t)) : NULL;
        MPI_Gather(c->hashes, (int)n, MPI_UINT64_T, all, (int)n, MPI_UINT64_T, 0, c->comm);
        if (c->rank == 0) {
            for (int r = 1; r < c->size && !bad; r++)
                for (long i = 0; i < n; i++)
                    if (all[(size_t)r * n + i] != all[i]) {
                        char m[160];
                        snprintf(m, sizeof(m), "call %ld (in start order) has a different result on rank %d "
                                 "than on rank 0", i, r);
                        fail_msg(c, m, "");
                        bad = 1;
                        break;
                    }
            free(all);
        }
    }
    tally(bad);
    if (c->pv_ok) {
        for (int k = 0; k < KIND_NKINDS; k++) {
            unsigned long long h = 0, f = 0;
            int ok = tu_read_counter(pv.sess, c->h[k][0], pv.dt[k][0], &h) &&
                     tu_read_counter(pv.sess, c->h[k][1], pv.dt[k][1], &f);
            long may = c->either[k] + c->zero[k];
            int kbad = !ok || (long long)h < c->must_h[k] || (long long)f < c->must_f[k] ||
                       (long long)(h + f) > c->must_h[k] + c->must_f[k] + may;
            if (kbad) {
                char m[512];
                snprintf(m, sizeof(m), "coll_topoar_%s counters: handled %llu, fallback %llu over %ld calls; "
                         "wanted handled >= %ld, fallback >= %ld, together <= %ld (%ld count-0 or either-way calls)",
                         kind_name[k], h, f, c->calls[k], c->must_h[k], c->must_f[k],
                         c->must_h[k] + c->must_f[k] + may, may);
                fail_msg(c, m, ok ? "" : " (counter unreadable)");
            }
            tally(kbad);
            for (int w = 0; w < 2; w++) MPI_T_pvar_handle_free(pv.sess, &c->h[k][w]);
        }
        c->pv_ok = 0;
    }
    free(c->hashes);
    c->hashes = NULL;
    c->nhash = c->caphash = 0;
}

/* ------------------------------------------------------------------------ */
/* cases and request slots                                                   */

typedef struct {
    int t, op;
    size_t count;
    int inplace;
} case_t;

typedef struct {
    int n, cap;
    case_t *v;
} caselist;

static void cl_add(caselist *cl, int t, int op, size_t count, int inplace)
{
    if (cl->n == cl->cap) {
        cl->cap = cl->cap ? 2 * cl->cap : 256;
        cl->v = realloc(cl->v, (size_t)cl->cap * sizeof(case_t));
        if (!cl->v) MPI_Abort(MPI_COMM_WORLD, 2);
    }
    case_t cs = {t, op, count, inplace};
    cl->v[cl->n++] = cs;
}

static size_t large_count(void) { return opt_quick ? 65539 : (size_t)1 << 20; }

/* The matrix: every valid (type, op) pair and the user ops.  Full: each at
 * counts 0, 1, < n, 7, 1001, in place or not alternating; --quick: each once,
 * the count and in-place rotating.  Large counts on a few types. */
static void build_cases(caselist *cl, int n)
{
    size_t counts[5] = {0, 1, (size_t)(n > 2 ? n - 1 : 2), 7, 1001};
    int k = 0;
    for (int t = 0; t < nT; t++)
        for (int op = 0; op <= O_MAXLOC; op++) {
            if (!op_valid(&T[t], op)) continue;
            if (opt_quick) {
                cl_add(cl, t, op, counts[k % 5], (k / 5) % 2);
                k++;
            } else {
                for (int c = 0; c < 5; c++, k++) cl_add(cl, t, op, counts[c], k % 2);
            }
        }
    for (int c = 0; c < 5; c++) {
        if (opt_quick && c % 2) continue;
        cl_add(cl, T_UNSIGNED, O_U_WSUM, counts[c], c % 2);
        cl_add(cl, T_INT, O_U_FIRST, counts[c], (c + 1) % 2);
    }
    cl_add(cl, T_DOUBLE, O_SUM, large_count(), 0);
    cl_add(cl, T_INT, O_MAX, large_count() + 1, 1);
    if (!opt_quick) {
        cl_add(cl, T_FLOAT, O_SUM, large_count() - 1, 1);
        cl_add(cl, T_LONG, O_BXOR, large_count(), 0);
    }
}

enum { S_NB, S_PERSIST, S_BLOCK };
static const char *slot_kind[] = {"nonblocking", "persistent", "blocking"};

typedef struct {
    case_t cs;
    int kind;
    char *sraw, *rraw, *s, *r;
    size_t bytes;
    uint64_t seed; /* of the data of the current start */
    long start_no; /* persistent: which start */
    int started;   /* started without an error: to be checked when complete */
    MPI_Request req;
} slot_t;

static void slot_alloc(slot_t *sl, const case_t *cs, int kind)
{
    memset(sl, 0, sizeof(*sl));
    sl->cs = *cs;
    sl->kind = kind;
    sl->bytes = cs->count * T[cs->t].extent;
    sl->sraw = xmalloc(sl->bytes + 2 * GUARD);
    sl->rraw = xmalloc(sl->bytes + 2 * GUARD);
    sl->s = sl->sraw + GUARD;
    sl->r = sl->rraw + GUARD;
    sl->req = MPI_REQUEST_NULL;
}

static void slot_free(slot_t *sl)
{
    free(sl->sraw);
    free(sl->rraw);
    sl->sraw = sl->rraw = NULL;
}

/* fresh inputs for the next call or start */
static void slot_fill(cctx *c, slot_t *sl, uint64_t seed)
{
    const tdesc *t = &T[sl->cs.t];
    sl->seed = seed;
    memset(sl->sraw, SPAT, sl->bytes + 2 * GUARD);
    memset(sl->rraw, RPAT, sl->bytes + 2 * GUARD);
    char *in = sl->cs.inplace ? sl->r : sl->s;
    for (size_t i = 0; i < sl->cs.count; i++) store(t, in + i * t->extent, gen(t, sl->cs.op, seed, c->rank, i));
}

static const void *slot_sbuf(const slot_t *sl) { return sl->cs.inplace ? MPI_IN_PLACE : sl->s; }

static void mpi_fail(cctx *c, const slot_t *sl, const char *call, int rc)
{
    char es[MPI_MAX_ERROR_STRING], m[512];
    int len = 0;
    MPI_Error_string(rc, es, &len);
    snprintf(m, sizeof(m), "%s returned %d (%s): %s type=%s op=%s count=%zu inplace=%d", call, rc, es,
             sl ? slot_kind[sl->kind] : "", sl ? T[sl->cs.t].name : "-", sl ? O[sl->cs.op].name : "-",
             sl ? sl->cs.count : 0, sl ? sl->cs.inplace : 0);
    fail_msg(c, m, "");
    c->failed++;
    tally(1);
}

static int guard_ok(const char *raw, size_t bytes, int pat)
{
    for (size_t i = 0; i < GUARD; i++)
        if ((unsigned char)raw[i] != pat || (unsigned char)raw[GUARD + bytes + i] != pat) return 0;
    return 1;
}

/* Checks a completed call: every element against the reference, the send
 * buffer unchanged, the guards intact; records the result's hash. */
static void slot_check(cctx *c, slot_t *sl)
{
    const tdesc *t = &T[sl->cs.t];
    const case_t *cs = &sl->cs;
    char what[256], m[1024], es[96], gs[96];
    uint64_t h = 0x746f706f6172ULL;
    int bad = 0;
    snprintf(what, sizeof(what), "%s type=%s op=%s count=%zu inplace=%d start=%ld", slot_kind[sl->kind], t->name,
             O[cs->op].name, cs->count, cs->inplace, sl->start_no);
    for (size_t i = 0; i < cs->count; i++) {
        const char *p = sl->r + i * t->extent;
        val_t got = load(t, p);
        h = hmix(h, got);
        if (bad) continue;
        val_t want = reference(t, cs->op, sl->seed, c->size, i);
        if (got.a != want.a || ((t->kind == K_CPLX || t->kind == K_PAIR) && got.b != want.b)) {
            fmt(t, NULL, want, es, sizeof(es));
            fmt(t, p, got, gs, sizeof(gs));
            snprintf(m, sizeof(m), "%s: element %zu: expected %s, got %s", what, i, es, gs);
            fail_msg(c, m, "");
            bad = 1;
        }
    }
    if (!bad && !cs->inplace)
        for (size_t i = 0; i < cs->count; i++) {
            val_t was = gen(t, cs->op, sl->seed, c->rank, i), now = load(t, sl->s + i * t->extent);
            if (was.a != now.a || ((t->kind == K_CPLX || t->kind == K_PAIR) && was.b != now.b)) {
                snprintf(m, sizeof(m), "%s: the send buffer changed at element %zu", what, i);
                fail_msg(c, m, "");
                bad = 1;
                break;
            }
        }
    if (!bad && (!guard_ok(sl->rraw, sl->bytes, RPAT) || !guard_ok(sl->sraw, sl->bytes, SPAT))) {
        snprintf(m, sizeof(m), "%s: bytes written outside the buffers (guard zones)", what);
        fail_msg(c, m, "");
        bad = 1;
    }
    add_hash(c, h);
    if (bad) c->failed++;
    tally(bad);
}

/* With --expect-topoar: which counter must move for this call. */
static void classify(cctx *c, const slot_t *sl, long nth)
{
    int k = sl->kind == S_NB ? KIND_NB : KIND_PERSIST;
    const tdesc *t = &T[sl->cs.t];
    const opdesc *o = &O[sl->cs.op];
    c->calls[k]++;
    if (sl->cs.count == 0) c->zero[k]++;
    else if (c->size < 2 || nth < opt_either_first || sl->bytes <= opt_either_upto || t->kind == K_PAIR ||
             (o->user && o->commute))
        c->either[k]++;
    else if (o->user && k == KIND_PERSIST)
        c->either[k]++;  /* handed down at init: counted once there, not per start */
    else if (o->user) c->must_f[k]++;
    else c->must_h[k]++;
}

/* ------------------------------------------------------------------------ */
/* completion                                                                */

enum { C_WAIT, C_WAITALL, C_WAITANY, C_TEST, C_TESTALL, C_TESTSOME, C_N };
static const char *cname[C_N] = {"MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Test", "MPI_Testall",
                                 "MPI_Testsome"};
enum { ORD_FORWARD, ORD_REVERSE, ORD_SHARED_RANDOM, ORD_RANK_RANDOM, ORD_N };

/* Completes reqs[0..n) with `how`, visiting them in `order` (Wait, Test).
 * Null requests are allowed.  Returns an MPI error code or MPI_SUCCESS. */
static int complete(MPI_Request *reqs, int n, int how, int order, uint64_t seed, int rank)
{
    int perm[MAX_SLOTS + 4], done[MAX_SLOTS + 4], rc = MPI_SUCCESS, left = n;
    for (int i = 0; i < n; i++) {
        perm[i] = order == ORD_REVERSE ? n - 1 - i : i;
        done[i] = 0;
    }
    if (order == ORD_SHARED_RANDOM || order == ORD_RANK_RANDOM) {
        uint64_t s = tu_smix(seed ^ (order == ORD_RANK_RANDOM ? (uint64_t)rank * 0x1234567ULL : 0));
        for (int i = n - 1; i > 0; i--) {
            s = tu_smix(s);
            int j = (int)(s % (uint64_t)(i + 1)), x = perm[i];
            perm[i] = perm[j]; perm[j] = x;
        }
    }
    switch (how) {
    case C_WAIT:
        for (int i = 0; i < n && rc == MPI_SUCCESS; i++) rc = MPI_Wait(&reqs[perm[i]], MPI_STATUS_IGNORE);
        break;
    case C_WAITALL:
        rc = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        break;
    case C_WAITANY:
        for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
            int idx;
            rc = MPI_Waitany(n, reqs, &idx, MPI_STATUS_IGNORE);
            if (idx == MPI_UNDEFINED) break;
        }
        break;
    case C_TEST:
        while (left > 0 && rc == MPI_SUCCESS) {
            for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
                int k = perm[i], flag = 0;
                if (done[k]) continue;
                rc = MPI_Test(&reqs[k], &flag, MPI_STATUS_IGNORE);
                if (flag) { done[k] = 1; left--; }
            }
        }
        break;
    case C_TESTALL: {
        int flag = 0;
        while (!flag && rc == MPI_SUCCESS) rc = MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
        break;
    }
    case C_TESTSOME: {
        int idx[MAX_SLOTS + 4], outc = 0;
        while (rc == MPI_SUCCESS) {
            rc = MPI_Testsome(n, reqs, &outc, idx, MPI_STATUSES_IGNORE);
            if (outc == MPI_UNDEFINED) break;
        }
        break;
    }
    }
    return rc;
}

/* ------------------------------------------------------------------------ */
/* batches: several calls outstanding, other collectives between the starts  */

/* A blocking MPI_Allreduce between starts, checked at once. */
static void blocking_between(cctx *c, long batch)
{
    case_t cs = {T_INT, O_SUM, (size_t)(5 + batch % 7), (int)(batch % 2)};
    slot_t sl;
    slot_alloc(&sl, &cs, S_BLOCK);
    slot_fill(c, &sl, tu_smix(opt_seed ^ 0xb10cULL ^ (uint64_t)batch));
    int rc = MPI_Allreduce(slot_sbuf(&sl), sl.r, (int)cs.count, T[cs.t].dt, O[cs.op].op, c->comm);
    if (rc != MPI_SUCCESS) mpi_fail(c, &sl, "MPI_Allreduce", rc);
    else slot_check(c, &sl);
    slot_free(&sl);
}

typedef struct {
    int on;
    int buf[17];
    int root;
    MPI_Request req;
} ibcast_t;

static void ibcast_start(cctx *c, ibcast_t *b, long batch)
{
    b->on = 1;
    b->root = (int)(batch % c->size);
    for (int i = 0; i < 17; i++) b->buf[i] = c->rank == b->root ? (int)(batch * 31 + i) : -1;
    int rc = MPI_Ibcast(b->buf, 17, MPI_INT, b->root, c->comm, &b->req);
    if (rc != MPI_SUCCESS) { mpi_fail(c, NULL, "MPI_Ibcast", rc); b->req = MPI_REQUEST_NULL; b->on = 0; }
}

static void ibcast_check(cctx *c, ibcast_t *b, long batch)
{
    if (!b->on) return;
    int bad = 0;
    for (int i = 0; i < 17; i++)
        if (b->buf[i] != (int)(batch * 31 + i)) bad = 1;
    if (bad) fail_msg(c, "MPI_Ibcast between the allreduce starts delivered wrong data", "");
    tally(bad);
    b->on = 0;
}

/* What happens between the starts of batch `batch` after its j-th start:
 * the same on every rank (collectives start in one order). */
static void between(cctx *c, long batch, int j, ibcast_t *ib)
{
    if (j == 1 && batch % 3 == 0) ibcast_start(c, ib, batch);
    if (j == 2 && batch % 3 == 1) blocking_between(c, batch);
    if (j == 2 && batch % 3 == 2) {
        int rc = MPI_Barrier(c->comm);
        if (rc != MPI_SUCCESS) mpi_fail(c, NULL, "MPI_Barrier", rc);
    }
}

static int start_nb(cctx *c, slot_t *sl)
{
    const tdesc *t = &T[sl->cs.t];
    int rc = MPI_Iallreduce(slot_sbuf(sl), sl->r, (int)sl->cs.count, t->dt, O[sl->cs.op].op, c->comm, &sl->req);
    if (rc != MPI_SUCCESS) {
        mpi_fail(c, sl, "MPI_Iallreduce", rc);
        sl->req = MPI_REQUEST_NULL;
    }
    sl->started = rc == MPI_SUCCESS;
    return rc;
}

/* The next batch of cases from cl (from *pos): 4-8 calls, at most
 * BATCH_BYTES of buffers.  Returns how many. */
static int next_batch(const caselist *cl, int *pos, long batch, case_t *out)
{
    int want = 4 + (int)(batch % 5), n = 0;
    size_t bytes = 0;
    while (*pos < cl->n && n < want) {
        const case_t *cs = &cl->v[*pos];
        size_t b = cs->count * T[cs->t].extent;
        if (n > 0 && bytes + b > BATCH_BYTES) break;
        out[n++] = *cs;
        bytes += b;
        (*pos)++;
    }
    return n;
}

static void report_completion(cctx *c, const char *how, int rc)
{
    if (rc != MPI_SUCCESS) {
        char es[MPI_MAX_ERROR_STRING], m[512];
        int len = 0;
        MPI_Error_string(rc, es, &len);
        snprintf(m, sizeof(m), "%s returned %d (%s)", how, rc, es);
        fail_msg(c, m, "");
        c->failed++;
        tally(1);
    }
}

/* Completes the started calls of slots[0..n) and the Ibcast (if on) by
 * the method and order `step` selects, then checks each call on its
 * communicator (owners[j], or c).  Persistent requests stay allocated in
 * slots[j].req.  Returns the completion's MPI error code. */
static int complete_batch(cctx *c, slot_t *slots, cctx *const *owners, int n, ibcast_t *ib, long step,
                          uint64_t seed)
{
    MPI_Request reqs[MAX_SLOTS + 1];
    int nr = 0, idx[MAX_SLOTS];
    for (int j = 0; j < n; j++)
        if (slots[j].started) {
            idx[nr] = j;
            reqs[nr++] = slots[j].req;
        }
    int ns = nr;
    if (ib && ib->on) reqs[nr++] = ib->req;
    int how = (int)(step % C_N), order = (int)((step / C_N) % ORD_N);
    int rc = complete(reqs, nr, how, order, seed ^ (uint64_t)step, c->rank);
    report_completion(c, cname[how], rc);
    for (int k = 0; k < ns; k++) {
        slot_t *sl = &slots[idx[k]];
        sl->req = reqs[k];
        sl->started = 0;
        if (rc == MPI_SUCCESS) slot_check(owners ? owners[idx[k]] : c, sl);
    }
    if (ib && rc == MPI_SUCCESS) ibcast_check(c, ib, step);
    return rc;
}

/* Nonblocking mode on one communicator: every case of cl, in batches. */
static void run_nonblocking(cctx *c, const caselist *cl, uint64_t phase_seed)
{
    case_t cases[MAX_SLOTS];
    slot_t slots[MAX_SLOTS];
    long nth = 0;
    int pos = 0;
    for (long batch = 0; pos < cl->n; batch++) {
        int n = next_batch(cl, &pos, batch, cases);
        ibcast_t ib = {0};
        for (int j = 0; j < n; j++) {
            slot_alloc(&slots[j], &cases[j], S_NB);
            slot_fill(c, &slots[j], tu_smix(phase_seed ^ ((uint64_t)batch << 8) ^ (uint64_t)j));
        }
        for (int j = 0; j < n; j++) {
            if (opt_expect) classify(c, &slots[j], nth++);
            start_nb(c, &slots[j]);
            between(c, batch, j, &ib);
        }
        complete_batch(c, slots, NULL, n, &ib, batch, phase_seed);
        for (int j = 0; j < n; j++) slot_free(&slots[j]);
    }
}

#if HAVE_PERSISTENT
static int init_persistent(cctx *c, slot_t *sl)
{
    const tdesc *t = &T[sl->cs.t];
    int rc = allreduce_init(slot_sbuf(sl), sl->r, (int)sl->cs.count, t->dt, O[sl->cs.op].op, c->comm, &sl->req);
    if (rc != MPI_SUCCESS) {
        mpi_fail(c, sl, PERSISTENT_NAME, rc);
        sl->req = MPI_REQUEST_NULL;
    }
    return rc;
}

static void free_persistent(cctx *c, slot_t *sl)
{
    if (sl->req != MPI_REQUEST_NULL) {
        int rc = MPI_Request_free(&sl->req);
        if (rc != MPI_SUCCESS) mpi_fail(c, sl, "MPI_Request_free (inactive persistent request)", rc);
    }
}

/* Starts the initialised requests of slots[0..n) (an init that failed left
 * a null request: skipped): one by one with MPI_Start, `between` after
 * each (ib not NULL), or all at once with MPI_Startall. */
static void start_persistent(cctx *c, slot_t *slots, int n, int all, long step, ibcast_t *ib, long *nth)
{
    MPI_Request live[MAX_SLOTS];
    int idx[MAX_SLOTS], m = 0;
    for (int j = 0; j < n; j++) {
        if (slots[j].req != MPI_REQUEST_NULL) {
            if (opt_expect) classify(c, &slots[j], (*nth)++);
            if (all) {
                idx[m] = j;
                live[m++] = slots[j].req;
            } else {
                int rc = MPI_Start(&slots[j].req);
                if (rc != MPI_SUCCESS) mpi_fail(c, &slots[j], "MPI_Start", rc);
                slots[j].started = rc == MPI_SUCCESS;
            }
        }
        if (!all && ib) between(c, step, j, ib);
    }
    if (all) {
        int rc = MPI_Startall(m, live); /* takes no null requests */
        if (rc != MPI_SUCCESS) mpi_fail(c, NULL, "MPI_Startall", rc);
        for (int k = 0; k < m; k++) slots[idx[k]].started = rc == MPI_SUCCESS;
        if (ib) between(c, step, 2, ib);
    }
}

/* Persistent mode, matrix part: each batch's requests initialised once,
 * started `rounds` times with fresh data (MPI_Start one by one, or
 * MPI_Startall), completed and checked, then freed. */
static void run_persistent_matrix(cctx *c, const caselist *cl, uint64_t phase_seed, int rounds)
{
    case_t cases[MAX_SLOTS];
    slot_t slots[MAX_SLOTS];
    long nth = 0;
    int pos = 0;
    for (long batch = 0; pos < cl->n; batch++) {
        int n = next_batch(cl, &pos, batch, cases);
        for (int j = 0; j < n; j++) {
            slot_alloc(&slots[j], &cases[j], S_PERSIST);
            init_persistent(c, &slots[j]);
        }
        for (int round = 0; round < rounds; round++) {
            long step = batch * rounds + round;
            ibcast_t ib = {0};
            for (int j = 0; j < n; j++) {
                slot_fill(c, &slots[j], tu_smix(phase_seed ^ ((uint64_t)step << 8) ^ (uint64_t)j));
                slots[j].start_no = round;
            }
            start_persistent(c, slots, n, round % 2, step, &ib, &nth);
            complete_batch(c, slots, NULL, n, &ib, step, phase_seed);
        }
        for (int j = 0; j < n; j++) {
            free_persistent(c, &slots[j]);
            slot_free(&slots[j]);
        }
    }
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (!f) return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0) kb = atol(line + 6);
    fclose(f);
    return kb;
}

/* Persistent mode, long part: 4 requests (3 doubles, 1000 ints, 7 floats in
 * place, 100 unsigned with the user op) started `starts` times with fresh
 * data, every result checked; the resident set must not grow (read after
 * the first 10% of starts and at the end).  Then a request freed without
 * ever being started. */
static void run_persistent_long(cctx *c, uint64_t phase_seed, int starts)
{
    case_t cases[4] = {{T_DOUBLE, O_SUM, 3, 0}, {T_INT, O_MAX, 1000, 0}, {T_FLOAT, O_SUM, 7, 1},
                       {T_UNSIGNED, O_U_WSUM, 100, 0}};
    slot_t slots[4];
    long nth = 0, rss0 = -1;
    for (int j = 0; j < 4; j++) {
        slot_alloc(&slots[j], &cases[j], S_PERSIST);
        init_persistent(c, &slots[j]);
    }
    for (int s = 0; s < starts; s++) {
        if (s == starts / 10) rss0 = rss_kib();
        for (int j = 0; j < 4; j++) {
            slot_fill(c, &slots[j], tu_smix(phase_seed ^ ((uint64_t)s << 8) ^ (uint64_t)j));
            slots[j].start_no = s;
        }
        start_persistent(c, slots, 4, 1, s, NULL, &nth);
        if (s % 50 == 7) blocking_between(c, s);
        if (complete_batch(c, slots, NULL, 4, NULL, s, phase_seed) != MPI_SUCCESS) break;
    }
    long rss1 = rss_kib();
    if (rss0 > 0 && rss1 > 0) {
        int bad = rss1 - rss0 > 4096;
        if (bad || opt_verbose) {
            char m[256];
            snprintf(m, sizeof(m), "resident memory %ld KiB after %d starts, %ld KiB after %d%s", rss0, starts / 10,
                     rss1, starts, bad ? " (grew by more than 4 MiB)" : "");
            if (bad) fail_msg(c, m, "");
            else if (c->rank == 0) printf("%s: %s\n", c->name, m);
        }
        tally(bad);
    }
    for (int j = 0; j < 4; j++) {
        free_persistent(c, &slots[j]);
        slot_free(&slots[j]);
    }
    /* never started: freed inactive */
    slot_t sl;
    slot_alloc(&sl, &cases[1], S_PERSIST);
    if (init_persistent(c, &sl) == MPI_SUCCESS) {
        int rc = MPI_Request_free(&sl.req);
        if (rc != MPI_SUCCESS) mpi_fail(c, &sl, "MPI_Request_free of a request never started", rc);
        else tally(sl.req != MPI_REQUEST_NULL);
    }
    slot_free(&sl);
}
#endif

/* Mixed: nonblocking and persistent calls on two communicators outstanding
 * at once, a blocking allreduce and an Ibcast between the starts. */
static void run_mixed(cctx *a, cctx *b, const caselist *cl, uint64_t phase_seed)
{
    case_t cases[MAX_SLOTS];
    slot_t slots[MAX_SLOTS];
    cctx *owner[MAX_SLOTS];
    long nth[2] = {0, 0};
    int pos = 0;
    for (long batch = 0; pos < cl->n; batch++) {
        int n = next_batch(cl, &pos, batch, cases);
        ibcast_t ib = {0};
        for (int j = 0; j < n; j++) {
            /* on a: nonblocking and persistent alternately; on b (which every
             * rank has: the split's halves) every third */
            int kind = HAVE_PERSISTENT && (j + batch) % 2 ? S_PERSIST : S_NB;
            owner[j] = j % 3 == 2 ? b : a;
            slot_alloc(&slots[j], &cases[j], kind);
            slot_fill(owner[j], &slots[j], tu_smix(phase_seed ^ ((uint64_t)batch << 8) ^ (uint64_t)j));
        }
        for (int j = 0; j < n; j++) {
            cctx *c = owner[j];
            if (opt_expect) classify(c, &slots[j], nth[c == b]++);
#if HAVE_PERSISTENT
            if (slots[j].kind == S_PERSIST) {
                if (init_persistent(c, &slots[j]) == MPI_SUCCESS) {
                    int rc = MPI_Start(&slots[j].req);
                    if (rc != MPI_SUCCESS) mpi_fail(c, &slots[j], "MPI_Start", rc);
                    slots[j].started = rc == MPI_SUCCESS;
                }
            } else
#endif
                start_nb(c, &slots[j]);
            between(a, batch, j, &ib);
        }
        complete_batch(a, slots, owner, n, &ib, batch, phase_seed);
        for (int j = 0; j < n; j++) {
#if HAVE_PERSISTENT
            if (slots[j].kind == S_PERSIST) free_persistent(owner[j], &slots[j]);
#endif
            slot_free(&slots[j]);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* threads                                                                   */

typedef struct {
    cctx *c;
    const caselist *cl;
    uint64_t seed;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *ta = p;
    run_nonblocking(ta->c, ta->cl, ta->seed);
    return NULL;
}

static void run_threads(const caselist *cl, int nthreads)
{
    cctx *cs = xmalloc((size_t)nthreads * sizeof(cctx));
    thread_arg *ta = xmalloc((size_t)nthreads * sizeof(thread_arg));
    pthread_t *th = xmalloc((size_t)nthreads * sizeof(pthread_t));
    for (int i = 0; i < nthreads; i++) {
        MPI_Comm d;
        char name[32];
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        snprintf(name, sizeof(name), "dup%d", i);
        cctx_init(&cs[i], d, name, "threads", i);
        ta[i].c = &cs[i]; ta[i].cl = cl; ta[i].seed = tu_smix(opt_seed ^ 0x7468ULL ^ (uint64_t)i);
    }
    int started = 0;
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&th[i], NULL, thread_main, &ta[i]) != 0) {
            fprintf(stderr, "rank %d: pthread_create failed\n", world_rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        started++;
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < nthreads; i++) {
        cctx_finish(&cs[i]);
        MPI_Comm_free(&cs[i].comm);
    }
    free(cs); free(ta); free(th);
}

/* ------------------------------------------------------------------------ */

/* A new communicator's first calls in the order a program may make them: a
 * blocking allreduce (its first call: with topoar across hosts, small data
 * travels with the ranks' records, larger goes beside their nonblocking
 * allgather), then a nonblocking one before any second blocking call (the
 * set-up's records have arrived and nothing waited for them: the engine is
 * built for this call), then a blocking one.  Integer sums of rank-dependent
 * values, checked exactly on every rank.  Blocking counts alternate between
 * 2 and 4096 ints, so both first-call forms run at np >= 3. */
static void run_fresh(int rounds)
{
    enum { kBig = 4096 };
    int *a = xmalloc(kBig * sizeof(int)), *b = xmalloc(kBig * sizeof(int));
    long long *c = xmalloc(7 * sizeof(long long)), *d = xmalloc(7 * sizeof(long long));
    for (int it = 0; it < rounds; it++) {
        MPI_Comm f;
        MPI_Request req;
        int n = it % 2 ? kBig : 2, bad = 0;
        if (it % 3 == 2) MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &f);
        else MPI_Comm_dup(MPI_COMM_WORLD, &f);
        int sz, rk;
        MPI_Comm_size(f, &sz);
        MPI_Comm_rank(f, &rk);
        long long ranks = (long long) sz * (sz - 1) / 2;
        for (int i = 0; i < n; i++) a[i] = rk * 3 + i + it;
        bad |= MPI_SUCCESS != MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, f);
        for (int i = 0; i < n; i++) bad |= b[i] != (int) (3 * ranks + (long long) sz * (i + it));
        for (int i = 0; i < 7; i++) c[i] = (long long) rk * 1000003LL - i;
        bad |= MPI_SUCCESS != MPI_Iallreduce(c, d, 7, MPI_LONG_LONG, MPI_SUM, f, &req);
        bad |= MPI_SUCCESS != MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int i = 0; i < 7; i++) bad |= d[i] != ranks * 1000003LL - (long long) sz * i;
        for (int i = 0; i < n; i++) a[i] = -rk - i;
        bad |= MPI_SUCCESS != MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_INT, MPI_SUM, f);
        for (int i = 0; i < n; i++) bad |= a[i] != (int) (-ranks - (long long) sz * i);
        if (bad) printf("FAIL rank %d: fresh communicator %d (%d ints): wrong result or error\n", world_rank, it, n);
        tally(bad);
        MPI_Comm_free(&f);
    }
    free(a);
    free(b);
    free(c);
    free(d);
}

static void usage(void)
{
    if (world_rank == 0)
        fprintf(stderr, "usage: test_nonblocking [--mode nonblocking|persistent|mixed|threads|all] [--quick]\n"
                        "         [--starts N] [--threads N] [--expect-topoar] [--either-upto BYTES]\n"
                        "         [--either-first N] [--seed N] [--verbose]\n");
}

static int parse_args(int argc, char **argv, unsigned *modes)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) opt_quick = 1;
        else if (!strcmp(a, "--expect-topoar")) opt_expect = 1;
        else if (!strcmp(a, "--verbose")) opt_verbose = 1;
        else if (v && !strcmp(a, "--mode")) {
            i++;
            if (!strcmp(v, "all")) *modes = 15;
            else if (!strcmp(v, "nonblocking")) *modes = 1;
            else if (!strcmp(v, "persistent")) *modes = 2;
            else if (!strcmp(v, "mixed")) *modes = 4;
            else if (!strcmp(v, "threads")) *modes = 8;
            else { if (world_rank == 0) fprintf(stderr, "unknown mode '%s'\n", v); return 0; }
        } else if (v && !strcmp(a, "--starts")) { opt_starts = atoi(v); i++; }
        else if (v && !strcmp(a, "--threads")) { opt_threads = atoi(v); i++; }
        else if (v && !strcmp(a, "--either-upto")) { opt_either_upto = strtoull(v, NULL, 0); i++; }
        else if (v && !strcmp(a, "--either-first")) { opt_either_first = atoi(v); i++; }
        else if (v && !strcmp(a, "--seed")) { opt_seed = tu_smix(strtoull(v, NULL, 0)); i++; }
        else { if (world_rank == 0) fprintf(stderr, "unknown or incomplete option '%s'\n", a); return 0; }
    }
    if (opt_starts < 1 || opt_threads < 1 || opt_threads > 64) {
        if (world_rank == 0) fprintf(stderr, "--starts must be >= 1 and --threads 1..64\n");
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    unsigned modes = 15;
    int provided = MPI_THREAD_SINGLE;
    /* Threads only when asked for (all or threads): parse first, MPI-free. */
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--mode") && strcmp(argv[i + 1], "all") && strcmp(argv[i + 1], "threads")) modes = 0;
    MPI_Init_thread(&argc, &argv, modes ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    modes = 15;
    if (!parse_args(argc, argv, &modes)) {
        usage();
        MPI_Finalize();
        return 2;
    }
    init_types();
    init_ops();
    pv_init();
    if (opt_expect && !pv.have) {
        if (world_rank == 0)
            fprintf(stderr, "test_nonblocking: --expect-topoar: topoar's MPI_T counters for nonblocking and "
                            "persistent allreduce are missing: %s (is topoar loaded, and does it take "
                            "MPI_Iallreduce and persistent allreduce?)\n", pv.missing);
        pv_finalize();
        MPI_Finalize();
        return 1;
    }
    if (world_rank == 0)
        printf("test_nonblocking: np=%d, persistent allreduce: %s, thread level provided: %d%s\n", world_size,
               PERSISTENT_NAME, provided, opt_quick ? ", quick" : "");

    caselist cl = {0};
    build_cases(&cl, world_size);

    /* the uneven split: ranks below about a third, the rest, reversed order */
    MPI_Comm split, dup;
    int third = (world_size + 2) / 3;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank < third, world_size - world_rank, &split);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);

    if (modes & 1) {
        const char *names[3] = {"WORLD", "split", "dup"};
        MPI_Comm comms[3] = {MPI_COMM_WORLD, split, dup};
        for (int i = 0; i < 3; i++) {
            cctx c;
            if (opt_verbose && world_rank == 0) printf("nonblocking on %s\n", names[i]);
            cctx_init(&c, comms[i], names[i], "nonblocking", -1);
            run_nonblocking(&c, &cl, tu_smix(opt_seed ^ (0x100ULL + (uint64_t)i)));
            cctx_finish(&c);
        }
        if (opt_verbose && world_rank == 0) printf("new communicators: blocking, nonblocking, blocking\n");
        run_fresh(opt_quick ? 6 : 12);
    }
#if HAVE_PERSISTENT
    if (modes & 2) {
        cctx c;
        if (opt_verbose && world_rank == 0) printf("persistent on WORLD and split\n");
        cctx_init(&c, MPI_COMM_WORLD, "WORLD", "persistent", -1);
        run_persistent_matrix(&c, &cl, tu_smix(opt_seed ^ 0x200ULL), opt_quick ? 2 : 3);
        run_persistent_long(&c, tu_smix(opt_seed ^ 0x201ULL), opt_quick ? 300 : opt_starts);
        cctx_finish(&c);
        cctx_init(&c, split, "split", "persistent", -1);
        run_persistent_long(&c, tu_smix(opt_seed ^ 0x202ULL), opt_quick ? 100 : opt_starts / 4);
        cctx_finish(&c);
    }
#else
    if ((modes & 2) && world_rank == 0)
        printf("test_nonblocking: SKIP persistent: this MPI has neither MPI_Allreduce_init nor "
               "MPIX_Allreduce_init\n");
#endif
    if (modes & 4) {
        cctx a, b;
        if (opt_verbose && world_rank == 0) printf("mixed on dup and split\n");
        cctx_init(&a, dup, "dup", "mixed", -1);
        cctx_init(&b, split, "split", "mixed", -1);
        run_mixed(&a, &b, &cl, tu_smix(opt_seed ^ 0x300ULL));
        cctx_finish(&a);
        cctx_finish(&b);
    }
    if (modes & 8) {
        if (provided >= MPI_THREAD_MULTIPLE) {
            if (opt_verbose && world_rank == 0) printf("threads: %d\n", opt_threads);
            caselist tl = {0};
            int q = opt_quick;
            opt_quick = 1; /* each thread: the quick matrix */
            build_cases(&tl, world_size);
            opt_quick = q;
            run_threads(&tl, opt_threads);
            free(tl.v);
        } else if (world_rank == 0) {
            printf("test_nonblocking: SKIP threads: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        }
    }

    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);
    free(cl.v);
    long tot_failed = 0, mine = n_failed;
    MPI_Allreduce(&mine, &tot_failed, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0) printf("test_nonblocking: %ld checks passed, %ld failed\n", n_passed, tot_failed);
    MPI_Op_free(&O[O_U_WSUM].op);
    MPI_Op_free(&O[O_U_FIRST].op);
    pv_finalize();
    MPI_Finalize();
    return tot_failed ? 1 : 0;
}
