/*
 * Pieces the allreduce correctness programs share (tests/mpi/
 * test_allreduce.c, blocking; tests/mpi/test_nonblocking.c, nonblocking and
 * persistent): the input hash, integers of 1-8 bytes in memory, the
 * predefined reduction ops, two user ops, and finding and reading topoar's
 * MPI_T counters.  Header-only: these are plain MPI programs.
 */
#ifndef TOPOAR_TEST_UTIL_H
#define TOPOAR_TEST_UTIL_H

#include <mpi.h>
#include <stdint.h>
#include <string.h>

/* splitmix64's finalizer: inputs from (seed, rank, index) */
static inline uint64_t tu_smix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The low `size` (1, 2, 4, 8) bytes of u, in the machine's order. */
static inline void tu_store_int(char *p, int size, uint64_t u)
{
    if (size == 1) { uint8_t x = (uint8_t)u; memcpy(p, &x, 1); }
    else if (size == 2) { uint16_t x = (uint16_t)u; memcpy(p, &x, 2); }
    else if (size == 4) { uint32_t x = (uint32_t)u; memcpy(p, &x, 4); }
    else memcpy(p, &u, 8);
}

/* An integer of `size` bytes, zero-extended. */
static inline uint64_t tu_load_uint(const char *p, int size)
{
    uint64_t u = 0;
    if (size == 1) { uint8_t x; memcpy(&x, p, 1); u = x; }
    else if (size == 2) { uint16_t x; memcpy(&x, p, 2); u = x; }
    else if (size == 4) { uint32_t x; memcpy(&x, p, 4); u = x; }
    else memcpy(&u, p, 8);
    return u;
}

/* The predefined reduction ops in this order (the programs' op enums
 * start with them). */
#define TU_NPREDEFINED 12
static inline void tu_predefined_ops(const char **names, MPI_Op *ops)
{
    static const char *const n[TU_NPREDEFINED] = {"MPI_SUM", "MPI_PROD", "MPI_MIN", "MPI_MAX", "MPI_LAND",
                                                   "MPI_LOR", "MPI_LXOR", "MPI_BAND", "MPI_BOR", "MPI_BXOR",
                                                   "MPI_MINLOC", "MPI_MAXLOC"};
    const MPI_Op o[TU_NPREDEFINED] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR,
                                      MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
    for (int i = 0; i < TU_NPREDEFINED; i++) {
        names[i] = n[i];
        ops[i] = o[i];
    }
}

/* User op, commutative: wrapping sum of unsigned ints. */
static inline void tu_u_wsum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const unsigned *a = in;
    unsigned *b = inout;
    for (int i = 0; i < *len; i++) b[i] = a[i] + b[i];
}

/* User op, non-commutative, on ints: a o b = a.  MPI applies user ops as
 * inout = in o inout, in holding lower ranks: the lowest rank's value. */
static inline void tu_u_first(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    memcpy(inout, in, (size_t)*len * sizeof(int));
}

/* The MPI_T performance variable named `want`: its index and properties;
 * desc (desc_len bytes, may be NULL) gets its description.  0: none. */
static inline int tu_find_pvar(const char *want, int *idx, MPI_Datatype *dt, int *cls, int *bind, int *cont,
                               MPI_T_enum *en, char *desc, int desc_len)
{
    int num = 0;
    if (MPI_T_pvar_get_num(&num) != MPI_SUCCESS) return 0;
    for (int i = 0; i < num; i++) {
        char name[256], d[2048];
        int nlen = sizeof(name), dlen = sizeof(d), verb, ro, atomic;
        MPI_T_enum e;
        if (MPI_T_pvar_get_info(i, name, &nlen, &verb, cls, dt, &e, d, &dlen, bind, &ro, cont, &atomic) !=
            MPI_SUCCESS)
            continue;
        if (strcmp(name, want) == 0) {
            *idx = i;
            if (en) *en = e;
            if (desc && desc_len > 0) {
                strncpy(desc, d, (size_t)desc_len - 1);
                desc[desc_len - 1] = 0;
            }
            return 1;
        }
    }
    return 0;
}

/* A counter's value whatever unsigned type Open MPI gives it; 0: unread. */
static inline int tu_read_counter(MPI_T_pvar_session sess, MPI_T_pvar_handle h, MPI_Datatype dt,
                                  unsigned long long *out)
{
    union { unsigned long long ull; unsigned long ul; unsigned u; char pad[64]; } b;
    memset(&b, 0, sizeof(b));
    if (MPI_T_pvar_read(sess, h, &b) != MPI_SUCCESS) return 0;
    if (dt == MPI_UNSIGNED_LONG_LONG) *out = b.ull;
    else if (dt == MPI_UNSIGNED_LONG) *out = b.ul;
    else if (dt == MPI_UNSIGNED) *out = b.u;
    else return 0;
    return 1;
}

#endif /* TOPOAR_TEST_UTIL_H */
